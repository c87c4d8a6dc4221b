//! `$bucket` and `$bucketAuto` through the aggregate command.

use bson::{Bson, Document, doc};

use super::{batch, error_code, insert, new_store, run, run_ok};
use crate::Store;

pub(super) fn aggregate(store: &Store, collection: &str, pipeline: Vec<Document>) -> Vec<Document> {
    batch(&run_ok(
        store,
        "db",
        doc! { "aggregate": collection, "pipeline": pipeline, "cursor": {} },
    ))
}

/// The code and message of an aggregate that must fail.
pub(super) fn failure(store: &Store, collection: &str, pipeline: Vec<Document>) -> (i32, String) {
    let reply = run(
        store,
        "db",
        doc! { "aggregate": collection, "pipeline": pipeline, "cursor": {} },
    );
    let code = error_code(&reply);
    (code, reply.get_str("errmsg").unwrap_or_default().to_owned())
}

fn artists() -> Store {
    let store = new_store();
    insert(
        &store,
        "artists",
        vec![
            doc! { "_id": 1, "name": "Bernard", "born": 1868 },
            doc! { "_id": 2, "name": "Rippl-Ronai", "born": 1861 },
            doc! { "_id": 3, "name": "Ostroumova", "born": 1871 },
            doc! { "_id": 4, "name": "Van Gogh", "born": 1853 },
            doc! { "_id": 5, "name": "Maurer", "born": 1868 },
            doc! { "_id": 6, "name": "Munch", "born": 1863 },
            doc! { "_id": 7, "name": "Redon", "born": 1840 },
            doc! { "_id": 8, "name": "Diriks", "born": 1855 },
            doc! { "_id": 9, "name": "Anonymous" },
            doc! { "_id": 10, "name": "Later", "born": 1900 },
        ],
    );
    store
}

#[test]
fn bucket_groups_by_ranges_with_default_and_output() {
    let store = artists();
    let output = aggregate(
        &store,
        "artists",
        vec![doc! { "$bucket": {
            "groupBy": "$born",
            "boundaries": [1840, 1850, 1860, 1870, 1880],
            "default": "Other",
            "output": { "count": { "$sum": 1 }, "names": { "$push": "$name" } },
        } }],
    );
    assert_eq!(
        output,
        vec![
            doc! { "_id": 1840, "count": 1, "names": ["Redon"] },
            doc! { "_id": 1850, "count": 2, "names": ["Van Gogh", "Diriks"] },
            doc! { "_id": 1860, "count": 4, "names": ["Bernard", "Rippl-Ronai", "Maurer", "Munch"] },
            doc! { "_id": 1870, "count": 1, "names": ["Ostroumova"] },
            // A string sorts after the numbers; the missing and the out-of-range years land here.
            doc! { "_id": "Other", "count": 2, "names": ["Anonymous", "Later"] },
        ]
    );
}

#[test]
fn bucket_counts_by_default_and_sorts_a_numeric_default() {
    let store = artists();
    let output = aggregate(
        &store,
        "artists",
        vec![
            doc! { "$match": { "born": { "$exists": true } } },
            doc! { "$bucket": { "groupBy": "$born", "boundaries": [1850, 1870], "default": 0 } },
        ],
    );
    assert_eq!(
        output,
        vec![
            doc! { "_id": 0, "count": 3 },
            doc! { "_id": 1850, "count": 6 },
        ]
    );
}

#[test]
fn bucket_without_default_fails_on_a_value_in_no_bucket() {
    let store = artists();
    let (code, message) = failure(
        &store,
        "artists",
        vec![doc! { "$bucket": { "groupBy": "$born", "boundaries": [1840, 1880] } }],
    );
    assert_eq!(code, 7_158_303);
    assert!(
        message.contains("$switch could not find a matching branch"),
        "{message}"
    );
}

#[test]
fn bucket_boundaries_may_be_constant_expressions_and_strings() {
    let store = artists();
    let output = aggregate(
        &store,
        "artists",
        vec![doc! { "$bucket": {
            "groupBy": "$name",
            "boundaries": ["A", { "$concat": ["M", ""] }, "Z"],
            "output": { "n": { "$count": {} } },
        } }],
    );
    assert_eq!(
        output,
        vec![doc! { "_id": "A", "n": 4 }, doc! { "_id": "M", "n": 6 }]
    );
}

#[test]
fn bucket_parse_errors() {
    let store = artists();
    let cases: Vec<(Bson, i32)> = vec![
        (Bson::Int32(1), 40201),
        (
            doc! { "groupBy": "born", "boundaries": [1, 2] }.into(),
            40202,
        ),
        (doc! { "groupBy": "$born", "boundaries": 1 }.into(), 40200),
        (
            doc! { "groupBy": "$born", "boundaries": ["$x", 2] }.into(),
            40191,
        ),
        (doc! { "groupBy": "$born", "boundaries": [1] }.into(), 40192),
        (
            doc! { "groupBy": "$born", "boundaries": [1, "a"] }.into(),
            40193,
        ),
        (
            doc! { "groupBy": "$born", "boundaries": [2, 1] }.into(),
            40194,
        ),
        (
            doc! { "groupBy": "$born", "boundaries": [1, 1] }.into(),
            40194,
        ),
        (
            doc! { "groupBy": "$born", "boundaries": [1, 2], "default": "$x" }.into(),
            40195,
        ),
        (
            doc! { "groupBy": "$born", "boundaries": [1, 2], "output": 1 }.into(),
            40196,
        ),
        (
            doc! { "groupBy": "$born", "boundaries": [1, 2], "bad": 1 }.into(),
            40197,
        ),
        (doc! { "boundaries": [1, 2] }.into(), 40198),
        (doc! { "groupBy": "$born" }.into(), 40198),
        (
            doc! { "groupBy": "$born", "boundaries": [1, 5], "default": 3 }.into(),
            40199,
        ),
        (
            doc! { "groupBy": "$born", "boundaries": [1, 2], "output": { "x": 1 } }.into(),
            40234,
        ),
    ];
    for (spec, expected) in cases {
        let (code, message) = failure(&store, "artists", vec![doc! { "$bucket": spec.clone() }]);
        assert_eq!(code, expected, "{spec}: {message}");
    }
    // Mixed numeric types are one type class, and a default of another class is fine.
    let output = aggregate(
        &store,
        "artists",
        vec![doc! { "$bucket": {
            "groupBy": "$born", "boundaries": [1800, 1870.5, 2000_i64], "default": "x",
        } }],
    );
    assert_eq!(output.len(), 3);
    let (_, message) = failure(
        &store,
        "artists",
        vec![doc! { "$bucket": { "groupBy": "$born", "boundaries": [1, "a"] } }],
    );
    assert_eq!(
        message,
        "All values in the the 'boundaries' option to $bucket must have the same type. Found conflicting types int and string."
    );
}

#[test]
fn bucket_with_many_boundaries_stays_fast() {
    // Hostile: 100,000 boundaries and many documents find their bucket by binary search.
    let store = new_store();
    let documents: Vec<Document> = (0..2000).map(|i| doc! { "_id": i, "v": i * 37 }).collect();
    insert(&store, "many", documents);
    let boundaries: Vec<Bson> = (0..100_000).map(Bson::Int32).collect();
    let output = aggregate(
        &store,
        "many",
        vec![
            doc! { "$bucket": { "groupBy": "$v", "boundaries": boundaries, "default": -1 } },
            doc! { "$group": {
                "_id": null, "buckets": { "$sum": 1 }, "documents": { "$sum": "$count" },
                "first": { "$first": "$_id" }, "last": { "$last": "$_id" },
            } },
        ],
    );
    // Every value is in range and distinct: one bucket each, the default bucket empty.
    assert_eq!(
        output,
        vec![doc! { "_id": null, "buckets": 2000, "documents": 2000, "first": 0, "last": 73963 }]
    );
}

fn artwork() -> Store {
    let store = new_store();
    let prices = [199.99, 280.0, 76.04, 167.30, 483.0, 385.0, 159.0, 118.42];
    let documents = prices
        .iter()
        .zip(1..)
        .map(|(price, id)| doc! { "_id": id, "price": *price })
        .collect();
    insert(&store, "artwork", documents);
    store
}

#[test]
fn bucket_auto_cuts_equal_buckets() {
    let store = artwork();
    let output = aggregate(
        &store,
        "artwork",
        vec![doc! { "$bucketAuto": { "groupBy": "$price", "buckets": 4 } }],
    );
    assert_eq!(
        output,
        vec![
            doc! { "_id": { "min": 76.04, "max": 159.0 }, "count": 2 },
            doc! { "_id": { "min": 159.0, "max": 199.99 }, "count": 2 },
            doc! { "_id": { "min": 199.99, "max": 385.0 }, "count": 2 },
            doc! { "_id": { "min": 385.0, "max": 483.0 }, "count": 2 },
        ]
    );
    // More buckets than documents: one document each; output accumulators in input order.
    let output = aggregate(
        &store,
        "artwork",
        vec![doc! { "$bucketAuto": {
            "groupBy": "$price", "buckets": 100,
            "output": { "ids": { "$push": "$_id" }, "top": { "$max": "$price" } },
        } }],
    );
    assert_eq!(output.len(), 8);
    assert_eq!(
        output[0],
        doc! { "_id": { "min": 76.04, "max": 118.42 }, "ids": [3], "top": 76.04 }
    );
    assert_eq!(
        output[7],
        doc! { "_id": { "min": 483.0, "max": 483.0 }, "ids": [5], "top": 483.0 }
    );
}

#[test]
fn bucket_auto_never_splits_a_value_and_groups_missing_as_null() {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![
            doc! { "_id": 1, "v": 1 },
            doc! { "_id": 2, "v": 1 },
            doc! { "_id": 3, "v": 1 },
            doc! { "_id": 4, "v": 2 },
            doc! { "_id": 5 },
            doc! { "_id": 6, "v": 3 },
        ],
    );
    let output = aggregate(
        &store,
        "c",
        vec![
            doc! { "$bucketAuto": { "groupBy": "$v", "buckets": 3, "output": { "ids": { "$push": "$_id" } } } },
        ],
    );
    // Two documents a bucket, but the equal 1s stay together; missing groups as null.
    assert_eq!(
        output,
        vec![
            doc! { "_id": { "min": null, "max": 2 }, "ids": [1, 2, 3, 5] },
            doc! { "_id": { "min": 2, "max": 3 }, "ids": [4, 6] },
        ]
    );
}

#[test]
fn bucket_auto_granularity_powers_of_two_and_series() {
    let store = new_store();
    insert(
        &store,
        "n",
        (1..=10).map(|i| doc! { "_id": i, "v": i }).collect(),
    );
    let output = aggregate(
        &store,
        "n",
        vec![doc! { "$bucketAuto": { "groupBy": "$v", "buckets": 3, "granularity": "POWERSOF2" } }],
    );
    assert_eq!(
        output,
        vec![
            doc! { "_id": { "min": 0.5, "max": 4 }, "count": 3 },
            doc! { "_id": { "min": 4, "max": 8 }, "count": 4 },
            doc! { "_id": { "min": 8, "max": 16 }, "count": 3 },
        ]
    );
    let output = aggregate(
        &store,
        "n",
        vec![doc! { "$bucketAuto": { "groupBy": "$v", "buckets": 2, "granularity": "1-2-5" } }],
    );
    // 1..5 then 6..10: 1 rounds down to 0.5, 5 up to 10 (absorbing the rest), as mongod.
    assert_eq!(
        output,
        vec![
            doc! { "_id": { "min": 0.5, "max": 10.0 }, "count": 9 },
            doc! { "_id": { "min": 10.0, "max": 20.0 }, "count": 1 }
        ]
    );
    let output = aggregate(
        &store,
        "n",
        vec![doc! { "$bucketAuto": { "groupBy": "$v", "buckets": 1, "granularity": "E6" } }],
    );
    assert_eq!(
        output,
        vec![doc! { "_id": { "min": 0.68, "max": 15.0 }, "count": 10 }]
    );
}

#[test]
fn bucket_auto_errors() {
    let store = artwork();
    let cases: Vec<(Bson, i32)> = vec![
        (Bson::Int32(1), 40240),
        (doc! { "groupBy": "price", "buckets": 2 }.into(), 40239),
        (doc! { "groupBy": "$", "buckets": 2 }.into(), 40239),
        (doc! { "groupBy": "$price", "buckets": "2" }.into(), 40241),
        (doc! { "groupBy": "$price", "buckets": 2.5 }.into(), 40242),
        (
            doc! { "groupBy": "$price", "buckets": 5_000_000_000_i64 }.into(),
            40242,
        ),
        (doc! { "groupBy": "$price", "buckets": 0 }.into(), 40243),
        (
            doc! { "groupBy": "$price", "buckets": 2, "output": 1 }.into(),
            40244,
        ),
        (
            doc! { "groupBy": "$price", "buckets": 2, "bad": 1 }.into(),
            40245,
        ),
        (doc! { "groupBy": "$price" }.into(), 40246),
        (
            doc! { "groupBy": "$price", "buckets": 2, "granularity": "R7" }.into(),
            40257,
        ),
        (
            doc! { "groupBy": "$price", "buckets": 2, "granularity": 5 }.into(),
            40261,
        ),
        (
            doc! { "groupBy": "$nothing", "buckets": 2, "granularity": "R5" }.into(),
            40258,
        ),
        (
            doc! { "groupBy": { "$multiply": ["$price", -1] }, "buckets": 2, "granularity": "R5" }
                .into(),
            40260,
        ),
        (
            doc! { "groupBy": { "$literal": f64::NAN }, "buckets": 2, "granularity": "R5" }.into(),
            40259,
        ),
    ];
    for (spec, expected) in cases {
        let (code, message) = failure(
            &store,
            "artwork",
            vec![doc! { "$bucketAuto": spec.clone() }],
        );
        assert_eq!(code, expected, "{spec}: {message}");
    }
}

#[test]
fn bucket_auto_with_huge_bucket_count_and_infinite_values_ends() {
    let store = new_store();
    insert(
        &store,
        "inf",
        vec![
            doc! { "_id": 1, "v": f64::INFINITY },
            doc! { "_id": 2, "v": 1.0e300 },
            doc! { "_id": 3, "v": 0 },
        ],
    );
    let output = aggregate(
        &store,
        "inf",
        vec![
            doc! { "$bucketAuto": { "groupBy": "$v", "buckets": i32::MAX, "granularity": "R80" } },
        ],
    );
    let counted: i32 = output
        .iter()
        .map(|bucket| bucket.get_i32("count").unwrap_or(0))
        .sum();
    assert_eq!(counted, 3);
}

#[test]
fn bucket_auto_rounds_the_bucket_size_half_up() {
    // Six documents in four buckets: 1.5 a bucket rounds to 2, so three buckets of two.
    let store = new_store();
    insert(
        &store,
        "six",
        (1..=6).map(|i| doc! { "_id": i, "v": i }).collect(),
    );
    let output = aggregate(
        &store,
        "six",
        vec![doc! { "$bucketAuto": { "groupBy": "$v", "buckets": 4 } }],
    );
    assert_eq!(
        output,
        vec![
            doc! { "_id": { "min": 1, "max": 3 }, "count": 2 },
            doc! { "_id": { "min": 3, "max": 5 }, "count": 2 },
            doc! { "_id": { "min": 5, "max": 6 }, "count": 2 },
        ]
    );
}
