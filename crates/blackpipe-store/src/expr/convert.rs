//! Type conversion: `$convert` and its shortcuts `$toBool`, `$toDate`, `$toDecimal`,
//! `$toDouble`, `$toInt`, `$toLong`, `$toObjectId` and `$toString`, plus `$isNumber`.
//!
//! Every pair of mongod's conversion table is modelled; any other pair fails with
//! ConversionFailure (241), which `onError` catches. A double becomes a decimal rounded to 15
//! significant digits (`$toDecimal: 2.5` is `2.50000000000000`) and a string through `%g`
//! (six significant digits), as mongod writes them. Not modelled: the binData conversions and
//! the `format`/`byteOrder` and `to: {type, subtype}` forms that mongod 8.0 added; they are
//! refused as unknown arguments or an unsupported `to`.

use bson::Bson;
use bson::oid::ObjectId;

use super::args::{self, is_absent};
use super::tz::TimeZone;
use super::vars::{Defined, Scope};
use super::{Expr, is_nullish};
use crate::code;
use crate::decimal;
use crate::errors::{CommandError, StoreResult, type_name};
use crate::value_order::Number;

/// `Location50723`: a `$toInt`-style shortcut with more or fewer than one argument.
const SHORTCUT_ARITY: i32 = 50723;

/// The conversion operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConvertOp {
    Convert,
    /// A `$to...` shortcut with the BSON type code it converts to.
    To(&'static str, i32),
    IsNumber,
}

/// BSON type codes, as `to` names them.
mod kind {
    pub(super) const DOUBLE: i32 = 1;
    pub(super) const STRING: i32 = 2;
    pub(super) const OBJECT_ID: i32 = 7;
    pub(super) const BOOL: i32 = 8;
    pub(super) const DATE: i32 = 9;
    pub(super) const INT: i32 = 16;
    pub(super) const LONG: i32 = 18;
    pub(super) const DECIMAL: i32 = 19;
}

impl ConvertOp {
    pub(super) fn from_name(name: &str) -> Option<ConvertOp> {
        Some(match name {
            "$convert" => ConvertOp::Convert,
            "$toDouble" => ConvertOp::To("$toDouble", kind::DOUBLE),
            "$toString" => ConvertOp::To("$toString", kind::STRING),
            "$toObjectId" => ConvertOp::To("$toObjectId", kind::OBJECT_ID),
            "$toBool" => ConvertOp::To("$toBool", kind::BOOL),
            "$toDate" => ConvertOp::To("$toDate", kind::DATE),
            "$toInt" => ConvertOp::To("$toInt", kind::INT),
            "$toLong" => ConvertOp::To("$toLong", kind::LONG),
            "$toDecimal" => ConvertOp::To("$toDecimal", kind::DECIMAL),
            "$isNumber" => ConvertOp::IsNumber,
            _ => return None,
        })
    }
}

/// The BSON type names `to` accepts, with their codes (`missing` is the type `$type` gives a
/// missing value).
const TYPE_NAMES: [(&str, i32); 22] = [
    ("double", 1),
    ("string", 2),
    ("object", 3),
    ("array", 4),
    ("binData", 5),
    ("undefined", 6),
    ("objectId", 7),
    ("bool", 8),
    ("date", 9),
    ("null", 10),
    ("regex", 11),
    ("dbPointer", 12),
    ("javascript", 13),
    ("symbol", 14),
    ("javascriptWithScope", 15),
    ("int", 16),
    ("timestamp", 17),
    ("long", 18),
    ("decimal", 19),
    ("minKey", -1),
    ("maxKey", 127),
    ("missing", 0),
];

fn kind_name(code: i32) -> &'static str {
    TYPE_NAMES
        .iter()
        .find(|(_, number)| *number == code)
        .map_or("eoo", |(name, _)| *name)
}

/// Parses the argument of a conversion operator.
pub(super) fn parse(
    op: ConvertOp,
    name: &str,
    argument: &Bson,
    defined: &Defined,
) -> StoreResult<Vec<Expr>> {
    match op {
        ConvertOp::IsNumber => args::exactly(name, argument, 1, defined),
        ConvertOp::To(..) => {
            let operands = args::positional(argument, defined)?;
            if operands.len() != 1 {
                return Err(CommandError::new(
                    SHORTCUT_ARITY,
                    format!("{name} requires a single argument, got {}", operands.len()),
                ));
            }
            Ok(operands)
        }
        ConvertOp::Convert => {
            let Bson::Document(spec) = argument else {
                return Err(CommandError::failed_to_parse(format!(
                    "$convert expects an object of named arguments but found: {}",
                    type_name(argument)
                )));
            };
            let slots = args::named(
                spec,
                &["input", "to", "onError", "onNull"],
                defined,
                |key| {
                    CommandError::failed_to_parse(format!(
                        "$convert found an unknown argument: {key}"
                    ))
                },
            )?;
            if is_absent(&slots[0]) {
                return Err(CommandError::failed_to_parse(
                    "Missing 'input' parameter to $convert",
                ));
            }
            if is_absent(&slots[1]) {
                return Err(CommandError::failed_to_parse(
                    "Missing 'to' parameter to $convert",
                ));
            }
            Ok(slots)
        }
    }
}

/// Evaluates a conversion operator.
pub(super) fn evaluate(
    op: ConvertOp,
    arguments: &[Expr],
    scope: &Scope,
) -> StoreResult<Option<Bson>> {
    match op {
        ConvertOp::IsNumber => Ok(Some(Bson::Boolean(
            arguments[0]
                .eval(scope)?
                .as_ref()
                .is_some_and(crate::arith::is_number),
        ))),
        ConvertOp::To(_, target) => match arguments[0].eval(scope)? {
            value if is_nullish(value.as_ref()) => Ok(Some(Bson::Null)),
            Some(value) => convert(&value, target).map(Some),
            None => Ok(Some(Bson::Null)),
        },
        ConvertOp::Convert => evaluate_convert(arguments, scope),
    }
}

/// `$convert` (`[input, to, onError, onNull]`): `to` is checked first, then a null input
/// gives `onNull`, a null `to` gives null, and a ConversionFailure gives `onError`.
fn evaluate_convert(arguments: &[Expr], scope: &Scope) -> StoreResult<Option<Bson>> {
    let to = arguments[1].eval(scope)?;
    let input = arguments[0].eval(scope)?;
    let target = match &to {
        value if is_nullish(value.as_ref()) => None,
        Some(value) => Some(target_type(value)?),
        None => None,
    };
    let Some(input) = input.filter(|value| !is_nullish(Some(value))) else {
        return if is_absent(&arguments[3]) {
            Ok(Some(Bson::Null))
        } else {
            arguments[3].eval(scope)
        };
    };
    let Some(target) = target else {
        return Ok(Some(Bson::Null));
    };
    match convert(&input, target) {
        Err(error) if error.code == code::CONVERSION_FAILURE && !is_absent(&arguments[2]) => {
            arguments[2].eval(scope)
        }
        other => other.map(Some),
    }
}

/// The BSON type code `to` names.
fn target_type(to: &Bson) -> StoreResult<i32> {
    match to {
        Bson::String(name) => TYPE_NAMES
            .iter()
            .find(|(known, _)| known == name)
            .map(|(_, number)| *number)
            .ok_or_else(|| CommandError::bad_value(format!("Unknown type name: {name}"))),
        number if crate::arith::is_number(number) => {
            let Some(code) = super::strings::integral32(Some(number)) else {
                return Err(CommandError::failed_to_parse(
                    "In $convert, numeric 'to' argument is not an integer",
                ));
            };
            if !TYPE_NAMES.iter().any(|(_, known)| *known == code) {
                return Err(CommandError::failed_to_parse(format!(
                    "In $convert, numeric value for 'to' does not correspond to a BSON type: {code}"
                )));
            }
            Ok(code)
        }
        other => Err(CommandError::failed_to_parse(format!(
            "$convert's 'to' argument must be a string or number, but is {}",
            type_name(other)
        ))),
    }
}

fn failure(message: impl Into<String>) -> CommandError {
    CommandError::new(code::CONVERSION_FAILURE, message)
}

fn unsupported(value: &Bson, target: i32) -> CommandError {
    failure(format!(
        "Unsupported conversion from {} to {} in $convert with no onError value",
        type_name(value),
        kind_name(target)
    ))
}

fn overflow(shown: &str) -> CommandError {
    failure(format!(
        "Conversion would overflow target type in $convert with no onError value: {shown}"
    ))
}

/// Converts a non-null value to the BSON type `target`.
///
/// # Errors
/// ConversionFailure for a pair outside mongod's table or a value that does not convert.
pub(super) fn convert(value: &Bson, target: i32) -> StoreResult<Bson> {
    let converted = match target {
        kind::DOUBLE => to_double(value)?.map(Bson::Double),
        kind::STRING => to_string(value)?.map(Bson::String),
        kind::OBJECT_ID => to_object_id(value)?,
        kind::BOOL => to_bool(value).map(Bson::Boolean),
        kind::DATE => to_date(value)?.map(super::dates::date),
        kind::INT => to_int(value)?.map(Bson::Int32),
        kind::LONG => to_long(value)?.map(Bson::Int64),
        kind::DECIMAL => to_decimal(value)?,
        _ => None,
    };
    converted.ok_or_else(|| unsupported(value, target))
}

fn to_double(value: &Bson) -> StoreResult<Option<f64>> {
    Ok(Some(match value {
        Bson::Double(number) => *number,
        Bson::Int32(number) => f64::from(*number),
        #[allow(clippy::cast_precision_loss)]
        Bson::Int64(number) => *number as f64,
        Bson::Boolean(flag) => f64::from(u8::from(*flag)),
        #[allow(clippy::cast_precision_loss)]
        Bson::DateTime(at) => at.timestamp_millis() as f64,
        Bson::String(text) => parse_double(text)?,
        Bson::Decimal128(number) => {
            let exact = decimal::from_bson(number);
            let double = decimal::to_f64(exact);
            // Overflow and underflow both fail, as mongod's signalling flags make them.
            let lost = exact.is_finite()
                && !exact.is_zero()
                && (double.is_infinite() || double == 0.0 || double.is_subnormal());
            if lost {
                return Err(overflow(&exact.to_string()));
            }
            double
        }
        _ => return Ok(None),
    }))
}

fn to_string(value: &Bson) -> StoreResult<Option<String>> {
    Ok(Some(match value {
        Bson::Double(number) if number.is_nan() => "NaN".to_owned(),
        Bson::Double(number) if number.is_infinite() => if *number > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        }
        .to_owned(),
        Bson::Double(number) => args::format_g(*number),
        Bson::String(text) => text.clone(),
        Bson::ObjectId(id) => id.to_hex(),
        Bson::Boolean(flag) => flag.to_string(),
        Bson::DateTime(at) => super::date_format::format_date(
            super::date_format::ISO_FORMAT_Z,
            at.timestamp_millis(),
            &TimeZone::Utc,
        )?,
        Bson::Int32(number) => number.to_string(),
        Bson::Int64(number) => number.to_string(),
        Bson::Decimal128(number) => decimal::from_bson(number).to_string(),
        _ => return Ok(None),
    }))
}

fn to_object_id(value: &Bson) -> StoreResult<Option<Bson>> {
    Ok(Some(match value {
        Bson::ObjectId(id) => Bson::ObjectId(*id),
        Bson::String(text) => {
            let reason = if text.len() == 24 {
                match ObjectId::parse_str(text) {
                    Ok(id) => return Ok(Some(Bson::ObjectId(id))),
                    Err(_) => "Invalid character found in hex string".to_owned(),
                }
            } else {
                format!(
                    "Invalid string length for parsing to OID, expected 24 but found {}",
                    text.len()
                )
            };
            return Err(failure(format!(
                "Failed to parse objectId '{text}' in $convert with no onError value: {reason}"
            )));
        }
        _ => return Ok(None),
    }))
}

/// Every type but null converts to a bool: numbers by whether they are zero, the rest to true.
fn to_bool(value: &Bson) -> Option<bool> {
    match value {
        Bson::Boolean(flag) => Some(*flag),
        Bson::Undefined | Bson::Null => None,
        other => Some(Number::of(other).is_none_or(|number| match number {
            Number::Decimal(value) => !value.is_zero(),
            other => other.as_f64() != 0.0,
        })),
    }
}

fn to_date(value: &Bson) -> StoreResult<Option<i64>> {
    Ok(Some(match value {
        Bson::DateTime(_) | Bson::Timestamp(_) | Bson::ObjectId(_) => {
            super::dates::as_date(value).unwrap_or_default()
        }
        Bson::String(text) => super::date_parse::parse_date(text, &TimeZone::Utc)?,
        Bson::Int64(number) => *number,
        Bson::Double(number) => double_to_long(*number)?,
        Bson::Decimal128(number) => decimal_to_long(decimal::from_bson(number))?,
        _ => return Ok(None),
    }))
}

fn check_finite(value: f64) -> StoreResult<()> {
    if value.is_nan() {
        return Err(failure(
            "Attempt to convert NaN value to integer type in $convert with no onError value",
        ));
    }
    if value.is_infinite() {
        return Err(failure(
            "Attempt to convert infinity value to integer type in $convert with no onError value",
        ));
    }
    Ok(())
}

fn double_to_long(value: f64) -> StoreResult<i64> {
    check_finite(value)?;
    // -2^63 converts; 2^63 does not (it is one past the largest long).
    let limit = 2f64.powi(63);
    if !(-limit..limit).contains(&value) {
        return Err(overflow(&args::format_g(value)));
    }
    #[allow(clippy::cast_possible_truncation)]
    Ok(value as i64)
}

fn decimal_to_long(value: dec::Decimal128) -> StoreResult<i64> {
    if value.is_nan() {
        check_finite(f64::NAN)?;
    }
    if value.is_infinite() {
        check_finite(f64::INFINITY)?;
    }
    let mut context = dec::Context::<dec::Decimal128>::default();
    context.set_rounding(dec::Rounding::Down);
    let truncated = context.round(value);
    decimal::exact_i64(truncated).ok_or_else(|| overflow(&value.to_string()))
}

fn to_int(value: &Bson) -> StoreResult<Option<i32>> {
    Ok(Some(match value {
        Bson::Int32(number) => *number,
        Bson::Boolean(flag) => i32::from(*flag),
        Bson::Int64(number) => i32::try_from(*number).map_err(|_| overflow(""))?,
        Bson::Double(number) => {
            check_finite(*number)?;
            if !(f64::from(i32::MIN)..=f64::from(i32::MAX)).contains(number) {
                return Err(overflow(&args::format_g(*number)));
            }
            #[allow(clippy::cast_possible_truncation)]
            let truncated = *number as i32;
            truncated
        }
        Bson::Decimal128(number) => {
            let exact = decimal::from_bson(number);
            let long = decimal_to_long(exact)?;
            i32::try_from(long).map_err(|_| overflow(&exact.to_string()))?
        }
        Bson::String(text) => {
            let parsed = parse_integer(text)?;
            i32::try_from(parsed).map_err(|_| unparsable(text, "Out of range"))?
        }
        _ => return Ok(None),
    }))
}

fn to_long(value: &Bson) -> StoreResult<Option<i64>> {
    Ok(Some(match value {
        Bson::Int32(number) => i64::from(*number),
        Bson::Int64(number) => *number,
        Bson::Boolean(flag) => i64::from(*flag),
        Bson::DateTime(at) => at.timestamp_millis(),
        Bson::Double(number) => double_to_long(*number)?,
        Bson::Decimal128(number) => decimal_to_long(decimal::from_bson(number))?,
        Bson::String(text) => parse_integer(text)?,
        _ => return Ok(None),
    }))
}

fn to_decimal(value: &Bson) -> StoreResult<Option<Bson>> {
    Ok(Some(match value {
        Bson::Decimal128(number) => Bson::Decimal128(*number),
        Bson::Boolean(flag) => decimal::to_bson(decimal::from_i64(i64::from(*flag))),
        Bson::DateTime(at) => decimal::to_bson(decimal::from_i64(at.timestamp_millis())),
        Bson::String(text) => {
            reject_hex(text)?;
            match decimal::parse_text(text) {
                Some(number) => decimal::to_bson(number),
                None => return Err(unparsable(text, "Failed to parse string to decimal")),
            }
        }
        other => match Number::of(other) {
            Some(number) => decimal::to_bson(crate::arith::decimal_operand(number)),
            None => return Ok(None),
        },
    }))
}

fn unparsable(text: &str, reason: &str) -> CommandError {
    failure(format!(
        "Failed to parse number '{text}' in $convert with no onError value: {reason}"
    ))
}

fn reject_hex(text: &str) -> StoreResult<()> {
    if text.starts_with("0x") {
        return Err(failure(format!(
            "Illegal hexadecimal input in $convert with no onError value: {text}"
        )));
    }
    Ok(())
}

/// A base-10 integer: an optional sign and digits, nothing else.
fn parse_integer(text: &str) -> StoreResult<i64> {
    reject_hex(text)?;
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() {
        return Err(unparsable(text, "No digits"));
    }
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(unparsable(text, "Did not consume whole string."));
    }
    text.parse::<i64>()
        .map_err(|_| unparsable(text, "Out of range"))
}

/// A double as `strtod` reads it, the whole string; out of range fails.
fn parse_double(text: &str) -> StoreResult<f64> {
    reject_hex(text)?;
    if text.is_empty() {
        return Err(unparsable(text, "No digits"));
    }
    let value: f64 = text
        .parse()
        .map_err(|_| unparsable(text, "Did not consume whole string."))?;
    let body = text.trim_start_matches(['+', '-']).to_ascii_lowercase();
    let written_infinite = body.starts_with("inf");
    let nonzero_digits = body
        .split(['e', 'E'])
        .next()
        .is_some_and(|mantissa| mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b)));
    let out_of_range =
        (value.is_infinite() && !written_infinite) || (value == 0.0 && nonzero_digits);
    if out_of_range {
        return Err(unparsable(text, "Out of range"));
    }
    Ok(value)
}
