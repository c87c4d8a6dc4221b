//! The `insert`, `update` and `delete` write commands, one batch per command.
//!
//! A [`WriteBatch`] holds a whole run of statements of one kind and sends the next batch that
//! fits the connection's limits: at most `maxWriteBatchSize` statements, and a message no larger
//! than `maxMessageSizeBytes` once the executor has added its fields (a fixed reserve covers
//! them). The statements travel as an OP_MSG document sequence (`documents`, `updates`,
//! `deletes`), so the body is never re-encoded around them. The caller executes one `WriteBatch`
//! per batch (each execution gets its own `txnNumber`) and advances by the number of statements
//! the reply says were sent.

use std::sync::{Arc, OnceLock};

use bson::oid::ObjectId;
use bson::raw::cstr;
use bson::{Bson, Document, RawDocumentBuf};
use steadfast_core::options::WriteConcern;
use steadfast_wire::{DocumentSequence, find_top_level};

use super::fields::put_raw;
use super::write_reply::BatchOutcome;
use super::{Command, Operation, ReplyContext, Retryability};
use crate::conn::description::StreamDescription;
use crate::error::{Error, Result};
use crate::namespace::Namespace;
use crate::options::{Collation, Hint, UpdateModifications};

/// Bytes kept free in every batch command for what the executor adds to the body (`$db`,
/// `lsid`, `txnNumber`, `$clusterTime`, `writeConcern`, `$readPreference`, Stable API fields)
/// and for the message header, section kinds and checksum. The write-commands specification
/// allows a command to exceed `maxBsonObjectSize` by 16 KiB for this overhead.
pub(crate) const COMMAND_OVERHEAD: usize = 16 * 1024;

/// Which write command a run of statements belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WriteKind {
    /// `insert` with `documents`.
    Insert,
    /// `update` with `updates`.
    Update,
    /// `delete` with `deletes`.
    Delete,
}

impl WriteKind {
    /// The command name.
    pub(crate) fn command_name(self) -> &'static str {
        match self {
            WriteKind::Insert => "insert",
            WriteKind::Update => "update",
            WriteKind::Delete => "delete",
        }
    }

    /// The document sequence identifier (the command argument the statements belong to).
    pub(crate) fn sequence_identifier(self) -> &'static str {
        match self {
            WriteKind::Insert => "documents",
            WriteKind::Update => "updates",
            WriteKind::Delete => "deletes",
        }
    }
}

/// One statement of a write command, encoded once.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Statement {
    /// The document sent in the sequence: the document to insert, or `{q, u, ...}` /
    /// `{q, limit, ...}`.
    pub(crate) document: RawDocumentBuf,
    /// The size checked against `maxBsonObjectSize`: the inserted document, or the larger of
    /// an update's filter and update (the specification's limit is on those user documents).
    pub(crate) checked_len: usize,
    /// Whether the statement may touch several documents (`multi: true`, `limit: 0`).
    pub(crate) multi: bool,
}

impl Statement {
    /// An insert statement. Returns it with the document's `_id`, which is generated (an
    /// ObjectId, placed first) when the document has none, so that a retried insert can never
    /// create a second copy.
    ///
    /// # Errors
    /// `InvalidArgument` when the document's `_id` cannot be read.
    pub(crate) fn insert(document: RawDocumentBuf) -> Result<(Statement, Bson)> {
        // Not `RawDocument::get`, whose element iterator costs hundreds of instructions a field:
        // finding that a document of many fields has no `_id` cost more than encoding it.
        let existing = find_top_level(&document, "_id").map_err(unreadable_id)?;
        let (document, id) = match existing {
            Some(element) => {
                let id = element_value(&document, element)?;
                (document, id)
            }
            None => {
                let id = ObjectId::new();
                (prepend_object_id(&document, id)?, Bson::ObjectId(id))
            }
        };
        let checked_len = document.as_bytes().len();
        Ok((
            Statement {
                document,
                checked_len,
                multi: false,
            },
            id,
        ))
    }

    /// An update or replacement statement.
    ///
    /// # Errors
    /// `InvalidArgument` when a document cannot be encoded.
    pub(crate) fn update(
        filter: &Document,
        modifications: &UpdateModifications,
        multi: bool,
        fields: UpdateStatementFields<'_>,
    ) -> Result<Statement> {
        let filter_len = encoded_len(filter)?;
        let update = modifications.to_bson();
        let update_len = match &update {
            Bson::Document(doc) => encoded_len(doc)?,
            Bson::Array(stages) => stages
                .iter()
                .filter_map(Bson::as_document)
                .map(encoded_len)
                .sum::<Result<usize>>()?,
            _ => 0,
        };
        let mut statement = Document::new();
        statement.insert("q", filter.clone());
        statement.insert("u", update);
        if multi {
            statement.insert("multi", true);
        }
        if let Some(upsert) = fields.upsert {
            statement.insert("upsert", upsert);
        }
        if let Some(filters) = fields.array_filters {
            statement.insert(
                "arrayFilters",
                filters
                    .iter()
                    .cloned()
                    .map(Bson::Document)
                    .collect::<Vec<_>>(),
            );
        }
        if let Some(collation) = fields.collation {
            statement.insert("collation", collation.to_document());
        }
        if let Some(hint) = fields.hint {
            statement.insert("hint", hint.to_bson());
        }
        if let Some(sort) = fields.sort {
            statement.insert("sort", sort.clone());
        }
        Ok(Statement {
            document: encode(&statement)?,
            checked_len: filter_len.max(update_len),
            multi,
        })
    }

    /// A delete statement (`limit: 0` deletes every match, `limit: 1` one).
    ///
    /// # Errors
    /// `InvalidArgument` when the filter cannot be encoded.
    pub(crate) fn delete(
        filter: &Document,
        multi: bool,
        collation: Option<&Collation>,
        hint: Option<&Hint>,
    ) -> Result<Statement> {
        let mut statement = Document::new();
        statement.insert("q", filter.clone());
        statement.insert("limit", if multi { 0 } else { 1 });
        if let Some(collation) = collation {
            statement.insert("collation", collation.to_document());
        }
        if let Some(hint) = hint {
            statement.insert("hint", hint.to_bson());
        }
        Ok(Statement {
            document: encode(&statement)?,
            checked_len: encoded_len(filter)?,
            multi,
        })
    }
}

/// The optional per-statement fields of an update.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct UpdateStatementFields<'a> {
    pub(crate) upsert: Option<bool>,
    pub(crate) array_filters: Option<&'a [Document]>,
    pub(crate) collation: Option<&'a Collation>,
    pub(crate) hint: Option<&'a Hint>,
    /// Which matching document a single-document update or replacement picks (8.0+).
    pub(crate) sort: Option<&'a Document>,
}

/// Command-level fields shared by every batch of a run.
#[derive(Clone, Debug, Default)]
pub(crate) struct WriteCommandFields {
    pub(crate) ordered: bool,
    pub(crate) bypass_document_validation: Option<bool>,
    pub(crate) write_concern: Option<WriteConcern>,
    /// The application set `write_concern` on the operation itself (it was not inherited).
    pub(crate) own_write_concern: bool,
    pub(crate) comment: Option<Bson>,
    pub(crate) let_vars: Option<Document>,
}

/// One batch command of a run of same-kind statements: see the module documentation.
#[derive(Debug)]
pub(crate) struct WriteBatch {
    ns: Namespace,
    kind: WriteKind,
    statements: Arc<[Statement]>,
    /// The first statement of this batch.
    start: usize,
    /// How many statements this batch holds, fixed by the first attempt so that a retry
    /// (same `txnNumber`) resends exactly the same statements. Shared with the bulk write that
    /// runs the batch, which must know which statements a failed batch may have applied.
    chosen: Arc<OnceLock<usize>>,
    fields: Arc<WriteCommandFields>,
    /// Set on the first batch of a bulk write: the caller's position and checked size of every
    /// statement of the whole bulk, so that an oversized one fails the operation before its
    /// first command is sent.
    size_check: Option<Arc<[SizeCheck]>>,
}

/// A statement's position in the caller's input and the size checked against
/// `maxBsonObjectSize`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SizeCheck {
    /// Where the statement's model was in the caller's input.
    pub(crate) position: usize,
    /// [`Statement::checked_len`].
    pub(crate) len: usize,
}

impl WriteBatch {
    /// The batch of `statements` starting at `start`.
    pub(crate) fn new(
        ns: Namespace,
        kind: WriteKind,
        statements: Arc<[Statement]>,
        start: usize,
        fields: Arc<WriteCommandFields>,
    ) -> Self {
        WriteBatch {
            ns,
            kind,
            statements,
            start,
            chosen: Arc::new(OnceLock::new()),
            fields,
            size_check: None,
        }
    }

    /// How many statements the batch sent, readable after it ran (or failed): `None` until a
    /// first attempt built its command.
    pub(crate) fn extent(&self) -> Arc<OnceLock<usize>> {
        Arc::clone(&self.chosen)
    }

    /// Makes this batch check every statement of the bulk against the server's document
    /// limit before it is first sent.
    pub(crate) fn with_size_check(mut self, sizes: Arc<[SizeCheck]>) -> Self {
        self.size_check = Some(sizes);
        self
    }

    /// The body, written as BSON (insert is a hot command: no map is built to be encoded).
    fn body(&self) -> Result<RawDocumentBuf> {
        let mut body = RawDocumentBuf::new();
        let name = match self.kind {
            WriteKind::Insert => cstr!("insert"),
            WriteKind::Update => cstr!("update"),
            WriteKind::Delete => cstr!("delete"),
        };
        body.append(name, self.ns.coll.as_str());
        body.append(cstr!("ordered"), self.fields.ordered);
        put_raw(
            &mut body,
            cstr!("bypassDocumentValidation"),
            self.fields.bypass_document_validation,
        )?;
        put_raw(&mut body, cstr!("comment"), self.fields.comment.clone())?;
        put_raw(&mut body, cstr!("let"), self.fields.let_vars.clone())?;
        Ok(body)
    }

    /// How many statements from `start` fit one command on a connection with `description`,
    /// given a body of `body_len` bytes. At least one, since every statement passed the
    /// `maxBsonObjectSize` check and one such statement always fits a message.
    fn batch_len(&self, description: &StreamDescription, body_len: usize) -> usize {
        let max_count = usize::try_from(description.max_write_batch_size)
            .ok()
            .filter(|n| *n > 0)
            .unwrap_or(1);
        // Sequence section: size field, identifier and its NUL, then the documents.
        let fixed = body_len + COMMAND_OVERHEAD + 4 + self.kind.sequence_identifier().len() + 1;
        let budget = description.max_message_size_bytes.saturating_sub(fixed);
        let mut used = 0usize;
        let mut count = 0usize;
        for statement in &self.statements[self.start..] {
            let len = statement.document.as_bytes().len();
            if count == max_count || (count > 0 && used + len > budget) {
                break;
            }
            used += len;
            count += 1;
        }
        count
    }

    /// Rejects, before anything is sent, every statement of the bulk over the server's
    /// document limit.
    fn check_sizes(&self, description: &StreamDescription) -> Result<()> {
        let limit = usize::try_from(description.max_bson_object_size).unwrap_or(usize::MAX);
        let Some(sizes) = &self.size_check else {
            return Ok(());
        };
        match sizes.iter().find(|check| check.len > limit) {
            Some(check) => Err(Error::invalid_argument(format!(
                "write {} is {} bytes, over the server's maxBsonObjectSize of {limit} bytes",
                check.position, check.len
            ))),
            None => Ok(()),
        }
    }
}

impl Operation for WriteBatch {
    type Output = BatchOutcome;

    fn name(&self) -> &str {
        self.kind.command_name()
    }

    fn build(&mut self, description: &StreamDescription) -> Result<Command> {
        if self.start >= self.statements.len() {
            return Err(Error::invalid_argument(format!(
                "a {} command needs at least one statement",
                self.kind.command_name()
            )));
        }
        let body = self.body()?;
        let count = match self.chosen.get() {
            Some(count) => *count,
            None => {
                self.check_sizes(description)?;
                let body_len = body.as_bytes().len();
                *self
                    .chosen
                    .get_or_init(|| self.batch_len(description, body_len))
            }
        };
        let end = (self.start + count).min(self.statements.len());
        let documents = self.statements[self.start..end]
            .iter()
            .map(|s| s.document.clone())
            .collect();
        let mut command = Command::raw(self.kind.command_name(), self.ns.db.clone(), body);
        command.sequences.push(DocumentSequence::new(
            self.kind.sequence_identifier(),
            documents,
        ));
        Ok(command)
    }

    fn handle_reply(
        &mut self,
        reply: RawDocumentBuf,
        _context: &ReplyContext<'_>,
    ) -> Result<BatchOutcome> {
        let count = self.chosen.get().copied().unwrap_or(0);
        BatchOutcome::parse(&reply, self.kind, self.start, count)
    }

    /// The retryable-writes specification judges each command of a bulk on its own: this one is
    /// a retryable write unless it may carry a multi-document statement. Its extent is only
    /// known once built for a connection, so every statement of the run from `start` counts
    /// (exact for runs of single-document writes, which is every run but an update or delete run
    /// that mixes in `*_many`).
    fn retryability(&self) -> Retryability {
        let remaining = self.statements.get(self.start..).unwrap_or_default();
        if remaining.iter().any(|s| s.multi) {
            Retryability::None
        } else {
            Retryability::Write
        }
    }

    fn write_concern(&self) -> Option<&WriteConcern> {
        self.fields.write_concern.as_ref()
    }

    fn has_own_write_concern(&self) -> bool {
        self.fields.own_write_concern
    }
}

/// The value of the top-level element of `document` at `element` (type byte to end of value):
/// the element alone, framed as a document, read back with bson.
///
/// # Errors
/// `InvalidArgument` when the value is malformed.
fn element_value(document: &RawDocumentBuf, element: std::ops::Range<usize>) -> Result<Bson> {
    let bytes = document.as_bytes().get(element).unwrap_or_default();
    let framed_len = bytes.len() + 5;
    let len_field = i32::try_from(framed_len)
        .map_err(|_| Error::invalid_argument("the document's _id is too large"))?;
    let mut framed = Vec::with_capacity(framed_len);
    framed.extend_from_slice(&len_field.to_le_bytes());
    framed.extend_from_slice(bytes);
    framed.push(0);
    let single = RawDocumentBuf::from_bytes(framed).map_err(unreadable_id)?;
    match single.iter().next() {
        Some(Ok((_, value))) => Bson::try_from(value).map_err(unreadable_id),
        Some(Err(e)) => Err(unreadable_id(e)),
        None => Err(Error::invalid_argument("the document's _id cannot be read")),
    }
}

/// The error of a document whose `_id` cannot be read.
fn unreadable_id(source: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::invalid_argument("the document's _id cannot be read").with_source(source)
}

/// `document` with `_id: id` as its first field.
fn prepend_object_id(document: &RawDocumentBuf, id: ObjectId) -> Result<RawDocumentBuf> {
    let old = document.as_bytes();
    // A valid document is at least 5 bytes: its length and the trailing NUL.
    let elements = old.get(4..old.len().saturating_sub(1)).unwrap_or_default();
    let len = 4 + (1 + 4 + 12) + elements.len() + 1;
    let len_field = i32::try_from(len)
        .map_err(|_| Error::invalid_argument("the document is too large to encode"))?;
    let mut bytes = Vec::with_capacity(len);
    bytes.extend_from_slice(&len_field.to_le_bytes());
    bytes.push(0x07); // ObjectId element.
    bytes.extend_from_slice(b"_id\0");
    bytes.extend_from_slice(&id.bytes());
    bytes.extend_from_slice(elements);
    bytes.push(0);
    RawDocumentBuf::from_bytes(bytes)
        .map_err(|e| Error::invalid_argument("the document cannot be encoded").with_source(e))
}

/// `doc` encoded as BSON.
pub(crate) fn encode(doc: &Document) -> Result<RawDocumentBuf> {
    RawDocumentBuf::try_from(doc)
        .map_err(|e| Error::invalid_argument("a document cannot be encoded as BSON").with_source(e))
}

/// The encoded size of `doc`.
pub(crate) fn encoded_len(doc: &Document) -> Result<usize> {
    Ok(encode(doc)?.as_bytes().len())
}
