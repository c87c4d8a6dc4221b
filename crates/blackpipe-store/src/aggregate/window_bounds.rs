//! `$setWindowFields` window bounds (`window: {documents: [lo, hi]}` or
//! `{range: [lo, hi], unit}`), parsed with mongod's checks, and the frame each document gets.

use std::cmp::Ordering;

use bson::{Bson, Document, doc};

use super::accumulator::constant_of;
use crate::code;
use crate::errors::{CommandError, StoreResult, format_value, type_name};
use crate::expr::Expr;
use crate::expr::accum_support::value_text;
use crate::sort::SortSpec;
use crate::value_order::{Number, compare_values};

/// One end of a window.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Bound<T> {
    Unbounded,
    Current,
    At(T),
}

/// A window's bounds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Bounds {
    /// Offsets from the current document.
    Documents(Bound<i64>, Bound<i64>),
    /// Distances from the current document's `sortBy` value (numbers, or with `unit`, whole
    /// units of time from a date).
    Range(Bound<Bson>, Bound<Bson>, Option<TimeUnit>),
}

impl Bounds {
    /// `["unbounded", "unbounded"]`, the default.
    pub(crate) const WHOLE: Bounds = Bounds::Documents(Bound::Unbounded, Bound::Unbounded);
    /// `["unbounded", "current"]`, the window of the running functions (`$rank`, `$locf`...).
    pub(crate) const RUNNING: Bounds = Bounds::Documents(Bound::Unbounded, Bound::Current);

    /// Whether the lower bound moves (mongod then uses a removable window function).
    pub(crate) fn removable(&self) -> bool {
        !matches!(
            self,
            Bounds::Documents(Bound::Unbounded, _) | Bounds::Range(Bound::Unbounded, _, _)
        )
    }
}

/// A time unit of a range window or of `$derivative`/`$integral`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimeUnit {
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

impl TimeUnit {
    pub(crate) fn parse(text: &str) -> StoreResult<TimeUnit> {
        Ok(match text {
            "year" => TimeUnit::Year,
            "quarter" => TimeUnit::Quarter,
            "month" => TimeUnit::Month,
            "week" => TimeUnit::Week,
            "day" => TimeUnit::Day,
            "hour" => TimeUnit::Hour,
            "minute" => TimeUnit::Minute,
            "second" => TimeUnit::Second,
            "millisecond" => TimeUnit::Millisecond,
            _ => {
                return Err(CommandError::failed_to_parse(format!(
                    "unknown time unit value: {text}"
                )));
            }
        })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            TimeUnit::Year => "year",
            TimeUnit::Quarter => "quarter",
            TimeUnit::Month => "month",
            TimeUnit::Week => "week",
            TimeUnit::Day => "day",
            TimeUnit::Hour => "hour",
            TimeUnit::Minute => "minute",
            TimeUnit::Second => "second",
            TimeUnit::Millisecond => "millisecond",
        }
    }

    /// The unit's length, for the units of fixed length (a week or less).
    pub(crate) fn millis(self) -> Option<i64> {
        Some(match self {
            TimeUnit::Week => 604_800_000,
            TimeUnit::Day => 86_400_000,
            TimeUnit::Hour => 3_600_000,
            TimeUnit::Minute => 60_000,
            TimeUnit::Second => 1000,
            TimeUnit::Millisecond => 1,
            TimeUnit::Year | TimeUnit::Quarter | TimeUnit::Month => return None,
        })
    }
}

fn failed(message: impl Into<String>) -> CommandError {
    CommandError::failed_to_parse(message)
}

/// Parses a `window` field. `sort_by` is the stage's `sortBy`.
pub(crate) fn parse(window: &Bson, sort_by: Option<&SortSpec>) -> StoreResult<Bounds> {
    let Bson::Document(spec) = window else {
        return Err(failed("'window' field must be an object"));
    };
    let (documents, range, unit) = (spec.get("documents"), spec.get("range"), spec.get("unit"));
    if documents.is_some() && range.is_some() {
        return Err(failed(
            "Window bounds can specify either 'documents' or 'unit', not both.",
        ));
    }
    if range.is_none() && unit.is_some() {
        return Err(failed(
            "Window bounds can only specify 'unit' with range-based bounds.",
        ));
    }
    if let Some(documents) = documents {
        if spec.len() != 1 {
            return Err(failed(
                "'window' field that specifies documents cannot have other fields",
            ));
        }
        return parse_documents(documents, sort_by);
    }
    let Some(range) = range else {
        if !spec.is_empty() {
            return Err(failed(
                "'window' field can only contain 'documents' as the only argument or 'range' \
                 with an optional 'unit' field",
            ));
        }
        return Ok(Bounds::WHOLE);
    };
    let bounds = parse_range(spec, range, unit)?;
    let single = sort_by.map(SortSpec::keys).filter(|keys| keys.len() == 1);
    let Some([(_, ascending)]) = single else {
        return Err(CommandError::new(
            code::WINDOW_RANGE_SORT_BY,
            "Range-based bounds require sortBy a single field",
        ));
    };
    if !ascending {
        return Err(CommandError::new(
            code::WINDOW_RANGE_DESCENDING,
            "Range-based bounds require an ascending sortBy",
        ));
    }
    Ok(bounds)
}

/// The two elements of a bounds array.
fn pair<'a>(name: &str, value: &'a Bson) -> StoreResult<(&'a Bson, &'a Bson)> {
    match value {
        Bson::Array(items) if items.len() == 2 => Ok((&items[0], &items[1])),
        other => Err(failed(format!(
            "Window bounds must be a 2-element array: {name}: {}",
            format_value(other)
        ))),
    }
}

/// One bound: "unbounded", "current" or a constant expression `check` accepts.
fn bound<T>(value: &Bson, check: impl Fn(Bson) -> StoreResult<T>) -> StoreResult<Bound<T>> {
    if let Bson::String(text) = value {
        return match text.as_str() {
            "unbounded" => Ok(Bound::Unbounded),
            "current" => Ok(Bound::Current),
            _ => Err(failed(
                "Window bounds must be 'unbounded', 'current', or a number.",
            )),
        };
    }
    match constant_of(&Expr::parse(value)?) {
        Some(constant) => check(constant).map(Bound::At),
        None => Err(failed("Window bounds expression must be a constant.")),
    }
}

/// A number with an integral value that fits an int (mongod's `Value::integral`).
fn integral(value: &Bson) -> Option<i64> {
    let number = Number::of(value)?.as_f64();
    (number.fract() == 0.0 && number >= f64::from(i32::MIN) && number <= f64::from(i32::MAX)).then(
        || {
            #[allow(clippy::cast_possible_truncation)]
            let whole = number as i64;
            whole
        },
    )
}

fn parse_documents(documents: &Bson, sort_by: Option<&SortSpec>) -> StoreResult<Bounds> {
    let (lower, upper) = pair("documents", documents)?;
    let whole = |value: Bson| {
        integral(&value).ok_or_else(|| failed("Numeric document-based bounds must be an integer"))
    };
    let lower = bound(lower, whole)?;
    let upper = bound(upper, whole)?;
    let at = |bound: &Bound<i64>| match bound {
        Bound::Current => Some(0),
        Bound::At(offset) => Some(*offset),
        Bound::Unbounded => None,
    };
    if let (Some(low), Some(high)) = (at(&lower), at(&upper)) {
        if low > high {
            return Err(CommandError::new(
                code::WINDOW_BOUNDS_INVERTED,
                format!("Lower bound must not exceed upper bound: [{low}, {high}]"),
            ));
        }
    }
    let bounds = Bounds::Documents(lower, upper);
    if bounds != Bounds::WHOLE && sort_by.is_none() {
        return Err(CommandError::new(
            code::WINDOW_DOCUMENTS_WITHOUT_SORT_BY,
            "Document-based bounds require a sortBy",
        ));
    }
    Ok(bounds)
}

fn parse_range(spec: &Document, range: &Bson, unit: Option<&Bson>) -> StoreResult<Bounds> {
    let (lower, upper) = pair("range", range)?;
    let unit = match unit {
        Some(unit) => {
            if spec.len() != 2 {
                return Err(failed(
                    "'window' field that specifies unit cannot have other fields besides 'range'",
                ));
            }
            match unit {
                Bson::String(text) => Some(text.as_str()),
                _ => return Err(failed("'unit' must be a string")),
            }
        }
        None => {
            if spec.len() != 1 {
                return Err(failed(
                    "'window' field that specifies range cannot have other fields besides 'unit'",
                ));
            }
            None
        }
    };
    let check = |value: Bson| -> StoreResult<Bson> {
        if unit.is_some() {
            integral(&value)
                .map(Bson::Int64)
                .ok_or_else(|| failed("With 'unit', range-based bounds must be an integer"))
        } else if Number::of(&value).is_some() {
            Ok(value)
        } else {
            Err(failed("Range-based bounds expression must be a number"))
        }
    };
    let lower = bound(lower, check)?;
    let upper = bound(upper, check)?;
    let at = |bound: &Bound<Bson>| match bound {
        Bound::Current => Some(Bson::Int32(0)),
        Bound::At(value) => Some(value.clone()),
        Bound::Unbounded => None,
    };
    if let (Some(low), Some(high)) = (at(&lower), at(&upper)) {
        if compare_values(&low, &high) == Ordering::Greater {
            return Err(CommandError::new(
                code::WINDOW_BOUNDS_INVERTED,
                format!(
                    "Lower bound must not exceed upper bound: [{}, {}]",
                    value_text(Some(&low)),
                    value_text(Some(&high))
                ),
            ));
        }
    }
    let unit = unit.map(TimeUnit::parse).transpose()?;
    Ok(Bounds::Range(lower, upper, unit))
}

/// The frames of a partition's documents: for each, the first and last position in the
/// window, `None` when the window is empty.
pub(crate) fn frames(
    bounds: &Bounds,
    sort_values: &[Option<Bson>],
    len: usize,
) -> StoreResult<Vec<Option<(usize, usize)>>> {
    match bounds {
        Bounds::Documents(lower, upper) => Ok((0..len)
            .map(|current| document_frame(lower, upper, current, len))
            .collect()),
        Bounds::Range(lower, upper, unit) => range_frames(lower, upper, *unit, sort_values),
    }
}

fn document_frame(
    lower: &Bound<i64>,
    upper: &Bound<i64>,
    current: usize,
    len: usize,
) -> Option<(usize, usize)> {
    let current = i64::try_from(current).unwrap_or(i64::MAX);
    let last = i64::try_from(len).unwrap_or(i64::MAX) - 1;
    let offset = |bound: &Bound<i64>| match bound {
        Bound::Unbounded => None,
        Bound::Current => Some(current),
        Bound::At(delta) => Some(current.saturating_add(*delta)),
    };
    let low = offset(lower).unwrap_or(0);
    let high = offset(upper).unwrap_or(last);
    if low > last || high < 0 {
        return None;
    }
    let low = usize::try_from(low.max(0)).unwrap_or(0);
    let high = usize::try_from(high.min(last)).unwrap_or(0);
    Some((low, high))
}

/// Whether a `sortBy` value is of the type a range window measures (a date with `unit`, else a
/// number).
fn measurable(value: Option<&Bson>, unit: Option<TimeUnit>) -> bool {
    match value {
        Some(Bson::DateTime(_)) => unit.is_some(),
        Some(value) => unit.is_none() && Number::of(value).is_some(),
        None => false,
    }
}

/// The current document's `sortBy` value checked as mongod checks it.
fn base_value(value: Option<&Bson>, unit: Option<TimeUnit>) -> StoreResult<Bson> {
    let type_of = value.map_or("missing", type_name);
    match (value, unit) {
        (Some(value @ Bson::DateTime(_)), Some(_)) => Ok(value.clone()),
        (_, Some(_)) => Err(CommandError::new(
            code::WINDOW_RANGE_NOT_DATE,
            format!("Invalid range: Expected the sortBy field to be a Date, but it was {type_of}"),
        )),
        (Some(Bson::DateTime(_)), None) => Err(CommandError::new(
            code::WINDOW_RANGE_DATE_WITHOUT_UNIT,
            "Invalid range: For windows that involve date or time ranges, a unit must be provided.",
        )),
        (Some(value), None) if Number::of(value).is_some() => Ok(value.clone()),
        (_, None) => Err(CommandError::new(
            code::WINDOW_RANGE_NOT_NUMBER,
            format!(
                "Invalid range: Expected the sortBy field to be a number, but it was {type_of}"
            ),
        )),
    }
}

/// `base + delta`: a decimal sum for numbers (the type is never observed), a date moved by
/// whole units with `unit`.
fn threshold(base: &Bson, delta: &Bson, unit: Option<TimeUnit>) -> StoreResult<Bson> {
    let Some(unit) = unit else {
        let (Some(a), Some(b)) = (Number::of(base), Number::of(delta)) else {
            return Ok(Bson::Null);
        };
        let sum = crate::decimal::apply(
            crate::decimal::DecimalOp::Add,
            crate::arith::decimal_operand(a),
            crate::arith::decimal_operand(b),
        );
        return Ok(crate::decimal::to_bson(sum));
    };
    let amount = match delta {
        Bson::Int64(amount) => *amount,
        other => integral(other).unwrap_or(0),
    };
    let Bson::DateTime(at) = base else {
        return Ok(Bson::Null);
    };
    if let Some(millis) = unit.millis() {
        let moved = at
            .timestamp_millis()
            .saturating_add(amount.saturating_mul(millis));
        return Ok(Bson::DateTime(bson::DateTime::from_millis(moved)));
    }
    // Calendar units move as `$dateAdd` moves a date in UTC.
    let add = doc! { "$dateAdd": { "startDate": { "$literal": base.clone() }, "unit": unit.name(), "amount": amount } };
    Ok(Expr::parse(&Bson::Document(add))?
        .evaluate(&Document::new())?
        .unwrap_or(Bson::Null))
}

/// Range frames, found as mongod finds them: scanning from the previous frame's ends.
fn range_frames(
    lower: &Bound<Bson>,
    upper: &Bound<Bson>,
    unit: Option<TimeUnit>,
    values: &[Option<Bson>],
) -> StoreResult<Vec<Option<(usize, usize)>>> {
    let len = values.len();
    let mut out = Vec::with_capacity(len);
    let (mut low_hint, mut high_hint) = (0usize, 0usize);
    for current in 0..len {
        let base = base_value(values[current].as_ref(), unit)?;
        let low = match lower {
            Bound::Current => Some(current),
            Bound::Unbounded => (low_hint..len).find(|&i| measurable(values[i].as_ref(), unit)),
            Bound::At(delta) => {
                let limit = threshold(&base, delta, unit)?;
                (low_hint..len).find(|&i| {
                    let value = values[i].clone().unwrap_or(Bson::Null);
                    compare_values(&value, &limit) != Ordering::Less
                })
            }
        };
        let Some(low) = low else {
            out.push(None);
            continue;
        };
        low_hint = low;
        let high = match upper {
            Bound::Current => Some(current),
            Bound::Unbounded => {
                let start = current.max(low).max(high_hint);
                let end = (start..len)
                    .find(|&i| !measurable(values[i].as_ref(), unit))
                    .unwrap_or(len);
                end.checked_sub(1)
            }
            Bound::At(delta) => {
                let limit = threshold(&base, delta, unit)?;
                let start = low.max(high_hint);
                let beyond = (start..len).find(|&i| {
                    let value = values[i].clone().unwrap_or(Bson::Null);
                    compare_values(&limit, &value) == Ordering::Less
                });
                match beyond {
                    Some(i) if i == start => None,
                    Some(i) => Some(i - 1),
                    None => len.checked_sub(1),
                }
            }
        };
        match high {
            Some(high) if high >= low => {
                high_hint = high;
                out.push(Some((low, high)));
            }
            _ => out.push(None),
        }
    }
    Ok(out)
}
