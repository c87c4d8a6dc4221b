//! The TTL monitor's pass: expired dates (the earliest of an array) are deleted through the
//! op log; other documents, non-TTL indexes and capped collections are left alone; `collMod`
//! of `expireAfterSeconds` takes effect at the next pass.

use bson::{Bson, doc};

use super::{at, ids, insert, new_store, run, run_ok};
use crate::OplogOp;

fn ttl_store(expire_after_seconds: i32) -> crate::Store {
    let store = new_store();
    run_ok(
        &store,
        "db",
        doc! { "createIndexes": "c", "indexes": [{
            "key": { "at": 1 },
            "name": "at_1",
            "expireAfterSeconds": expire_after_seconds,
        }] },
    );
    insert(
        &store,
        "c",
        vec![
            doc! { "_id": 1, "at": at(-100) },
            doc! { "_id": 2, "at": at(-5) },
            doc! { "_id": 3, "at": [at(-5), at(-100)] },
            doc! { "_id": 4, "at": "not a date" },
            doc! { "_id": 5 },
        ],
    );
    store
}

#[test]
fn a_pass_deletes_documents_past_expiry_through_the_op_log() {
    let store = ttl_store(60);
    let before = store.op_time();
    assert_eq!(store.expire_ttl(at(0)), 2);
    assert_eq!(ids(&store, "c", doc! {}), vec![2, 4, 5]);
    let deleted: Vec<Option<Bson>> = store
        .oplog_since(before)
        .into_iter()
        .filter(|entry| entry.op == OplogOp::Delete)
        .map(|entry| entry.id)
        .collect();
    assert_eq!(deleted, vec![Some(Bson::Int32(1)), Some(Bson::Int32(3))]);
    // Nothing left to expire: a second pass at the same time deletes nothing.
    assert_eq!(store.expire_ttl(at(0)), 0);
    // Later, the document dated -5 s expires too.
    assert_eq!(store.expire_ttl(at(56)), 1);
    assert_eq!(ids(&store, "c", doc! {}), vec![4, 5]);
}

#[test]
fn coll_mod_of_expire_after_seconds_takes_effect_at_the_next_pass() {
    let store = ttl_store(3600);
    assert_eq!(store.expire_ttl(at(0)), 0);
    let reply = run_ok(
        &store,
        "db",
        doc! { "collMod": "c", "index": { "name": "at_1", "expireAfterSeconds": 1 } },
    );
    assert_eq!(
        reply.get("expireAfterSeconds_old"),
        Some(&Bson::Int32(3600))
    );
    assert_eq!(reply.get("expireAfterSeconds_new"), Some(&Bson::Int32(1)));
    assert_eq!(store.expire_ttl(at(0)), 3);
    let listed = run_ok(&store, "db", doc! { "listIndexes": "c" });
    let specs = super::batch(&listed);
    assert_eq!(specs[1].get("expireAfterSeconds"), Some(&Bson::Int32(1)));
    let refused = run(
        &store,
        "db",
        doc! { "collMod": "c", "index": { "name": "at_1", "expireAfterSeconds": -1 } },
    );
    assert_eq!(super::error_code(&refused), crate::code::INVALID_OPTIONS);
}

#[test]
fn indexes_without_expiry_and_capped_collections_never_expire() {
    let store = new_store();
    run_ok(
        &store,
        "db",
        doc! { "createIndexes": "plain", "indexes": [{ "key": { "at": 1 }, "name": "at_1" }] },
    );
    run_ok(
        &store,
        "db",
        doc! { "create": "capped", "capped": true, "size": 4096 },
    );
    insert(&store, "plain", vec![doc! { "_id": 1, "at": at(-100) }]);
    insert(&store, "capped", vec![doc! { "_id": 1, "at": at(-100) }]);
    assert_eq!(store.expire_ttl(at(0)), 0);
    assert_eq!(ids(&store, "plain", doc! {}), vec![1]);
}

#[test]
fn a_partial_ttl_index_expires_only_the_documents_its_filter_matches() {
    let store = new_store();
    run_ok(
        &store,
        "db",
        doc! { "createIndexes": "c", "indexes": [{
            "key": { "at": 1 },
            "name": "at_1",
            "expireAfterSeconds": 0,
            "partialFilterExpression": { "kind": "session" },
        }] },
    );
    insert(
        &store,
        "c",
        vec![
            doc! { "_id": 1, "at": at(-10), "kind": "session" },
            doc! { "_id": 2, "at": at(-10), "kind": "audit" },
        ],
    );
    assert_eq!(store.expire_ttl(at(0)), 1);
    assert_eq!(ids(&store, "c", doc! {}), vec![2]);
}

#[test]
fn clustered_and_time_series_collections_expire_by_their_own_option() {
    let store = new_store();
    run_ok(
        &store,
        "db",
        doc! {
            "create": "clustered",
            "clusteredIndex": { "key": { "_id": 1 }, "unique": true },
            "expireAfterSeconds": 60,
        },
    );
    run_ok(
        &store,
        "db",
        doc! {
            "create": "series",
            "timeseries": { "timeField": "t" },
            "expireAfterSeconds": 60,
        },
    );
    insert(
        &store,
        "clustered",
        vec![
            doc! { "_id": at(-100) },
            doc! { "_id": at(-10) },
            doc! { "_id": 1 },
        ],
    );
    insert(
        &store,
        "series",
        vec![
            doc! { "_id": 1, "t": at(-100) },
            doc! { "_id": 2, "t": at(-10) },
        ],
    );
    assert_eq!(store.expire_ttl(at(0)), 2);
    assert_eq!(super::find(&store, "clustered", doc! {}).len(), 2);
    assert_eq!(ids(&store, "series", doc! {}), vec![2]);
}
