//! insert, update and delete: replies, write errors, ordered and unordered batches.

use bson::{Bson, doc};

use super::{error_code, find, ids, insert, new_store, run, run_ok};

#[test]
fn insert_reports_n_and_generates_ids_first() {
    let store = new_store();
    let reply = run_ok(
        &store,
        "db",
        doc! { "insert": "c", "documents": [{ "a": 1 }, { "b": 2, "_id": 5 }] },
    );
    assert_eq!(reply, doc! { "n": 2, "ok": 1.0 });
    let documents = store.documents("db", "c");
    assert_eq!(documents.len(), 2);
    assert!(matches!(documents[0].get("_id"), Some(Bson::ObjectId(_))));
    assert_eq!(documents[0].keys().next().map(String::as_str), Some("_id"));
    assert_eq!(documents[1], doc! { "_id": 5, "b": 2 });
    assert_eq!(store.writes_applied("db.c"), 2);
}

#[test]
fn duplicate_key_errors_look_like_mongod() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1 }]);
    let reply = run_ok(
        &store,
        "db",
        doc! { "insert": "c", "documents": [{ "_id": 1.0 }] },
    );
    assert_eq!(reply.get_i32("n").unwrap(), 0);
    let errors = reply.get_array("writeErrors").unwrap();
    let error = errors[0].as_document().unwrap();
    assert_eq!(error.get_i32("index").unwrap(), 0);
    assert_eq!(error.get_i32("code").unwrap(), 11000);
    assert_eq!(
        error.get_str("errmsg").unwrap(),
        "E11000 duplicate key error collection: db.c index: _id_ dup key: { _id: 1.0 }"
    );
    assert_eq!(
        error.get_document("keyPattern").unwrap(),
        &doc! { "_id": 1 }
    );
    assert_eq!(
        error.get_document("keyValue").unwrap(),
        &doc! { "_id": 1.0 }
    );
}

#[test]
fn ordered_inserts_stop_at_the_first_error_unordered_continue() {
    let store = new_store();
    let batch = || vec![doc! { "_id": 1 }, doc! { "_id": 1 }, doc! { "_id": 2 }];
    let reply = run_ok(
        &store,
        "db",
        doc! { "insert": "ordered", "documents": batch() },
    );
    assert_eq!(reply.get_i32("n").unwrap(), 1);
    assert_eq!(reply.get_array("writeErrors").unwrap().len(), 1);
    assert_eq!(ids(&store, "ordered", doc! {}), vec![1]);

    let reply = run_ok(
        &store,
        "db",
        doc! { "insert": "unordered", "documents": batch(), "ordered": false },
    );
    assert_eq!(reply.get_i32("n").unwrap(), 2);
    let errors = reply.get_array("writeErrors").unwrap();
    assert_eq!(errors.len(), 1);
    assert_eq!(
        errors[0].as_document().unwrap().get_i32("index").unwrap(),
        1
    );
    assert_eq!(ids(&store, "unordered", doc! {}), vec![1, 2]);
}

#[test]
fn update_reports_matched_modified_and_upserted() {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![
            doc! { "_id": 1, "a": 1 },
            doc! { "_id": 2, "a": 1 },
            doc! { "_id": 3, "a": 2 },
        ],
    );
    let reply = run_ok(
        &store,
        "db",
        doc! { "update": "c", "updates": [
            { "q": { "a": 1 }, "u": { "$set": { "a": 1 } }, "multi": true },
            { "q": { "a": 1 }, "u": { "$set": { "b": 1 } }, "multi": true },
            { "q": { "_id": 9 }, "u": { "$set": { "z": 1 } }, "upsert": true },
            { "q": { "_id": 3 }, "u": { "$inc": { "a": 1 } } },
        ] },
    );
    assert_eq!(reply.get_i32("n").unwrap(), 2 + 2 + 1 + 1);
    assert_eq!(
        reply.get_i32("nModified").unwrap(),
        2 + 1,
        "only the $set of b and the $inc change documents"
    );
    assert_eq!(
        reply.get_array("upserted").unwrap(),
        &vec![Bson::Document(doc! { "index": 2, "_id": 9 })]
    );
    assert_eq!(
        find(&store, "c", doc! { "_id": 9 }),
        vec![doc! { "_id": 9, "z": 1 }]
    );
    assert_eq!(
        find(&store, "c", doc! { "_id": 3 }),
        vec![doc! { "_id": 3, "a": 3 }]
    );
}

#[test]
fn update_without_multi_changes_one_document() {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![doc! { "_id": 1, "a": 1 }, doc! { "_id": 2, "a": 1 }],
    );
    let reply = run_ok(
        &store,
        "db",
        doc! { "update": "c", "updates": [{ "q": { "a": 1 }, "u": { "a": 5 } }] },
    );
    assert_eq!(
        (
            reply.get_i32("n").unwrap(),
            reply.get_i32("nModified").unwrap()
        ),
        (1, 1)
    );
    assert_eq!(ids(&store, "c", doc! { "a": 5 }), vec![1]);
}

#[test]
fn a_single_document_update_picks_the_first_match_in_sort_order() {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![
            doc! { "_id": 1, "a": 1, "n": 2 },
            doc! { "_id": 2, "a": 1, "n": 9 },
            doc! { "_id": 3, "a": 1, "n": 5 },
        ],
    );
    // Natural order would pick _id 1; the sort picks the largest n.
    let reply = run_ok(
        &store,
        "db",
        doc! { "update": "c", "updates": [
            { "q": { "a": 1 }, "u": { "$set": { "picked": true } }, "sort": { "n": -1 } },
        ] },
    );
    assert_eq!(reply.get_i32("nModified").unwrap(), 1);
    assert_eq!(ids(&store, "c", doc! { "picked": true }), vec![2]);
    // A replacement honours it too: ascending picks the smallest n.
    run_ok(
        &store,
        "db",
        doc! { "update": "c", "updates": [
            { "q": { "a": 1 }, "u": { "a": 1, "n": 2, "replaced": true }, "sort": { "n": 1 } },
        ] },
    );
    assert_eq!(ids(&store, "c", doc! { "replaced": true }), vec![1]);
    // With multi the server refuses it, as a write error.
    let reply = run(
        &store,
        "db",
        doc! { "update": "c", "updates": [
            { "q": {}, "u": { "$set": { "x": 1 } }, "multi": true, "sort": { "n": 1 } },
        ] },
    );
    let errors = reply.get_array("writeErrors").unwrap();
    assert_eq!(errors[0].as_document().unwrap().get_i32("code").unwrap(), 9);
    assert!(ids(&store, "c", doc! { "x": 1 }).is_empty());
}

#[test]
fn update_errors_are_write_errors_and_parse_errors_fail_the_command() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1, "s": "text" }]);
    let reply = run_ok(
        &store,
        "db",
        doc! { "update": "c", "updates": [
            { "q": { "_id": 1 }, "u": { "$inc": { "s": 1 } } },
            { "q": { "_id": 1 }, "u": { "$set": { "t": 1 } } },
        ], "ordered": false },
    );
    let errors = reply.get_array("writeErrors").unwrap();
    assert_eq!(
        errors[0].as_document().unwrap().get_i32("code").unwrap(),
        14
    );
    assert_eq!(reply.get_i32("nModified").unwrap(), 1);
    let reply = run(
        &store,
        "db",
        doc! { "update": "c", "updates": [{ "q": { "_id": 1 } }] },
    );
    assert_eq!(error_code(&reply), 40414);
    let reply = run(
        &store,
        "db",
        doc! { "update": "c", "updates": [{ "q": {}, "u": { "x": 1 }, "multi": true }] },
    );
    let errors = reply.get_array("writeErrors").unwrap();
    assert_eq!(errors[0].as_document().unwrap().get_i32("code").unwrap(), 9);
    let reply = run(
        &store,
        "db",
        doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "$set": { "_id": 2 } } }] },
    );
    let errors = reply.get_array("writeErrors").unwrap();
    assert_eq!(
        errors[0].as_document().unwrap().get_i32("code").unwrap(),
        66
    );
}

#[test]
fn update_counts_no_op_changes_as_matched_only() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1, "tags": ["a"] }]);
    let reply = run_ok(
        &store,
        "db",
        doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "$addToSet": { "tags": "a" } } }] },
    );
    assert_eq!(
        (
            reply.get_i32("n").unwrap(),
            reply.get_i32("nModified").unwrap()
        ),
        (1, 0)
    );
    assert_eq!(
        store.writes_applied("db.c"),
        1,
        "only the insert was applied"
    );
}

#[test]
fn delete_with_limits() {
    let store = new_store();
    insert(
        &store,
        "c",
        (1..=5)
            .map(|id| doc! { "_id": id, "even": id % 2 == 0 })
            .collect(),
    );
    let reply = run_ok(
        &store,
        "db",
        doc! { "delete": "c", "deletes": [{ "q": { "even": false }, "limit": 1 }, { "q": { "even": true }, "limit": 0 }] },
    );
    assert_eq!(reply, doc! { "n": 3, "ok": 1.0 });
    assert_eq!(ids(&store, "c", doc! {}), vec![3, 5]);
    let reply = run(
        &store,
        "db",
        doc! { "delete": "c", "deletes": [{ "q": {}, "limit": 2 }] },
    );
    assert_eq!(error_code(&reply), 9);
    let reply = run(
        &store,
        "db",
        doc! { "delete": "c", "deletes": [{ "q": {} }] },
    );
    assert_eq!(error_code(&reply), 40414);
    let reply = run_ok(
        &store,
        "db",
        doc! { "delete": "missing", "deletes": [{ "q": {}, "limit": 0 }] },
    );
    assert_eq!(reply.get_i32("n").unwrap(), 0);
}

#[test]
fn malformed_commands_fail_with_mongod_codes() {
    let store = new_store();
    assert_eq!(
        error_code(&run(&store, "db", doc! { "insert": "c" })),
        40414
    );
    assert_eq!(
        error_code(&run(&store, "db", doc! { "insert": "c", "documents": 5 })),
        14
    );
    assert_eq!(
        error_code(&run(&store, "db", doc! { "insert": "c", "documents": [] })),
        16
    );
    assert_eq!(
        error_code(&run(&store, "db", doc! { "insert": "", "documents": [{}] })),
        73
    );
    assert_eq!(
        error_code(&run(
            &store,
            "bad.db",
            doc! { "insert": "c", "documents": [{}] }
        )),
        73
    );
    assert_eq!(
        error_code(&run(&store, "db", doc! { "insert": 5, "documents": [{}] })),
        73
    );
    assert_eq!(error_code(&run(&store, "db", doc! { "frobnicate": 1 })), 59);
    let reply = run(
        &store,
        "db",
        doc! { "insert": "c", "documents": [{ "_id": [1] }] },
    );
    let errors = reply.get_array("writeErrors").unwrap();
    assert_eq!(errors[0].as_document().unwrap().get_i32("code").unwrap(), 2);
}

#[test]
fn unique_secondary_indexes_are_enforced() {
    let store = new_store();
    run_ok(
        &store,
        "db",
        doc! { "createIndexes": "c", "indexes": [{ "key": { "email": 1 }, "name": "email_1", "unique": true }] },
    );
    insert(
        &store,
        "c",
        vec![
            doc! { "_id": 1, "email": "a" },
            doc! { "_id": 2, "email": "b" },
        ],
    );
    let reply = run_ok(
        &store,
        "db",
        doc! { "insert": "c", "documents": [{ "_id": 3, "email": "a" }] },
    );
    let error = reply.get_array("writeErrors").unwrap()[0]
        .as_document()
        .unwrap()
        .clone();
    assert_eq!(
        error.get_str("errmsg").unwrap(),
        "E11000 duplicate key error collection: db.c index: email_1 dup key: { email: \"a\" }"
    );
    let reply = run_ok(
        &store,
        "db",
        doc! { "update": "c", "updates": [{ "q": { "_id": 2 }, "u": { "$set": { "email": "a" } } }] },
    );
    assert!(reply.contains_key("writeErrors"));
    // Freeing the key makes it available again.
    run_ok(
        &store,
        "db",
        doc! { "delete": "c", "deletes": [{ "q": { "_id": 1 }, "limit": 1 }] },
    );
    let reply = run_ok(
        &store,
        "db",
        doc! { "update": "c", "updates": [{ "q": { "_id": 2 }, "u": { "$set": { "email": "a" } } }] },
    );
    assert!(!reply.contains_key("writeErrors"), "{reply}");
}
