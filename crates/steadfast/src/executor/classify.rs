//! What a failed attempt tells the retry rules: the error's class, whether the request left
//! the driver, its labels (the server's and those the driver adds), and the server's
//! `baseBackoffMS`.

use std::time::{Duration, Instant};

use steadfast_core::codes::{MAX_TIME_MS_EXPIRED, is_retryable_code};
use steadfast_core::retry::{FailureFacts, FailureKind, OperationKind, Sent};
use steadfast_core::{Deadline, ErrorLabels, Label};

use crate::error::{ConnectionFailure, Error, ErrorFacts, ErrorKind};
use crate::pool::{PoolFailure, failure_of};

/// Servers from this wire version (4.4) label their retryable write errors themselves.
const SERVER_LABELS_RETRYABLE_WRITES: i32 = 9;

/// What the classification needs to know besides the error.
#[derive(Clone, Copy, Debug)]
pub(super) struct Circumstances {
    /// How the retry rules see the operation at this attempt. `RetryableWrite` already says
    /// that retryWrites applies: the client's option is on, or the operation is a
    /// commitTransaction or abortTransaction, which are retryable whatever it says.
    pub(super) kind: OperationKind,
    /// The max wire version of the server the attempt used (0 if none was selected).
    pub(super) max_wire_version: i32,
    /// Whether that server is a mongos (whose write concern error codes are never labelled by
    /// the driver).
    pub(super) mongos: bool,
    /// Where the operation stood against its timeoutMS.
    pub(super) deadline: DeadlineStatus,
    /// Whether the request may have reached the server.
    pub(super) sent: Sent,
    /// `baseBackoffMS` from the server's error reply.
    pub(super) base_backoff: Option<Duration>,
}

/// Where an operation stands against its timeoutMS when an attempt fails: the one fact of its
/// [`Deadline`] that classification reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum DeadlineStatus {
    /// timeoutMS is not set: a timeout is a deprecated per-step timeout's (socketTimeoutMS,
    /// waitQueueTimeoutMS, serverSelectionTimeoutMS).
    NotSet,
    /// timeoutMS is set and time is left (always so for timeoutMS=0).
    Running,
    /// The deadline has passed, or what is left cannot cover a round trip to the server.
    Expired,
}

impl DeadlineStatus {
    /// The status of `deadline` at `now`.
    pub(super) fn of(deadline: Deadline, now: Instant) -> Self {
        if !deadline.is_csot() {
            DeadlineStatus::NotSet
        } else if deadline.is_expired(now) {
            DeadlineStatus::Expired
        } else {
            DeadlineStatus::Running
        }
    }

    /// Whether timeoutMS applies (then MaxTimeMSExpired is the deadline's).
    fn is_csot(self) -> bool {
        self != DeadlineStatus::NotSet
    }
}

/// Classifies `error` and adds the labels the driver owes it; returns the facts and the
/// labelled error.
pub(super) fn classify(error: Error, circumstances: &Circumstances) -> (FailureFacts, Error) {
    let mut added = ErrorLabels::new();
    let kind = match failure_of(&error) {
        // A closed pool means the server left the topology: another server may serve a retry,
        // which selection will find, exactly as after a clear.
        Some(
            PoolFailure::Cleared { .. } | PoolFailure::Interrupted { .. } | PoolFailure::Closed,
        ) => FailureKind::PoolCleared,
        Some(PoolFailure::WaitQueueTimeout) => expired_or(circumstances, FailureKind::NonRetryable),
        Some(PoolFailure::Establishment {
            system_overloaded,
            cause,
        }) => {
            if *system_overloaded {
                // CMAP backpressure: a connection refused or timed out while the server is busy
                // is an overload error, retried with backoff.
                added.insert(Label::SystemOverloadedError);
                added.insert(Label::RetryableError);
            }
            match cause.kind() {
                _ if cause.is_timeout() && circumstances.deadline == DeadlineStatus::Expired => {
                    FailureKind::DeadlineExpired
                }
                _ if cause.is_network_error() => FailureKind::ConnectionEstablishment,
                ErrorKind::Command(command) => FailureKind::Command { code: command.code },
                _ => FailureKind::NonRetryable,
            }
        }
        None => match error.facts() {
            ErrorFacts::Connection(ConnectionFailure::Network) => FailureKind::Network,
            ErrorFacts::Connection(ConnectionFailure::Timeout) => {
                expired_or(circumstances, FailureKind::NetworkTimeout)
            }
            // Without a code a command error reads as code 0, as `CommandError::code` does.
            ErrorFacts::Command(reply) => match reply.code.unwrap_or(0) {
                MAX_TIME_MS_EXPIRED if circumstances.deadline.is_csot() => {
                    FailureKind::DeadlineExpired
                }
                code => FailureKind::Command { code },
            },
            ErrorFacts::WriteConcern(reply) => match reply.code.unwrap_or(0) {
                MAX_TIME_MS_EXPIRED if circumstances.deadline.is_csot() => {
                    FailureKind::DeadlineExpired
                }
                code => FailureKind::WriteConcern { code },
            },
            ErrorFacts::Other if matches!(error.kind(), ErrorKind::ServerSelection { .. }) => {
                expired_or(circumstances, FailureKind::NonRetryable)
            }
            ErrorFacts::Connection(_) | ErrorFacts::Authentication(_) | ErrorFacts::Other => {
                FailureKind::NonRetryable
            }
        },
    };
    if needs_retryable_write_label(&kind, circumstances) {
        added.insert(Label::RetryableWriteError);
    }
    let error = if added.is_empty() {
        error
    } else {
        error.with_label_set(&added)
    };
    let facts = FailureFacts {
        kind,
        sent: circumstances.sent,
        labels: error.label_set().clone(),
        base_backoff: circumstances.base_backoff,
        max_wire_version: circumstances.max_wire_version,
    };
    (facts, error)
}

/// `DeadlineExpired` once the operation's deadline has passed, else `otherwise`.
fn expired_or(circumstances: &Circumstances, otherwise: FailureKind) -> FailureKind {
    if circumstances.deadline == DeadlineStatus::Expired {
        FailureKind::DeadlineExpired
    } else {
        otherwise
    }
}

/// retryable-writes "RetryableWriteError Labels": the driver labels network errors and pool
/// clears of retryable writes, and, for servers older than 4.4 (which do not label their own
/// errors), command errors and mongod write concern errors whose code is in the retryable
/// list. The kind alone decides: a commit is a retryable write even with retryWrites off, and
/// reading the client's option here would leave its network errors unlabelled, hence not
/// retried.
fn needs_retryable_write_label(kind: &FailureKind, circumstances: &Circumstances) -> bool {
    if circumstances.kind != OperationKind::RetryableWrite {
        return false;
    }
    let old_server = circumstances.max_wire_version < SERVER_LABELS_RETRYABLE_WRITES;
    match kind {
        FailureKind::PoolCleared
        | FailureKind::ConnectionEstablishment
        | FailureKind::Network
        | FailureKind::NetworkTimeout => true,
        FailureKind::Command { code } => old_server && is_retryable_code(*code),
        FailureKind::WriteConcern { code } => {
            old_server && !circumstances.mongos && is_retryable_code(*code)
        }
        FailureKind::DeadlineExpired | FailureKind::NonRetryable => false,
    }
}
