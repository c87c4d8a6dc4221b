//! The error type of the scripted server.

use std::time::Duration;

use crate::server::ConnectionId;

/// Why a scripted-server call did not get what the test expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScriptError {
    /// No matching request arrived in time. The unclaimed requests listed were waiting for the
    /// test at that moment: often the matcher is wrong rather than the client.
    #[error(
        "no request matching [{matcher}] arrived within {waited:?}; {} unclaimed request(s) waiting: [{}]",
        .unclaimed.len(),
        .unclaimed.join("; ")
    )]
    Timeout {
        /// The matcher, described.
        matcher: String,
        /// How long the test waited.
        waited: Duration,
        /// Summaries of the requests waiting in the queue.
        unclaimed: Vec<String>,
    },
    /// Fewer matching requests than expected arrived in time.
    #[error("only {found} of {expected} request(s) matching [{matcher}] arrived within {waited:?}")]
    NotEnoughRequests {
        /// The matcher, described.
        matcher: String,
        /// How many were expected.
        expected: usize,
        /// How many had arrived.
        found: usize,
        /// How long the test waited.
        waited: Duration,
    },
    /// The client's connection closed before the test answered its request.
    #[error("connection {connection} closed before request #{sequence} was answered")]
    ConnectionClosed {
        /// The connection that closed.
        connection: ConnectionId,
        /// The request's arrival number.
        sequence: u64,
    },
    /// The server shut down while the test was waiting.
    #[error("the scripted server has shut down")]
    ServerClosed,
}
