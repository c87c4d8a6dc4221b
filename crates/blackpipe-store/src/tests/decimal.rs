//! Decimal128 as mongod computes with it: exact decimal arithmetic, a decimal result whenever
//! a decimal takes part, and comparisons of exact values across numeric types.

use bson::{Bson, Decimal128, Document, doc};

use super::{error_code, find, ids, insert, new_store, run, run_ok};
use crate::value_order::values_equal;

fn decimal(text: &str) -> Bson {
    Bson::Decimal128(text.parse::<Decimal128>().expect("a decimal literal"))
}

/// The `v` field of the single document an aggregation over one document projects.
fn project(expression: Bson) -> Bson {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1 }]);
    let reply = run_ok(
        &store,
        "db",
        doc! {
            "aggregate": "c",
            "pipeline": [{ "$project": { "_id": 0, "v": expression } }],
            "cursor": {},
        },
    );
    let batch = super::batch(&reply);
    batch[0].get("v").cloned().expect("a projected value")
}

fn project_error(expression: Bson) -> i32 {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1 }]);
    error_code(&run(
        &store,
        "db",
        doc! {
            "aggregate": "c",
            "pipeline": [{ "$project": { "v": expression } }],
            "cursor": {},
        },
    ))
}

#[test]
fn decimal_addition_is_exact() {
    let sum = project(Bson::Document(
        doc! { "$add": [decimal("0.1"), decimal("0.2")] },
    ));
    assert_eq!(sum, decimal("0.3"));
}

#[test]
fn arithmetic_keeps_decimal_precision_and_rounds_to_34_digits() {
    let difference = project(Bson::Document(
        doc! { "$subtract": [decimal("1.00"), decimal("0.01")] },
    ));
    assert_eq!(difference, decimal("0.99"));
    let product = project(Bson::Document(
        doc! { "$multiply": [decimal("1.10"), decimal("3")] },
    ));
    assert_eq!(product, decimal("3.30"));
    let third = project(Bson::Document(doc! { "$divide": [decimal("1"), 3] }));
    assert_eq!(third, decimal("0.3333333333333333333333333333333333"));
    let remainder = project(Bson::Document(doc! { "$mod": [decimal("-7.5"), 2] }));
    assert_eq!(remainder, decimal("-1.5"));
}

#[test]
fn a_double_operand_is_read_at_15_digits_and_the_result_is_a_decimal() {
    // mongod's coerceToDecimal: the double 0.2 becomes 0.200000000000000.
    let sum = project(Bson::Document(doc! { "$add": [decimal("0.1"), 0.2] }));
    assert_eq!(sum, decimal("0.300000000000000"));
    let sum = project(Bson::Document(doc! { "$add": [2, decimal("0.5")] }));
    assert_eq!(sum, decimal("2.5"));
}

#[test]
fn to_decimal_and_to_double_convert_as_mongod_does() {
    assert_eq!(
        project(Bson::Document(doc! { "$toDecimal": 2.5 })),
        decimal("2.50000000000000")
    );
    assert_eq!(
        project(Bson::Document(doc! { "$toDecimal": 5_i64 })),
        decimal("5")
    );
    assert_eq!(
        project(Bson::Document(doc! { "$toDecimal": "1.10" })),
        decimal("1.10")
    );
    assert_eq!(
        project(Bson::Document(doc! { "$toDecimal": true })),
        decimal("1")
    );
    assert_eq!(
        project(Bson::Document(doc! { "$toDouble": decimal("0.5") })),
        Bson::Double(0.5)
    );
    assert_eq!(
        project(Bson::Document(doc! { "$toDecimal": Bson::Null })),
        Bson::Null
    );
    assert_eq!(
        project_error(Bson::Document(doc! { "$toDecimal": "twelve" })),
        crate::code::CONVERSION_FAILURE
    );
    assert_eq!(
        project_error(Bson::Document(doc! { "$toDouble": { "a": 1 } })),
        crate::code::CONVERSION_FAILURE
    );
}

#[test]
fn comparisons_use_exact_values_across_numeric_types() {
    assert!(values_equal(&decimal("1.0"), &Bson::Int32(1)));
    assert!(values_equal(&decimal("0.5"), &Bson::Double(0.5)));
    assert!(values_equal(&decimal("-0"), &Bson::Int64(0)));
    // The double 0.1 is 0.1000000000000000055511151231257827...: above the decimal 0.1.
    assert!(!values_equal(&decimal("0.1"), &Bson::Double(0.1)));
    assert_eq!(
        crate::value_order::compare_values(&decimal("0.1"), &Bson::Double(0.1)),
        std::cmp::Ordering::Less
    );
    // Past 2^53 doubles cannot tell these apart; decimals and integers can.
    assert!(!values_equal(
        &decimal("9007199254740993"),
        &Bson::Int64(9_007_199_254_740_992)
    ));
    assert!(values_equal(
        &decimal("9007199254740993"),
        &Bson::Int64(9_007_199_254_740_993)
    ));
    assert!(values_equal(&decimal("NaN"), &Bson::Double(f64::NAN)));
    // Exact, not at 34 digits: this decimal is the double 0.1's first 34 digits, still below.
    assert_eq!(
        crate::value_order::compare_values(
            &decimal("0.1000000000000000055511151231257827"),
            &Bson::Double(0.1)
        ),
        std::cmp::Ordering::Less
    );
    assert!(values_equal(
        &decimal("Infinity"),
        &Bson::Double(f64::INFINITY)
    ));
    assert_eq!(
        crate::value_order::compare_values(&decimal("1E+400"), &Bson::Double(f64::MAX)),
        std::cmp::Ordering::Greater
    );
    assert_eq!(
        crate::value_order::compare_values(&decimal("1E+400"), &Bson::Double(f64::INFINITY)),
        std::cmp::Ordering::Less
    );
}

#[test]
fn queries_and_sorts_compare_decimals_exactly() {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![
            doc! { "_id": 1, "x": decimal("0.1") },
            doc! { "_id": 2, "x": 0.1 },
            doc! { "_id": 3, "x": decimal("0.10") },
            doc! { "_id": 4, "x": 1 },
            doc! { "_id": 5, "x": decimal("1.000") },
        ],
    );
    assert_eq!(ids(&store, "c", doc! { "x": decimal("0.1") }), vec![1, 3]);
    assert_eq!(ids(&store, "c", doc! { "x": 1 }), vec![4, 5]);
    assert_eq!(
        ids(&store, "c", doc! { "x": { "$gt": decimal("0.1") } }),
        vec![2, 4, 5]
    );
    let sorted = run_ok(
        &store,
        "db",
        doc! { "find": "c", "sort": { "x": -1, "_id": 1 } },
    );
    let order: Vec<i32> = super::batch(&sorted)
        .iter()
        .map(|document| document.get_i32("_id").unwrap_or(-1))
        .collect();
    assert_eq!(order, vec![4, 5, 2, 1, 3]);
}

#[test]
fn a_unique_index_sees_equal_decimals_as_duplicates() {
    let store = new_store();
    run_ok(
        &store,
        "db",
        doc! { "createIndexes": "c", "indexes": [{ "key": { "x": 1 }, "name": "x_1", "unique": true }] },
    );
    insert(&store, "c", vec![doc! { "_id": 1, "x": decimal("2.50") }]);
    let duplicate = run(
        &store,
        "db",
        doc! { "insert": "c", "documents": [{ "_id": 2, "x": 2.5 }] },
    );
    let errors = duplicate.get_array("writeErrors").expect("a duplicate key");
    assert_eq!(
        errors[0].as_document().and_then(|e| e.get_i32("code").ok()),
        Some(11000)
    );
    // 0.1 as a decimal and as a double are different keys.
    insert(
        &store,
        "c",
        vec![
            doc! { "_id": 3, "x": decimal("0.1") },
            doc! { "_id": 4, "x": 0.1 },
        ],
    );
}

#[test]
fn inc_mul_sum_and_avg_stay_decimal() {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![
            doc! { "_id": 1, "g": 1, "x": decimal("0.1") },
            doc! { "_id": 2, "g": 1, "x": decimal("0.2") },
            doc! { "_id": 3, "g": 1, "x": 3 },
        ],
    );
    run_ok(
        &store,
        "db",
        doc! { "update": "c", "updates": [
            { "q": { "_id": 1 }, "u": { "$inc": { "x": decimal("0.2") } } },
            { "q": { "_id": 2 }, "u": { "$mul": { "x": decimal("3") } } },
        ] },
    );
    let documents = find(&store, "c", Document::new());
    assert_eq!(documents[0].get("x"), Some(&decimal("0.3")));
    assert_eq!(documents[1].get("x"), Some(&decimal("0.6")));
    let grouped = run_ok(
        &store,
        "db",
        doc! {
            "aggregate": "c",
            "pipeline": [{ "$group": {
                "_id": "$g",
                "sum": { "$sum": "$x" },
                "avg": { "$avg": "$x" },
            } }],
            "cursor": {},
        },
    );
    let group = &super::batch(&grouped)[0];
    assert_eq!(group.get("sum"), Some(&decimal("3.9")));
    assert_eq!(group.get("avg"), Some(&decimal("1.3")));
}
