//! Snapshot reads outside transactions: `readConcern: {level: "snapshot", atClusterTime?}`.

use bson::{Bson, Document, Timestamp, doc};

use super::{at, batch, error_code, insert, new_store, run, run_ok};
use crate::{CommandContext, Store};

fn snapshot(mut command: Document, at_cluster_time: Option<Timestamp>) -> Document {
    let mut read_concern = doc! { "level": "snapshot" };
    if let Some(time) = at_cluster_time {
        read_concern.insert("atClusterTime", time);
    }
    command.insert("readConcern", read_concern);
    command
}

fn set_v(store: &Store, v: i32, seconds: i64) {
    let reply = store.execute(
        "db",
        &doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "$set": { "v": v } } }] },
        &CommandContext::new(at(seconds)),
    );
    assert!(reply.is_ok(), "{}", reply.reply);
}

fn cursor_time(reply: &Document) -> Timestamp {
    match reply
        .get_document("cursor")
        .ok()
        .and_then(|cursor| cursor.get("atClusterTime"))
    {
        Some(Bson::Timestamp(time)) => *time,
        _ => panic!("no atClusterTime in {reply}"),
    }
}

#[test]
fn reads_at_the_returned_cluster_time_ignore_later_writes() {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![doc! { "_id": 1, "v": 1 }, doc! { "_id": 2, "v": 1 }],
    );
    let first = run_ok(
        &store,
        "db",
        snapshot(doc! { "find": "c", "filter": {} }, None),
    );
    let then = cursor_time(&first);
    assert_eq!(then, store.op_time().ts);
    set_v(&store, 2, 0);
    insert(&store, "c", vec![doc! { "_id": 3, "v": 3 }]);
    run_ok(
        &store,
        "db",
        doc! { "delete": "c", "deletes": [{ "q": { "_id": 2 }, "limit": 1 }] },
    );

    let find = run_ok(
        &store,
        "db",
        snapshot(doc! { "find": "c", "filter": {} }, Some(then)),
    );
    assert_eq!(cursor_time(&find), then);
    assert_eq!(
        batch(&find),
        vec![doc! { "_id": 1, "v": 1 }, doc! { "_id": 2, "v": 1 }]
    );
    let aggregate = run_ok(
        &store,
        "db",
        snapshot(
            doc! { "aggregate": "c", "pipeline": [{ "$match": { "_id": 1 } }], "cursor": {} },
            Some(then),
        ),
    );
    assert_eq!(batch(&aggregate), vec![doc! { "_id": 1, "v": 1 }]);
    let distinct = run_ok(
        &store,
        "db",
        snapshot(doc! { "distinct": "c", "key": "v" }, Some(then)),
    );
    assert_eq!(
        distinct.get_array("values").ok(),
        Some(&vec![Bson::Int32(1)])
    );
    assert_eq!(distinct.get("atClusterTime"), Some(&Bson::Timestamp(then)));
    // Without a read concern, the latest data.
    let latest = batch(&run_ok(&store, "db", doc! { "find": "c", "filter": {} }));
    assert_eq!(latest.len(), 2);
    assert_eq!(latest[0], doc! { "_id": 1, "v": 2 });
}

#[test]
fn snapshot_reads_past_the_history_window_are_too_old() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1, "v": 1 }]);
    let then = store.op_time().ts;
    set_v(&store, 2, 1);
    // Five minutes later the version replaced at second 1 is forgotten.
    set_v(&store, 3, 400);
    let old = run(
        &store,
        "db",
        snapshot(doc! { "find": "c", "filter": {} }, Some(then)),
    );
    assert_eq!(error_code(&old), 239);
}

#[test]
fn snapshot_read_concern_is_refused_where_mongod_refuses_it() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1 }]);
    for command in [
        doc! { "insert": "c", "documents": [{ "_id": 2 }] },
        doc! { "listCollections": 1 },
        doc! { "count": "c" },
    ] {
        assert_eq!(error_code(&run(&store, "db", snapshot(command, None))), 72);
    }
    let future = Timestamp {
        time: u32::MAX,
        increment: 1,
    };
    let ahead = snapshot(doc! { "find": "c", "filter": {} }, Some(future));
    assert_eq!(error_code(&run(&store, "db", ahead)), 72);
    let local_at = doc! {
        "find": "c", "readConcern": { "level": "local", "atClusterTime": store.op_time().ts },
    };
    assert_eq!(error_code(&run(&store, "db", local_at)), 72);
    let untyped = doc! { "find": "c", "readConcern": { "level": 1 } };
    assert_eq!(error_code(&run(&store, "db", untyped)), 14);
}

#[test]
fn a_snapshot_cursor_continues_with_the_sessions_read_concern_on_its_get_more() {
    let store = new_store();
    insert(&store, "c", (0..5).map(|i| doc! { "_id": i }).collect());
    let opened = run_ok(
        &store,
        "db",
        doc! { "find": "c", "batchSize": 2, "readConcern": { "level": "snapshot" } },
    );
    let id = opened
        .get_document("cursor")
        .unwrap()
        .get_i64("id")
        .unwrap();
    // PyMongo sends the snapshot read concern on the getMore too; mongod takes it.
    let more = run_ok(
        &store,
        "db",
        doc! { "getMore": id, "collection": "c", "readConcern": { "level": "snapshot" } },
    );
    assert_eq!(
        more.get_document("cursor")
            .unwrap()
            .get_array("nextBatch")
            .unwrap()
            .len(),
        3
    );
    // Other commands still refuse it outside a transaction.
    let count = run(
        &store,
        "db",
        doc! { "count": "c", "readConcern": { "level": "snapshot" } },
    );
    assert_eq!(error_code(&count), 72, "{count}");
}

#[test]
fn an_unknown_read_concern_level_is_refused() {
    let store = new_store();
    let reply = run(
        &store,
        "db",
        doc! { "find": "c", "readConcern": { "level": "unknown" } },
    );
    assert_eq!(error_code(&reply), 2, "{reply}");
    for level in ["local", "majority", "available", "snapshot"] {
        run_ok(
            &store,
            "db",
            doc! { "find": "c", "readConcern": { "level": level } },
        );
    }
}
