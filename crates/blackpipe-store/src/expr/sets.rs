//! The set operators: `$setUnion`, `$setIntersection`, `$setDifference`, `$setEquals`,
//! `$setIsSubset`, `$anyElementTrue` and `$allElementsTrue`.
//!
//! Sets are arrays whose elements compare with mongod's value order (`1`, `1.0` and
//! `NumberLong(1)` are one element; the first one seen is kept). `$setUnion` and
//! `$setIntersection` answer in that order, as mongod's ordered sets do; `$setDifference`
//! keeps the first argument's order.

use std::cmp::Ordering;
use std::collections::BTreeSet;

use bson::Bson;

use super::vars::Scope;
use super::{EMPTY_DOCUMENT_BYTES, Expr, grown_size, is_nullish, is_truthy, type_of};
use crate::code;
use crate::errors::{CommandError, StoreResult};
use crate::value_order::{compare_values, decimal_digits};

/// A value ordered by mongod's value order, to live in a `BTreeSet`.
struct Ordered(Bson);

impl PartialEq for Ordered {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ordered {}

impl PartialOrd for Ordered {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ordered {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_values(&self.0, &other.0)
    }
}

fn to_set(items: Vec<Bson>) -> BTreeSet<Ordered> {
    items.into_iter().map(Ordered).collect()
}

/// The set as an array, checked against the BSON size limit (a union can outgrow its inputs).
fn to_array(set: BTreeSet<Ordered>) -> StoreResult<Option<Bson>> {
    let mut out = Vec::with_capacity(set.len());
    let mut size = EMPTY_DOCUMENT_BYTES;
    for Ordered(item) in set {
        size = grown_size(size, decimal_digits(out.len()), &item)?;
        out.push(item);
    }
    Ok(Some(Bson::Array(out)))
}

/// An argument that must be an array: `Ok(None)` for null or missing where `nullish_ok`.
fn array_argument(
    value: Option<Bson>,
    scope: &Scope,
    error: impl FnOnce(&str) -> CommandError,
) -> StoreResult<Option<Vec<Bson>>> {
    match value {
        Some(Bson::Array(items)) => {
            scope.charge(items.len())?;
            Ok(Some(items))
        }
        value if is_nullish(value.as_ref()) => Ok(None),
        other => Err(error(type_of(other.as_ref()))),
    }
}

/// `$setUnion`: null as soon as an argument is null or missing.
pub(super) fn union(arguments: &[Expr], scope: &Scope) -> StoreResult<Option<Bson>> {
    let mut set = BTreeSet::new();
    for argument in arguments {
        let Some(items) = array_argument(argument.eval(scope)?, scope, |found| {
            CommandError::new(
                code::SET_UNION_NOT_ARRAY,
                format!(
                    "All operands of $setUnion must be arrays. One argument is of type: {found}"
                ),
            )
        })?
        else {
            return Ok(Some(Bson::Null));
        };
        // `insert` keeps the element already present, as mongod's set does.
        for item in items {
            set.insert(Ordered(item));
        }
    }
    to_array(set)
}

/// `$setIntersection`: null as soon as an argument is null or missing.
pub(super) fn intersection(arguments: &[Expr], scope: &Scope) -> StoreResult<Option<Bson>> {
    let mut current: Option<BTreeSet<Ordered>> = None;
    for argument in arguments {
        let Some(items) = array_argument(argument.eval(scope)?, scope, |found| {
            CommandError::new(
                code::SET_INTERSECTION_NOT_ARRAY,
                format!(
                    "All operands of $setIntersection must be arrays. One argument is of type: \
                     {found}"
                ),
            )
        })?
        else {
            return Ok(Some(Bson::Null));
        };
        let next = to_set(items);
        current = Some(match current {
            None => next,
            Some(mut kept) => {
                // mongod keeps the elements of the smaller set, so equal elements of different
                // types come from it.
                let mut other = next;
                if kept.len() > other.len() {
                    std::mem::swap(&mut kept, &mut other);
                }
                kept.retain(|item| other.contains(item));
                kept
            }
        });
    }
    to_array(current.unwrap_or_default())
}

/// `$setDifference: [a, b]`: the distinct elements of `a` not in `b`, in `a`'s order.
pub(super) fn difference(arguments: &[Expr], scope: &Scope) -> StoreResult<Option<Bson>> {
    let left = arguments[0].eval(scope)?;
    let right = arguments[1].eval(scope)?;
    if is_nullish(left.as_ref()) || is_nullish(right.as_ref()) {
        return Ok(Some(Bson::Null));
    }
    let Some(Bson::Array(left)) = left else {
        return Err(CommandError::new(
            code::SET_DIFFERENCE_FIRST_NOT_ARRAY,
            format!(
                "both operands of $setDifference must be arrays. First argument is of type: {}",
                type_of(left.as_ref())
            ),
        ));
    };
    let Some(Bson::Array(right)) = right else {
        return Err(CommandError::new(
            code::SET_DIFFERENCE_SECOND_NOT_ARRAY,
            format!(
                "both operands of $setDifference must be arrays. Second argument is of type: {}",
                type_of(right.as_ref())
            ),
        ));
    };
    scope.charge(left.len().saturating_add(right.len()))?;
    // The right set also serves to drop the left's repeats, as in mongod.
    let mut seen = to_set(right);
    let mut out = Vec::new();
    for item in left {
        let probe = Ordered(item);
        if !seen.contains(&probe) {
            out.push(probe.0.clone());
            seen.insert(probe);
        }
    }
    Ok(Some(Bson::Array(out)))
}

/// `$setEquals`: at least two arrays (null is not one), all the same set.
pub(super) fn equals(arguments: &[Expr], scope: &Scope) -> StoreResult<Option<Bson>> {
    let mut first: Option<BTreeSet<Ordered>> = None;
    let mut equal = true;
    for (position, argument) in arguments.iter().enumerate() {
        let items = match argument.eval(scope)? {
            Some(Bson::Array(items)) => items,
            other => {
                return Err(CommandError::new(
                    code::SET_EQUALS_NOT_ARRAY,
                    format!(
                        "All operands of $setEquals must be arrays. {}-th argument is of type: {}",
                        position + 1,
                        type_of(other.as_ref())
                    ),
                ));
            }
        };
        scope.charge(items.len())?;
        let set = to_set(items);
        match &first {
            None => first = Some(set),
            Some(first) => equal &= *first == set,
        }
        if !equal {
            return Ok(Some(Bson::Boolean(false)));
        }
    }
    Ok(Some(Bson::Boolean(true)))
}

/// `$setIsSubset: [a, b]`: every element of `a` is in `b` (null is not an array).
pub(super) fn is_subset(arguments: &[Expr], scope: &Scope) -> StoreResult<Option<Bson>> {
    let left = match arguments[0].eval(scope)? {
        Some(Bson::Array(items)) => items,
        other => {
            return Err(CommandError::new(
                code::SET_IS_SUBSET_FIRST_NOT_ARRAY,
                format!(
                    "both operands of $setIsSubset must be arrays. First argument is of type: {}",
                    type_of(other.as_ref())
                ),
            ));
        }
    };
    let right = match arguments[1].eval(scope)? {
        Some(Bson::Array(items)) => items,
        other => {
            return Err(CommandError::new(
                code::SET_IS_SUBSET_SECOND_NOT_ARRAY,
                format!(
                    "both operands of $setIsSubset must be arrays. Second argument is of type: {}",
                    type_of(other.as_ref())
                ),
            ));
        }
    };
    scope.charge(left.len().saturating_add(right.len()))?;
    let right = to_set(right);
    Ok(Some(Bson::Boolean(
        left.into_iter().all(|item| right.contains(&Ordered(item))),
    )))
}

/// `$anyElementTrue` (`all` false) and `$allElementsTrue` (`all` true) over one array.
pub(super) fn elements_true(
    all: bool,
    arguments: &[Expr],
    scope: &Scope,
) -> StoreResult<Option<Bson>> {
    let items = match arguments[0].eval(scope)? {
        Some(Bson::Array(items)) => items,
        other => {
            let (code, name) = if all {
                (code::ALL_ELEMENTS_TRUE_NOT_ARRAY, "$allElementsTrue")
            } else {
                (code::ANY_ELEMENT_TRUE_NOT_ARRAY, "$anyElementTrue")
            };
            return Err(CommandError::new(
                code,
                format!(
                    "{name}'s argument must be an array, but is {}",
                    type_of(other.as_ref())
                ),
            ));
        }
    };
    scope.charge(items.len())?;
    let answer = if all {
        items.iter().all(is_truthy)
    } else {
        items.iter().any(is_truthy)
    };
    Ok(Some(Bson::Boolean(answer)))
}
