//! The record of every request a scripted server received, for assertions.

use std::sync::Arc;

use bson::Document;

use crate::server::{ConnectionId, ConnectionInfo, Request, RequestKind};

/// Who answered a recorded request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HandledBy {
    /// A rule installed with [`crate::scripted::ScriptedServer::rule`].
    Rule,
    /// A default responder (hello, ping, buildInfo, endSessions).
    DefaultResponder,
    /// The test, through a [`crate::scripted::PendingRequest`] (answered or not).
    Test,
}

/// One received request, as recorded on arrival.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    sequence: u64,
    connection: ConnectionInfo,
    request: Arc<Request>,
    handled_by: HandledBy,
}

impl RecordedRequest {
    pub(crate) fn new(
        sequence: u64,
        connection: ConnectionInfo,
        request: Arc<Request>,
        handled_by: HandledBy,
    ) -> Self {
        Self {
            sequence,
            connection,
            request,
            handled_by,
        }
    }

    /// Arrival order across all connections, starting at 1.
    pub fn sequence(&self) -> u64 {
        self.sequence
    }

    /// The connection it came on.
    pub fn connection(&self) -> &ConnectionInfo {
        &self.connection
    }

    /// The id of the connection it came on.
    pub fn connection_id(&self) -> ConnectionId {
        self.connection.id
    }

    /// The whole decoded request, raw message included.
    pub fn request(&self) -> &Request {
        &self.request
    }

    /// OP_MSG or OP_QUERY.
    pub fn kind(&self) -> RequestKind {
        self.request.kind()
    }

    /// The command name.
    pub fn command_name(&self) -> &str {
        self.request.command_name()
    }

    /// The database.
    pub fn database(&self) -> &str {
        self.request.database()
    }

    /// The command document, document sequences merged in.
    pub fn command(&self) -> &Document {
        self.request.command()
    }

    /// Who answered it.
    pub fn handled_by(&self) -> HandledBy {
        self.handled_by
    }

    /// A one-line description for error messages.
    pub fn summary(&self) -> String {
        summarize(self.sequence, &self.request, &self.connection)
    }
}

/// `#7 insert on app from connection 3`.
pub(crate) fn summarize(sequence: u64, request: &Request, connection: &ConnectionInfo) -> String {
    format!(
        "#{sequence} {} on {} from connection {}",
        request.command_name(),
        request.database(),
        connection.id
    )
}
