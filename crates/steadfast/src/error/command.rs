//! Server-reported failures: command errors (`ok: 0`) and write failures, parsed from replies,
//! and the SDAM classification of their codes.

use std::fmt;

use bson::{Bson, Document};
use steadfast_core::ErrorLabels;
use steadfast_core::description::TopologyVersion;
use steadfast_core::description::topology_version_of;

/// A command the server answered with `ok: 0`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct CommandError {
    /// The numeric error code (0 when the server sent none).
    pub code: i32,
    /// The symbolic code name, e.g. `NotWritablePrimary` (empty when absent).
    pub code_name: String,
    /// The server's `errmsg`.
    pub message: String,
    /// The `errorLabels` the server attached, until the [`crate::Error`] made of this takes
    /// them (read them there: [`crate::Error::labels`]); moved, never copied.
    pub(crate) labels: ErrorLabels,
    /// The server's `topologyVersion` at the time of the error (4.4+ state-change errors).
    pub topology_version: Option<TopologyVersion>,
    has_code: bool,
}

impl CommandError {
    /// A command error with the given code, name and message (no labels, no topology version).
    pub fn new(code: i32, code_name: impl Into<String>, message: impl Into<String>) -> Self {
        CommandError {
            code,
            code_name: code_name.into(),
            message: message.into(),
            labels: ErrorLabels::new(),
            topology_version: None,
            has_code: true,
        }
    }

    /// Reads a command error from a reply document whose `ok` is not 1.
    pub fn from_reply(reply: &Document) -> Self {
        let code = reply.get("code").and_then(bson_as_i32);
        CommandError {
            code: code.unwrap_or(0),
            code_name: reply.get_str("codeName").unwrap_or_default().to_string(),
            message: reply.get_str("errmsg").unwrap_or_default().to_string(),
            labels: labels_of(reply),
            topology_version: topology_version_of(reply),
            has_code: code.is_some(),
        }
    }

    /// The code, or `None` when the reply had no `code` field (SDAM then falls back to the
    /// message).
    pub fn code_if_present(&self) -> Option<i32> {
        self.has_code.then_some(self.code)
    }
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "command failed")?;
        match (self.has_code, self.code_name.is_empty()) {
            (true, false) => write!(f, " ({} {})", self.code_name, self.code)?,
            (true, true) => write!(f, " (code {})", self.code)?,
            (false, _) => {}
        }
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        Ok(())
    }
}

/// One entry of a write command's `writeErrors`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct WriteError {
    /// Index of the failed write within the batch.
    pub index: usize,
    /// Error code, e.g. 11000 for a duplicate key.
    pub code: i32,
    /// Symbolic name, when the server sent one.
    pub code_name: String,
    /// The server's message.
    pub message: String,
    /// Extra information the server attached (`errInfo`).
    pub details: Option<Document>,
}

/// A write concern that could not be satisfied (`writeConcernError`).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct WriteConcernError {
    /// Error code, e.g. 64 (WriteConcernFailed / WriteConcernTimeout) or a state-change code.
    pub code: i32,
    /// Symbolic name, when the server sent one.
    pub code_name: String,
    /// The server's message.
    pub message: String,
    /// Extra information the server attached (`errInfo`).
    pub details: Option<Document>,
}

/// An acknowledged write whose reply reported write errors and/or a write concern error.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct WriteFailure {
    /// Per-document failures, in batch order.
    pub write_errors: Vec<WriteError>,
    /// The write concern failure, if any.
    pub write_concern_error: Option<WriteConcernError>,
    /// The `errorLabels` of the reply and of its write concern error, until the
    /// [`crate::Error`] made of this takes them ([`crate::Error::labels`]).
    pub(crate) labels: ErrorLabels,
}

impl WriteFailure {
    /// Reads the write failures of an `ok: 1` write reply, or `None` when it reported none.
    /// Malformed entries are kept with what could be read rather than dropped, so a failure is
    /// never silently turned into a success.
    pub fn from_reply(reply: &Document) -> Option<Self> {
        let write_errors: Vec<WriteError> = match reply.get_array("writeErrors") {
            Ok(entries) => entries
                .iter()
                .enumerate()
                .map(|(position, entry)| {
                    let empty = Document::new();
                    let doc = entry.as_document().unwrap_or(&empty);
                    WriteError {
                        index: doc
                            .get("index")
                            .and_then(bson_as_i32)
                            .and_then(|i| usize::try_from(i).ok())
                            .unwrap_or(position),
                        code: doc.get("code").and_then(bson_as_i32).unwrap_or(0),
                        code_name: doc.get_str("codeName").unwrap_or_default().to_string(),
                        message: doc.get_str("errmsg").unwrap_or_default().to_string(),
                        details: doc.get_document("errInfo").ok().cloned(),
                    }
                })
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
        Some(WriteFailure {
            write_errors,
            write_concern_error,
            labels,
        })
    }

    /// The write concern error's code, else the first write error's code.
    pub fn code(&self) -> Option<i32> {
        self.write_concern_error
            .as_ref()
            .map(|w| w.code)
            .or_else(|| self.write_errors.first().map(|w| w.code))
    }
}

impl fmt::Display for WriteFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "write failed")?;
        if let Some(first) = self.write_errors.first() {
            write!(
                f,
                ": {} write error(s), first at index {} (code {}): {}",
                self.write_errors.len(),
                first.index,
                first.code,
                first.message
            )?;
        }
        if let Some(wce) = &self.write_concern_error {
            write!(
                f,
                "; write concern error (code {}): {}",
                wce.code, wce.message
            )?;
        }
        Ok(())
    }
}

/// `ok` is 1 in any numeric type, or `true`.
pub(crate) fn reply_is_ok(reply: &Document) -> bool {
    match reply.get("ok") {
        Some(Bson::Double(v)) => *v == 1.0,
        Some(Bson::Int32(v)) => *v == 1,
        Some(Bson::Int64(v)) => *v == 1,
        Some(Bson::Boolean(v)) => *v,
        _ => false,
    }
}

/// A numeric BSON value as i32, when it fits exactly.
pub(crate) fn bson_as_i32(value: &Bson) -> Option<i32> {
    match value {
        Bson::Int32(v) => Some(*v),
        Bson::Int64(v) => i32::try_from(*v).ok(),
        Bson::Double(v)
            if v.fract() == 0.0 && *v >= f64::from(i32::MIN) && *v <= f64::from(i32::MAX) =>
        {
            // Exact: checked integral and in range just above.
            Some(*v as i32)
        }
        _ => None,
    }
}

fn labels_of(doc: &Document) -> ErrorLabels {
    doc.get_array("errorLabels")
        .map(|labels| labels.iter().filter_map(Bson::as_str).collect())
        .unwrap_or_default()
}

impl std::error::Error for CommandError {}

impl std::error::Error for WriteFailure {}
