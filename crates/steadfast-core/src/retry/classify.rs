//! What a failed attempt tells us: the facts the executor observed, and what they imply about
//! whether the request could have executed and whether it may be sent again.

use std::time::Duration;

use crate::codes;
use crate::labels::{ErrorLabels, Label};

/// Error labels the retry rules read, by name.
pub mod labels {
    use crate::labels::Label;

    /// Server or driver says the write may be retried with the same txnNumber.
    pub const RETRYABLE_WRITE_ERROR: &str = Label::RetryableWriteError.as_str();
    /// The server is overloaded: back off before retrying.
    pub const SYSTEM_OVERLOADED_ERROR: &str = Label::SystemOverloadedError.as_str();
    /// The command may be retried whatever it is.
    pub const RETRYABLE_ERROR: &str = Label::RetryableError.as_str();
    /// The attempt performed no write.
    pub const NO_WRITES_PERFORMED: &str = Label::NoWritesPerformed.as_str();
}

/// How far a request got before it failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sent {
    /// Nothing was written to a socket: selection, check-out or connection establishment failed.
    No,
    /// The request was written (or partly written); the server may have received it.
    Yes,
}

/// The class of failure, as observed by the executor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// The pool was cleared (or paused) while the attempt waited for a connection.
    PoolCleared,
    /// Establishing a new connection failed (network error during connect, TLS, handshake).
    ConnectionEstablishment,
    /// A network error on an established connection (reset, EOF, refused write).
    Network,
    /// A network timeout (socket deadline) on an established connection.
    NetworkTimeout,
    /// The server answered with a command error.
    Command {
        /// The error code.
        code: i32,
    },
    /// The write was applied but its write concern was not satisfied.
    WriteConcern {
        /// The write concern error's code.
        code: i32,
    },
    /// The operation's own deadline (timeoutMS) expired.
    DeadlineExpired,
    /// Anything the retry rules never retry: invalid arguments, authentication, server
    /// selection timeout, protocol violations.
    NonRetryable,
}

/// The facts of one failed attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailureFacts {
    /// What failed.
    pub kind: FailureKind,
    /// Whether the request may have reached the server.
    pub sent: Sent,
    /// The error labels (from the server, plus those the driver adds).
    pub labels: ErrorLabels,
    /// `baseBackoffMS` from an overload error, if the server gave one.
    pub base_backoff: Option<Duration>,
    /// The max wire version of the server the attempt used (0 if none was selected).
    pub max_wire_version: i32,
}

impl FailureFacts {
    /// Whether the facts carry `label`.
    pub fn has_label(&self, label: &str) -> bool {
        self.labels.contains(label)
    }

    /// An overload error: `SystemOverloadedError`.
    pub fn is_overload(&self) -> bool {
        self.labels.has(Label::SystemOverloadedError)
    }

    /// A retryable overload error: both `SystemOverloadedError` and `RetryableError`. The
    /// backpressure specification allows any command to be retried on it.
    pub fn is_retryable_overload(&self) -> bool {
        self.is_overload() && self.labels.has(Label::RetryableError)
    }

    /// Whether this error makes a retryable write retryable (retryable-writes: the label on
    /// 4.4+ servers, the code list before; network errors and pool clears always).
    pub fn is_retryable_write_error(&self) -> bool {
        if self.labels.has(Label::RetryableWriteError) {
            return true;
        }
        match &self.kind {
            FailureKind::PoolCleared
            | FailureKind::ConnectionEstablishment
            | FailureKind::Network
            | FailureKind::NetworkTimeout => true,
            FailureKind::Command { code } | FailureKind::WriteConcern { code } => {
                // Servers from 4.4 (wire 9) label their own retryable errors; the driver adds
                // the label from the code list only for older servers.
                self.max_wire_version < 9 && codes::is_retryable_code(*code)
            }
            FailureKind::DeadlineExpired | FailureKind::NonRetryable => false,
        }
    }

    /// Whether this error makes a retryable read retryable.
    pub fn is_retryable_read_error(&self) -> bool {
        match &self.kind {
            FailureKind::PoolCleared
            | FailureKind::ConnectionEstablishment
            | FailureKind::Network
            | FailureKind::NetworkTimeout => true,
            FailureKind::Command { code } => codes::is_retryable_read_code(*code),
            FailureKind::WriteConcern { .. }
            | FailureKind::DeadlineExpired
            | FailureKind::NonRetryable => false,
        }
    }

    /// Whether the attempt indicates, in retryable-writes' sense, that no write was attempted:
    /// it was never sent, or the server labelled its error `NoWritesPerformed`. Only this
    /// chooses which error a failed operation reports. It is deliberately narrower than
    /// [`FailureFacts::execution`]: a refusal code without the label (NotWritablePrimary,
    /// ShutdownInProgress, ...) still counts as an attempt here, as the specification requires.
    pub fn no_write_attempted(&self) -> bool {
        self.sent == Sent::No || self.has_label(labels::NO_WRITES_PERFORMED)
    }

    /// Whether the attempt could have executed on the server: what the outcome and the safety
    /// of a resend rest on, not which error is reported (see
    /// [`FailureFacts::no_write_attempted`]).
    pub fn execution(&self, deduplicated: bool) -> Execution {
        if self.sent == Sent::No {
            return Execution::NotSent;
        }
        if self.labels.has(Label::NoWritesPerformed) {
            return Execution::RejectedBeforeExecution;
        }
        match &self.kind {
            FailureKind::Command { code } if codes::is_rejected_before_execution(*code) => {
                Execution::RejectedBeforeExecution
            }
            FailureKind::WriteConcern { .. } => Execution::Executed,
            _ if deduplicated => Execution::Deduplicated,
            _ => Execution::MayHaveExecuted,
        }
    }

    /// The reason recorded in the retry history.
    pub fn reason(&self) -> RetryReason {
        match &self.kind {
            FailureKind::PoolCleared => RetryReason::PoolCleared,
            FailureKind::ConnectionEstablishment => RetryReason::ConnectionEstablishment,
            FailureKind::Network => RetryReason::NetworkError,
            FailureKind::NetworkTimeout => RetryReason::NetworkTimeout,
            FailureKind::Command { code }
                if self.is_overload() || codes::is_overload_code(*code) =>
            {
                RetryReason::Overloaded { code: *code }
            }
            FailureKind::Command { code } if codes::is_shutdown_code(Some(*code)) => {
                RetryReason::ShuttingDown { code: *code }
            }
            FailureKind::Command { code } if codes::is_retryable_code(*code) => {
                RetryReason::StateChange { code: *code }
            }
            FailureKind::Command { code } => RetryReason::CommandError { code: *code },
            FailureKind::WriteConcern { code } => RetryReason::WriteConcernError { code: *code },
            FailureKind::DeadlineExpired => RetryReason::DeadlineExpired,
            FailureKind::NonRetryable => RetryReason::NonRetryable,
        }
    }
}

/// Whether a failed request could have executed on the server: the question the Couchbase RFC
/// asks before every retry of a non-idempotent request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Execution {
    /// Never sent: retrying cannot apply anything twice.
    NotSent,
    /// The server refused it before running it (NotWritablePrimary, overload, NoWritesPerformed).
    RejectedBeforeExecution,
    /// It may have run, but the server deduplicates a resend (same lsid and txnNumber).
    Deduplicated,
    /// It ran (for example a write whose write concern failed).
    Executed,
    /// It may have run and a resend could run it again.
    MayHaveExecuted,
}

impl Execution {
    /// Whether a resend is free of the risk of a second application.
    pub fn resend_is_safe(self, idempotent: bool) -> bool {
        match self {
            Execution::NotSent | Execution::RejectedBeforeExecution | Execution::Deduplicated => {
                true
            }
            Execution::Executed | Execution::MayHaveExecuted => idempotent,
        }
    }
}

/// Why an attempt failed, as recorded in the retry history and in retry events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RetryReason {
    /// The pool was cleared while waiting for a connection.
    PoolCleared,
    /// A new connection could not be established.
    ConnectionEstablishment,
    /// A network error on an established connection.
    NetworkError,
    /// A socket timeout on an established connection.
    NetworkTimeout,
    /// The server is overloaded (code 462 or the SystemOverloadedError label).
    Overloaded {
        /// The server's code.
        code: i32,
    },
    /// The node is shutting down.
    ShuttingDown {
        /// The server's code.
        code: i32,
    },
    /// The node is not (or no longer) primary, or is recovering.
    StateChange {
        /// The server's code.
        code: i32,
    },
    /// A write concern error.
    WriteConcernError {
        /// The server's code.
        code: i32,
    },
    /// Another command error.
    CommandError {
        /// The server's code.
        code: i32,
    },
    /// The operation's deadline expired.
    DeadlineExpired,
    /// An error no retry rule applies to.
    NonRetryable,
}

impl std::fmt::Display for RetryReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RetryReason::PoolCleared => f.write_str("pool cleared"),
            RetryReason::ConnectionEstablishment => f.write_str("connection establishment failed"),
            RetryReason::NetworkError => f.write_str("network error"),
            RetryReason::NetworkTimeout => f.write_str("network timeout"),
            RetryReason::Overloaded { code } => write!(f, "server overloaded (code {code})"),
            RetryReason::ShuttingDown { code } => write!(f, "server shutting down (code {code})"),
            RetryReason::StateChange { code } => {
                write!(f, "replica set state change (code {code})")
            }
            RetryReason::WriteConcernError { code } => {
                write!(f, "write concern error (code {code})")
            }
            RetryReason::CommandError { code } => write!(f, "command error (code {code})"),
            RetryReason::DeadlineExpired => f.write_str("deadline expired"),
            RetryReason::NonRetryable => f.write_str("non-retryable error"),
        }
    }
}
