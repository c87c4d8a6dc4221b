//! What an op log entry carries for a secondary besides what change events show.

use std::sync::{Arc, OnceLock};

use bson::{Bson, Document};

use crate::retryable_writes::StatementOutcome;
use crate::value_order::{document_size, value_size};

/// The part of an entry only replication reads: enough to reproduce the write exactly.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ApplyInfo {
    /// The timestamp of the log's previous write ([`crate::oplog::packed`]; 0 for the first):
    /// a secondary checks that it is its own last, so a gap in what it was sent is an error.
    pub(crate) previous_ts: u64,
    /// An update's document after the write, whatever the collection's image options (a
    /// change event's description alone cannot rebuild it).
    pub(crate) after: Option<Arc<Document>>,
    /// The statement of a retryable write (not one of a transaction) that made the entry.
    pub(crate) statement: Option<RetryableStatement>,
    /// `collMod`'s `index` option, which the entry's [`crate::Change::Modify`] leaves out.
    pub(crate) index_change: Option<Arc<Bson>>,
    /// Bytes the statement's outcome will hold once decided (a findAndModify reply holds a
    /// copy of a document), reserved when the entry is made so that the op log's byte count
    /// is the same when the entry is added and when it is forgotten.
    pub(crate) outcome_bytes: usize,
}

impl ApplyInfo {
    /// Approximate bytes held, except an after-image that is the same `Arc` as `post_image`
    /// (counted there).
    pub(crate) fn size(&self, post_image: Option<&Arc<Document>>) -> usize {
        let after = match (&self.after, post_image) {
            (Some(after), Some(post)) if Arc::ptr_eq(after, post) => 0,
            (Some(after), _) => document_size(after),
            (None, _) => 0,
        };
        let statement = self.statement.as_ref().map_or(0, |_| STATEMENT_BYTES);
        let index = self.index_change.as_deref().map_or(0, value_size);
        after
            .saturating_add(statement)
            .saturating_add(index)
            .saturating_add(self.outcome_bytes)
    }
}

/// Bytes a statement reference costs in an entry: its outcome lives in the session record
/// and is counted there.
const STATEMENT_BYTES: usize = 16;

/// A retryable write's statement: its id and its outcome. The outcome is decided after the
/// statement's entries are in the op log (a batch reply knows it only when the statement is
/// done), so the entries share a cell the command fills before it replies; a replicator that
/// copied the entry earlier reads the same cell later.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RetryableStatement {
    pub(crate) id: i32,
    pub(crate) outcome: Arc<OnceLock<StatementOutcome>>,
    /// The outcome holds a copy of a document the statement wrote or removed (findAndModify's
    /// `value`); other outcomes hold at most an `_id`, which the entry holds anyway.
    pub(crate) returns_document: bool,
}

impl RetryableStatement {
    /// Statement `id`, its outcome not known yet.
    pub(crate) fn new(id: i32, returns_document: bool) -> RetryableStatement {
        RetryableStatement {
            id,
            outcome: Arc::default(),
            returns_document,
        }
    }

    /// Bytes to reserve for the outcome of an entry of this statement that wrote `document`
    /// over `previous`: the larger of the two, which is what a findAndModify reply returns.
    pub(crate) fn outcome_bytes(
        &self,
        document: Option<&Document>,
        previous: Option<&Document>,
    ) -> usize {
        if !self.returns_document {
            return 0;
        }
        document
            .map_or(0, document_size)
            .max(previous.map_or(0, document_size))
    }
}
