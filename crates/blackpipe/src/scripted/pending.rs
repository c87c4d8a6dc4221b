//! A request waiting for the test to answer it.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bson::Document;
use tokio::sync::oneshot;

use super::error::ScriptError;
use super::record::summarize;
use crate::server::{
    CommandError, ConnectionId, ConnectionInfo, Gate, Outcome, Reaction, ReplyStream, Request,
};

/// A request the test claimed with [`crate::scripted::ScriptedServer::next_request`]. Its client
/// waits until the test answers; only its own connection waits.
///
/// Every answering method consumes the request. Dropping it unanswered hangs up the client's
/// connection (with a warning in the log), so a forgotten request fails loudly instead of
/// leaving the client waiting; use [`PendingRequest::no_reply`] to leave the client hanging on
/// purpose.
pub struct PendingRequest {
    sequence: u64,
    connection: ConnectionInfo,
    request: Arc<Request>,
    answer: Option<oneshot::Sender<Outcome>>,
}

impl PendingRequest {
    pub(crate) fn new(
        sequence: u64,
        connection: ConnectionInfo,
        request: Arc<Request>,
        answer: oneshot::Sender<Outcome>,
    ) -> Self {
        Self {
            sequence,
            connection,
            request,
            answer: Some(answer),
        }
    }

    /// Arrival order across all connections, starting at 1 (as in the request record).
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

    /// The whole decoded request.
    pub fn request(&self) -> &Request {
        &self.request
    }

    /// The command document, document sequences merged in.
    pub fn command(&self) -> &Document {
        self.request.command()
    }

    /// The command name.
    pub fn command_name(&self) -> &str {
        self.request.command_name()
    }

    /// The database.
    pub fn database(&self) -> &str {
        self.request.database()
    }

    /// Whether the client's connection is still there to receive an answer.
    pub fn is_connection_open(&self) -> bool {
        self.answer
            .as_ref()
            .is_some_and(|answer| !answer.is_closed())
    }

    /// Answers with any outcome: a [`Reaction`] or a [`ReplyStream`].
    ///
    /// # Errors
    /// [`ScriptError::ConnectionClosed`] if the client's connection is gone.
    pub fn respond(mut self, outcome: impl Into<Outcome>) -> Result<(), ScriptError> {
        let closed = ScriptError::ConnectionClosed {
            connection: self.connection.id,
            sequence: self.sequence,
        };
        let answer = self.answer.take().ok_or_else(|| closed.clone())?;
        answer.send(outcome.into()).map_err(|_| closed)
    }

    /// Replies with `document` (`ok: 1` is added if missing).
    ///
    /// # Errors
    /// [`ScriptError::ConnectionClosed`] if the client's connection is gone.
    pub fn reply(self, document: Document) -> Result<(), ScriptError> {
        self.respond(Reaction::Reply(document))
    }

    /// Replies with `{ok: 1}`.
    ///
    /// # Errors
    /// [`ScriptError::ConnectionClosed`] if the client's connection is gone.
    pub fn ok(self) -> Result<(), ScriptError> {
        self.respond(Reaction::ok())
    }

    /// Replies with a command error carrying `labels`.
    ///
    /// # Errors
    /// [`ScriptError::ConnectionClosed`] if the client's connection is gone.
    pub fn reply_error(
        self,
        code: i32,
        code_name: &str,
        errmsg: &str,
        labels: &[&str],
    ) -> Result<(), ScriptError> {
        let error = CommandError::new(code, code_name, errmsg).with_labels(labels.iter().copied());
        self.respond(Reaction::Error(error))
    }

    /// Replies with a fully specified command error.
    ///
    /// # Errors
    /// [`ScriptError::ConnectionClosed`] if the client's connection is gone.
    pub fn reply_command_error(self, error: CommandError) -> Result<(), ScriptError> {
        self.respond(Reaction::Error(error))
    }

    /// Writes `bytes` to the socket as they are.
    ///
    /// # Errors
    /// [`ScriptError::ConnectionClosed`] if the client's connection is gone.
    pub fn reply_raw(self, bytes: impl Into<Vec<u8>>) -> Result<(), ScriptError> {
        self.respond(Reaction::Raw(bytes.into()))
    }

    /// Closes the client's connection without replying.
    ///
    /// # Errors
    /// [`ScriptError::ConnectionClosed`] if the client's connection is already gone.
    pub fn hang_up(self) -> Result<(), ScriptError> {
        self.respond(Reaction::HangUp)
    }

    /// Never answers, leaving the connection open: the client sees a hang.
    ///
    /// # Errors
    /// [`ScriptError::ConnectionClosed`] if the client's connection is already gone.
    pub fn no_reply(self) -> Result<(), ScriptError> {
        self.respond(Reaction::NoReply)
    }

    /// Answers with a stream of replies (exhaust).
    ///
    /// # Errors
    /// [`ScriptError::ConnectionClosed`] if the client's connection is gone.
    pub fn stream(self, stream: ReplyStream) -> Result<(), ScriptError> {
        self.respond(stream)
    }

    /// Holds the answer given next for `delay`; the test does not wait, the connection does.
    pub fn delay(self, delay: Duration) -> HeldReply {
        HeldReply {
            pending: self,
            hold: Hold::Delay(delay),
        }
    }

    /// Holds the answer given next until `gate` opens.
    pub fn after_gate(self, gate: &Gate) -> HeldReply {
        HeldReply {
            pending: self,
            hold: Hold::Gate(gate.clone()),
        }
    }
}

impl fmt::Debug for PendingRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingRequest")
            .field("sequence", &self.sequence)
            .field("connection", &self.connection)
            .field("command", self.request.command())
            .finish_non_exhaustive()
    }
}

impl Drop for PendingRequest {
    fn drop(&mut self) {
        if let Some(answer) = &self.answer {
            if !answer.is_closed() {
                tracing::warn!(
                    request = %summarize(self.sequence, &self.request, &self.connection),
                    "pending request dropped without an answer; hanging up its connection"
                );
            }
        }
    }
}

#[derive(Clone, Debug)]
enum Hold {
    Delay(Duration),
    Gate(Gate),
}

/// A [`PendingRequest`] whose answer will be held back (see [`PendingRequest::delay`]).
#[derive(Debug)]
#[must_use = "nothing is sent until a reply method is called"]
pub struct HeldReply {
    pending: PendingRequest,
    hold: Hold,
}

impl HeldReply {
    /// Answers with `reaction`, held back.
    ///
    /// # Errors
    /// [`ScriptError::ConnectionClosed`] if the client's connection is gone.
    pub fn respond(self, reaction: Reaction) -> Result<(), ScriptError> {
        let held = match self.hold {
            Hold::Delay(delay) => reaction.after(delay),
            Hold::Gate(gate) => reaction.after_gate(&gate),
        };
        self.pending.respond(held)
    }

    /// Replies with `document`, held back.
    ///
    /// # Errors
    /// [`ScriptError::ConnectionClosed`] if the client's connection is gone.
    pub fn reply(self, document: Document) -> Result<(), ScriptError> {
        self.respond(Reaction::Reply(document))
    }

    /// Replies with a command error, held back.
    ///
    /// # Errors
    /// [`ScriptError::ConnectionClosed`] if the client's connection is gone.
    pub fn reply_error(
        self,
        code: i32,
        code_name: &str,
        errmsg: &str,
        labels: &[&str],
    ) -> Result<(), ScriptError> {
        let error = CommandError::new(code, code_name, errmsg).with_labels(labels.iter().copied());
        self.respond(Reaction::Error(error))
    }

    /// Writes raw bytes, held back.
    ///
    /// # Errors
    /// [`ScriptError::ConnectionClosed`] if the client's connection is gone.
    pub fn reply_raw(self, bytes: impl Into<Vec<u8>>) -> Result<(), ScriptError> {
        self.respond(Reaction::Raw(bytes.into()))
    }

    /// Hangs up, held back.
    ///
    /// # Errors
    /// [`ScriptError::ConnectionClosed`] if the client's connection is gone.
    pub fn hang_up(self) -> Result<(), ScriptError> {
        self.respond(Reaction::HangUp)
    }
}
