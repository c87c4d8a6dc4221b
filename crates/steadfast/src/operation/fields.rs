//! Small helpers the operations share to build command bodies and read replies.

use std::time::Duration;

use bson::raw::CStr;
use bson::{Bson, Document, RawBson, RawBsonRef, RawDocument, RawDocumentBuf};

use crate::error::{Error, Result};
use crate::options::duration_ms;

/// Inserts `key: value` when `value` is set (options left unset are never sent).
pub(crate) fn put(body: &mut Document, key: &str, value: Option<impl Into<Bson>>) {
    if let Some(value) = value {
        body.insert(key, value.into());
    }
}

/// Appends `key: value` to an encoded body when `value` is set (options left unset are never
/// sent).
///
/// # Errors
/// `InvalidArgument` when the value cannot be encoded as BSON.
pub(crate) fn put_raw(
    body: &mut RawDocumentBuf,
    key: &CStr,
    value: Option<impl Into<Bson>>,
) -> Result<()> {
    if let Some(value) = value {
        let value = RawBson::try_from(value.into()).map_err(|e| {
            Error::invalid_argument("a command field cannot be encoded as BSON").with_source(e)
        })?;
        body.append(key, value);
    }
    Ok(())
}

/// Inserts `maxTimeMS` when a server-side time limit was given.
pub(crate) fn put_max_time(body: &mut Document, max_time: Option<Duration>) {
    if let Some(max_time) = max_time {
        body.insert("maxTimeMS", duration_ms(max_time));
    }
}

/// A non-negative integer field of a reply (int32, int64 or a whole double).
///
/// # Errors
/// `InvalidResponse` naming `command` when the field is missing, negative or not a number.
pub(crate) fn reply_count(reply: &RawDocument, key: &str, command: &str) -> Result<u64> {
    let value = match reply.get(key) {
        Ok(Some(RawBsonRef::Int32(v))) => u64::try_from(v).ok(),
        Ok(Some(RawBsonRef::Int64(v))) => u64::try_from(v).ok(),
        // Whole, non-negative and in range: the cast is exact.
        Ok(Some(RawBsonRef::Double(v))) if v.fract() == 0.0 && (0.0..9.0e15).contains(&v) => {
            Some(v as u64)
        }
        _ => None,
    };
    value.ok_or_else(|| {
        Error::protocol(format!(
            "the {command} reply has no valid non-negative `{key}` field"
        ))
    })
}

/// The first stage operator of a pipeline's last stage is `$out` or `$merge`: the aggregation
/// writes, returns no documents, and must run on a primary without retryable reads.
pub(crate) fn pipeline_writes(pipeline: &[Document]) -> bool {
    pipeline
        .last()
        .and_then(|stage| stage.keys().next())
        .is_some_and(|op| op == "$out" || op == "$merge")
}
