//! The arithmetic, string and array operators of aggregation expressions.

use std::cmp::Ordering;

use bson::Bson;

use super::{Operator, is_nullish, type_of};
use crate::arith::{ArithOp, apply_widening, divide, is_number, remainder};
use crate::code;
use crate::errors::{CommandError, StoreResult, check_bson_size, type_name};
use crate::value_order::{Number, compare_values};

pub(super) fn add(values: &[Option<Bson>]) -> StoreResult<Option<Bson>> {
    let mut total = Bson::Int32(0);
    let mut date: Option<i64> = None;
    for value in values {
        match value {
            value if is_nullish(value.as_ref()) => return Ok(Some(Bson::Null)),
            Some(Bson::DateTime(at)) => {
                if date.is_some() {
                    return Err(CommandError::new(
                        code::ADD_TWO_DATES,
                        "only one date allowed in an $add expression",
                    ));
                }
                date = Some(at.timestamp_millis());
            }
            Some(number) if is_number(number) => {
                total = apply_widening(ArithOp::Add, &total, number).unwrap_or(Bson::Null);
            }
            other => {
                return Err(CommandError::new(
                    code::ADD_NOT_NUMBER_OR_DATE,
                    format!(
                        "$add only supports numeric or date types, not {}",
                        type_of(other.as_ref())
                    ),
                ));
            }
        }
    }
    Ok(Some(match date {
        Some(millis) => {
            let offset = Number::of(&total).map_or(0.0, Number::as_f64);
            // Millisecond offsets are rounded like mongod does for date arithmetic.
            #[allow(clippy::cast_possible_truncation)]
            let offset = offset.round() as i64;
            Bson::DateTime(bson::DateTime::from_millis(millis.saturating_add(offset)))
        }
        None => total,
    }))
}

pub(super) fn multiply(values: &[Option<Bson>]) -> StoreResult<Option<Bson>> {
    let mut product = Bson::Int32(1);
    for value in values {
        match value {
            value if is_nullish(value.as_ref()) => return Ok(Some(Bson::Null)),
            Some(number) if is_number(number) => {
                product = apply_widening(ArithOp::Multiply, &product, number).unwrap_or(Bson::Null);
            }
            other => {
                return Err(CommandError::new(
                    code::MULTIPLY_NOT_NUMBER,
                    format!(
                        "$multiply only supports numeric types, not {}",
                        type_of(other.as_ref())
                    ),
                ));
            }
        }
    }
    Ok(Some(product))
}

pub(super) fn subtract(left: Option<&Bson>, right: Option<&Bson>) -> StoreResult<Option<Bson>> {
    if is_nullish(left) || is_nullish(right) {
        return Ok(Some(Bson::Null));
    }
    match (left, right) {
        (Some(Bson::DateTime(a)), Some(Bson::DateTime(b))) => Ok(Some(Bson::Int64(
            a.timestamp_millis().saturating_sub(b.timestamp_millis()),
        ))),
        (Some(Bson::DateTime(a)), Some(number)) if is_number(number) => {
            #[allow(clippy::cast_possible_truncation)]
            let offset = Number::of(number).map_or(0.0, Number::as_f64).round() as i64;
            Ok(Some(Bson::DateTime(bson::DateTime::from_millis(
                a.timestamp_millis().saturating_sub(offset),
            ))))
        }
        (Some(a), Some(b)) if is_number(a) && is_number(b) => {
            Ok(apply_widening(ArithOp::Subtract, a, b))
        }
        (a, b) => Err(CommandError::new(
            code::SUBTRACT_TYPES,
            format!("can't $subtract {} from {}", type_of(b), type_of(a)),
        )),
    }
}

pub(super) fn divide_or_mod(
    operator: Operator,
    left: Option<&Bson>,
    right: Option<&Bson>,
) -> StoreResult<Option<Bson>> {
    if is_nullish(left) || is_nullish(right) {
        return Ok(Some(Bson::Null));
    }
    let (Some(a), Some(b)) = (left, right) else {
        return Ok(Some(Bson::Null));
    };
    let name = if operator == Operator::Divide {
        "$divide"
    } else {
        "$mod"
    };
    if !is_number(a) || !is_number(b) {
        return Err(CommandError::new(
            code::DIVIDE_NOT_NUMBER,
            format!(
                "{name} only supports numeric types, not {} and {}",
                type_name(a),
                type_name(b)
            ),
        ));
    }
    if Number::of(b).is_some_and(|number| number.as_f64() == 0.0) {
        let (code, message) = if operator == Operator::Divide {
            (16608, "can't $divide by zero")
        } else {
            (16610, "can't $mod by 0")
        };
        return Err(CommandError::new(code, message));
    }
    Ok(if operator == Operator::Divide {
        divide(a, b)
    } else {
        remainder(a, b)
    })
}

pub(super) fn concat(values: &[Option<Bson>]) -> StoreResult<Option<Bson>> {
    let mut out = String::new();
    for value in values {
        match value {
            value if is_nullish(value.as_ref()) => return Ok(Some(Bson::Null)),
            Some(Bson::String(text)) => {
                // Checked before growing: doubling a string stage after stage must stop at the
                // limit, not after building a value many times its size.
                check_bson_size(out.len().saturating_add(text.len()))?;
                out.push_str(text);
            }
            other => {
                return Err(CommandError::new(
                    code::CONCAT_NOT_STRING,
                    format!(
                        "$concat only supports strings, not {}",
                        type_of(other.as_ref())
                    ),
                ));
            }
        }
    }
    Ok(Some(Bson::String(out)))
}

pub(super) fn array_elem_at(
    array: Option<&Bson>,
    index: Option<&Bson>,
) -> StoreResult<Option<Bson>> {
    if is_nullish(array) || is_nullish(index) {
        return Ok(Some(Bson::Null));
    }
    let Some(Bson::Array(items)) = array else {
        return Err(CommandError::new(
            code::ARRAY_ELEM_AT_NOT_ARRAY,
            format!(
                "$arrayElemAt's first argument must be an array, but is {}",
                type_of(array)
            ),
        ));
    };
    let position = match index.and_then(Number::of) {
        Some(Number::Int(position)) => position,
        Some(Number::Decimal(_)) if index.and_then(crate::integer::integral).is_some() => {
            index.and_then(crate::integer::integral).unwrap_or_default()
        }
        Some(Number::Float(position)) if position.fract() == 0.0 => {
            #[allow(clippy::cast_possible_truncation)]
            let position = position as i64;
            position
        }
        _ => {
            return Err(CommandError::new(
                code::ARRAY_ELEM_AT_INDEX_NOT_NUMBER,
                format!(
                    "$arrayElemAt's second argument must be a numeric value, but is {}",
                    type_of(index)
                ),
            ));
        }
    };
    let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
    let resolved = if position < 0 {
        len + position
    } else {
        position
    };
    Ok(usize::try_from(resolved)
        .ok()
        .and_then(|position| items.get(position))
        .cloned())
}

pub(super) fn extreme(want_max: bool, values: Vec<Option<Bson>>) -> Option<Bson> {
    // With a single array argument, $min/$max look inside the array.
    let candidates: Vec<Bson> = match values.as_slice() {
        [Some(Bson::Array(items))] => items.clone(),
        _ => values.into_iter().flatten().collect(),
    };
    let best = candidates
        .into_iter()
        .filter(|value| !matches!(value, Bson::Null | Bson::Undefined))
        .reduce(|best, value| {
            let order = compare_values(&value, &best);
            if (want_max && order == Ordering::Greater) || (!want_max && order == Ordering::Less) {
                value
            } else {
                best
            }
        });
    Some(best.unwrap_or(Bson::Null))
}
