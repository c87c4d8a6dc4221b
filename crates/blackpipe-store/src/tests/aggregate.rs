//! Aggregation stages and expressions through the aggregate command.

use bson::{Bson, Document, doc};

use super::{batch, cursor_id, error_code, insert, new_store, run, run_ok};
use crate::Store;

fn sales() -> Store {
    let store = new_store();
    insert(
        &store,
        "sales",
        vec![
            doc! { "_id": 1, "item": "a", "price": 10, "qty": 2, "tags": ["x", "y"] },
            doc! { "_id": 2, "item": "b", "price": 20, "qty": 1, "tags": ["y"] },
            doc! { "_id": 3, "item": "a", "price": 10, "qty": 5, "tags": [] },
            doc! { "_id": 4, "item": "c", "price": 5.5, "qty": 10 },
        ],
    );
    store
}

fn aggregate(store: &Store, pipeline: Vec<Document>) -> Vec<Document> {
    batch(&run_ok(
        store,
        "db",
        doc! { "aggregate": "sales", "pipeline": pipeline, "cursor": {} },
    ))
}

#[test]
fn match_project_sort_skip_limit() {
    let store = sales();
    let output = aggregate(
        &store,
        vec![
            doc! { "$match": { "qty": { "$gte": 2 } } },
            doc! { "$project": { "_id": 0, "item": 1, "total": { "$multiply": ["$price", "$qty"] } } },
            doc! { "$sort": { "total": -1 } },
            doc! { "$skip": 1 },
            doc! { "$limit": 1 },
        ],
    );
    assert_eq!(output, vec![doc! { "item": "a", "total": 50 }]);
}

#[test]
fn group_accumulators() {
    let store = sales();
    let output = aggregate(
        &store,
        vec![
            doc! { "$group": {
                "_id": "$item",
                "count": { "$sum": 1 },
                "qty": { "$sum": "$qty" },
                "avg": { "$avg": "$qty" },
                "min": { "$min": "$qty" },
                "max": { "$max": "$qty" },
                "ids": { "$push": "$_id" },
                "prices": { "$addToSet": "$price" },
                "first": { "$first": "$_id" },
                "last": { "$last": "$_id" },
                "n": { "$count": {} },
            } },
            doc! { "$sort": { "_id": 1 } },
        ],
    );
    assert_eq!(output.len(), 3);
    assert_eq!(
        output[0],
        doc! {
            "_id": "a", "count": 2, "qty": 7, "avg": 3.5, "min": 2, "max": 5, "ids": [1, 3], "prices": [10],
            "first": 1, "last": 3, "n": 2,
        }
    );
    assert_eq!(output[2].get("qty"), Some(&Bson::Int32(10)));
    let everything = aggregate(
        &store,
        vec![doc! { "$group": { "_id": null, "total": { "$sum": "$price" } } }],
    );
    assert_eq!(everything, vec![doc! { "_id": null, "total": 45.5 }]);
}

#[test]
fn count_documents_pipeline_shape() {
    // The pipeline drivers send for countDocuments.
    let store = sales();
    let output = aggregate(
        &store,
        vec![
            doc! { "$match": { "item": "a" } },
            doc! { "$skip": 0 },
            doc! { "$group": { "_id": 1, "n": { "$sum": 1 } } },
        ],
    );
    assert_eq!(output, vec![doc! { "_id": 1, "n": 2 }]);
    let none = aggregate(
        &store,
        vec![doc! { "$match": { "item": "zzz" } }, doc! { "$count": "n" }],
    );
    assert!(none.is_empty());
    let counted = aggregate(&store, vec![doc! { "$count": "n" }]);
    assert_eq!(counted, vec![doc! { "n": 4 }]);
}

#[test]
fn unwind_variants() {
    let store = sales();
    let output = aggregate(
        &store,
        vec![
            doc! { "$unwind": "$tags" },
            doc! { "$project": { "tags": 1 } },
        ],
    );
    assert_eq!(
        output,
        vec![
            doc! { "_id": 1, "tags": "x" },
            doc! { "_id": 1, "tags": "y" },
            doc! { "_id": 2, "tags": "y" }
        ]
    );
    let output = aggregate(
        &store,
        vec![
            doc! { "$unwind": { "path": "$tags", "includeArrayIndex": "i", "preserveNullAndEmptyArrays": true } },
            doc! { "$project": { "tags": 1, "i": 1 } },
        ],
    );
    assert_eq!(output.len(), 5);
    assert_eq!(output[3], doc! { "_id": 3, "i": Bson::Null });
    assert_eq!(output[1], doc! { "_id": 1, "tags": "y", "i": 1_i64 });
}

#[test]
fn add_fields_unset_replace_root_and_sort_by_count() {
    let store = sales();
    let output = aggregate(
        &store,
        vec![
            doc! { "$match": { "_id": 2 } },
            doc! { "$addFields": { "meta.size": { "$size": "$tags" }, "label": { "$concat": ["$item", "-", "z"] } } },
            doc! { "$unset": ["tags", "price"] },
        ],
    );
    assert_eq!(
        output,
        vec![doc! { "_id": 2, "item": "b", "qty": 1, "meta": { "size": 1 }, "label": "b-z" }]
    );
    let output = aggregate(
        &store,
        vec![
            doc! { "$match": { "_id": 1 } },
            doc! { "$replaceRoot": { "newRoot": { "i": "$item", "q": "$qty" } } },
        ],
    );
    assert_eq!(output, vec![doc! { "i": "a", "q": 2 }]);
    let output = aggregate(&store, vec![doc! { "$sortByCount": "$item" }]);
    assert_eq!(output[0], doc! { "_id": "a", "count": 2 });
}

#[test]
fn expressions() {
    let store = sales();
    let output = aggregate(
        &store,
        vec![
            doc! { "$match": { "_id": 4 } },
            doc! { "$project": {
                "_id": 0,
                "sum": { "$add": ["$qty", 1, 0.5] },
                "diff": { "$subtract": ["$qty", 3] },
                "ratio": { "$divide": ["$qty", 4] },
                "rem": { "$mod": ["$qty", 3] },
                "missing": { "$add": ["$nope", 1] },
                "fallback": { "$ifNull": ["$nope", "dflt"] },
                "cond": { "$cond": { "if": { "$gt": ["$qty", 5] }, "then": "big", "else": "small" } },
                "eq": { "$eq": ["$item", "c"] },
                "upper": { "$toUpper": "$item" },
                "literal": { "$literal": "$notAPath" },
                "array": ["$item", "$nope"],
                "at": { "$arrayElemAt": [[1, 2, 3], -1] },
                "in": { "$in": [2, [1, 2]] },
                "type": { "$type": "$price" },
            } },
        ],
    );
    assert_eq!(
        output,
        vec![doc! {
            "sum": 11.5, "diff": 7, "ratio": 2.5, "rem": 1, "missing": Bson::Null, "fallback": "dflt", "cond": "big",
            "eq": true, "upper": "C", "literal": "$notAPath", "array": ["c", Bson::Null], "at": 3, "in": true,
            "type": "double",
        }]
    );
}

#[test]
fn errors_and_cursor_batching() {
    let store = sales();
    let run_pipeline = |pipeline: Vec<Document>| {
        run(
            &store,
            "db",
            doc! { "aggregate": "sales", "pipeline": pipeline, "cursor": {} },
        )
    };
    assert_eq!(
        error_code(&run_pipeline(vec![doc! { "$bogus": {} }])),
        40324
    );
    // A `$lookup` without `from` needs a pipeline starting with `$documents` (stages-multi).
    assert_eq!(error_code(&run_pipeline(vec![doc! { "$lookup": {} }])), 9);
    assert_eq!(error_code(&run_pipeline(vec![doc! { "$limit": 0 }])), 15958);
    assert_eq!(
        error_code(&run_pipeline(vec![
            doc! { "$group": { "n": { "$sum": 1 } } }
        ])),
        15955
    );
    assert_eq!(
        error_code(&run_pipeline(vec![
            doc! { "$project": { "s": { "$size": "$item" } } }
        ])),
        17124
    );
    assert_eq!(
        error_code(&run_pipeline(vec![
            doc! { "$project": { "s": { "$nope": 1 } } }
        ])),
        168
    );
    let no_cursor = run(&store, "db", doc! { "aggregate": "sales", "pipeline": [] });
    assert_eq!(error_code(&no_cursor), 9);
    let reply = run_ok(
        &store,
        "db",
        doc! { "aggregate": "sales", "pipeline": [], "cursor": { "batchSize": 3 } },
    );
    assert_eq!(batch(&reply).len(), 3);
    let id = cursor_id(&reply);
    assert_ne!(id, 0);
    let more = run_ok(&store, "db", doc! { "getMore": id, "collection": "sales" });
    assert_eq!(batch(&more).len(), 1);
    assert_eq!(cursor_id(&more), 0);
    let empty = run_ok(
        &store,
        "db",
        doc! { "aggregate": "nothing", "pipeline": [], "cursor": {} },
    );
    assert!(batch(&empty).is_empty());
}

#[test]
fn rand_draws_a_fresh_double_in_the_unit_interval_for_each_document() {
    let draws = |store: &Store| -> Vec<f64> {
        let reply = run_ok(
            store,
            "db",
            doc! { "aggregate": "sales", "pipeline": [{ "$project": { "r": { "$rand": {} } } }],
            "cursor": {} },
        );
        batch(&reply)
            .iter()
            .map(|d| d.get_f64("r").unwrap())
            .collect()
    };
    let store = sales();
    let first = draws(&store);
    assert_eq!(first.len(), 4);
    assert!(first.iter().all(|r| (0.0..1.0).contains(r)), "{first:?}");
    let mut distinct = first.clone();
    distinct.dedup();
    assert_eq!(distinct.len(), 4, "{first:?}");
    // The next command draws anew; a store with the same seed draws the same sequence.
    assert_ne!(draws(&store), first);
    assert_eq!(draws(&sales()), first);
    for (argument, code) in [
        (Bson::Document(doc! { "x": 1 }), 3_040_501),
        (Bson::Int32(1), 10065),
    ] {
        let command = doc! { "aggregate": "sales", "pipeline": [{ "$project": { "r": { "$rand": argument } } }],
        "cursor": {} };
        assert_eq!(
            error_code(&run(&store, "db", command.clone())),
            code,
            "{command}"
        );
    }
}
