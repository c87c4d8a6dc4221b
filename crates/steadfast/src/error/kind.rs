//! [`ErrorKind`]: what went wrong, with the variants and payloads of the official driver's
//! `ErrorKind` for the failures both report.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use bson::Document;

use super::io::{ConnectionIoKind, read_connection_io};
use super::{BulkWriteError, CommandError, InsertManyError, WriteConcernError, WriteFailure};

/// What went wrong: the [`Error::kind`](super::Error::kind) field. New variants may be added.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An argument passed to an API call is invalid, including client options and connection
    /// strings that are invalid or inconsistent.
    #[non_exhaustive]
    InvalidArgument {
        /// Which argument and why.
        message: String,
    },
    /// Authentication failed: wrong credentials, a server signature that did not verify, or a
    /// SASL conversation that went wrong.
    #[non_exhaustive]
    Authentication {
        /// What failed (never includes the password or a proof).
        message: String,
    },
    /// The server answered a command with `ok: 0`.
    Command(CommandError),
    /// A single-statement write was acknowledged with a write error or a write concern error.
    Write(WriteFailure),
    /// An `insert_many` was acknowledged with write errors or a write concern error.
    InsertMany(InsertManyError),
    /// A `bulk_write` was acknowledged with write errors or write concern errors.
    BulkWrite(BulkWriteError),
    /// No suitable server was found before the server selection timeout.
    #[non_exhaustive]
    ServerSelection {
        /// Why no server was suitable.
        message: String,
    },
    /// The server's reply broke the wire protocol or was not a valid reply to the command: a
    /// malformed frame, an unexpected `responseTo`. The connection is unusable afterwards.
    #[non_exhaustive]
    InvalidResponse {
        /// What was wrong with the bytes received.
        message: String,
    },
    /// An I/O failure: reading from or writing to a socket failed, the server closed the
    /// connection, no connection could be made, or a socket read or write, a connection attempt
    /// or an operation ran out of time (then of [`std::io::ErrorKind::TimedOut`]). Also a local
    /// file that could not be read (a CA or key file). [`Error::is_network_error`] and
    /// [`Error::is_timeout`](super::Error::is_timeout) tell these apart.
    ///
    /// [`Error::is_network_error`]: super::Error::is_network_error
    Io(Arc<std::io::Error>),
    /// The server's connection pool was cleared (after a network error or a state change) while
    /// the operation waited for a connection or used one. The operation may be retried: the
    /// driver counts it as a network error ([`Error::is_network_error`]).
    ///
    /// [`Error::is_network_error`]: super::Error::is_network_error
    #[non_exhaustive]
    ConnectionPoolCleared {
        /// What happened to the connection.
        message: String,
    },
    /// A `mongodb+srv://` connection string could not be resolved: the SRV or TXT lookup failed,
    /// or the records it returned cannot be used.
    #[non_exhaustive]
    DnsResolve {
        /// Which lookup failed and why.
        message: String,
    },
    /// TLS could not be set up (a certificate or key file that is not valid PEM, a host name
    /// that cannot be a TLS server name) or the server's certificate was rejected during the
    /// handshake.
    #[non_exhaustive]
    InvalidTlsConfig {
        /// What failed.
        message: String,
    },
    /// A document the server returned does not deserialise as the type the application asked
    /// for (a cursor's `T`).
    BsonDeserialization(bson::error::Error),
    /// The client was shut down (`Client::shutdown`) before the call.
    Shutdown,
    /// A transaction call the session's state does not allow (committing with no transaction
    /// started, starting one in a snapshot session, ...).
    #[non_exhaustive]
    Transaction {
        /// What was refused, in the transactions specification's words.
        message: String,
    },
    /// A change stream event had no `_id` (a pipeline stage removed it), so the stream could
    /// not resume after it; the stream is closed.
    MissingResumeToken,
    /// A GridFS operation failed: a file or revision that does not exist, a corrupt file, or
    /// misuse of an upload stream.
    GridFs(super::GridFsErrorKind),
    /// The client refused the operation before sending it: its
    /// [`AdaptivePolicy`](crate::retries::AdaptivePolicy) saw the server shed load and
    /// throttled it. Nothing was sent, so nothing was applied; its
    /// [`class`](super::Error::class) is [`ErrorClass::Overload`](super::ErrorClass::Overload).
    #[non_exhaustive]
    Throttled {
        /// Which operation, which server, and the refusal probability that applied.
        message: String,
    },
    /// A value the application wrapped with [`Error::custom`](super::Error::custom); read it
    /// back with [`Error::get_custom`](super::Error::get_custom).
    Custom(Arc<dyn Any + Send + Sync>),
}

impl ErrorKind {
    /// What the driver was doing and how the connection failed, when this is a connection
    /// failure or a timeout (not a local file's I/O error).
    pub(crate) fn connection_failure(&self) -> Option<(&str, ConnectionIoKind)> {
        match self {
            ErrorKind::Io(error) => read_connection_io(error),
            _ => None,
        }
    }

    /// The write concern error of a write failure: the one of a single write, the first of an
    /// `insert_many` or `bulk_write`.
    pub(crate) fn write_concern_error(&self) -> Option<&WriteConcernError> {
        match self {
            ErrorKind::Write(failure) => failure.write_concern_error(),
            ErrorKind::InsertMany(e) => e.write_concern_error.as_ref(),
            ErrorKind::BulkWrite(e) => e.write_concern_errors.first(),
            _ => None,
        }
    }

    /// Whether this is an acknowledged write's failure (write errors or write concern errors).
    pub(crate) fn is_write_failure(&self) -> bool {
        matches!(
            self,
            ErrorKind::Write(_) | ErrorKind::InsertMany(_) | ErrorKind::BulkWrite(_)
        )
    }

    /// The code of a write failure: its write concern error's, else its first write error's
    /// (lowest position).
    pub(crate) fn write_failure_code(&self) -> Option<i32> {
        if let Some(wce) = self.write_concern_error() {
            return Some(wce.code);
        }
        match self {
            ErrorKind::Write(failure) => Some(failure.code()),
            ErrorKind::InsertMany(e) => e.write_errors.as_ref()?.first().map(|w| w.code),
            ErrorKind::BulkWrite(e) => e
                .write_errors
                .iter()
                .min_by_key(|(index, _)| **index)
                .map(|(_, w)| w.code),
            _ => None,
        }
    }
}

impl ErrorKind {
    /// The message and `errInfo` of the first write error (lowest position) with `code`, in a
    /// write failure of any shape.
    pub(crate) fn write_error_with_code(&self, code: i32) -> Option<(&str, Option<&Document>)> {
        match self {
            ErrorKind::Write(WriteFailure::WriteError(e)) if e.code == code => {
                Some((e.message.as_str(), e.details.as_ref()))
            }
            ErrorKind::InsertMany(e) => e
                .write_errors
                .as_deref()?
                .iter()
                .find(|e| e.code == code)
                .map(|e| (e.message.as_str(), e.details.as_ref())),
            ErrorKind::BulkWrite(e) => e
                .write_errors
                .iter()
                .filter(|(_, e)| e.code == code)
                .min_by_key(|(index, _)| **index)
                .map(|(_, e)| (e.message.as_str(), e.details.as_ref())),
            _ => None,
        }
    }
}

/// The wrapped error, for the kinds that wrap one.
impl std::error::Error for ErrorKind {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ErrorKind::Io(error) => Some(error.as_ref()),
            ErrorKind::BsonDeserialization(error) => Some(error),
            ErrorKind::Command(error) => Some(error),
            _ => None,
        }
    }
}

/// An I/O error as its kind (`Io`).
impl From<std::io::Error> for ErrorKind {
    fn from(error: std::io::Error) -> ErrorKind {
        ErrorKind::Io(Arc::new(error))
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::InvalidResponse { message } => write!(f, "wire protocol error: {message}"),
            ErrorKind::Command(c) => write!(f, "{c}"),
            ErrorKind::Write(w) => write!(f, "{w}"),
            ErrorKind::InsertMany(e) => write!(f, "{e}"),
            ErrorKind::BulkWrite(e) => write!(f, "{e}"),
            ErrorKind::Authentication { message } => write!(f, "authentication failed: {message}"),
            ErrorKind::InvalidArgument { message } => write!(f, "invalid argument: {message}"),
            ErrorKind::ConnectionPoolCleared { message } => write!(f, "{message}"),
            ErrorKind::DnsResolve { message } => write!(f, "DNS resolution failed: {message}"),
            ErrorKind::ServerSelection { message } => write!(f, "server selection: {message}"),
            ErrorKind::InvalidTlsConfig { message } => write!(f, "TLS error: {message}"),
            ErrorKind::Io(e) => match read_connection_io(e) {
                Some((message, ConnectionIoKind::Failed)) => write!(f, "network error: {message}"),
                Some((message, ConnectionIoKind::TimedOut)) => write!(f, "timed out {message}"),
                None => write!(f, "I/O error: {e}"),
            },
            ErrorKind::BsonDeserialization(e) => {
                write!(
                    f,
                    "the document does not deserialise as the requested type: {e}"
                )
            }
            ErrorKind::Shutdown => write!(f, "the client has been shut down"),
            ErrorKind::Throttled { message } => write!(f, "refused locally, never sent: {message}"),
            ErrorKind::Transaction { message } => write!(f, "transaction error: {message}"),
            ErrorKind::MissingResumeToken => write!(
                f,
                "cannot provide resume functionality when the resume token is missing"
            ),
            ErrorKind::GridFs(e) => write!(f, "{e}"),
            ErrorKind::Custom(value) => match value.downcast_ref::<String>() {
                Some(text) => write!(f, "application error: {text}"),
                None => match value.downcast_ref::<&str>() {
                    Some(text) => write!(f, "application error: {text}"),
                    None => write!(f, "application error"),
                },
            },
        }
    }
}
