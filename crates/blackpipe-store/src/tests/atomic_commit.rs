//! A committed transaction is one point in the op log: snapshot reads see all of it or none of
//! it, and change streams show its writes at one cluster time, each with its own resume token.

use bson::{Binary, Bson, Document, Timestamp, doc, spec::BinarySubtype};

use super::change_stream::{next, resume_token};
use super::{batch, cursor_id, find, insert, new_store, run, run_ok};
use crate::{Store, StoreOptions};

fn lsid() -> Document {
    doc! { "id": Binary { subtype: BinarySubtype::Uuid, bytes: vec![9; 16] } }
}

/// `command` as a statement of transaction 1 of the test's session.
fn in_transaction(mut command: Document, first: bool) -> Document {
    if first {
        command.insert("startTransaction", true);
    }
    command.insert("lsid", lsid());
    command.insert("txnNumber", Bson::Int64(1));
    command.insert("autocommit", false);
    command
}

/// Runs the statements as one transaction and commits it.
fn commit_transaction(store: &Store, statements: Vec<Document>) {
    for (n, statement) in statements.into_iter().enumerate() {
        run_ok(store, "db", in_transaction(statement, n == 0));
    }
    run_ok(
        store,
        "admin",
        in_transaction(doc! { "commitTransaction": 1 }, false),
    );
}

fn inserts(collection: &str, ids: &[i32]) -> Document {
    let documents: Vec<Document> = ids.iter().map(|id| doc! { "_id": *id }).collect();
    doc! { "insert": collection, "documents": documents }
}

fn open_c(store: &Store, options: Document, batch_size: i32) -> Document {
    run(
        store,
        "db",
        doc! {
            "aggregate": "c",
            "pipeline": [{ "$changeStream": options }],
            "cursor": { "batchSize": batch_size },
        },
    )
}

fn keys(events: &[Document]) -> Vec<i32> {
    events
        .iter()
        .filter_map(|event| event.get_document("documentKey").ok()?.get_i32("_id").ok())
        .collect()
}

fn token(event: &Document) -> Document {
    event.get_document("_id").cloned().expect("a resume token")
}

fn snapshot_find_at(store: &Store, time: Timestamp) -> Vec<Document> {
    batch(&run_ok(
        store,
        "db",
        doc! {
            "find": "c",
            "filter": {},
            "batchSize": 1000,
            "readConcern": { "level": "snapshot", "atClusterTime": time },
        },
    ))
}

#[test]
fn a_snapshot_read_at_any_time_around_a_commit_sees_all_of_it_or_none() {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![doc! { "_id": 1, "v": 0 }, doc! { "_id": 2, "v": 0 }],
    );
    let before_state = find(&store, "c", doc! {});
    let before = store.op_time().ts;
    commit_transaction(
        &store,
        vec![
            doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "$set": { "v": 1 } } }] },
            inserts("c", &[3]),
            doc! { "delete": "c", "deletes": [{ "q": { "_id": 2 }, "limit": 1 }] },
        ],
    );
    let after_state = find(&store, "c", doc! {});
    let after = store.op_time().ts;
    assert_ne!(before_state, after_state);
    // Every timestamp from the last write before the commit to the newest (the fixed clock
    // keeps them all in one second), including any a commit's entries could sit at.
    assert_eq!(before.time, after.time);
    for increment in before.increment..=after.increment {
        let time = Timestamp {
            time: before.time,
            increment,
        };
        let seen = snapshot_find_at(&store, time);
        assert!(
            seen == before_state || seen == after_state,
            "a read at {time} saw part of the transaction: {seen:?}"
        );
    }
    assert_eq!(snapshot_find_at(&store, after), after_state);
}

#[test]
fn a_transactions_events_share_its_commit_time_and_have_distinct_tokens() {
    let store = new_store();
    let id = cursor_id(&open_c(&store, doc! {}, 0));
    assert!(id > 0);
    commit_transaction(&store, vec![inserts("c", &[1, 2]), inserts("c", &[3])]);
    let events = batch(&next(&store, "db", "c", id));
    assert_eq!(keys(&events), [1, 2, 3]);
    let times: Vec<Option<&Bson>> = events.iter().map(|e| e.get("clusterTime")).collect();
    assert!(times.iter().all(|time| *time == times[0]), "{times:?}");
    assert_eq!(times[0], Some(&Bson::Timestamp(store.op_time().ts)));
    let tokens: Vec<Document> = events.iter().map(token).collect();
    assert!(tokens[0] != tokens[1] && tokens[1] != tokens[2] && tokens[0] != tokens[2]);
    for event in &events {
        assert_eq!(event.get_document("lsid").ok(), Some(&lsid()), "{event}");
        assert_eq!(event.get_i64("txnNumber").ok(), Some(1), "{event}");
    }
}

#[test]
fn resuming_inside_a_transaction_returns_exactly_the_rest_of_it() {
    let store = new_store();
    let opened = open_c(&store, doc! {}, 0);
    let start = resume_token(&opened);
    commit_transaction(&store, vec![inserts("c", &[1, 2, 3])]);
    insert(&store, "c", vec![doc! { "_id": 4 }]);
    let events = batch(&open_c(&store, doc! { "resumeAfter": start }, 10));
    assert_eq!(keys(&events), [1, 2, 3, 4]);
    for (after, rest) in [(0, [2, 3, 4].as_slice()), (1, &[3, 4])] {
        for option in ["resumeAfter", "startAfter"] {
            let resumed = open_c(&store, doc! { option: token(&events[after]) }, 10);
            assert_eq!(keys(&batch(&resumed)), rest, "{option} event {after}");
        }
    }
}

#[test]
fn batches_of_one_over_a_transaction_lose_and_repeat_nothing() {
    let store = new_store();
    let opened = open_c(&store, doc! {}, 0);
    let id = cursor_id(&opened);
    let start = resume_token(&opened);
    // Another collection's write in the middle: the stream skips it without losing its place.
    commit_transaction(
        &store,
        vec![
            inserts("c", &[1]),
            inserts("d", &[1]),
            inserts("c", &[2, 3]),
        ],
    );
    let mut seen = Vec::new();
    let mut resumed_from_each = Vec::new();
    loop {
        let reply = run_ok(
            &store,
            "db",
            doc! { "getMore": id, "collection": "c", "batchSize": 1 },
        );
        let events = batch(&reply);
        if events.is_empty() {
            break;
        }
        seen.extend(keys(&events));
        // A driver resuming from this batch's postBatchResumeToken gets the rest.
        let resumed = open_c(&store, doc! { "resumeAfter": resume_token(&reply) }, 10);
        resumed_from_each.push(keys(&batch(&resumed)));
    }
    assert_eq!(seen, [1, 2, 3]);
    assert_eq!(resumed_from_each, [vec![2, 3], vec![3], vec![]]);
    let whole = open_c(&store, doc! { "resumeAfter": start }, 1);
    assert_eq!(keys(&batch(&whole)), [1]);
}

#[test]
fn a_transaction_longer_than_one_pass_of_the_log_streams_whole() {
    let store = new_store();
    let id = cursor_id(&open_c(&store, doc! {}, 0));
    let ids: Vec<i32> = (0..1500).collect();
    commit_transaction(&store, vec![inserts("c", &ids)]);
    let mut seen = Vec::new();
    loop {
        let events = batch(&run_ok(
            &store,
            "db",
            doc! { "getMore": id, "collection": "c", "batchSize": 400 },
        ));
        if events.is_empty() {
            break;
        }
        seen.extend(keys(&events));
    }
    assert_eq!(seen, ids);
}

#[test]
fn each_statement_of_a_transaction_is_its_own_event() {
    let store = new_store();
    let id = cursor_id(&open_c(&store, doc! {}, 0));
    commit_transaction(
        &store,
        vec![
            inserts("c", &[1, 2]),
            doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "$set": { "v": 1 } } }] },
            doc! { "delete": "c", "deletes": [{ "q": { "_id": 2 }, "limit": 1 }] },
        ],
    );
    let events = batch(&next(&store, "db", "c", id));
    let kinds: Vec<(&str, i32)> = events
        .iter()
        .map(|event| {
            let key = event
                .get_document("documentKey")
                .and_then(|key| key.get_i32("_id"));
            (
                event.get_str("operationType").unwrap_or("?"),
                key.unwrap_or(-1),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [("insert", 1), ("insert", 2), ("update", 1), ("delete", 2)]
    );
    assert!(
        events
            .iter()
            .all(|e| e.get("clusterTime") == events[0].get("clusterTime"))
    );
    assert_eq!(find(&store, "c", doc! {}), [doc! { "_id": 1, "v": 1 }]);
}

#[test]
fn statement_writes_kept_for_the_commit_are_bounded_by_bytes() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1 }]);
    // One document rewritten: its final state stays far below the byte bound, the writes the
    // transaction keeps for its op log entries do not.
    let mut last = Document::new();
    let mut failed_at = None;
    for (n, fill) in ('a'..='f').enumerate() {
        let pad = fill.to_string().repeat(15 * 1024 * 1024);
        let update = doc! {
            "update": "c",
            "updates": [{ "q": { "_id": 1 }, "u": { "$set": { "pad": pad } } }],
        };
        last = run(&store, "db", in_transaction(update, n == 0));
        if last.get_f64("ok").ok() != Some(1.0) {
            failed_at = Some(n);
            break;
        }
    }
    assert_eq!(last.get_i32("code").ok(), Some(334), "{last}");
    // Four writes of 15 MiB fit in the 64 MiB bound, the fifth does not.
    assert_eq!(failed_at, Some(4));
    assert_eq!(find(&store, "c", doc! {}), [doc! { "_id": 1 }]);
}

#[test]
fn start_at_a_commits_operation_time_shows_all_of_it() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 0 }]);
    commit_transaction(&store, vec![inserts("c", &[1, 2, 3])]);
    let commit_time = store.op_time().ts;
    let reply = open_c(
        &store,
        doc! { "startAtOperationTime": Bson::Timestamp(commit_time) },
        10,
    );
    assert_eq!(keys(&batch(&reply)), [1, 2, 3]);
}

#[test]
fn a_stream_inside_a_transaction_the_op_log_partly_forgot_has_lost_history() {
    let store = Store::new(StoreOptions::default().with_seed(7).with_oplog_capacity(3));
    // The collection exists before the transaction: its entries are the five inserts only.
    insert(&store, "c", vec![doc! { "_id": 0 }]);
    let opened = open_c(&store, doc! {}, 0);
    let before = resume_token(&opened);
    commit_transaction(&store, vec![inserts("c", &[1, 2, 3, 4, 5])]);
    // Entries 0 and 1 of the transaction are forgotten, 2 to 4 kept.
    assert_eq!(
        open_c(&store, doc! { "resumeAfter": before }, 10)
            .get_i32("code")
            .ok(),
        Some(286)
    );
    let at = store.op_time().ts;
    let kept = open_c(
        &store,
        doc! { "startAtOperationTime": Bson::Timestamp(at) },
        10,
    );
    assert_eq!(kept.get_i32("code").ok(), Some(286), "{kept}");
    // A token of the transaction's first event: its second event is forgotten.
    let first = open_c(
        &store,
        doc! { "resumeAfter": token_at_index(&store, at, 0) },
        10,
    );
    assert_eq!(first.get_i32("code").ok(), Some(286), "{first}");
    // A token of its second event: the rest is all kept.
    let second = open_c(
        &store,
        doc! { "resumeAfter": token_at_index(&store, at, 1) },
        10,
    );
    assert_eq!(keys(&batch(&second)), [3, 4, 5]);
}

/// The resume token of event `index` of the entries at `at` (blackpipe's token layout:
/// version, timestamp, index, step, UUID flag), for positions no stream can return any more.
fn token_at_index(store: &Store, at: Timestamp, index: u32) -> Document {
    let packed = (u64::from(at.time) << 32) | u64::from(at.increment);
    let uuid = store
        .oplog_since(crate::OpTime::ZERO)
        .last()
        .and_then(|entry| entry.uuid)
        .expect("the collection's UUID");
    let uuid_hex: String = uuid.iter().map(|byte| format!("{byte:02X}")).collect();
    doc! { "_data": format!("02{packed:016X}{index:08X}0001{uuid_hex}") }
}
