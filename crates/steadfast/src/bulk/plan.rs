//! Bulk writes as plain values: grouping models into runs of one command kind, and merging the
//! batch replies into one result or one write failure with the caller's positions.

use std::collections::BTreeSet;
use std::sync::Arc;

use bson::Bson;
use serde::Serialize;

use super::models::WriteModel;
use steadfast_core::ErrorLabels;
use steadfast_core::retry::Outcome;

use crate::error::PartialBulkWriteResult;
use crate::error::{
    BulkWriteError, Error, ErrorKind, IndexedWriteError, InsertManyError, PartialWrite, Result,
    WriteConcernError, WriteFailure,
};
use crate::operation::write::{Statement, WriteKind};
use crate::operation::write_reply::BatchOutcome;
use crate::results::{BulkWriteResult, SummaryBulkWriteResult};

/// Statements of one kind sent as consecutive batch commands.
#[derive(Debug)]
pub(crate) struct Run {
    /// Which command.
    pub(crate) kind: WriteKind,
    /// The statements, in sending order.
    pub(crate) statements: Arc<[Statement]>,
    /// For each statement, the position of its model in the caller's input.
    pub(crate) positions: Vec<usize>,
    /// For insert runs, each statement's `_id`.
    pub(crate) ids: Vec<Bson>,
}

/// The runs of a bulk write. Whether each command is a retryable write is decided per command
/// (see `WriteBatch::retryability`), as the retryable-writes specification requires.
#[derive(Debug)]
pub(crate) struct BulkPlan {
    /// In execution order.
    pub(crate) runs: Vec<Run>,
    /// Which [`ErrorKind`] reports the write errors and write concern errors.
    pub(crate) shape: FailureShape,
}

/// Which operation's failure a plan reports: the official driver gives each its own
/// [`ErrorKind`], which code written for it matches on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum FailureShape {
    /// A single-statement write: [`ErrorKind::Write`].
    #[default]
    Single,
    /// `insert_many`: [`ErrorKind::InsertMany`].
    InsertMany,
    /// `bulk_write`: [`ErrorKind::BulkWrite`].
    BulkWrite,
}

impl BulkPlan {
    /// Groups `models`: ordered bulks keep their order (a new run starts whenever the kind
    /// changes); unordered bulks send all inserts, then all updates, then all deletes.
    ///
    /// # Errors
    /// `InvalidArgument` for an empty list and for any model that cannot be encoded or is
    /// invalid (checked for every model before anything is sent).
    pub(crate) fn new<T: Serialize>(models: Vec<WriteModel<T>>, ordered: bool) -> Result<Self> {
        if models.is_empty() {
            return Err(Error::invalid_argument(
                "a bulk write needs at least one write model",
            ));
        }
        let mut runs: Vec<Run> = Vec::new();
        let mut pending: Vec<Vec<Statement>> = Vec::new();
        for (position, model) in models.into_iter().enumerate() {
            let kind = model.kind();
            let (statement, id) = model
                .into_statement()
                .map_err(|e| at_position(e, position))?;
            let slot = if ordered {
                runs.last()
                    .filter(|run| run.kind == kind)
                    .map(|_| runs.len() - 1)
            } else {
                runs.iter().position(|run| run.kind == kind)
            };
            let slot = slot.unwrap_or_else(|| {
                runs.push(Run {
                    kind,
                    statements: Arc::from(Vec::new()),
                    positions: Vec::new(),
                    ids: Vec::new(),
                });
                pending.push(Vec::new());
                runs.len() - 1
            });
            pending[slot].push(statement);
            runs[slot].positions.push(position);
            if let Some(id) = id {
                runs[slot].ids.push(id);
            }
        }
        for (run, statements) in runs.iter_mut().zip(pending) {
            run.statements = statements.into();
        }
        if !ordered {
            let rank = |kind: WriteKind| match kind {
                WriteKind::Insert => 0,
                WriteKind::Update => 1,
                WriteKind::Delete => 2,
            };
            runs.sort_by_key(|run| rank(run.kind));
        }
        Ok(BulkPlan {
            runs,
            shape: FailureShape::BulkWrite,
        })
    }
}

impl BulkPlan {
    /// One run of `statements` of one kind (the single-write helpers and `insert_many`).
    pub(crate) fn single_run(kind: WriteKind, statements: Vec<Statement>, ids: Vec<Bson>) -> Self {
        let positions = (0..statements.len()).collect();
        BulkPlan {
            runs: vec![Run {
                kind,
                statements: statements.into(),
                positions,
                ids,
            }],
            shape: FailureShape::Single,
        }
    }

    /// The same plan, its failure reported as `shape`.
    pub(crate) fn reported_as(self, shape: FailureShape) -> Self {
        BulkPlan { shape, ..self }
    }
}

/// Prefixes an invalid-argument error with the model's position.
pub(crate) fn at_position(error: Error, position: usize) -> Error {
    match error.kind() {
        crate::ErrorKind::InvalidArgument { message } => {
            Error::invalid_argument(format!("write {position}: {message}"))
        }
        _ => error,
    }
}

/// Merges batch outcomes into the bulk's result, or into its error with the statement-by-statement
/// [`PartialWrite`]. Write errors and positions are the caller's; every write concern error is
/// kept; labels are merged.
#[derive(Debug, Default)]
pub(crate) struct BulkAccumulator {
    ordered: bool,
    shape: FailureShape,
    /// How many statements the plan holds (positions run from 0 to this).
    total: usize,
    result: BulkWriteResult,
    executed: Vec<usize>,
    write_errors: Vec<IndexedWriteError>,
    write_concern_errors: Vec<WriteConcernError>,
    unknown: Vec<usize>,
    labels: ErrorLabels,
}

impl BulkAccumulator {
    /// An empty accumulator for `plan`, ordered or unordered.
    pub(crate) fn new(plan: &BulkPlan, ordered: bool) -> Self {
        BulkAccumulator {
            ordered,
            shape: plan.shape,
            total: plan.runs.iter().map(|run| run.positions.len()).sum(),
            ..BulkAccumulator::default()
        }
    }

    /// Adds the outcome of one batch of `run`.
    pub(crate) fn add(&mut self, run: &Run, outcome: BatchOutcome) {
        let position = |run_index: usize| run.positions.get(run_index).copied();
        let failed: BTreeSet<usize> = outcome.write_errors.iter().map(|e| e.index).collect();
        // An ordered batch stops at its first error: later statements never ran.
        let executed_end = match (self.ordered, failed.first()) {
            (true, Some(first)) => *first,
            _ => outcome.start + outcome.count,
        };
        for run_index in outcome.start..executed_end {
            if failed.contains(&run_index) {
                continue;
            }
            let Some(at) = position(run_index) else {
                continue;
            };
            self.executed.push(at);
            if let (WriteKind::Insert, Some(id)) = (run.kind, run.ids.get(run_index)) {
                self.result.inserted_ids.insert(at, id.clone());
            }
        }
        match run.kind {
            WriteKind::Insert => self.result.inserted_count += outcome.n,
            WriteKind::Update => {
                let upserts = u64::try_from(outcome.upserted.len()).unwrap_or(u64::MAX);
                self.result.matched_count += outcome.n.saturating_sub(upserts);
                self.result.modified_count += outcome.n_modified;
                self.result.upserted_count += upserts;
                for (run_index, id) in outcome.upserted {
                    if let Some(at) = position(run_index) {
                        self.result.upserted_ids.insert(at, id);
                    }
                }
            }
            WriteKind::Delete => self.result.deleted_count += outcome.n,
        }
        for mut error in outcome.write_errors {
            if let Some(at) = position(error.index) {
                error.index = at;
            }
            self.write_errors.push(error);
        }
        self.write_concern_errors
            .extend(outcome.write_concern_error);
        self.labels.union(&outcome.labels);
    }

    /// Whether an ordered bulk must stop (a write error happened).
    pub(crate) fn must_stop(&self) -> bool {
        self.ordered && !self.write_errors.is_empty()
    }

    /// The totals so far.
    #[cfg(test)]
    pub(crate) fn result(&self) -> &BulkWriteResult {
        &self.result
    }

    /// The error of a batch of `run` starting at run position `start` that failed as a whole
    /// (a command, network or timeout error after the executor's retries), with what the
    /// earlier batches applied. `sent` is how many statements the batch held, if it was ever
    /// built: unless the executor knows that no attempt could have run, those statements' fate
    /// is unknown.
    pub(crate) fn fail(
        mut self,
        run: &Run,
        start: usize,
        sent: Option<usize>,
        error: Error,
    ) -> Error {
        if error.outcome() != Outcome::NotApplied {
            let end = sent.map_or(run.positions.len(), |sent| start.saturating_add(sent));
            let positions = run.positions.get(start..end.min(run.positions.len()));
            self.unknown.extend(positions.unwrap_or_default());
        }
        error.with_partial_write(self.into_partial().1)
    }

    /// The merged result, or the write failure when any batch reported write errors or a write
    /// concern error.
    ///
    /// # Errors
    /// The plan's [`FailureShape`]: `Write` with the first write error, else the first write
    /// concern error; `InsertMany` or `BulkWrite` with every write error (caller positions)
    /// and write concern error. Each carries the whole [`PartialWrite`].
    pub(crate) fn finish(mut self) -> Result<BulkWriteResult> {
        self.write_errors.sort_by_key(|e| e.index);
        let first = match (self.write_errors.first(), self.write_concern_errors.first()) {
            (Some(refused), _) => WriteFailure::WriteError(refused.to_write_error()),
            (None, Some(wce)) => WriteFailure::WriteConcernError(wce.clone()),
            (None, None) => return Ok(self.result),
        };
        let shape = self.shape;
        let (labels, partial) = self.into_partial();
        let kind = failure_kind(shape, first, &partial);
        Err(Error::with_kind_and_labels(kind, labels).with_partial_write(partial))
    }

    /// The labels and the statement-by-statement account: every position not executed, refused
    /// or of unknown fate certainly did not run.
    fn into_partial(mut self) -> (ErrorLabels, PartialWrite) {
        self.executed.sort_unstable();
        self.unknown.sort_unstable();
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
        let partial = PartialWrite {
            applied: self.result,
            executed: self.executed,
            write_errors: self.write_errors,
            write_concern_errors: self.write_concern_errors,
            unknown: self.unknown,
            not_executed,
        };
        (self.labels, partial)
    }
}

/// The error kind `shape` reports for a write that ended with write errors or write concern
/// errors: a single write reports `first` (its write error, else its write concern error); the
/// others report all of them, read from the statement-by-statement account.
fn failure_kind(shape: FailureShape, first: WriteFailure, partial: &PartialWrite) -> ErrorKind {
    match shape {
        FailureShape::Single => ErrorKind::Write(first),
        FailureShape::InsertMany => ErrorKind::InsertMany(InsertManyError {
            write_errors: (!partial.write_errors.is_empty()).then(|| partial.write_errors.clone()),
            write_concern_error: partial.write_concern_errors.first().cloned(),
            inserted_ids: partial.applied.inserted_ids.clone(),
        }),
        FailureShape::BulkWrite => ErrorKind::BulkWrite(BulkWriteError {
            write_concern_errors: partial.write_concern_errors.clone(),
            write_errors: partial
                .write_errors
                .iter()
                .map(|e| (e.index, e.to_write_error()))
                .collect(),
            partial_result: (!partial.executed.is_empty())
                .then(|| PartialBulkWriteResult::Summary(summary_of(&partial.applied))),
        }),
    }
}

/// The totals of a collection-level bulk write in the client-level result's shape (counts are
/// bounded by the input, so they fit an `i64`).
fn summary_of(applied: &BulkWriteResult) -> SummaryBulkWriteResult {
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    SummaryBulkWriteResult {
        inserted_count: count(applied.inserted_count),
        matched_count: count(applied.matched_count),
        modified_count: count(applied.modified_count),
        upserted_count: count(applied.upserted_count),
        deleted_count: count(applied.deleted_count),
        acknowledged: true,
    }
}
