//! The string operators: `$substrCP`, `$substrBytes` (and its alias `$substr`), `$strLenCP`,
//! `$strLenBytes`, `$split`, `$trim`/`$ltrim`/`$rtrim`, `$indexOfCP`, `$indexOfBytes`,
//! `$replaceOne`, `$replaceAll` and `$strcasecmp`.
//!
//! BSON strings reach the store as Rust strings, so always valid UTF-8: mongod's errors for
//! malformed UTF-8 (34456..34459, 40095, 50697/50698) cannot occur; byte offsets that fall
//! inside a code point still fail as mongod's do (28656/28657).

use std::collections::BTreeSet;

use bson::Bson;

use super::args::{self, is_absent};
use super::vars::{Defined, Scope};
use super::{Expr, is_nullish, type_of};
use crate::errors::{CommandError, StoreResult, check_bson_size, format_value, type_name};
use crate::value_order::Number;

/// The string operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StringOp {
    SubstrCP,
    SubstrBytes,
    StrLenCP,
    StrLenBytes,
    Split,
    Trim,
    LTrim,
    RTrim,
    IndexOfCP,
    IndexOfBytes,
    ReplaceOne,
    ReplaceAll,
    Strcasecmp,
}

impl StringOp {
    pub(super) fn from_name(name: &str) -> Option<StringOp> {
        Some(match name {
            "$substrCP" => StringOp::SubstrCP,
            // `$substr` is the deprecated spelling of `$substrBytes`.
            "$substrBytes" | "$substr" => StringOp::SubstrBytes,
            "$strLenCP" => StringOp::StrLenCP,
            "$strLenBytes" => StringOp::StrLenBytes,
            "$split" => StringOp::Split,
            "$trim" => StringOp::Trim,
            "$ltrim" => StringOp::LTrim,
            "$rtrim" => StringOp::RTrim,
            "$indexOfCP" => StringOp::IndexOfCP,
            "$indexOfBytes" => StringOp::IndexOfBytes,
            "$replaceOne" => StringOp::ReplaceOne,
            "$replaceAll" => StringOp::ReplaceAll,
            "$strcasecmp" => StringOp::Strcasecmp,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            StringOp::SubstrCP => "$substrCP",
            StringOp::SubstrBytes => "$substrBytes",
            StringOp::StrLenCP => "$strLenCP",
            StringOp::StrLenBytes => "$strLenBytes",
            StringOp::Split => "$split",
            StringOp::Trim => "$trim",
            StringOp::LTrim => "$ltrim",
            StringOp::RTrim => "$rtrim",
            StringOp::IndexOfCP => "$indexOfCP",
            StringOp::IndexOfBytes => "$indexOfBytes",
            StringOp::ReplaceOne => "$replaceOne",
            StringOp::ReplaceAll => "$replaceAll",
            StringOp::Strcasecmp => "$strcasecmp",
        }
    }
}

/// Parses the argument of a string operator.
pub(super) fn parse(
    op: StringOp,
    name: &str,
    argument: &Bson,
    defined: &Defined,
) -> StoreResult<Vec<Expr>> {
    match op {
        StringOp::SubstrCP | StringOp::SubstrBytes => {
            args::exactly(op.name(), argument, 3, defined)
        }
        StringOp::StrLenCP | StringOp::StrLenBytes => args::exactly(name, argument, 1, defined),
        StringOp::Split | StringOp::Strcasecmp => args::exactly(name, argument, 2, defined),
        StringOp::IndexOfCP | StringOp::IndexOfBytes => {
            args::between(name, argument, 2, 4, defined)
        }
        StringOp::Trim | StringOp::LTrim | StringOp::RTrim => parse_trim(name, argument, defined),
        StringOp::ReplaceOne | StringOp::ReplaceAll => parse_replace(name, argument, defined),
    }
}

fn parse_trim(name: &str, argument: &Bson, defined: &Defined) -> StoreResult<Vec<Expr>> {
    let Bson::Document(spec) = argument else {
        return Err(CommandError::new(
            50696,
            format!(
                "{name} only supports an object as an argument, found {}",
                type_name(argument)
            ),
        ));
    };
    let slots = args::named(spec, &["input", "chars"], defined, |key| {
        CommandError::new(50694, format!("{name} found an unknown argument: {key}"))
    })?;
    if is_absent(&slots[0]) {
        return Err(CommandError::new(
            50695,
            format!("{name} requires an 'input' field"),
        ));
    }
    Ok(slots)
}

fn parse_replace(name: &str, argument: &Bson, defined: &Defined) -> StoreResult<Vec<Expr>> {
    let Bson::Document(spec) = argument else {
        return Err(CommandError::new(
            51751,
            format!(
                "{name} requires an object as an argument, found: {}",
                type_name(argument)
            ),
        ));
    };
    let slots = args::named(spec, &["input", "find", "replacement"], defined, |key| {
        CommandError::new(51750, format!("{name} found an unknown argument: {key}"))
    })?;
    for (position, (field, code)) in [("input", 51749), ("find", 51748), ("replacement", 51747)]
        .into_iter()
        .enumerate()
    {
        if is_absent(&slots[position]) {
            return Err(CommandError::new(
                code,
                format!("{name} requires '{field}' to be specified"),
            ));
        }
    }
    Ok(slots)
}

/// Evaluates a string operator.
pub(super) fn evaluate(
    op: StringOp,
    arguments: &[Expr],
    scope: &Scope,
) -> StoreResult<Option<Bson>> {
    let name = op.name();
    match op {
        StringOp::Trim | StringOp::LTrim | StringOp::RTrim => trim(op, arguments, scope),
        StringOp::ReplaceOne | StringOp::ReplaceAll => replace(op, arguments, scope),
        _ => {
            let values = super::evaluate_all(arguments, scope)?;
            let values: Vec<Option<&Bson>> = values.iter().map(Option::as_ref).collect();
            match op {
                StringOp::SubstrBytes => substr_bytes(name, &values),
                StringOp::SubstrCP => substr_cp(name, &values),
                StringOp::StrLenBytes | StringOp::StrLenCP => str_len(op, values[0]),
                StringOp::Split => split(values[0], values[1], scope),
                StringOp::Strcasecmp => strcasecmp(values[0], values[1]),
                _ => index_of(op, &values),
            }
        }
    }
}

/// A value as mongod's `coerceToString` reads it: null and missing are empty, numbers and
/// dates are written out, other types fail with 16007.
pub(super) fn coerce_to_string(value: Option<&Bson>) -> StoreResult<String> {
    Ok(match value {
        None | Some(Bson::Null | Bson::Undefined) => String::new(),
        Some(Bson::String(text) | Bson::Symbol(text) | Bson::JavaScriptCode(text)) => text.clone(),
        Some(Bson::Int32(number)) => number.to_string(),
        Some(Bson::Int64(number)) => number.to_string(),
        Some(Bson::Double(number)) => args::format_g(*number),
        Some(Bson::Decimal128(number)) => crate::decimal::from_bson(number).to_string(),
        Some(Bson::DateTime(at)) => super::date_format::format_date(
            super::date_format::ISO_FORMAT_Z,
            at.timestamp_millis(),
            &super::tz::TimeZone::Utc,
        )?,
        Some(Bson::Timestamp(ts)) => format!("Timestamp({}, {})", ts.time, ts.increment),
        Some(other) => {
            return Err(CommandError::new(
                16007,
                format!(
                    "can't convert from BSON type {} to String",
                    type_name(other)
                ),
            ));
        }
    })
}

/// A number read as mongod's `coerceToLong` does: doubles truncated, decimals rounded to
/// the nearest even; 16003 for non-numbers.
fn coerce_to_long(value: Option<&Bson>) -> StoreResult<i64> {
    match value.and_then(Number::of) {
        Some(Number::Int(number)) => Ok(number),
        // Saturating, where mongod's cast is undefined.
        #[allow(clippy::cast_possible_truncation)]
        Some(Number::Float(number)) => Ok(number as i64),
        Some(Number::Decimal(number)) => {
            let mut context = dec::Context::<dec::Decimal128>::default();
            context.set_rounding(dec::Rounding::HalfEven);
            let rounded = context.round(number);
            Ok(
                crate::decimal::exact_i64(rounded).unwrap_or(if rounded.is_negative() {
                    i64::MIN
                } else {
                    i64::MAX
                }),
            )
        }
        None => Err(CommandError::new(
            16003,
            format!("can't convert from BSON type {} to long", type_of(value)),
        )),
    }
}

/// An integral number that fits an `i32` (mongod's `Value::integral`).
pub(super) fn integral32(value: Option<&Bson>) -> Option<i32> {
    let number = match value? {
        Bson::Int32(number) => return Some(*number),
        Bson::Int64(number) => return i32::try_from(*number).ok(),
        other => super::dates::integral64(other)?,
    };
    i32::try_from(number).ok()
}

fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

fn substr_bytes(name: &str, values: &[Option<&Bson>]) -> StoreResult<Option<Bson>> {
    let text = coerce_to_string(values[0])?;
    for (value, code, what) in [
        (values[1], 16034, "starting index"),
        (values[2], 16035, "length"),
    ] {
        if !value.is_some_and(crate::arith::is_number) {
            return Err(CommandError::new(
                code,
                format!(
                    "{name}:  {what} must be a numeric type (is BSON type {})",
                    type_of(value)
                ),
            ));
        }
    }
    let start = coerce_to_long(values[1])?;
    let start = usize::try_from(start).map_err(|_| {
        CommandError::new(
            50752,
            format!("{name}:  starting index must be non-negative (got: {start})"),
        )
    })?;
    let length = coerce_to_long(values[2])?;
    let length = usize::try_from(length).unwrap_or(text.len());
    let bytes = text.as_bytes();
    if start < bytes.len() && is_continuation(bytes[start]) {
        return Err(CommandError::new(
            28656,
            format!("{name}:  Invalid range, starting index is a UTF-8 continuation byte."),
        ));
    }
    let end = start.saturating_add(length);
    if end < bytes.len() && is_continuation(bytes[end]) {
        return Err(CommandError::new(
            28657,
            format!("{name}:  Invalid range, ending index is in the middle of a UTF-8 character."),
        ));
    }
    if start >= bytes.len() {
        return Ok(Some(Bson::String(String::new())));
    }
    let end = end.min(bytes.len());
    Ok(Some(Bson::String(text[start..end].to_owned())))
}

fn substr_cp(name: &str, values: &[Option<&Bson>]) -> StoreResult<Option<Bson>> {
    let text = coerce_to_string(values[0])?;
    let checks = [
        (values[1], 34450, 34451, "starting index"),
        (values[2], 34452, 34453, "length"),
    ];
    let mut numbers = [0i32; 2];
    for (slot, (value, not_number, not_integral, what)) in checks.into_iter().enumerate() {
        if !value.is_some_and(crate::arith::is_number) {
            return Err(CommandError::new(
                not_number,
                format!(
                    "{name}: {what} must be a numeric type (is BSON type {})",
                    type_of(value)
                ),
            ));
        }
        numbers[slot] = integral32(value).ok_or_else(|| {
            CommandError::new(
                not_integral,
                format!(
                    "{name}: {what} cannot be represented as a 32-bit integral value: {}",
                    value.map(format_value).unwrap_or_default()
                ),
            )
        })?;
    }
    let [start, length] = numbers;
    if length < 0 {
        return Err(CommandError::new(
            34454,
            format!("{name}: length must be a nonnegative integer."),
        ));
    }
    let start = usize::try_from(start).map_err(|_| {
        CommandError::new(
            34455,
            format!("{name}: the starting index must be nonnegative integer."),
        )
    })?;
    let length = usize::try_from(length).unwrap_or_default();
    Ok(Some(Bson::String(
        text.chars().skip(start).take(length).collect(),
    )))
}

fn str_len(op: StringOp, value: Option<&Bson>) -> StoreResult<Option<Bson>> {
    let Some(Bson::String(text)) = value else {
        let code = if op == StringOp::StrLenBytes {
            34473
        } else {
            34471
        };
        return Err(CommandError::new(
            code,
            format!(
                "{} requires a string argument, found: {}",
                op.name(),
                type_of(value)
            ),
        ));
    };
    let length = if op == StringOp::StrLenBytes {
        text.len()
    } else {
        text.chars().count()
    };
    // A string in a document is under 16 MiB, so its length fits an int.
    Ok(Some(Bson::Int32(i32::try_from(length).unwrap_or(i32::MAX))))
}

fn split(
    input: Option<&Bson>,
    separator: Option<&Bson>,
    scope: &Scope,
) -> StoreResult<Option<Bson>> {
    if is_nullish(input) || is_nullish(separator) {
        return Ok(Some(Bson::Null));
    }
    let Some(Bson::String(input)) = input else {
        return Err(CommandError::new(
            40085,
            format!(
                "$split requires an expression that evaluates to a string as a first argument, \
                 found: {}",
                type_of(input)
            ),
        ));
    };
    let Some(Bson::String(separator)) = separator else {
        return Err(CommandError::new(
            40086,
            format!(
                "$split requires an expression that evaluates to a string as a second argument, \
                 found: {}",
                type_of(separator)
            ),
        ));
    };
    if separator.is_empty() {
        return Err(CommandError::new(
            40087,
            "$split requires a non-empty separator",
        ));
    }
    let mut out = Vec::new();
    // Each piece costs its bytes plus an element header: bounded like any built array.
    let mut size = 5usize;
    for piece in input.split(separator.as_str()) {
        size = size.saturating_add(piece.len() + 8 + crate::value_order::decimal_digits(out.len()));
        check_bson_size(size)?;
        // Each piece is a value built, so a `$split` in every iteration of a `$map` counts.
        scope.charge(1 + piece.len() / 16)?;
        out.push(Bson::String(piece.to_owned()));
    }
    Ok(Some(Bson::Array(out)))
}

fn strcasecmp(left: Option<&Bson>, right: Option<&Bson>) -> StoreResult<Option<Bson>> {
    // mongod upper-cases ASCII letters only, then compares bytes.
    let left = coerce_to_string(left)?.to_ascii_uppercase();
    let right = coerce_to_string(right)?.to_ascii_uppercase();
    Ok(Some(Bson::Int32(match left.cmp(&right) {
        std::cmp::Ordering::Less => -1,
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Greater => 1,
    })))
}

/// A start or end index of `$indexOfBytes`/`$indexOfCP`.
fn index_argument(op: StringOp, value: Option<&Bson>, what: &str) -> StoreResult<usize> {
    let Some(number) = integral32(value) else {
        return Err(CommandError::new(
            40096,
            format!(
                "{}requires an integral {what}, found a value of type: {}, with value: {}",
                op.name(),
                type_of(value),
                value.map(format_value).unwrap_or_default()
            ),
        ));
    };
    usize::try_from(number).map_err(|_| {
        CommandError::new(
            40097,
            format!(
                "{} requires a nonnegative {what}, found: {number}",
                op.name()
            ),
        )
    })
}

fn index_of(op: StringOp, values: &[Option<&Bson>]) -> StoreResult<Option<Bson>> {
    let bytes = op == StringOp::IndexOfBytes;
    let (first, second) = if bytes {
        (40091, 40092)
    } else {
        (40093, 40094)
    };
    if is_nullish(values[0]) {
        return Ok(Some(Bson::Null));
    }
    let Some(Bson::String(input)) = values[0] else {
        return Err(CommandError::new(
            first,
            format!(
                "{} requires a string as the first argument, found: {}",
                op.name(),
                type_of(values[0])
            ),
        ));
    };
    let Some(Bson::String(token)) = values[1] else {
        return Err(CommandError::new(
            second,
            format!(
                "{} requires a string as the second argument, found: {}",
                op.name(),
                type_of(values[1])
            ),
        ));
    };
    let start = match values.get(2) {
        Some(value) => index_argument(op, *value, "starting index")?,
        None => 0,
    };
    if bytes {
        let end = match values.get(3) {
            Some(value) => index_argument(op, *value, "ending index")?.min(input.len()),
            None => input.len(),
        };
        if start > input.len() || end < start {
            return Ok(Some(Bson::Int32(-1)));
        }
        if token.is_empty() {
            return Ok(Some(position(Some(start))));
        }
        // A match of a (UTF-8) token starts on a character boundary, so a linear string search
        // from the first boundary at or after `start` finds the first match (comparing at every
        // byte is quadratic on hostile input); a later match ends later, so past `end` is none.
        let from = (start..input.len())
            .find(|&at| input.is_char_boundary(at))
            .unwrap_or(input.len());
        let found = input[from..]
            .find(token.as_str())
            .map(|at| at + from)
            .filter(|at| at + token.len() <= end);
        return Ok(Some(position(found)));
    }
    // Byte offsets of each code point, and of the end.
    let units: Vec<usize> = input
        .char_indices()
        .map(|(at, _)| at)
        .chain([input.len()])
        .collect();
    let length = units.len() - 1;
    let end = match values.get(3) {
        Some(value) => index_argument(op, *value, "ending index")?.min(length),
        None => length,
    };
    if end < start {
        return Ok(Some(Bson::Int32(-1)));
    }
    if start == 0 && input.is_empty() && token.is_empty() {
        return Ok(Some(Bson::Int32(0)));
    }
    if token.is_empty() {
        return Ok(Some(position((start < end).then_some(start))));
    }
    // A match may run past `end` (mongod only bounds where it starts); searched linearly, then
    // turned back into a code point index.
    let from = units[start];
    let found = input[from..]
        .find(token.as_str())
        .and_then(|at| units.binary_search(&(at + from)).ok())
        .filter(|&unit| unit < end);
    Ok(Some(position(found)))
}

fn position(found: Option<usize>) -> Bson {
    Bson::Int32(found.map_or(-1, |at| i32::try_from(at).unwrap_or(i32::MAX)))
}

/// The default characters `$trim` removes: NUL, ASCII whitespace, and the Unicode spaces.
const WHITESPACE: [char; 20] = [
    '\0', ' ', '\t', '\n', '\u{0B}', '\u{0C}', '\r', '\u{A0}', '\u{1680}', '\u{2000}', '\u{2001}',
    '\u{2002}', '\u{2003}', '\u{2004}', '\u{2005}', '\u{2006}', '\u{2007}', '\u{2008}', '\u{2009}',
    '\u{200A}',
];

fn trim(op: StringOp, arguments: &[Expr], scope: &Scope) -> StoreResult<Option<Bson>> {
    let name = op.name();
    let input = match arguments[0].eval(scope)? {
        value if is_nullish(value.as_ref()) => return Ok(Some(Bson::Null)),
        Some(Bson::String(text)) => text,
        Some(other) => {
            return Err(CommandError::new(
                50699,
                format!(
                    "{name} requires its input to be a string, got {} (of type {}) instead.",
                    format_value(&other),
                    type_name(&other)
                ),
            ));
        }
        None => return Ok(Some(Bson::Null)),
    };
    // A set: testing each character against a long `chars` list would be quadratic.
    let chars: BTreeSet<char> = if is_absent(&arguments[1]) {
        WHITESPACE.into_iter().collect()
    } else {
        match arguments[1].eval(scope)? {
            value if is_nullish(value.as_ref()) => return Ok(Some(Bson::Null)),
            Some(Bson::String(text)) => text.chars().collect(),
            Some(other) => {
                return Err(CommandError::new(
                    50700,
                    format!(
                        "{name} requires 'chars' to be a string, got {} (of type {}) instead.",
                        format_value(&other),
                        type_name(&other)
                    ),
                ));
            }
            None => return Ok(Some(Bson::Null)),
        }
    };
    let mut trimmed = input.as_str();
    if op != StringOp::RTrim {
        trimmed = trimmed.trim_start_matches(|c| chars.contains(&c));
    }
    if op != StringOp::LTrim {
        trimmed = trimmed.trim_end_matches(|c| chars.contains(&c));
    }
    Ok(Some(Bson::String(trimmed.to_owned())))
}

fn replace(op: StringOp, arguments: &[Expr], scope: &Scope) -> StoreResult<Option<Bson>> {
    let name = op.name();
    let values = super::evaluate_all(arguments, scope)?;
    let checks = [("input", 51746), ("find", 51745), ("replacement", 51744)];
    for (value, (field, code)) in values.iter().zip(checks) {
        if !is_nullish(value.as_ref()) && !matches!(value, Some(Bson::String(_))) {
            return Err(CommandError::new(
                code,
                format!(
                    "{name} requires that '{field}' be a string, found: {}",
                    value.as_ref().map(format_value).unwrap_or_default()
                ),
            ));
        }
    }
    let [
        Some(Bson::String(input)),
        Some(Bson::String(find)),
        Some(Bson::String(replacement)),
    ] = values.as_slice()
    else {
        return Ok(Some(Bson::Null));
    };
    if op == StringOp::ReplaceOne {
        let size = input.len().saturating_add(replacement.len());
        check_bson_size(size)?;
        scope.charge(1 + size / 16)?;
        return Ok(Some(Bson::String(input.replacen(
            find.as_str(),
            replacement,
            1,
        ))));
    }
    // Bounded before building: an empty `find` inserts the replacement between every byte.
    let matches = if find.is_empty() {
        input.len() + 1
    } else {
        input.matches(find.as_str()).count()
    };
    let size = input
        .len()
        .saturating_add(matches.saturating_mul(replacement.len()));
    check_bson_size(size)?;
    // The string built, one unit a match: a `$replaceAll` in a loop can build 16 MiB per
    // iteration from a small input.
    scope.charge(1 + matches + size / 16)?;
    if find.is_empty() {
        let mut out = String::with_capacity(size);
        for c in input.chars() {
            out.push_str(replacement);
            out.push(c);
        }
        out.push_str(replacement);
        return Ok(Some(Bson::String(out)));
    }
    Ok(Some(Bson::String(
        input.replace(find.as_str(), replacement),
    )))
}
