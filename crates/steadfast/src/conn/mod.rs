//! One connection to one server: a byte stream, wire framing, and the request/reply discipline
//! (one request in flight, `responseTo` checked, broken on the first network or protocol error).
//! Where the connection stands in that discipline is one [`ConnState`] (`state.rs`).
//!
//! Establishing a connection (`Connection::establish`) opens the stream, runs the handshake and
//! authenticates. The pool task will own many of these; in the foundation stage the client
//! holds one.

pub(crate) mod config;
pub(crate) mod description;
#[cfg(feature = "socks5-proxy")]
mod socks5;
/// Without the `socks5-proxy` feature: a client with a proxy is refused at creation, and a
/// connection reaching the proxy path anyway fails naming the feature.
#[cfg(not(feature = "socks5-proxy"))]
#[path = "socks5_absent.rs"]
mod socks5;
mod state;
pub(crate) mod stream;
#[cfg(test)]
mod tests;
#[cfg(feature = "rustls-tls")]
pub(crate) mod tls;
/// Without the `rustls-tls` feature: no TLS configuration can exist, and asking for one is an
/// error naming the feature.
#[cfg(not(feature = "rustls-tls"))]
#[path = "tls_absent.rs"]
pub(crate) mod tls;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bson::RawDocumentBuf;
use steadfast_core::{Deadline, IoLimit, ServerAddress};
use steadfast_wire::{
    Body, DEFAULT_MAX_MESSAGE_SIZE, FrameDecoder, Message, OpMsg, WireError,
    is_uncompressible_command,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use self::description::StreamDescription;
use self::state::ConnState;
use self::stream::BoxedStream;
use crate::error::{Error, Result};

/// A single connection. Not `Clone`: exactly one owner sends on it at a time.
pub(crate) struct Connection {
    id: u64,
    address: ServerAddress,
    stream: BoxedStream,
    decoder: FrameDecoder,
    /// Reused for every request so that steady-state sends do not allocate.
    write_buffer: Vec<u8>,
    /// Shared, so that every attempt on the connection takes it without copying it.
    description: Option<Arc<StreamDescription>>,
    socket_timeout: Option<Duration>,
    /// Where the request/reply exchanges stand. If a future doing one is dropped midway, the
    /// state stays where the exchange was, and none of those states may be reused.
    state: ConnState,
    /// The OIDC access token this connection authenticated with (auth.md's *Connection
    /// Cache*), so that reauthentication invalidates exactly that token in the client's cache.
    oidc_token: Option<String>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("id", &self.id)
            .field("address", &format_args!("{}", self.address))
            .field("broken", &self.is_broken())
            .finish()
    }
}

impl Connection {
    /// Wraps an open stream; no handshake has happened yet.
    pub(crate) fn new(
        id: u64,
        address: ServerAddress,
        stream: BoxedStream,
        socket_timeout: Option<Duration>,
    ) -> Self {
        Connection {
            id,
            address,
            stream,
            decoder: FrameDecoder::new(DEFAULT_MAX_MESSAGE_SIZE),
            write_buffer: Vec::with_capacity(512),
            description: None,
            socket_timeout,
            state: ConnState::new(),
            oidc_token: None,
        }
    }

    /// The OIDC access token the connection authenticated with, if any.
    pub(crate) fn oidc_token(&self) -> Option<&str> {
        self.oidc_token.as_deref()
    }

    /// Records (or clears) the OIDC access token the connection authenticates with.
    pub(crate) fn set_oidc_token(&mut self, token: Option<String>) {
        self.oidc_token = token;
    }

    /// The driver-side id of this connection.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// The server this connection talks to.
    pub(crate) fn address(&self) -> &ServerAddress {
        &self.address
    }

    /// What the handshake learnt, once it has completed.
    pub(crate) fn description(&self) -> Option<&StreamDescription> {
        self.description.as_deref()
    }

    /// [`Connection::description`], shared.
    pub(crate) fn shared_description(&self) -> Option<Arc<StreamDescription>> {
        self.description.clone()
    }

    pub(crate) fn set_description(&mut self, description: StreamDescription) {
        let max = description.max_message_size_bytes;
        self.decoder.set_max_message_size(max);
        self.description = Some(Arc::new(description));
    }

    /// Picks the request id the next [`Connection::send_message`] will use, so that monitoring
    /// can report it before anything is written. Calling it again replaces the reservation.
    /// Only an idle connection records it ([`ConnState::reserve_request_id`]).
    pub(crate) fn reserve_request_id(&mut self) -> i32 {
        self.state.reserve_request_id()
    }

    /// Whether a request was being written or its reply read when the connection was let go,
    /// i.e. the operation using it was cancelled midway ([`ConnState::is_mid_exchange`]).
    pub(crate) fn is_mid_exchange(&self) -> bool {
        self.state.is_mid_exchange()
    }

    /// Marks the connection broken: whatever exchange was under way ended in an error (as
    /// when a pool clear interrupted it), not in a cancellation.
    pub(crate) fn mark_broken(&mut self) {
        self.state.close();
    }

    /// Whether the connection hit an error, an exchange was abandoned midway, or it owes a late
    /// reply, so that it must not carry another command (see [`ConnState::is_broken`]).
    pub(crate) fn is_broken(&self) -> bool {
        self.state.is_broken()
    }

    /// Whether the connection is intact but owes a reply that timeoutMS left unread: it may be
    /// reused once [`Connection::drain_late_reply`] has read it. Closing it instead would cost
    /// a new connection per timeout, which is the churn CSOT's maxTimeMS exists to avoid.
    pub(crate) fn has_late_reply(&self) -> bool {
        self.state.owes_late_reply()
    }

    /// Reads and discards the reply a timeout left unread, until `deadline`. Returns whether
    /// the connection may be reused; if not, it is broken.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropping the future midway leaves the connection broken.
    pub(crate) async fn drain_late_reply(&mut self, deadline: Deadline) -> bool {
        if !self.state.owes_late_reply() {
            return !self.is_broken();
        }
        let request_id = self.state.drain();
        let read = self.read_reply(request_id, deadline.io_limit()).await;
        if read.is_err() {
            self.state.close();
        }
        // A late reply that streams more (exhaust) left the connection broken (see
        // `ConnState::replied`).
        self.state.is_reusable()
    }

    /// Whether another command may use the connection: it is not broken and no streamed
    /// (moreToCome) reply is waiting unread, which would be taken for the next command's reply.
    /// Only such a connection may go back to a pool.
    pub(crate) fn is_reusable(&self) -> bool {
        self.state.is_reusable()
    }

    fn max_message_size(&self) -> usize {
        self.description
            .as_ref()
            .map_or(DEFAULT_MAX_MESSAGE_SIZE, |d| d.max_message_size_bytes)
    }

    /// Sends `command` (which must already carry `$db`) as an OP_MSG and returns the reply's
    /// body. The negotiated compressor is used unless the command is one that must never be
    /// compressed. `limit` bounds the exchange (see [`IoLimit`]).
    ///
    /// # Errors
    /// `InvalidArgument` when the command exceeds the server's maximum message size (nothing is
    /// sent; the connection stays usable). Network, timeout and protocol errors mark the
    /// connection broken. A reply with `ok: 0` is *not* an error here: callers decide.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropping the future midway leaves the connection broken.
    pub(crate) async fn send_command(
        &mut self,
        command: RawDocumentBuf,
        limit: IoLimit,
    ) -> Result<RawDocumentBuf> {
        let reply = self.send_message(OpMsg::new(command), limit).await?;
        Ok(reply.body)
    }

    /// Sends one OP_MSG and reads its reply; see [`Connection::send_command`].
    ///
    /// # Errors
    /// As [`Connection::send_command`], plus a protocol error when the reply is not an OP_MSG.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropping the future midway leaves the connection broken.
    pub(crate) async fn send_message(&mut self, message: OpMsg, limit: IoLimit) -> Result<OpMsg> {
        match self.state {
            ConnState::Idle { .. } => {}
            ConnState::Streaming { .. } => {
                return Err(Error::invalid_argument(
                    "the connection is streaming replies (moreToCome); read them before sending",
                )
                .with_address(&self.address));
            }
            _ => return Err(self.broken_error()),
        }
        let compressor = match message.command_name() {
            Some(name) if !is_uncompressible_command(name) => self
                .description
                .as_ref()
                .and_then(|d| d.compressor.as_ref())
                .copied(),
            _ => None,
        };
        let request_id = self.state.start_writing();
        let expects_reply = !message.more_to_come();
        let message = Message::new(request_id, 0, message);
        self.write_buffer.clear();
        let encoded = message.encode(
            compressor.as_ref(),
            self.max_message_size(),
            &mut self.write_buffer,
        );
        if let Err(e) = encoded {
            self.state.write_refused();
            return Err(Error::invalid_argument("the command cannot be sent")
                .with_source(e)
                .with_address(&self.address));
        }
        let result = self.exchange(request_id, expects_reply, limit).await;
        result.map_err(|error| {
            // Under timeoutMS, a request written whole whose reply is merely late leaves the
            // stream intact: the reply can still be read and discarded. Any other failure (a
            // legacy socket timeout included) leaves it unusable.
            if matches!(limit, IoLimit::Deadline(_))
                && error.is_timeout()
                && !matches!(self.state, ConnState::Broken)
            {
                self.state.deadline_passed();
            } else {
                self.state.close();
            }
            error.with_address(&self.address)
        })
    }

    fn broken_error(&self) -> Error {
        Error::network("the connection is broken and cannot be reused").with_address(&self.address)
    }

    /// Reads the next reply the server streams after a reply that carried moreToCome.
    ///
    /// # Errors
    /// `InvalidArgument` when no streamed reply is pending; otherwise as
    /// [`Connection::send_message`].
    ///
    /// # Cancel safety
    /// Not cancel safe: dropping the future midway leaves the connection broken.
    pub(crate) async fn next_streamed_reply(&mut self, limit: IoLimit) -> Result<OpMsg> {
        match self.state {
            ConnState::Streaming { .. } => {}
            ConnState::Idle { .. } => {
                return Err(Error::invalid_argument(
                    "no streamed (moreToCome) reply is pending",
                ));
            }
            _ => return Err(self.broken_error()),
        }
        let previous = self.state.read_streamed();
        let result = self.read_reply(previous, limit).await;
        result.map_err(|error| {
            self.state.close();
            error.with_address(&self.address)
        })
    }

    /// Whether the last reply said more replies will follow without a request.
    pub(crate) fn is_streaming(&self) -> bool {
        self.state.is_streaming()
    }

    async fn exchange(
        &mut self,
        request_id: i32,
        expects_reply: bool,
        limit: IoLimit,
    ) -> Result<OpMsg> {
        let io_deadline = self.io_deadline(limit);
        let stream = &mut self.stream;
        let bytes = &self.write_buffer;
        let write = async move {
            stream.write_all(bytes).await?;
            stream.flush().await
        };
        with_deadline(io_deadline, "writing a request", write)
            .await?
            .map_err(|e| Error::network_io("writing a request failed", e))?;
        self.state.written(expects_reply);
        if !expects_reply {
            return Ok(OpMsg::new(RawDocumentBuf::new()));
        }
        self.read_reply(request_id, limit).await
    }

    async fn read_reply(&mut self, response_to: i32, limit: IoLimit) -> Result<OpMsg> {
        const WAITING: &str = "waiting for a reply";
        let io_deadline = self.io_deadline(limit);
        let message = with_deadline(io_deadline, WAITING, self.read_message()).await??;
        if judges_lateness(limit)
            && io_deadline.is_some_and(|deadline| crate::runtime::now() >= deadline)
        {
            // Consumed, so owed no more: the connection is closed, not left to drain a reply.
            self.state.close();
            return Err(Error::timeout(WAITING.to_string()));
        }
        if message.response_to != response_to {
            return Err(Error::protocol(format!(
                "reply answers request {} but request {response_to} was sent",
                message.response_to
            )));
        }
        match message.body {
            Body::Msg(reply) => {
                self.state.replied(message.request_id, reply.more_to_come());
                Ok(reply)
            }
            other => Err(Error::protocol(format!(
                "expected an OP_MSG reply, got {:?}",
                other.op_code()
            ))),
        }
    }

    /// Reads until the decoder yields one whole message.
    async fn read_message(&mut self) -> Result<Message> {
        loop {
            if let Some(message) = self.decoder.next_message().map_err(wire_error)? {
                return Ok(message);
            }
            let buffered = self.decoder.buffered_len();
            let read = self
                .stream
                .read_buf(self.decoder.read_buffer())
                .await
                .map_err(|e| Error::network_io("reading a reply failed", e))?;
            if read == 0 {
                return Err(Error::network(if buffered == 0 {
                    "the server closed the connection".to_string()
                } else {
                    format!(
                        "the server closed the connection in the middle of a reply ({buffered} bytes received)"
                    )
                }));
            }
        }
    }

    /// When the next read or write must finish (see [`io_deadline`]).
    fn io_deadline(&self, limit: IoLimit) -> Option<Instant> {
        io_deadline(limit, self.socket_timeout, crate::runtime::now)
    }
}

/// When a read or write starting at `now` must finish: the deadline alone under timeoutMS,
/// else the earlier of the given instant and `now` + socketTimeoutMS (a socket timeout too
/// large to add to `now` sets no limit of its own). `now` is asked only when a socket timeout
/// applies, so that an exchange without one does not read the clock.
fn io_deadline(
    limit: IoLimit,
    socket_timeout: Option<Duration>,
    now: impl FnOnce() -> Instant,
) -> Option<Instant> {
    let deadline = match limit {
        IoLimit::Deadline(deadline) => return deadline,
        IoLimit::SocketTimeout(deadline) => deadline,
        IoLimit::OperationSocketTimeout => None,
    };
    let socket = socket_timeout.and_then(|t| now().checked_add(t));
    match (socket, deadline) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn wire_error(error: WireError) -> Error {
    Error::protocol("the server sent a malformed message").with_source(error)
}

/// Whether a reply read under `limit` is judged again once read: an operation's command (under
/// timeoutMS or socketTimeoutMS) whose reply a busy runtime first saw after its deadline, beside
/// the expired timer, timed out. For an operation that means a retry or an outcome reported as
/// unknown, never a wrong answer, and the caller's time limit holds. Handshakes and monitor
/// checks ([`IoLimit::SocketTimeout`]) use the reply in hand instead: for them a timeout marks
/// the server Unknown and clears its pool, and which came first cannot be known.
fn judges_lateness(limit: IoLimit) -> bool {
    matches!(
        limit,
        IoLimit::Deadline(_) | IoLimit::OperationSocketTimeout
    )
}

/// Runs `fut` until `deadline` (no limit when `None`); a future found ready when the timer has
/// also fired completes (see [`judges_lateness`]).
async fn with_deadline<F: std::future::Future>(
    deadline: Option<Instant>,
    what: &str,
    fut: F,
) -> Result<F::Output> {
    match deadline {
        None => Ok(fut.await),
        Some(deadline) => tokio::time::timeout_at(deadline.into(), fut)
            .await
            .map_err(|_| Error::timeout(what.to_string())),
    }
}
