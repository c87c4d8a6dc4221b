//! Time zones as mongod reads them: an Olson name from the IANA database (exact spelling, as
//! mongod's lookup is case-sensitive) or a UTC offset written `+hh`, `+hhmm` or `+hh:mm`.
//!
//! Instants are milliseconds since the epoch over the whole `i64` range; the database (jiff's
//! bundled copy) covers years -9999..=9999, so instants past it take the offset of its edge.

use jiff::Timestamp;
use jiff::civil::DateTime;
use jiff::tz::TimeZone as Olson;

use super::vars::Scope;
use crate::errors::{CommandError, StoreResult};

/// `Location40485`: a time zone that is neither an Olson name nor a UTC offset.
pub(super) const UNRECOGNIZED_TIME_ZONE: i32 = 40485;
/// `Location40517`: a `timezone` argument that is not a string.
const TIMEZONE_NOT_STRING: i32 = 40517;

const MS_PER_SECOND: i64 = 1000;

/// A parsed time zone.
#[derive(Debug, Clone)]
pub(super) enum TimeZone {
    /// UTC itself (no `timezone` argument, or `"UTC"`).
    Utc,
    /// A fixed offset in seconds east of UTC.
    Fixed(i64),
    /// An IANA zone with its rules.
    Named(Olson),
}

impl TimeZone {
    /// Parses a `timezone` argument.
    ///
    /// # Errors
    /// 40485 when the name is not known.
    pub(super) fn parse(name: &str) -> StoreResult<TimeZone> {
        if let Some(offset) = parse_offset(name) {
            return Ok(TimeZone::Fixed(offset));
        }
        if name == "UTC" {
            return Ok(TimeZone::Utc);
        }
        match Olson::get(name) {
            // jiff matches names case-insensitively; mongod does not.
            Ok(zone) if zone.iana_name() == Some(name) => Ok(TimeZone::Named(zone)),
            _ => Err(CommandError::new(
                UNRECOGNIZED_TIME_ZONE,
                format!("unrecognized time zone identifier: \"{name}\""),
            )),
        }
    }

    /// Whether `$dateToString` writes its default format with a trailing `Z`.
    pub(super) fn is_utc(&self) -> bool {
        matches!(self, TimeZone::Utc | TimeZone::Fixed(0))
    }

    /// The offset from UTC, in milliseconds, at the instant `utc`.
    pub(super) fn offset_ms(&self, utc: i64) -> i64 {
        match self {
            TimeZone::Utc => 0,
            TimeZone::Fixed(seconds) => seconds * MS_PER_SECOND,
            TimeZone::Named(zone) => {
                let instant = Timestamp::from_millisecond(utc).unwrap_or(if utc < 0 {
                    Timestamp::MIN
                } else {
                    Timestamp::MAX
                });
                i64::from(zone.to_offset(instant).seconds()) * MS_PER_SECOND
            }
        }
    }

    /// The local wall-clock time (as milliseconds since a local epoch) of the instant `utc`.
    pub(super) fn to_local(&self, utc: i64) -> i64 {
        utc.saturating_add(self.offset_ms(utc))
    }

    /// The instant of a local wall-clock time. A time skipped by a transition is read with the
    /// offset before it and a repeated time takes its first instant, as timelib (mongod's date
    /// library) and jiff's "compatible" rule both do.
    pub(super) fn to_utc(&self, local: i64) -> i64 {
        match self {
            TimeZone::Utc | TimeZone::Fixed(_) => local.saturating_sub(self.offset_ms(local)),
            TimeZone::Named(zone) => named_to_utc(zone, local),
        }
    }
}

fn named_to_utc(zone: &Olson, local: i64) -> i64 {
    let parts = super::calendar::Parts::of(local);
    let civil = i16::try_from(parts.year).ok().and_then(|year| {
        DateTime::new(
            year,
            i8::try_from(parts.month).ok()?,
            i8::try_from(parts.day).ok()?,
            i8::try_from(parts.hour).ok()?,
            i8::try_from(parts.minute).ok()?,
            i8::try_from(parts.second).ok()?,
            0,
        )
        .ok()
    });
    let found = civil.and_then(|civil| zone.to_ambiguous_timestamp(civil).compatible().ok());
    match found {
        Some(instant) => instant
            .as_millisecond()
            .saturating_add(i64::from(parts.millisecond)),
        // Outside the database's years: the offset at the edge.
        None => {
            let guess = local.saturating_sub(TimeZone::Named(zone.clone()).offset_ms(local));
            local.saturating_sub(TimeZone::Named(zone.clone()).offset_ms(guess))
        }
    }
}

/// `+hh`, `-hh`, `+hhmm` or `+hh:mm` as seconds east of UTC.
fn parse_offset(text: &str) -> Option<i64> {
    let sign = match text.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let digits = &text[1..];
    let (hours, minutes) = match digits.len() {
        2 => (digits, "00"),
        4 => digits.split_at(2),
        5 if digits.as_bytes()[2] == b':' => (&digits[..2], &digits[3..]),
        _ => return None,
    };
    if !hours
        .bytes()
        .chain(minutes.bytes())
        .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let hours: i64 = hours.parse().ok()?;
    let minutes: i64 = minutes.parse().ok()?;
    Some(sign * (hours * 3600 + minutes * 60))
}

/// Evaluates a `timezone` argument as mongod's `makeTimeZone` does: UTC when absent, `None`
/// (the operator answers null) when it is null or missing.
///
/// # Errors
/// 40517 for a non-string, 40485 for an unknown zone.
pub(super) fn evaluate(argument: &super::Expr, scope: &Scope) -> StoreResult<Option<TimeZone>> {
    if matches!(argument, super::Expr::Absent) {
        return Ok(Some(TimeZone::Utc));
    }
    match argument.eval(scope)? {
        None | Some(bson::Bson::Null | bson::Bson::Undefined) => Ok(None),
        Some(bson::Bson::String(name)) => TimeZone::parse(&name).map(Some),
        Some(other) => Err(CommandError::new(
            TIMEZONE_NOT_STRING,
            format!(
                "timezone must evaluate to a string, found {}",
                crate::errors::type_name(&other)
            ),
        )),
    }
}
