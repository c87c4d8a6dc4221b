//! `$toDecimal` and `$toDouble`, with mongod's conversion rules: a double becomes a decimal
//! rounded to 15 significant digits (`$toDecimal: 2.5` is `2.50000000000000`), integers
//! convert exactly, a decimal becomes the nearest double, booleans are 1 or 0, dates their
//! milliseconds, strings are parsed; anything else fails with ConversionFailure.

use bson::Bson;

use super::{is_nullish, type_of};
use crate::arith::decimal_operand;
use crate::code;
use crate::decimal;
use crate::errors::{CommandError, StoreResult};
use crate::value_order::Number;

/// `$toDecimal`: null for null or missing.
pub(super) fn to_decimal(value: Option<&Bson>) -> StoreResult<Option<Bson>> {
    if is_nullish(value) {
        return Ok(Some(Bson::Null));
    }
    let converted = match value {
        Some(Bson::Decimal128(number)) => Bson::Decimal128(*number),
        Some(Bson::Boolean(flag)) => decimal::to_bson(decimal::from_i64(i64::from(*flag))),
        Some(Bson::DateTime(at)) => decimal::to_bson(decimal::from_i64(at.timestamp_millis())),
        Some(Bson::String(text)) => match decimal::parse_text(text) {
            Some(number) => decimal::to_bson(number),
            None => return Err(unparsable(text)),
        },
        Some(other) => match Number::of(other) {
            Some(number) => decimal::to_bson(decimal_operand(number)),
            None => return Err(unsupported(value, "decimal")),
        },
        None => return Err(unsupported(value, "decimal")),
    };
    Ok(Some(converted))
}

/// `$toDouble`: null for null or missing.
pub(super) fn to_double(value: Option<&Bson>) -> StoreResult<Option<Bson>> {
    if is_nullish(value) {
        return Ok(Some(Bson::Null));
    }
    let converted = match value {
        Some(Bson::Boolean(flag)) => f64::from(u8::from(*flag)),
        Some(Bson::DateTime(at)) => {
            // Dates are far inside the range where i64 to f64 is exact to the millisecond.
            #[allow(clippy::cast_precision_loss)]
            let millis = at.timestamp_millis() as f64;
            millis
        }
        Some(Bson::String(text)) => match text.parse::<f64>() {
            Ok(number) => number,
            Err(_) => return Err(unparsable(text)),
        },
        Some(Bson::Decimal128(number)) => {
            let exact = decimal::from_bson(number);
            let double = decimal::to_f64(exact);
            if double.is_infinite() && exact.is_finite() {
                return Err(CommandError::new(
                    code::CONVERSION_FAILURE,
                    "Conversion would overflow target type in $convert with no onError value",
                ));
            }
            double
        }
        Some(other) => match Number::of(other) {
            Some(number) => number.as_f64(),
            None => return Err(unsupported(value, "double")),
        },
        None => return Err(unsupported(value, "double")),
    };
    Ok(Some(Bson::Double(converted)))
}

fn unparsable(text: &str) -> CommandError {
    CommandError::new(
        code::CONVERSION_FAILURE,
        format!("Failed to parse number '{text}' in $convert with no onError value"),
    )
}

fn unsupported(value: Option<&Bson>, target: &str) -> CommandError {
    CommandError::new(
        code::CONVERSION_FAILURE,
        format!(
            "Unsupported conversion from {} to {target} in $convert with no onError value",
            type_of(value)
        ),
    )
}
