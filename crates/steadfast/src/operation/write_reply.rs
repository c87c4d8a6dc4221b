//! Reading the reply of one `insert`/`update`/`delete` batch command.

use bson::{Bson, Document, RawDocumentBuf};

use steadfast_core::ErrorLabels;

use super::write::WriteKind;
use crate::error::{Error, IndexedWriteError, ReplyWriteErrors, Result, WriteConcernError};

/// What one batch command reported. Indexes are positions in the run of statements (the
/// batch's own indexes shifted by `start`).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct BatchOutcome {
    /// The run position of the batch's first statement.
    pub(crate) start: usize,
    /// How many statements the batch sent.
    pub(crate) count: usize,
    /// `n`: documents inserted, matched (updates, upserts included) or deleted.
    pub(crate) n: u64,
    /// `nModified` (updates only).
    pub(crate) n_modified: u64,
    /// Upserted `_id`s with the run position of their statement.
    pub(crate) upserted: Vec<(usize, Bson)>,
    /// Write errors, with run positions as indexes.
    pub(crate) write_errors: Vec<IndexedWriteError>,
    /// The write concern error, if the reply had one.
    pub(crate) write_concern_error: Option<WriteConcernError>,
    /// The reply's error labels (and its write concern error's).
    pub(crate) labels: ErrorLabels,
}

impl BatchOutcome {
    /// Reads an `ok: 1` reply to a batch of `count` statements starting at run position `start`.
    ///
    /// # Errors
    /// `InvalidResponse` when the reply is not valid BSON or a write error's index lies outside the
    /// batch.
    pub(crate) fn parse(
        reply: &RawDocumentBuf,
        kind: WriteKind,
        start: usize,
        count: usize,
    ) -> Result<BatchOutcome> {
        let reply = Document::try_from(reply.clone()).map_err(|e| {
            Error::protocol(format!(
                "the {} reply is not valid BSON",
                kind.command_name()
            ))
            .with_source(e)
        })?;
        let mut outcome = BatchOutcome {
            start,
            count,
            n: count_field(&reply, "n"),
            n_modified: count_field(&reply, "nModified"),
            ..BatchOutcome::default()
        };
        if let Ok(upserted) = reply.get_array("upserted") {
            for entry in upserted.iter().filter_map(Bson::as_document) {
                let index = entry.get("index").and_then(bson_as_usize);
                if let (Some(index), Some(id)) = (index, entry.get("_id")) {
                    outcome.upserted.push((start + index, id.clone()));
                }
            }
        }
        if let Some(failure) = ReplyWriteErrors::from_reply(&reply) {
            outcome.write_concern_error = failure.write_concern_error;
            outcome.labels = failure.labels;
            for mut error in failure.write_errors {
                if error.index >= count.max(1) {
                    return Err(Error::protocol(format!(
                        "the {} reply reports a write error at index {} of a batch of {count}",
                        kind.command_name(),
                        error.index
                    )));
                }
                error.index += start;
                outcome.write_errors.push(error);
            }
        }
        Ok(outcome)
    }
}

/// A non-negative count field, 0 when absent (unacknowledged replies have only `ok`).
fn count_field(reply: &Document, key: &str) -> u64 {
    reply
        .get(key)
        .and_then(bson_as_usize)
        .and_then(|n| u64::try_from(n).ok())
        .unwrap_or(0)
}

/// A numeric value as a non-negative index or count.
pub(crate) fn bson_as_usize(value: &Bson) -> Option<usize> {
    match value {
        Bson::Int32(v) => usize::try_from(*v).ok(),
        Bson::Int64(v) => usize::try_from(*v).ok(),
        // Whole, non-negative and in range: the cast is exact.
        Bson::Double(v) if v.fract() == 0.0 && *v >= 0.0 && *v < 9.0e15 => Some(*v as usize),
        _ => None,
    }
}
