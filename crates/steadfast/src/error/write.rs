//! Failures of acknowledged writes: the per-statement write errors and the write concern errors
//! a write reply reports, and the payloads of [`ErrorKind::Write`](super::ErrorKind::Write),
//! [`ErrorKind::InsertMany`](super::ErrorKind::InsertMany) and
//! [`ErrorKind::BulkWrite`](super::ErrorKind::BulkWrite).

use std::collections::HashMap;
use std::fmt;

use bson::{Bson, Document};
use serde::{Deserialize, Serialize};
use steadfast_core::ErrorLabels;

use super::command::{bson_as_i32, labels_of};
use crate::client_bulk::PartialBulkWriteResult;

/// A statement the server refused (a duplicate key, a validation failure), as reported for a
/// single-statement write.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WriteError {
    /// Error code, e.g. 11000 for a duplicate key.
    pub code: i32,
    /// Symbolic name of the code, when the server sent one.
    #[serde(rename = "codeName", default)]
    pub code_name: Option<String>,
    /// The server's message.
    #[serde(rename = "errmsg", default)]
    pub message: String,
    /// Extra information the server attached (`errInfo`), e.g. why a document failed validation.
    #[serde(rename = "errInfo")]
    pub details: Option<Document>,
}

/// A statement of a multi-statement write (`insert_many`, `bulk_write`) the server refused,
/// with its position in the caller's input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct IndexedWriteError {
    /// Position of the statement: the document's index for `insert_many`, the model's for
    /// `bulk_write`.
    #[serde(default)]
    pub index: usize,
    /// Error code, e.g. 11000 for a duplicate key.
    pub code: i32,
    /// Symbolic name of the code, when the server sent one.
    #[serde(rename = "codeName", default)]
    pub code_name: Option<String>,
    /// The server's message.
    #[serde(rename = "errmsg", default)]
    pub message: String,
    /// Extra information the server attached (`errInfo`).
    #[serde(rename = "errInfo")]
    pub details: Option<Document>,
}

impl From<IndexedWriteError> for WriteError {
    fn from(error: IndexedWriteError) -> WriteError {
        error.to_write_error()
    }
}

impl IndexedWriteError {
    /// The same failure without its position.
    pub(crate) fn to_write_error(&self) -> WriteError {
        WriteError {
            code: self.code,
            code_name: self.code_name.clone(),
            message: self.message.clone(),
            details: self.details.clone(),
        }
    }
}

/// A write concern that could not be satisfied (`writeConcernError`). The write itself was
/// applied.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WriteConcernError {
    /// Error code, e.g. 64 (WriteConcernFailed / WriteConcernTimeout) or a state-change code.
    pub code: i32,
    /// Symbolic name, when the server sent one (empty otherwise).
    #[serde(rename = "codeName", default)]
    pub code_name: String,
    /// The server's message.
    #[serde(alias = "errmsg", default)]
    pub message: String,
    /// Extra information the server attached (`errInfo`).
    #[serde(rename = "errInfo")]
    pub details: Option<Document>,
}

/// How a single-statement write (`insert_one`, `update_*`, `replace_one`, `delete_*`,
/// `find_one_and_*`) failed although the server acknowledged it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum WriteFailure {
    /// The write was applied but its write concern could not be satisfied.
    WriteConcernError(WriteConcernError),
    /// The server refused the statement; nothing was applied.
    WriteError(WriteError),
}

/// How an `insert_many` failed although the server acknowledged its batches. What was inserted
/// before the failure is in [`inserted_ids`](Self::inserted_ids), and in full in
/// [`Error::partial_write`](super::Error::partial_write).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InsertManyError {
    /// The documents the server refused, by position in the input (`None` when there were
    /// none, only a write concern error).
    pub write_errors: Option<Vec<IndexedWriteError>>,
    /// The write concern error, if a batch reported one (the first, when several did).
    pub write_concern_error: Option<WriteConcernError>,
    /// The `_id` of every document the server inserted, keyed by its position in the input
    /// (not serialized, as in the official driver).
    #[serde(skip)]
    pub inserted_ids: HashMap<usize, Bson>,
}

/// How a `bulk_write` failed although the server acknowledged its batches.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct BulkWriteError {
    /// The write concern error of every batch that reported one, in the order the batches ran.
    pub write_concern_errors: Vec<WriteConcernError>,
    /// The models the server refused, keyed by their position in the input.
    pub write_errors: HashMap<usize, WriteError>,
    /// What the server applied, when it applied anything, in the shape of the result the
    /// operation would have returned (for `Collection::bulk_write`, the totals: its `_id`s are
    /// in [`Error::partial_write`](super::Error::partial_write)).
    pub partial_result: Option<PartialBulkWriteResult>,
}

/// The failures one acknowledged (`ok: 1`) write reply reports, as read from it, with the
/// `errorLabels` of the reply and of its write concern error (moved into the [`super::Error`]
/// made of them).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ReplyWriteErrors {
    /// `writeErrors`, in reply order, with the batch's own indexes.
    pub(crate) write_errors: Vec<IndexedWriteError>,
    /// `writeConcernError`.
    pub(crate) write_concern_error: Option<WriteConcernError>,
    /// The reply's and the write concern error's labels.
    pub(crate) labels: ErrorLabels,
}

impl ReplyWriteErrors {
    /// Reads the failures of an `ok: 1` write reply, or `None` when it reported none. Malformed
    /// entries are kept with what could be read rather than dropped, so that a failure is never
    /// silently turned into a success.
    pub(crate) fn from_reply(reply: &Document) -> Option<Self> {
        let write_errors: Vec<IndexedWriteError> = match reply.get_array("writeErrors") {
            Ok(entries) => entries
                .iter()
                .enumerate()
                .map(|(position, entry)| indexed_write_error(entry, position))
                .collect(),
            Err(_) => Vec::new(),
        };
        let mut labels = labels_of(reply);
        let write_concern_error = reply.get_document("writeConcernError").ok().map(|wce| {
            labels.union(&labels_of(wce));
            WriteConcernError {
                code: wce.get("code").and_then(bson_as_i32).unwrap_or(0),
                code_name: wce.get_str("codeName").unwrap_or_default().to_string(),
                message: wce.get_str("errmsg").unwrap_or_default().to_string(),
                details: wce.get_document("errInfo").ok().cloned(),
            }
        });
        if write_errors.is_empty() && write_concern_error.is_none() {
            return None;
        }
        Some(ReplyWriteErrors {
            write_errors,
            write_concern_error,
            labels,
        })
    }
}

/// One `writeErrors` entry; `position` stands in for a missing or invalid `index`.
fn indexed_write_error(entry: &Bson, position: usize) -> IndexedWriteError {
    let empty = Document::new();
    let doc = entry.as_document().unwrap_or(&empty);
    IndexedWriteError {
        index: doc
            .get("index")
            .and_then(bson_as_i32)
            .and_then(|i| usize::try_from(i).ok())
            .unwrap_or(position),
        code: doc.get("code").and_then(bson_as_i32).unwrap_or(0),
        code_name: doc.get_str("codeName").ok().map(str::to_string),
        message: doc.get_str("errmsg").unwrap_or_default().to_string(),
        details: doc.get_document("errInfo").ok().cloned(),
    }
}

impl WriteFailure {
    /// The write concern error, when that is how the write failed.
    pub(crate) fn write_concern_error(&self) -> Option<&WriteConcernError> {
        match self {
            WriteFailure::WriteConcernError(wce) => Some(wce),
            WriteFailure::WriteError(_) => None,
        }
    }

    /// The failure's code.
    pub fn code(&self) -> i32 {
        match self {
            WriteFailure::WriteConcernError(wce) => wce.code,
            WriteFailure::WriteError(e) => e.code,
        }
    }
}

impl fmt::Display for WriteFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteFailure::WriteError(e) => {
                write!(f, "write failed (code {}): {}", e.code, e.message)
            }
            WriteFailure::WriteConcernError(wce) => write_concern_text(f, wce, "write concern"),
        }
    }
}

impl fmt::Display for InsertManyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "insert_many failed")?;
        let write_errors = self.write_errors.as_deref().unwrap_or_default();
        if let Some(first) = write_errors.first() {
            indexed_text(
                f,
                write_errors.len(),
                first.index,
                first.code,
                &first.message,
            )?;
        }
        match &self.write_concern_error {
            Some(wce) => write_concern_text(f, wce, "; write concern"),
            None => Ok(()),
        }
    }
}

impl fmt::Display for BulkWriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bulk write failed")?;
        let first = self.write_errors.iter().min_by_key(|(index, _)| **index);
        if let Some((index, e)) = first {
            indexed_text(f, self.write_errors.len(), *index, e.code, &e.message)?;
        }
        match self.write_concern_errors.first() {
            Some(wce) => write_concern_text(f, wce, "; write concern"),
            None => Ok(()),
        }
    }
}

fn indexed_text(
    f: &mut fmt::Formatter<'_>,
    count: usize,
    index: usize,
    code: i32,
    message: &str,
) -> fmt::Result {
    write!(
        f,
        ": {count} write error(s), first at index {index} (code {code}): {message}"
    )
}

fn write_concern_text(
    f: &mut fmt::Formatter<'_>,
    wce: &WriteConcernError,
    lead: &str,
) -> fmt::Result {
    write!(f, "{lead} error (code {}): {}", wce.code, wce.message)
}

impl std::error::Error for WriteFailure {}
