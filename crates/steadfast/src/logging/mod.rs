//! Structured log messages, as the MongoDB logging specification defines them, through
//! [`tracing`].
//!
//! Every message the specifications define is one `tracing` event whose target is one of the
//! four components below, at the specification's level (`debug` for every message defined so
//! far), with the field `message` holding the specification's message text and every other
//! field named exactly as the specification names it (`commandName`, `requestId`,
//! `driverConnectionId`, `serverHost`, `durationMS`...). Each message also carries
//! `topologyId`, the hex id of the client's topology (the one its SDAM events carry), so that a
//! subscriber can tell clients apart. Optional fields that do not apply are left out, never
//! logged as null. Documents (commands, replies) appear as relaxed Extended JSON cut to
//! [`ClientOptions::tracing_max_document_length_bytes`] bytes (default
//! [`DEFAULT_MAX_DOCUMENT_LENGTH`]) with `...` appended when cut.
//!
//! # Choosing what is logged
//!
//! steadfast only emits events; the application's `tracing` subscriber decides what is kept and
//! where it goes (stdout, stderr, a file, a log collector). Per-component levels are targets in
//! the subscriber's filter; with `tracing-subscriber`'s `EnvFilter`, for example:
//!
//! ```text
//! RUST_LOG=steadfast::command=debug,steadfast::connection=debug
//! RUST_LOG=steadfast=debug                 # every component
//! RUST_LOG=info,steadfast::topology=debug  # the application at info, topology messages too
//! ```
//!
//! with the application's subscriber installed as, for example,
//!
//! ```text
//! tracing_subscriber::fmt()
//!     .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
//!     .init();
//! ```
//!
//! The logging specification's `MONGODB_LOG_COMMAND`, `MONGODB_LOG_TOPOLOGY`,
//! `MONGODB_LOG_SERVER_SELECTION`, `MONGODB_LOG_CONNECTION`, `MONGODB_LOG_ALL` and
//! `MONGODB_LOG_PATH` are *not* read: the specification makes them a fallback for drivers whose
//! ecosystem has no logging configuration, and `tracing`'s filters and writers already give
//! per-component levels and destinations without code changes (a library that read them would
//! have to install its own subscriber, which is the application's choice). The document length
//! has no counterpart in `tracing`, so `MONGODB_LOG_MAX_DOCUMENT_LENGTH` *is* read, when the
//! client is created and only when the option is not set in code (the specification has code
//! win over the environment; an invalid value is ignored). An application that wants the
//! variable to win reads it itself and sets the option.

pub(crate) mod extjson;

use bson::oid::ObjectId;
use bson::{Document, RawDocument, RawDocumentBuf};
use steadfast_core::ServerAddress;
use steadfast_core::address::DEFAULT_PORT;

#[cfg(doc)]
use crate::options::ClientOptions;

/// The target of the `command` component (command logging and monitoring).
pub const COMMAND: &str = "steadfast::command";
/// The target of the `connection` component (connection monitoring and pooling).
pub const CONNECTION: &str = "steadfast::connection";
/// The target of the `serverSelection` component (server selection).
pub const SERVER_SELECTION: &str = "steadfast::server_selection";
/// The target of the `topology` component (server discovery and monitoring).
pub const TOPOLOGY: &str = "steadfast::topology";

/// The default of [`ClientOptions::tracing_max_document_length_bytes`].
pub const DEFAULT_MAX_DOCUMENT_LENGTH: usize = 1000;

/// How a redacted failure begins in a "Command failed" message: the failure of a sensitive
/// command keeps only the server's code, code name and error labels, after this marker.
pub const REDACTED_FAILURE_PREFIX: &str = "(redacted)";

/// The environment variable read for the document length when the option is not set.
const MAX_DOCUMENT_LENGTH_VARIABLE: &str = "MONGODB_LOG_MAX_DOCUMENT_LENGTH";

/// The `serverHost` and `serverPort` of a message about `address`: the port defaults to
/// 27017 as in connection strings; a Unix domain socket has its path as host and no port.
pub(crate) fn host_and_port(address: &ServerAddress) -> (&str, Option<u16>) {
    match address {
        ServerAddress::Tcp { host, port } => (host, Some(port.unwrap_or(DEFAULT_PORT))),
        ServerAddress::Unix { path } => (path, None),
    }
}

/// What every log message of one client needs: which topology it belongs to, and how long a
/// logged document may be.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LogContext {
    /// The client's topology id, logged as `topologyId` on every message.
    pub(crate) topology_id: ObjectId,
    /// The maximum length of a rendered document, in bytes (without the ellipsis).
    pub(crate) max_document_length: usize,
}

impl LogContext {
    /// A context for a new topology, with the document length from the option, else the
    /// environment variable, else the default.
    pub(crate) fn new(topology_id: ObjectId, configured: Option<usize>) -> Self {
        let variable = std::env::var(MAX_DOCUMENT_LENGTH_VARIABLE).ok();
        LogContext {
            topology_id,
            max_document_length: max_document_length(configured, variable.as_deref()),
        }
    }

    /// `document` as relaxed Extended JSON, truncated to the configured length.
    pub(crate) fn render(&self, document: &RawDocument) -> String {
        extjson::render(document, self.max_document_length)
    }

    /// [`LogContext::render`] for a document held as a [`Document`]; one that cannot be
    /// encoded (it could not have been sent either) renders as the ellipsis alone.
    pub(crate) fn render_document(&self, document: &Document) -> String {
        match RawDocumentBuf::try_from(document) {
            Ok(raw) => self.render(&raw),
            Err(_) => "...".to_owned(),
        }
    }
}

/// The document length: the option set in code, else the environment variable's value when it
/// is a non-negative integer (anything else is ignored, as the specification requires), else
/// the default.
fn max_document_length(configured: Option<usize>, variable: Option<&str>) -> usize {
    configured
        .or_else(|| variable.and_then(|value| value.trim().parse().ok()))
        .unwrap_or(DEFAULT_MAX_DOCUMENT_LENGTH)
}

impl Default for LogContext {
    /// A context with a fresh topology id and the default length (for pools and topologies
    /// built outside a client, as tests do).
    fn default() -> Self {
        LogContext {
            topology_id: crate::runtime::object_id(),
            max_document_length: DEFAULT_MAX_DOCUMENT_LENGTH,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_wins_over_the_environment_and_invalid_values_are_ignored() {
        assert_eq!(max_document_length(Some(5), Some("20")), 5);
        assert_eq!(max_document_length(None, Some(" 20 ")), 20);
        assert_eq!(max_document_length(None, Some("0")), 0);
        for invalid in ["", "-1", "ten", "1.5", "99999999999999999999999"] {
            assert_eq!(
                max_document_length(None, Some(invalid)),
                DEFAULT_MAX_DOCUMENT_LENGTH,
                "{invalid:?}"
            );
        }
        assert_eq!(max_document_length(None, None), DEFAULT_MAX_DOCUMENT_LENGTH);
    }

    #[test]
    fn ports_default_to_27017_and_sockets_have_none() {
        let tcp = ServerAddress::Tcp {
            host: "db.example".to_owned(),
            port: None,
        };
        assert_eq!(host_and_port(&tcp), ("db.example", Some(27017)));
        let unix = ServerAddress::Unix {
            path: "/tmp/mongodb-27017.sock".to_owned(),
        };
        assert_eq!(host_and_port(&unix), ("/tmp/mongodb-27017.sock", None));
    }
}
