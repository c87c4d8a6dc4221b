//! `$convert`, its `$to...` shortcuts and `$isNumber`.

use bson::oid::ObjectId;
use bson::{Bson, Timestamp, doc};

use super::expr_eval::{date, decimal, eval_in, op, op_code, op_failure};

fn s(text: &str) -> Bson {
    Bson::String(text.to_owned())
}

fn convert(input: Bson, to: Bson) -> Bson {
    op(
        "$convert",
        Bson::Document(doc! { "input": input, "to": to }),
    )
}

fn convert_code(input: Bson, to: Bson) -> i32 {
    op_code(
        "$convert",
        Bson::Document(doc! { "input": input, "to": to }),
    )
}

#[test]
fn conversions_to_numbers() {
    assert_eq!(op("$toInt", 2.9.into()), Bson::Int32(2));
    assert_eq!(op("$toInt", (-2.9).into()), Bson::Int32(-2));
    assert_eq!(op("$toInt", s("-42")), Bson::Int32(-42));
    assert_eq!(op("$toInt", true.into()), Bson::Int32(1));
    assert_eq!(op("$toInt", decimal("9.99")), Bson::Int32(9));
    assert_eq!(op("$toInt", 5_i64.into()), Bson::Int32(5));
    assert_eq!(op("$toLong", date(1234)), Bson::Int64(1234));
    assert_eq!(
        op("$toLong", s("9223372036854775807")),
        Bson::Int64(i64::MAX)
    );
    assert_eq!(
        op("$toLong", 1e18.into()),
        Bson::Int64(1_000_000_000_000_000_000)
    );
    assert_eq!(op("$toDouble", s("1.5e3")), Bson::Double(1500.0));
    assert_eq!(op("$toDouble", date(10)), Bson::Double(10.0));
    assert_eq!(op("$toDecimal", 2.5.into()), decimal("2.50000000000000"));
    assert_eq!(op("$toDecimal", s("1.10")), decimal("1.10"));
    assert_eq!(convert(7.into(), s("long")), Bson::Int64(7));
    assert_eq!(convert(7.into(), 18.into()), Bson::Int64(7));
    assert_eq!(convert(7.into(), 1.0.into()), Bson::Double(7.0));
}

#[test]
fn conversion_failures_are_241_with_mongods_messages() {
    let message = |operator: &str, input: Bson| op_failure(operator, input);
    assert_eq!(
        message("$toInt", 3e9.into()),
        (
            241,
            "Conversion would overflow target type in $convert with no onError value: 3e+09"
                .to_owned()
        )
    );
    assert_eq!(
        message("$toInt", f64::NAN.into()),
        (
            241,
            "Attempt to convert NaN value to integer type in $convert with no onError value"
                .to_owned()
        )
    );
    assert_eq!(
        message("$toLong", f64::INFINITY.into()),
        (
            241,
            "Attempt to convert infinity value to integer type in $convert with no onError value"
                .to_owned()
        )
    );
    assert_eq!(
        message("$toInt", s("1.5")),
        (241, "Failed to parse number '1.5' in $convert with no onError value: Did not consume whole string.".to_owned())
    );
    assert_eq!(
        message("$toInt", s("0x1F")),
        (
            241,
            "Illegal hexadecimal input in $convert with no onError value: 0x1F".to_owned()
        )
    );
    assert_eq!(
        message("$toInt", 5_000_000_000_i64.into()),
        (
            241,
            "Conversion would overflow target type in $convert with no onError value: ".to_owned()
        )
    );
    assert_eq!(
        message("$toDate", 5.into()),
        (
            241,
            "Unsupported conversion from int to date in $convert with no onError value".to_owned()
        )
    );
    assert_eq!(op_code("$toLong", s("99999999999999999999")), 241);
    assert_eq!(op_code("$toDouble", s("1e400")), 241);
    assert_eq!(op_code("$toDouble", decimal("1E+400")), 241);
    assert_eq!(op_code("$toInt", decimal("Infinity")), 241);
    assert_eq!(op_code("$toObjectId", s("abc")), 241);
    assert_eq!(op_code("$toObjectId", 5.into()), 241);
    assert_eq!(op_code("$toString", Bson::Document(doc! {})), 241);
    assert_eq!(op_code("$toDecimal", s("twelve")), 241);
    assert_eq!(convert_code(Bson::Array(vec![]), s("int")), 241);
}

#[test]
fn conversions_to_strings_bools_dates_and_ids() {
    assert_eq!(op("$toString", 1.9.into()), s("1.9"));
    assert_eq!(op("$toString", (1.0 / 3.0).into()), s("0.333333"));
    assert_eq!(op("$toString", 1e20.into()), s("1e+20"));
    assert_eq!(op("$toString", (-0.0).into()), s("-0"));
    assert_eq!(op("$toString", f64::NEG_INFINITY.into()), s("-Infinity"));
    assert_eq!(op("$toString", 42_i64.into()), s("42"));
    assert_eq!(op("$toString", decimal("1.10")), s("1.10"));
    assert_eq!(op("$toString", true.into()), s("true"));
    assert_eq!(op("$toString", date(0)), s("1970-01-01T00:00:00.000Z"));
    let id = ObjectId::parse_str("5ab9cbfa31c2ab715d42129e").expect("an object id");
    assert_eq!(
        op("$toString", Bson::ObjectId(id)),
        s("5ab9cbfa31c2ab715d42129e")
    );
    assert_eq!(
        op("$toObjectId", s("5ab9cbfa31c2ab715d42129e")),
        Bson::ObjectId(id)
    );
    assert_eq!(op("$toDate", Bson::ObjectId(id)), date(1_522_125_818_000));
    assert_eq!(
        op("$toDate", s("2018-03-27T04:43:38Z")),
        date(1_522_125_818_000)
    );
    assert_eq!(op("$toDate", 1.5e12.into()), date(1_500_000_000_000));
    assert_eq!(
        op("$toDate", 1_500_000_000_000_i64.into()),
        date(1_500_000_000_000)
    );
    assert_eq!(
        op(
            "$toDate",
            Bson::Timestamp(Timestamp {
                time: 5,
                increment: 1
            })
        ),
        date(5000)
    );
    assert_eq!(op("$toBool", 0.into()), Bson::Boolean(false));
    assert_eq!(op("$toBool", decimal("0.00")), Bson::Boolean(false));
    assert_eq!(op("$toBool", s("")), Bson::Boolean(true));
    assert_eq!(op("$toBool", Bson::Document(doc! {})), Bson::Boolean(true));
    assert_eq!(op("$toBool", Bson::MinKey), Bson::Boolean(true));
    assert_eq!(op("$toBool", Bson::Null), Bson::Null);
}

#[test]
fn convert_on_error_and_on_null() {
    let spec = |input: Bson| {
        Bson::Document(
            doc! { "$convert": { "input": input, "to": "int", "onError": "bad", "onNull": "none" } },
        )
    };
    assert_eq!(eval_in(doc! {}, spec(s("x"))), Some(s("bad")));
    assert_eq!(eval_in(doc! {}, spec(Bson::Null)), Some(s("none")));
    assert_eq!(eval_in(doc! {}, spec(s("$nothing"))), Some(s("none")));
    assert_eq!(eval_in(doc! {}, spec(s("12"))), Some(Bson::Int32(12)));
    // Without onNull a null input is null; a null `to` is null.
    assert_eq!(convert(Bson::Null, s("int")), Bson::Null);
    assert_eq!(convert(1.into(), Bson::Null), Bson::Null);
    // onError does not catch a bad `to`.
    let bad_to = Bson::Document(doc! { "input": 1, "to": "integer", "onError": 0 });
    let (code, message) = op_failure("$convert", bad_to);
    assert_eq!((code, message.as_str()), (2, "Unknown type name: integer"));
}

#[test]
fn convert_parse_errors() {
    assert_eq!(convert_code(1.into(), 1.5.into()), 9);
    assert_eq!(convert_code(1.into(), 99.into()), 9);
    assert_eq!(convert_code(1.into(), Bson::Boolean(true)), 9);
    assert_eq!(op_code("$convert", s("x")), 9);
    assert_eq!(op_code("$convert", Bson::Document(doc! { "to": "int" })), 9);
    assert_eq!(op_code("$convert", Bson::Document(doc! { "input": 1 })), 9);
    assert_eq!(
        op_code(
            "$convert",
            Bson::Document(doc! { "input": 1, "to": "int", "format": "hex" })
        ),
        9
    );
    let (code, message) = op_failure("$toInt", Bson::Array(vec![1.into(), 2.into()]));
    assert_eq!(
        (code, message.as_str()),
        (50723, "$toInt requires a single argument, got 2")
    );
    assert_eq!(op("$toInt", Bson::Array(vec![s("3")])), Bson::Int32(3));
}

#[test]
fn is_number() {
    for number in [1.into(), 1_i64.into(), 1.5.into(), decimal("1")] {
        assert_eq!(op("$isNumber", number), Bson::Boolean(true));
    }
    for other in [s("1"), Bson::Null, Bson::Boolean(true), s("$nothing")] {
        assert_eq!(op("$isNumber", other), Bson::Boolean(false));
    }
    assert_eq!(
        op_code("$isNumber", Bson::Array(vec![1.into(), 2.into()])),
        16020
    );
}
