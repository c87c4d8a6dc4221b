//! The window functions that read particular documents rather than accumulate a frame:
//! `$first`/`$last` (the frame's ends), `$shift`, `$derivative` and `$linearFill`.

use std::cmp::Ordering;
use std::sync::Arc;

use bson::{Bson, Document};

use crate::code;
use crate::errors::{CommandError, StoreResult, type_name};
use crate::expr::Expr;
use crate::expr::accum_support;
use crate::value_order::{Number, compare_values};

/// `$first`/`$last`: the input at the frame's first or last document (missing stays missing),
/// null for an empty frame.
pub(super) fn endpoints(
    last: bool,
    input: &Expr,
    frames: &[Option<(usize, usize)>],
    partition: &[Arc<Document>],
) -> StoreResult<Vec<Option<Bson>>> {
    frames
        .iter()
        .map(|frame| match frame {
            None => Ok(Some(Bson::Null)),
            Some((low, high)) => input.evaluate(&partition[if last { *high } else { *low }]),
        })
        .collect()
}

/// `$shift`: `output` at the document `by` positions away in the partition, else `default`.
pub(super) fn shift(
    output: &Expr,
    by: i64,
    default: &Bson,
    partition: &[Arc<Document>],
) -> StoreResult<Vec<Option<Bson>>> {
    (0..partition.len())
        .map(|position| {
            let target = i64::try_from(position)
                .ok()
                .and_then(|position| position.checked_add(by))
                .and_then(|target| usize::try_from(target).ok())
                .filter(|target| *target < partition.len());
            match target {
                Some(target) => output.evaluate(&partition[target]),
                None => Ok(Some(default.clone())),
            }
        })
        .collect()
}

/// `$derivative`: (input at the frame's end - input at its start) / (sortBy at the end -
/// sortBy at the start), per `unit` when the sortBy values are dates; null for an empty
/// frame or a frame of no width.
pub(super) fn derivative(
    input: &Expr,
    unit_ms: Option<i64>,
    frames: &[Option<(usize, usize)>],
    sort_values: &[Option<Bson>],
    partition: &[Arc<Document>],
) -> StoreResult<Vec<Option<Bson>>> {
    let mut out = Vec::with_capacity(frames.len());
    for frame in frames {
        let Some((low, high)) = *frame else {
            out.push(Some(Bson::Null));
            continue;
        };
        let (left, right) = (&sort_values[low], &sort_values[high]);
        check_derivative_times(left.as_ref(), right.as_ref(), unit_ms)?;
        let (Some(left_time), Some(right_time)) = (left, right) else {
            out.push(Some(Bson::Null));
            continue;
        };
        let run = accum_support::subtract(right_time, left_time)?.unwrap_or(Bson::Null);
        let rise = match (
            input.evaluate(&partition[high])?,
            input.evaluate(&partition[low])?,
        ) {
            (Some(end), Some(start)) => {
                accum_support::subtract(&end, &start)?.unwrap_or(Bson::Null)
            }
            _ => Bson::Null,
        };
        if matches!(rise, Bson::Null | Bson::Undefined) {
            return Err(CommandError::new(
                code::DERIVATIVE_NULL_INPUT,
                "$derivative input must not be null or missing",
            ));
        }
        let slope = match accum_support::divide(&rise, &run) {
            Ok(slope) => slope.unwrap_or(Bson::Null),
            // A frame of no width (one document) has no slope: null, not an error.
            Err(error) if error.code == 16608 => {
                out.push(Some(Bson::Null));
                continue;
            }
            Err(error) => return Err(error),
        };
        let value = match unit_ms {
            Some(unit) => accum_support::multiply(&slope, &Bson::Int64(unit))?,
            None => Some(slope),
        };
        out.push(value);
    }
    Ok(out)
}

fn check_derivative_times(
    left: Option<&Bson>,
    right: Option<&Bson>,
    unit_ms: Option<i64>,
) -> StoreResult<()> {
    let is_date = |value: Option<&Bson>| matches!(value, Some(Bson::DateTime(_)));
    if unit_ms.is_some() {
        if !is_date(left) || !is_date(right) {
            return Err(CommandError::new(
                code::DERIVATIVE_UNIT_NOT_DATE,
                "$derivative with 'unit' expects the sortBy field to be a Date",
            ));
        }
        return Ok(());
    }
    if is_date(left) || is_date(right) {
        return Err(CommandError::new(
            code::DERIVATIVE_DATE_WITHOUT_UNIT,
            "$derivative where the sortBy is a Date requires an 'unit'",
        ));
    }
    let numeric = |value: Option<&Bson>| value.and_then(Number::of).is_some();
    if !numeric(left) || !numeric(right) {
        return Err(CommandError::new(
            code::DERIVATIVE_NOT_NUMBER,
            "$derivative (with no 'unit') expects the sortBy field to be numeric",
        ));
    }
    Ok(())
}

fn nullish(value: Option<&Bson>) -> bool {
    matches!(value, None | Some(Bson::Null | Bson::Undefined))
}

/// Whether a value is a date as `$linearFill` reads dates (dates, timestamps, object ids).
fn date_like(value: Option<&Bson>) -> bool {
    matches!(
        value,
        Some(Bson::DateTime(_) | Bson::Timestamp(_) | Bson::ObjectId(_))
    )
}

/// `$linearFill`: a null or missing input between two documents with numbers is interpolated
/// along the sortBy value; elsewhere it stays null. Sort values must be numbers or dates, all
/// of one kind, and never repeat.
pub(super) fn linear_fill(
    input: &Expr,
    sort_values: &[Option<Bson>],
    partition: &[Arc<Document>],
) -> StoreResult<Vec<Option<Bson>>> {
    let fills = partition
        .iter()
        .map(|document| input.evaluate(document))
        .collect::<StoreResult<Vec<_>>>()?;
    // For each position, the next known point after it (a non-null input and sort value).
    let mut next_known = vec![None; partition.len()];
    let mut known = None;
    for position in (0..partition.len()).rev() {
        next_known[position] = known;
        if !nullish(fills[position].as_ref()) && !nullish(sort_values[position].as_ref()) {
            known = Some(position);
        }
    }
    let mut out = Vec::with_capacity(partition.len());
    let mut previous_sort: Option<Bson> = None;
    let mut left: Option<(Bson, Bson)> = None;
    for position in 0..partition.len() {
        let fill = fills[position].as_ref();
        let x = sort_values[position].as_ref();
        check_fill_point(fill, x, previous_sort.as_ref())?;
        let x = x.cloned().unwrap_or(Bson::Null);
        previous_sort = Some(x.clone());
        if let Some(y) = fill.filter(|fill| !nullish(Some(fill))) {
            left = Some((x, y.clone()));
            out.push(Some(y.clone()));
            continue;
        }
        let right = next_known[position]
            .and_then(|next| Some((sort_values[next].clone()?, fills[next].clone()?)));
        let (Some((x1, y1)), Some((x2, y2))) = (&left, right) else {
            out.push(Some(Bson::Null));
            continue;
        };
        out.push(Some(interpolate(x1, y1, &x2, &y2, &x)?));
    }
    Ok(out)
}

fn check_fill_point(
    fill: Option<&Bson>,
    x: Option<&Bson>,
    previous: Option<&Bson>,
) -> StoreResult<()> {
    let type_of = |value: Option<&Bson>| value.map_or("missing", type_name);
    if !nullish(fill) && fill.and_then(Number::of).is_none() {
        return Err(CommandError::type_mismatch(format!(
            "Value to be filled must be numeric or nullish, but found {}",
            type_of(fill)
        )));
    }
    let numeric = |value: Option<&Bson>| value.and_then(Number::of).is_some();
    if !numeric(x) && !date_like(x) {
        return Err(CommandError::type_mismatch(format!(
            "Value of the sortBy field must be numeric or a date, but found {}",
            type_of(x)
        )));
    }
    if let Some(previous) = previous {
        if x.is_some_and(|x| compare_values(x, previous) == Ordering::Equal) {
            return Err(CommandError::new(
                code::LINEAR_FILL_REPEATED_SORT_VALUE,
                "There can be no repeated values in the sort field",
            ));
        }
        let same_kind =
            (date_like(x) && date_like(Some(previous))) || (numeric(x) && numeric(Some(previous)));
        if !same_kind {
            return Err(CommandError::type_mismatch(format!(
                "Conflicting sort value types, previously received type {}, but found {}",
                type_name(previous),
                type_of(x)
            )));
        }
    }
    Ok(())
}

/// `y1 + (x - x1) * ((y2 - y1) / (x2 - x1))` with the expression operators.
fn interpolate(x1: &Bson, y1: &Bson, x2: &Bson, y2: &Bson, x: &Bson) -> StoreResult<Bson> {
    let null = || Bson::Null;
    let rise = accum_support::subtract(y2, y1)?.unwrap_or_else(null);
    let run = accum_support::subtract(x2, x1)?.unwrap_or_else(null);
    let slope = accum_support::divide(&rise, &run)?.unwrap_or_else(null);
    let offset = accum_support::subtract(x, x1)?.unwrap_or_else(null);
    let step = accum_support::multiply(&offset, &slope)?.unwrap_or_else(null);
    Ok(accum_support::add(y1, &step)?.unwrap_or_else(null))
}
