//! `$dateAdd`, `$dateSubtract`, `$dateDiff` and `$dateTrunc`: calendar arithmetic in a time
//! zone. Units of a day and more work on local wall-clock time (adding a day across a daylight
//! saving change keeps the local time, so the instant moves by 23 or 25 hours); smaller units
//! work on the instant.

use bson::Bson;

use super::args::is_absent;
use super::calendar::{self, MS_PER_DAY, Parts};
use super::dates::{as_date, date, integral64};
use super::tz::{self, TimeZone};
use super::vars::Scope;
use super::{Expr, is_nullish};
use crate::code;
use crate::errors::{CommandError, StoreResult, format_value, type_name};

/// `Location5439013`: a `unit` that is not a string.
const UNIT_NOT_STRING: i32 = 5439013;
/// `Location5439015`: a `startOfWeek` that is not a string.
const START_OF_WEEK_NOT_STRING: i32 = 5439015;
/// `Location5439016`: a `startOfWeek` that names no day.
const START_OF_WEEK_UNKNOWN: i32 = 5439016;
/// `Location5166403`: a `$dateAdd`/`$dateSubtract` start that is not a date.
const START_NOT_DATE: i32 = 5166403;
/// `Location5166405`: an `amount` that is not an integer.
const AMOUNT_NOT_INTEGER: i32 = 5166405;
/// `Location6045000`: `$dateSubtract` of the smallest long, which cannot be negated.
const AMOUNT_NOT_NEGATABLE: i32 = 6045000;
/// `Location5976500`: an `amount` whose result falls outside the range of dates.
const AMOUNT_OUT_OF_RANGE: i32 = 5976500;
/// `Location5166307`: a `$dateDiff`/`$dateTrunc` date that is not a date.
const NOT_A_DATE: i32 = 5166307;
/// `Location5439017`: a `binSize` that is not a 64-bit integer.
const BIN_SIZE_NOT_INTEGER: i32 = 5439017;
/// `Location5439018`: a `binSize` that is not positive.
const BIN_SIZE_NOT_POSITIVE: i32 = 5439018;

/// 2000-01-01 as a day number: `$dateTrunc` counts its bins from there, in the target zone.
const TRUNC_REFERENCE_DAYS: i64 = 10_957;

/// A time unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Year,
    Quarter,
    Month,
    Week,
    Day,
    Hour,
    Minute,
    Second,
    Millisecond,
}

impl Unit {
    /// Milliseconds in a fixed-length unit (hours and below).
    fn fixed_ms(self) -> Option<i64> {
        match self {
            Unit::Hour => Some(3_600_000),
            Unit::Minute => Some(60_000),
            Unit::Second => Some(1000),
            Unit::Millisecond => Some(1),
            _ => None,
        }
    }

    /// Months in a month-based unit.
    fn months(self) -> Option<i64> {
        match self {
            Unit::Year => Some(12),
            Unit::Quarter => Some(3),
            Unit::Month => Some(1),
            _ => None,
        }
    }
}

fn parse_unit(value: &Bson, op: &str) -> StoreResult<Unit> {
    let Bson::String(name) = value else {
        return Err(CommandError::new(
            UNIT_NOT_STRING,
            format!(
                "{op} requires 'unit' to be a string, but got {}",
                type_name(value)
            ),
        ));
    };
    Ok(match name.as_str() {
        "year" => Unit::Year,
        "quarter" => Unit::Quarter,
        "month" => Unit::Month,
        "week" => Unit::Week,
        "day" => Unit::Day,
        "hour" => Unit::Hour,
        "minute" => Unit::Minute,
        "second" => Unit::Second,
        "millisecond" => Unit::Millisecond,
        _ => {
            return Err(CommandError::new(
                code::FAILED_TO_PARSE,
                format!(
                    "{op} parameter 'unit' value parsing failed :: caused by :: unknown time unit \
                     value: {name}"
                ),
            ));
        }
    })
}

/// The ISO number (1 = Monday ... 7 = Sunday) of a `startOfWeek` day name.
fn parse_start_of_week(value: &Bson, op: &str) -> StoreResult<i64> {
    let Bson::String(name) = value else {
        return Err(CommandError::new(
            START_OF_WEEK_NOT_STRING,
            format!(
                "{op} requires 'startOfWeek' to be a string, but got {}",
                type_name(value)
            ),
        ));
    };
    const DAYS: [&str; 7] = [
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
    ];
    let lower = name.to_ascii_lowercase();
    DAYS.iter()
        .position(|day| *day == lower || day[..3] == lower)
        .and_then(|index| i64::try_from(index + 1).ok())
        .ok_or_else(|| {
            CommandError::new(
                START_OF_WEEK_UNKNOWN,
                format!(
                    "{op} parameter 'startOfWeek' value cannot be recognized as a day of a week: \
                     {name}"
                ),
            )
        })
}

/// Evaluates an argument; `None` when it is null or missing.
fn present(argument: &Expr, scope: &Scope) -> StoreResult<Option<Bson>> {
    Ok(argument
        .eval(scope)?
        .filter(|value| !is_nullish(Some(value))))
}

/// The zone of `$dateDiff`/`$dateTrunc`, whose errors mongod prefixes with the parameter.
fn zone_with_context(argument: &Expr, scope: &Scope, op: &str) -> StoreResult<Option<TimeZone>> {
    tz::evaluate(argument, scope).map_err(|mut error| {
        error.message = format!(
            "{op} parameter 'timezone' value parsing failed :: caused by :: {}",
            error.message
        );
        error
    })
}

fn out_of_range(amount: i64, unit: &str) -> CommandError {
    CommandError::new(
        AMOUNT_OUT_OF_RANGE,
        format!("invalid dateAdd 'amount' parameter value: {amount} {unit}"),
    )
}

/// `$dateAdd`/`$dateSubtract` (`[startDate, unit, amount, timezone]`).
pub(super) fn add(subtract: bool, arguments: &[Expr], scope: &Scope) -> StoreResult<Option<Bson>> {
    let op = if subtract {
        "$dateSubtract"
    } else {
        "$dateAdd"
    };
    let Some(start) = present(&arguments[0], scope)? else {
        return Ok(Some(Bson::Null));
    };
    let Some(unit_value) = present(&arguments[1], scope)? else {
        return Ok(Some(Bson::Null));
    };
    let unit = parse_unit(&unit_value, op)?;
    let Some(amount) = present(&arguments[2], scope)? else {
        return Ok(Some(Bson::Null));
    };
    let Some(zone) = tz::evaluate(&arguments[3], scope)? else {
        return Ok(Some(Bson::Null));
    };
    let start = as_date(&start).ok_or_else(|| {
        CommandError::new(
            START_NOT_DATE,
            format!("{op} requires startDate to be convertible to a date"),
        )
    })?;
    let mut amount = integral64(&amount).ok_or_else(|| {
        CommandError::new(
            AMOUNT_NOT_INTEGER,
            format!("{op} expects integer amount of time units"),
        )
    })?;
    if subtract {
        amount = amount.checked_neg().ok_or_else(|| {
            CommandError::new(
                AMOUNT_NOT_NEGATABLE,
                format!("invalid $dateSubtract 'amount' parameter value: {amount}"),
            )
        })?;
    }
    let unit_name = match &unit_value {
        Bson::String(name) => name.clone(),
        _ => String::new(),
    };
    let result =
        date_add(start, unit, amount, &zone).ok_or_else(|| out_of_range(amount, &unit_name))?;
    Ok(Some(date(result)))
}

/// `start` moved by `amount` units; `None` past the range of dates.
fn date_add(start: i64, unit: Unit, amount: i64, zone: &TimeZone) -> Option<i64> {
    if let Some(unit_ms) = unit.fixed_ms() {
        return start.checked_add(amount.checked_mul(unit_ms)?);
    }
    let local = zone.to_local(start);
    let moved = if let Some(months) = unit.months() {
        let parts = Parts::of(local);
        let total = (parts.year.checked_mul(12)?).checked_add(i64::from(parts.month) - 1)?;
        let total = total.checked_add(amount.checked_mul(months)?)?;
        let year = total.div_euclid(12);
        // Years this far out overflow the day arithmetic below.
        if year.abs() > 300_000_000 {
            return None;
        }
        let month = u32::try_from(total.rem_euclid(12) + 1).ok()?;
        // The day is clamped to the new month (January 31 plus a month is February 28/29).
        let day = parts.day.min(calendar::days_in_month(year, month));
        let days = calendar::days_from_civil(year, month, i64::from(day));
        days.checked_mul(MS_PER_DAY)?
            .checked_add(local.rem_euclid(MS_PER_DAY))?
    } else {
        let days = if unit == Unit::Week {
            amount.checked_mul(7)?
        } else {
            amount
        };
        local.checked_add(days.checked_mul(MS_PER_DAY)?)?
    };
    Some(zone.to_utc(moved))
}

/// `$dateDiff` (`[startDate, endDate, unit, timezone, startOfWeek]`): the number of unit
/// boundaries crossed, as a long.
pub(super) fn diff(arguments: &[Expr], scope: &Scope) -> StoreResult<Option<Bson>> {
    let Some(start) = present(&arguments[0], scope)? else {
        return Ok(Some(Bson::Null));
    };
    let Some(end) = present(&arguments[1], scope)? else {
        return Ok(Some(Bson::Null));
    };
    let Some(unit) = present(&arguments[2], scope)? else {
        return Ok(Some(Bson::Null));
    };
    let unit = parse_unit(&unit, "$dateDiff")?;
    let Some(start_of_week) = start_of_week(unit, &arguments[4], scope, "$dateDiff")? else {
        return Ok(Some(Bson::Null));
    };
    let Some(zone) = zone_with_context(&arguments[3], scope, "$dateDiff")? else {
        return Ok(Some(Bson::Null));
    };
    let start = convert_date(&start, "$dateDiff", "startDate")?;
    let end = convert_date(&end, "$dateDiff", "endDate")?;
    let count = |instant: i64| unit_index(zone.to_local(instant), unit, start_of_week);
    Ok(Some(Bson::Int64(count(end).saturating_sub(count(start)))))
}

/// The `startOfWeek` that applies (Sunday unless given, only for weeks); `None` when given
/// as null.
fn start_of_week(unit: Unit, argument: &Expr, scope: &Scope, op: &str) -> StoreResult<Option<i64>> {
    if unit != Unit::Week || is_absent(argument) {
        return Ok(Some(7));
    }
    match present(argument, scope)? {
        None => Ok(None),
        Some(value) => parse_start_of_week(&value, op).map(Some),
    }
}

fn convert_date(value: &Bson, op: &str, parameter: &str) -> StoreResult<i64> {
    as_date(value).ok_or_else(|| {
        CommandError::new(
            NOT_A_DATE,
            format!(
                "{op} requires '{parameter}' to be a date, but got {}",
                type_name(value)
            ),
        )
    })
}

/// The day number of the first day of the week holding day `days`.
fn week_start(days: i64, start_of_week: i64) -> i64 {
    let iso_day = (days + 3).rem_euclid(7) + 1;
    days - (iso_day - start_of_week).rem_euclid(7)
}

/// Which unit a local time falls in, counted from a fixed origin, so that the difference of
/// two is the number of boundaries between them.
fn unit_index(local: i64, unit: Unit, start_of_week: i64) -> i64 {
    if let Some(unit_ms) = unit.fixed_ms() {
        return local.div_euclid(unit_ms);
    }
    let parts = Parts::of(local);
    let months = parts.year * 12 + i64::from(parts.month) - 1;
    match unit {
        Unit::Year => parts.year,
        Unit::Quarter => months.div_euclid(3),
        Unit::Month => months,
        Unit::Week => week_start(parts.days, start_of_week).div_euclid(7),
        _ => parts.days,
    }
}

/// `$dateTrunc` (`[date, unit, binSize, timezone, startOfWeek]`).
pub(super) fn trunc(arguments: &[Expr], scope: &Scope) -> StoreResult<Option<Bson>> {
    let Some(value) = present(&arguments[0], scope)? else {
        return Ok(Some(Bson::Null));
    };
    let bin_size = if is_absent(&arguments[2]) {
        1
    } else {
        match present(&arguments[2], scope)? {
            None => return Ok(Some(Bson::Null)),
            Some(size) => bin_size(&size)?,
        }
    };
    let Some(unit) = present(&arguments[1], scope)? else {
        return Ok(Some(Bson::Null));
    };
    let unit = parse_unit(&unit, "$dateTrunc")?;
    let Some(start_of_week) = start_of_week(unit, &arguments[4], scope, "$dateTrunc")? else {
        return Ok(Some(Bson::Null));
    };
    let Some(zone) = zone_with_context(&arguments[3], scope, "$dateTrunc")? else {
        return Ok(Some(Bson::Null));
    };
    let instant = convert_date(&value, "$dateTrunc", "date")?;
    let truncated = truncate(instant, unit, bin_size, start_of_week, &zone).ok_or_else(|| {
        CommandError::new(
            AMOUNT_OUT_OF_RANGE,
            format!("$dateTrunc binSize {bin_size} puts the bin outside the range of dates"),
        )
    })?;
    Ok(Some(date(truncated)))
}

fn bin_size(value: &Bson) -> StoreResult<i64> {
    let Some(size) = integral64(value) else {
        return Err(CommandError::new(
            BIN_SIZE_NOT_INTEGER,
            format!(
                "$dateTrunc requires 'binSize' to be a 64-bit integer, but got value '{}' of \
                 type {}",
                format_value(value),
                type_name(value)
            ),
        ));
    };
    if size <= 0 {
        return Err(CommandError::new(
            BIN_SIZE_NOT_POSITIVE,
            format!("$dateTrunc requires 'binSize' to be greater than 0, but got value {size}"),
        ));
    }
    Ok(size)
}

/// The start of the bin holding `distance` units from the reference, in units.
fn bin_start(distance: i128, bin: i128) -> i128 {
    distance.div_euclid(bin) * bin
}

/// The start of the bin of `bin_size` units that holds `instant`, bins counted from
/// 2000-01-01T00:00 in the zone (from its first `startOfWeek` day for weeks); `None` past the
/// range of dates.
fn truncate(
    instant: i64,
    unit: Unit,
    bin_size: i64,
    start_of_week: i64,
    zone: &TimeZone,
) -> Option<i64> {
    let reference = zone.to_utc(TRUNC_REFERENCE_DAYS * MS_PER_DAY);
    if let Some(unit_ms) = unit.fixed_ms() {
        let bin = i128::from(bin_size) * i128::from(unit_ms);
        let start =
            i128::from(reference) + bin_start(i128::from(instant) - i128::from(reference), bin);
        return i64::try_from(start).ok();
    }
    let parts = Parts::of(zone.to_local(instant));
    let days = if let Some(months) = unit.months() {
        let since = (parts.year - 2000) * 12 + i64::from(parts.month) - 1;
        let start = bin_start(i128::from(since), i128::from(bin_size) * i128::from(months));
        let start = i64::try_from(start)
            .ok()
            .filter(|m| m.abs() < 3_000_000_000)?;
        let month = u32::try_from(start.rem_euclid(12) + 1).ok()?;
        calendar::days_from_civil(2000 + start.div_euclid(12), month, 1)
    } else if unit == Unit::Week {
        let first = week_start(TRUNC_REFERENCE_DAYS + 6, start_of_week);
        let weeks = (week_start(parts.days, start_of_week) - first) / 7;
        let start = bin_start(i128::from(weeks), i128::from(bin_size));
        i64::try_from(i128::from(first) + start * 7).ok()?
    } else {
        let start = bin_start(
            i128::from(parts.days - TRUNC_REFERENCE_DAYS),
            i128::from(bin_size),
        );
        i64::try_from(i128::from(TRUNC_REFERENCE_DAYS) + start).ok()?
    };
    Some(zone.to_utc(days.checked_mul(MS_PER_DAY)?))
}
