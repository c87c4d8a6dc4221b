//! What the executor's retry loop adds to the error an operation ends with: the attempts, the
//! operation's outcome, and the class of the failure.

use std::time::Duration;

use steadfast_core::ServerAddress;
use steadfast_core::retry::{Execution, Outcome, RetryReason, StopReason};

use super::{Error, ErrorKind, RETRYABLE_ERROR, RETRYABLE_WRITE_ERROR, SYSTEM_OVERLOADED_ERROR};

/// One failed attempt of the operation an error ended, in order.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct AttemptRecord {
    /// The server the attempt was sent to, if one was selected.
    pub address: Option<ServerAddress>,
    /// How that attempt failed.
    pub error: Error,
    /// Why it failed, as the retry layer saw it.
    pub reason: RetryReason,
    /// Whether the attempt could have run on the server.
    pub execution: Execution,
    /// How long the driver waited before the next attempt (zero for the last one).
    pub delay_before_next: Duration,
}

/// The executor's verdict on a failed operation.
#[derive(Clone, Debug)]
pub(super) struct RetryReport {
    pub(super) outcome: Outcome,
    pub(super) stop: Option<StopReason>,
}

/// The three kinds of failure an application must tell apart (after "How to write resilient
/// MongoDB applications"), plus errors that are not about the deployment at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorClass {
    /// A transient failure (network error, timeout, election, overload, cleared pool) that
    /// the driver did not retry — its retry rules or the policy forbade it, as for a
    /// non-retryable write or with `FailFast`. The application may retry if the operation is
    /// idempotent or [`Error::outcome`] is [`Outcome::NotApplied`].
    Transient,
    /// Transient failures that outlasted every retry allowed, or no server that could be
    /// reached: the deployment is down or unreachable for now. Retrying at once is unlikely to
    /// help; alert, back off, or fail the request.
    Outage,
    /// The server answered with an error that does not depend on the deployment's state (a
    /// duplicate key, a validation failure, an unauthorized command): sending the same
    /// request again would fail the same way.
    Command,
    /// Not about the deployment: invalid arguments or options, authentication, TLS setup, a
    /// protocol violation.
    Other,
}

impl Error {
    /// Records the retry loop's history and verdict on the error an operation ends with.
    pub(crate) fn with_retry_report(
        mut self,
        history: Vec<AttemptRecord>,
        outcome: Outcome,
        stop: Option<StopReason>,
    ) -> Self {
        self.inner.retry_history = history;
        self.inner.retry = Some(RetryReport { outcome, stop });
        self
    }

    /// What the failed operation did to the data, as far as the driver can know:
    /// [`Outcome::NotApplied`] (a read, or a write none of whose statements could have run),
    /// [`Outcome::Applied`] (the write happened; for example only its write concern failed),
    /// [`Outcome::PartlyApplied`] (some statements of a multi-statement write were applied and
    /// the rest certainly not: see [`Error::partial_write`]) or [`Outcome::Ambiguous`] (an
    /// attempt reached the server and its fate is unknown). It never says `NotApplied` when
    /// anything may have been written. Errors that did not come from running an operation
    /// report `NotApplied`.
    pub fn outcome(&self) -> Outcome {
        if let Some(partial) = &self.inner.partial_write {
            return partial.outcome();
        }
        if self.kind.write_concern_error().is_some() {
            // The server reports a write concern error only after applying the write.
            return Outcome::Applied;
        }
        self.inner
            .retry
            .as_ref()
            .map_or(Outcome::NotApplied, |r| r.outcome)
    }

    /// Replaces the outcome the executor recorded (creating the record for an error that has
    /// none), for failures whose fate the retry history alone does not tell.
    pub(crate) fn with_outcome(mut self, outcome: Outcome) -> Self {
        match &mut self.inner.retry {
            Some(report) => report.outcome = outcome,
            None => {
                self.inner.retry = Some(RetryReport {
                    outcome,
                    stop: None,
                })
            }
        }
        self
    }

    /// Why the driver stopped retrying, for an error an operation ended with (`None` for
    /// other errors).
    pub fn stop_reason(&self) -> Option<StopReason> {
        self.inner.retry.as_ref().and_then(|r| r.stop)
    }

    /// Which kind of failure this is; see [`ErrorClass`].
    pub fn class(&self) -> ErrorClass {
        let retried = self.inner.retry_history.len() > 1;
        match &*self.kind {
            ErrorKind::ServerSelection { .. } => ErrorClass::Outage,
            ErrorKind::ConnectionPoolCleared { .. } => transient_unless(retried),
            ErrorKind::Io(_) if self.is_network_error() => transient_unless(retried),
            ErrorKind::Command(_)
            | ErrorKind::Write(_)
            | ErrorKind::InsertMany(_)
            | ErrorKind::BulkWrite(_)
                if self.is_transient_server_error() =>
            {
                transient_unless(retried)
            }
            ErrorKind::Command(_)
            | ErrorKind::Write(_)
            | ErrorKind::InsertMany(_)
            | ErrorKind::BulkWrite(_) => ErrorClass::Command,
            ErrorKind::InvalidResponse { .. }
            | ErrorKind::Authentication { .. }
            | ErrorKind::InvalidArgument { .. }
            | ErrorKind::DnsResolve { .. }
            | ErrorKind::InvalidTlsConfig { .. }
            | ErrorKind::Io(_)
            | ErrorKind::BsonDeserialization(_)
            | ErrorKind::Shutdown
            | ErrorKind::Transaction { .. }
            | ErrorKind::MissingResumeToken
            | ErrorKind::GridFs(_)
            | ErrorKind::Custom(_) => ErrorClass::Other,
        }
    }

    /// A server error caused by the deployment's state rather than by the request: a state
    /// change (election, shutdown), overload, or an error the server labelled retryable.
    fn is_transient_server_error(&self) -> bool {
        let write_errors_only =
            self.kind.is_write_failure() && self.kind.write_concern_error().is_none();
        if write_errors_only {
            // Per-document errors (duplicate key, validation) are about the request.
            return false;
        }
        self.is_state_change_error()
            || self.has_label(SYSTEM_OVERLOADED_ERROR)
            || self.has_label(RETRYABLE_ERROR)
            || self.has_label(RETRYABLE_WRITE_ERROR)
            || self
                .code()
                .is_some_and(steadfast_core::codes::is_retryable_code)
    }
}

/// A transient failure, or an outage once retries did not overcome it.
fn transient_unless(retried: bool) -> ErrorClass {
    if retried {
        ErrorClass::Outage
    } else {
        ErrorClass::Transient
    }
}
