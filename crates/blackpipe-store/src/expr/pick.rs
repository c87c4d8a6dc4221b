//! `$firstN`, `$lastN`, `$minN` and `$maxN` (the array expression forms, `{n, input}`) and
//! `$sortArray`.

use std::cmp::Ordering;

use bson::{Bson, Document};

use super::arrays::value_text;
use super::vars::{Defined, Scope};
use super::{Expr, is_nullish, type_of};
use crate::code;
use crate::errors::{CommandError, StoreResult, format_value, type_name};
use crate::value_order::{Number, compare_values};

/// Which of the `n` operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pick {
    First,
    Last,
    Min,
    Max,
}

impl Pick {
    fn name(self) -> &'static str {
        match self {
            Pick::First => "$firstN",
            Pick::Last => "$lastN",
            Pick::Min => "$minN",
            Pick::Max => "$maxN",
        }
    }
}

/// A parsed `$firstN`, `$lastN`, `$minN` or `$maxN`.
#[derive(Debug, Clone)]
pub(crate) struct PickN {
    pick: Pick,
    n: Expr,
    input: Expr,
}

impl PickN {
    pub(super) fn parse(pick: Pick, argument: &Bson, defined: &Defined) -> StoreResult<PickN> {
        let Bson::Document(spec) = argument else {
            let code = if matches!(pick, Pick::First | Pick::Last) {
                code::FIRST_LAST_N_NOT_OBJECT
            } else {
                code::MIN_MAX_N_NOT_OBJECT
            };
            return Err(CommandError::new(
                code,
                format!(
                    "specification must be an object; found {}: {}",
                    pick.name(),
                    format_value(argument)
                ),
            ));
        };
        let (mut n, mut input) = (None, None);
        for (key, value) in spec {
            match key.as_str() {
                "n" => n = Some(Expr::parse_in(value, defined)?),
                "input" => input = Some(Expr::parse_in(value, defined)?),
                _ => {
                    return Err(CommandError::new(
                        code::N_OPERATOR_UNKNOWN_ARGUMENT,
                        format!("Unknown argument for 'n' operator: {key}"),
                    ));
                }
            }
        }
        let n = n.ok_or_else(|| {
            CommandError::new(code::N_OPERATOR_WITHOUT_N, "Missing value for 'n'")
        })?;
        let input = input.ok_or_else(|| {
            CommandError::new(code::N_OPERATOR_WITHOUT_INPUT, "Missing value for 'input'")
        })?;
        Ok(PickN { pick, n, input })
    }

    pub(super) fn evaluate(&self, scope: &Scope) -> StoreResult<Option<Bson>> {
        let n = checked_n(self.n.eval(scope)?.as_ref())?;
        let Some(Bson::Array(mut items)) = self.input.eval(scope)? else {
            return Err(CommandError::new(
                code::N_OPERATOR_INPUT_NOT_ARRAY,
                "Input must be an array",
            ));
        };
        scope.charge(items.len())?;
        let n = usize::try_from(n).unwrap_or(usize::MAX).min(items.len());
        let picked = match self.pick {
            Pick::First => {
                items.truncate(n);
                items
            }
            Pick::Last => items.split_off(items.len() - n),
            Pick::Min | Pick::Max => {
                // Null and missing are not values for `$minN`/`$maxN`.
                items.retain(|item| !is_nullish(Some(item)));
                if self.pick == Pick::Min {
                    items.sort_by(compare_values);
                } else {
                    items.sort_by(|a, b| compare_values(b, a));
                }
                items.truncate(n);
                items
            }
        };
        Ok(Some(Bson::Array(picked)))
    }
}

/// `n`: a positive number with an integer value.
pub(crate) fn checked_n(value: Option<&Bson>) -> StoreResult<i64> {
    let not_integral = |code| {
        CommandError::new(
            code,
            format!(
                "Value for 'n' must be of integral type, but found {}",
                value_text(value)
            ),
        )
    };
    let n = match value.and_then(Number::of) {
        None => return Err(not_integral(code::N_NOT_NUMBER)),
        Some(Number::Int(n)) => n,
        Some(number) => {
            let float = number.as_f64();
            // Within i64's range: 2^63 itself is not.
            if float.fract() != 0.0
                || !(-9.223_372_036_854_775e18..9.223_372_036_854_775e18).contains(&float)
            {
                return Err(not_integral(code::N_NOT_INTEGRAL));
            }
            #[allow(clippy::cast_possible_truncation)]
            let n = float as i64;
            n
        }
    };
    if n <= 0 {
        return Err(CommandError::new(
            code::N_NOT_POSITIVE,
            format!("'n' must be greater than 0, found {n}"),
        ));
    }
    Ok(n)
}

/// How `$sortArray` orders: whole values, or documents by a sort pattern.
#[derive(Debug, Clone)]
enum SortBy {
    Whole { descending: bool },
    Pattern(Vec<(Vec<String>, bool)>),
}

/// A parsed `$sortArray`.
#[derive(Debug, Clone)]
pub(crate) struct SortArray {
    input: Expr,
    sort_by: SortBy,
}

impl SortArray {
    /// Parses `{input, sortBy}`; `sortBy` is 1, -1 or a sort pattern (`{a: 1, "b.c": -1}`).
    pub(super) fn parse(argument: &Bson, defined: &Defined) -> StoreResult<SortArray> {
        let Bson::Document(spec) = argument else {
            return Err(CommandError::new(
                code::SORT_ARRAY_NOT_OBJECT,
                format!(
                    "$sortArray requires an object as an argument, found: {}",
                    type_name(argument)
                ),
            ));
        };
        let (mut input, mut sort_by) = (None, None);
        for (key, value) in spec {
            match key.as_str() {
                "input" => input = Some(Expr::parse_in(value, defined)?),
                "sortBy" => sort_by = Some(parse_sort_by(value)?),
                _ => {
                    return Err(CommandError::new(
                        code::SORT_ARRAY_UNKNOWN_ARGUMENT,
                        format!("$sortArray found an unknown argument: {key}"),
                    ));
                }
            }
        }
        let input = input.ok_or_else(|| {
            CommandError::new(
                code::SORT_ARRAY_WITHOUT_INPUT,
                "$sortArray requires 'input' to be specified",
            )
        })?;
        let sort_by = sort_by.ok_or_else(|| {
            CommandError::new(
                code::SORT_ARRAY_WITHOUT_SORT_BY,
                "$sortArray requires 'sortBy' to be specified",
            )
        })?;
        Ok(SortArray { input, sort_by })
    }

    pub(super) fn evaluate(&self, scope: &Scope) -> StoreResult<Option<Bson>> {
        let mut items = match self.input.eval(scope)? {
            value if is_nullish(value.as_ref()) => return Ok(Some(Bson::Null)),
            Some(Bson::Array(items)) => items,
            other => {
                return Err(CommandError::new(
                    code::SORT_ARRAY_INPUT_NOT_ARRAY,
                    format!(
                        "The input argument to $sortArray must be an array, but was of type: {}",
                        type_of(other.as_ref())
                    ),
                ));
            }
        };
        scope.charge(items.len())?;
        match &self.sort_by {
            SortBy::Whole { descending: false } => items.sort_by(compare_values),
            SortBy::Whole { descending: true } => items.sort_by(|a, b| compare_values(b, a)),
            SortBy::Pattern(pattern) => {
                // Keys are extracted once per element, not once per comparison.
                let mut keyed: Vec<(Vec<Bson>, Bson)> = items
                    .into_iter()
                    .map(|item| (sort_key(&item, pattern), item))
                    .collect();
                keyed.sort_by(|(a, _), (b, _)| compare_keys(a, b, pattern));
                items = keyed.into_iter().map(|(_, item)| item).collect();
            }
        }
        Ok(Some(Bson::Array(items)))
    }
}

fn parse_sort_by(value: &Bson) -> StoreResult<SortBy> {
    match value {
        Bson::Document(pattern) => parse_pattern(pattern).map(SortBy::Pattern),
        other => match Number::of(other).map(Number::as_f64) {
            Some(direction) if direction == 1.0 || direction == -1.0 => Ok(SortBy::Whole {
                descending: direction < 0.0,
            }),
            _ => Err(CommandError::new(
                code::SORT_ARRAY_BAD_SORT_BY,
                "The $sort element value must be either 1 or -1",
            )),
        },
    }
}

/// A sort pattern checked as mongod checks `$push`'s and `$sortArray`'s (BadValue).
fn parse_pattern(pattern: &Document) -> StoreResult<Vec<(Vec<String>, bool)>> {
    if pattern.is_empty() {
        return Err(CommandError::bad_value(
            "The sort pattern is empty when it should be a set of fields.",
        ));
    }
    let mut out = Vec::with_capacity(pattern.len());
    for (field, direction) in pattern {
        let direction = Number::of(direction).map_or(0.0, Number::as_f64);
        if direction != 1.0 && direction != -1.0 {
            return Err(CommandError::bad_value(
                "The sort element value must be either 1 or -1",
            ));
        }
        if field.is_empty() {
            return Err(CommandError::bad_value("The sort field cannot be empty"));
        }
        let parts: Vec<String> = field.split('.').map(str::to_owned).collect();
        if parts.iter().any(String::is_empty) {
            return Err(CommandError::bad_value(format!(
                "The sort field is a dotted field but has an empty part: {field}"
            )));
        }
        out.push((parts, direction < 0.0));
    }
    Ok(out)
}

/// The sort key of an element: each pattern field's value, null when missing (or when the
/// element is not a document). A path steps into arrays by index only, as mongod's template
/// extraction does.
fn sort_key(item: &Bson, pattern: &[(Vec<String>, bool)]) -> Vec<Bson> {
    pattern
        .iter()
        .map(|(parts, _)| {
            let mut current = Some(item).filter(|item| matches!(item, Bson::Document(_)));
            for part in parts {
                current = match current {
                    Some(Bson::Document(document)) => document.get(part),
                    Some(Bson::Array(items)) => {
                        part.parse::<usize>().ok().and_then(|i| items.get(i))
                    }
                    _ => None,
                };
            }
            current.cloned().unwrap_or(Bson::Null)
        })
        .collect()
}

fn compare_keys(left: &[Bson], right: &[Bson], pattern: &[(Vec<String>, bool)]) -> Ordering {
    for ((left, right), (_, descending)) in left.iter().zip(right).zip(pattern) {
        let order = compare_values(left, right);
        let order = if *descending { order.reverse() } else { order };
        if order != Ordering::Equal {
            return order;
        }
    }
    Ordering::Equal
}
