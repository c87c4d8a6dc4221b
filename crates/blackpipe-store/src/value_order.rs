//! MongoDB's total order over BSON values, numeric helpers, and exact ("binary") equality.

use std::cmp::Ordering;

use bson::{Bson, Document};

use crate::decimal;

/// mongod's canonical type ranks: values of different ranks compare by rank alone, and all
/// numeric types share one rank so `1`, `1.0` and `NumberLong(1)` are equal.
pub(crate) fn canonical_rank(value: &Bson) -> u8 {
    match value {
        Bson::MinKey => 0,
        Bson::Undefined => 1,
        Bson::Null => 5,
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => 10,
        Bson::String(_) | Bson::Symbol(_) => 15,
        Bson::Document(_) => 20,
        Bson::Array(_) => 25,
        Bson::Binary(_) => 30,
        Bson::ObjectId(_) => 35,
        Bson::Boolean(_) => 40,
        Bson::DateTime(_) => 45,
        Bson::Timestamp(_) => 47,
        Bson::RegularExpression(_) => 50,
        Bson::DbPointer(_) => 55,
        Bson::JavaScriptCode(_) => 60,
        Bson::JavaScriptCodeWithScope(_) => 65,
        Bson::MaxKey => 127,
    }
}

/// A numeric value, kept exact for integers so that large `i64`s are not rounded, and for
/// decimals so that `NumberDecimal("0.1")` is not read as a double.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Number {
    Int(i64),
    Float(f64),
    Decimal(dec::Decimal128),
}

impl Number {
    /// The numeric reading of a value; `None` for non-numbers.
    pub(crate) fn of(value: &Bson) -> Option<Number> {
        match value {
            Bson::Int32(number) => Some(Number::Int(i64::from(*number))),
            Bson::Int64(number) => Some(Number::Int(*number)),
            Bson::Double(number) => Some(Number::Float(*number)),
            Bson::Decimal128(number) => Some(Number::Decimal(decimal::from_bson(number))),
            _ => None,
        }
    }

    pub(crate) fn as_f64(self) -> f64 {
        match self {
            // Precision loss above 2^53 is inherent to mixing with doubles, as in mongod.
            #[allow(clippy::cast_precision_loss)]
            Number::Int(number) => number as f64,
            Number::Float(number) => number,
            Number::Decimal(number) => decimal::to_f64(number),
        }
    }

    /// Exact comparison; NaN sorts below every other number and equals itself, as in mongod.
    /// A decimal compares with a double or an integer by exact value too.
    pub(crate) fn compare(self, other: Number) -> Ordering {
        match (self, other) {
            (Number::Decimal(left), Number::Decimal(right)) => decimal::compare(left, right),
            (Number::Decimal(left), Number::Int(right)) => {
                decimal::compare(left, decimal::from_i64(right))
            }
            (Number::Int(left), Number::Decimal(right)) => {
                decimal::compare(decimal::from_i64(left), right)
            }
            (Number::Decimal(left), Number::Float(right)) => {
                decimal::compare_with_double(left, right)
            }
            (Number::Float(left), Number::Decimal(right)) => {
                decimal::compare_with_double(right, left).reverse()
            }
            (Number::Int(left), Number::Int(right)) => left.cmp(&right),
            (Number::Float(left), Number::Float(right)) => compare_floats(left, right),
            (Number::Int(left), Number::Float(right)) => compare_int_float(left, right),
            (Number::Float(left), Number::Int(right)) => compare_int_float(right, left).reverse(),
        }
    }
}

fn compare_floats(left: f64, right: f64) -> Ordering {
    match (left.is_nan(), right.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (false, false) => left.partial_cmp(&right).unwrap_or(Ordering::Equal),
    }
}

fn compare_int_float(left: i64, right: f64) -> Ordering {
    if right.is_nan() {
        return Ordering::Greater;
    }
    // 2^63 is exactly representable; every i64 is strictly below it and at or above -2^63.
    const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
    if right >= TWO_POW_63 {
        return Ordering::Less;
    }
    if right < -TWO_POW_63 {
        return Ordering::Greater;
    }
    let truncated = right.trunc();
    // In range, so the conversion is exact.
    #[allow(clippy::cast_possible_truncation)]
    let whole = truncated as i64;
    match left.cmp(&whole) {
        Ordering::Equal => {
            let fraction = right - truncated;
            if fraction > 0.0 {
                Ordering::Less
            } else if fraction < 0.0 {
                Ordering::Greater
            } else {
                Ordering::Equal
            }
        }
        other => other,
    }
}

/// Compares two values in MongoDB's canonical order.
pub(crate) fn compare_values(left: &Bson, right: &Bson) -> Ordering {
    let rank = canonical_rank(left).cmp(&canonical_rank(right));
    if rank != Ordering::Equal {
        return rank;
    }
    match (left, right) {
        (Bson::Document(left), Bson::Document(right)) => compare_documents(left, right),
        (Bson::Array(left), Bson::Array(right)) => compare_arrays(left, right),
        (Bson::Binary(left), Bson::Binary(right)) => left
            .bytes
            .len()
            .cmp(&right.bytes.len())
            .then_with(|| u8::from(left.subtype).cmp(&u8::from(right.subtype)))
            .then_with(|| left.bytes.cmp(&right.bytes)),
        (Bson::ObjectId(left), Bson::ObjectId(right)) => left.bytes().cmp(&right.bytes()),
        (Bson::Boolean(left), Bson::Boolean(right)) => left.cmp(right),
        (Bson::DateTime(left), Bson::DateTime(right)) => {
            left.timestamp_millis().cmp(&right.timestamp_millis())
        }
        (Bson::Timestamp(left), Bson::Timestamp(right)) => {
            (left.time, left.increment).cmp(&(right.time, right.increment))
        }
        (Bson::RegularExpression(left), Bson::RegularExpression(right)) => left
            .pattern
            .as_str()
            .cmp(right.pattern.as_str())
            .then_with(|| left.options.as_str().cmp(right.options.as_str())),
        (Bson::JavaScriptCode(left), Bson::JavaScriptCode(right)) => left.cmp(right),
        (Bson::JavaScriptCodeWithScope(left), Bson::JavaScriptCodeWithScope(right)) => left
            .code
            .cmp(&right.code)
            .then_with(|| compare_documents(&left.scope, &right.scope)),
        (Bson::DbPointer(left), Bson::DbPointer(right)) => {
            format!("{left:?}").cmp(&format!("{right:?}"))
        }
        _ => match (string_of(left), string_of(right)) {
            (Some(left), Some(right)) => left.cmp(right),
            _ => match (Number::of(left), Number::of(right)) {
                (Some(left), Some(right)) => left.compare(right),
                // Same rank and no payload (null, undefined, MinKey, MaxKey).
                _ => Ordering::Equal,
            },
        },
    }
}

fn string_of(value: &Bson) -> Option<&str> {
    match value {
        Bson::String(text) | Bson::Symbol(text) => Some(text),
        _ => None,
    }
}

/// Values are equal in MongoDB's sense (`1 == 1.0`, field order matters in documents).
pub(crate) fn values_equal(left: &Bson, right: &Bson) -> bool {
    compare_values(left, right) == Ordering::Equal
}

/// Documents compare element by element: type rank, then field name, then value.
pub(crate) fn compare_documents(left: &Document, right: &Document) -> Ordering {
    let mut right_items = right.iter();
    for (left_key, left_value) in left {
        let Some((right_key, right_value)) = right_items.next() else {
            return Ordering::Greater;
        };
        let order = canonical_rank(left_value)
            .cmp(&canonical_rank(right_value))
            .then_with(|| left_key.cmp(right_key))
            .then_with(|| compare_values(left_value, right_value));
        if order != Ordering::Equal {
            return order;
        }
    }
    if right_items.next().is_some() {
        Ordering::Less
    } else {
        Ordering::Equal
    }
}

fn compare_arrays(left: &[Bson], right: &[Bson]) -> Ordering {
    for (left_value, right_value) in left.iter().zip(right) {
        let order = canonical_rank(left_value)
            .cmp(&canonical_rank(right_value))
            .then_with(|| compare_values(left_value, right_value));
        if order != Ordering::Equal {
            return order;
        }
    }
    left.len().cmp(&right.len())
}

/// Exact equality: same types, same field order, same bits. mongod uses this to decide whether
/// an update changed a document (so `$set: {a: 1.0}` over `a: 1` counts as a modification).
pub(crate) fn identical(left: &Bson, right: &Bson) -> bool {
    match (left, right) {
        (Bson::Double(left), Bson::Double(right)) => left.to_bits() == right.to_bits(),
        (Bson::Document(left), Bson::Document(right)) => documents_identical(left, right),
        (Bson::Array(left), Bson::Array(right)) => {
            left.len() == right.len()
                && left
                    .iter()
                    .zip(right)
                    .all(|(left, right)| identical(left, right))
        }
        _ => left == right,
    }
}

/// Exact, order-sensitive document equality (see [`identical`]).
pub(crate) fn documents_identical(left: &Document, right: &Document) -> bool {
    left.len() == right.len()
        && left
            .iter()
            .zip(right)
            .all(|((left_key, left_value), (right_key, right_value))| {
                left_key == right_key && identical(left_value, right_value)
            })
}

/// The encoded BSON size of a document, computed without serializing it.
pub(crate) fn document_size(document: &Document) -> usize {
    4 + document
        .iter()
        .map(|(key, value)| element_size(key.len(), value))
        .sum::<usize>()
        + 1
}

fn element_size(key_len: usize, value: &Bson) -> usize {
    1 + key_len + 1 + value_size(value)
}

fn array_size(items: &[Bson]) -> usize {
    let elements: usize = items
        .iter()
        .enumerate()
        .map(|(index, item)| element_size(decimal_digits(index), item))
        .sum();
    4 + elements + 1
}

/// How many decimal digits `index` has (the length of an array element's name).
pub(crate) fn decimal_digits(mut index: usize) -> usize {
    let mut digits = 1;
    while index >= 10 {
        index /= 10;
        digits += 1;
    }
    digits
}

/// The encoded BSON size of a value (without an element's type byte and name).
pub(crate) fn value_size(value: &Bson) -> usize {
    match value {
        Bson::Double(_) | Bson::Int64(_) | Bson::DateTime(_) | Bson::Timestamp(_) => 8,
        Bson::String(text) | Bson::JavaScriptCode(text) | Bson::Symbol(text) => 4 + text.len() + 1,
        Bson::Document(document) => document_size(document),
        Bson::Array(items) => array_size(items),
        Bson::Binary(binary) => {
            let old_prefix = if u8::from(binary.subtype) == 2 { 4 } else { 0 };
            4 + 1 + old_prefix + binary.bytes.len()
        }
        Bson::ObjectId(_) => 12,
        Bson::Boolean(_) => 1,
        Bson::Null | Bson::Undefined | Bson::MinKey | Bson::MaxKey => 0,
        Bson::RegularExpression(regex) => {
            regex.pattern.as_str().len() + 1 + regex.options.as_str().len() + 1
        }
        Bson::JavaScriptCodeWithScope(code) => {
            4 + (4 + code.code.len() + 1) + document_size(&code.scope)
        }
        Bson::Int32(_) => 4,
        Bson::Decimal128(_) => 16,
        // The namespace is not readable through bson's API; count the pointer's fixed part.
        Bson::DbPointer(_) => 4 + 1 + 12,
    }
}
