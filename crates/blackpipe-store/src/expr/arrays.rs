//! The array operators: `$concatArrays`, `$slice`, `$reverseArray`, `$range`, `$indexOfArray`,
//! `$first`/`$last` (the expression forms), `$arrayToObject`, `$objectToArray` and `$zip`.
//!
//! Each evaluates its own arguments, in mongod's order, so that which error is reported and
//! which arguments are evaluated at all match mongod's.

use std::fmt::Write as _;

use bson::{Bson, Document};

use super::iterate::int32_of;
use super::vars::{Defined, Scope};
use super::{EMPTY_DOCUMENT_BYTES, Expr, grown_size, is_nullish, type_of};
use crate::code;
use crate::errors::{CommandError, StoreResult, check_bson_size, format_value, type_name};
use crate::value_order::{Number, compare_values, decimal_digits};

/// A value as mongod's `Value::toString` prints it in messages (`MISSING` when missing).
pub(super) fn value_text(value: Option<&Bson>) -> String {
    value.map_or_else(|| "MISSING".to_owned(), format_value)
}

/// A double as C++ streams print it by default (six significant digits, `%g` style), which is
/// how mongod prints `coerceToDouble()` in some messages (`1.5`, `3e+09`).
pub(super) fn cpp_double(number: f64) -> String {
    if number.is_nan() {
        return "nan".to_owned();
    }
    if number.is_infinite() {
        return if number > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    if number == 0.0 {
        return if number.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    let scientific = format!("{number:.5e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let trim = |text: &str| -> String {
        if text.contains('.') {
            text.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            text.to_owned()
        }
    };
    if !(-4..6).contains(&exponent) {
        let mut out = trim(mantissa);
        let sign = if exponent < 0 { '-' } else { '+' };
        let _ = write!(out, "e{sign}{:02}", exponent.abs());
        return out;
    }
    let decimals = usize::try_from(5 - exponent).unwrap_or(0);
    trim(&format!("{number:.decimals$}"))
}

/// `$concatArrays`: null as soon as an argument is null or missing.
pub(super) fn concat_arrays(arguments: &[Expr], scope: &Scope) -> StoreResult<Option<Bson>> {
    let mut out = Vec::new();
    let mut size = EMPTY_DOCUMENT_BYTES;
    for argument in arguments {
        let items = match argument.eval(scope)? {
            value if is_nullish(value.as_ref()) => return Ok(Some(Bson::Null)),
            Some(Bson::Array(items)) => items,
            other => {
                return Err(CommandError::new(
                    code::CONCAT_ARRAYS_NOT_ARRAY,
                    format!(
                        "$concatArrays only supports arrays, not {}",
                        type_of(other.as_ref())
                    ),
                ));
            }
        };
        scope.charge(items.len())?;
        for item in items {
            size = grown_size(size, decimal_digits(out.len()), &item)?;
            out.push(item);
        }
    }
    Ok(Some(Bson::Array(out)))
}

/// `$slice` with two (`[array, n]`) or three (`[array, position, n]`) arguments.
pub(super) fn slice(arguments: &[Expr], scope: &Scope) -> StoreResult<Option<Bson>> {
    let array = arguments[0].eval(scope)?;
    let second = arguments[1].eval(scope)?;
    if is_nullish(array.as_ref()) || is_nullish(second.as_ref()) {
        return Ok(Some(Bson::Null));
    }
    let Some(Bson::Array(items)) = array else {
        return Err(CommandError::new(
            code::SLICE_NOT_ARRAY,
            format!(
                "First argument to $slice must be an array, but is of type: {}",
                type_of(array.as_ref())
            ),
        ));
    };
    let second = slice_int(second.as_ref(), "Second", code::SLICE_SECOND_NOT_NUMBER)?;
    let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
    let (start, end) = if let Some(third) = arguments.get(2) {
        let start = if second < 0 {
            (len + second).max(0)
        } else {
            second.min(len)
        };
        let third = third.eval(scope)?;
        if is_nullish(third.as_ref()) {
            return Ok(Some(Bson::Null));
        }
        let count = slice_int(third.as_ref(), "Third", code::SLICE_THIRD_NOT_NUMBER)?;
        if count <= 0 {
            return Err(CommandError::new(
                code::SLICE_THIRD_NOT_POSITIVE,
                format!("Third argument to $slice must be positive: {count}"),
            ));
        }
        (start, (start + count).min(len))
    } else if second >= 0 {
        (0, second.min(len))
    } else {
        ((len + second).max(0), len)
    };
    let (start, end) = (as_index(start), as_index(end));
    scope.charge(end - start)?;
    Ok(Some(Bson::Array(
        items.into_iter().take(end).skip(start).collect(),
    )))
}

fn as_index(position: i64) -> usize {
    usize::try_from(position).unwrap_or(0)
}

/// A `$slice` count or position: a number with a 32-bit integer value.
fn slice_int(value: Option<&Bson>, which: &str, not_number: i32) -> StoreResult<i64> {
    let Some(number) = value.and_then(Number::of) else {
        let message = if which == "Second" {
            "Second argument to $slice must be a numeric value, but is of type: "
        } else {
            "Third argument to $slice must be numeric, but is of type: "
        };
        return Err(CommandError::new(
            not_number,
            format!("{message}{}", type_of(value)),
        ));
    };
    match value.and_then(int32_of) {
        Some(integer) => Ok(i64::from(integer)),
        None => Err(CommandError::new(
            not_number + 1,
            format!(
                "{which} argument to $slice can't be represented as a 32-bit integer: {}",
                cpp_double(number.as_f64())
            ),
        )),
    }
}

/// `$reverseArray`.
pub(super) fn reverse_array(arguments: &[Expr], scope: &Scope) -> StoreResult<Option<Bson>> {
    match arguments[0].eval(scope)? {
        value if is_nullish(value.as_ref()) => Ok(Some(Bson::Null)),
        Some(Bson::Array(mut items)) => {
            scope.charge(items.len())?;
            items.reverse();
            Ok(Some(Bson::Array(items)))
        }
        other => Err(CommandError::new(
            code::REVERSE_ARRAY_NOT_ARRAY,
            format!(
                "The argument to $reverseArray must be an array, but was of type: {}",
                type_of(other.as_ref())
            ),
        )),
    }
}

/// mongod's `internalQueryMaxRangeBytes`: `$range` refuses to build more than this.
const MAX_RANGE_BYTES: i64 = 100 * 1024 * 1024;

/// What mongod charges a `$range` element (`sizeof(Value)`) and the array (`sizeof(vector)`).
const RANGE_VALUE_BYTES: i64 = 16;
const RANGE_VECTOR_BYTES: i64 = 24;

/// `$range`: `[start, end)` by `step` (1 by default), all 32-bit integers.
pub(super) fn range(arguments: &[Expr], scope: &Scope) -> StoreResult<Option<Bson>> {
    let start = arguments[0].eval(scope)?;
    let end = arguments[1].eval(scope)?;
    let start = range_int(start.as_ref(), "starting", code::RANGE_START_NOT_NUMBER)?;
    let end = range_int(end.as_ref(), "ending", code::RANGE_END_NOT_NUMBER)?;
    let step = match arguments.get(2) {
        Some(step) => {
            let step = range_int(
                step.eval(scope)?.as_ref(),
                "step",
                code::RANGE_STEP_NOT_NUMBER,
            )?;
            if step == 0 {
                return Err(CommandError::new(
                    code::RANGE_STEP_ZERO,
                    "$range requires a non-zero step value",
                ));
            }
            step
        }
        None => 1,
    };
    // mongod's estimate (one element too many when `end - start` is a multiple of `step`).
    let steps = (end - start) / step;
    let estimated = if steps >= 0 { 1 + steps } else { 0 };
    let needed = RANGE_VECTOR_BYTES + estimated * RANGE_VALUE_BYTES;
    if needed >= MAX_RANGE_BYTES {
        return Err(CommandError::new(
            code::EXCEEDED_MEMORY_LIMIT,
            format!(
                "$range would use too much memory ({needed} bytes) and cannot spill to disk. \
                 Memory limit: {MAX_RANGE_BYTES} bytes"
            ),
        ));
    }
    let count = if (step > 0 && end > start) || (step < 0 && end < start) {
        (end - start + step - step.signum()) / step
    } else {
        0
    };
    let count = as_index(count);
    // blackpipe builds no value past the BSON limit, which mongod's 100 MiB allows.
    check_bson_size(int32_array_size(count))?;
    scope.charge(count)?;
    let out = (0..count)
        .scan(start, |current, _| {
            let value = *current;
            *current += step;
            i32::try_from(value).ok().map(Bson::Int32)
        })
        .collect();
    Ok(Some(Bson::Array(out)))
}

/// The encoded size of an array of `count` int32s (5 bytes of framing, then per element a type
/// byte, the index's digits, a NUL and 4 bytes).
fn int32_array_size(count: usize) -> usize {
    let mut size = EMPTY_DOCUMENT_BYTES;
    let mut band_start = 0usize;
    let mut digits = 1usize;
    while band_start < count {
        let band_end = band_start.saturating_mul(10).max(10).min(count);
        size = size.saturating_add((band_end - band_start).saturating_mul(digits + 6));
        band_start = band_end;
        digits += 1;
    }
    size
}

/// A `$range` bound or step: a number with a 32-bit integer value.
fn range_int(value: Option<&Bson>, which: &str, not_number: i32) -> StoreResult<i64> {
    let what = match which {
        "starting" => "a starting value",
        "ending" => "an ending value",
        _ => "a step value",
    };
    if value.and_then(Number::of).is_none() {
        let numeric = if which == "step" {
            "a numeric step value".to_owned()
        } else {
            format!("a numeric {which} value")
        };
        return Err(CommandError::new(
            not_number,
            format!(
                "$range requires {numeric}, found value of type: {}",
                type_of(value)
            ),
        ));
    }
    match value.and_then(int32_of) {
        Some(integer) => Ok(i64::from(integer)),
        None => Err(CommandError::new(
            not_number + 1,
            format!(
                "$range requires {what} that can be represented as a 32-bit integer, found \
                 value: {}",
                value_text(value)
            ),
        )),
    }
}

/// `$indexOfArray: [array, value, start?, end?]`: the first index of `value` in
/// `array[start..end]`, or -1.
pub(super) fn index_of_array(arguments: &[Expr], scope: &Scope) -> StoreResult<Option<Bson>> {
    let items = match arguments[0].eval(scope)? {
        value if is_nullish(value.as_ref()) => return Ok(Some(Bson::Null)),
        Some(Bson::Array(items)) => items,
        other => {
            return Err(CommandError::new(
                code::INDEX_OF_ARRAY_NOT_ARRAY,
                format!(
                    "$indexOfArray requires an array as a first argument, found: {}",
                    type_of(other.as_ref())
                ),
            ));
        }
    };
    // mongod evaluates the bounds before the value searched for.
    let start = match arguments.get(2) {
        Some(start) => array_bound(start.eval(scope)?.as_ref(), "starting")?,
        None => 0,
    };
    let end = match arguments.get(3) {
        Some(end) => array_bound(end.eval(scope)?.as_ref(), "ending")?.min(items.len()),
        None => items.len(),
    };
    let needle = arguments[1].eval(scope)?.unwrap_or(Bson::Undefined);
    scope.charge(end.saturating_sub(start))?;
    let found = items
        .get(start..end.max(start))
        .and_then(|window| {
            window
                .iter()
                .position(|item| compare_values(item, &needle).is_eq())
        })
        .map(|position| position + start);
    Ok(Some(Bson::Int32(found.map_or(-1, |position| {
        i32::try_from(position).unwrap_or(i32::MAX)
    }))))
}

fn array_bound(value: Option<&Bson>, which: &str) -> StoreResult<usize> {
    let Some(bound) = value.and_then(int32_of) else {
        return Err(CommandError::new(
            code::INDEX_OF_ARRAY_INDEX_NOT_INTEGRAL,
            format!(
                "$indexOfArray requires an integral {which} index, found a value of type: {}, \
                 with value: {}",
                type_of(value),
                value_text(value)
            ),
        ));
    };
    usize::try_from(bound).map_err(|_| {
        CommandError::new(
            code::INDEX_OF_ARRAY_INDEX_NEGATIVE,
            format!("$indexOfArray requires a nonnegative {which} index, found: {bound}"),
        )
    })
}

/// `$first` and `$last` on an array: missing for an empty array, null for null or missing.
pub(super) fn first_or_last(
    last: bool,
    arguments: &[Expr],
    scope: &Scope,
) -> StoreResult<Option<Bson>> {
    let name = if last { "$last" } else { "$first" };
    match arguments[0].eval(scope)? {
        value if is_nullish(value.as_ref()) => Ok(Some(Bson::Null)),
        Some(Bson::Array(mut items)) => Ok(if last {
            items.pop()
        } else {
            items.into_iter().next()
        }),
        other => Err(CommandError::new(
            code::ARRAY_ELEM_AT_NOT_ARRAY,
            format!(
                "{name}'s argument must be an array, but is {}",
                type_of(other.as_ref())
            ),
        )),
    }
}

/// `$objectToArray`: `{a: 1}` becomes `[{k: "a", v: 1}]`.
pub(super) fn object_to_array(arguments: &[Expr], scope: &Scope) -> StoreResult<Option<Bson>> {
    let document = match arguments[0].eval(scope)? {
        value if is_nullish(value.as_ref()) => return Ok(Some(Bson::Null)),
        Some(Bson::Document(document)) => document,
        other => {
            return Err(CommandError::new(
                code::OBJECT_TO_ARRAY_NOT_OBJECT,
                format!(
                    "$objectToArray requires a document input, found: {}",
                    type_of(other.as_ref())
                ),
            ));
        }
    };
    scope.charge(document.len())?;
    let mut out = Vec::with_capacity(document.len());
    let mut size = EMPTY_DOCUMENT_BYTES;
    for (key, value) in document {
        let mut pair = Document::new();
        pair.insert("k", key);
        pair.insert("v", value);
        let pair = Bson::Document(pair);
        // Each pair adds framing, so the array can outgrow the document it came from.
        size = grown_size(size, decimal_digits(out.len()), &pair)?;
        out.push(pair);
    }
    Ok(Some(Bson::Array(out)))
}

/// `$arrayToObject`: `[[k, v], ...]` or `[{k, v}, ...]`, the first element setting the format;
/// a repeated key keeps its first position and takes the last value.
pub(super) fn array_to_object(arguments: &[Expr], scope: &Scope) -> StoreResult<Option<Bson>> {
    let items = match arguments[0].eval(scope)? {
        value if is_nullish(value.as_ref()) => return Ok(Some(Bson::Null)),
        Some(Bson::Array(items)) => items,
        other => {
            return Err(CommandError::new(
                code::ARRAY_TO_OBJECT_NOT_ARRAY,
                format!(
                    "$arrayToObject requires an array input, found: {}",
                    type_of(other.as_ref())
                ),
            ));
        }
    };
    scope.charge(items.len())?;
    let pairs_are_arrays = match items.first() {
        None => return Ok(Some(Bson::Document(Document::new()))),
        Some(Bson::Array(_)) => true,
        Some(Bson::Document(_)) => false,
        Some(other) => {
            return Err(CommandError::new(
                code::ARRAY_TO_OBJECT_BAD_FORMAT,
                format!(
                    "Unrecognised input type format for $arrayToObject: {}",
                    type_name(other)
                ),
            ));
        }
    };
    let mut out = Document::new();
    for item in items {
        let (key, value) = if pairs_are_arrays {
            array_pair(item)?
        } else {
            document_pair(item)?
        };
        out.insert(key, value);
    }
    Ok(Some(Bson::Document(out)))
}

fn array_pair(item: Bson) -> StoreResult<(String, Bson)> {
    let Bson::Array(pair) = item else {
        return Err(CommandError::new(
            code::ARRAY_TO_OBJECT_EXPECTED_ARRAY,
            format!(
                "$arrayToObject requires a consistent input format. Elements mustall be arrays \
                 or all be objects. Array was detected, now found: {}",
                type_name(&item)
            ),
        ));
    };
    let [key, value]: [Bson; 2] = match pair.try_into() {
        Ok(pair) => pair,
        Err(pair) => {
            return Err(CommandError::new(
                code::ARRAY_TO_OBJECT_PAIR_SIZE,
                format!(
                    "$arrayToObject requires an array of size 2 arrays,found array of size: {}",
                    pair.len()
                ),
            ));
        }
    };
    let Bson::String(key) = key else {
        return Err(CommandError::new(
            code::ARRAY_TO_OBJECT_KEY_NOT_STRING,
            format!(
                "$arrayToObject requires an array of key-value pairs, where the key must be of \
                 type string. Found key type: {}",
                type_name(&key)
            ),
        ));
    };
    if key.contains('\0') {
        return Err(CommandError::new(
            code::ARRAY_TO_OBJECT_KEY_NUL,
            "Key field cannot contain an embedded null byte",
        ));
    }
    Ok((key, value))
}

fn document_pair(item: Bson) -> StoreResult<(String, Bson)> {
    let Bson::Document(mut pair) = item else {
        return Err(CommandError::new(
            code::ARRAY_TO_OBJECT_EXPECTED_OBJECT,
            format!(
                "$arrayToObject requires a consistent input format. Elements mustall be arrays \
                 or all be objects. Object was detected, now found: {}",
                type_name(&item)
            ),
        ));
    };
    if pair.len() != 2 {
        return Err(CommandError::new(
            code::ARRAY_TO_OBJECT_FIELD_COUNT,
            format!(
                "$arrayToObject requires an object keys of 'k' and 'v'. Found incorrect number \
                 of keys:{}",
                pair.len()
            ),
        ));
    }
    let (Some(key), Some(value)) = (pair.get("k").cloned(), pair.get("v").cloned()) else {
        return Err(CommandError::new(
            code::ARRAY_TO_OBJECT_WITHOUT_K_OR_V,
            format!(
                "$arrayToObject requires an object with keys 'k' and 'v'. Missing either or both \
                 keys from: {}",
                crate::errors::format_document(&pair)
            ),
        ));
    };
    pair.clear();
    let Bson::String(key) = key else {
        return Err(CommandError::new(
            code::ARRAY_TO_OBJECT_K_NOT_STRING,
            format!(
                "$arrayToObject requires an object with keys 'k' and 'v', where the value of 'k' \
                 must be of type string. Found type: {}",
                type_name(&key)
            ),
        ));
    };
    if key.contains('\0') {
        return Err(CommandError::new(
            code::ARRAY_TO_OBJECT_K_NUL,
            "Key field cannot contain an embedded null byte",
        ));
    }
    Ok((key, value))
}

/// A parsed `$zip`.
#[derive(Debug, Clone)]
pub(crate) struct Zip {
    inputs: Vec<Expr>,
    defaults: Vec<Expr>,
    longest: bool,
}

impl Zip {
    /// Parses `{inputs: [...], useLongestLength?, defaults?}`.
    pub(super) fn parse(argument: &Bson, defined: &Defined) -> StoreResult<Zip> {
        let Bson::Document(spec) = argument else {
            return Err(CommandError::new(
                code::ZIP_NOT_OBJECT,
                format!(
                    "$zip only supports an object as an argument, found {}",
                    type_name(argument)
                ),
            ));
        };
        let mut zip = Zip {
            inputs: Vec::new(),
            defaults: Vec::new(),
            longest: false,
        };
        for (key, value) in spec {
            match (key.as_str(), value) {
                ("inputs", Bson::Array(items)) => zip.inputs = parse_all(items, defined)?,
                ("inputs", other) => {
                    return Err(CommandError::new(
                        code::ZIP_INPUTS_NOT_ARRAY,
                        format!(
                            "inputs must be an array of expressions, found {}",
                            type_name(other)
                        ),
                    ));
                }
                ("defaults", Bson::Array(items)) => zip.defaults = parse_all(items, defined)?,
                ("defaults", other) => {
                    return Err(CommandError::new(
                        code::ZIP_DEFAULTS_NOT_ARRAY,
                        format!(
                            "defaults must be an array of expressions, found {}",
                            type_name(other)
                        ),
                    ));
                }
                ("useLongestLength", Bson::Boolean(flag)) => zip.longest = *flag,
                ("useLongestLength", _) => {
                    // mongod names the type of `$zip`'s whole argument here, not the flag's.
                    return Err(CommandError::new(
                        code::ZIP_LONGEST_NOT_BOOL,
                        "useLongestLength must be a bool, found object",
                    ));
                }
                _ => {
                    return Err(CommandError::new(
                        code::ZIP_UNKNOWN_ARGUMENT,
                        format!("$zip found an unknown argument: {key}"),
                    ));
                }
            }
        }
        zip.check()?;
        Ok(zip)
    }

    fn check(&self) -> StoreResult<()> {
        if self.inputs.is_empty() {
            return Err(CommandError::new(
                code::ZIP_WITHOUT_INPUTS,
                "$zip requires at least one input array",
            ));
        }
        if !self.longest && !self.defaults.is_empty() {
            return Err(CommandError::new(
                code::ZIP_DEFAULTS_WITHOUT_LONGEST,
                "cannot specify defaults unless useLongestLength is true",
            ));
        }
        if !self.defaults.is_empty() && self.defaults.len() != self.inputs.len() {
            return Err(CommandError::new(
                code::ZIP_DEFAULTS_LENGTH,
                "defaults and inputs must have the same length",
            ));
        }
        Ok(())
    }

    pub(super) fn evaluate(&self, scope: &Scope) -> StoreResult<Option<Bson>> {
        let mut arrays = Vec::with_capacity(self.inputs.len());
        for input in &self.inputs {
            match input.eval(scope)? {
                value if is_nullish(value.as_ref()) => return Ok(Some(Bson::Null)),
                Some(Bson::Array(items)) => arrays.push(items),
                other => {
                    return Err(CommandError::new(
                        code::ZIP_INPUT_NOT_ARRAY,
                        format!(
                            "$zip found a non-array expression in input: {}",
                            value_text(other.as_ref())
                        ),
                    ));
                }
            }
        }
        let shortest = arrays.iter().map(Vec::len).min().unwrap_or(0);
        let longest = arrays.iter().map(Vec::len).max().unwrap_or(0);
        // mongod evaluates the defaults only when the lengths differ.
        let mut defaults = vec![Bson::Null; arrays.len()];
        if shortest != longest {
            for (slot, default) in defaults.iter_mut().zip(&self.defaults) {
                *slot = default.eval(scope)?.unwrap_or(Bson::Null);
            }
        }
        let rows = if self.longest { longest } else { shortest };
        scope.charge(rows.saturating_mul(arrays.len()))?;
        let mut columns: Vec<_> = arrays.into_iter().map(Vec::into_iter).collect();
        let mut out = Vec::with_capacity(rows);
        let mut size = EMPTY_DOCUMENT_BYTES;
        for _ in 0..rows {
            let row: Vec<Bson> = columns
                .iter_mut()
                .zip(&defaults)
                .map(|(column, default)| column.next().unwrap_or_else(|| default.clone()))
                .collect();
            let row = Bson::Array(row);
            size = grown_size(size, decimal_digits(out.len()), &row)?;
            out.push(row);
        }
        Ok(Some(Bson::Array(out)))
    }
}

fn parse_all(items: &[Bson], defined: &Defined) -> StoreResult<Vec<Expr>> {
    items
        .iter()
        .map(|item| Expr::parse_in(item, defined))
        .collect()
}
