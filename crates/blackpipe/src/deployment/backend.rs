//! The adapter between the deployment and the shared [`Store`]: the members run the data
//! commands through it and report its optimes in `lastWrite` and `$clusterTime`.

use bson::{DateTime, Document, Timestamp};

use blackpipe_store::{CommandContext, OpTime, Store};

/// An optime: the oplog timestamp of a write and its wall-clock time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteTime {
    /// The oplog timestamp.
    pub ts: Timestamp,
    /// The wall-clock time of the write.
    pub wall: DateTime,
}

fn known(op_time: OpTime) -> Option<WriteTime> {
    (op_time != OpTime::ZERO).then_some(WriteTime {
        ts: op_time.ts,
        wall: op_time.wall,
    })
}

/// Runs a data command (CRUD, cursors, indexes, collections, `endSessions`) and returns the
/// store's reply. The member has already dealt with roles, fail points and admin commands.
///
/// `majority_committed` gives the member's majority commit point (`None` outside replica
/// sets): change streams see only what it covers, and `majority` reads read as of it. `host`
/// names the member (`$collStats` reports it); `kind` runs it as a member, a standalone or a router answers it (see
/// [`CommandContext::router`], [`CommandContext::standalone`]).
///
/// A tailable awaitData getMore that finds nothing new waits, as mongod does, until a document
/// is inserted into its collection (for a change stream: until any write is applied or the
/// commit point moves), then runs again, or until its await time passes, then answers the
/// empty batch. The wait holds no store lock.
/// What kind of server runs a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ServedAs {
    /// A replica set member.
    Member,
    /// A standalone mongod.
    Standalone,
    /// A mongos router.
    Router,
}

pub(crate) async fn execute(
    store: &Store,
    database: &str,
    command: &Document,
    majority_committed: &(dyn Fn() -> Option<Timestamp> + Sync),
    host: Option<&str>,
    kind: ServedAs,
) -> Document {
    // Read afresh on every run: a change stream's getMore woken by the commit point moving
    // must see the new one.
    let context = || {
        let mut context = CommandContext::new(DateTime::now());
        if let Some(host) = host {
            context = context.with_host(host);
        }
        match kind {
            ServedAs::Router => context = context.on_router(),
            // A standalone has no cluster time (`$$CLUSTER_TIME` is refused there).
            ServedAs::Standalone => context = context.on_standalone(),
            ServedAs::Member => {}
        }
        match majority_committed() {
            Some(commit) => context.with_majority_committed(commit),
            None => context,
        }
    };
    let outcome = store.execute(database, command, &context());
    let Some(mut wait) = outcome.awaiting_inserts else {
        return outcome.reply;
    };
    let mut reply = outcome.reply;
    // The await time is at most INT_MAX milliseconds (25 days): only a clock near its end
    // could overflow, and then there is no wait.
    let Some(deadline) = tokio::time::Instant::now().checked_add(wait.max_wait()) else {
        return reply;
    };
    // Each turn follows an insert into the collection, so the loop ends at the deadline.
    loop {
        if tokio::time::timeout_at(deadline, wait.inserted())
            .await
            .is_err()
        {
            return reply;
        }
        let again = store.execute(database, command, &context());
        reply = again.reply;
        match again.awaiting_inserts {
            // An insert that the cursor's filter does not match: keep waiting.
            Some(next) => wait = next,
            None => return reply,
        }
    }
}

/// The optime of the latest write, if there was one.
pub(crate) fn last_write(store: &Store) -> Option<WriteTime> {
    known(store.op_time())
}

/// The optime of the newest write at or before timestamp `at` (`at` itself with its second as
/// wall time when the op log no longer holds it).
pub(crate) fn write_at(store: &Store, at: Timestamp) -> Option<WriteTime> {
    let latest = store.op_time();
    if latest.ts <= at {
        return known(latest);
    }
    let wall = DateTime::from_millis(i64::from(at.time) * 1000);
    known(OpTime { ts: at, wall })
}

#[cfg(test)]
mod tests {
    use bson::{Bson, Document, doc};

    use super::{ServedAs, execute};
    use blackpipe_store::{Store, StoreOptions};

    /// A store whose capped collection `c` holds `{_id: 1}`, and an awaitData cursor on it
    /// that has read everything.
    async fn tailed_store() -> (Store, i64) {
        let store = Store::new(StoreOptions::default().with_seed(1));
        for command in [
            doc! { "create": "c", "capped": true, "size": 4096 },
            doc! { "insert": "c", "documents": [{ "_id": 1 }] },
        ] {
            execute(&store, "db", &command, &|| None, None, ServedAs::Member).await;
        }
        let find = doc! { "find": "c", "tailable": true, "awaitData": true };
        let reply = execute(&store, "db", &find, &|| None, None, ServedAs::Member).await;
        let id = reply
            .get_document("cursor")
            .and_then(|cursor| cursor.get_i64("id"))
            .expect("a tailable cursor");
        (store, id)
    }

    fn next_batch(reply: &Document) -> Vec<Bson> {
        reply
            .get_document("cursor")
            .and_then(|cursor| cursor.get_array("nextBatch"))
            .cloned()
            .unwrap_or_else(|_| panic!("no nextBatch in {reply}"))
    }

    // Time is paused: were the getMore not woken by the insert, the runtime would jump to its
    // deadline and answer the empty batch.
    #[tokio::test(start_paused = true)]
    async fn an_await_data_get_more_is_answered_by_the_next_insert() {
        let (store, id) = tailed_store().await;
        let get_more = doc! { "getMore": id, "collection": "c", "maxTimeMS": 600_000 };
        let insert = doc! { "insert": "c", "documents": [{ "_id": 2 }] };
        let (reply, _) = tokio::join!(
            execute(&store, "db", &get_more, &|| None, None, ServedAs::Member),
            async {
                // Runs once the getMore waits: join polls it first.
                execute(&store, "db", &insert, &|| None, None, ServedAs::Member).await
            }
        );
        assert_eq!(next_batch(&reply), [Bson::Document(doc! { "_id": 2 })]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_await_data_get_more_ends_with_an_empty_batch_at_its_await_time() {
        let (store, id) = tailed_store().await;
        let get_more = doc! { "getMore": id, "collection": "c", "maxTimeMS": 500 };
        let started = tokio::time::Instant::now();
        let reply = execute(&store, "db", &get_more, &|| None, None, ServedAs::Member).await;
        assert_eq!(next_batch(&reply), []);
        assert_eq!(reply.get("ok"), Some(&Bson::Double(1.0)));
        // Paused time moves only by the waits the code made.
        assert_eq!(started.elapsed(), std::time::Duration::from_millis(500));
    }
}
