//! What a write had done when it failed: the statements the server applied, the ones it
//! refused, the ones whose fate is unknown and the ones never executed.

use steadfast_core::retry::Outcome;

use super::{IndexedWriteError, WriteConcernError};
use crate::results::BulkWriteResult;

/// What a failed write (`insert_one` ... `bulk_write`, `insert_many`) had done by the time it
/// failed, statement by statement. Read it through [`Error::partial_write`](super::Error::partial_write).
///
/// Every statement of the write, named by its position in the caller's input (the model's
/// index for `bulk_write`, the document's for `insert_many`, 0 for single writes), is in exactly
/// one of four places:
///
/// - [`executed`](Self::executed): the server ran it and reported no error for it. Its inserted
///   or upserted `_id` and its counts are in [`applied`](Self::applied).
/// - [`write_errors`](Self::write_errors): the server ran it and refused it (a duplicate key, a
///   validation failure); nothing of it was applied.
/// - [`unknown`](Self::unknown): it was sent in a batch whose reply never arrived or could not be
///   read; it may or may not have been applied. Check before writing it again, or make it
///   idempotent.
/// - [`not_executed`](Self::not_executed): it was never sent, or an ordered batch stopped at an
///   earlier error before reaching it. Sending it again cannot apply it twice.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct PartialWrite {
    /// Counts and `_id`s of what the server applied, keyed by the caller's positions.
    pub applied: BulkWriteResult,
    /// Positions of the statements the server executed without an error, ascending.
    pub executed: Vec<usize>,
    /// The statements the server refused, with the caller's positions, ascending.
    pub write_errors: Vec<IndexedWriteError>,
    /// The write concern error of every batch that reported one, in the order the batches ran
    /// (a write concern error means that batch's statements were applied, not that they were
    /// replicated as asked).
    pub write_concern_errors: Vec<WriteConcernError>,
    /// Positions of the statements whose fate is unknown, ascending.
    pub unknown: Vec<usize>,
    /// Positions of the statements that certainly did not run, ascending.
    pub not_executed: Vec<usize>,
}

impl PartialWrite {
    /// The write's outcome as these facts decide it: [`Outcome::Ambiguous`] when any statement's
    /// fate is unknown, [`Outcome::NotApplied`] when none was executed,
    /// [`Outcome::Applied`] when every one was (only a write concern failed), and
    /// [`Outcome::PartlyApplied`] otherwise.
    pub fn outcome(&self) -> Outcome {
        if !self.unknown.is_empty() {
            Outcome::Ambiguous
        } else if self.executed.is_empty() {
            Outcome::NotApplied
        } else if self.write_errors.is_empty() && self.not_executed.is_empty() {
            Outcome::Applied
        } else {
            Outcome::PartlyApplied
        }
    }
}

/// The positions of `total` statements that are in none of `accounted` (executed, refused or
/// of unknown fate): those certainly did not run. Positions past `total` are ignored.
pub(crate) fn never_executed(
    total: usize,
    accounted: impl IntoIterator<Item = usize>,
) -> Vec<usize> {
    let mut seen = vec![false; total];
    for at in accounted {
        if let Some(slot) = seen.get_mut(at) {
            *slot = true;
        }
    }
    (0..total).filter(|&at| !seen[at]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_error(index: usize) -> IndexedWriteError {
        IndexedWriteError {
            index,
            code: 11000,
            code_name: Some("DuplicateKey".into()),
            message: "dup".into(),
            details: None,
        }
    }

    #[test]
    fn the_outcome_never_claims_less_than_the_facts() {
        let nothing = PartialWrite {
            not_executed: vec![0, 1],
            ..PartialWrite::default()
        };
        assert_eq!(nothing.outcome(), Outcome::NotApplied);

        let refused = PartialWrite {
            write_errors: vec![write_error(0)],
            not_executed: vec![1],
            ..PartialWrite::default()
        };
        assert_eq!(refused.outcome(), Outcome::NotApplied);

        let all = PartialWrite {
            executed: vec![0, 1],
            ..PartialWrite::default()
        };
        assert_eq!(all.outcome(), Outcome::Applied);

        let some = PartialWrite {
            executed: vec![0],
            write_errors: vec![write_error(1)],
            ..PartialWrite::default()
        };
        assert_eq!(some.outcome(), Outcome::PartlyApplied);

        let stopped = PartialWrite {
            executed: vec![0],
            not_executed: vec![1],
            ..PartialWrite::default()
        };
        assert_eq!(stopped.outcome(), Outcome::PartlyApplied);

        let unknown = PartialWrite {
            executed: vec![0],
            unknown: vec![1],
            ..PartialWrite::default()
        };
        assert_eq!(unknown.outcome(), Outcome::Ambiguous);
    }
}
