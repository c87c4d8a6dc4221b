//! Capped collections: the `create` options that make one, and the limits it keeps.
//!
//! As in mongod, `size` is required with `capped: true`, is rounded up to a multiple of 256 bytes,
//! and `max` (documents) is optional, a non-positive `max` meaning none. Inserting into a full
//! capped collection removes its oldest documents first.

use bson::{Bson, Document};

use super::errors::{CommandError, StoreResult};
use crate::code;

/// The largest `size` mongod accepts: 1 PB.
const MAX_CAPPED_SIZE: i64 = 1024 * 1024 * 1024 * 1024 * 1024;

/// mongod rounds a capped collection's `size` up to a multiple of this.
const SIZE_GRANULARITY: i64 = 256;

/// The bounds of a capped collection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CappedLimits {
    /// The most bytes (sum of BSON sizes) the documents may take.
    pub(crate) max_bytes: usize,
    /// The most documents it may hold, if bounded.
    pub(crate) max_documents: Option<usize>,
}

impl CappedLimits {
    /// The limits stored in a collection's (already normalised) options.
    pub(crate) fn of(options: &Document) -> Option<CappedLimits> {
        if !matches!(options.get("capped"), Some(Bson::Boolean(true))) {
            return None;
        }
        let bytes = options.get("size").and_then(whole_number).unwrap_or(0);
        let max_documents = options
            .get("max")
            .and_then(whole_number)
            .filter(|max| *max > 0)
            .map(|max| usize::try_from(max).unwrap_or(usize::MAX));
        Some(CappedLimits {
            max_bytes: usize::try_from(bytes).unwrap_or(usize::MAX),
            max_documents,
        })
    }

    /// Whether a collection of `documents` documents taking `bytes` exceeds the limits.
    pub(crate) fn exceeded_by(&self, documents: usize, bytes: usize) -> bool {
        bytes > self.max_bytes || self.max_documents.is_some_and(|max| documents > max)
    }
}

/// A numeric option as mongod's `safeNumberLong` reads it (doubles truncate and saturate).
fn whole_number(value: &Bson) -> Option<i64> {
    match value {
        Bson::Int32(value) => Some(i64::from(*value)),
        Bson::Int64(value) => Some(*value),
        // `as` truncates, saturates and maps NaN to 0, as safeNumberLong does.
        Bson::Double(value) => Some(*value as i64),
        _ => None,
    }
}

/// Checks the capped-collection options of a `create` and returns them as mongod stores them
/// (`size` rounded up, `max` dropped when it sets no bound).
///
/// # Errors
///
/// mongod's: `size` missing with `capped: true` (InvalidOptions), not a number (TypeMismatch),
/// negative or above 1 PB (BadValue); `max` without `capped` or not a number, or 2^31 or more
/// (BadValue); `capped` with `expireAfterSeconds` (InvalidOptions).
pub(crate) fn normalize_options(mut options: Document) -> StoreResult<Document> {
    let capped = options.get("capped").is_some_and(truthy);
    if let Some(max) = options.get("max") {
        let max = whole_number(max).filter(|_| capped).ok_or_else(|| {
            CommandError::bad_value("'max' has to be a number and collection must be capped.")
        })?;
        if max >= 1 << 31 && max != i64::MAX {
            return Err(CommandError::bad_value(
                "max in a capped collection has to be < 2^31 or not set",
            ));
        }
    }
    if !capped {
        return Ok(options);
    }
    if options.contains_key("expireAfterSeconds") {
        return Err(CommandError::new(
            code::INVALID_OPTIONS,
            "Capped collections do not support TTL",
        ));
    }
    let size = match options.get("size") {
        None => {
            return Err(CommandError::new(
                code::INVALID_OPTIONS,
                "the 'size' field is required when 'capped' is true",
            ));
        }
        Some(size) => whole_number(size)
            .ok_or_else(|| CommandError::type_mismatch("'size' has to be a number."))?,
    };
    if size < 0 {
        return Err(CommandError::bad_value("size has to be >= 0"));
    }
    if size > MAX_CAPPED_SIZE {
        return Err(CommandError::bad_value("size cannot exceed 1 PB"));
    }
    // No overflow: size is at most 1 PB.
    let rounded = (size + SIZE_GRANULARITY - 1) / SIZE_GRANULARITY * SIZE_GRANULARITY;
    options.insert("capped", true);
    options.insert("size", rounded);
    let max = options.get("max").and_then(whole_number);
    match max {
        Some(max) if max > 0 && max != i64::MAX => {
            options.insert("max", max);
        }
        _ => {
            options.remove("max");
        }
    }
    Ok(options)
}

/// BSON truthiness, as mongod's `trueValue`.
fn truthy(value: &Bson) -> bool {
    match value {
        Bson::Boolean(value) => *value,
        Bson::Int32(value) => *value != 0,
        Bson::Int64(value) => *value != 0,
        Bson::Double(value) => *value != 0.0,
        Bson::Null | Bson::Undefined => false,
        _ => true,
    }
}
