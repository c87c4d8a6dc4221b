//! The transaction state machine of a client session (transactions specification, "ClientSession
//! changes"), the error labels a transaction adds, when a session unpins, the write concern of a
//! retried commit, and the convenient API's backoff. Pure: the driver feeds it what happened.
//!
//! ```text
//!  None ──start──► Starting ──first command──► InProgress
//!   ▲                │   │                        │   │
//!   │         commit │   │ abort           commit │   │ abort
//!   │                ▼   ▼                        ▼   ▼
//!   └── any other ── Committed{empty}  Aborted ◄──────┘
//!       operation    (commit again re-runs a non-empty commit)
//! ```
//!
//! A misuse (starting twice, committing after aborting, ...) is reported as a
//! [`TransactionMisuse`] and leaves the state as it was.

use std::fmt;
use std::time::Duration;

use crate::labels::{ErrorLabels, Label};
use crate::options::{Acknowledgment, WriteConcern};

/// How long a retried commit waits for its majority write concern when the transaction's write
/// concern sets no `wtimeout` (transactions: "writeConcern for commitTransaction attempts").
pub const COMMIT_RETRY_WTIMEOUT: Duration = Duration::from_secs(10);

/// How long the convenient API keeps retrying when no timeoutMS applies.
pub const CONVENIENT_RETRY_LIMIT: Duration = Duration::from_secs(120);

/// The convenient API's first backoff and its cap (transactions-convenient-api).
const BACKOFF_INITIAL_MS: f64 = 5.0;
const BACKOFF_MAX_MS: f64 = 500.0;
const BACKOFF_GROWTH: f64 = 1.5;

/// CannotSatisfyWriteConcern (UnsatisfiableWriteConcern) and UnknownReplWriteConcern: write
/// concern errors a retried commit would only repeat, so their outcome is not "unknown".
const UNSATISFIABLE_WRITE_CONCERN: i32 = 100;
const UNKNOWN_REPL_WRITE_CONCERN: i32 = 79;
/// MaxTimeMSExpired.
const MAX_TIME_MS_EXPIRED: i32 = 50;

/// Where a session stands with respect to transactions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TransactionState {
    /// No transaction: operations run on their own.
    #[default]
    None,
    /// Started, but no command has been sent yet.
    Starting,
    /// At least one command of the transaction was sent.
    InProgress,
    /// Committed (or at least commit was attempted: the state holds even if it failed).
    Committed {
        /// No command was ever sent, so no commitTransaction was either.
        empty: bool,
    },
    /// Aborted (abortTransaction sent if anything was, its errors ignored).
    Aborted,
}

/// A call that the state forbids; the state is left unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransactionMisuse {
    /// startTransaction while a transaction is starting or in progress.
    AlreadyInProgress,
    /// commit or abort with no transaction.
    NoTransactionStarted,
    /// commit after abort.
    CommitAfterAbort,
    /// abort after commit.
    AbortAfterCommit,
    /// abort after abort.
    AbortTwice,
}

impl fmt::Display for TransactionMisuse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The wording is the specification's: applications and test suites match on it.
        f.write_str(match self {
            TransactionMisuse::AlreadyInProgress => "Transaction already in progress",
            TransactionMisuse::NoTransactionStarted => "No transaction started",
            TransactionMisuse::CommitAfterAbort => {
                "Cannot call commitTransaction after calling abortTransaction"
            }
            TransactionMisuse::AbortAfterCommit => {
                "Cannot call abortTransaction after calling commitTransaction"
            }
            TransactionMisuse::AbortTwice => "Cannot call abortTransaction twice",
        })
    }
}

impl std::error::Error for TransactionMisuse {}

/// What `commit` asks the driver to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommitAction {
    /// Nothing was sent in the transaction: succeed without a command.
    Skip,
    /// Send commitTransaction; `rerun` when it was sent before (the write concern becomes
    /// majority, as for a retry).
    Send {
        /// A commit of this transaction was already attempted.
        rerun: bool,
    },
}

/// What `abort` asks the driver to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbortAction {
    /// Nothing was sent in the transaction: no command.
    Skip,
    /// Send abortTransaction.
    Send,
}

/// How an operation run in the session relates to its transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OperationRole {
    /// Not in a transaction. `unpin`: the session ended a transaction and must drop its pin.
    Outside {
        /// The session's mongos pin (if any) must be dropped.
        unpin: bool,
    },
    /// The transaction's first command: startTransaction, autocommit, read concern.
    First,
    /// A later command of the transaction: autocommit only.
    Inside,
}

/// Which command of a transaction failed, for the labels the driver adds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransactionCommand {
    /// Any command of a transaction but commitTransaction (abortTransaction included).
    Statement,
    /// commitTransaction.
    Commit,
}

/// What the driver knows of a failed command of a transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransactionFailure {
    /// No reply came: a network error, a cleared pool, or no server could be selected.
    NoReply,
    /// The server answered `ok: 0` with this code.
    Command {
        /// The error code.
        code: i32,
    },
    /// The command succeeded but its write concern failed with this code.
    WriteConcern {
        /// The write concern error's code.
        code: i32,
    },
    /// The operation's own deadline (timeoutMS) expired.
    DeadlineExpired,
    /// Anything else (an invalid argument, an unreadable reply): no label.
    Other,
}

impl TransactionState {
    /// Whether a transaction is starting or in progress.
    pub fn is_active(self) -> bool {
        matches!(
            self,
            TransactionState::Starting | TransactionState::InProgress
        )
    }

    /// startTransaction. Returns whether the session must unpin first (a committed transaction
    /// keeps its pin until the next one starts).
    ///
    /// # Errors
    /// [`TransactionMisuse::AlreadyInProgress`] while a transaction is active.
    pub fn start(&mut self) -> Result<bool, TransactionMisuse> {
        if self.is_active() {
            return Err(TransactionMisuse::AlreadyInProgress);
        }
        let unpin = matches!(self, TransactionState::Committed { .. });
        *self = TransactionState::Starting;
        Ok(unpin)
    }

    /// commitTransaction: moves to committed (even if the command then fails).
    ///
    /// # Errors
    /// [`TransactionMisuse::NoTransactionStarted`] or [`TransactionMisuse::CommitAfterAbort`].
    pub fn commit(&mut self) -> Result<CommitAction, TransactionMisuse> {
        let action = match *self {
            TransactionState::None => return Err(TransactionMisuse::NoTransactionStarted),
            TransactionState::Aborted => return Err(TransactionMisuse::CommitAfterAbort),
            TransactionState::Starting | TransactionState::Committed { empty: true } => {
                *self = TransactionState::Committed { empty: true };
                CommitAction::Skip
            }
            TransactionState::InProgress => CommitAction::Send { rerun: false },
            TransactionState::Committed { empty: false } => CommitAction::Send { rerun: true },
        };
        if let CommitAction::Send { .. } = action {
            *self = TransactionState::Committed { empty: false };
        }
        Ok(action)
    }

    /// abortTransaction: moves to aborted (whatever the command's fate).
    ///
    /// # Errors
    /// [`TransactionMisuse::NoTransactionStarted`], [`TransactionMisuse::AbortAfterCommit`]
    /// or [`TransactionMisuse::AbortTwice`].
    pub fn abort(&mut self) -> Result<AbortAction, TransactionMisuse> {
        let action = match *self {
            TransactionState::None => return Err(TransactionMisuse::NoTransactionStarted),
            TransactionState::Committed { .. } => return Err(TransactionMisuse::AbortAfterCommit),
            TransactionState::Aborted => return Err(TransactionMisuse::AbortTwice),
            TransactionState::Starting => AbortAction::Skip,
            TransactionState::InProgress => AbortAction::Send,
        };
        *self = TransactionState::Aborted;
        Ok(action)
    }

    /// An operation other than commit or abort is about to run in the session: a finished
    /// transaction is left behind (back to no transaction).
    pub fn begin_operation(&mut self) -> OperationRole {
        match *self {
            TransactionState::Starting => OperationRole::First,
            TransactionState::InProgress => OperationRole::Inside,
            TransactionState::None => OperationRole::Outside { unpin: false },
            TransactionState::Committed { .. } | TransactionState::Aborted => {
                *self = TransactionState::None;
                OperationRole::Outside { unpin: true }
            }
        }
    }

    /// The transaction's first command was sent (whatever its reply): later commands are not
    /// the first.
    pub fn first_command_sent(&mut self) {
        if *self == TransactionState::Starting {
            *self = TransactionState::InProgress;
        }
    }
}

/// The labels the driver adds to a failure of `command` in a transaction: a failure without a
/// reply is transient for a statement (the whole transaction may be retried), while a commit
/// whose fate is unknown (no reply, a retryable error, MaxTimeMSExpired, a write concern error
/// that a retry might satisfy) gets UnknownTransactionCommitResult. `labels` are the error's
/// labels so far (the server's and the retryable-write rules').
///
/// A commit's outcome is also unknown, whatever its last error says, when the server shed it
/// as overloaded (`RetryableError`: the transaction is still open and a commit may be sent
/// again) or when `earlier_attempt_ran`: an earlier attempt of the same commit may have run
/// (no reply, or a write concern error), so a later refusal (an overload, say) says nothing
/// about whether the transaction committed. Reporting such a commit as failed would make an
/// application redo a transaction that is already applied. The exception is a refusal the
/// server labels TransientTransactionError (NoSuchTransaction from a mongos recovering the
/// commit, say): that is the server's word that the transaction was aborted, which a commit
/// that had committed would never get (a repeated commit of a committed transaction succeeds).
pub fn transaction_labels(
    command: TransactionCommand,
    failure: TransactionFailure,
    labels: &ErrorLabels,
    earlier_attempt_ran: bool,
) -> ErrorLabels {
    let mut added = ErrorLabels::new();
    match command {
        TransactionCommand::Statement => {
            if failure == TransactionFailure::NoReply {
                added.insert(Label::TransientTransactionError);
            }
        }
        TransactionCommand::Commit => {
            let unknown = match failure {
                TransactionFailure::NoReply | TransactionFailure::DeadlineExpired => true,
                TransactionFailure::Command { code } => {
                    code == MAX_TIME_MS_EXPIRED || labels.has(Label::RetryableWriteError)
                }
                TransactionFailure::WriteConcern { code } => {
                    code != UNSATISFIABLE_WRITE_CONCERN && code != UNKNOWN_REPL_WRITE_CONCERN
                }
                TransactionFailure::Other => false,
            } || ((labels.has(Label::RetryableError) || earlier_attempt_ran)
                && !labels.has(Label::TransientTransactionError));
            if unknown {
                added.insert(Label::UnknownTransactionCommitResult);
            }
        }
    }
    added
}

/// Whether a failure of `command` carrying `labels` unpins the session: a transient error (the
/// transaction is gone, or its mongos is), or a commit of unknown outcome (its retry may go to
/// another mongos).
pub fn unpins_session(command: TransactionCommand, labels: &ErrorLabels) -> bool {
    labels.has(Label::TransientTransactionError)
        || (command == TransactionCommand::Commit
            && labels.has(Label::UnknownTransactionCommitResult))
}

/// The write concern of a retried (or re-run) commit: `w: majority`, the transaction's other
/// settings kept, and a `wtimeout` of [`COMMIT_RETRY_WTIMEOUT`] unless one is set.
pub fn commit_retry_write_concern(concern: Option<&WriteConcern>) -> WriteConcern {
    let mut concern = concern.cloned().unwrap_or_default();
    concern.w = Some(Acknowledgment::Majority);
    if concern.w_timeout.is_none() {
        concern.w_timeout = Some(COMMIT_RETRY_WTIMEOUT);
    }
    concern
}

/// The convenient API's sleep before its `attempt`-th retry (1 for the first retry):
/// `jitter × min(5 ms × 1.5^attempt, 500 ms)`, `jitter` drawn from `[0, 1]` by the caller.
pub fn convenient_backoff(attempt: u32, jitter: f64) -> Duration {
    let jitter = if jitter.is_finite() {
        jitter.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let exponent = i32::try_from(attempt).unwrap_or(i32::MAX);
    let ceiling = (BACKOFF_INITIAL_MS * BACKOFF_GROWTH.powi(exponent)).min(BACKOFF_MAX_MS);
    Duration::from_secs_f64(jitter * ceiling / 1000.0)
}

/// The convenient API's retry decisions (transactions-convenient-api, "Sequence of Actions"):
/// whether to start the transaction again (and after what backoff), or to commit again.
#[derive(Clone, Copy, Debug)]
pub struct ConvenientRetries {
    /// 120 s, or the timeoutMS that applies.
    limit: Duration,
    /// Attempts at the transaction so far.
    attempts: u32,
}

/// What to do before an attempt at the transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextAttempt {
    /// Sleep this long (zero for the first attempt), then start the transaction.
    After(Duration),
    /// The backoff would outlast the limit: report the last error.
    GiveUp,
}

/// What to do after a commit of the convenient API failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterCommitFailure {
    /// Commit again (the outcome is unknown; a re-run commit is safe).
    CommitAgain,
    /// Run the whole transaction again (the backoff before it may find the time is up).
    RunAgain,
    /// The outcome is unknown but the time limit has passed: report the error as a timeout
    /// ("Timeout Error propagation").
    TimedOut,
    /// Report the error as it is.
    Fail,
}

impl ConvenientRetries {
    /// Retries bounded by `limit` since the first attempt began.
    pub fn new(limit: Duration) -> Self {
        ConvenientRetries { limit, attempts: 0 }
    }

    /// Before an attempt at `elapsed` since the first began; `jitter` is drawn from `[0, 1]`.
    pub fn next_attempt(&mut self, elapsed: Duration, jitter: f64) -> NextAttempt {
        let backoff = if self.attempts == 0 {
            Duration::ZERO
        } else {
            convenient_backoff(self.attempts, jitter)
        };
        if self.attempts > 0 && elapsed.saturating_add(backoff) >= self.limit {
            return NextAttempt::GiveUp;
        }
        self.attempts = self.attempts.saturating_add(1);
        NextAttempt::After(backoff)
    }

    /// Whether the transaction runs again after its callback failed with `labels`.
    pub fn run_again_after_callback(&self, labels: &ErrorLabels, elapsed: Duration) -> bool {
        labels.has(Label::TransientTransactionError) && elapsed < self.limit
    }

    /// What follows a failed commit with `labels`, in the order of the specification's
    /// pseudo-code; `max_time_expired` when the server's time limit (maxCommitTimeMS or
    /// timeoutMS) ended it, which a commit again would only repeat. A transient error runs the
    /// transaction again whatever the time: the backoff before the next attempt is where the
    /// limit stops it, with the same timeout error.
    pub fn after_commit_failure(
        &self,
        labels: &ErrorLabels,
        max_time_expired: bool,
        elapsed: Duration,
    ) -> AfterCommitFailure {
        if !max_time_expired && labels.has(Label::UnknownTransactionCommitResult) {
            if elapsed >= self.limit {
                AfterCommitFailure::TimedOut
            } else {
                AfterCommitFailure::CommitAgain
            }
        } else if labels.has(Label::TransientTransactionError) {
            AfterCommitFailure::RunAgain
        } else {
            AfterCommitFailure::Fail
        }
    }
}

#[cfg(test)]
mod tests;
