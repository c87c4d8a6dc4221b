//! The date operators: the family's names, its parsing, the part extractors (`$year`...
//! `$isoDayOfWeek`), `$dateToParts` and `$dateFromParts`. `$dateToString` is in
//! `date_format.rs`, `$dateFromString` in `date_parse.rs`, `$dateAdd`/`$dateSubtract`/
//! `$dateDiff`/`$dateTrunc` in `date_arith.rs`; calendars and zones in `calendar.rs`/`tz.rs`.
//!
//! Dates are BSON DateTimes; a Timestamp (its seconds) and an ObjectId (its creation second)
//! count as dates wherever mongod coerces to a date.

use bson::{Bson, Document};

use super::args::{self, is_absent};
use super::calendar::{self, MS_PER_DAY, Parts};
use super::tz::{self, TimeZone};
use super::vars::{Defined, Scope};
use super::{Expr, is_nullish};
use crate::errors::{CommandError, StoreResult, format_document, format_value, type_name};

/// `Location16006`: a value that is not a date (nor a Timestamp or ObjectId).
const NOT_A_DATE: i32 = 16006;
/// `Location40535`: an unknown option in `{date, timezone}`.
const PART_UNKNOWN_OPTION: i32 = 40535;
/// `Location40536`: an array argument that is not a single date.
const PART_ARRAY_ARITY: i32 = 40536;
/// `Location40539`: `{date, timezone}` without `date`.
const PART_MISSING_DATE: i32 = 40539;
/// `Location40515`: a `$dateFromParts` part that is not an integer.
const PART_NOT_INTEGER: i32 = 40515;
/// `Location31034`: a `$dateFromParts` part outside a 16-bit integer.
const PART_OUT_OF_RANGE: i32 = 31034;
/// `Location40523`: a `year` outside 1..=9999.
const YEAR_OUT_OF_RANGE: i32 = 40523;
/// `Location31095`: an `isoWeekYear` outside 1..=9999.
const ISO_YEAR_OUT_OF_RANGE: i32 = 31095;
/// `Location40521`: an `iso8601` flag that is not a boolean.
const ISO_FLAG_NOT_BOOL: i32 = 40521;

/// The date operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DateOp {
    Year,
    Month,
    DayOfMonth,
    Hour,
    Minute,
    Second,
    Millisecond,
    DayOfYear,
    DayOfWeek,
    Week,
    IsoWeek,
    IsoWeekYear,
    IsoDayOfWeek,
    DateToString,
    DateFromString,
    DateToParts,
    DateFromParts,
    DateAdd,
    DateSubtract,
    DateDiff,
    DateTrunc,
}

impl DateOp {
    pub(super) fn from_name(name: &str) -> Option<DateOp> {
        Some(match name {
            "$year" => DateOp::Year,
            "$month" => DateOp::Month,
            "$dayOfMonth" => DateOp::DayOfMonth,
            "$hour" => DateOp::Hour,
            "$minute" => DateOp::Minute,
            "$second" => DateOp::Second,
            "$millisecond" => DateOp::Millisecond,
            "$dayOfYear" => DateOp::DayOfYear,
            "$dayOfWeek" => DateOp::DayOfWeek,
            "$week" => DateOp::Week,
            "$isoWeek" => DateOp::IsoWeek,
            "$isoWeekYear" => DateOp::IsoWeekYear,
            "$isoDayOfWeek" => DateOp::IsoDayOfWeek,
            "$dateToString" => DateOp::DateToString,
            "$dateFromString" => DateOp::DateFromString,
            "$dateToParts" => DateOp::DateToParts,
            "$dateFromParts" => DateOp::DateFromParts,
            "$dateAdd" => DateOp::DateAdd,
            "$dateSubtract" => DateOp::DateSubtract,
            "$dateDiff" => DateOp::DateDiff,
            "$dateTrunc" => DateOp::DateTrunc,
            _ => return None,
        })
    }

    fn is_extractor(self) -> bool {
        matches!(
            self,
            DateOp::Year
                | DateOp::Month
                | DateOp::DayOfMonth
                | DateOp::Hour
                | DateOp::Minute
                | DateOp::Second
                | DateOp::Millisecond
                | DateOp::DayOfYear
                | DateOp::DayOfWeek
                | DateOp::Week
                | DateOp::IsoWeek
                | DateOp::IsoWeekYear
                | DateOp::IsoDayOfWeek
        )
    }
}

/// How an operator with named arguments is spelled and checked, with mongod's codes.
pub(super) struct NamedSpec {
    /// Code and message for a non-document argument (`{type}` is replaced).
    pub(super) not_object: (i32, &'static str),
    pub(super) names: &'static [&'static str],
    /// Code and message for an unknown name (`{name}` is replaced).
    pub(super) unknown: (i32, &'static str),
    /// Required slots: position, code and message.
    pub(super) required: &'static [(usize, i32, &'static str)],
}

impl NamedSpec {
    /// Parses `argument` into the slots of `names`.
    pub(super) fn parse(&self, argument: &Bson, defined: &Defined) -> StoreResult<Vec<Expr>> {
        let Bson::Document(spec) = argument else {
            let (code, message) = self.not_object;
            return Err(CommandError::new(
                code,
                message.replace("{type}", type_name(argument)),
            ));
        };
        let (code, message) = self.unknown;
        let slots = args::named(spec, self.names, defined, |name| {
            CommandError::new(code, message.replace("{name}", name))
        })?;
        for &(position, code, message) in self.required {
            if is_absent(&slots[position]) {
                return Err(CommandError::new(code, message));
            }
        }
        Ok(slots)
    }
}

const TO_STRING: NamedSpec = NamedSpec {
    not_object: (
        18629,
        "$dateToString only supports an object as its argument",
    ),
    names: &["date", "format", "timezone", "onNull"],
    unknown: (18534, "Unrecognized argument to $dateToString: {name}"),
    required: &[(0, 18628, "Missing 'date' parameter to $dateToString")],
};

const FROM_STRING: NamedSpec = NamedSpec {
    not_object: (
        40540,
        "$dateFromString only supports an object as an argument, found: {type}",
    ),
    names: &["dateString", "timezone", "format", "onNull", "onError"],
    unknown: (40541, "Unrecognized argument to $dateFromString: {name}"),
    required: &[(
        0,
        40542,
        "Missing 'dateString' parameter to $dateFromString",
    )],
};

const TO_PARTS: NamedSpec = NamedSpec {
    not_object: (
        40524,
        "$dateToParts only supports an object as its argument",
    ),
    names: &["date", "timezone", "iso8601"],
    unknown: (40520, "Unrecognized argument to $dateToParts: {name}"),
    required: &[(0, 40522, "Missing 'date' parameter to $dateToParts")],
};

/// `$dateFromParts` slots: the natural parts, the ISO parts, then the zone.
const FROM_PARTS: NamedSpec = NamedSpec {
    not_object: (
        40519,
        "$dateFromParts only supports an object as its argument",
    ),
    names: &[
        "year",
        "month",
        "day",
        "hour",
        "minute",
        "second",
        "millisecond",
        "isoWeekYear",
        "isoWeek",
        "isoDayOfWeek",
        "timezone",
    ],
    unknown: (40518, "Unrecognized argument to $dateFromParts: {name}"),
    required: &[],
};

const DATE_ADD: NamedSpec = NamedSpec {
    not_object: (5166400, "$dateAdd expects an object as its argument"),
    names: &["startDate", "unit", "amount", "timezone"],
    unknown: (
        5166401,
        "Unrecognized argument to $dateAdd: {name}. Expected arguments are startDate, unit, \
         amount, and optionally timezone.",
    ),
    required: &[],
};

const DATE_SUBTRACT: NamedSpec = NamedSpec {
    not_object: (5166400, "$dateSubtract expects an object as its argument"),
    names: &["startDate", "unit", "amount", "timezone"],
    unknown: (
        5166401,
        "Unrecognized argument to $dateSubtract: {name}. Expected arguments are startDate, \
         unit, amount, and optionally timezone.",
    ),
    required: &[],
};

const DATE_DIFF: NamedSpec = NamedSpec {
    not_object: (5166301, "$dateDiff only supports an object as its argument"),
    names: &["startDate", "endDate", "unit", "timezone", "startOfWeek"],
    unknown: (5166302, "Unrecognized argument to $dateDiff: {name}"),
    required: &[
        (0, 5166303, "Missing 'startDate' parameter to $dateDiff"),
        (1, 5166304, "Missing 'endDate' parameter to $dateDiff"),
        (2, 5166305, "Missing 'unit' parameter to $dateDiff"),
    ],
};

const DATE_TRUNC: NamedSpec = NamedSpec {
    not_object: (
        5439007,
        "$dateTrunc only supports an object as its argument",
    ),
    names: &["date", "unit", "binSize", "timezone", "startOfWeek"],
    unknown: (
        5439008,
        "Unrecognized argument to $dateTrunc: {name}. Expected arguments are date, unit, and \
         optionally, binSize, timezone, startOfWeek",
    ),
    required: &[
        (0, 5439009, "Missing 'date' parameter to $dateTrunc"),
        (1, 5439010, "Missing 'unit' parameter to $dateTrunc"),
    ],
};

/// Parses the argument of a date operator.
pub(super) fn parse(
    op: DateOp,
    name: &str,
    argument: &Bson,
    defined: &Defined,
) -> StoreResult<Vec<Expr>> {
    if op.is_extractor() {
        return parse_extractor(name, argument, defined);
    }
    match op {
        DateOp::DateToString => TO_STRING.parse(argument, defined),
        DateOp::DateFromString => FROM_STRING.parse(argument, defined),
        DateOp::DateToParts => TO_PARTS.parse(argument, defined),
        DateOp::DateFromParts => parse_from_parts(argument, defined),
        DateOp::DateAdd | DateOp::DateSubtract => {
            let spec = if op == DateOp::DateAdd {
                &DATE_ADD
            } else {
                &DATE_SUBTRACT
            };
            let slots = spec.parse(argument, defined)?;
            if slots[..3].iter().any(is_absent) {
                return Err(CommandError::new(
                    5166402,
                    format!("{name} requires startDate, unit, and amount to be present"),
                ));
            }
            Ok(slots)
        }
        DateOp::DateDiff => DATE_DIFF.parse(argument, defined),
        _ => DATE_TRUNC.parse(argument, defined),
    }
}

/// `$year: <date>`, `$year: [<date>]` or `$year: {date, timezone}` as `[date, timezone]`.
fn parse_extractor(name: &str, argument: &Bson, defined: &Defined) -> StoreResult<Vec<Expr>> {
    match argument {
        Bson::Document(spec) if !spec.keys().next().is_some_and(|k| k.starts_with('$')) => {
            let slots = args::named(spec, &["date", "timezone"], defined, |option| {
                CommandError::new(
                    PART_UNKNOWN_OPTION,
                    format!("unrecognized option to {name}: \"{option}\""),
                )
            })?;
            if is_absent(&slots[0]) {
                return Err(CommandError::new(
                    PART_MISSING_DATE,
                    format!(
                        "missing 'date' argument to {name}, provided: {name}: {}",
                        format_document(spec)
                    ),
                ));
            }
            Ok(slots)
        }
        Bson::Array(items) => {
            let [item] = items.as_slice() else {
                return Err(CommandError::new(
                    PART_ARRAY_ARITY,
                    format!(
                        "{name} accepts exactly one argument if given an array, but was given {}",
                        items.len()
                    ),
                ));
            };
            Ok(vec![Expr::parse_in(item, defined)?, Expr::Absent])
        }
        other => Ok(vec![Expr::parse_in(other, defined)?, Expr::Absent]),
    }
}

fn parse_from_parts(argument: &Bson, defined: &Defined) -> StoreResult<Vec<Expr>> {
    let slots = FROM_PARTS.parse(argument, defined)?;
    let given = |position: usize| !is_absent(&slots[position]);
    if !given(0) && !given(7) {
        return Err(CommandError::new(
            40516,
            "$dateFromParts requires either 'year' or 'isoWeekYear' to be present",
        ));
    }
    if given(0) && (given(7) || given(8) || given(9)) {
        return Err(CommandError::new(
            40489,
            "$dateFromParts does not allow mixing natural dates with ISO dates",
        ));
    }
    if given(7) && (given(1) || given(2)) {
        return Err(CommandError::new(
            40525,
            "$dateFromParts does not allow mixing ISO dates with natural dates",
        ));
    }
    Ok(slots)
}

/// Evaluates a date operator.
pub(super) fn evaluate(op: DateOp, arguments: &[Expr], scope: &Scope) -> StoreResult<Option<Bson>> {
    match op {
        DateOp::DateToString => super::date_format::to_string(arguments, scope),
        DateOp::DateFromString => super::date_parse::from_string(arguments, scope),
        DateOp::DateToParts => to_parts(arguments, scope),
        DateOp::DateFromParts => from_parts(arguments, scope),
        DateOp::DateAdd | DateOp::DateSubtract => {
            super::date_arith::add(op == DateOp::DateSubtract, arguments, scope)
        }
        DateOp::DateDiff => super::date_arith::diff(arguments, scope),
        DateOp::DateTrunc => super::date_arith::trunc(arguments, scope),
        _ => extract(op, arguments, scope),
    }
}

/// The milliseconds of a value mongod coerces to a date, if it does.
pub(super) fn as_date(value: &Bson) -> Option<i64> {
    match value {
        Bson::DateTime(at) => Some(at.timestamp_millis()),
        Bson::Timestamp(ts) => Some(i64::from(ts.time) * 1000),
        Bson::ObjectId(id) => Some(id.timestamp().timestamp_millis()),
        _ => None,
    }
}

/// A value coerced to a date (16006 otherwise).
pub(super) fn coerce_to_date(value: &Bson) -> StoreResult<i64> {
    as_date(value).ok_or_else(|| {
        CommandError::new(
            NOT_A_DATE,
            format!("can't convert from BSON type {} to Date", type_name(value)),
        )
    })
}

/// A BSON date.
pub(super) fn date(millis: i64) -> Bson {
    Bson::DateTime(bson::DateTime::from_millis(millis))
}

fn int(value: i64) -> Bson {
    i32::try_from(value).map_or(Bson::Int64(value), Bson::Int32)
}

fn extract(op: DateOp, arguments: &[Expr], scope: &Scope) -> StoreResult<Option<Bson>> {
    let value = arguments[0].eval(scope)?;
    let Some(value) = value.filter(|value| !is_nullish(Some(value))) else {
        return Ok(Some(Bson::Null));
    };
    let utc = coerce_to_date(&value)?;
    let Some(zone) = tz::evaluate(&arguments[1], scope)? else {
        return Ok(Some(Bson::Null));
    };
    let parts = Parts::of(zone.to_local(utc));
    let result = match op {
        DateOp::Year => parts.year,
        DateOp::Month => i64::from(parts.month),
        DateOp::DayOfMonth => i64::from(parts.day),
        DateOp::Hour => i64::from(parts.hour),
        DateOp::Minute => i64::from(parts.minute),
        DateOp::Second => i64::from(parts.second),
        DateOp::Millisecond => i64::from(parts.millisecond),
        DateOp::DayOfYear => i64::from(parts.day_of_year()),
        DateOp::DayOfWeek => i64::from(parts.day_of_week()),
        DateOp::Week => i64::from(parts.week()),
        DateOp::IsoWeek => i64::from(parts.iso_week().1),
        DateOp::IsoWeekYear => parts.iso_week().0,
        _ => i64::from(parts.iso_day_of_week()),
    };
    Ok(Some(int(result)))
}

fn to_parts(arguments: &[Expr], scope: &Scope) -> StoreResult<Option<Bson>> {
    let value = arguments[0].eval(scope)?;
    let Some(zone) = tz::evaluate(&arguments[1], scope)? else {
        return Ok(Some(Bson::Null));
    };
    let iso = if is_absent(&arguments[2]) {
        false
    } else {
        match arguments[2].eval(scope)? {
            value if is_nullish(value.as_ref()) => return Ok(Some(Bson::Null)),
            Some(Bson::Boolean(flag)) => flag,
            other => {
                return Err(CommandError::new(
                    ISO_FLAG_NOT_BOOL,
                    format!(
                        "iso8601 must evaluate to a bool, found {}",
                        super::type_of(other.as_ref())
                    ),
                ));
            }
        }
    };
    let Some(value) = value.filter(|value| !is_nullish(Some(value))) else {
        return Ok(Some(Bson::Null));
    };
    let parts = Parts::of(zone.to_local(coerce_to_date(&value)?));
    let mut out = Document::new();
    if iso {
        let (year, week) = parts.iso_week();
        out.insert("isoWeekYear", int(year));
        out.insert("isoWeek", int(i64::from(week)));
        out.insert("isoDayOfWeek", int(i64::from(parts.iso_day_of_week())));
    } else {
        out.insert("year", int(parts.year));
        out.insert("month", int(i64::from(parts.month)));
        out.insert("day", int(i64::from(parts.day)));
    }
    out.insert("hour", int(i64::from(parts.hour)));
    out.insert("minute", int(i64::from(parts.minute)));
    out.insert("second", int(i64::from(parts.second)));
    out.insert("millisecond", int(i64::from(parts.millisecond)));
    Ok(Some(Bson::Document(out)))
}

/// An integral value that fits an `i64` (mongod's `integral64Bit`).
pub(super) fn integral64(value: &Bson) -> Option<i64> {
    match value {
        Bson::Int32(number) => Some(i64::from(*number)),
        Bson::Int64(number) => Some(*number),
        Bson::Double(number) => {
            // In range and without a fraction: the cast is exact.
            #[allow(clippy::cast_possible_truncation)]
            let fits = number.fract() == 0.0
                && *number >= -9.223_372_036_854_776e18
                && *number < 9.223_372_036_854_776e18;
            #[allow(clippy::cast_possible_truncation)]
            fits.then_some(*number as i64)
        }
        Bson::Decimal128(number) => crate::decimal::exact_i64(crate::decimal::from_bson(number)),
        _ => None,
    }
}

/// A `$dateFromParts` part: `Ok(None)` when it is null or missing, its default when absent.
fn part(
    argument: &Expr,
    scope: &Scope,
    name: &str,
    default: i64,
    bounded: bool,
) -> StoreResult<Option<i64>> {
    if is_absent(argument) {
        return Ok(Some(default));
    }
    let value = match argument.eval(scope)? {
        value if is_nullish(value.as_ref()) => return Ok(None),
        Some(value) => value,
        None => return Ok(None),
    };
    let Some(number) = integral64(&value) else {
        return Err(CommandError::new(
            PART_NOT_INTEGER,
            format!(
                "'{name}' must evaluate to an integer, found {} with value {}",
                type_name(&value),
                format_value(&value)
            ),
        ));
    };
    if bounded && !(i64::from(i16::MIN)..=i64::from(i16::MAX)).contains(&number) {
        return Err(CommandError::new(
            PART_OUT_OF_RANGE,
            format!(
                "'{name}' must evaluate to a value in the range [-32768, 32767]; value {number} \
                 is not in range"
            ),
        ));
    }
    Ok(Some(number))
}

fn from_parts(arguments: &[Expr], scope: &Scope) -> StoreResult<Option<Bson>> {
    let mut time = [0i64; 4];
    for (slot, (name, bounded)) in [
        ("hour", true),
        ("minute", true),
        ("second", false),
        ("millisecond", false),
    ]
    .into_iter()
    .enumerate()
    {
        let Some(value) = part(&arguments[3 + slot], scope, name, 0, bounded)? else {
            return Ok(Some(Bson::Null));
        };
        time[slot] = value;
    }
    let Some(zone) = tz::evaluate(&arguments[10], scope)? else {
        return Ok(Some(Bson::Null));
    };
    let days = if is_absent(&arguments[0]) {
        match iso_days(arguments, scope)? {
            Some(days) => days,
            None => return Ok(Some(Bson::Null)),
        }
    } else {
        match natural_days(arguments, scope)? {
            Some(days) => days,
            None => return Ok(Some(Bson::Null)),
        }
    };
    Ok(Some(date(local_instant(&zone, days, time))))
}

/// The local day number of `year`/`month`/`day`, out-of-range months and days carried into
/// the next unit as mongod does (`month: 13` is January of the next year, `day: 0` the last
/// day of the previous month).
fn natural_days(arguments: &[Expr], scope: &Scope) -> StoreResult<Option<i64>> {
    let Some(year) = part(&arguments[0], scope, "year", 1970, false)? else {
        return Ok(None);
    };
    let Some(month) = part(&arguments[1], scope, "month", 1, true)? else {
        return Ok(None);
    };
    let Some(day) = part(&arguments[2], scope, "day", 1, true)? else {
        return Ok(None);
    };
    if !(1..=9999).contains(&year) {
        return Err(CommandError::new(
            YEAR_OUT_OF_RANGE,
            format!("'year' must evaluate to an integer in the range 1 to 9999, found {year}"),
        ));
    }
    let months = year * 12 + month - 1;
    let month = u32::try_from(months.rem_euclid(12) + 1).unwrap_or(1);
    Ok(Some(calendar::days_from_civil(
        months.div_euclid(12),
        month,
        day,
    )))
}

fn iso_days(arguments: &[Expr], scope: &Scope) -> StoreResult<Option<i64>> {
    let Some(year) = part(&arguments[7], scope, "isoWeekYear", 1970, false)? else {
        return Ok(None);
    };
    let Some(week) = part(&arguments[8], scope, "isoWeek", 1, true)? else {
        return Ok(None);
    };
    let Some(day) = part(&arguments[9], scope, "isoDayOfWeek", 1, true)? else {
        return Ok(None);
    };
    if !(1..=9999).contains(&year) {
        return Err(CommandError::new(
            ISO_YEAR_OUT_OF_RANGE,
            format!(
                "'isoWeekYear' must evaluate to an integer in the range 1 to 9999, found {year}"
            ),
        ));
    }
    Ok(Some(
        calendar::iso_year_start(year) + (week - 1) * 7 + (day - 1),
    ))
}

/// The instant of a local day plus `[hour, minute, second, millisecond]`, each carried over
/// (`hour: 25` is 1 am the next day); past the date range it saturates.
fn local_instant(zone: &TimeZone, days: i64, time: [i64; 4]) -> i64 {
    let local = i128::from(days) * i128::from(MS_PER_DAY)
        + i128::from(time[0]) * 3_600_000
        + i128::from(time[1]) * 60_000
        + i128::from(time[2]) * 1000
        + i128::from(time[3]);
    let local = i64::try_from(local).unwrap_or(if local < 0 { i64::MIN } else { i64::MAX });
    zone.to_utc(local)
}
