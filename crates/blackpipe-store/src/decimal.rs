//! Decimal128 values as mongod computes with them: IEEE 754-2008 decimal arithmetic with 34
//! digits and round-half-even (libdecNumber through the `dec` crate), never through double.
//!
//! mongod reads a double as a decimal in two ways, kept apart on purpose: arithmetic and
//! `$toDecimal` round the double to 15 significant digits (`0.1` becomes `0.100000000000000`,
//! so `0.1 + NumberDecimal("0.2")` is `0.300000000000000`), while comparisons are exact: the
//! double `0.1` is `0.1000000000000000055511151231257827...`, above `NumberDecimal("0.1")`.

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

/// A double as arithmetic and conversions read it: rounded to 15 significant digits (mongod's
/// `kRoundTo15Digits`).
pub(crate) fn from_f64_for_arithmetic(value: f64) -> Dec {
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
    parse(&format!("{value:.14e}"))
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

/// Enough 3-digit units for a double's exact decimal expansion (at most 767 significant
/// digits, for the smallest subnormals) beside a decimal's 34.
const EXACT_UNITS: usize = 260;

/// A decimal against a double by their exact values, as mongod's `compareDecimalToDouble`
/// does (NaN as in [`compare`]).
pub(crate) fn compare_with_double(decimal: Dec, double: f64) -> Ordering {
    match (decimal.is_nan(), double.is_nan()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Less,
        (false, true) => return Ordering::Greater,
        (false, false) => {}
    }
    if double.is_infinite() {
        let same_infinity = decimal.is_infinite() && decimal.is_negative() == (double < 0.0);
        return if same_infinity {
            Ordering::Equal
        } else if double > 0.0 {
            Ordering::Less
        } else {
            Ordering::Greater
        };
    }
    // The nearest double already orders the two unless it is the double itself: a double
    // between the decimal and its nearest double would be nearer.
    let nearest = to_f64(decimal);
    if nearest != double {
        return nearest.partial_cmp(&double).unwrap_or(Ordering::Equal);
    }
    // Within half an ulp: compare with the double's exact expansion, which Rust prints in full.
    let exact_double = format!("{double:.766e}").parse::<dec::Decimal<EXACT_UNITS>>();
    let wide_decimal = decimal.to_string().parse::<dec::Decimal<EXACT_UNITS>>();
    match (wide_decimal, exact_double) {
        (Ok(decimal), Ok(double)) => decimal.partial_cmp(&double).unwrap_or(Ordering::Equal),
        _ => Ordering::Equal,
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

/// The double a decimal equals exactly, if one does (so that index keys of equal numbers
/// collide whatever their types).
pub(crate) fn exact_f64(value: Dec) -> Option<f64> {
    let double = to_f64(value);
    (!value.is_nan() && compare_with_double(value, double) == Ordering::Equal).then_some(double)
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
