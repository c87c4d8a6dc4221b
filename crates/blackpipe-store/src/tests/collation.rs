//! Collations through the store's commands: sorts, range queries, `distinct`, `$group` keys,
//! collated unique indexes and a collection's default collation.

use bson::{Bson, Document, doc};

use super::{batch, error_code, insert, new_store, run, run_ok};
use crate::Store;

fn names(documents: &[Document]) -> Vec<&str> {
    documents
        .iter()
        .map(|document| document.get_str("s").unwrap())
        .collect()
}

fn words() -> Store {
    let store = new_store();
    let words = ["b10", "b9", "B2", "apple", "Apple", "äpple", "zebra"];
    let documents = words
        .iter()
        .enumerate()
        .map(|(id, word)| doc! { "_id": i32::try_from(id).unwrap(), "s": *word })
        .collect();
    insert(&store, "w", documents);
    store
}

#[test]
fn find_sorts_and_ranges_by_the_collation() {
    let store = words();
    let numeric = doc! { "locale": "en", "numericOrdering": true, "strength": 2 };
    let sorted = batch(&run_ok(
        &store,
        "db",
        doc! { "find": "w", "filter": { "s": { "$lt": "c" } }, "sort": { "s": 1, "_id": 1 }, "collation": numeric.clone() },
    ));
    assert_eq!(
        names(&sorted),
        ["apple", "Apple", "äpple", "B2", "b9", "b10"]
    );
    let binary = batch(&run_ok(
        &store,
        "db",
        doc! { "find": "w", "filter": { "s": { "$lt": "c" } }, "sort": { "s": 1 } },
    ));
    assert_eq!(names(&binary), ["Apple", "B2", "apple", "b10", "b9"]);
    let ranged = batch(&run_ok(
        &store,
        "db",
        doc! { "find": "w", "filter": { "s": { "$gt": "b9" } }, "sort": { "_id": 1 }, "collation": numeric },
    ));
    assert_eq!(names(&ranged), ["b10", "zebra"]);
}

#[test]
fn aggregate_sorts_and_groups_and_distinct_dedups_by_the_collation() {
    let store = words();
    let primary = doc! { "locale": "en", "strength": 1 };
    let grouped = batch(&run_ok(
        &store,
        "db",
        doc! { "aggregate": "w", "pipeline": [
            { "$sort": { "_id": 1 } },
            { "$group": { "_id": "$s", "n": { "$sum": 1 } } },
            { "$sort": { "_id": 1 } },
        ], "cursor": {}, "collation": primary.clone() },
    ));
    assert_eq!(
        grouped,
        vec![
            doc! { "_id": "apple", "n": 3 },
            doc! { "_id": "b10", "n": 1 },
            doc! { "_id": "B2", "n": 1 },
            doc! { "_id": "b9", "n": 1 },
            doc! { "_id": "zebra", "n": 1 },
        ]
    );
    let distinct = run_ok(
        &store,
        "db",
        doc! { "distinct": "w", "key": "s", "collation": primary },
    );
    assert_eq!(distinct.get_array("values").unwrap().len(), 5, "{distinct}");
}

#[test]
fn a_collated_unique_index_refuses_what_the_collation_calls_equal() {
    let store = new_store();
    let reply = run_ok(
        &store,
        "db",
        doc! { "createIndexes": "u", "indexes": [{ "key": { "s": 1 }, "name": "s_1", "unique": true,
        "collation": { "locale": "en", "strength": 2 } }] },
    );
    assert_eq!(reply.get_i32("numIndexesAfter").unwrap(), 2);
    let reply = run(
        &store,
        "db",
        doc! { "insert": "u", "documents": [{ "_id": 1, "s": "Ann" }, { "_id": 2, "s": "ANN" }, { "_id": 3, "s": "Änn" }] },
    );
    assert_eq!(reply.get_i32("n").unwrap(), 1, "{reply}");
    let error = reply.get_array("writeErrors").unwrap()[0]
        .as_document()
        .unwrap();
    assert_eq!(error.get_i32("code").unwrap(), 11000);
    assert!(
        error.get_str("errmsg").unwrap().contains("CollationKey(0x"),
        "{error}"
    );
    let listed = batch(&run_ok(&store, "db", doc! { "listIndexes": "u" }));
    let collation = listed[1].get_document("collation").unwrap();
    assert_eq!(collation.get_i32("strength").unwrap(), 2);
    assert_eq!(collation.get_str("version").unwrap(), "57.1");
    let bad = run(
        &store,
        "db",
        doc! { "createIndexes": "u", "indexes": [{ "key": { "t": 1 }, "name": "t_1", "collation": { "locale": "EN" } }] },
    );
    assert_eq!(error_code(&bad), 2);
    assert!(
        bad.get_str("errmsg")
            .unwrap()
            .starts_with("failed to add collation information to index spec"),
        "{bad}"
    );
}

#[test]
fn a_collections_default_collation_applies_where_none_is_named() {
    let store = new_store();
    run_ok(
        &store,
        "db",
        doc! { "create": "d", "collation": { "locale": "en", "strength": 2 } },
    );
    insert(
        &store,
        "d",
        vec![doc! { "_id": 1, "s": "ann" }, doc! { "_id": 2, "s": "ANN" }],
    );
    let listed = batch(&run_ok(
        &store,
        "db",
        doc! { "listCollections": 1, "filter": { "name": "d" } },
    ));
    let options = listed[0].get_document("options").unwrap();
    assert_eq!(
        options
            .get_document("collation")
            .unwrap()
            .get_str("caseFirst")
            .unwrap(),
        "off"
    );
    let found = batch(&run_ok(
        &store,
        "db",
        doc! { "find": "d", "filter": { "s": "Ann" } },
    ));
    assert_eq!(found.len(), 2);
    let simple = batch(&run_ok(
        &store,
        "db",
        doc! { "find": "d", "filter": { "s": "Ann" }, "collation": { "locale": "simple" } },
    ));
    assert!(simple.is_empty());
    let updated = run_ok(
        &store,
        "db",
        doc! { "update": "d", "updates": [{ "q": { "s": "Ann" }, "u": { "$set": { "hit": true } }, "multi": true }] },
    );
    assert_eq!(updated.get_i32("nModified").unwrap(), 2);
    let count = run_ok(&store, "db", doc! { "count": "d", "query": { "s": "aNN" } });
    assert_eq!(count.get_i32("n").unwrap(), 2);
    run_ok(
        &store,
        "db",
        doc! { "createIndexes": "d", "indexes": [{ "key": { "s": 1 }, "name": "s_1" }] },
    );
    let indexes = batch(&run_ok(&store, "db", doc! { "listIndexes": "d" }));
    assert_eq!(
        indexes[1]
            .get_document("collation")
            .unwrap()
            .get_i32("strength")
            .unwrap(),
        2,
        "a new index inherits the collection's collation"
    );
    let simple_default = run_ok(
        &store,
        "db",
        doc! { "create": "plain", "collation": { "locale": "simple" } },
    );
    assert_eq!(simple_default.get("ok"), Some(&Bson::Double(1.0)));
}

#[test]
fn a_regex_in_an_in_list_ignores_the_collation() {
    let store = words();
    let regex = Bson::RegularExpression(bson::Regex {
        pattern: "^ze".to_owned().try_into().expect("no NUL"),
        options: String::new().try_into().expect("no NUL"),
    });
    let found = batch(&run_ok(
        &store,
        "db",
        doc! { "find": "w", "filter": { "s": { "$in": [ regex, "APPLE" ] } },
        "sort": { "_id": 1 }, "collation": { "locale": "en", "strength": 2 } },
    ));
    assert_eq!(names(&found), ["apple", "Apple", "zebra"]);
}

#[test]
fn an_empty_collation_names_none_except_in_create() {
    let store = words();
    let found = batch(&run_ok(
        &store,
        "db",
        doc! { "find": "w", "filter": { "s": "APPLE" }, "collation": {} },
    ));
    assert!(found.is_empty(), "binary comparison");
    let deleted = run_ok(
        &store,
        "db",
        doc! { "delete": "w", "deletes": [{ "q": { "s": "nothing" }, "limit": 0, "collation": {} }] },
    );
    assert_eq!(deleted.get_i32("n").unwrap(), 0);
    let create = run(&store, "db", doc! { "create": "fresh", "collation": {} });
    assert_eq!(error_code(&create), 40414);
}

#[test]
fn bulk_write_operations_take_the_collections_default_collation() {
    let store = new_store();
    run_ok(
        &store,
        "db",
        doc! { "create": "d", "collation": { "locale": "en", "strength": 2 } },
    );
    insert(&store, "d", vec![doc! { "_id": 1, "s": "ann" }]);
    let reply = run_ok(
        &store,
        "admin",
        doc! { "bulkWrite": 1, "nsInfo": [{ "ns": "db.d" }], "ops": [
            { "update": 0, "filter": { "s": "ANN" }, "updateMods": { "$set": { "hit": true } } },
            { "delete": 0, "filter": { "s": "Ann" }, "multi": false },
        ] },
    );
    assert_eq!(reply.get_i32("nModified").unwrap(), 1, "{reply}");
    assert_eq!(reply.get_i32("nDeleted").unwrap(), 1, "{reply}");
}
