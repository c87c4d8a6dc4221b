//! The caller's majority commit point (`CommandContext::with_majority_committed`): change
//! streams show only what it covers, majority reads read as of it.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use bson::{Bson, Document, Timestamp, doc};

use super::{at, batch, cursor_id, insert, new_store, run_ok};
use crate::{CommandContext, CommandOutcome, InsertWait, Store};

fn committed_at(ts: Timestamp) -> CommandContext {
    CommandContext::new(at(0)).with_majority_committed(ts)
}

fn execute(store: &Store, db: &str, command: Document, context: &CommandContext) -> CommandOutcome {
    let outcome = store.execute(db, &command, context);
    assert!(outcome.is_ok(), "{command} failed: {}", outcome.reply);
    outcome
}

fn ids_of(events: &[Document]) -> Vec<Bson> {
    events
        .iter()
        .filter_map(|event| event.get_document("documentKey").ok())
        .filter_map(|key| key.get("_id").cloned())
        .collect()
}

fn post_batch_token(reply: &Document) -> Document {
    reply
        .get_document("cursor")
        .and_then(|cursor| cursor.get_document("postBatchResumeToken"))
        .cloned()
        .expect("postBatchResumeToken")
}

fn get_more(id: i64) -> Document {
    doc! { "getMore": id, "collection": "c", "maxTimeMS": 10 }
}

/// Whether a wait completes when polled once.
fn woken(wait: &mut InsertWait) -> bool {
    let future = pin!(wait.inserted());
    matches!(
        future.poll(&mut Context::from_waker(Waker::noop())),
        Poll::Ready(())
    )
}

#[test]
fn a_change_stream_shows_writes_up_to_the_majority_commit_point_only() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 0 }]);
    let start = store.op_time().ts;
    insert(&store, "c", vec![doc! { "_id": 1 }]);
    let committed = store.op_time().ts;
    insert(&store, "c", vec![doc! { "_id": 2 }]);
    insert(&store, "c", vec![doc! { "_id": 3 }]);
    let watch = doc! {
        "aggregate": "c",
        "pipeline": [{ "$changeStream": { "startAtOperationTime": Bson::Timestamp(start) } }],
        "cursor": {},
    };
    let opened = execute(&store, "db", watch.clone(), &committed_at(committed));
    assert_eq!(
        ids_of(&batch(&opened.reply)),
        [Bson::Int32(0), Bson::Int32(1)]
    );
    // The resume token stops at the commit point: a stream resumed from it misses nothing.
    let everything = run_ok(&store, "db", watch);
    let full = batch(&everything);
    assert_eq!(
        post_batch_token(&opened.reply),
        *full[1].get_document("_id").expect("_id")
    );
    let id = cursor_id(&opened.reply);
    // Nothing more is committed: the getMore waits, and the caller's wake makes it look again.
    let nothing = execute(&store, "db", get_more(id), &committed_at(committed));
    assert!(batch(&nothing.reply).is_empty());
    let mut wait = nothing.awaiting_inserts.expect("a wait");
    assert!(!woken(&mut wait));
    store.wake_change_streams();
    assert!(woken(&mut wait));
    let rest = execute(&store, "db", get_more(id), &CommandContext::new(at(0)));
    assert_eq!(
        ids_of(&batch(&rest.reply)),
        [Bson::Int32(2), Bson::Int32(3)]
    );
}

#[test]
fn a_new_change_stream_starts_at_the_commit_point() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 0 }]);
    let committed = store.op_time().ts;
    insert(&store, "c", vec![doc! { "_id": 1 }]);
    let watch = doc! { "aggregate": "c", "pipeline": [{ "$changeStream": {} }], "cursor": {} };
    let opened = execute(&store, "db", watch, &committed_at(committed));
    assert!(batch(&opened.reply).is_empty());
    let id = cursor_id(&opened.reply);
    let later = execute(&store, "db", get_more(id), &CommandContext::new(at(0)));
    assert_eq!(ids_of(&batch(&later.reply)), [Bson::Int32(1)]);
}

#[test]
fn a_majority_read_sees_the_data_as_of_the_commit_point() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1, "v": 1 }]);
    let committed = store.op_time().ts;
    run_ok(
        &store,
        "db",
        doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "$set": { "v": 2 } } }] },
    );
    insert(&store, "c", vec![doc! { "_id": 2, "v": 2 }]);
    let majority = doc! { "level": "majority" };
    let context = committed_at(committed);
    let find = doc! { "find": "c", "readConcern": majority.clone() };
    let found = execute(&store, "db", find, &context);
    assert_eq!(batch(&found.reply), [doc! { "_id": 1, "v": 1 }]);
    assert!(
        !found
            .reply
            .get_document("cursor")
            .is_ok_and(|cursor| cursor.contains_key("atClusterTime")),
        "not a snapshot read"
    );
    let count = doc! { "count": "c", "readConcern": majority.clone() };
    assert_eq!(
        execute(&store, "db", count, &context)
            .reply
            .get_i32("n")
            .ok(),
        Some(1)
    );
    let distinct = doc! { "distinct": "c", "key": "v", "readConcern": majority.clone() };
    let values = execute(&store, "db", distinct, &context).reply;
    assert_eq!(
        values.get_array("values").expect("values"),
        &vec![Bson::Int32(1)]
    );
    let aggregate =
        doc! { "aggregate": "c", "pipeline": [], "cursor": {}, "readConcern": majority.clone() };
    assert_eq!(
        batch(&execute(&store, "db", aggregate, &context).reply).len(),
        1
    );
    // A local read, or a majority read without a commit point, reads the latest data.
    let local = doc! { "find": "c" };
    assert_eq!(
        batch(&execute(&store, "db", local, &context).reply).len(),
        2
    );
    let unset = doc! { "find": "c", "readConcern": majority };
    assert_eq!(
        batch(&execute(&store, "db", unset, &CommandContext::new(at(0))).reply).len(),
        2
    );
}

#[test]
fn an_out_stage_after_a_majority_read_writes_the_current_data() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1 }]);
    let committed = store.op_time().ts;
    insert(&store, "target", vec![doc! { "_id": 9 }]);
    let merge = doc! {
        "aggregate": "c",
        "pipeline": [{ "$merge": { "into": "target" } }],
        "cursor": {},
        "readConcern": { "level": "majority" },
    };
    execute(&store, "db", merge, &committed_at(committed));
    assert_eq!(store.documents("db", "target").len(), 2);
}
