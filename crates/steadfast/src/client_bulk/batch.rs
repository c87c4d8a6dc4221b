//! One `bulkWrite` command: the next batch of ops that fits the connection's limits, sent as the
//! `ops` and `nsInfo` document sequences against `admin`.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use bson::{Bson, Document, RawDocumentBuf};
use steadfast_core::ErrorLabels;
use steadfast_core::options::WriteConcern;
use steadfast_wire::DocumentSequence;

use super::models::EncodedOp;
use super::results::SummaryBulkWriteResult;
use crate::conn::description::StreamDescription;
use crate::cursor::CursorReply;
use crate::error::{Error, ReplyWriteErrors, Result, WriteConcernError};
use crate::operation::write::encoded_len;
use crate::operation::write_reply::bson_as_usize;
use crate::operation::{Command, Operation, ReplyContext, Retryability};

/// Bytes kept free for the message header and the fields the executor adds (`lsid`,
/// `txnNumber`, `$clusterTime`, ...): the bulk write specification's allowance.
const MESSAGE_OVERHEAD: usize = 1000;

/// Command-level fields shared by every batch.
#[derive(Clone, Debug, Default)]
pub(crate) struct BulkFields {
    pub(crate) ordered: bool,
    pub(crate) errors_only: bool,
    pub(crate) bypass_document_validation: Option<bool>,
    pub(crate) comment: Option<Bson>,
    pub(crate) let_vars: Option<Document>,
    pub(crate) write_concern: Option<WriteConcern>,
    /// False under an unacknowledged write concern (`w: 0`).
    pub(crate) acknowledged: bool,
}

/// One `bulkWrite` command over `ops[start..]`: see the module documentation.
#[derive(Debug)]
pub(crate) struct ClientBulkBatch {
    ops: Arc<[EncodedOp]>,
    start: usize,
    /// How many ops the batch holds, fixed by its first attempt so that a retry (same
    /// `txnNumber`) resends exactly the same ops. Shared with the caller, which must know which
    /// ops a failed batch may have applied.
    chosen: Arc<OnceLock<usize>>,
    fields: Arc<BulkFields>,
    /// Set on the first batch: every op of the bulk is checked against `maxBsonObjectSize`
    /// before anything is sent.
    check_all_sizes: bool,
}

/// A `bulkWrite` reply: the totals, the results cursor and any write concern error.
#[derive(Debug)]
pub(crate) struct BatchReply {
    pub(crate) summary: SummaryBulkWriteResult,
    pub(crate) n_errors: u64,
    pub(crate) cursor: CursorReply,
    pub(crate) write_concern_error: Option<WriteConcernError>,
    pub(crate) labels: ErrorLabels,
}

impl AsRef<CursorReply> for BatchReply {
    fn as_ref(&self) -> &CursorReply {
        &self.cursor
    }
}

impl ClientBulkBatch {
    /// The batch of `ops` starting at `start`.
    pub(crate) fn new(
        ops: Arc<[EncodedOp]>,
        start: usize,
        fields: Arc<BulkFields>,
        check_all_sizes: bool,
    ) -> Self {
        ClientBulkBatch {
            ops,
            start,
            chosen: Arc::new(OnceLock::new()),
            fields,
            check_all_sizes,
        }
    }

    /// How many ops the batch sent: `None` until a first attempt built its command.
    pub(crate) fn extent(&self) -> Arc<OnceLock<usize>> {
        Arc::clone(&self.chosen)
    }

    fn body(&self) -> Document {
        let f = &self.fields;
        let mut body = bson::doc! {
            "bulkWrite": 1,
            "errorsOnly": f.errors_only,
            "ordered": f.ordered,
        };
        if let Some(bypass) = f.bypass_document_validation {
            body.insert("bypassDocumentValidation", bypass);
        }
        if let Some(comment) = &f.comment {
            body.insert("comment", comment.clone());
        }
        if let Some(let_vars) = &f.let_vars {
            body.insert("let", let_vars.clone());
        }
        body
    }

    /// How many ops from `start` fit one command (the specification's algorithm: ops and
    /// nsInfo documents within `maxMessageSizeBytes` less the body and the allowance).
    ///
    /// # Errors
    /// `InvalidArgument` when not even the first op fits.
    fn batch_len(&self, description: &StreamDescription, body_len: usize) -> Result<usize> {
        let max_count = usize::try_from(description.max_write_batch_size)
            .ok()
            .filter(|n| *n > 0)
            .unwrap_or(1);
        let budget = description
            .max_message_size_bytes
            .saturating_sub(MESSAGE_OVERHEAD.saturating_add(body_len));
        let mut namespaces: Vec<&str> = Vec::new();
        let mut used = 0usize;
        let mut count = 0usize;
        for op in self.ops.get(self.start..).unwrap_or_default() {
            if count == max_count {
                break;
            }
            let mut added = ops_doc_len(op);
            let new_ns = !namespaces.contains(&op.ns.as_str());
            if new_ns {
                added = added.saturating_add(ns_info_len(&op.ns));
            }
            if used.saturating_add(added) > budget {
                break;
            }
            used += added;
            count += 1;
            if new_ns {
                namespaces.push(&op.ns);
            }
        }
        if count == 0 {
            return Err(Error::invalid_argument(format!(
                "write {} does not fit in a bulkWrite command under the server's maxMessageSizeBytes of {}",
                self.start, description.max_message_size_bytes
            )));
        }
        Ok(count)
    }

    /// Rejects, before anything is sent, every op over the server's document limit.
    fn check_sizes(&self, description: &StreamDescription) -> Result<()> {
        if !self.check_all_sizes {
            return Ok(());
        }
        let limit = usize::try_from(description.max_bson_object_size).unwrap_or(usize::MAX);
        match self.ops.iter().position(|op| op.checked_len > limit) {
            Some(index) => Err(Error::invalid_argument(format!(
                "write {index} is over the server's maxBsonObjectSize of {limit} bytes"
            ))),
            None => Ok(()),
        }
    }
}

impl Operation for ClientBulkBatch {
    type Output = BatchReply;

    fn name(&self) -> &str {
        "bulkWrite"
    }

    fn build(&mut self, description: &StreamDescription) -> Result<Command> {
        let body = self.body();
        let count = match self.chosen.get() {
            Some(count) => *count,
            None => {
                self.check_sizes(description)?;
                let count = self.batch_len(description, encoded_len(&body)?)?;
                *self.chosen.get_or_init(|| count)
            }
        };
        let end = self.start.saturating_add(count).min(self.ops.len());
        let mut indexes: HashMap<&str, i32> = HashMap::new();
        let mut ns_info = Vec::new();
        let mut ops = Vec::with_capacity(count);
        for op in self.ops.get(self.start..end).unwrap_or_default() {
            let next = i32::try_from(indexes.len())
                .map_err(|_| Error::invalid_argument("too many namespaces in one batch"))?;
            let index = *indexes.entry(op.ns.as_str()).or_insert_with(|| {
                ns_info.push(bson::rawdoc! { "ns": op.ns.as_str() });
                next
            });
            ops.push(ops_document(op, index)?);
        }
        let mut command = Command::new("bulkWrite", "admin", body);
        command.sequences.push(DocumentSequence::new("ops", ops));
        command
            .sequences
            .push(DocumentSequence::new("nsInfo", ns_info));
        Ok(command)
    }

    fn handle_reply(
        &mut self,
        reply: RawDocumentBuf,
        _context: &ReplyContext<'_>,
    ) -> Result<BatchReply> {
        parse_reply(&reply)
    }

    /// A batch is a retryable write unless it may hold a multi-document op. Its extent is only
    /// known once built for a connection, so every op from `start` counts (exact for bulks
    /// without `*_many` models, and for their last batch).
    fn retryability(&self) -> Retryability {
        let remaining = self.ops.get(self.start..).unwrap_or_default();
        if remaining.iter().any(|op| op.multi) {
            Retryability::None
        } else {
            Retryability::Write
        }
    }

    fn write_concern(&self) -> Option<&WriteConcern> {
        self.fields.write_concern.as_ref()
    }
}

/// The size of `op`'s ops document once its leading `<kind>: <int32>` pair is added.
fn ops_doc_len(op: &EncodedOp) -> usize {
    op.rest.as_bytes().len() + 1 + op.kind.key().len() + 1 + 4
}

/// The size of `{ns: <ns>}`.
fn ns_info_len(ns: &str) -> usize {
    // Length, element type, "ns\0", string length, the string and its NUL, the document's NUL.
    4 + 1 + 3 + 4 + ns.len() + 1 + 1
}

/// `{<kind>: index, ...op.rest}`.
fn ops_document(op: &EncodedOp, index: i32) -> Result<RawDocumentBuf> {
    let rest = op.rest.as_bytes();
    let elements = rest
        .get(4..rest.len().saturating_sub(1))
        .unwrap_or_default();
    let len = ops_doc_len(op);
    let len_field =
        i32::try_from(len).map_err(|_| Error::invalid_argument("a write model is too large"))?;
    let mut bytes = Vec::with_capacity(len);
    bytes.extend_from_slice(&len_field.to_le_bytes());
    bytes.push(0x10); // int32 element.
    bytes.extend_from_slice(op.kind.key().as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(&index.to_le_bytes());
    bytes.extend_from_slice(elements);
    bytes.push(0);
    RawDocumentBuf::from_bytes(bytes)
        .map_err(|e| Error::invalid_argument("a write model cannot be encoded").with_source(e))
}

/// Reads an `ok: 1` `bulkWrite` reply. An unacknowledged write's reply (only `ok`) reads as
/// zero totals and an empty, closed cursor.
fn parse_reply(reply: &RawDocumentBuf) -> Result<BatchReply> {
    let doc = Document::try_from(reply.clone())
        .map_err(|e| Error::protocol("the bulkWrite reply is not valid BSON").with_source(e))?;
    let count = |key: &str| {
        doc.get(key)
            .and_then(bson_as_usize)
            .and_then(|n| i64::try_from(n).ok())
            .unwrap_or(0)
    };
    let summary = SummaryBulkWriteResult {
        inserted_count: count("nInserted"),
        matched_count: count("nMatched"),
        modified_count: count("nModified"),
        upserted_count: count("nUpserted"),
        deleted_count: count("nDeleted"),
        // Whether the writes were acknowledged is the accumulator's to say (see `run`).
        acknowledged: true,
    };
    let n_errors = u64::try_from(count("nErrors")).unwrap_or(0);
    let cursor = if doc.contains_key("cursor") {
        CursorReply::parse(reply, "bulkWrite")?
    } else {
        CursorReply {
            id: 0,
            ns: crate::namespace::Namespace::new("admin", "$cmd.bulkWrite"),
            first_batch: Default::default(),
            post_batch_resume_token: None,
            raw: None,
        }
    };
    let failures = ReplyWriteErrors::from_reply(&doc);
    let (write_concern_error, labels) = match failures {
        Some(f) => (f.write_concern_error, f.labels),
        None => (None, ErrorLabels::default()),
    };
    Ok(BatchReply {
        summary,
        n_errors,
        cursor,
        write_concern_error,
        labels,
    })
}
