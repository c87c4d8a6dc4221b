//! Canonical BSON ordering, exact numeric comparison, key encoding and size computation.

use std::cmp::Ordering;

use bson::oid::ObjectId;
use bson::{Binary, Bson, DateTime, Decimal128, Timestamp, doc, spec::BinarySubtype};

use crate::key::encode_key;
use crate::value_order::{compare_values, document_size, identical, values_equal};

#[test]
fn types_follow_the_canonical_order() {
    let ascending = [
        Bson::MinKey,
        Bson::Null,
        Bson::Int32(5),
        Bson::String("a".into()),
        Bson::Document(doc! { "a": 1 }),
        Bson::Array(vec![Bson::Int32(1)]),
        Bson::Binary(Binary {
            subtype: BinarySubtype::Generic,
            bytes: vec![1],
        }),
        Bson::ObjectId(ObjectId::from_bytes([1; 12])),
        Bson::Boolean(false),
        Bson::DateTime(DateTime::from_millis(0)),
        Bson::Timestamp(Timestamp {
            time: 1,
            increment: 1,
        }),
        Bson::MaxKey,
    ];
    for pair in ascending.windows(2) {
        assert_eq!(
            compare_values(&pair[0], &pair[1]),
            Ordering::Less,
            "{} < {}",
            pair[0],
            pair[1]
        );
        assert_eq!(compare_values(&pair[1], &pair[0]), Ordering::Greater);
    }
}

#[test]
fn numbers_compare_by_value_across_types() {
    assert!(values_equal(&Bson::Int32(1), &Bson::Double(1.0)));
    assert!(values_equal(&Bson::Int64(1), &Bson::Int32(1)));
    assert!(values_equal(
        &Bson::Decimal128("1.0".parse::<Decimal128>().unwrap()),
        &Bson::Int32(1)
    ));
    assert_eq!(
        compare_values(&Bson::Int32(2), &Bson::Double(2.5)),
        Ordering::Less
    );
    assert_eq!(
        compare_values(&Bson::Double(-0.5), &Bson::Int64(0)),
        Ordering::Less
    );
    // NaN sorts below every number.
    assert_eq!(
        compare_values(&Bson::Double(f64::NAN), &Bson::Int64(i64::MIN)),
        Ordering::Less
    );
    assert!(values_equal(
        &Bson::Double(f64::NAN),
        &Bson::Double(f64::NAN)
    ));
}

#[test]
fn large_integers_are_not_rounded_through_doubles() {
    let big = i64::MAX - 1;
    // (i64::MAX - 1) as f64 rounds to 2^63, which is larger than every i64.
    assert_eq!(
        compare_values(
            &Bson::Int64(big),
            &Bson::Double(9_223_372_036_854_775_808.0)
        ),
        Ordering::Less
    );
    assert_eq!(
        compare_values(&Bson::Int64(big), &Bson::Int64(i64::MAX)),
        Ordering::Less
    );
    assert_eq!(
        compare_values(
            &Bson::Int64(1 << 53),
            &Bson::Double(9_007_199_254_740_993.0)
        ),
        Ordering::Equal
    );
    assert_eq!(
        compare_values(
            &Bson::Int64((1 << 53) + 1),
            &Bson::Double(9_007_199_254_740_992.0)
        ),
        Ordering::Greater
    );
}

#[test]
fn documents_compare_field_by_field_and_arrays_element_by_element() {
    assert_eq!(
        compare_values(
            &Bson::Document(doc! { "a": 1 }),
            &Bson::Document(doc! { "a": 2 })
        ),
        Ordering::Less
    );
    assert_eq!(
        compare_values(
            &Bson::Document(doc! { "a": 1 }),
            &Bson::Document(doc! { "b": 0 })
        ),
        Ordering::Less
    );
    assert_eq!(
        compare_values(
            &Bson::Document(doc! { "a": 1 }),
            &Bson::Document(doc! { "a": 1, "b": 1 })
        ),
        Ordering::Less
    );
    // A string value outranks any number, whatever the field names.
    assert_eq!(
        compare_values(
            &Bson::Document(doc! { "z": 1 }),
            &Bson::Document(doc! { "a": "x" })
        ),
        Ordering::Less
    );
    assert_eq!(
        compare_values(&bson::bson!([1, 2]), &bson::bson!([1, 3])),
        Ordering::Less
    );
    assert_eq!(
        compare_values(&bson::bson!([1, 2]), &bson::bson!([1, 2, 0])),
        Ordering::Less
    );
    // Field order matters in embedded documents.
    assert!(!values_equal(
        &Bson::Document(doc! { "a": 1, "b": 2 }),
        &Bson::Document(doc! { "b": 2, "a": 1 })
    ));
}

#[test]
fn strings_binaries_and_dates_compare_within_their_type() {
    assert_eq!(
        compare_values(&Bson::String("B".into()), &Bson::String("a".into())),
        Ordering::Less
    );
    let short = Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes: vec![9],
    });
    let long = Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes: vec![0, 0],
    });
    assert_eq!(
        compare_values(&short, &long),
        Ordering::Less,
        "binData compares length first"
    );
    assert_eq!(
        compare_values(
            &Bson::DateTime(DateTime::from_millis(-5)),
            &Bson::DateTime(DateTime::from_millis(3))
        ),
        Ordering::Less
    );
    assert_eq!(
        compare_values(&Bson::Boolean(false), &Bson::Boolean(true)),
        Ordering::Less
    );
}

#[test]
fn identical_distinguishes_numeric_types_and_field_order() {
    assert!(!identical(&Bson::Int32(1), &Bson::Double(1.0)));
    assert!(identical(
        &Bson::Document(doc! { "a": [1, { "b": 2.5 }] }),
        &Bson::Document(doc! { "a": [1, { "b": 2.5 }] })
    ));
    assert!(!identical(
        &Bson::Document(doc! { "a": 1, "b": 2 }),
        &Bson::Document(doc! { "b": 2, "a": 1 })
    ));
}

#[test]
fn equal_values_share_an_index_key() {
    assert_eq!(encode_key(&Bson::Int32(1)), encode_key(&Bson::Double(1.0)));
    assert_eq!(encode_key(&Bson::Int64(7)), encode_key(&Bson::Int32(7)));
    assert_eq!(
        encode_key(&Bson::Double(0.0)),
        encode_key(&Bson::Double(-0.0))
    );
    assert_ne!(encode_key(&Bson::Int32(1)), encode_key(&Bson::Double(1.5)));
    assert_ne!(
        encode_key(&Bson::Int32(1)),
        encode_key(&Bson::String("1".into()))
    );
    assert_ne!(
        encode_key(&Bson::Document(doc! { "a": 1, "b": 2 })),
        encode_key(&Bson::Document(doc! { "b": 2, "a": 1 }))
    );
}

#[test]
fn document_size_matches_the_encoder() {
    let document = doc! {
        "_id": ObjectId::from_bytes([3; 12]),
        "s": "hello",
        "n": 1,
        "l": 2_i64,
        "d": 2.5,
        "b": true,
        "nil": null,
        "when": DateTime::from_millis(1),
        "ts": Timestamp { time: 1, increment: 2 },
        "bin": Binary { subtype: BinarySubtype::Generic, bytes: vec![1, 2, 3] },
        "arr": [1, "two", { "three": 3 }, [4]],
        "sub": { "x": { "y": "z" } },
    };
    assert_eq!(document_size(&document), document.to_vec().unwrap().len());
}
