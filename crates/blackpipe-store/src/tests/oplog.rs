//! Optimes and the op log used by the replication-lag model.

use bson::{Bson, doc};

use super::{at, insert, new_store, run_ok};
use crate::{CommandContext, OpTime, OplogOp, Store, StoreOptions};

fn insert_at(store: &Store, seconds: i64, id: i32) -> Option<OpTime> {
    let outcome = store.execute(
        "db",
        &doc! { "insert": "c", "documents": [{ "_id": id }] },
        &CommandContext::new(at(seconds)),
    );
    assert!(outcome.is_ok());
    outcome.last_write
}

#[test]
fn optimes_increase_and_follow_the_callers_clock() {
    let store = new_store();
    assert_eq!(store.op_time(), OpTime::ZERO);
    let first = insert_at(&store, 0, 1).expect("a write has an optime");
    let second = insert_at(&store, 0, 2).expect("a write has an optime");
    let third = insert_at(&store, 5, 3).expect("a write has an optime");
    assert!(first.ts < second.ts && second.ts < third.ts);
    assert_eq!(second.ts.time, first.ts.time);
    assert_eq!(third.ts.time, first.ts.time + 5);
    assert_eq!(third.wall, at(5));
    assert_eq!(store.op_time(), third);
    // A clock that steps back never makes optimes go backwards.
    let fourth = insert_at(&store, 1, 4).expect("a write has an optime");
    assert!(fourth.ts > third.ts);
    assert_eq!(fourth.wall, at(5));
}

#[test]
fn reads_do_not_advance_the_optime() {
    let store = new_store();
    insert_at(&store, 0, 1);
    let before = store.op_time();
    let outcome = store.execute("db", &doc! { "find": "c" }, &CommandContext::new(at(9)));
    assert_eq!(outcome.last_write, None);
    assert_eq!(store.op_time(), before);
}

#[test]
fn op_time_at_gives_what_a_lagging_secondary_has() {
    let store = new_store();
    let first = insert_at(&store, 0, 1).expect("optime");
    let second = insert_at(&store, 10, 2).expect("optime");
    assert_eq!(store.op_time_at(at(-1)), OpTime::ZERO);
    assert_eq!(store.op_time_at(at(0)), first);
    assert_eq!(store.op_time_at(at(9)), first);
    assert_eq!(store.op_time_at(at(10)), second);
    assert_eq!(store.op_time_at(at(100)), second);
}

#[test]
fn the_oplog_records_each_document_write_and_catalog_change() {
    let store = new_store();
    insert_at(&store, 0, 1);
    let entries = store.oplog_since(OpTime::ZERO);
    // The implicit collection creation, then the insert.
    assert_eq!(entries.len(), 2);
    assert_eq!(
        (entries[0].op, entries[0].ns.as_str()),
        (OplogOp::Command, "db.c")
    );
    assert_eq!(
        (entries[1].op, entries[1].ns.as_str(), entries[1].id.clone()),
        (OplogOp::Insert, "db.c", Some(Bson::Int32(1)))
    );
    let after_insert = store.op_time();
    store.execute(
        "db",
        &doc! { "delete": "c", "deletes": [{ "q": {}, "limit": 0 }] },
        &CommandContext::new(at(1)),
    );
    let newer = store.oplog_since(after_insert);
    assert_eq!(newer.len(), 1);
    assert_eq!(newer[0].op, OplogOp::Delete);
    assert_eq!(store.writes_applied("db.c"), 2);
}

#[test]
fn the_oplog_is_bounded() {
    let store = Store::new(StoreOptions::default().with_oplog_capacity(3));
    for id in 0..10 {
        insert_at(&store, i64::from(id), id);
    }
    assert_eq!(store.oplog_since(OpTime::ZERO).len(), 3);
    assert_eq!(store.writes_applied("db.c"), 10);
    assert_eq!(
        store.op_time_at(at(1)),
        OpTime::ZERO,
        "older than the retained log"
    );
}

#[test]
fn local_oplog_rs_reads_the_op_log_in_mongods_entry_format() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1, "a": 1 }]);
    run_ok(
        &store,
        "db",
        doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "$set": { "a": 2 } } }] },
    );
    run_ok(
        &store,
        "db",
        doc! { "delete": "c", "deletes": [{ "q": { "_id": 1 }, "limit": 1 }] },
    );
    let standalone = run_ok(&store, "local", doc! { "find": "oplog.rs" });
    assert!(
        super::batch(&standalone).is_empty(),
        "a standalone has no op log to read"
    );
    store.set_replica_set_config(doc! { "_id": "rs0", "version": 1 });
    let listed = run_ok(
        &store,
        "local",
        doc! { "listCollections": 1, "nameOnly": true },
    );
    let names: Vec<String> = super::batch(&listed)
        .iter()
        .map(|entry| entry.get_str("name").unwrap().to_owned())
        .collect();
    assert!(names.contains(&"oplog.rs".to_owned()), "{names:?}");
    assert!(names.contains(&"system.replset".to_owned()), "{names:?}");
    let all = run_ok(
        &store,
        "local",
        doc! { "find": "oplog.rs", "filter": { "ns": "db.c" } },
    );
    let entries = super::batch(&all);
    let ops: Vec<&str> = entries.iter().map(|e| e.get_str("op").unwrap()).collect();
    assert_eq!(
        ops,
        ["c", "i", "u", "d"],
        "the implicit create first: {all}"
    );
    assert_eq!(
        entries[0].get_document("o").unwrap(),
        &doc! { "create": "c" }
    );
    assert_eq!(
        entries[1].get_document("o").unwrap(),
        &doc! { "_id": 1, "a": 1 }
    );
    assert_eq!(entries[2].get_document("o2").unwrap(), &doc! { "_id": 1 });
    assert_eq!(
        entries[2]
            .get_document("o")
            .unwrap()
            .get_document("diff")
            .unwrap(),
        &doc! { "u": { "a": 2 } }
    );
    assert!(
        entries
            .iter()
            .all(|e| e.get_timestamp("ts").is_ok() && e.get_datetime("wall").is_ok())
    );
    // The newest entry first, as tools read it.
    let last = run_ok(
        &store,
        "local",
        doc! { "find": "oplog.rs", "sort": { "$natural": -1 }, "limit": 1 },
    );
    assert_eq!(super::batch(&last)[0].get_str("op").unwrap(), "d");
    let count = run_ok(&store, "local", doc! { "count": "oplog.rs" });
    assert_eq!(count.get_i32("n").unwrap(), 4, "{count}");
    // system.replset holds what the deployment set.
    let config = run_ok(&store, "local", doc! { "find": "system.replset" });
    assert_eq!(super::batch(&config)[0].get_str("_id").unwrap(), "rs0");
}
