//! `$densify` through the aggregate command.

use bson::{Bson, DateTime, Document, doc};

use super::agg_bucket::{aggregate, failure};
use super::{insert, new_store};
use crate::Store;

fn hour(hours: i64) -> DateTime {
    // 2021-05-18T00:00:00Z plus `hours`.
    DateTime::from_millis(1_621_296_000_000 + hours * 3_600_000)
}

fn values(documents: &[Document], field: &str) -> Vec<Bson> {
    documents
        .iter()
        .map(|document| document.get(field).cloned().unwrap_or(Bson::Null))
        .collect()
}

#[test]
fn densify_dates_within_explicit_bounds() {
    let store = new_store();
    insert(
        &store,
        "weather",
        vec![
            doc! { "_id": 1, "timestamp": hour(0), "temp": 12 },
            doc! { "_id": 2, "timestamp": hour(4), "temp": 11 },
            doc! { "_id": 3, "timestamp": hour(8), "temp": 11 },
            doc! { "_id": 4, "timestamp": hour(12), "temp": 12 },
        ],
    );
    let output = aggregate(
        &store,
        "weather",
        vec![doc! { "$densify": {
            "field": "timestamp",
            "range": { "step": 1, "unit": "hour", "bounds": [hour(0), hour(8)] },
        } }],
    );
    let expected: Vec<Bson> = [0, 1, 2, 3, 4, 5, 6, 7, 8, 12]
        .iter()
        .map(|hours| Bson::DateTime(hour(*hours)))
        .collect();
    assert_eq!(values(&output, "timestamp"), expected);
    // Generated documents hold the densified field only.
    assert_eq!(output[1], doc! { "timestamp": hour(1) });
    assert_eq!(output[4].get_i32("_id").ok(), Some(2));
}

#[test]
fn densify_numbers_in_explicit_bounds_around_off_step_values() {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![
            doc! { "_id": 1, "v": 2 },
            doc! { "_id": 2, "v": 12 },
            doc! { "_id": 3, "v": 5 },
            doc! { "_id": 4 },
            doc! { "_id": 5, "v": null },
        ],
    );
    let output = aggregate(
        &store,
        "c",
        vec![doc! { "$densify": { "field": "v", "range": { "step": 3, "bounds": [0, 10] } } }],
    );
    // Documents without a value pass unchanged (first: null and missing sort first).
    assert_eq!(
        values(&output, "v"),
        vec![
            Bson::Null,
            Bson::Null,
            0.into(),
            2.into(),
            3.into(),
            5.into(),
            6.into(),
            9.into(),
            12.into()
        ]
    );
    assert_eq!(output.len(), 9);
    // No document: the whole range, its lower bound included even when equal to the upper.
    let output = aggregate(
        &store,
        "none",
        vec![doc! { "$densify": { "field": "v", "range": { "step": 2, "bounds": [0, 5] } } }],
    );
    assert_eq!(
        values(&output, "v"),
        vec![Bson::Int32(0), 2.into(), 4.into()]
    );
    let output = aggregate(
        &store,
        "none",
        vec![doc! { "$densify": { "field": "v", "range": { "step": 2, "bounds": [5, 5] } } }],
    );
    assert_eq!(values(&output, "v"), vec![Bson::Int32(5)]);
}

fn coffee() -> Store {
    let store = new_store();
    insert(
        &store,
        "coffee",
        vec![
            doc! { "_id": 1, "altitude": 600, "variety": "A" },
            doc! { "_id": 2, "altitude": 750, "variety": "A" },
            doc! { "_id": 3, "altitude": 950, "variety": "A" },
            doc! { "_id": 4, "altitude": 1250, "variety": "A" },
            doc! { "_id": 5, "altitude": 1250, "variety": "G" },
            doc! { "_id": 6, "altitude": 1700, "variety": "G" },
        ],
    );
    store
}

fn by_variety(output: &[Document], variety: &str) -> Vec<i32> {
    output
        .iter()
        .filter(|document| document.get_str("variety").ok() == Some(variety))
        .map(|document| document.get_i32("altitude").unwrap_or(-1))
        .collect()
}

#[test]
fn densify_full_range_per_partition() {
    let store = coffee();
    let output = aggregate(
        &store,
        "coffee",
        vec![doc! { "$densify": {
            "field": "altitude", "partitionByFields": ["variety"],
            "range": { "step": 200, "bounds": "full" },
        } }],
    );
    // Each partition from the global minimum (600) to the global maximum (1700).
    let mut a = by_variety(&output, "A");
    a.sort_unstable();
    assert_eq!(a, vec![600, 750, 800, 950, 1000, 1200, 1250, 1400, 1600]);
    assert_eq!(
        by_variety(&output, "G"),
        vec![600, 800, 1000, 1200, 1250, 1400, 1600, 1700]
    );
    assert_eq!(output.len(), 17);
    assert_eq!(output[2], doc! { "variety": "A", "altitude": 800 });
}

#[test]
fn densify_partition_range_per_partition() {
    let store = coffee();
    let output = aggregate(
        &store,
        "coffee",
        vec![doc! { "$densify": {
            "field": "altitude", "partitionByFields": ["variety"],
            "range": { "step": 200, "bounds": "partition" },
        } }],
    );
    // Each partition over its own range, on a grid from its own minimum.
    assert_eq!(
        by_variety(&output, "A"),
        vec![600, 750, 800, 950, 1000, 1200, 1250]
    );
    assert_eq!(by_variety(&output, "G"), vec![1250, 1450, 1650, 1700]);
}

#[test]
fn densify_explicit_range_per_partition() {
    let store = coffee();
    let output = aggregate(
        &store,
        "coffee",
        vec![doc! { "$densify": {
            "field": "altitude", "partitionByFields": ["variety"],
            "range": { "step": 500, "bounds": [500, 2000] },
        } }],
    );
    let mut a = by_variety(&output, "A");
    a.sort_unstable();
    assert_eq!(a, vec![500, 600, 750, 950, 1000, 1250, 1500]);
    let mut g = by_variety(&output, "G");
    g.sort_unstable();
    assert_eq!(g, vec![500, 1000, 1250, 1500, 1700]);
}

#[test]
fn densify_months_step_from_the_clamped_day() {
    let store = new_store();
    let jan31 = DateTime::parse_rfc3339_str("2024-01-31T00:00:00Z").unwrap_or(DateTime::MIN);
    let may1 = DateTime::parse_rfc3339_str("2024-05-01T00:00:00Z").unwrap_or(DateTime::MIN);
    let output = aggregate(
        &store,
        "none",
        vec![doc! { "$densify": {
            "field": "d", "range": { "step": 1, "unit": "month", "bounds": [jan31, may1] },
        } }],
    );
    let days: Vec<String> = output
        .iter()
        .filter_map(|document| document.get_datetime("d").ok())
        .map(|date| date.try_to_rfc3339_string().unwrap_or_default()[..10].to_owned())
        .collect();
    assert_eq!(
        days,
        vec!["2024-01-31", "2024-02-29", "2024-03-29", "2024-04-29"]
    );
}

#[test]
fn densify_parse_errors() {
    let store = coffee();
    let range = |range: Document| doc! { "field": "altitude", "range": range };
    let cases: Vec<(Bson, i32)> = vec![
        (Bson::Int32(1), 9),
        (doc! { "range": { "step": 1, "bounds": "full" } }.into(), 40414),
        (doc! { "field": "a" }.into(), 40414),
        (doc! { "field": 1, "range": { "step": 1, "bounds": "full" } }.into(), 14),
        (doc! { "field": "a", "range": { "step": 1, "bounds": "full" }, "x": 1 }.into(), 40415),
        (range(doc! { "step": 1 }).into(), 40414),
        (range(doc! { "step": "1", "bounds": "full" }).into(), 14),
        (range(doc! { "step": 1, "bounds": "full", "extra": 1 }).into(), 40415),
        (range(doc! { "step": 0, "bounds": "full" }).into(), 5_733_401),
        (range(doc! { "step": -1, "bounds": "full" }).into(), 5_733_401),
        (range(doc! { "step": 1.5, "unit": "day", "bounds": "full" }).into(), 6_586_400),
        (range(doc! { "step": 1, "unit": "fortnight", "bounds": "full" }).into(), 9),
        (range(doc! { "step": 1, "bounds": [1] }).into(), 5_733_403),
        (range(doc! { "step": 1, "bounds": [2, 1] }).into(), 5_733_402),
        (range(doc! { "step": 1, "unit": "day", "bounds": [1, 2] }).into(), 5_733_409),
        (range(doc! { "step": 1, "bounds": [1, DateTime::MAX] }).into(), 5_733_406),
        (range(doc! { "step": 1, "bounds": [1, 2.5] }).into(), 5_876_900),
        (range(doc! { "step": 1.0, "bounds": [1, 2] }).into(), 5_876_900),
        (range(doc! { "step": 1, "bounds": [DateTime::MIN, DateTime::MAX] }).into(), 5_733_410),
        (range(doc! { "step": 1, "bounds": ["a", "b"] }).into(), 5_946_800),
        (range(doc! { "step": 1, "bounds": "all" }).into(), 5_946_802),
        (range(doc! { "step": 1, "bounds": 1 }).into(), 5_733_404),
        (range(doc! { "step": 1, "bounds": "partition" }).into(), 5_733_408),
        (doc! { "field": "altitude", "partitionByFields": [1], "range": { "step": 1, "bounds": "full" } }.into(), 14),
        (doc! { "field": "$a", "range": { "step": 1, "bounds": "full" } }.into(), 16410),
    ];
    for (spec, expected) in cases {
        let pipeline = vec![doc! { "$densify": spec.clone() }];
        let (code, message) = failure(&store, "coffee", pipeline);
        assert_eq!(code, expected, "{spec}: {message}");
    }
}

#[test]
fn densify_value_errors() {
    let store = new_store();
    insert(
        &store,
        "s",
        vec![
            doc! { "_id": 1, "v": "text" },
            doc! { "_id": 2, "d": DateTime::MIN },
        ],
    );
    let full = |field: &str| doc! { "$densify": { "field": field, "range": { "step": 1, "bounds": "full" } } };
    assert_eq!(failure(&store, "s", vec![full("v")]).0, 5_733_201);
    let (code, message) = failure(&store, "s", vec![full("d")]);
    assert_eq!(code, 6_053_600);
    assert_eq!(
        message,
        "Encountered date densify value in collection when step does not have a date unit."
    );
}

#[test]
fn densify_stops_past_the_generated_document_limit() {
    // Hostile: a range of a million steps fails as mongod does at 500,000 generated documents.
    let store = new_store();
    let (code, message) = failure(
        &store,
        "none",
        vec![
            doc! { "$densify": { "field": "v", "range": { "step": 1, "bounds": [0, 1_000_000] } } },
        ],
    );
    assert_eq!(code, 5_897_900);
    assert!(
        message.starts_with("Generated 500001 documents in $densify"),
        "{message}"
    );
    // A step too small to move a large double would loop forever; the same limit ends it.
    insert(
        &store,
        "big",
        vec![doc! { "v": 1.0e20 }, doc! { "v": 1.0e20 + 1.0e6 }],
    );
    let (code, _) = failure(
        &store,
        "big",
        vec![doc! { "$densify": { "field": "v", "range": { "step": 1.0, "bounds": "full" } } }],
    );
    assert_eq!(code, 5_897_900);
}
