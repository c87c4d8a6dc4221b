//! `$lookup` in its context: inside a transaction, in a snapshot read, from views, nested,
//! and the bounds on the work and memory of joins.

use bson::{Document, doc};

use super::{batch, error_code, insert, new_store, run, run_ok};
use crate::Store;

fn aggregate(store: &Store, collection: &str, pipeline: Vec<Document>) -> Vec<Document> {
    batch(&run_ok(
        store,
        "db",
        doc! { "aggregate": collection, "pipeline": pipeline, "cursor": {} },
    ))
}

fn failure(store: &Store, collection: &str, pipeline: Vec<Document>) -> (i32, String) {
    let reply = run(
        store,
        "db",
        doc! { "aggregate": collection, "pipeline": pipeline, "cursor": {} },
    );
    let code = error_code(&reply);
    (code, reply.get_str("errmsg").unwrap_or_default().to_owned())
}

#[test]
fn a_command_variable_bound_to_a_missing_value_is_missing() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1 }]);
    let reply = run_ok(
        &store,
        "db",
        doc! {
            "aggregate": "c",
            "pipeline": [{ "$project": { "x": "$$gone", "y": { "$ifNull": ["$$gone", "none"] } } }],
            "let": { "gone": "$$REMOVE" },
            "cursor": {},
        },
    );
    assert_eq!(batch(&reply), vec![doc! { "_id": 1, "y": "none" }]);
}

#[test]
fn a_lookup_inside_a_transaction_sees_the_transaction_writes() {
    let store = new_store();
    insert(&store, "l", vec![doc! { "_id": 1, "k": 1 }]);
    insert(&store, "f", vec![doc! { "_id": 1, "k": 1 }]);
    let session = doc! { "id": bson::Binary { subtype: bson::spec::BinarySubtype::Uuid, bytes: vec![9; 16] } };
    let in_txn = |mut command: Document, start: bool| {
        command.insert("lsid", session.clone());
        command.insert("txnNumber", 1_i64);
        command.insert("autocommit", false);
        if start {
            command.insert("startTransaction", true);
        }
        command
    };
    run_ok(
        &store,
        "db",
        in_txn(
            doc! { "insert": "f", "documents": [{ "_id": 2, "k": 1 }] },
            true,
        ),
    );
    // Outside the transaction, a write the transaction must not see.
    insert(&store, "f", vec![doc! { "_id": 3, "k": 1 }]);
    let lookup =
        doc! { "$lookup": { "from": "f", "localField": "k", "foreignField": "k", "as": "m" } };
    let inside = batch(&run_ok(
        &store,
        "db",
        in_txn(
            doc! { "aggregate": "l", "pipeline": [lookup.clone(), { "$project": { "m": "$m._id" } }], "cursor": {} },
            false,
        ),
    ));
    assert_eq!(inside, vec![doc! { "_id": 1, "m": [1, 2] }]);
    let outside = aggregate(
        &store,
        "l",
        vec![lookup, doc! { "$project": { "m": "$m._id" } }],
    );
    assert_eq!(outside, vec![doc! { "_id": 1, "m": [1, 3] }]);
}

#[test]
fn a_snapshot_read_joins_with_the_data_as_of_its_time() {
    let store = new_store();
    insert(&store, "l", vec![doc! { "_id": 1, "k": 1 }]);
    insert(&store, "f", vec![doc! { "_id": 1, "k": 1 }]);
    let then = store.op_time().ts;
    insert(&store, "f", vec![doc! { "_id": 2, "k": 1 }]);
    let reply = run_ok(
        &store,
        "db",
        doc! {
            "aggregate": "l",
            "pipeline": [
                { "$lookup": { "from": "f", "localField": "k", "foreignField": "k", "as": "m" } },
                { "$project": { "m": "$m._id" } },
            ],
            "cursor": {},
            "readConcern": { "level": "snapshot", "atClusterTime": then },
        },
    );
    assert_eq!(batch(&reply), vec![doc! { "_id": 1, "m": [1] }]);
}

#[test]
fn a_view_as_from_runs_its_pipeline_under_its_collation() {
    let store = new_store();
    insert(&store, "l", vec![doc! { "_id": 1, "k": "x" }]);
    insert(
        &store,
        "f",
        vec![
            doc! { "_id": 1, "k": "x", "keep": true },
            doc! { "_id": 2, "k": "x", "keep": false },
        ],
    );
    run_ok(
        &store,
        "db",
        doc! { "create": "kept", "viewOn": "f", "pipeline": [{ "$match": { "keep": true } }] },
    );
    let output = aggregate(
        &store,
        "l",
        vec![
            doc! { "$lookup": { "from": "kept", "localField": "k", "foreignField": "k", "as": "m" } },
            doc! { "$project": { "m": "$m._id" } },
        ],
    );
    assert_eq!(output, vec![doc! { "_id": 1, "m": [1] }]);
    // A view with another default collation cannot be joined (mongod's 167).
    run_ok(
        &store,
        "db",
        doc! { "create": "french", "viewOn": "f", "collation": { "locale": "fr" } },
    );
    let (code, message) = failure(
        &store,
        "l",
        vec![doc! { "$lookup": { "from": "french", "pipeline": [], "as": "m" } }],
    );
    assert_eq!(code, 167);
    assert_eq!(
        message,
        "Cannot override a view's default collationdb.french"
    );
    // Also when nothing is read (mongod checks the namespaces a pipeline involves first).
    let (code, _) = failure(
        &store,
        "empty",
        vec![doc! { "$lookup": { "from": "french", "pipeline": [], "as": "m" } }],
    );
    assert_eq!(code, 167);
}

/// A pipeline `levels` `$lookup`s deep, as mongod's tests build them.
fn nested(levels: usize) -> Vec<Document> {
    nested_from(levels, "l")
}

fn nested_from(levels: usize, from: &str) -> Vec<Document> {
    let mut pipeline: Vec<Document> = Vec::new();
    for _ in 0..levels {
        pipeline = vec![doc! { "$lookup": { "pipeline": pipeline, "from": from, "as": "same" } }];
    }
    pipeline
}

#[test]
fn sub_pipelines_nest_at_most_twenty_deep() {
    let store = new_store();
    insert(&store, "l", vec![doc! { "_id": 1 }]);
    let output = aggregate(&store, "l", nested(20));
    assert_eq!(output.len(), 1);
    let (code, message) = failure(&store, "l", nested(21));
    assert_eq!(code, 232);
    assert_eq!(
        message,
        "Maximum number of nested sub-pipelines exceeded. Limit is 20"
    );
    // Refused when parsed, whatever the input.
    assert_eq!(failure(&store, "empty", nested(21)).0, 232);
    // `$facet` does not count, `$unionWith` does.
    let facet_inside = vec![doc! { "$facet": { "a": nested(20) } }];
    assert_eq!(aggregate(&store, "l", facet_inside).len(), 1);
    let union_outside = vec![doc! { "$unionWith": { "coll": "l", "pipeline": nested(20) } }];
    assert_eq!(failure(&store, "l", union_outside).0, 232);
    // Views on the way count too: 10 levels in a view, read 10 levels deep, makes 20; one
    // more is refused.
    run_ok(
        &store,
        "db",
        doc! { "create": "deep", "viewOn": "l", "pipeline": nested(10) },
    );
    assert_eq!(aggregate(&store, "l", nested_from(10, "deep")).len(), 1);
    assert_eq!(failure(&store, "l", nested_from(11, "deep")).0, 232);
}

#[test]
fn a_join_on_two_large_collections_is_stopped() {
    let store = new_store();
    let many: Vec<Document> = (0..1100).map(|id| doc! { "_id": id, "k": id }).collect();
    insert(&store, "big", many);
    // Every document scans the whole foreign collection: 1.2 million examinations, past the
    // unit tests' bound (the server's is 16 times larger).
    let (code, _) = failure(
        &store,
        "big",
        vec![
            doc! { "$lookup": { "from": "big", "localField": "k", "foreignField": "k", "as": "m" } },
        ],
    );
    assert_eq!(code, 262);
    // On `_id`, the index finds each match directly.
    let by_id = aggregate(
        &store,
        "big",
        vec![
            doc! { "$lookup": { "from": "big", "localField": "k", "foreignField": "_id", "as": "m" } },
            doc! { "$match": { "m": { "$size": 1 } } },
            doc! { "$count": "n" },
        ],
    );
    assert_eq!(by_id, vec![doc! { "n": 1100 }]);
}

#[test]
fn the_joined_documents_must_fit_in_a_document() {
    let store = new_store();
    let big = "x".repeat(4 * 1024 * 1024);
    insert(&store, "l", vec![doc! { "_id": 1 }]);
    for id in 0..5 {
        insert(&store, "f", vec![doc! { "_id": id, "big": big.clone() }]);
    }
    let (code, _) = failure(
        &store,
        "l",
        vec![doc! { "$lookup": { "from": "f", "pipeline": [], "as": "m" } }],
    );
    assert_eq!(code, 10334);
}

#[test]
fn sub_pipelines_multiplying_documents_are_stopped() {
    let store = new_store();
    let outer: Vec<Document> = (0..20).map(|id| doc! { "_id": id }).collect();
    insert(&store, "l", outer);
    // Each input document runs a sub-pipeline producing 100,000 documents.
    let many = doc! { "$documents": {
        "$map": { "input": { "$range": [0, 100_000] }, "in": {} },
    } };
    let (code, _) = failure(
        &store,
        "l",
        vec![doc! { "$lookup": { "pipeline": [many, { "$count": "n" }], "as": "x" } }],
    );
    assert_eq!(code, 262);
}

#[test]
fn a_lookup_inside_a_facet_inside_a_lookup_sees_the_outer_variables() {
    let store = new_store();
    insert(
        &store,
        "orders",
        vec![
            doc! { "_id": 1, "item": "a" },
            doc! { "_id": 2, "item": "b" },
        ],
    );
    insert(
        &store,
        "stock",
        vec![
            doc! { "_id": 10, "item": "a", "qty": 1 },
            doc! { "_id": 11, "item": "a", "qty": 2 },
            doc! { "_id": 12, "item": "b", "qty": 3 },
        ],
    );
    let output = aggregate(
        &store,
        "orders",
        vec![doc! { "$lookup": {
            "from": "orders",
            "let": { "wanted": "$item" },
            "pipeline": [
                { "$match": { "$expr": { "$eq": ["$item", "$$wanted"] } } },
                { "$facet": {
                    "stock": [
                        { "$lookup": {
                            "from": "stock",
                            "pipeline": [
                                { "$match": { "$expr": { "$eq": ["$item", "$$wanted"] } } },
                                { "$project": { "_id": 1 } },
                            ],
                            "as": "rows",
                        } },
                        { "$project": { "rows": 1, "_id": 0 } },
                    ],
                    "total": [
                        { "$graphLookup": {
                            "from": "stock", "startWith": "$$wanted", "connectFromField": "none",
                            "connectToField": "item", "as": "found",
                        } },
                        { "$project": { "n": { "$size": "$found" }, "_id": 0 } },
                    ],
                } },
            ],
            "as": "view",
        } }],
    );
    assert_eq!(
        output,
        vec![
            doc! { "_id": 1, "item": "a", "view": [{
                "stock": [{ "rows": [{ "_id": 10 }, { "_id": 11 }] }],
                "total": [{ "n": 2 }],
            }] },
            doc! { "_id": 2, "item": "b", "view": [{
                "stock": [{ "rows": [{ "_id": 12 }] }],
                "total": [{ "n": 1 }],
            }] },
        ]
    );
}
