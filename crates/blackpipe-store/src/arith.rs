//! Arithmetic on BSON numbers with mongod's type promotion: int32 widens to int64 on overflow,
//! any double makes the result a double, any decimal a decimal.

use bson::Bson;

use super::value_order::{Number, f64_to_decimal};

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
        Width::Decimal => Some(f64_to_decimal(apply_float(
            op,
            left_number.as_f64(),
            right_number.as_f64(),
        ))),
    }
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
        Bson::Decimal128(_) => f64_to_decimal(0.0),
        _ => Bson::Int32(0),
    }
}

/// Division as `$divide` computes it: a double, or a decimal if either side is one.
pub(crate) fn divide(left: &Bson, right: &Bson) -> Option<Bson> {
    let widest = width(left)?.max(width(right)?);
    let quotient = Number::of(left)?.as_f64() / Number::of(right)?.as_f64();
    Some(if widest == Width::Decimal {
        f64_to_decimal(quotient)
    } else {
        Bson::Double(quotient)
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
        (a, b) => {
            let result = a.as_f64() % b.as_f64();
            Some(if widest == Width::Decimal {
                f64_to_decimal(result)
            } else {
                Bson::Double(result)
            })
        }
    }
}
