//! The driver's one error type.
//!
//! Every fallible call in steadfast returns [`Error`]: a small, cheap-to-move handle (two
//! pointers) whose public [`kind`](Error::kind) field, a `Box<ErrorKind>`, says *what* went
//! wrong, with the labels that say *what may be done about it* (`RetryableWriteError`,
//! `SystemOverloadedError`, ...), the address of the server involved, and the underlying cause
//! as a [`std::error::Error::source`] chain.
//!
//! The shape is the official driver's: code written for it (`match *error.kind {
//! ErrorKind::Write(WriteFailure::WriteError(ref e)) => .. }`, `error.contains_label(..)`)
//! compiles unchanged. A single-statement write reports [`ErrorKind::Write`], `insert_many`
//! [`ErrorKind::InsertMany`], `bulk_write` [`ErrorKind::BulkWrite`]; network failures and
//! timeouts are [`ErrorKind::Io`]. steadfast adds to it: the predicates (`is_network_error`,
//! `is_timeout`, `is_state_change_error`, ...), and what follows.
//!
//! Messages never contain secrets: passwords, SCRAM proofs and private keys are never formatted.
//!
//! # Errors after retries
//!
//! The error an operation ends with tells the whole story of its attempts (see the crate's
//! `retries` documentation for which operations are retried and when):
//!
//! - [`Error::retry_history`]: every failed attempt, oldest first — the server it went to, its
//!   error, why it failed ([`RetryReason`]), whether it could have run on the server
//!   ([`Execution`]) and how long the driver waited before the next one.
//! - Which attempt's error is reported follows the retryable-writes rules and nothing else:
//!   the most recent error that does not say "no write attempted", or the first error when
//!   every one does. Only the server's `NoWritesPerformed` label and a request never sent say
//!   so; a refusal code such as NotWritablePrimary does not (it still counts towards
//!   [`Error::outcome`], which is a different question). A timeout under
//!   `timeoutMS` is reported as an [`ErrorKind::Io`] of [`std::io::ErrorKind::TimedOut`] whose
//!   [`source`](std::error::Error::source) is the last underlying error.
//! - [`Error::outcome`]: whether a write was certainly not applied, applied (only its write
//!   concern failed), partly applied ([`Outcome::PartlyApplied`]: some statements of a
//!   multi-statement write ran, the others certainly did not), or may have been
//!   ([`Outcome::Ambiguous`]: an attempt reached the server and its fate is unknown — make the
//!   write idempotent, or check before writing again). It never says `NotApplied` when anything
//!   may have been written.
//! - [`Error::partial_write`]: for the write operations, statement by statement, what had been
//!   applied, refused, left unknown or never run when the write failed, with the inserted and
//!   upserted `_id`s — a failure in a later batch of a large `insert_many` or `bulk_write` keeps
//!   the results of the earlier batches.
//! - [`Error::class`] sorts the failure into the three cases of "How to write resilient
//!   MongoDB applications": a [transient](ErrorClass::Transient) error the driver did not retry
//!   (the application may), a [persistent outage](ErrorClass::Outage) that outlasted every
//!   retry allowed, or a [command error](ErrorClass::Command) the server would repeat. A
//!   transient error that a retry overcame never reaches the application: the operation
//!   succeeds, and the retry shows up as a `RetryEvent`, a `tracing` event and in the command
//!   events.

mod command;
mod facts;
mod gridfs;
mod io;
mod kind;
mod partial;
mod retry;
#[cfg(test)]
mod tests;
mod write;

use std::any::Any;
use std::fmt;
use std::sync::Arc;

pub use steadfast_core::ErrorLabels;
use steadfast_core::codes::{self, StateChangeKind};
pub use steadfast_core::labels::Iter as ErrorLabelsIter;
use steadfast_core::{Label, ServerAddress};

pub use crate::client_bulk::PartialBulkWriteResult;
pub use command::CommandError;
pub(crate) use facts::{ConnectionFailure, ErrorFacts};
pub use gridfs::{GridFsErrorKind, GridFsFileIdentifier};
use io::ConnectionIoKind;
pub use kind::ErrorKind;
pub use partial::PartialWrite;
pub(crate) use partial::never_executed;
pub use retry::{AttemptRecord, ErrorClass};
pub(crate) use steadfast_core::reply_is_ok;
pub use steadfast_core::retry::{Execution, Outcome, RetryReason, StopReason};
pub(crate) use write::ReplyWriteErrors;
pub use write::{
    BulkWriteError, IndexedWriteError, InsertManyError, WriteConcernError, WriteError, WriteFailure,
};

/// Error label the server (4.4+) or the driver attaches to errors that a retryable write may retry.
pub const RETRYABLE_WRITE_ERROR: &str = Label::RetryableWriteError.as_str();
/// Error label for errors inside a transaction after which the whole transaction may be retried.
pub const TRANSIENT_TRANSACTION_ERROR: &str = Label::TransientTransactionError.as_str();
/// Error label for a commit whose outcome is unknown.
pub const UNKNOWN_TRANSACTION_COMMIT_RESULT: &str = Label::UnknownTransactionCommitResult.as_str();
/// Error label of a change stream error after which the stream may resume (the server's, 4.4+).
pub const RESUMABLE_CHANGE_STREAM_ERROR: &str = steadfast_core::change_stream::RESUMABLE_LABEL;
/// Error label the server attaches when it shed load (client backpressure specification).
pub const SYSTEM_OVERLOADED_ERROR: &str = Label::SystemOverloadedError.as_str();
/// Error label saying the server considers the command safe to retry (client backpressure).
pub const RETRYABLE_ERROR: &str = Label::RetryableError.as_str();
/// Error label saying that no attempt of a write modified data (retryable writes).
pub const NO_WRITES_PERFORMED: &str = Label::NoWritesPerformed.as_str();

/// A specialised `Result` whose error is the driver's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The driver's error: see the [module documentation](self).
///
/// `Error` is two pointers wide: the public [`kind`](Self::kind) is a `Box<ErrorKind>` as in the
/// official driver (so `match *error.kind { .. }` can move its payload out), and everything
/// else lives in a second allocation.
#[derive(Clone)]
pub struct Error {
    /// What went wrong.
    pub kind: Box<ErrorKind>,
    inner: Box<ErrorInner>,
}

#[derive(Clone)]
struct ErrorInner {
    labels: ErrorLabels,
    address: Option<ServerAddress>,
    source: Option<Arc<dyn std::error::Error + Send + Sync + 'static>>,
    retry_history: Vec<AttemptRecord>,
    /// Set by the executor for the error an operation ends with.
    retry: Option<retry::RetryReport>,
    /// Set by the write operations: what was applied before the failure.
    partial_write: Option<Box<PartialWrite>>,
    /// The server's whole `ok: 0` reply, for fields the error does not model.
    server_response: Option<Arc<bson::RawDocumentBuf>>,
}

impl Error {
    /// An error of the given kind with no labels, address or source.
    pub fn new(kind: ErrorKind) -> Self {
        Error {
            kind: Box::new(kind),
            inner: Box::new(ErrorInner {
                labels: ErrorLabels::new(),
                address: None,
                source: None,
                retry_history: Vec::new(),
                retry: None,
                partial_write: None,
                server_response: None,
            }),
        }
    }

    /// The server's whole reply, for a command error: fields the error does not model (such
    /// as a `collMod`'s `violations`) are read from it.
    pub fn server_response(&self) -> Option<&bson::RawDocumentBuf> {
        self.inner.server_response.as_deref()
    }

    /// Keeps the server's reply the error was read from.
    pub(crate) fn with_server_response(mut self, reply: &bson::RawDocumentBuf) -> Self {
        self.inner.server_response = Some(Arc::new(reply.clone()));
        self
    }

    /// An error carrying an application's own value, e.g. to end a closure the driver runs
    /// with a failure of the application's making. [`Error::get_custom`] reads it back.
    pub fn custom(value: impl Any + Send + Sync) -> Self {
        Error::new(ErrorKind::Custom(Arc::new(value)))
    }

    /// The value given to [`Error::custom`], if this error is one and the value is an `E`.
    pub fn get_custom<E: Any>(&self) -> Option<&E> {
        match &*self.kind {
            ErrorKind::Custom(value) => value.downcast_ref::<E>(),
            _ => None,
        }
    }

    /// A connection failure: an [`ErrorKind::Io`] describing what the driver was doing.
    pub(crate) fn network(message: impl Into<String>) -> Self {
        let error = io::connection_io(
            std::io::ErrorKind::Other,
            ConnectionIoKind::Failed,
            message.into(),
        );
        Error::new(ErrorKind::Io(Arc::new(error)))
    }

    /// A connection failure caused by `cause`: an [`ErrorKind::Io`] of `cause`'s
    /// [`std::io::ErrorKind`] describing what the driver was doing, `cause` as its source.
    pub(crate) fn network_io(message: impl Into<String>, cause: std::io::Error) -> Self {
        let error = io::connection_io(cause.kind(), ConnectionIoKind::Failed, message.into());
        Error::new(ErrorKind::Io(Arc::new(error))).with_source(cause)
    }

    /// A connection the operation waited for or used was lost to a pool clear.
    pub(crate) fn pool_cleared(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::ConnectionPoolCleared {
            message: message.into(),
        })
    }

    /// A timeout: an [`ErrorKind::Io`] of [`std::io::ErrorKind::TimedOut`] saying what timed out.
    pub(crate) fn timeout(message: impl Into<String>) -> Self {
        let error = io::connection_io(
            std::io::ErrorKind::TimedOut,
            ConnectionIoKind::TimedOut,
            message.into(),
        );
        Error::new(ErrorKind::Io(Arc::new(error)))
    }

    pub(crate) fn protocol(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidResponse {
            message: message.into(),
        })
    }

    pub(crate) fn authentication(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Authentication {
            message: message.into(),
        })
    }

    /// A transaction call the session's state refuses.
    pub(crate) fn transaction(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Transaction {
            message: message.into(),
        })
    }

    /// A local refusal by the adaptive policy: never sent.
    pub(crate) fn throttled(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Throttled {
            message: message.into(),
        })
    }

    pub(crate) fn invalid_argument(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidArgument {
            message: message.into(),
        })
    }

    /// An SRV or TXT lookup of a `mongodb+srv://` connection string that failed or returned
    /// records that cannot be used.
    pub(crate) fn dns(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::DnsResolve {
            message: message.into(),
        })
    }

    /// A TLS configuration that cannot be used, or a handshake that failed on a certificate.
    #[cfg_attr(
        not(feature = "rustls-tls"),
        allow(dead_code, reason = "only TLS raises it")
    )]
    pub(crate) fn tls(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidTlsConfig {
            message: message.into(),
        })
    }

    /// An [`ErrorKind::Io`] saying what the driver was doing, of the same [`std::io::ErrorKind`]
    /// as `cause`, which becomes the [`source`](std::error::Error::source).
    #[cfg_attr(
        not(feature = "rustls-tls"),
        allow(dead_code, reason = "only TLS reads files")
    )]
    pub(crate) fn io(message: impl Into<String>, cause: std::io::Error) -> Self {
        let described = std::io::Error::new(cause.kind(), message.into());
        Error::new(ErrorKind::Io(Arc::new(described))).with_source(cause)
    }

    /// Attaches the underlying cause, reported by [`std::error::Error::source`].
    pub(crate) fn with_source(
        mut self,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        self.inner.source = Some(Arc::new(source));
        self
    }

    /// Records the server this error came from (kept if one is already set).
    pub(crate) fn with_address(mut self, address: &ServerAddress) -> Self {
        if self.inner.address.is_none() {
            self.inner.address = Some(address.clone());
        }
        self
    }

    /// Adds labels by name (idempotent). Tests only: the driver's own code adds typed labels.
    #[cfg(test)]
    pub(crate) fn with_labels<S: AsRef<str>>(
        mut self,
        labels: impl IntoIterator<Item = S>,
    ) -> Self {
        self.inner.labels.extend(labels);
        self
    }

    /// Adds every label of `labels` (idempotent).
    pub(crate) fn with_label_set(mut self, labels: &ErrorLabels) -> Self {
        self.inner.labels.union(labels);
        self
    }

    /// The error's labels as a set.
    pub(crate) fn label_set(&self) -> &ErrorLabels {
        &self.inner.labels
    }

    /// Records what a write had done when it failed; [`Error::outcome`] is then decided by it.
    pub(crate) fn with_partial_write(mut self, partial: PartialWrite) -> Self {
        self.inner.partial_write = Some(Box::new(partial));
        self
    }

    /// For the errors of the write operations (`insert_one`, `insert_many`, `update_*`,
    /// `replace_one`, `delete_*`, `bulk_write`): statement by statement, what the write had done
    /// when it failed — what the server applied (with the inserted and upserted `_id`s), what it
    /// refused, what may or may not have run, and what never ran. A failure in a later batch of
    /// a large write keeps the results of the earlier ones here. `None` for other errors.
    pub fn partial_write(&self) -> Option<&PartialWrite> {
        self.inner.partial_write.as_deref()
    }

    /// What went wrong (the [`kind`](Self::kind) field, borrowed).
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// The server involved, when the error is tied to one.
    pub fn address(&self) -> Option<&ServerAddress> {
        self.inner.address.as_ref()
    }

    /// Whether the error carries `label` (labels sent by the server in `errorLabels` and labels
    /// the driver added). Labels are case-sensitive, as the specifications define them.
    pub fn has_label(&self, label: &str) -> bool {
        self.inner.labels.contains(label)
    }

    /// Whether this error, or the driver error it reports as its cause (the last attempt's
    /// error behind an operation timeout), carries `label`.
    pub fn contains_label<T: AsRef<str>>(&self, label: T) -> bool {
        let label = label.as_ref();
        self.has_label(label)
            || self
                .inner
                .source
                .as_deref()
                .and_then(|source| source.downcast_ref::<Error>())
                .is_some_and(|cause| cause.contains_label(label))
    }

    /// The error's labels; iterating yields each once, sorted by name.
    pub fn labels(&self) -> &ErrorLabels {
        &self.inner.labels
    }

    /// Every failed attempt of the operation, oldest first, including the one this error
    /// reports; empty for errors that did not come from running an operation (invalid
    /// options, a closed client). See [`Error::outcome`] and [`Error::class`].
    pub fn retry_history(&self) -> &[AttemptRecord] {
        &self.inner.retry_history
    }

    /// The backoff base the server asked for with a command error (`baseBackoffMS`; see
    /// [`CommandError::base_backoff`]); `None` for any other error.
    pub fn base_backoff(&self) -> Option<std::time::Duration> {
        match &*self.kind {
            ErrorKind::Command(command) => command.base_backoff,
            _ => None,
        }
    }

    /// The server error code: the command error's `code`, or the write concern error's code,
    /// or the first write error's code; for an authentication error, the code the server
    /// refused the credential with; for a bulk write stopped by an error of its own (a
    /// command that failed, a lost connection), that error's code.
    pub fn code(&self) -> Option<i32> {
        match &*self.kind {
            ErrorKind::Command(c) => c.code_if_present(),
            // The server's refusal of a credential (AuthenticationFailed, 18) is among its
            // sources (the pool wraps a failed establishment once more).
            ErrorKind::Authentication { .. } => self.refusal_code(),
            kind => match self.stopping_error() {
                Some(stopping) => stopping.code(),
                None => kind.write_failure_code(),
            },
        }
    }

    /// The error that stopped a bulk write midway, which the bulk write's error wraps with
    /// what was written before it.
    fn stopping_error(&self) -> Option<&Error> {
        match &*self.kind {
            ErrorKind::BulkWrite(_) => self.inner.source.as_deref()?.downcast_ref::<Error>(),
            _ => None,
        }
    }

    /// The code of the first server command error among the sources.
    fn refusal_code(&self) -> Option<i32> {
        let mut source: Option<&(dyn std::error::Error + 'static)> =
            self.inner.source.as_deref().map(|s| s as _);
        while let Some(cause) = source {
            if let Some(command) = cause.downcast_ref::<CommandError>() {
                return command.code_if_present();
            }
            source = cause.source();
        }
        None
    }

    /// The command error, when the server answered `ok: 0`.
    pub fn command_error(&self) -> Option<&CommandError> {
        match &*self.kind {
            ErrorKind::Command(c) => Some(c),
            _ => None,
        }
    }

    /// A network error in the specifications' sense: the socket failed or was closed, or a
    /// socket read/write timed out (an [`ErrorKind::Io`] of the driver's), or the connection
    /// was lost to a pool clear ([`ErrorKind::ConnectionPoolCleared`]). Use
    /// [`Error::is_timeout`] to tell timeouts apart.
    pub fn is_network_error(&self) -> bool {
        self.kind.connection_failure().is_some()
            || matches!(*self.kind, ErrorKind::ConnectionPoolCleared { .. })
    }

    /// Whether something ran out of time (a socket timeout, connectTimeoutMS, a deadline),
    /// including a bulk write that a timeout stopped midway.
    pub fn is_timeout(&self) -> bool {
        self.kind
            .connection_failure()
            .is_some_and(|(_, how)| how == ConnectionIoKind::TimedOut)
            || self.stopping_error().is_some_and(Error::is_timeout)
    }

    /// Whether the peer broke the wire protocol.
    pub fn is_protocol_error(&self) -> bool {
        matches!(*self.kind, ErrorKind::InvalidResponse { .. })
    }

    /// Whether authentication failed.
    pub fn is_authentication_error(&self) -> bool {
        matches!(*self.kind, ErrorKind::Authentication { .. })
    }

    /// An SDAM "state change" error: "not writable primary" or "node is recovering", judged by
    /// the command error's code (or, only without a code, by its message) and by the write
    /// concern error. Write errors are never considered.
    pub fn is_state_change_error(&self) -> bool {
        self.is_not_writable_primary() || self.is_node_recovering()
    }

    /// An SDAM "not writable primary" error (NotWritablePrimary, NotPrimaryNoSecondaryOk,
    /// LegacyNotPrimary, or a message containing "not master" when there is no code).
    pub fn is_not_writable_primary(&self) -> bool {
        self.state_change_source().is_some_and(|(code, msg)| {
            codes::classify_state_change(code, msg) == Some(StateChangeKind::NotWritablePrimary)
        })
    }

    /// An SDAM "node is recovering" error (InterruptedAtShutdown, InterruptedDueToReplStateChange,
    /// NotPrimaryOrSecondary, PrimarySteppedDown, ShutdownInProgress, or the message fallback).
    pub fn is_node_recovering(&self) -> bool {
        self.state_change_source().is_some_and(|(code, msg)| {
            codes::classify_state_change(code, msg) == Some(StateChangeKind::NodeIsRecovering)
        })
    }

    /// An SDAM "node is shutting down" error (InterruptedAtShutdown, ShutdownInProgress): the
    /// one state-change case after which the server's pool is cleared.
    pub fn is_shutting_down(&self) -> bool {
        self.state_change_source()
            .is_some_and(|(code, _)| codes::is_shutdown_code(code))
    }

    /// Whether the server shed load (`SystemOverloadedError` label).
    pub fn is_overload_error(&self) -> bool {
        self.inner.labels.has(Label::SystemOverloadedError)
    }

    /// The code (if any) and message that SDAM inspects: the command error itself, or the write
    /// concern error of an acknowledged write.
    fn state_change_source(&self) -> Option<(Option<i32>, &str)> {
        match &*self.kind {
            ErrorKind::Command(c) => Some((c.code_if_present(), c.message.as_str())),
            kind => kind
                .write_concern_error()
                .map(|wce| (Some(wce.code), wce.message.as_str())),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.kind)?;
        if let Some(address) = &self.inner.address {
            write!(f, " (server {address})")?;
        }
        if !self.inner.labels.is_empty() {
            let labels: Vec<&str> = self.labels().iter().collect();
            write!(f, " [labels: {}]", labels.join(", "))?;
        }
        if let Some(source) = &self.inner.source {
            write!(f, ": {source}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.kind);
        if let Some(address) = &self.inner.address {
            d.field("address", &format_args!("{address}"));
        }
        if !self.inner.labels.is_empty() {
            d.field("labels", &self.inner.labels);
        }
        if let Some(source) = &self.inner.source {
            d.field("source", source);
        }
        if !self.inner.retry_history.is_empty() {
            d.field("retry_history", &self.inner.retry_history);
        }
        if let Some(partial) = &self.inner.partial_write {
            d.field("partial_write", partial);
        }
        d.finish()
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner
            .source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Error::new(kind)
    }
}

impl From<CommandError> for Error {
    /// A command error, carrying the labels the server sent.
    fn from(mut command: CommandError) -> Self {
        let labels = std::mem::take(&mut command.labels);
        let mut error = Error::new(ErrorKind::Command(command));
        error.inner.labels = labels;
        error
    }
}

impl Error {
    /// The write concern error of an acknowledged reply as an [`ErrorKind::Write`], carrying
    /// the reply's labels; `None` when the reply reported none. Write errors the reply may also
    /// hold are left to the write's own accounting.
    pub(crate) fn from_write_concern_reply(errors: ReplyWriteErrors) -> Option<Self> {
        let wce = errors.write_concern_error?;
        Some(Error::with_kind_and_labels(
            ErrorKind::Write(WriteFailure::WriteConcernError(wce)),
            errors.labels,
        ))
    }

    /// A single-statement write's error read from its acknowledged `reply`: its first write
    /// error, else its write concern error, with the reply's labels. Tests only: the driver's
    /// writes build their errors from all their batches (`BulkAccumulator`).
    #[cfg(test)]
    pub(crate) fn from_write_reply(reply: &bson::Document) -> Option<Self> {
        let errors = ReplyWriteErrors::from_reply(reply)?;
        match errors.write_errors.first() {
            Some(refused) => Some(Error::with_kind_and_labels(
                ErrorKind::Write(WriteFailure::WriteError(refused.to_write_error())),
                errors.labels,
            )),
            None => Error::from_write_concern_reply(errors),
        }
    }

    /// An error of `kind` carrying `labels` (a multi-statement write's merged labels).
    pub(crate) fn with_kind_and_labels(kind: ErrorKind, labels: ErrorLabels) -> Self {
        let mut error = Error::new(kind);
        error.inner.labels = labels;
        error
    }
}

impl From<bson::error::Error> for Error {
    /// A BSON (de)serialisation failure of a document the application supplied.
    fn from(e: bson::error::Error) -> Self {
        Error::invalid_argument("a document could not be (de)serialised as BSON").with_source(e)
    }
}
