//! The expression helpers the accumulators and window functions share (accumulators family):
//! `$derivative`, `$integral` and `$linearFill` compute with `$add`, `$subtract`, `$multiply`
//! and `$divide` exactly as those operators do, and messages print values as expressions do.

use bson::Bson;

use super::{Operator, arrays, ops};
use crate::errors::StoreResult;

/// A value as mongod's `Value::toString` prints it in messages (`MISSING` when missing).
pub(crate) fn value_text(value: Option<&Bson>) -> String {
    arrays::value_text(value)
}

/// A double as C++ streams print it (`1.5`, `3e+09`).
pub(crate) fn cpp_double(number: f64) -> String {
    arrays::cpp_double(number)
}

/// `$add` of two values.
pub(crate) fn add(left: &Bson, right: &Bson) -> StoreResult<Option<Bson>> {
    ops::add(&[Some(left.clone()), Some(right.clone())])
}

/// `$subtract` of two values (dates give milliseconds).
pub(crate) fn subtract(left: &Bson, right: &Bson) -> StoreResult<Option<Bson>> {
    ops::subtract(Some(left), Some(right))
}

/// `$multiply` of two values.
pub(crate) fn multiply(left: &Bson, right: &Bson) -> StoreResult<Option<Bson>> {
    ops::multiply(&[Some(left.clone()), Some(right.clone())])
}

/// `$divide` of two values (16608 when dividing by zero).
pub(crate) fn divide(left: &Bson, right: &Bson) -> StoreResult<Option<Bson>> {
    ops::divide_or_mod(Operator::Divide, Some(left), Some(right))
}
