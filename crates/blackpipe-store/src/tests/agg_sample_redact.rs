//! `$sample` and `$redact` through the aggregate command.

use std::collections::HashSet;

use bson::{Bson, Document, doc};

use super::agg_bucket::{aggregate, failure};
use super::{insert, new_store};
use crate::{Store, StoreOptions};

fn numbers(store: &Store, count: i32) {
    insert(store, "n", (0..count).map(|i| doc! { "_id": i }).collect());
}

fn ids(documents: &[Document]) -> Vec<i32> {
    documents
        .iter()
        .map(|document| document.get_i32("_id").unwrap_or(-1))
        .collect()
}

#[test]
fn sample_picks_distinct_documents_from_the_seeded_source() {
    let sample = |seed| {
        let store = Store::new(StoreOptions::default().with_seed(seed));
        numbers(&store, 50);
        let first = ids(&aggregate(
            &store,
            "n",
            vec![doc! { "$sample": { "size": 5 } }],
        ));
        let second = ids(&aggregate(
            &store,
            "n",
            vec![doc! { "$sample": { "size": 5.9 } }],
        ));
        (first, second)
    };
    let (first, second) = sample(11);
    assert_eq!(first.len(), 5);
    assert_eq!(second.len(), 5, "a fractional size is truncated");
    assert_eq!(
        first.iter().collect::<HashSet<_>>().len(),
        5,
        "no repetition: {first:?}"
    );
    assert!(first.iter().all(|id| (0..50).contains(id)));
    // The same seed and the same commands give the same samples; the next command draws anew.
    assert_eq!(sample(11), (first.clone(), second.clone()));
    assert_ne!(first, second);
    assert_ne!(sample(12).0, first);
}

#[test]
fn sample_larger_than_the_input_shuffles_all_of_it() {
    let store = new_store();
    numbers(&store, 20);
    let output = ids(&aggregate(
        &store,
        "n",
        vec![doc! { "$sample": { "size": i64::MAX } }],
    ));
    let mut sorted = output.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..20).collect::<Vec<_>>());
    assert_ne!(output, sorted, "the order is random");
    assert!(aggregate(&store, "empty", vec![doc! { "$sample": { "size": 3 } }]).is_empty());
}

#[test]
fn sample_errors() {
    let store = new_store();
    numbers(&store, 3);
    let cases: Vec<(Bson, i32)> = vec![
        (Bson::Int32(1), 28745),
        (doc! { "size": "1" }.into(), 28746),
        (doc! { "size": 0 }.into(), 28747),
        (doc! { "size": -1 }.into(), 28747),
        (doc! { "size": 0.5 }.into(), 28747),
        (doc! { "size": 1, "seed": 2 }.into(), 28748),
        (doc! {}.into(), 28749),
    ];
    for (spec, expected) in cases {
        let (code, message) = failure(&store, "n", vec![doc! { "$sample": spec.clone() }]);
        assert_eq!(code, expected, "{spec}: {message}");
    }
}

fn forecasts() -> Store {
    let store = new_store();
    insert(
        &store,
        "forecasts",
        vec![doc! {
            "_id": 1,
            "title": "123 Department Report",
            "tags": ["G", "STLW"],
            "year": 2014,
            "subsections": [
                { "subtitle": "Section 1: Overview", "tags": ["SI", "G"], "content": "one" },
                { "subtitle": "Section 2: Analysis", "tags": ["STLW"], "content": "two" },
                { "subtitle": "Section 3: Budgeting", "tags": ["TK"],
                  "content": { "text": "three", "tags": ["HCS"] } },
            ],
        }],
    );
    store
}

#[test]
fn redact_descends_and_prunes_embedded_documents() {
    let store = forecasts();
    let output = aggregate(
        &store,
        "forecasts",
        vec![doc! { "$redact": { "$cond": {
            "if": { "$gt": [{ "$size": { "$setIntersection": ["$tags", ["STLW", "G"]] } }, 0] },
            "then": "$$DESCEND",
            "else": "$$PRUNE",
        } } }],
    );
    assert_eq!(
        output,
        vec![doc! {
            "_id": 1,
            "title": "123 Department Report",
            "tags": ["G", "STLW"],
            "year": 2014,
            "subsections": [
                { "subtitle": "Section 1: Overview", "tags": ["SI", "G"], "content": "one" },
                { "subtitle": "Section 2: Analysis", "tags": ["STLW"], "content": "two" },
            ],
        }]
    );
}

#[test]
fn redact_keep_prune_and_root() {
    let store = new_store();
    insert(
        &store,
        "accounts",
        vec![
            doc! { "_id": 1, "level": 1, "card": { "level": 5, "number": "x" }, "list": [[{ "level": 5 }, 2]] },
            doc! { "_id": 2, "level": 5 },
            doc! { "_id": 3, "level": 3, "card": { "level": 5 } },
        ],
    );
    let output = aggregate(
        &store,
        "accounts",
        vec![doc! { "$redact": { "$switch": {
            "branches": [
                { "case": { "$eq": ["$level", 5] }, "then": "$$PRUNE" },
                // $$ROOT stays the top-level document while embedded ones are decided.
                { "case": { "$eq": ["$$ROOT._id", 3] }, "then": "$$KEEP" },
            ],
            "default": "$$DESCEND",
        } } }],
    );
    assert_eq!(
        output,
        vec![
            doc! { "_id": 1, "level": 1, "list": [[2]] },
            doc! { "_id": 3, "level": 3, "card": { "level": 5 } },
        ]
    );
    // The literal strings the variables stand for work as well, as on mongod.
    let output = aggregate(&store, "accounts", vec![doc! { "$redact": "keep" }]);
    assert_eq!(output.len(), 3);
}

#[test]
fn redact_errors() {
    let store = forecasts();
    let (code, message) = failure(&store, "forecasts", vec![doc! { "$redact": "$title" }]);
    assert_eq!(code, 17053);
    assert_eq!(
        message,
        "$redact's expression should not return anything aside from the variables $$KEEP, $$DESCEND, and $$PRUNE, but returned \"123 Department Report\""
    );
    let (code, _) = failure(&store, "forecasts", vec![doc! { "$redact": "$missing" }]);
    assert_eq!(code, 17053);
    // The variables exist only inside $redact.
    let (code, _) = failure(
        &store,
        "forecasts",
        vec![doc! { "$project": { "x": "$$KEEP" } }],
    );
    assert_eq!(code, 17276);
    let (code, _) = failure(&store, "forecasts", vec![doc! { "$redact": { "$bad": 1 } }]);
    assert_eq!(code, 168);
}

#[test]
fn redact_of_a_deeply_nested_document_ends() {
    // Hostile: a document nested about as deep as BSON allows, descended all the way.
    let mut nested = doc! { "leaf": 1 };
    for depth in 0..80 {
        nested = doc! { "depth": depth, "child": nested, "list": [1, { "x": depth }] };
    }
    let store = new_store();
    insert(
        &store,
        "deep",
        vec![doc! { "_id": 1, "tree": nested.clone() }],
    );
    let output = aggregate(&store, "deep", vec![doc! { "$redact": "$$DESCEND" }]);
    assert_eq!(output, vec![doc! { "_id": 1, "tree": nested }]);
}

#[test]
fn single_input_stages_are_refused_in_an_update_pipeline() {
    let store = new_store();
    numbers(&store, 1);
    for (stage, name) in [
        (doc! { "$sample": { "size": 1 } }, "$sample"),
        (doc! { "$redact": "$$KEEP" }, "$redact"),
        (
            doc! { "$bucket": { "groupBy": "$_id", "boundaries": [0, 1] } },
            "$group",
        ),
        (
            doc! { "$bucketAuto": { "groupBy": "$_id", "buckets": 1 } },
            "$bucketAuto",
        ),
        (
            doc! { "$densify": { "field": "v", "range": { "step": 1, "bounds": "full" } } },
            "$sort",
        ),
        (
            doc! { "$fill": { "output": { "v": { "method": "locf" } } } },
            "$fill",
        ),
    ] {
        let reply = super::run_ok(
            &store,
            "db",
            doc! { "update": "n", "updates": [{ "q": {}, "u": [stage.clone()] }] },
        );
        let errors = reply.get_array("writeErrors").cloned().unwrap_or_default();
        let error = errors
            .first()
            .and_then(Bson::as_document)
            .cloned()
            .unwrap_or_default();
        assert_eq!(error.get_i32("code").ok(), Some(72), "{stage}: {reply}");
        assert_eq!(
            error.get_str("errmsg").ok(),
            Some(format!("{name} is not allowed to be used within an update").as_str())
        );
    }
}
