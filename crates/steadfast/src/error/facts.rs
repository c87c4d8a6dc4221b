//! The one reading of an [`Error`] that retry classification, SDAM's application-error
//! handling and the monitors' heartbeat handling share: whether the connection failed (and
//! how), or what the server said (code, message, topologyVersion).

use steadfast_core::sdam::ServerErrorReply;

use super::io::ConnectionIoKind;
use super::{Error, ErrorKind};

/// How a connection failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConnectionFailure {
    /// Reset, EOF, refused write.
    Network,
    /// A malformed reply.
    Protocol,
    /// A TLS failure.
    Tls,
    /// A socket deadline passed.
    Timeout,
}

/// What an error says about the server it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ErrorFacts {
    /// The connection failed.
    Connection(ConnectionFailure),
    /// The server answered `ok: 0`.
    Command(ServerErrorReply),
    /// The server applied a write but its write concern failed. `WriteFailure` keeps no
    /// topologyVersion, so such an error is never judged stale.
    WriteConcern(ServerErrorReply),
    /// Authentication failed, with the driver's message.
    Authentication(String),
    /// Anything the driver raised itself (or per-document write errors): nothing about the
    /// server's state.
    Other,
}

impl Error {
    /// What this error says about its server.
    pub(crate) fn facts(&self) -> ErrorFacts {
        match self.kind() {
            // Its connection is gone as after a network error (the pool was cleared for one).
            ErrorKind::ConnectionPoolCleared { .. } => {
                ErrorFacts::Connection(ConnectionFailure::Network)
            }
            ErrorKind::Io(_) => match self.kind.connection_failure() {
                Some((_, ConnectionIoKind::Failed)) => {
                    ErrorFacts::Connection(ConnectionFailure::Network)
                }
                Some((_, ConnectionIoKind::TimedOut)) => {
                    ErrorFacts::Connection(ConnectionFailure::Timeout)
                }
                None => ErrorFacts::Other,
            },
            ErrorKind::InvalidResponse { .. } => {
                ErrorFacts::Connection(ConnectionFailure::Protocol)
            }
            ErrorKind::InvalidTlsConfig { .. } => ErrorFacts::Connection(ConnectionFailure::Tls),
            ErrorKind::Command(command) => ErrorFacts::Command(ServerErrorReply {
                code: command.code_if_present(),
                message: command.message.clone(),
                topology_version: command.topology_version,
            }),
            kind @ (ErrorKind::Write(_) | ErrorKind::InsertMany(_) | ErrorKind::BulkWrite(_)) => {
                match kind.write_concern_error() {
                    Some(wce) => ErrorFacts::WriteConcern(ServerErrorReply {
                        code: Some(wce.code),
                        message: wce.message.clone(),
                        topology_version: None,
                    }),
                    None => ErrorFacts::Other,
                }
            }
            ErrorKind::Authentication { message } => ErrorFacts::Authentication(message.clone()),
            _ => ErrorFacts::Other,
        }
    }
}
