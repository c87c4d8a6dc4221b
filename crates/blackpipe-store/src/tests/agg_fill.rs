//! `$fill` through the aggregate command, on the cases of mongod's own `fill.js`.

use bson::{Bson, Document, doc};

use super::agg_bucket::{aggregate, failure};
use super::{insert, new_store};
use crate::Store;

fn store() -> Store {
    let store = new_store();
    insert(
        &store,
        "fill",
        vec![
            doc! { "_id": 1, "linear": 1, "other": 1, "part": 1 },
            doc! { "_id": 2, "linear": 1, "other": 1, "part": 2 },
            doc! { "_id": 3, "linear": null, "other": null, "part": 1 },
            doc! { "_id": 4, "linear": null, "other": null, "part": 2 },
            doc! { "_id": 5, "linear": 5, "other": 10, "part": 1 },
            doc! { "_id": 6, "linear": 6, "other": 2, "part": 2 },
            doc! { "_id": 7, "linear": null, "other": null, "part": 1 },
            doc! { "_id": 8, "linear": 3, "other": 5, "part": 2 },
            doc! { "_id": 9, "linear": 7, "other": 15, "part": 1 },
            doc! { "_id": 10, "linear": null, "other": null, "part": 2 },
        ],
    );
    store
}

fn by_id(mut documents: Vec<Document>) -> Vec<Document> {
    documents.sort_by_key(|document| document.get_i32("_id").unwrap_or(-1));
    documents
}

#[test]
fn fill_linear_interpolates_along_the_sort_field() {
    let store = store();
    let output = aggregate(
        &store,
        "fill",
        vec![
            doc! { "$match": { "part": 1 } },
            doc! { "$project": { "other": 0, "part": 0 } },
            doc! { "$fill": { "sortBy": { "_id": 1 }, "output": { "linear": { "method": "linear" } } } },
        ],
    );
    assert_eq!(
        output,
        vec![
            doc! { "_id": 1, "linear": 1 },
            doc! { "_id": 3, "linear": 3.0 },
            doc! { "_id": 5, "linear": 5 },
            doc! { "_id": 7, "linear": 6.0 },
            doc! { "_id": 9, "linear": 7 },
        ]
    );
}

#[test]
fn fill_locf_and_linear_together_with_a_trailing_null() {
    let store = store();
    let output = aggregate(
        &store,
        "fill",
        vec![
            doc! { "$match": { "part": 2 } },
            doc! { "$fill": {
                "sortBy": { "_id": 1 },
                "output": { "other": { "method": "locf" }, "linear": { "method": "linear" } },
            } },
        ],
    );
    assert_eq!(
        output,
        vec![
            doc! { "_id": 2, "linear": 1, "other": 1, "part": 2 },
            doc! { "_id": 4, "linear": 3.5, "other": 1, "part": 2 },
            doc! { "_id": 6, "linear": 6, "other": 2, "part": 2 },
            doc! { "_id": 8, "linear": 3, "other": 5, "part": 2 },
            doc! { "_id": 10, "linear": null, "other": 5, "part": 2 },
        ]
    );
}

#[test]
fn fill_per_partition() {
    let store = store();
    let expected = vec![
        doc! { "_id": 1, "linear": 1, "other": 1, "part": 1 },
        doc! { "_id": 2, "linear": 1, "other": 1, "part": 2 },
        doc! { "_id": 3, "linear": null, "other": 1, "part": 1 },
        doc! { "_id": 4, "linear": null, "other": 1, "part": 2 },
        doc! { "_id": 5, "linear": 5, "other": 10, "part": 1 },
        doc! { "_id": 6, "linear": 6, "other": 2, "part": 2 },
        doc! { "_id": 7, "linear": null, "other": 10, "part": 1 },
        doc! { "_id": 8, "linear": 3, "other": 5, "part": 2 },
        doc! { "_id": 9, "linear": 7, "other": 15, "part": 1 },
        doc! { "_id": 10, "linear": null, "other": 5, "part": 2 },
    ];
    for partition in [
        doc! { "partitionByFields": ["part"] },
        doc! { "partitionBy": { "part": "$part" } },
        doc! { "partitionBy": "$part" },
    ] {
        let mut spec = doc! { "sortBy": { "_id": 1 }, "output": { "other": { "method": "locf" } } };
        spec.extend(partition);
        let output = aggregate(&store, "fill", vec![doc! { "$fill": spec }]);
        // Partitions come out one after the other.
        assert_eq!(output[0].get_i32("part").ok(), Some(1));
        assert_eq!(output[5].get_i32("part").ok(), Some(2));
        assert_eq!(by_id(output), expected);
    }
    let output = aggregate(
        &store,
        "fill",
        vec![
            doc! { "$set": { "linear": { "$cond": [{ "$eq": ["$linear", 1] }, null, "$linear"] } } },
            doc! { "$fill": {
                "sortBy": { "_id": 1 }, "partitionByFields": ["part"],
                "output": { "other": { "method": "locf" }, "linear": { "method": "linear" } },
            } },
        ],
    );
    // A partition starting with nulls has nothing to interpolate from.
    assert_eq!(
        output[1],
        doc! { "_id": 3, "linear": null, "other": 1, "part": 1 }
    );
    assert_eq!(
        output[3],
        doc! { "_id": 7, "linear": 6.0, "other": 10, "part": 1 }
    );
}

#[test]
fn fill_values_are_expressions_over_the_document() {
    let store = store();
    let output = aggregate(
        &store,
        "fill",
        vec![
            doc! { "$match": { "part": 1 } },
            doc! { "$fill": {
                "sortBy": { "_id": 1 },
                "output": { "other": { "value": -1 }, "linear": { "value": { "$add": ["$part", 1] } } },
            } },
            doc! { "$project": { "part": 0 } },
        ],
    );
    assert_eq!(
        output,
        vec![
            doc! { "_id": 1, "linear": 1, "other": 1 },
            doc! { "_id": 3, "linear": 2, "other": -1 },
            doc! { "_id": 5, "linear": 5, "other": 10 },
            doc! { "_id": 7, "linear": 2, "other": -1 },
            doc! { "_id": 9, "linear": 7, "other": 15 },
        ]
    );
    // A value evaluating to missing leaves a missing field missing; locf fills it with null.
    insert(
        &store,
        "gaps",
        vec![
            doc! { "_id": 1 },
            doc! { "_id": 2, "x": 4 },
            doc! { "_id": 3 },
        ],
    );
    let output = aggregate(
        &store,
        "gaps",
        vec![doc! { "$fill": { "output": { "x": { "value": "$nothing" } } } }],
    );
    assert_eq!(output[0], doc! { "_id": 1 });
    let output = aggregate(
        &store,
        "gaps",
        vec![doc! { "$fill": { "sortBy": { "_id": 1 }, "output": { "x": { "method": "locf" } } } }],
    );
    assert_eq!(values(&output), vec![Bson::Null, 4.into(), 4.into()]);
}

fn values(documents: &[Document]) -> Vec<Bson> {
    documents
        .iter()
        .map(|document| document.get("x").cloned().unwrap_or(Bson::Undefined))
        .collect()
}

#[test]
fn fill_parse_errors() {
    let store = store();
    let cases: Vec<(Bson, i32)> = vec![
        (Bson::String("test".into()), 9),
        (doc! {}.into(), 40414),
        (doc! { "output": {} }.into(), 6_050_203),
        (doc! { "output": { "test": { "method": "random" } } }.into(), 6_050_202),
        (doc! { "output": { "test": "random" } }.into(), 6_050_200),
        (doc! { "output": { "test": { "method": "locf", "second": "locf" } } }.into(), 40415),
        (doc! { "output": { "test": { "method": "locf", "value": 1 } } }.into(), 6_050_201),
        (doc! { "output": { "test": { "method": 1 } } }.into(), 14),
        (doc! { "output": { "test": { "method": "locf" } }, "bad": 1 }.into(), 40415),
        (doc! { "output": 1 }.into(), 14),
        (doc! { "output": { "t": { "value": 1 } }, "partitionBy": 1 }.into(), 14),
        (
            doc! {
                "output": { "test": { "method": "locf" } },
                "partitionBy": { "test": "$test" },
                "partitionByFields": ["$test"],
            }
            .into(),
            6_050_204,
        ),
        (
            doc! { "output": { "test": { "method": "linear" } }, "partitionBy": { "part": "$part" } }.into(),
            605_001,
        ),
        (
            doc! { "output": { "test": { "method": "linear" } }, "sortBy": { "a": 1, "b": 1 } }.into(),
            605_001,
        ),
    ];
    for (spec, expected) in cases {
        let (code, message) = failure(&store, "fill", vec![doc! { "$fill": spec.clone() }]);
        assert_eq!(code, expected, "{spec}: {message}");
    }
}

#[test]
fn fill_linear_value_errors() {
    let store = new_store();
    insert(
        &store,
        "bad",
        vec![
            doc! { "_id": 1, "t": 1, "v": "x" },
            doc! { "_id": 2, "t": 1, "v": 1 },
            doc! { "_id": 3, "t": "a", "v": 1 },
        ],
    );
    let linear = |matched: Document| {
        vec![
            doc! { "$match": matched },
            doc! { "$fill": { "sortBy": { "t": 1 }, "output": { "v": { "method": "linear" } } } },
        ]
    };
    let (code, message) = failure(&store, "bad", linear(doc! { "_id": 1 }));
    assert_eq!(
        (code, message.as_str()),
        (
            14,
            "Value to be filled must be numeric or nullish, but found string"
        )
    );
    let (code, _) = failure(&store, "bad", linear(doc! { "_id": 3 }));
    assert_eq!(code, 14);
    insert(
        &store,
        "dup",
        vec![doc! { "t": 1, "v": 1 }, doc! { "t": 1, "v": null }],
    );
    let (code, _) = failure(
        &store,
        "dup",
        vec![doc! { "$fill": { "sortBy": { "t": 1 }, "output": { "v": { "method": "linear" } } } }],
    );
    assert_eq!(code, 6_050_106);
    let (code, _) = failure(
        &store,
        "fill",
        vec![doc! { "$fill": { "partitionBy": ["$a"], "output": { "v": { "method": "locf" } } } }],
    );
    assert_eq!(code, 14, "partitionBy is an object or a string");
}

#[test]
fn fill_dates_sort_linearly_and_large_input_is_linear_work() {
    let store = new_store();
    // Hostile: many nulls between two values are filled in one pass, not one search each.
    let mut documents = vec![doc! { "t": 0, "v": 0.0 }];
    documents.extend((1..20_000).map(|t| doc! { "t": t, "v": null }));
    documents.push(doc! { "t": 20_000, "v": 20_000.0 });
    insert(&store, "long", documents);
    let output = aggregate(
        &store,
        "long",
        vec![
            doc! { "$fill": { "sortBy": { "t": 1 }, "output": { "v": { "method": "linear" } } } },
            doc! { "$match": { "t": 12_345 } },
            doc! { "$project": { "_id": 0, "v": 1 } },
        ],
    );
    assert_eq!(output, vec![doc! { "v": 12_345.0 }]);
}
