//! `$setWindowFields` through the aggregate command: partitions, document and range windows,
//! every window function of mongod 8.0, and mongod's errors for bad windows.

use bson::{Bson, DateTime, Document, doc};

use super::{batch, error_code, insert, new_store, run, run_ok};
use crate::Store;

fn sales() -> Store {
    let store = new_store();
    insert(
        &store,
        "w",
        vec![
            doc! { "_id": 1, "s": "NY", "t": 1, "q": 10 },
            doc! { "_id": 2, "s": "CA", "t": 1, "q": 5 },
            doc! { "_id": 3, "s": "NY", "t": 2, "q": 20 },
            doc! { "_id": 4, "s": "NY", "t": 4, "q": 30 },
            doc! { "_id": 5, "s": "CA", "t": 3, "q": 15 },
            doc! { "_id": 6, "s": "NY", "t": 5 },
        ],
    );
    store
}

fn windows(store: &Store, spec: Document) -> Vec<Document> {
    batch(&run_ok(
        store,
        "db",
        doc! { "aggregate": "w", "pipeline": [{ "$setWindowFields": spec }], "cursor": {} },
    ))
}

fn window_error(store: &Store, spec: Bson) -> (i32, String) {
    let reply = run(
        store,
        "db",
        doc! { "aggregate": "w", "pipeline": [{ "$setWindowFields": spec }], "cursor": {} },
    );
    let code = error_code(&reply);
    (code, reply.get_str("errmsg").unwrap_or_default().to_owned())
}

fn column(out: &[Document], field: &str) -> Vec<Bson> {
    out.iter()
        .map(|document| document.get(field).cloned().unwrap_or(Bson::Undefined))
        .collect()
}

fn ints(values: &[i32]) -> Vec<Bson> {
    values.iter().map(|value| Bson::Int32(*value)).collect()
}

#[test]
fn running_totals_per_partition_in_partition_then_sort_order() {
    let store = sales();
    let out = windows(
        &store,
        doc! {
            "partitionBy": "$s",
            "sortBy": { "t": 1 },
            "output": {
                "running": { "$sum": "$q", "window": { "documents": ["unbounded", "current"] } },
                "total": { "$sum": "$q" },
                "count": { "$count": {} },
                "moving": { "$avg": "$q", "window": { "documents": [-1, 1] } },
                "all": { "$push": "$q", "window": { "documents": ["current", "unbounded"] } },
            },
        },
    );
    // CA sorts before NY; within each partition by t.
    assert_eq!(column(&out, "_id"), ints(&[2, 5, 1, 3, 4, 6]));
    assert_eq!(column(&out, "running"), ints(&[5, 20, 10, 30, 60, 60]));
    assert_eq!(column(&out, "total"), ints(&[20, 20, 60, 60, 60, 60]));
    assert_eq!(column(&out, "count"), ints(&[2, 2, 4, 4, 4, 4]));
    assert_eq!(
        column(&out, "moving"),
        vec![
            10.0.into(),
            10.0.into(),
            15.0.into(),
            20.0.into(),
            25.0.into(),
            30.0.into()
        ]
    );
    assert_eq!(out[2].get("all"), Some(&Bson::Array(ints(&[10, 20, 30]))));
    assert_eq!(out[5].get("all"), Some(&Bson::Array(Vec::new())));
}

#[test]
fn range_windows_over_numbers_and_dates() {
    let store = sales();
    let out = windows(
        &store,
        doc! {
            "partitionBy": "$s",
            "sortBy": { "t": 1 },
            "output": {
                "near": { "$sum": "$q", "window": { "range": [-1, 1] } },
                "before": { "$push": "$_id", "window": { "range": ["unbounded", -1] } },
            },
        },
    );
    let ny: Vec<&Document> = out
        .iter()
        .filter(|d| d.get_str("s").ok() == Some("NY"))
        .collect();
    // t = 1, 2, 4, 5: [t-1, t+1] holds {1,2}, {1,2}, {4,5}, {4,5}.
    let near: Vec<Bson> = ny.iter().map(|d| d.get("near").cloned().unwrap()).collect();
    assert_eq!(near, ints(&[30, 30, 30, 30]));
    assert_eq!(ny[0].get("before"), Some(&Bson::Array(Vec::new())));
    assert_eq!(ny[2].get("before"), Some(&Bson::Array(ints(&[1, 3]))));

    let dated = new_store();
    let day = 86_400_000;
    insert(
        &dated,
        "w",
        (0..4)
            .map(|i| doc! { "_id": i, "at": DateTime::from_millis(i64::from(i) * day), "v": i })
            .collect(),
    );
    let out = windows(
        &dated,
        doc! {
            "sortBy": { "at": 1 },
            "output": { "last2days": { "$sum": "$v", "window": { "range": [-1, "current"], "unit": "day" } } },
        },
    );
    assert_eq!(column(&out, "last2days"), ints(&[0, 1, 3, 5]));
    let (code, _) = window_error(
        &dated,
        doc! { "sortBy": { "at": 1 }, "output": { "x": { "$sum": 1, "window": { "range": [-1, 0] } } } }.into(),
    );
    assert_eq!(code, 5_429_413);
    let (code, message) = window_error(
        &store,
        doc! { "sortBy": { "t": 1 }, "output": { "x": { "$sum": 1, "window": { "range": [-1, 0], "unit": "day" } } } }.into(),
    );
    assert_eq!(
        (code, message.as_str()),
        (
            5_429_513,
            "Invalid range: Expected the sortBy field to be a Date, but it was int"
        )
    );
}

#[test]
fn ranks_and_document_numbers() {
    let store = new_store();
    insert(
        &store,
        "w",
        vec![
            doc! { "_id": 1, "v": 10 },
            doc! { "_id": 2, "v": 20 },
            doc! { "_id": 3, "v": 10 },
            doc! { "_id": 4 },
            doc! { "_id": 5, "v": null },
            doc! { "_id": 6, "v": 30 },
        ],
    );
    let out = windows(
        &store,
        doc! {
            "sortBy": { "v": 1 },
            "output": {
                "rank": { "$rank": {} },
                "dense": { "$denseRank": {} },
                "number": { "$documentNumber": {} },
            },
        },
    );
    // null and missing rank together, first.
    assert_eq!(column(&out, "rank"), ints(&[1, 1, 3, 3, 5, 6]));
    assert_eq!(column(&out, "dense"), ints(&[1, 1, 2, 2, 3, 4]));
    assert_eq!(column(&out, "number"), ints(&[1, 2, 3, 4, 5, 6]));
}

#[test]
fn endpoints_shift_and_fills() {
    let store = new_store();
    insert(
        &store,
        "w",
        vec![
            doc! { "_id": 1, "t": 1, "v": 10 },
            doc! { "_id": 2, "t": 2 },
            doc! { "_id": 3, "t": 3, "v": null },
            doc! { "_id": 4, "t": 4, "v": 40 },
            doc! { "_id": 5, "t": 5 },
        ],
    );
    let out = windows(
        &store,
        doc! {
            "sortBy": { "t": 1 },
            "output": {
                "first": { "$first": "$v" },
                "last": { "$last": "$v", "window": { "documents": [-1, 0] } },
                "previous": { "$shift": { "output": "$v", "by": -1, "default": "none" } },
                "locf": { "$locf": "$v" },
                "linear": { "$linearFill": "$v" },
            },
        },
    );
    assert_eq!(column(&out, "first"), ints(&[10, 10, 10, 10, 10]));
    // A missing value stays missing for $last and $shift.
    assert_eq!(out[1].get("last"), None);
    assert_eq!(out[0].get("previous"), Some(&Bson::String("none".into())));
    assert_eq!(out[1].get("previous"), Some(&Bson::Int32(10)));
    assert_eq!(out[2].get("previous"), None);
    assert_eq!(column(&out, "locf"), ints(&[10, 10, 10, 40, 40]));
    assert_eq!(
        column(&out, "linear"),
        vec![10.into(), 20.0.into(), 30.0.into(), 40.into(), Bson::Null]
    );
}

#[test]
fn derivative_integral_and_moving_averages() {
    let store = new_store();
    insert(
        &store,
        "w",
        vec![
            doc! { "_id": 1, "t": 0, "d": 0 },
            doc! { "_id": 2, "t": 2, "d": 10 },
            doc! { "_id": 3, "t": 4, "d": 30 },
        ],
    );
    let out = windows(
        &store,
        doc! {
            "sortBy": { "t": 1 },
            "output": {
                "speed": { "$derivative": { "input": "$d" }, "window": { "documents": [-1, 0] } },
                "area": { "$integral": { "input": "$d" }, "window": { "documents": ["unbounded", "current"] } },
                "ema": { "$expMovingAvg": { "input": "$d", "N": 3 } },
                "emaAlpha": { "$expMovingAvg": { "input": "$d", "alpha": 0.5 } },
                "cov": { "$covariancePop": ["$t", "$d"] },
                "sd": { "$stdDevSamp": "$d", "window": { "documents": [-1, 0] } },
            },
        },
    );
    assert_eq!(
        column(&out, "speed"),
        vec![Bson::Null, 5.0.into(), 10.0.into()]
    );
    assert_eq!(
        column(&out, "area"),
        vec![0.into(), 10.0.into(), 50.0.into()]
    );
    assert_eq!(
        column(&out, "ema"),
        vec![0.0.into(), 5.0.into(), 17.5.into()]
    );
    assert_eq!(
        column(&out, "emaAlpha"),
        vec![0.0.into(), 5.0.into(), 17.5.into()]
    );
    let cov = out[0].get_f64("cov").unwrap();
    assert!((cov - 20.0).abs() < 1e-9, "{cov}");
    assert_eq!(out[0].get("sd"), Some(&Bson::Null));
}

#[test]
fn n_top_and_quantile_window_functions() {
    let store = sales();
    let out = windows(
        &store,
        doc! {
            "partitionBy": "$s",
            "sortBy": { "t": 1 },
            "output": {
                "top": { "$top": { "sortBy": { "q": -1 }, "output": "$_id" }, "window": { "documents": ["unbounded", "current"] } },
                "bottom2": { "$bottomN": { "n": 2, "sortBy": { "q": 1 }, "output": "$q" } },
                "max2": { "$maxN": { "input": "$q", "n": 2 }, "window": { "documents": [-1, 1] } },
                "first2": { "$firstN": { "input": "$q", "n": 2 } },
                "median": { "$median": { "input": "$q", "method": "approximate" }, "window": { "documents": [-1, 1] } },
                "p": { "$percentile": { "input": "$q", "p": [0.9], "method": "approximate" } },
                "min": { "$min": "$q" },
                "max": { "$max": "$q" },
                "set": { "$addToSet": "$s" },
            },
        },
    );
    let ny: Vec<&Document> = out
        .iter()
        .filter(|d| d.get_str("s").ok() == Some("NY"))
        .collect();
    let top: Vec<Bson> = ny.iter().map(|d| d.get("top").cloned().unwrap()).collect();
    assert_eq!(top, ints(&[1, 3, 4, 4]));
    assert_eq!(ny[0].get("bottom2"), Some(&Bson::Array(ints(&[20, 30]))));
    assert_eq!(ny[1].get("max2"), Some(&Bson::Array(ints(&[30, 20]))));
    assert_eq!(ny[3].get("max2"), Some(&Bson::Array(ints(&[30]))));
    assert_eq!(ny[0].get("first2"), Some(&Bson::Array(ints(&[10, 20]))));
    assert_eq!(ny[1].get("median"), Some(&Bson::Double(20.0)));
    assert_eq!(ny[0].get("p"), Some(&Bson::Array(vec![30.0.into()])));
    assert_eq!(ny[0].get("min"), Some(&Bson::Int32(10)));
    assert_eq!(ny[0].get("max"), Some(&Bson::Int32(30)));
    assert_eq!(ny[0].get("set"), Some(&Bson::Array(vec!["NY".into()])));
}

#[test]
fn bad_windows_fail_with_mongods_codes() {
    let store = sales();
    let with_sort = |output: Document| -> Bson {
        doc! { "sortBy": { "t": 1 }, "output": { "x": output } }.into()
    };
    let cases: Vec<(Bson, i32, &str)> = vec![
        (Bson::Int32(1), 9, "the $setWindowFields stage specification must be an object, found int"),
        (doc! { "sortBy": { "t": 1 } }.into(), 40414, "BSON field '$setWindowFields.output' is missing but a required field"),
        (doc! { "output": {}, "foo": 1 }.into(), 40415, "BSON field '$setWindowFields.foo' is an unknown field."),
        (doc! { "output": {}, "sortBy": 1 }.into(), 14, "BSON field '$setWindowFields.sortBy' is the wrong type 'int', expected type 'object'"),
        (doc! { "output": { "x": 1 } }.into(), 9, "The field 'x' must be an object"),
        (doc! { "output": { "x": { "sum": 1 } } }.into(), 9, "Expected a $-prefixed window function, sum"),
        (doc! { "output": { "x": { "$summ": 1 } } }.into(), 9, "Unrecognized window function, $summ"),
        (doc! { "output": { "x": { "$sum": 1, "$avg": 1 } } }.into(), 9, "Cannot specify two functions in window function spec"),
        (doc! { "output": { "x": { "$sum": 1, "foo": 1 } } }.into(), 9, "Window function found an unknown argument: foo"),
        (doc! { "output": { "a": { "$sum": 1 }, "a.b": { "$sum": 1 } } }.into(), 6_307_900, "$setWindowFields 'output' specification contains two conflicting paths"),
        (doc! { "output": { "x": { "$sum": 1, "window": { "documents": [-1, 1] } } } }.into(), 5_339_901, "Document-based bounds require a sortBy"),
        (with_sort(doc! { "$sum": 1, "window": { "documents": [1, -1] } }), 5_339_900, "Lower bound must not exceed upper bound: [1, -1]"),
        (with_sort(doc! { "$sum": 1, "window": { "documents": [0.5, 1] } }), 9, "Numeric document-based bounds must be an integer"),
        (with_sort(doc! { "$sum": 1, "window": { "documents": ["x", 1] } }), 9, "Window bounds must be 'unbounded', 'current', or a number."),
        (with_sort(doc! { "$sum": 1, "window": { "documents": [0] } }), 9, "Window bounds must be a 2-element array: documents: [ 0 ]"),
        (with_sort(doc! { "$sum": 1, "window": { "documents": [{ "$add": ["$t", 1] }, 0] } }), 9, "Window bounds expression must be a constant."),
        (with_sort(doc! { "$sum": 1, "window": { "documents": ["$t", 0] } }), 9, "Window bounds must be 'unbounded', 'current', or a number."),
        (with_sort(doc! { "$sum": 1, "window": { "documents": [0, 1], "range": [0, 1] } }), 9, "Window bounds can specify either 'documents' or 'unit', not both."),
        (with_sort(doc! { "$sum": 1, "window": { "unit": "day" } }), 9, "Window bounds can only specify 'unit' with range-based bounds."),
        (with_sort(doc! { "$sum": 1, "window": 1 }), 9, "'window' field must be an object"),
        (doc! { "output": { "x": { "$sum": 1, "window": { "range": [0, 1] } } } }.into(), 5_339_902, "Range-based bounds require sortBy a single field"),
        (doc! { "sortBy": { "t": -1 }, "output": { "x": { "$sum": 1, "window": { "range": [0, 1] } } } }.into(), 8_947_401, "Range-based bounds require an ascending sortBy"),
        (with_sort(doc! { "$sum": 1, "window": { "range": [0, 1], "unit": "fortnight" } }), 9, "unknown time unit value: fortnight"),
        (with_sort(doc! { "$sum": 1, "window": { "range": [0.5, 1], "unit": "day" } }), 9, "With 'unit', range-based bounds must be an integer"),
        (doc! { "output": { "x": { "$rank": {} } } }.into(), 5_371_602, "$rank must be specified with a top level sortBy expression with exactly one element"),
        (with_sort(doc! { "$rank": 1 }), 5_371_603, "$rank must be specified with '{}' as the value"),
        (with_sort(doc! { "$rank": {}, "window": {} }), 5_371_601, "Rank style window functions take no other arguments"),
        (with_sort(doc! { "$locf": "$q", "window": {} }), 9, "'window' field is not allowed in $locf"),
        (doc! { "output": { "x": { "$linearFill": "$q" } } }.into(), 605_001, "$linearFill must be specified with a top level sortBy expression with exactly one element"),
        (doc! { "output": { "x": { "$shift": { "output": "$q", "by": 1 } } } }.into(), 9, "'$shift' requires a sortBy"),
        (with_sort(doc! { "$shift": { "output": "$q", "by": 1.5 } }), 9, "'$shift:by' field must be an integer, but found  by: 1.5"),
        (with_sort(doc! { "$shift": { "output": "$q", "by": 1, "default": "$q" } }), 9, "'$shift:default' expression must yield a constant value."),
        (with_sort(doc! { "$shift": { "output": "$q" } }), 9, "$shift requires 'by' as an integer value."),
        (with_sort(doc! { "$derivative": { "input": "$q" } }), 9, "$derivative requires explicit window bounds"),
        (with_sort(doc! { "$derivative": { "input": "$q", "unit": "month" }, "window": { "documents": [-1, 0] } }), 5_490_710, "unit must be 'week' or smaller"),
        (doc! { "output": { "x": { "$integral": { "input": "$q" } } } }.into(), 9, "$integral requires a sortBy"),
        (with_sort(doc! { "$expMovingAvg": { "input": "$q", "N": 0 } }), 9, "'N' must be greater than zero. Got 0"),
        (with_sort(doc! { "$expMovingAvg": { "input": "$q", "alpha": 1 } }), 9, "'alpha' must be between 0 and 1 (exclusive), found alpha: 1"),
        (doc! { "output": { "x": { "$expMovingAvg": { "input": "$q", "N": 2 } } } }.into(), 9, "$expMovingAvg requires an explicit 'sortBy'"),
        (with_sort(doc! { "$count": 1 }), 9, "$count only accepts an empty object as input"),
        (with_sort(doc! { "$first": "$q", "x": 1 }), 9, "$first got unexpected argument: x"),
        (with_sort(doc! { "$topN": { "n": 1, "output": "$q" } }), 5_788_005, "Missing value for 'sortBy'"),
        (with_sort(doc! { "$mergeObjects": "$q" }), 9, "Unrecognized window function, $mergeObjects"),
        (doc! { "partitionBy": [1, 2], "output": {} }.into(), 14, "An expression used to partition cannot evaluate to value of type array"),
    ];
    for (spec, code, message) in cases {
        let (got_code, got_message) = window_error(&store, spec.clone());
        assert_eq!((got_code, got_message.as_str()), (code, message), "{spec}");
    }
}

#[test]
fn runtime_errors_and_bounds() {
    let store = sales();
    // A partition key that is an array.
    insert(&store, "w", vec![doc! { "_id": 7, "s": ["x"], "t": 9 }]);
    let (code, message) = window_error(
        &store,
        doc! { "partitionBy": "$s", "output": { "n": { "$count": {} } } }.into(),
    );
    assert_eq!(
        (code, message.as_str()),
        (14, "Cannot 'partitionBy' an expression of type array")
    );
    // n is evaluated when the stage runs, against no document.
    let (code, _) = window_error(
        &store,
        doc! { "output": { "x": { "$firstN": { "input": "$q", "n": "$t" } } } }.into(),
    );
    assert_eq!(code, 5_787_902);
    // A sliding window over a large partition is bounded instead of running for hours.
    let big = new_store();
    for chunk in 0..13 {
        let docs: Vec<Document> = (0..1000)
            .map(|i| doc! { "_id": chunk * 1000 + i, "t": chunk * 1000 + i })
            .collect();
        insert(&big, "w", docs);
    }
    let reply = run(
        &big,
        "db",
        doc! { "aggregate": "w", "pipeline": [{ "$setWindowFields": {
            "sortBy": { "t": 1 },
            "output": { "x": { "$sum": "$t", "window": { "documents": ["current", "unbounded"] } } },
        } }, { "$count": "n" }], "cursor": {} },
    );
    assert_eq!(error_code(&reply), 262, "{reply}");
    // A running window over the same partition is linear.
    let reply = run_ok(
        &big,
        "db",
        doc! { "aggregate": "w", "pipeline": [{ "$setWindowFields": {
            "sortBy": { "t": 1 },
            "output": { "x": { "$sum": "$t", "window": { "documents": ["unbounded", "current"] } } },
        } }, { "$sort": { "t": -1 } }, { "$limit": 1 }], "cursor": {} },
    );
    assert_eq!(
        batch(&reply)[0].get("x"),
        Some(&Bson::Int32(12999 * 13000 / 2))
    );
}

#[test]
fn a_partition_past_100_mib_without_allow_disk_use_is_mongods_5414201() {
    let store = new_store();
    let big = "z".repeat(1024 * 1024);
    for chunk in 0..11 {
        let docs: Vec<Document> = (0..10)
            .map(|i| doc! { "_id": chunk * 10 + i, "big": big.clone() })
            .collect();
        insert(&store, "w", docs);
    }
    let pipeline = vec![
        doc! { "$setWindowFields": { "output": { "n": { "$count": {} } } } },
        doc! { "$count": "n" },
    ];
    let reply = run(
        &store,
        "db",
        doc! { "aggregate": "w", "pipeline": pipeline.clone(), "cursor": {}, "allowDiskUse": false },
    );
    assert_eq!(error_code(&reply), 5_414_201, "{reply}");
    // mongod 8.0 spills the partition by default; blackpipe holds it.
    let reply = run_ok(
        &store,
        "db",
        doc! { "aggregate": "w", "pipeline": pipeline, "cursor": {} },
    );
    assert_eq!(batch(&reply), vec![doc! { "n": 110 }]);
}
