//! Query operators, dotted paths and array semantics.

use bson::{Document, doc};

use super::{error_code, ids, insert, new_store, run};
use crate::query::Filter;

fn matches(filter: Document, document: Document) -> bool {
    Filter::parse(&filter)
        .unwrap_or_else(|error| panic!("{filter} did not parse: {error:?}"))
        .matches(&document)
}

fn parse_error(filter: Document) -> i32 {
    Filter::parse(&filter)
        .map(|_| ())
        .expect_err("expected a parse error")
        .code
}

#[test]
fn equality_matches_scalars_across_numeric_types() {
    assert!(matches(doc! { "a": 1 }, doc! { "a": 1.0 }));
    assert!(matches(doc! { "a": 1_i64 }, doc! { "a": 1 }));
    assert!(!matches(doc! { "a": 1 }, doc! { "a": "1" }));
    assert!(!matches(doc! { "a": 1 }, doc! { "b": 1 }));
    assert!(matches(doc! {}, doc! { "anything": true }));
}

#[test]
fn equality_on_arrays_matches_an_element_or_the_whole_array() {
    let document = doc! { "tags": ["red", "blue"], "nested": [[1, 2], 3] };
    assert!(matches(doc! { "tags": "red" }, document.clone()));
    assert!(matches(doc! { "tags": ["red", "blue"] }, document.clone()));
    assert!(!matches(doc! { "tags": ["blue", "red"] }, document.clone()));
    assert!(matches(doc! { "nested": [1, 2] }, document.clone()));
    // Only one level of implicit traversal: 1 is inside an inner array.
    assert!(!matches(doc! { "nested": 1 }, document));
}

#[test]
fn null_matches_missing_and_null() {
    assert!(matches(doc! { "a": null }, doc! { "b": 1 }));
    assert!(matches(doc! { "a": null }, doc! { "a": null }));
    assert!(!matches(doc! { "a": null }, doc! { "a": 0 }));
    assert!(matches(
        doc! { "a.b": null },
        doc! { "a": [{ "b": 1 }, { "c": 1 }] }
    ));
    assert!(!matches(doc! { "a": { "$ne": null } }, doc! { "b": 1 }));
    assert!(matches(doc! { "a": { "$in": [null, 5] } }, doc! {}));
}

#[test]
fn comparisons_use_type_bracketing() {
    let number = doc! { "a": 5 };
    assert!(matches(doc! { "a": { "$gt": 4 } }, number.clone()));
    assert!(matches(doc! { "a": { "$gte": 5.0 } }, number.clone()));
    assert!(!matches(doc! { "a": { "$lt": 5 } }, number.clone()));
    assert!(matches(doc! { "a": { "$lte": 5_i64 } }, number.clone()));
    // A number is never "greater than" a string and vice versa.
    assert!(!matches(doc! { "a": { "$gt": "4" } }, number.clone()));
    assert!(!matches(doc! { "a": { "$lt": "4" } }, number.clone()));
    assert!(matches(doc! { "a": { "$gt": bson::Bson::MinKey } }, number));
    assert!(matches(
        doc! { "a": { "$gt": 4, "$lt": 6 } },
        doc! { "a": 5 }
    ));
    // Each operator may be satisfied by a different element.
    assert!(matches(
        doc! { "a": { "$gt": 4, "$lt": 2 } },
        doc! { "a": [1, 5] }
    ));
    assert!(matches(doc! { "a": { "$gte": null } }, doc! {}));
}

#[test]
fn ne_in_nin_exists() {
    let document = doc! { "a": [1, 2], "b": "x" };
    assert!(!matches(doc! { "a": { "$ne": 1 } }, document.clone()));
    assert!(matches(doc! { "a": { "$ne": 3 } }, document.clone()));
    assert!(matches(doc! { "a": { "$in": [3, 2] } }, document.clone()));
    assert!(!matches(doc! { "a": { "$in": [] } }, document.clone()));
    assert!(matches(doc! { "a": { "$nin": [3, 4] } }, document.clone()));
    assert!(!matches(doc! { "a": { "$nin": [2] } }, document.clone()));
    assert!(matches(doc! { "b": { "$exists": true } }, document.clone()));
    assert!(matches(
        doc! { "c": { "$exists": false } },
        document.clone()
    ));
    assert!(!matches(doc! { "c": { "$exists": 1 } }, document));
}

#[test]
fn logical_operators() {
    let document = doc! { "a": 1, "b": 2 };
    assert!(matches(
        doc! { "$and": [{ "a": 1 }, { "b": 2 }] },
        document.clone()
    ));
    assert!(!matches(
        doc! { "$and": [{ "a": 1 }, { "b": 3 }] },
        document.clone()
    ));
    assert!(matches(
        doc! { "$or": [{ "a": 9 }, { "b": 2 }] },
        document.clone()
    ));
    assert!(!matches(
        doc! { "$nor": [{ "a": 9 }, { "b": 2 }] },
        document.clone()
    ));
    assert!(matches(
        doc! { "a": { "$not": { "$gt": 5 } } },
        document.clone()
    ));
    assert!(matches(
        doc! { "missing": { "$not": { "$gt": 5 } } },
        document.clone()
    ));
    assert!(matches(
        doc! { "$comment": "ignored", "a": 1 },
        document.clone()
    ));
    assert!(matches(doc! { "$expr": { "$lt": ["$a", "$b"] } }, document));
}

#[test]
fn elem_match_size_type_all() {
    let document = doc! { "scores": [3, 8], "items": [{ "k": "a", "v": 1 }, { "k": "b", "v": 5 }] };
    assert!(matches(
        doc! { "scores": { "$elemMatch": { "$gt": 5, "$lt": 9 } } },
        document.clone()
    ));
    assert!(!matches(
        doc! { "scores": { "$elemMatch": { "$gt": 3, "$lt": 8 } } },
        document.clone()
    ));
    assert!(matches(
        doc! { "items": { "$elemMatch": { "k": "b", "v": { "$gt": 2 } } } },
        document.clone()
    ));
    assert!(!matches(
        doc! { "items": { "$elemMatch": { "k": "a", "v": { "$gt": 2 } } } },
        document.clone()
    ));
    assert!(matches(doc! { "scores": { "$size": 2 } }, document.clone()));
    assert!(!matches(
        doc! { "scores": { "$size": 3 } },
        document.clone()
    ));
    assert!(matches(
        doc! { "scores": { "$type": "array" } },
        document.clone()
    ));
    assert!(matches(
        doc! { "scores": { "$type": "int" } },
        document.clone()
    ));
    assert!(matches(
        doc! { "scores": { "$type": "number" } },
        document.clone()
    ));
    assert!(matches(
        doc! { "items.k": { "$type": 2 } },
        document.clone()
    ));
    assert!(!matches(
        doc! { "scores": { "$type": ["string", "bool"] } },
        document.clone()
    ));
    assert!(matches(
        doc! { "scores": { "$all": [8, 3] } },
        document.clone()
    ));
    assert!(!matches(
        doc! { "scores": { "$all": [8, 4] } },
        document.clone()
    ));
    assert!(!matches(doc! { "scores": { "$all": [] } }, document));
}

#[test]
fn dotted_paths_traverse_documents_arrays_and_positions() {
    let document =
        doc! { "a": { "b": { "c": 7 } }, "list": [{ "x": 1 }, { "x": 2 }], "plain": [10, 20] };
    assert!(matches(doc! { "a.b.c": 7 }, document.clone()));
    assert!(matches(doc! { "list.x": 2 }, document.clone()));
    assert!(matches(doc! { "list.1.x": 2 }, document.clone()));
    assert!(!matches(doc! { "list.0.x": 2 }, document.clone()));
    assert!(matches(doc! { "plain.1": 20 }, document.clone()));
    assert!(matches(
        doc! { "plain.5": { "$exists": false } },
        document.clone()
    ));
    assert!(matches(doc! { "a.b": { "c": 7 } }, document));
}

#[test]
fn unsupported_and_malformed_operators_are_rejected_with_mongod_codes() {
    assert_eq!(parse_error(doc! { "a": { "$foo": 1 } }), 2);
    assert_eq!(parse_error(doc! { "$foo": 1 }), 2);
    assert_eq!(parse_error(doc! { "a": { "$in": 5 } }), 2);
    assert_eq!(parse_error(doc! { "$or": [] }), 2);
    assert_eq!(parse_error(doc! { "a": { "$size": -1 } }), 2);
    assert_eq!(parse_error(doc! { "a": { "$type": "nonsense" } }), 2);
    assert_eq!(parse_error(doc! { "a": { "$regex": "[)" } }), 51091);
    let message = Filter::parse(&doc! { "a": { "$foo": 1 } })
        .map(|_| ())
        .expect_err("error")
        .message;
    assert_eq!(message, "unknown operator: $foo");
}

#[test]
fn find_uses_the_id_index_and_still_applies_the_whole_filter() {
    let store = new_store();
    insert(
        &store,
        "c",
        (1..=5)
            .map(|id| doc! { "_id": id, "even": id % 2 == 0 })
            .collect(),
    );
    assert_eq!(ids(&store, "c", doc! { "_id": 3 }), vec![3]);
    assert_eq!(ids(&store, "c", doc! { "_id": 3.0 }), vec![3]);
    assert_eq!(ids(&store, "c", doc! { "_id": { "$eq": 4_i64 } }), vec![4]);
    assert_eq!(
        ids(&store, "c", doc! { "_id": { "$in": [5, 1, 1.0, 9] } }),
        vec![1, 5]
    );
    assert_eq!(
        ids(&store, "c", doc! { "_id": 3, "even": true }),
        Vec::<i32>::new()
    );
    assert_eq!(ids(&store, "c", doc! { "even": true }), vec![2, 4]);
    let reply = run(
        &store,
        "db",
        doc! { "find": "c", "filter": { "a": { "$bad": 1 } } },
    );
    assert_eq!(error_code(&reply), 2);
    assert_eq!(reply.get_str("codeName").unwrap(), "BadValue");
}

#[test]
fn text_search_and_javascript_are_refused_as_mongod_without_them() {
    let store = new_store();
    insert(&store, "t", vec![doc! { "_id": 1, "s": "coffee shop" }]);
    let text = run(
        &store,
        "db",
        doc! { "find": "t", "filter": { "$text": { "$search": "coffee" } } },
    );
    assert_eq!(error_code(&text), 27, "{text}");
    assert!(
        text.get_str("errmsg")
            .unwrap()
            .starts_with("text index required for $text query")
    );
    let javascript = run(
        &store,
        "db",
        doc! { "find": "t", "filter": { "$where": "this.s.length > 3" } },
    );
    assert_eq!(error_code(&javascript), 2, "{javascript}");
}
