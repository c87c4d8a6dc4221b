//! The results of `Client::bulk_write`: totals always, each model's own result on request.

use std::collections::HashMap;

use crate::results::{DeleteResult, InsertOneResult, UpdateResult};

/// The totals of a client-level bulk write (what `Client::bulk_write` returns by default).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SummaryBulkWriteResult {
    /// Whether the server acknowledged the writes. `false` under an unacknowledged write
    /// concern (`w: 0`): the server reported nothing, so the counts below are zero and say
    /// nothing about what was written.
    pub acknowledged: bool,
    /// Documents inserted.
    pub inserted_count: i64,
    /// Documents matched by update and replace models.
    pub matched_count: i64,
    /// Documents changed by update and replace models.
    pub modified_count: i64,
    /// Documents inserted by upserts.
    pub upserted_count: i64,
    /// Documents deleted.
    pub deleted_count: i64,
}

/// The totals and the result of each model that succeeded, keyed by the model's position in
/// the input (what `Client::bulk_write(..).verbose_results()` returns).
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct VerboseBulkWriteResult {
    /// The totals.
    pub summary: SummaryBulkWriteResult,
    /// Each insert model the server applied, with the document's `_id`.
    pub insert_results: HashMap<usize, InsertOneResult>,
    /// Each update or replace model the server applied.
    pub update_results: HashMap<usize, UpdateResult>,
    /// Each delete model the server applied.
    pub delete_results: HashMap<usize, DeleteResult>,
}

/// What a failed client-level bulk write applied before it failed, in the shape of the result
/// it would have returned ([`crate::error::BulkWriteError::partial_result`]).
#[derive(Clone, Debug, PartialEq)]
pub enum PartialBulkWriteResult {
    /// The totals (summary results were asked for).
    Summary(SummaryBulkWriteResult),
    /// The totals and per-model results (verbose results were asked for).
    Verbose(VerboseBulkWriteResult),
}

impl Default for SummaryBulkWriteResult {
    fn default() -> Self {
        SummaryBulkWriteResult {
            acknowledged: true,
            inserted_count: 0,
            matched_count: 0,
            modified_count: 0,
            upserted_count: 0,
            deleted_count: 0,
        }
    }
}

impl SummaryBulkWriteResult {
    /// Whether any count is above zero.
    pub(crate) fn counts_anything(&self) -> bool {
        [
            self.inserted_count,
            self.matched_count,
            self.modified_count,
            self.upserted_count,
            self.deleted_count,
        ]
        .iter()
        .any(|count| *count > 0)
    }

    /// Adds `other`'s totals (saturating: the server's counts are bounded by the input).
    pub(crate) fn add(&mut self, other: &SummaryBulkWriteResult) {
        self.inserted_count = self.inserted_count.saturating_add(other.inserted_count);
        self.matched_count = self.matched_count.saturating_add(other.matched_count);
        self.modified_count = self.modified_count.saturating_add(other.modified_count);
        self.upserted_count = self.upserted_count.saturating_add(other.upserted_count);
        self.deleted_count = self.deleted_count.saturating_add(other.deleted_count);
    }
}

/// The two result shapes `Client::bulk_write` can return, built from the verbose result the
/// driver always assembles (the per-model part stays empty unless asked for).
pub(crate) trait ResultShape: Sized + Send + 'static {
    /// Whether the server should report only errors (`errorsOnly`).
    fn errors_only() -> bool;
    /// This shape of `verbose`.
    fn from_verbose(verbose: VerboseBulkWriteResult) -> Self;
    /// This shape as a partial result.
    fn into_partial(self) -> PartialBulkWriteResult;
}

impl ResultShape for SummaryBulkWriteResult {
    fn errors_only() -> bool {
        true
    }

    fn from_verbose(verbose: VerboseBulkWriteResult) -> Self {
        verbose.summary
    }

    fn into_partial(self) -> PartialBulkWriteResult {
        PartialBulkWriteResult::Summary(self)
    }
}

impl ResultShape for VerboseBulkWriteResult {
    fn errors_only() -> bool {
        false
    }

    fn from_verbose(verbose: VerboseBulkWriteResult) -> Self {
        verbose
    }

    fn into_partial(self) -> PartialBulkWriteResult {
        PartialBulkWriteResult::Verbose(self)
    }
}
