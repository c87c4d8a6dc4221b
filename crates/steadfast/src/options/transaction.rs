//! Options of a multi-document transaction.

use std::time::Duration;

use steadfast_core::options::{ReadConcern, WriteConcern};
use steadfast_core::selection::SelectionCriteria;

options_struct! {
    /// How a transaction started with `ClientSession::start_transaction` runs. An option left
    /// `None` is taken from the session's `default_transaction_options`, then from the client.
    pub struct TransactionOptions {
        /// The read concern of the transaction's reads, sent with its first command only.
        read_concern: ReadConcern,
        /// The write concern of commitTransaction and abortTransaction (never of the
        /// transaction's own writes). An unacknowledged one is refused.
        write_concern: WriteConcern,
        /// The read preference of the transaction's reads; it must be primary when a read
        /// runs (as a transaction only reads from the primary).
        [into] selection_criteria: SelectionCriteria,
        /// The server's time limit for commitTransaction (`maxTimeMS`); deprecated in favour of
        /// timeoutMS, which replaces it when set.
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
