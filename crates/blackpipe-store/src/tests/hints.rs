//! `hint` checked against the collection's indexes, natural order forward and reverse, and
//! `find`'s `min`/`max` bounds over a hinted index.

use bson::{Document, doc};

use super::{batch, error_code, insert, new_store, run, run_ok};
use crate::Store;

fn store_with_index() -> Store {
    let store = new_store();
    insert(
        &store,
        "c",
        (1..=5).map(|id| doc! { "_id": id, "x": 6 - id }).collect(),
    );
    run_ok(
        &store,
        "db",
        doc! { "createIndexes": "c", "indexes": [{ "key": { "x": 1 }, "name": "x_1" }] },
    );
    store
}

fn find_ids(store: &Store, command: Document) -> Vec<i32> {
    batch(&run_ok(store, "db", command))
        .iter()
        .map(|document| document.get_i32("_id").unwrap_or(-1))
        .collect()
}

#[test]
fn a_hint_naming_no_index_is_bad_value_in_every_read_command() {
    let store = store_with_index();
    for hint in [
        bson::Bson::String("nope_1".into()),
        bson::Bson::Document(doc! { "y": 1 }),
    ] {
        for command in [
            doc! { "find": "c", "hint": hint.clone() },
            doc! { "count": "c", "hint": hint.clone() },
            doc! { "distinct": "c", "key": "x", "hint": hint.clone() },
            doc! { "aggregate": "c", "pipeline": [], "cursor": {}, "hint": hint.clone() },
            doc! { "findAndModify": "c", "query": {}, "remove": true, "hint": hint.clone() },
        ] {
            let reply = run(&store, "db", command.clone());
            assert_eq!(error_code(&reply), crate::code::BAD_VALUE, "{command}");
            assert_eq!(
                reply.get_str("errmsg").ok(),
                Some("hint provided does not correspond to an existing index")
            );
        }
    }
    // Existing indexes by name or key pattern, and the _id index, are fine.
    for hint in [
        bson::Bson::String("x_1".into()),
        bson::Bson::Document(doc! { "x": 1 }),
        bson::Bson::String("_id_".into()),
        bson::Bson::Document(doc! { "_id": 1 }),
    ] {
        run_ok(&store, "db", doc! { "find": "c", "hint": hint.clone() });
        run_ok(&store, "db", doc! { "count": "c", "hint": hint });
    }
    // A collection that does not exist has no plan to refuse.
    run_ok(&store, "db", doc! { "find": "missing", "hint": "nope_1" });
}

#[test]
fn a_bad_hint_in_an_update_or_delete_is_that_statement_write_error() {
    let store = store_with_index();
    for command in [
        doc! { "update": "c", "updates": [
            { "q": {}, "u": { "$set": { "y": 1 } }, "hint": "nope_1" },
        ] },
        doc! { "delete": "c", "deletes": [{ "q": {}, "limit": 1, "hint": { "nope": 1 } }] },
    ] {
        let reply = run_ok(&store, "db", command.clone());
        let errors = reply.get_array("writeErrors").expect("a write error");
        let error = errors[0].as_document().expect("a document");
        assert_eq!(error.get_i32("code").ok(), Some(crate::code::BAD_VALUE));
        assert_eq!(reply.get_i32("n").ok(), Some(0), "{command}");
    }
    let reply = run_ok(
        &store,
        "db",
        doc! { "delete": "c", "deletes": [{ "q": { "_id": 1 }, "limit": 1, "hint": "x_1" }] },
    );
    assert_eq!(reply.get_i32("n").ok(), Some(1));
}

#[test]
fn natural_order_reads_forward_and_reverse() {
    let store = store_with_index();
    assert_eq!(
        find_ids(&store, doc! { "find": "c", "sort": { "$natural": -1 } }),
        vec![5, 4, 3, 2, 1]
    );
    assert_eq!(
        find_ids(
            &store,
            doc! { "find": "c", "hint": { "$natural": -1 }, "limit": 2 }
        ),
        vec![5, 4]
    );
    assert_eq!(
        find_ids(&store, doc! { "find": "c", "hint": { "$natural": 1 } }),
        vec![1, 2, 3, 4, 5]
    );
    let reversed = run_ok(
        &store,
        "db",
        doc! { "aggregate": "c", "pipeline": [], "cursor": {}, "hint": { "$natural": -1 } },
    );
    let ids: Vec<i32> = batch(&reversed)
        .iter()
        .map(|document| document.get_i32("_id").unwrap_or(-1))
        .collect();
    assert_eq!(ids, vec![5, 4, 3, 2, 1]);
}

#[test]
fn a_capped_collection_in_reverse_natural_order_is_newest_first() {
    let store = new_store();
    run_ok(
        &store,
        "db",
        doc! { "create": "capped", "capped": true, "size": 4096, "max": 3 },
    );
    insert(
        &store,
        "capped",
        (1..=5).map(|id| doc! { "_id": id }).collect(),
    );
    assert_eq!(
        find_ids(
            &store,
            doc! { "find": "capped", "sort": { "$natural": -1 } }
        ),
        vec![5, 4, 3]
    );
}

#[test]
fn min_and_max_bound_the_hinted_index() {
    let store = store_with_index();
    // x is 5, 4, 3, 2, 1 for _id 1..5; min is inclusive, max exclusive.
    let mut ids = find_ids(
        &store,
        doc! { "find": "c", "hint": "x_1", "min": { "x": 2 }, "max": { "x": 4 } },
    );
    ids.sort_unstable();
    assert_eq!(ids, vec![3, 4]);
    let reply = run(&store, "db", doc! { "find": "c", "min": { "x": 2 } });
    assert_eq!(error_code(&reply), 51173);
    let reply = run(
        &store,
        "db",
        doc! { "find": "c", "hint": "x_1", "max": { "y": 2 } },
    );
    assert_eq!(error_code(&reply), 51174);
}

#[test]
fn a_reverse_natural_hint_makes_single_document_writes_take_the_newest_match() {
    let store = store_with_index();
    let hint = doc! { "$natural": -1 };
    run_ok(
        &store,
        "db",
        doc! { "update": "c", "updates": [
            { "q": {}, "u": { "$set": { "touched": true } }, "hint": hint.clone() },
        ] },
    );
    assert_eq!(
        find_ids(&store, doc! { "find": "c", "filter": { "touched": true } }),
        vec![5]
    );
    let reply = run_ok(
        &store,
        "db",
        doc! { "findAndModify": "c", "query": {}, "remove": true, "hint": hint.clone() },
    );
    assert_eq!(
        reply
            .get_document("value")
            .ok()
            .and_then(|value| value.get_i32("_id").ok()),
        Some(5)
    );
    run_ok(
        &store,
        "db",
        doc! { "delete": "c", "deletes": [{ "q": {}, "limit": 1, "hint": hint }] },
    );
    assert_eq!(find_ids(&store, doc! { "find": "c" }), vec![1, 2, 3]);
}

#[test]
fn a_natural_sort_feeds_the_other_sort_fields_and_refuses_other_directions() {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![
            doc! { "_id": 1, "g": 1 },
            doc! { "_id": 2, "g": 0 },
            doc! { "_id": 3, "g": 1 },
        ],
    );
    assert_eq!(
        find_ids(
            &store,
            doc! { "find": "c", "sort": { "$natural": -1, "g": 1 } }
        ),
        vec![2, 3, 1]
    );
    let reply = run(
        &store,
        "db",
        doc! { "find": "c", "sort": { "$natural": 2 } },
    );
    assert_eq!(error_code(&reply), crate::code::BAD_VALUE);
}

#[test]
fn a_hidden_index_cannot_be_hinted() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1, "x": 1 }]);
    run_ok(
        &store,
        "db",
        doc! { "createIndexes": "c", "indexes": [{ "key": { "x": 1 }, "name": "x_1", "hidden": true }] },
    );
    let reply = run(&store, "db", doc! { "find": "c", "hint": "x_1" });
    assert_eq!(error_code(&reply), crate::code::BAD_VALUE);
}

#[test]
fn a_hinted_index_returns_its_key_order_and_only_what_it_holds() {
    let store = new_store();
    let documents: Vec<Document> = (0..5)
        .map(|i| doc! { "_id": i, "num": i })
        .chain([doc! { "_id": 9 }])
        .collect();
    insert(&store, "h", documents);
    run_ok(
        &store,
        "db",
        doc! { "createIndexes": "h", "indexes": [
            { "key": { "num": -1 }, "name": "num_desc" },
            { "key": { "num": 1 }, "name": "num_sparse", "sparse": true },
        ] },
    );
    let ids_of = |command: Document| -> Vec<i32> {
        batch(&run_ok(&store, "db", command))
            .iter()
            .map(|document| document.get_i32("_id").unwrap())
            .collect()
    };
    assert_eq!(
        ids_of(doc! { "find": "h", "hint": { "num": -1 } }),
        vec![4, 3, 2, 1, 0, 9],
        "descending index order; the document without num keys as null, last"
    );
    assert_eq!(
        ids_of(doc! { "find": "h", "hint": "num_sparse" }),
        vec![0, 1, 2, 3, 4],
        "a sparse index leaves out the document without num"
    );
    assert_eq!(
        ids_of(doc! { "find": "h", "hint": "num_desc", "sort": { "_id": 1 } }),
        vec![0, 1, 2, 3, 4, 9],
        "the find's own sort wins"
    );
    assert_eq!(
        ids_of(doc! { "find": "h", "hint": "num_desc", "limit": 2 }),
        vec![4, 3]
    );
}

#[test]
fn a_text_index_is_listed_as_mongod_lists_it() {
    let store = new_store();
    run_ok(
        &store,
        "db",
        doc! { "createIndexes": "t", "indexes": [{ "key": { "a": 1, "t": "text" }, "name": "a_1_t_text" }] },
    );
    let listed = batch(&run_ok(&store, "db", doc! { "listIndexes": "t" }));
    assert_eq!(
        listed[1],
        doc! {
            "v": 2, "key": { "a": 1, "_fts": "text", "_ftsx": 1 }, "name": "a_1_t_text",
            "weights": { "t": 1 }, "default_language": "english",
            "language_override": "language", "textIndexVersion": 3,
        }
    );
}
