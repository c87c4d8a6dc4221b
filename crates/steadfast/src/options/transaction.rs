//! Options of a multi-document transaction.

use std::time::Duration;

use steadfast_core::options::{ReadConcern, WriteConcern};
use steadfast_core::selection::SelectionCriteria;

options_struct! {
    /// How a transaction started with `ClientSession::start_transaction` runs. An option left
    /// `None` is taken from the session's `default_transaction_options`, then from the client.
    #[derive(serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct TransactionOptions {
        /// The read concern of the transaction's reads, sent with its first command only.
        #[serde(skip_serializing)]
        read_concern: ReadConcern,
        /// The write concern of commitTransaction and abortTransaction (never of the
        /// transaction's own writes). An unacknowledged one is refused.
        #[serde(skip_serializing)]
        write_concern: WriteConcern,
        /// The read preference of the transaction's reads; it must be primary when a read
        /// runs (as a transaction only reads from the primary).
        #[serde(skip_serializing, rename = "readPreference")]
        [into] selection_criteria: SelectionCriteria,
        /// The server's time limit for commitTransaction (`maxTimeMS`); deprecated in favour of
        /// timeoutMS, which replaces it when set.
        #[serde(
            rename(serialize = "maxTimeMS", deserialize = "maxCommitTimeMS"),
            with = "steadfast_core::serde_util::duration_ms"
        )]
        max_commit_time: Duration,
    }
}

impl TransactionOptions {
    /// These options with every unset field taken from `defaults`.
    pub(crate) fn or(mut self, defaults: &TransactionOptions) -> TransactionOptions {
        if self.read_concern.is_none() {
            self.read_concern.clone_from(&defaults.read_concern);
        }
        if self.write_concern.is_none() {
            self.write_concern.clone_from(&defaults.write_concern);
        }
        if self.selection_criteria.is_none() {
            self.selection_criteria
                .clone_from(&defaults.selection_criteria);
        }
        if self.max_commit_time.is_none() {
            self.max_commit_time = defaults.max_commit_time;
        }
        self
    }
}
