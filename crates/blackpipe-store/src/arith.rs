//! Arithmetic on BSON numbers with mongod's type promotion: int32 widens to int64 on overflow,
//! any double makes the result a double, any decimal a decimal.

use bson::Bson;

use super::decimal::{self, DecimalOp};
use super::value_order::Number;

/// The binary operations shared by `$inc`/`$mul`, `$sum` and `$add`/`$multiply`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArithOp {
    Add,
    Subtract,
    Multiply,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Width {
    Int32,
    Int64,
    Double,
    Decimal,
}

fn width(value: &Bson) -> Option<Width> {
    match value {
        Bson::Int32(_) => Some(Width::Int32),
        Bson::Int64(_) => Some(Width::Int64),
        Bson::Double(_) => Some(Width::Double),
        Bson::Decimal128(_) => Some(Width::Decimal),
        _ => None,
    }
}

/// Whether a value is one of the four numeric types.
pub(crate) fn is_number(value: &Bson) -> bool {
    width(value).is_some()
}

/// Applies `op` exactly: `None` for non-numbers or when an int64 result overflows (the caller
/// decides between an error, as `$inc` reports, and falling back to a double, as `$add` does).
pub(crate) fn apply_exact(op: ArithOp, left: &Bson, right: &Bson) -> Option<Bson> {
    let widest = width(left)?.max(width(right)?);
    let (left_number, right_number) = (Number::of(left)?, Number::of(right)?);
    match widest {
        Width::Int32 | Width::Int64 => {
            let (Number::Int(a), Number::Int(b)) = (left_number, right_number) else {
                return None;
            };
            let result = match op {
                ArithOp::Add => a.checked_add(b),
                ArithOp::Subtract => a.checked_sub(b),
                ArithOp::Multiply => a.checked_mul(b),
            }?;
            if widest == Width::Int32 {
                Some(i32::try_from(result).map_or(Bson::Int64(result), Bson::Int32))
            } else {
                Some(Bson::Int64(result))
            }
        }
        Width::Double => Some(Bson::Double(apply_float(
            op,
            left_number.as_f64(),
            right_number.as_f64(),
        ))),
        Width::Decimal => Some(apply_decimal(
            match op {
                ArithOp::Add => DecimalOp::Add,
                ArithOp::Subtract => DecimalOp::Subtract,
                ArithOp::Multiply => DecimalOp::Multiply,
            },
            left_number,
            right_number,
        )),
    }
}

/// A number as decimal arithmetic reads it: integers exactly, doubles at 15 digits (mongod's
/// `coerceToDecimal`).
pub(crate) fn decimal_operand(number: Number) -> dec::Decimal128 {
    match number {
        Number::Int(value) => decimal::from_i64(value),
        Number::Float(value) => decimal::from_f64_for_arithmetic(value),
        Number::Decimal(value) => value,
    }
}

fn apply_decimal(op: DecimalOp, left: Number, right: Number) -> Bson {
    decimal::to_bson(decimal::apply(
        op,
        decimal_operand(left),
        decimal_operand(right),
    ))
}

/// Applies `op` as aggregation expressions do: int64 overflow falls back to a double.
pub(crate) fn apply_widening(op: ArithOp, left: &Bson, right: &Bson) -> Option<Bson> {
    apply_exact(op, left, right).or_else(|| {
        let (left, right) = (Number::of(left)?, Number::of(right)?);
        Some(Bson::Double(apply_float(op, left.as_f64(), right.as_f64())))
    })
}

fn apply_float(op: ArithOp, left: f64, right: f64) -> f64 {
    match op {
        ArithOp::Add => left + right,
        ArithOp::Subtract => left - right,
        ArithOp::Multiply => left * right,
    }
}

/// The zero of the same numeric type as `value` (`$mul` on a missing field stores it).
pub(crate) fn zero_like(value: &Bson) -> Bson {
    match value {
        Bson::Int64(_) => Bson::Int64(0),
        Bson::Double(_) => Bson::Double(0.0),
        Bson::Decimal128(_) => decimal::to_bson(decimal::from_i64(0)),
        _ => Bson::Int32(0),
    }
}

/// Division as `$divide` computes it: a double, or a decimal if either side is one.
pub(crate) fn divide(left: &Bson, right: &Bson) -> Option<Bson> {
    let widest = width(left)?.max(width(right)?);
    let (left, right) = (Number::of(left)?, Number::of(right)?);
    Some(if widest == Width::Decimal {
        apply_decimal(DecimalOp::Divide, left, right)
    } else {
        Bson::Double(left.as_f64() / right.as_f64())
    })
}

/// Remainder as `$mod` computes it, keeping the widest operand type.
pub(crate) fn remainder(left: &Bson, right: &Bson) -> Option<Bson> {
    let widest = width(left)?.max(width(right)?);
    match (Number::of(left)?, Number::of(right)?) {
        (Number::Int(a), Number::Int(b)) if b != 0 => {
            let result = a.checked_rem(b).unwrap_or(0);
            Some(if widest == Width::Int32 {
                i32::try_from(result).map_or(Bson::Int64(result), Bson::Int32)
            } else {
                Bson::Int64(result)
            })
        }
        (a, b) if widest == Width::Decimal => Some(apply_decimal(DecimalOp::Remainder, a, b)),
        (a, b) => Some(Bson::Double(a.as_f64() % b.as_f64())),
    }
}
