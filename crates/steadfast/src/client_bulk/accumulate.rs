//! Merging the batches of a client-level bulk write: totals, per-model results, write errors
//! and write concern errors at the caller's positions, and what a failure leaves known.

use std::collections::BTreeSet;

use bson::{Bson, RawDocumentBuf};
use steadfast_core::ErrorLabels;
use steadfast_core::retry::Outcome;

use super::batch::BatchReply;
use super::models::{EncodedOp, OpKind};
use super::results::{ResultShape, SummaryBulkWriteResult, VerboseBulkWriteResult};
use crate::error::{
    BulkWriteError, Error, ErrorKind, IndexedWriteError, PartialWrite, Result, WriteConcernError,
};
use crate::operation::write_reply::bson_as_usize;
use crate::results::{BulkWriteResult, DeleteResult, InsertOneResult, UpdateResult};

/// One batch in progress: its place in the input and the entries of its results cursor seen so
/// far.
#[derive(Debug)]
pub(crate) struct OpenBatch {
    start: usize,
    count: usize,
    n_errors: u64,
    /// Batch-relative indexes the cursor reported as failed.
    failed: BTreeSet<usize>,
    /// Batch-relative indexes the cursor reported as succeeded.
    succeeded: BTreeSet<usize>,
}

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct Accumulator {
    ordered: bool,
    total: usize,
    result: VerboseBulkWriteResult,
    applied: BulkWriteResult,
    executed: Vec<usize>,
    write_errors: Vec<IndexedWriteError>,
    write_concern_errors: Vec<WriteConcernError>,
    unknown: Vec<usize>,
    labels: ErrorLabels,
}

impl Accumulator {
    /// An empty accumulator for `total` models.
    pub(crate) fn new(ordered: bool, total: usize) -> Self {
        Accumulator {
            ordered,
            total,
            result: VerboseBulkWriteResult::default(),
            applied: BulkWriteResult::default(),
            executed: Vec::new(),
            write_errors: Vec::new(),
            write_concern_errors: Vec::new(),
            unknown: Vec::new(),
            labels: ErrorLabels::default(),
        }
    }

    /// Marks the result unacknowledged (an unacknowledged write concern: no reply says what
    /// was written).
    pub(crate) fn unacknowledged(mut self) -> Self {
        self.result.summary.acknowledged = false;
        self
    }

    /// Records the reply of the batch of `count` ops from `start` (its totals and write concern
    /// error); its cursor entries follow through [`Self::absorb`].
    pub(crate) fn open(&mut self, start: usize, count: usize, reply: &BatchReply) -> OpenBatch {
        self.result.summary.add(&reply.summary);
        add_counts(&mut self.applied, &reply.summary);
        self.write_concern_errors
            .extend(reply.write_concern_error.clone());
        self.labels.union(&reply.labels);
        OpenBatch {
            start,
            count,
            n_errors: reply.n_errors,
            failed: BTreeSet::new(),
            succeeded: BTreeSet::new(),
        }
    }

    /// Records results cursor entries of `batch`.
    ///
    /// # Errors
    /// `InvalidResponse` for an entry without a valid `idx` inside the batch.
    pub(crate) fn absorb(
        &mut self,
        batch: &mut OpenBatch,
        ops: &[EncodedOp],
        entries: impl IntoIterator<Item = RawDocumentBuf>,
    ) -> Result<()> {
        for entry in entries {
            let entry = bson::Document::try_from(entry).map_err(|e| {
                Error::protocol("a bulkWrite result is not valid BSON").with_source(e)
            })?;
            let index = entry
                .get("idx")
                .and_then(bson_as_usize)
                .filter(|idx| *idx < batch.count)
                .ok_or_else(|| Error::protocol("a bulkWrite result has no valid `idx`"))?;
            let at = batch.start + index;
            let ok = entry.get("ok").and_then(bson_as_usize) == Some(1);
            if ok {
                batch.succeeded.insert(index);
                self.record_success(at, ops.get(at), &entry);
            } else {
                batch.failed.insert(index);
                self.write_errors.push(write_error(at, &entry));
            }
        }
        Ok(())
    }

    /// Closes `batch` once its cursor is exhausted: the ops not reported failed ran, except,
    /// in an ordered bulk, those after the first failure.
    pub(crate) fn close(&mut self, batch: OpenBatch, ops: &[EncodedOp]) {
        let end = match (self.ordered, batch.failed.first()) {
            (true, Some(first)) => *first,
            _ => batch.count,
        };
        for index in (0..end).filter(|i| !batch.failed.contains(i)) {
            self.mark_executed(batch.start + index, ops);
        }
    }

    /// Closes `batch` whose cursor could not be read to its end: the server ran the batch, but
    /// unless every failure it counted was seen, which of its unreported ops succeeded is
    /// unknown. The ops the cursor reported as succeeded did (their results are kept).
    pub(crate) fn close_incomplete(&mut self, batch: OpenBatch, ops: &[EncodedOp]) {
        let seen = u64::try_from(batch.failed.len()).unwrap_or(u64::MAX);
        if seen >= batch.n_errors {
            return self.close(batch, ops);
        }
        for index in &batch.succeeded {
            self.mark_executed(batch.start + index, ops);
        }
        let unreported =
            (0..batch.count).filter(|i| !batch.failed.contains(i) && !batch.succeeded.contains(i));
        self.unknown
            .extend(unreported.map(|index| batch.start + index));
    }

    /// Whether an ordered bulk must stop (a write error happened).
    pub(crate) fn must_stop(&self) -> bool {
        self.ordered && !self.write_errors.is_empty()
    }

    fn record_success(&mut self, at: usize, op: Option<&EncodedOp>, entry: &bson::Document) {
        let n = entry.get("n").and_then(bson_as_usize).unwrap_or(0);
        let n = u64::try_from(n).unwrap_or(u64::MAX);
        match op.map(|op| (op.kind, op.inserted_id.clone())) {
            Some((OpKind::Insert, Some(id))) => {
                self.result
                    .insert_results
                    .insert(at, InsertOneResult { inserted_id: id });
            }
            Some((OpKind::Update, _)) => {
                let modified = entry.get("nModified").and_then(bson_as_usize).unwrap_or(0);
                let upserted_id = entry
                    .get_document("upserted")
                    .ok()
                    .and_then(|u| u.get("_id").cloned());
                if let Some(id) = &upserted_id {
                    self.applied.upserted_ids.insert(at, id.clone());
                }
                // The entry's `n` (1 for an upsert) is the model's matched count, as the
                // specification records it; the totals' `nMatched` excludes upserts.
                let update = UpdateResult {
                    matched_count: n,
                    modified_count: u64::try_from(modified).unwrap_or(u64::MAX),
                    upserted_id,
                };
                self.result.update_results.insert(at, update);
            }
            Some((OpKind::Delete, _)) => {
                self.result
                    .delete_results
                    .insert(at, DeleteResult { deleted_count: n });
            }
            _ => {}
        }
    }

    fn mark_executed(&mut self, at: usize, ops: &[EncodedOp]) {
        self.executed.push(at);
        if let Some(id) = ops.get(at).and_then(|op| op.inserted_id.clone()) {
            self.applied.inserted_ids.insert(at, id);
        }
    }

    /// The result, or the failure when any write error or write concern error was reported.
    ///
    /// # Errors
    /// [`ErrorKind::BulkWrite`] with every write error and write concern error, the partial
    /// result when anything was applied, and the [`PartialWrite`].
    pub(crate) fn finish<R: ResultShape>(self) -> Result<R> {
        if self.write_errors.is_empty() && self.write_concern_errors.is_empty() {
            return Ok(R::from_verbose(self.result));
        }
        let (labels, kind, partial) = self.into_failure::<R>();
        Err(Error::with_kind_and_labels(kind, labels).with_partial_write(partial))
    }

    /// The failure of a bulk stopped by `error` (a top-level error) in the batch of `sent` ops
    /// from `start` (`None`: not yet built). Unless the executor knows no attempt could have run,
    /// those ops are of unknown outcome. When results were already observed, the error is a
    /// [`ErrorKind::BulkWrite`] with `error` as its source; otherwise `error` itself. Either
    /// carries the [`PartialWrite`].
    pub(crate) fn fail<R: ResultShape>(
        mut self,
        start: usize,
        sent: Option<usize>,
        error: Error,
    ) -> Error {
        if error.outcome() != Outcome::NotApplied {
            let end = sent.map_or(self.total, |sent| start.saturating_add(sent));
            self.unknown.extend(start..end.min(self.total));
        }
        let observed = !self.executed.is_empty()
            || !self.write_errors.is_empty()
            || !self.write_concern_errors.is_empty();
        let mut labels = self.labels.clone();
        labels.union(error.labels());
        let (_, kind, partial) = self.into_failure::<R>();
        if observed {
            Error::with_kind_and_labels(kind, labels)
                .with_source(error)
                .with_partial_write(partial)
        } else {
            error.with_partial_write(partial)
        }
    }

    fn into_failure<R: ResultShape>(mut self) -> (ErrorLabels, ErrorKind, PartialWrite) {
        self.executed.sort_unstable();
        self.unknown.sort_unstable();
        self.unknown.dedup();
        self.write_errors.sort_by_key(|e| e.index);
        let refused = self.write_errors.iter().map(|e| e.index);
        let not_executed = crate::error::never_executed(
            self.total,
            self.executed
                .iter()
                .copied()
                .chain(refused)
                .chain(self.unknown.iter().copied()),
        );
        // The totals of every reply read are known even when some ops' fates are not.
        let applied_anything = !self.executed.is_empty() || self.result.summary.counts_anything();
        let partial_result =
            applied_anything.then(|| R::from_verbose(self.result.clone()).into_partial());
        let kind = ErrorKind::BulkWrite(BulkWriteError {
            write_concern_errors: self.write_concern_errors.clone(),
            write_errors: self
                .write_errors
                .iter()
                .map(|e| (e.index, e.to_write_error()))
                .collect(),
            partial_result,
        });
        let partial = PartialWrite {
            applied: self.applied,
            executed: self.executed,
            write_errors: self.write_errors,
            write_concern_errors: self.write_concern_errors,
            unknown: self.unknown,
            not_executed,
        };
        (self.labels, kind, partial)
    }
}

fn add_counts(applied: &mut BulkWriteResult, summary: &SummaryBulkWriteResult) {
    let count = |n: i64| u64::try_from(n).unwrap_or(0);
    applied.inserted_count = applied
        .inserted_count
        .saturating_add(count(summary.inserted_count));
    applied.matched_count = applied
        .matched_count
        .saturating_add(count(summary.matched_count));
    applied.modified_count = applied
        .modified_count
        .saturating_add(count(summary.modified_count));
    applied.upserted_count = applied
        .upserted_count
        .saturating_add(count(summary.upserted_count));
    applied.deleted_count = applied
        .deleted_count
        .saturating_add(count(summary.deleted_count));
}

fn write_error(at: usize, entry: &bson::Document) -> IndexedWriteError {
    let code = match entry.get("code") {
        Some(Bson::Int32(c)) => *c,
        Some(Bson::Int64(c)) => i32::try_from(*c).unwrap_or(i32::MAX),
        _ => 0,
    };
    IndexedWriteError {
        index: at,
        code,
        code_name: entry.get_str("codeName").ok().map(str::to_owned),
        message: entry.get_str("errmsg").unwrap_or_default().to_owned(),
        details: entry.get_document("errInfo").ok().cloned(),
    }
}
