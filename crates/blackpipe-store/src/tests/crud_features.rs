//! The store features the CRUD suite needs: `let` variables, collations, `arrayFilters`,
//! `$setField`, `$out`/`$merge`, and `_id` validation.

use bson::{Bson, doc};

use super::{batch, error_code, find, ids, insert, new_store, run, run_ok};
use crate::Store;

fn people() -> Store {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![
            doc! { "_id": 1, "name": "ping", "y": [{"b": 3}, {"b": 1}] },
            doc! { "_id": 2, "name": "PING", "y": [{"b": 1}] },
            doc! { "_id": 3, "name": "pong", "y": [] },
        ],
    );
    store
}

#[test]
fn let_variables_reach_expr_in_find_update_delete_and_aggregate() {
    let store = people();
    let filter = doc! { "$expr": { "$eq": ["$_id", "$$id"] } };
    let found = batch(&run_ok(
        &store,
        "db",
        doc! { "find": "c", "filter": filter.clone(), "let": { "id": 2 } },
    ));
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].get_i32("_id").unwrap(), 2);
    let updated = run_ok(
        &store,
        "db",
        doc! { "update": "c", "updates": [{ "q": filter.clone(), "u": [{ "$set": { "x": "$$x" } }] }],
        "let": { "id": 1, "x": "bound" } },
    );
    assert_eq!(updated.get_i32("nModified").unwrap(), 1);
    assert_eq!(find(&store, "c", doc! { "x": "bound" }).len(), 1);
    let output = batch(&run_ok(
        &store,
        "db",
        doc! { "aggregate": "c", "pipeline": [{ "$match": filter.clone() }, { "$project": { "v": "$$id" } }],
        "cursor": {}, "let": { "id": 3 } },
    ));
    assert_eq!(output, vec![doc! { "_id": 3, "v": 3 }]);
    let deleted = run_ok(
        &store,
        "db",
        doc! { "delete": "c", "deletes": [{ "q": filter, "limit": 0 }], "let": { "id": 3 } },
    );
    assert_eq!(deleted.get_i32("n").unwrap(), 1);
}

#[test]
fn an_undefined_variable_and_a_bad_name_are_refused() {
    let store = people();
    let filter = doc! { "$expr": { "$eq": ["$_id", "$$nope"] } };
    let reply = run(&store, "db", doc! { "find": "c", "filter": filter });
    assert_eq!(error_code(&reply), 17276);
    let reply = run(
        &store,
        "db",
        doc! { "find": "c", "filter": {}, "let": { "Upper": 1 } },
    );
    // FailedToParse: mongod 8.0 no longer answers 16870 for a bad variable name.
    assert_eq!(error_code(&reply), 9);
}

#[test]
fn a_let_reference_cannot_grow_past_the_size_limit() {
    let store = people();
    let big = "x".repeat(4 * 1024 * 1024);
    let many: Vec<Bson> = (0..8).map(|_| Bson::String("$$big".to_owned())).collect();
    let reply = run(
        &store,
        "db",
        doc! { "find": "c", "filter": { "$expr": { "$in": ["$name", many] } }, "let": { "big": big } },
    );
    assert_eq!(error_code(&reply), 10334);
}

#[test]
fn strength_two_collation_ignores_case_and_strength_three_does_not() {
    let store = people();
    let loose = doc! { "locale": "en_US", "strength": 2 };
    let found = batch(&run_ok(
        &store,
        "db",
        doc! { "find": "c", "filter": { "name": "PING" }, "collation": loose.clone() },
    ));
    assert_eq!(found.len(), 2);
    let strict = batch(&run_ok(
        &store,
        "db",
        doc! { "find": "c", "filter": { "name": "PING" }, "collation": { "locale": "en_US", "strength": 3 } },
    ));
    assert_eq!(strict.len(), 1);
    let distinct = run_ok(
        &store,
        "db",
        doc! { "distinct": "c", "key": "name", "collation": loose.clone() },
    );
    assert_eq!(distinct.get_array("values").unwrap().len(), 2);
    let deleted = run_ok(
        &store,
        "db",
        doc! { "delete": "c", "deletes": [{ "q": { "name": "Ping" }, "limit": 0, "collation": loose }] },
    );
    assert_eq!(deleted.get_i32("n").unwrap(), 2);
    let bad = run(
        &store,
        "db",
        doc! { "find": "c", "filter": {}, "collation": { "locale": "en", "strength": 9 } },
    );
    assert_eq!(error_code(&bad), 51024);
}

#[test]
fn array_filters_update_only_the_matching_elements() {
    let store = people();
    let reply = run_ok(
        &store,
        "db",
        doc! { "update": "c", "updates": [{ "q": {}, "u": { "$set": { "y.$[i].b": 2 } },
        "multi": true, "arrayFilters": [{ "i.b": 1 }] }] },
    );
    assert_eq!(reply.get_i32("nModified").unwrap(), 2);
    let first = &find(&store, "c", doc! { "_id": 1 })[0];
    assert_eq!(
        first.get_array("y").unwrap(),
        &vec![Bson::Document(doc! {"b": 3}), Bson::Document(doc! {"b": 2})]
    );
    let unused = run(
        &store,
        "db",
        doc! { "findAndModify": "c", "query": { "_id": 1 }, "update": { "$set": { "name": "x" } },
        "arrayFilters": [{ "i.b": 1 }] },
    );
    assert_eq!(error_code(&unused), 9);
}

#[test]
fn set_field_writes_a_dollar_prefixed_field() {
    let store = people();
    run_ok(
        &store,
        "db",
        doc! { "update": "c", "updates": [{ "q": { "_id": 3 }, "u": [{ "$replaceWith": {
        "$setField": { "field": { "$literal": "$a" }, "value": 1, "input": "$$ROOT" } } }] }] },
    );
    let updated = &find(&store, "c", doc! { "_id": 3 })[0];
    assert_eq!(updated.get_i32("$a").unwrap(), 1);
    let dynamic = run(
        &store,
        "db",
        doc! { "aggregate": "c", "pipeline": [{ "$project": { "v": { "$setField": {
        "field": "$name", "value": 1, "input": "$$ROOT" } } } }], "cursor": {} },
    );
    assert_eq!(error_code(&dynamic), 4161106);
}

#[test]
fn an_id_with_a_dollar_prefixed_field_is_refused() {
    let store = new_store();
    let reply = run_ok(
        &store,
        "db",
        doc! { "insert": "c", "documents": [{ "_id": { "x": { "$a": 1 } } }] },
    );
    let errors = reply.get_array("writeErrors").unwrap();
    assert_eq!(
        errors[0].as_document().unwrap().get_i32("code").unwrap(),
        52
    );
    assert!(find(&store, "c", doc! {}).is_empty());
}

#[test]
fn out_replaces_the_target_and_merge_upserts_by_id() {
    let store = people();
    insert(&store, "target", vec![doc! { "_id": 9, "old": true }]);
    let reply = run_ok(
        &store,
        "db",
        doc! { "aggregate": "c", "pipeline": [{ "$match": { "_id": { "$gt": 1 } } },
        { "$project": { "name": 1 } }, { "$out": "target" }], "cursor": {} },
    );
    assert!(batch(&reply).is_empty());
    assert_eq!(ids(&store, "target", doc! {}), vec![2, 3]);
    run_ok(
        &store,
        "db",
        doc! { "aggregate": "c", "pipeline": [{ "$project": { "extra": "$_id" } },
        { "$merge": { "into": "target" } }], "cursor": {} },
    );
    let mut merged = ids(&store, "target", doc! {});
    merged.sort_unstable();
    assert_eq!(merged, vec![1, 2, 3]);
    assert_eq!(
        find(&store, "target", doc! { "_id": 2 })[0],
        doc! { "_id": 2, "name": "PING", "extra": 2 }
    );
    let not_last = run(
        &store,
        "db",
        doc! { "aggregate": "c", "pipeline": [{ "$out": "t" }, { "$match": {} }], "cursor": {} },
    );
    assert_eq!(error_code(&not_last), 40601);
    let fails = run(
        &store,
        "db",
        doc! { "aggregate": "c", "pipeline": [{ "$merge": { "into": "target", "whenMatched": "fail" } }],
        "cursor": {} },
    );
    assert_eq!(error_code(&fails), 11000);
    assert_eq!(
        fails.get_document("keyPattern").unwrap(),
        &doc! { "_id": 1 }
    );
    assert_eq!(fails.get_document("keyValue").unwrap(), &doc! { "_id": 1 });
}

#[test]
fn out_and_merge_write_into_another_database() {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![doc! { "_id": 1, "a": 1 }, doc! { "_id": 2, "a": 2 }],
    );
    run_ok(
        &store,
        "db",
        doc! { "aggregate": "c", "pipeline": [{ "$out": { "db": "reports", "coll": "copy" } }], "cursor": {} },
    );
    assert_eq!(store.documents("reports", "copy").len(), 2);
    run_ok(
        &store,
        "db",
        doc! { "aggregate": "c", "pipeline": [
            { "$match": { "_id": 1 } },
            { "$merge": { "into": { "db": "reports", "coll": "merged" } } },
        ], "cursor": {} },
    );
    assert_eq!(
        store.documents("reports", "merged"),
        vec![doc! { "_id": 1, "a": 1 }]
    );
    // A collectionless aggregate can write elsewhere too (PyMongo's fake-cursor test).
    run_ok(
        &store,
        "admin",
        doc! { "aggregate": 1, "pipeline": [
            { "$documents": [{ "_id": 9 }] },
            { "$merge": { "into": { "db": "reports", "coll": "from_admin" } } },
        ], "cursor": {} },
    );
    assert_eq!(
        store.documents("reports", "from_admin"),
        vec![doc! { "_id": 9 }]
    );
    let refused = run(
        &store,
        "db",
        doc! { "aggregate": "c", "pipeline": [{ "$out": { "db": "admin", "coll": "x" } }], "cursor": {} },
    );
    assert_eq!(error_code(&refused), 73, "{refused}");
}

#[test]
fn merge_gives_an_output_document_without_id_a_new_one() {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![doc! { "_id": 1, "a": 1 }, doc! { "_id": 2, "a": 2 }],
    );
    run_ok(
        &store,
        "db",
        doc! { "aggregate": "c", "pipeline": [
            { "$project": { "_id": 0, "a": 1 } },
            { "$merge": { "into": "out" } },
        ], "cursor": {} },
    );
    let stored = store.documents("db", "out");
    assert_eq!(stored.len(), 2, "{stored:?}");
    assert!(
        stored
            .iter()
            .all(|document| document.get_object_id("_id").is_ok())
    );
}
