//! Replication between stores: `apply_oplog` reproduces every kind of write on a secondary.

use bson::{Binary, Bson, Document, doc, spec::BinarySubtype};

use super::{at, batch, error_code, find, insert, new_store, run, run_ok};
use crate::{CommandContext, OpTime, Store, StoreOptions};

pub(super) fn lsid(byte: u8) -> Document {
    doc! { "id": Binary { subtype: BinarySubtype::Uuid, bytes: vec![byte; 16] } }
}

pub(super) fn retryable(mut command: Document, session: u8, txn_number: i64) -> Document {
    command.insert("lsid", lsid(session));
    command.insert("txnNumber", Bson::Int64(txn_number));
    command
}

/// A second member: an empty store with another seed.
pub(super) fn secondary() -> Store {
    Store::new(StoreOptions::default().with_seed(99))
}

/// Applies to `secondary` what `primary` wrote since the secondary's last write.
pub(super) fn replicate(primary: &Store, secondary: &Store) {
    let entries = primary.oplog_since(secondary.op_time());
    let last = secondary.apply_oplog(&entries).expect("entries apply");
    assert_eq!(last, primary.op_time());
}

/// `listCollections` of `db` (the batch, without the random cursor id).
fn collections(store: &Store, db: &str) -> Vec<Document> {
    batch(&run_ok(store, db, doc! { "listCollections": 1 }))
}

/// Asserts that the two stores hold the same databases, collections (options and UUIDs),
/// indexes and documents, and the same op log.
pub(super) fn assert_same(primary: &Store, secondary: &Store) {
    let databases = primary.database_names();
    assert_eq!(databases, secondary.database_names());
    for db in &databases {
        let listed = collections(primary, db);
        assert_eq!(listed, collections(secondary, db), "collections of {db}");
        for collection in &listed {
            let name = collection.get_str("name").expect("name");
            let indexes = doc! { "listIndexes": name };
            assert_eq!(
                batch(&run_ok(primary, db, indexes.clone())),
                batch(&run_ok(secondary, db, indexes)),
                "indexes of {db}.{name}"
            );
            assert_eq!(
                primary.documents(db, name),
                secondary.documents(db, name),
                "documents of {db}.{name}"
            );
        }
    }
    assert_eq!(
        primary.oplog_since(OpTime::ZERO),
        secondary.oplog_since(OpTime::ZERO)
    );
    assert_eq!(primary.op_time(), secondary.op_time());
}

/// Runs `command` on `primary`, then replicates and compares.
fn run_and_compare(primary: &Store, secondary: &Store, db: &str, command: Document) -> Document {
    let reply = run_ok(primary, db, command);
    replicate(primary, secondary);
    assert_same(primary, secondary);
    reply
}

#[test]
fn inserts_updates_replacements_upserts_and_deletes_replicate() {
    let (a, b) = (new_store(), secondary());
    let steps = [
        doc! { "insert": "c", "documents": [{ "_id": 1, "v": 1 }, { "_id": 2, "v": 2 }, { "_id": 3 }, { "v": "generated id" }] },
        doc! { "update": "c", "updates": [
            { "q": { "_id": 1 }, "u": { "$set": { "a.b": 1 }, "$inc": { "v": 5 }, "$push": { "l": 1 } } },
            { "q": { "v": { "$gte": 2 } }, "u": { "$unset": { "v": "" } }, "multi": true },
        ] },
        doc! { "update": "c", "updates": [{ "q": { "_id": 3 }, "u": { "replaced": true } }] },
        doc! { "update": "c", "updates": [{ "q": { "_id": 9 }, "u": { "$set": { "up": 1 } }, "upsert": true }] },
        doc! { "update": "other", "updates": [{ "q": { "_id": 1 }, "u": { "$set": { "up": 1 } }, "upsert": true }] },
        doc! { "delete": "c", "deletes": [{ "q": { "_id": 2 }, "limit": 1 }, { "q": { "up": 1 }, "limit": 0 }] },
    ];
    for step in steps {
        let reply = run_and_compare(&a, &b, "db", step);
        assert!(!reply.contains_key("writeErrors"), "{reply}");
    }
    assert_eq!(b.writes_applied("db.c"), a.writes_applied("db.c"));
    assert_eq!(
        find(&b, "c", doc! { "_id": 1 }),
        [doc! { "_id": 1, "a": { "b": 1 }, "l": [1] }]
    );
}

#[test]
fn every_form_of_find_and_modify_replicates() {
    let (a, b) = (new_store(), secondary());
    insert(
        &a,
        "c",
        vec![doc! { "_id": 1, "v": 1 }, doc! { "_id": 2, "v": 2 }],
    );
    let steps = [
        doc! { "findAndModify": "c", "query": { "_id": 1 }, "update": { "$inc": { "v": 1 } } },
        doc! { "findAndModify": "c", "query": { "_id": 1 }, "update": { "$inc": { "v": 1 } }, "new": true },
        doc! { "findAndModify": "c", "query": { "_id": 1 }, "update": { "w": 1 } },
        doc! { "findAndModify": "c", "query": { "_id": 1 }, "update": [{ "$set": { "p": "$w" } }] },
        doc! { "findAndModify": "c", "query": { "_id": 5 }, "update": { "$set": { "u": 1 } }, "upsert": true, "new": true },
        doc! { "findAndModify": "c", "query": {}, "sort": { "_id": -1 }, "remove": true },
        doc! { "findandmodify": "c", "query": { "_id": 2 }, "remove": true },
    ];
    for step in steps {
        run_and_compare(&a, &b, "db", step);
    }
    assert_eq!(find(&b, "c", doc! {}), [doc! { "_id": 1, "w": 1, "p": 1 }]);
}

#[test]
fn a_bulk_write_over_namespaces_replicates() {
    let (a, b) = (new_store(), secondary());
    run_and_compare(
        &a,
        &b,
        "admin",
        doc! {
            "bulkWrite": 1,
            "ops": [
                { "insert": 0, "document": { "_id": 1 } },
                { "insert": 1, "document": { "_id": 1 } },
                { "update": 0, "filter": { "_id": 1 }, "updateMods": { "$set": { "x": 1 } } },
                { "update": 1, "filter": { "_id": 2 }, "updateMods": { "$set": { "y": 1 } }, "upsert": true },
                { "delete": 1, "filter": { "_id": 1 } },
            ],
            "nsInfo": [{ "ns": "db.c" }, { "ns": "other.d" }],
        },
    );
    assert_eq!(b.documents("other", "d"), [doc! { "_id": 2, "y": 1 }]);
}

#[test]
fn created_collections_keep_their_options_capped_and_clustered() {
    let (a, b) = (new_store(), secondary());
    let create = doc! {
        "create": "v",
        "validator": { "x": { "$exists": true } },
        "changeStreamPreAndPostImages": { "enabled": true },
    };
    run_and_compare(&a, &b, "db", create);
    run_and_compare(
        &a,
        &b,
        "db",
        doc! { "create": "capped", "capped": true, "size": 4096, "max": 3 },
    );
    for id in 0..5 {
        run_and_compare(
            &a,
            &b,
            "db",
            doc! { "insert": "capped", "documents": [{ "_id": id }] },
        );
    }
    assert_eq!(
        b.documents("db", "capped").len(),
        3,
        "eviction as on the primary"
    );
    run_and_compare(
        &a,
        &b,
        "db",
        doc! { "create": "clustered", "clusteredIndex": { "key": { "_id": 1 }, "unique": true } },
    );
    run_and_compare(
        &a,
        &b,
        "db",
        doc! { "insert": "clustered", "documents": [{ "_id": 1 }] },
    );
    // The images option applies on the secondary too: its post-images are the primary's.
    run_and_compare(
        &a,
        &b,
        "db",
        doc! { "insert": "v", "documents": [{ "_id": 1, "x": 1 }] },
    );
    run_and_compare(
        &a,
        &b,
        "db",
        doc! { "update": "v", "updates": [{ "q": { "_id": 1 }, "u": { "$set": { "x": 2 } } }] },
    );
}

#[test]
fn index_changes_and_coll_mod_replicate() {
    let (a, b) = (new_store(), secondary());
    insert(
        &a,
        "c",
        vec![
            doc! { "_id": 1, "a": 1, "b": 1, "t": 1 },
            doc! { "_id": 2, "a": 2, "b": 2 },
        ],
    );
    let indexes = doc! { "createIndexes": "c", "indexes": [
        { "key": { "a": 1 }, "name": "a_1", "unique": true },
        { "key": { "p": 1 }, "name": "partial", "partialFilterExpression": { "p": { "$exists": true } } },
        { "key": { "t": 1 }, "name": "ttl", "expireAfterSeconds": 60 },
        { "key": { "b": 1 }, "name": "b_1" },
        { "key": { "d": -1 }, "name": "d_-1" },
    ] };
    run_and_compare(&a, &b, "db", indexes);
    run_and_compare(&a, &b, "db", doc! { "dropIndexes": "c", "index": "d_-1" });
    run_and_compare(
        &a,
        &b,
        "db",
        doc! { "collMod": "c", "validator": { "a": { "$type": "int" } }, "validationLevel": "moderate" },
    );
    run_and_compare(
        &a,
        &b,
        "db",
        doc! { "collMod": "c", "index": { "name": "b_1", "prepareUnique": true } },
    );
    run_and_compare(
        &a,
        &b,
        "db",
        doc! { "collMod": "c", "index": { "name": "b_1", "unique": true } },
    );
    // The converted index refuses duplicates on the secondary too (after a failover).
    let duplicate = run(
        &b,
        "db",
        doc! { "insert": "c", "documents": [{ "_id": 11, "a": 3, "b": 1 }] },
    );
    assert!(duplicate.contains_key("writeErrors"), "{duplicate}");
    let (a, b) = (new_store(), secondary());
    insert(&a, "c", vec![doc! { "_id": 1 }]);
    run_and_compare(
        &a,
        &b,
        "db",
        doc! { "createIndexes": "c", "indexes": [{ "key": { "x": 1 }, "name": "x_1" }] },
    );
    run_and_compare(&a, &b, "db", doc! { "dropIndexes": "c", "index": "*" });
}

#[test]
fn renames_drops_and_database_drops_replicate() {
    let (a, b) = (new_store(), secondary());
    insert(&a, "source", vec![doc! { "_id": 1 }]);
    insert(&a, "target", vec![doc! { "_id": 2 }]);
    insert(&a, "gone", vec![doc! { "_id": 3 }]);
    replicate(&a, &b);
    run_and_compare(
        &a,
        &b,
        "admin",
        doc! { "renameCollection": "db.source", "to": "db.target", "dropTarget": true },
    );
    run_and_compare(
        &a,
        &b,
        "admin",
        doc! { "renameCollection": "db.target", "to": "moved.c" },
    );
    run_and_compare(&a, &b, "db", doc! { "drop": "gone" });
    run_and_compare(&a, &b, "moved", doc! { "dropDatabase": 1 });
    assert!(b.database_names().is_empty());
}

pub(super) fn in_transaction(mut command: Document, first: bool) -> Document {
    command.insert("lsid", lsid(7));
    command.insert("txnNumber", Bson::Int64(1));
    command.insert("autocommit", false);
    if first {
        command.insert("startTransaction", true);
    }
    command
}

#[test]
fn a_committed_transaction_replicates_whole_and_its_commit_answers_ok_on_the_secondary() {
    let (a, b) = (new_store(), secondary());
    insert(&a, "c", vec![doc! { "_id": 1, "v": 1 }]);
    replicate(&a, &b);
    let statements = [
        doc! { "insert": "c", "documents": [{ "_id": 2 }] },
        doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "$inc": { "v": 1 } } }] },
        doc! { "insert": "new", "documents": [{ "_id": 1 }] },
        doc! { "delete": "c", "deletes": [{ "q": { "_id": 2 }, "limit": 1 }] },
    ];
    for (position, statement) in statements.into_iter().enumerate() {
        run_ok(&a, "db", in_transaction(statement, position == 0));
    }
    let commit = in_transaction(doc! { "commitTransaction": 1 }, false);
    run_ok(&a, "admin", commit.clone());
    let before = a.op_time();
    replicate(&a, &b);
    assert_same(&a, &b);
    assert_eq!(run_ok(&b, "admin", commit), doc! { "ok": 1.0 });
    assert!(b.transaction_committed(&in_transaction(doc! { "find": "c" }, false)));
    // A snapshot read on the secondary before the commit sees none of it.
    let read = doc! {
        "find": "c",
        "readConcern": { "level": "snapshot", "atClusterTime": Bson::Timestamp(before_commit(&a, before)) },
    };
    assert_eq!(batch(&run_ok(&b, "db", read)), [doc! { "_id": 1, "v": 1 }]);
}

/// The timestamp right before the commit at `commit` (the first write's).
fn before_commit(store: &Store, commit: OpTime) -> bson::Timestamp {
    store
        .oplog_since(OpTime::ZERO)
        .iter()
        .map(|entry| entry.op_time.ts)
        .filter(|ts| *ts < commit.ts)
        .max()
        .expect("an earlier write")
}

/// Runs `command` on `a`, replicates it to `b`, and checks that a retry on `b` replays the
/// same reply without applying anything.
fn assert_retry_replays_on_the_secondary(command: Document, retried: (&str, Bson)) {
    let (a, b) = (new_store(), secondary());
    insert(
        &a,
        "c",
        vec![doc! { "_id": 1, "v": 1 }, doc! { "_id": 2, "v": 2 }],
    );
    let first = run_ok(&a, "db", command.clone());
    replicate(&a, &b);
    let applied = b.writes_applied("db.c");
    assert!(b.replays_entirely(&command), "{command}");
    let retry = run_ok(&b, "db", command.clone());
    let mut expected = first;
    expected.remove("ok");
    expected.insert(retried.0, retried.1);
    expected.insert("ok", 1.0);
    assert_eq!(retry, expected, "{command}");
    assert_eq!(b.writes_applied("db.c"), applied);
    assert_same(&a, &b);
}

#[test]
fn retryable_writes_replicated_replay_on_the_secondary() {
    assert_retry_replays_on_the_secondary(
        retryable(
            doc! { "insert": "c", "documents": [{ "_id": 3 }, { "_id": 4 }] },
            1,
            1,
        ),
        (
            "retriedStmtIds",
            Bson::Array(vec![Bson::Int32(0), Bson::Int32(1)]),
        ),
    );
    assert_retry_replays_on_the_secondary(
        retryable(
            doc! { "update": "c", "updates": [
                { "q": { "_id": 1 }, "u": { "$inc": { "v": 1 } } },
                { "q": { "_id": 7 }, "u": { "$set": { "v": 7 } }, "upsert": true },
            ] },
            1,
            1,
        ),
        (
            "retriedStmtIds",
            Bson::Array(vec![Bson::Int32(0), Bson::Int32(1)]),
        ),
    );
    assert_retry_replays_on_the_secondary(
        retryable(
            doc! { "delete": "c", "deletes": [{ "q": { "_id": 2 }, "limit": 1 }] },
            1,
            1,
        ),
        ("retriedStmtIds", Bson::Array(vec![Bson::Int32(0)])),
    );
    assert_retry_replays_on_the_secondary(
        retryable(
            doc! { "findAndModify": "c", "query": { "_id": 1 }, "update": { "$inc": { "v": 1 } }, "new": true },
            1,
            1,
        ),
        ("retriedStmtId", Bson::Int32(0)),
    );
}

#[test]
fn a_newer_txn_number_replicated_forgets_the_older_statements() {
    let (a, b) = (new_store(), secondary());
    let first = retryable(doc! { "insert": "c", "documents": [{ "_id": 1 }] }, 1, 1);
    run_ok(&a, "db", first.clone());
    run_ok(
        &a,
        "db",
        retryable(doc! { "insert": "c", "documents": [{ "_id": 2 }] }, 1, 2),
    );
    replicate(&a, &b);
    // Too old on both members.
    assert_eq!(error_code(&run(&a, "db", first.clone())), 225);
    assert_eq!(error_code(&run(&b, "db", first)), 225);
}

#[test]
fn redelivered_entries_apply_once_and_a_gap_is_an_error() {
    let (a, b) = (new_store(), secondary());
    insert(&a, "c", vec![doc! { "_id": 1 }]);
    insert(&a, "c", vec![doc! { "_id": 2 }]);
    let all = a.oplog_since(OpTime::ZERO);
    b.apply_oplog(&all).expect("first delivery");
    assert_eq!(b.apply_oplog(&all).expect("again"), a.op_time());
    assert_eq!(b.writes_applied("db.c"), 2);
    assert_same(&a, &b);
    insert(&a, "c", vec![doc! { "_id": 3 }]);
    insert(&a, "c", vec![doc! { "_id": 4 }]);
    let newer = a.oplog_since(b.op_time());
    let error = b.apply_oplog(&newer[1..]).expect_err("a gap");
    assert_eq!(error.op_time(), newer[1].op_time);
    assert!(error.to_string().contains("gap"), "{error}");
    assert_eq!(b.documents("db", "c").len(), 2, "nothing applied");
    // An op log that forgot entries the secondary never got cannot feed it either.
    let forgetful = Store::new(StoreOptions::default().with_oplog_capacity(1));
    insert(&forgetful, "c", vec![doc! { "_id": 1 }]);
    insert(&forgetful, "c", vec![doc! { "_id": 2 }]);
    let error = secondary()
        .apply_oplog(&forgetful.oplog_since(OpTime::ZERO))
        .expect_err("a gap");
    assert!(error.reason().contains("gap"), "{error}");
}

#[test]
fn an_entry_that_does_not_fit_the_data_is_an_error_not_a_panic() {
    let (a, b) = (new_store(), secondary());
    insert(&a, "c", vec![doc! { "_id": 1 }]);
    // `b` has a collection of that name with another UUID.
    insert(&b, "c", vec![doc! { "_id": 1 }]);
    let c = secondary();
    c.apply_oplog(&b.oplog_since(OpTime::ZERO))
        .expect("b's own log");
    run_ok(
        &a,
        "db",
        doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "x": 1 } }] },
    );
    let mut entries = a.oplog_since(OpTime::ZERO);
    let update = entries.pop().expect("the update");
    assert!(c.apply_oplog(&[update]).is_err());
}

#[test]
fn change_streams_on_the_secondary_see_the_primarys_events() {
    let (a, b) = (new_store(), secondary());
    insert(&a, "c", vec![doc! { "_id": 0 }]);
    let start = a.op_time().ts;
    insert(&a, "c", vec![doc! { "_id": 1 }]);
    run_ok(
        &a,
        "db",
        doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "$set": { "x": 1 } } }] },
    );
    run_ok(
        &a,
        "db",
        doc! { "delete": "c", "deletes": [{ "q": { "_id": 0 }, "limit": 1 }] },
    );
    replicate(&a, &b);
    let watch = doc! {
        "aggregate": "c",
        "pipeline": [{ "$changeStream": { "startAtOperationTime": Bson::Timestamp(start), "fullDocument": "updateLookup" } }],
        "cursor": {},
    };
    let on_a = run_ok(&a, "db", watch.clone());
    let on_b = run_ok(&b, "db", watch);
    assert_eq!(batch(&on_a), batch(&on_b));
    assert_eq!(batch(&on_b).len(), 4);
}

#[test]
fn a_replicated_outcome_is_read_from_its_cell_once_decided() {
    use crate::replication::entry::RetryableStatement;
    use crate::retryable_writes::{RetryableWriteTable, StatementOutcome, session_key};
    let table = RetryableWriteTable::default();
    let key = session_key(&lsid(1)).expect("key");
    let record = table.session(&key, at(0)).expect("session");
    let mut record = crate::catalog::lock(&record);
    record.begin(1, &key).expect("begin");
    let statement = RetryableStatement::new(0, false);
    record.record(0, StatementOutcome::Replicated(statement.outcome.clone()));
    assert!(record.executed(0).is_none(), "not decided yet");
    statement
        .outcome
        .set(StatementOutcome::Inserted)
        .expect("first");
    assert_eq!(record.executed(0), Some(&StatementOutcome::Inserted));
}

#[test]
fn a_transaction_applies_at_its_final_states_as_its_commit_did() {
    let (a, b) = (new_store(), secondary());
    insert(&a, "c", vec![doc! { "_id": 1, "u": 1 }]);
    run_ok(
        &a,
        "db",
        doc! { "createIndexes": "c", "indexes": [{ "key": { "u": 1 }, "name": "u_1", "unique": true }] },
    );
    let set_u = |u: i32| doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "$set": { "u": u } } }] };
    run_ok(&a, "db", in_transaction(set_u(5), true));
    // Outside the transaction, u: 5 is free: the shared document still has u: 1.
    insert(&a, "c", vec![doc! { "_id": 9, "u": 5 }]);
    run_ok(&a, "db", in_transaction(set_u(6), false));
    run_ok(
        &a,
        "admin",
        in_transaction(doc! { "commitTransaction": 1 }, false),
    );
    replicate(&a, &b);
    assert_same(&a, &b);
}

/// Whether a wait completes when polled once.
fn woken(wait: &mut crate::InsertWait) -> bool {
    use std::future::Future;
    let future = std::pin::pin!(wait.inserted());
    future
        .poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
        .is_ready()
}

/// The wait of an awaitData getMore on `b` that found nothing.
fn waiting_get_more(b: &Store, id: i64) -> crate::InsertWait {
    let get_more = doc! { "getMore": id, "collection": "capped", "maxTimeMS": 10 };
    let outcome = b.execute("db", &get_more, &CommandContext::new(at(0)));
    assert!(outcome.is_ok(), "{}", outcome.reply);
    outcome.awaiting_inserts.expect("nothing new yet")
}

#[test]
fn applied_writes_wake_tailable_cursors_and_change_streams_on_the_secondary() {
    let (a, b) = (new_store(), secondary());
    run_ok(
        &a,
        "db",
        doc! { "create": "capped", "capped": true, "size": 4096 },
    );
    insert(&a, "capped", vec![doc! { "_id": 0 }]);
    replicate(&a, &b);
    let tail = run_ok(
        &b,
        "db",
        doc! { "find": "capped", "tailable": true, "awaitData": true },
    );
    let stream = run_ok(
        &b,
        "db",
        doc! { "aggregate": "capped", "pipeline": [{ "$changeStream": {} }], "cursor": {} },
    );
    let mut tail_wait = waiting_get_more(&b, super::cursor_id(&tail));
    let mut stream_wait = waiting_get_more(&b, super::cursor_id(&stream));
    assert!(!woken(&mut tail_wait));
    assert!(!woken(&mut stream_wait));
    insert(&a, "capped", vec![doc! { "_id": 1 }]);
    replicate(&a, &b);
    assert!(woken(&mut tail_wait), "the tailable cursor");
    assert!(woken(&mut stream_wait), "the change stream");
}

#[test]
fn a_retried_bulk_write_replays_on_the_secondary() {
    let (a, b) = (new_store(), secondary());
    let command = retryable(
        doc! {
            "bulkWrite": 1,
            "ops": [
                { "insert": 0, "document": { "_id": 1 } },
                { "update": 0, "filter": { "_id": 1 }, "updateMods": { "$set": { "x": 1 } } },
                { "delete": 0, "filter": { "_id": 1 } },
            ],
            "nsInfo": [{ "ns": "db.c" }],
        },
        2,
        1,
    );
    run_ok(&a, "admin", command.clone());
    replicate(&a, &b);
    assert!(b.replays_entirely(&command));
    let applied = b.writes_applied("db.c");
    run_ok(&b, "admin", command);
    assert_eq!(b.writes_applied("db.c"), applied);
    assert_same(&a, &b);
}

#[test]
fn after_images_count_in_the_op_log_bytes() {
    let store = new_store();
    let pad = "p".repeat(4 * 1024 * 1024);
    insert(&store, "c", vec![doc! { "_id": 1, "n": 0, "pad": pad }]);
    for _ in 0..20 {
        run_ok(
            &store,
            "db",
            doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "$inc": { "n": 1 } } }] },
        );
    }
    let retained = store.oplog_since(OpTime::ZERO).len();
    // Each update entry holds the 4 MiB document after it: 64 MiB hold fewer than 16.
    assert!(retained < 16, "{retained}");
}

#[test]
fn a_find_and_modify_entry_reserves_the_bytes_of_its_reply() {
    let store = new_store();
    let pad = "p".repeat(1024);
    insert(&store, "c", vec![doc! { "_id": 1, "pad": pad }]);
    let remove = retryable(
        doc! { "findAndModify": "c", "query": { "_id": 1 }, "remove": true },
        1,
        1,
    );
    run_ok(&store, "db", remove);
    let entries = store.oplog_since(OpTime::ZERO);
    let delete = entries.last().expect("the delete");
    assert!(delete.apply.outcome_bytes > 1024, "{:?}", delete.apply);
    let plain = retryable(doc! { "insert": "c", "documents": [{ "_id": 2 }] }, 1, 2);
    run_ok(&store, "db", plain);
    let insert = store.oplog_since(OpTime::ZERO).pop().expect("the insert");
    assert_eq!(insert.apply.outcome_bytes, 0);
}

#[test]
fn entries_of_unrecorded_statements_name_no_statement() {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![
            doc! { "_id": 1, "s": "text" },
            doc! { "_id": 2, "s": "text" },
        ],
    );
    let batch = retryable(
        doc! {
            "update": "c",
            "updates": [
                { "q": { "_id": 1 }, "u": { "$inc": { "s": 1 } } },
                { "q": {}, "u": { "$set": { "m": 1 } }, "multi": true },
            ],
            "ordered": false,
        },
        1,
        1,
    );
    let reply = run_ok(&store, "db", batch);
    assert!(reply.contains_key("writeErrors"), "{reply}");
    let entries = store.oplog_since(OpTime::ZERO);
    let updates: Vec<_> = entries
        .iter()
        .filter(|entry| entry.op == crate::OplogOp::Update)
        .collect();
    assert_eq!(updates.len(), 2);
    assert!(
        updates.iter().all(|entry| entry.apply.statement.is_none()),
        "a multi update is not recorded, and the failed statement's cell stays off it"
    );
}

/// A no-op (a new primary's note) moves the op log on, replicates, changes no data, and no
/// change stream shows it, not even one watching the whole cluster.
#[test]
fn a_noop_moves_the_op_log_on_and_shows_in_no_change_stream() {
    let primary = new_store();
    let secondary = secondary();
    insert(&primary, "c", vec![doc! { "_id": 1 }]);
    let stream = batch(&run_ok(
        &primary,
        "admin",
        doc! {
            "aggregate": 1,
            "pipeline": [{ "$changeStream": { "allChangesForCluster": true } }],
            "cursor": {},
        },
    ));
    assert!(stream.is_empty());
    let before = primary.op_time();
    let noted = primary.write_noop("new primary", at(5));
    assert!(noted.ts > before.ts);
    assert_eq!(primary.op_time(), noted);
    assert_eq!(primary.writes_applied("admin.$cmd"), 0);
    replicate(&primary, &secondary);
    assert_same(&primary, &secondary);
    let since = primary.oplog_since(before);
    assert_eq!(since.len(), 1);
    assert_eq!(since[0].op, crate::OplogOp::Command);
    let watch = run_ok(
        &primary,
        "admin",
        doc! {
            "aggregate": 1,
            "pipeline": [{ "$changeStream": { "allChangesForCluster": true, "startAtOperationTime": noted.ts } }],
            "cursor": {},
        },
    );
    let events: Vec<Document> = batch(&watch);
    assert!(events.is_empty(), "{events:?}");
}
