//! Decimal128 values as mongod computes with them: IEEE 754-2008 decimal arithmetic with 34
//! digits and round-half-even (libdecNumber through the `dec` crate), never through double.
//!
//! mongod's two readings of a double as a decimal are kept apart on purpose: arithmetic and
//! `$toDecimal` round the double to 15 significant digits (`0.1` becomes `0.100000000000000`,
//! so `0.1 + NumberDecimal("0.2")` is `0.300000000000000`), while comparisons round it to 34
//! digits, close enough to the double's exact binary value that `NumberDecimal("0.1")` and the
//! double `0.1` (`0.1000000000000000055511...`) differ, as they do in mongod.

use std::cmp::Ordering;

use bson::Bson;
use dec::{Context, Decimal128 as Dec};

/// The decimal a BSON Decimal128 holds, read through its exact string form (the `dec` crate's
/// bytes are DPD-encoded, BSON's are BID-encoded, so the bytes cannot be shared).
pub(crate) fn from_bson(value: &bson::Decimal128) -> Dec {
    parse(&value.to_string())
}

/// The BSON Decimal128 of a decimal (exact: both sides hold the same 34-digit values).
pub(crate) fn to_bson(value: Dec) -> Bson {
    match value.to_string().parse::<bson::Decimal128>() {
        Ok(decimal) => Bson::Decimal128(decimal),
        // Every decimal128 string is a valid BSON decimal; NaN is the honest fallback.
        Err(_) => Bson::Decimal128(bson::Decimal128::from_bytes(NAN_BYTES)),
    }
}

/// BSON's Decimal128 NaN (`0x7c00...` in the high word, little-endian).
const NAN_BYTES: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x7c];

fn parse(text: &str) -> Dec {
    Context::<Dec>::default().parse(text).unwrap_or(Dec::NAN)
}

/// An integer as a decimal (exact: an `i64` has at most 19 digits).
pub(crate) fn from_i64(value: i64) -> Dec {
    Dec::from(value)
}

/// A double as arithmetic and conversions read it: rounded to 15 significant digits.
pub(crate) fn from_f64_for_arithmetic(value: f64) -> Dec {
    from_f64_with_digits(value, 15)
}

/// A double as comparisons read it: rounded to 34 significant digits.
pub(crate) fn from_f64_for_comparison(value: f64) -> Dec {
    from_f64_with_digits(value, 34)
}

fn from_f64_with_digits(value: f64, digits: usize) -> Dec {
    if value.is_nan() {
        return Dec::NAN;
    }
    if value.is_infinite() {
        return parse(if value > 0.0 { "Infinity" } else { "-Infinity" });
    }
    if value == 0.0 {
        return parse(if value.is_sign_negative() { "-0" } else { "0" });
    }
    // Rust's `{:e}` with a precision rounds the double's exact value correctly (half-even).
    parse(&format!("{value:.prec$e}", prec = digits - 1))
}

/// The nearest double to a decimal (Rust's parser rounds correctly; infinities and NaN map to
/// themselves).
pub(crate) fn to_f64(value: Dec) -> f64 {
    value.to_string().parse::<f64>().unwrap_or(f64::NAN)
}

/// Numeric order with mongod's NaN rule: NaN sorts below every number and equals itself;
/// `-0 == 0` and `1.0 == 1.00`.
pub(crate) fn compare(left: Dec, right: Dec) -> Ordering {
    match (left.is_nan(), right.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (false, false) => left.partial_cmp(&right).unwrap_or(Ordering::Equal),
    }
}

/// A binary decimal operation, rounded to 34 digits half-even as mongod's are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DecimalOp {
    Add,
    Subtract,
    Multiply,
    Divide,
    /// The truncating remainder (`$mod`): the result takes the dividend's sign.
    Remainder,
}

/// Applies `op` in a fresh decimal128 context.
pub(crate) fn apply(op: DecimalOp, left: Dec, right: Dec) -> Dec {
    let mut context = Context::<Dec>::default();
    match op {
        DecimalOp::Add => context.add(left, right),
        DecimalOp::Subtract => context.sub(left, right),
        DecimalOp::Multiply => context.mul(left, right),
        DecimalOp::Divide => context.div(left, right),
        DecimalOp::Remainder => context.rem(left, right),
    }
}

/// The absolute value (`$abs` keeps a decimal a decimal).
pub(crate) fn abs(value: Dec) -> Dec {
    Context::<Dec>::default().abs(value)
}

/// The integer a decimal holds exactly, if it is integral and within `i64`.
pub(crate) fn exact_i64(value: Dec) -> Option<i64> {
    if !value.is_finite() {
        return None;
    }
    let reduced = Context::<Dec>::default().reduce(value);
    if reduced.exponent() < 0 || reduced.exponent() > 18 {
        return None;
    }
    reduced.to_standard_notation_string().parse::<i64>().ok()
}

/// The double a decimal equals in mongod's comparison, if one does (so that index keys of
/// equal numbers collide whatever their types).
pub(crate) fn exact_f64(value: Dec) -> Option<f64> {
    // Exactly the decimals that compare equal to a double (mongod reads the double at 34
    // digits), so that the key and the comparison agree.
    let double = to_f64(value);
    (!value.is_nan() && compare(from_f64_for_comparison(double), value) == Ordering::Equal)
        .then_some(double)
}

/// The canonical text of a decimal's value (trailing zeros removed), for index keys.
pub(crate) fn canonical_text(value: Dec) -> String {
    Context::<Dec>::default().reduce(value).to_string()
}

/// A decimal parsed from the text `$toDecimal` accepts; `None` for anything else.
pub(crate) fn parse_text(text: &str) -> Option<Dec> {
    let mut context = Context::<Dec>::default();
    let parsed = context.parse(text).ok()?;
    (!parsed.is_signaling_nan()).then_some(parsed)
}
