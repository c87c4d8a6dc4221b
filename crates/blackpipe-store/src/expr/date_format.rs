//! `$dateToString` and the format strings of `$dateToString`/`$dateFromString`.

use std::fmt::Write as _;

use bson::Bson;

use super::args::is_absent;
use super::calendar::{MONTH_NAMES, Parts};
use super::dates::coerce_to_date;
use super::tz::{self, TimeZone};
use super::vars::Scope;
use super::{Expr, is_nullish};
use crate::errors::{CommandError, StoreResult, check_bson_size, format_value, type_name};

/// `Location18533`: a `$dateToString` format that is not a string.
const FORMAT_NOT_STRING: i32 = 18533;
/// `Location18535`: a format ending in a lone `%`.
pub(super) const FORMAT_TRAILING_PERCENT: i32 = 18535;
/// `Location18536`: an unknown `%` specifier.
pub(super) const FORMAT_BAD_SPECIFIER: i32 = 18536;
/// `Location18537`: a year outside 0..=9999 written with `%Y` or `%G`.
const YEAR_OUT_OF_FORMAT_RANGE: i32 = 18537;

/// The default format for UTC: ISO 8601 with a `Z`.
pub(super) const ISO_FORMAT_Z: &str = "%Y-%m-%dT%H:%M:%S.%LZ";
/// The default format in another zone: ISO 8601 without a zone.
const ISO_FORMAT_LOCAL: &str = "%Y-%m-%dT%H:%M:%S.%L";

/// The specifiers `$dateToString` writes.
const TO_STRING_SPECIFIERS: &str = "dGHjLmMSuUVwYzZbB%";
/// The specifiers `$dateFromString` reads.
pub(super) const FROM_STRING_SPECIFIERS: &str = "dGHjLmMSuVwYzZbB%";

/// Checks a format string against the specifiers an operator knows.
///
/// # Errors
/// 18535 for a trailing `%`, 18536 for an unknown specifier.
pub(super) fn validate(format: &str, known: &str) -> StoreResult<()> {
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            continue;
        }
        match chars.next() {
            None => {
                return Err(CommandError::new(
                    FORMAT_TRAILING_PERCENT,
                    "Unmatched '%' at end of format string",
                ));
            }
            Some(specifier) if !known.contains(specifier) => {
                return Err(CommandError::new(
                    FORMAT_BAD_SPECIFIER,
                    format!("Invalid format character '%{specifier}' in format string"),
                ));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Writes `number` zero-padded to `width`, as mongod does for every numeric specifier.
fn padded(out: &mut String, number: i64, width: usize) -> StoreResult<()> {
    if !(0..=9999).contains(&number) {
        return Err(CommandError::new(
            YEAR_OUT_OF_FORMAT_RANGE,
            format!(
                "Could not convert date to string: date component was outside the supported \
                 range of 0-9999: {number}"
            ),
        ));
    }
    let _ = write!(out, "{number:0width$}");
    Ok(())
}

/// Formats the instant `utc` in `zone` with a (validated) format string.
///
/// # Errors
/// 18537 for a year outside 0..=9999; BSONObjectTooLarge for a format that would build a
/// string past the size limit.
pub(super) fn format_date(format: &str, utc: i64, zone: &TimeZone) -> StoreResult<String> {
    let offset_ms = zone.offset_ms(utc);
    let parts = Parts::of(utc.saturating_add(offset_ms));
    let mut out = String::with_capacity(format.len() + 16);
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        // Every specifier writes at most 12 bytes, so this bounds the result.
        check_bson_size(out.len())?;
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(specifier) = chars.next() else { break };
        write_specifier(&mut out, specifier, &parts, offset_ms)?;
    }
    Ok(out)
}

fn write_specifier(
    out: &mut String,
    specifier: char,
    parts: &Parts,
    offset_ms: i64,
) -> StoreResult<()> {
    let month_name = MONTH_NAMES[usize::try_from(parts.month - 1).unwrap_or_default()];
    match specifier {
        'd' => padded(out, i64::from(parts.day), 2),
        'G' => padded(out, parts.iso_week().0, 4),
        'H' => padded(out, i64::from(parts.hour), 2),
        'j' => padded(out, i64::from(parts.day_of_year()), 3),
        'L' => padded(out, i64::from(parts.millisecond), 3),
        'm' => padded(out, i64::from(parts.month), 2),
        'M' => padded(out, i64::from(parts.minute), 2),
        'S' => padded(out, i64::from(parts.second), 2),
        'u' => padded(out, i64::from(parts.iso_day_of_week()), 1),
        'U' => padded(out, i64::from(parts.week()), 2),
        'V' => padded(out, i64::from(parts.iso_week().1), 2),
        'w' => padded(out, i64::from(parts.day_of_week()), 1),
        'Y' => padded(out, parts.year, 4),
        'z' => {
            let minutes = offset_ms / 60_000;
            out.push(if minutes < 0 { '-' } else { '+' });
            padded(out, minutes.abs() / 60, 2)?;
            padded(out, minutes.abs() % 60, 2)
        }
        'Z' => {
            let _ = write!(out, "{}", offset_ms / 60_000);
            Ok(())
        }
        'b' => {
            out.push_str(&month_name[..3]);
            Ok(())
        }
        'B' => {
            out.push_str(month_name);
            Ok(())
        }
        other => {
            out.push(other);
            Ok(())
        }
    }
}

/// `$dateToString` (`[date, format, timezone, onNull]`), checked in mongod's order: the
/// format, then the zone, then a null date (`onNull`), then a null zone or format.
pub(super) fn to_string(arguments: &[Expr], scope: &Scope) -> StoreResult<Option<Bson>> {
    let value = arguments[0].eval(scope)?;
    let format = if is_absent(&arguments[1]) {
        None
    } else {
        Some(arguments[1].eval(scope)?)
    };
    if let Some(Some(format)) = &format {
        match format {
            Bson::String(text) => validate(text, TO_STRING_SPECIFIERS)?,
            Bson::Null | Bson::Undefined => {}
            other => {
                return Err(CommandError::new(
                    FORMAT_NOT_STRING,
                    format!(
                        "$dateToString requires that 'format' be a string, found: {} with value {}",
                        type_name(other),
                        format_value(other)
                    ),
                ));
            }
        }
    }
    let zone = tz::evaluate(&arguments[2], scope)?;
    let Some(value) = value.filter(|value| !is_nullish(Some(value))) else {
        return if is_absent(&arguments[3]) {
            Ok(Some(Bson::Null))
        } else {
            arguments[3].eval(scope)
        };
    };
    let Some(zone) = zone else {
        return Ok(Some(Bson::Null));
    };
    let format = match &format {
        None if zone.is_utc() => ISO_FORMAT_Z,
        None => ISO_FORMAT_LOCAL,
        Some(Some(Bson::String(text))) => text.as_str(),
        Some(_) => return Ok(Some(Bson::Null)),
    };
    let utc = coerce_to_date(&value)?;
    let text = format_date(format, utc, &zone)?;
    // A long format built in every iteration of a `$map` is work like any built value.
    scope.charge(1 + text.len() / 16)?;
    Ok(Some(Bson::String(text)))
}
