//! Bulk writes as plain values: grouping models into runs of one command kind, and merging the
//! batch replies into one result or one write failure with the caller's positions.

use std::collections::BTreeSet;
use std::sync::Arc;

use bson::Bson;
use serde::Serialize;

use super::models::WriteModel;
use crate::error::{Error, Result, WriteConcernError, WriteError, WriteFailure};
use crate::operation::write::{Statement, WriteKind};
use crate::operation::write_reply::BatchOutcome;
use crate::results::BulkWriteResult;

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
        Ok(BulkPlan { runs })
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
        }
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

/// Merges batch outcomes. Write errors are reported with the caller's positions, sorted; the
/// first write concern error is kept (later batches usually repeat it); labels are merged.
#[derive(Debug, Default)]
pub(crate) struct BulkAccumulator {
    ordered: bool,
    result: BulkWriteResult,
    write_errors: Vec<WriteError>,
    write_concern_error: Option<WriteConcernError>,
    labels: Vec<String>,
}

impl BulkAccumulator {
    /// An empty accumulator for an ordered or unordered bulk.
    pub(crate) fn new(ordered: bool) -> Self {
        BulkAccumulator {
            ordered,
            ..BulkAccumulator::default()
        }
    }

    /// Adds the outcome of one batch of `run`.
    pub(crate) fn add(&mut self, run: &Run, outcome: BatchOutcome) {
        let position = |run_index: usize| run.positions.get(run_index).copied();
        let failed: BTreeSet<usize> = outcome.write_errors.iter().map(|e| e.index).collect();
        match run.kind {
            WriteKind::Insert => {
                self.result.inserted_count += outcome.n;
                // An ordered batch stops at its first error: later statements never ran.
                let executed_end = match (self.ordered, failed.first()) {
                    (true, Some(first)) => *first,
                    _ => outcome.start + outcome.count,
                };
                for run_index in outcome.start..executed_end {
                    if failed.contains(&run_index) {
                        continue;
                    }
                    if let (Some(at), Some(id)) = (position(run_index), run.ids.get(run_index)) {
                        self.result.inserted_ids.insert(at, id.clone());
                    }
                }
            }
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
        if self.write_concern_error.is_none() {
            self.write_concern_error = outcome.write_concern_error;
        }
        for label in outcome.labels {
            if !self.labels.contains(&label) {
                self.labels.push(label);
            }
        }
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

    /// The merged result, or the write failure when any batch reported write errors or a write
    /// concern error.
    ///
    /// # Errors
    /// `Write` with every write error (caller positions, sorted) and the write concern error.
    pub(crate) fn finish(mut self) -> Result<BulkWriteResult> {
        if self.write_errors.is_empty() && self.write_concern_error.is_none() {
            return Ok(self.result);
        }
        self.write_errors.sort_by_key(|e| e.index);
        Err(Error::from(WriteFailure {
            write_errors: self.write_errors,
            write_concern_error: self.write_concern_error,
            labels: self.labels,
        }))
    }
}
