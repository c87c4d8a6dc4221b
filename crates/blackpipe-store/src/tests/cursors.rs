//! find, getMore and killCursors: batching, limits, sort/skip, and cursor lifetimes.

use bson::{Bson, doc};

use super::{batch, cursor_id, error_code, insert, new_store, run, run_ok};
use crate::Store;

fn store_with(count: i32) -> Store {
    let store = new_store();
    if count > 0 {
        insert(
            &store,
            "c",
            (1..=count)
                .map(|id| doc! { "_id": id, "group": id % 3 })
                .collect(),
        );
    }
    store
}

fn batch_ids(reply: &bson::Document) -> Vec<i32> {
    batch(reply)
        .iter()
        .map(|document| document.get_i32("_id").unwrap())
        .collect()
}

#[test]
fn the_first_batch_defaults_to_101_documents() {
    let store = store_with(150);
    let reply = run_ok(&store, "db", doc! { "find": "c" });
    assert_eq!(batch(&reply).len(), 101);
    let id = cursor_id(&reply);
    assert_ne!(id, 0);
    assert_eq!(
        reply.get_document("cursor").unwrap().get_str("ns").unwrap(),
        "db.c"
    );
    let more = run_ok(&store, "db", doc! { "getMore": id, "collection": "c" });
    assert_eq!(batch(&more).len(), 49);
    assert_eq!(cursor_id(&more), 0);
    assert_eq!(store.open_cursor_count(), 0);
}

#[test]
fn an_exhausted_first_batch_closes_the_cursor() {
    let store = store_with(3);
    let reply = run_ok(&store, "db", doc! { "find": "c", "filter": { "group": 1 } });
    assert_eq!(batch_ids(&reply), vec![1]);
    assert_eq!(cursor_id(&reply), 0);
    let reply = run_ok(&store, "db", doc! { "find": "missing" });
    assert_eq!(
        reply.get_document("cursor").unwrap(),
        &doc! { "firstBatch": [], "id": 0_i64, "ns": "db.missing" }
    );
}

#[test]
fn batch_size_and_limit_follow_mongod() {
    let store = store_with(10);
    // limit 4 with batchSize 3: the batch that lines up with the limit leaves the cursor open.
    let reply = run_ok(
        &store,
        "db",
        doc! { "find": "c", "limit": 4, "batchSize": 3 },
    );
    assert_eq!(batch_ids(&reply), vec![1, 2, 3]);
    let id = cursor_id(&reply);
    assert_ne!(id, 0);
    let more = run_ok(
        &store,
        "db",
        doc! { "getMore": id, "collection": "c", "batchSize": 1 },
    );
    assert_eq!(batch_ids(&more), vec![4]);
    assert_eq!(cursor_id(&more), id);
    let last = run_ok(&store, "db", doc! { "getMore": id, "collection": "c" });
    assert!(batch(&last).is_empty());
    assert_eq!(cursor_id(&last), 0);
    // singleBatch never leaves a cursor.
    let reply = run_ok(
        &store,
        "db",
        doc! { "find": "c", "batchSize": 2, "singleBatch": true },
    );
    assert_eq!((batch_ids(&reply), cursor_id(&reply)), (vec![1, 2], 0));
    // batchSize 0 returns no documents but a cursor.
    let reply = run_ok(&store, "db", doc! { "find": "c", "batchSize": 0 });
    assert!(batch(&reply).is_empty());
    assert_ne!(cursor_id(&reply), 0);
}

#[test]
fn sort_skip_limit_and_projection() {
    let store = store_with(9);
    let reply = run_ok(
        &store,
        "db",
        doc! { "find": "c", "sort": { "group": -1, "_id": 1 }, "skip": 1, "limit": 4, "projection": { "group": 0 } },
    );
    assert_eq!(
        batch(&reply),
        vec![
            doc! { "_id": 5 },
            doc! { "_id": 8 },
            doc! { "_id": 1 },
            doc! { "_id": 4 }
        ]
    );
    let reply = run(&store, "db", doc! { "find": "c", "limit": -1 });
    assert_eq!(error_code(&reply), 51024);
    let reply = run(&store, "db", doc! { "find": "c", "sort": { "a": 2 } });
    assert_eq!(error_code(&reply), 15975);
    let reply = run(&store, "db", doc! { "find": "c", "filter": 1 });
    assert_eq!(error_code(&reply), 14);
}

#[test]
fn sort_uses_array_extremes_and_puts_missing_first() {
    let store = new_store();
    insert(
        &store,
        "s",
        vec![
            doc! { "_id": 1, "v": [5, 1] },
            doc! { "_id": 2, "v": 3 },
            doc! { "_id": 3 },
            doc! { "_id": 4, "v": "text" },
            doc! { "_id": 5, "v": [] },
        ],
    );
    let ascending = run_ok(&store, "db", doc! { "find": "s", "sort": { "v": 1 } });
    assert_eq!(batch_ids(&ascending), vec![5, 3, 1, 2, 4]);
    let descending = run_ok(&store, "db", doc! { "find": "s", "sort": { "v": -1 } });
    assert_eq!(batch_ids(&descending), vec![4, 1, 2, 3, 5]);
}

#[test]
fn get_more_checks_the_cursor_and_namespace() {
    let store = store_with(5);
    let reply = run_ok(&store, "db", doc! { "find": "c", "batchSize": 2 });
    let id = cursor_id(&reply);
    let wrong = run(&store, "db", doc! { "getMore": id, "collection": "other" });
    assert_eq!(error_code(&wrong), 13);
    let unknown = run(
        &store,
        "db",
        doc! { "getMore": 12345_i64, "collection": "c" },
    );
    assert_eq!(error_code(&unknown), 43);
    assert_eq!(
        unknown.get_str("errmsg").unwrap(),
        "cursor id 12345 not found"
    );
    let wrong_type = run(&store, "db", doc! { "getMore": 5, "collection": "c" });
    assert_eq!(error_code(&wrong_type), 14);
    // Another "member" sharing the store continues the same cursor.
    let more = run_ok(
        &store,
        "db",
        doc! { "getMore": id, "collection": "c", "batchSize": 10 },
    );
    assert_eq!(batch_ids(&more), vec![3, 4, 5]);
    assert_eq!(cursor_id(&more), 0);
}

#[test]
fn get_more_refuses_max_time_ms_on_a_cursor_that_is_not_await_data() {
    let store = store_with(5);
    let id = cursor_id(&run_ok(&store, "db", doc! { "find": "c", "batchSize": 1 }));
    let refused = run(
        &store,
        "db",
        doc! { "getMore": id, "collection": "c", "maxTimeMS": 50 },
    );
    assert_eq!(error_code(&refused), 2, "{refused}");
    // Zero sets no wait: mongod accepts it, and the cursor is still open after the refusal.
    let more = run_ok(
        &store,
        "db",
        doc! { "getMore": id, "collection": "c", "maxTimeMS": 0, "batchSize": 1 },
    );
    assert_eq!(batch_ids(&more), vec![2]);
}

#[test]
fn kill_cursors_reports_killed_and_not_found() {
    let store = store_with(5);
    let id = cursor_id(&run_ok(&store, "db", doc! { "find": "c", "batchSize": 1 }));
    let reply = run_ok(
        &store,
        "db",
        doc! { "killCursors": "c", "cursors": [id, 99_i64] },
    );
    assert_eq!(
        reply.get_array("cursorsKilled").unwrap(),
        &vec![Bson::Int64(id)]
    );
    assert_eq!(
        reply.get_array("cursorsNotFound").unwrap(),
        &vec![Bson::Int64(99)]
    );
    assert!(reply.get_array("cursorsAlive").unwrap().is_empty());
    assert!(reply.get_array("cursorsUnknown").unwrap().is_empty());
    assert_eq!(store.open_cursor_count(), 0);
    assert_eq!(
        error_code(&run(
            &store,
            "db",
            doc! { "getMore": id, "collection": "c" }
        )),
        43
    );
}

#[test]
fn count_and_distinct() {
    let store = store_with(10);
    let reply = run_ok(&store, "db", doc! { "count": "c", "query": { "group": 1 } });
    assert_eq!(reply, doc! { "n": 4, "ok": 1.0 });
    let reply = run_ok(&store, "db", doc! { "count": "c", "skip": 2, "limit": 5 });
    assert_eq!(reply.get_i32("n").unwrap(), 5);
    let reply = run_ok(&store, "db", doc! { "count": "c", "skip": 8, "limit": -5 });
    assert_eq!(reply.get_i32("n").unwrap(), 2);
    assert_eq!(
        run_ok(&store, "db", doc! { "count": "none" })
            .get_i32("n")
            .unwrap(),
        0
    );
    insert(
        &store,
        "d",
        vec![
            doc! { "v": [3, 1] },
            doc! { "v": 2 },
            doc! { "v": 1.0 },
            doc! { "w": 1 },
            doc! { "v": "x" },
        ],
    );
    let reply = run_ok(&store, "db", doc! { "distinct": "d", "key": "v" });
    assert_eq!(reply, doc! { "values": [1, 2, 3, "x"], "ok": 1.0 });
    let reply = run_ok(
        &store,
        "db",
        doc! { "distinct": "d", "key": "v", "query": { "v": { "$type": "string" } } },
    );
    assert_eq!(
        reply.get_array("values").unwrap(),
        &vec![Bson::String("x".into())]
    );
}

#[test]
fn batches_stop_at_16_mib() {
    let store = new_store();
    let megabyte = "x".repeat(1024 * 1024);
    for id in 0..20 {
        insert(
            &store,
            "big",
            vec![doc! { "_id": id, "payload": megabyte.clone() }],
        );
    }
    let reply = run_ok(&store, "db", doc! { "find": "big", "batchSize": 1000 });
    let first = batch(&reply).len();
    assert_eq!(
        first, 15,
        "16 one-MiB documents plus their overhead exceed 16 MiB"
    );
    let more = run_ok(
        &store,
        "db",
        doc! { "getMore": cursor_id(&reply), "collection": "big" },
    );
    assert_eq!(batch(&more).len(), 5);
    assert_eq!(cursor_id(&more), 0);
}
