//! One task per accepted connection: read frames, ask the handler, carry out its reaction.

use std::future::Future;
use std::sync::Arc;

use bson::{Document, RawDocumentBuf};
use steadfast_wire::{
    Body, Compressor, CompressorId, FrameDecoder, Message, MsgFlags, OpMsg, OpReply, WireError,
    is_uncompressible_command,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use super::tls::{self, Transport};

use super::Shared;
use super::handler::ConnectionContext;
use super::reaction::{CommandError, Outcome, Reaction, ReplyStream, StreamItem};
use super::request::{Request, RequestKind};
use crate::deployment::errors::reply_is_ok;
use blackpipe_store::code;

/// OP_REPLY responseFlags bit 1: the query failed and the document describes the error.
const QUERY_FAILURE: u32 = 1 << 1;
/// Bytes read from the socket at a time.
const READ_CHUNK: usize = 32 * 1024;

/// Whether the connection goes on after a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    Continue,
    Close,
}

/// Runs the TLS handshake when the server serves TLS (within the read timeout, and unless the
/// server or connection is told to stop), then serves the connection. A failed handshake ends
/// this connection only.
pub(super) async fn handshake_and_serve(
    stream: TcpStream,
    mut context: ConnectionContext,
    shared: Arc<Shared>,
    mut stop: StopSignals,
) {
    // Replies are small and latency matters more than throughput in tests.
    let _ = stream.set_nodelay(true);
    let handshake = tokio::time::timeout(
        shared.config.read_timeout,
        tls::accept(stream, shared.config.tls.as_ref()),
    );
    let transport = tokio::select! {
        biased;
        () = stop.requested() => None,
        result = handshake => match result {
            Ok(Ok(transport)) => Some(transport),
            Ok(Err(error)) => {
                tracing::debug!(peer = %context.peer(), %error, "TLS handshake failed");
                None
            }
            Err(_) => {
                tracing::debug!(peer = %context.peer(), "TLS handshake timed out");
                None
            }
        },
    };
    let Some(transport) = transport else {
        shared.handler.connection_closed(&context.info());
        return;
    };
    context.set_client_certificate(transport.client_certificate());
    serve(transport, context, shared, stop).await;
}

/// Serves one connection until the peer leaves, a reaction hangs up, the bytes stop making
/// sense, or the server shuts down.
async fn serve(
    stream: Transport,
    context: ConnectionContext,
    shared: Arc<Shared>,
    stop: StopSignals,
) {
    let max_message_size = shared.config.max_message_size;
    let mut connection = Connection {
        io: Io {
            stream,
            scratch: vec![0; READ_CHUNK],
            backlog: Vec::new(),
            backlog_limit: max_message_size,
            stop,
        },
        decoder: FrameDecoder::new(max_message_size),
        context,
        shared,
    };
    connection.run().await;
    let info = connection.context.info();
    connection.shared.handler.connection_closed(&info);
}

struct Connection {
    io: Io,
    decoder: FrameDecoder,
    context: ConnectionContext,
    shared: Arc<Shared>,
}

/// Where and how the replies to one request go.
#[derive(Clone, Debug)]
struct ReplyTarget {
    kind: RequestKind,
    response_to: i32,
    compressor: Option<Compressor>,
    /// The request set moreToCome: nothing may be sent back.
    silent: bool,
    /// The request set exhaustAllowed on OP_MSG: replies may carry moreToCome.
    exhaust: bool,
    /// For a hello that offered compressors: the ones to announce.
    hello_compression: Option<Vec<String>>,
    /// OP_QUERY error replies carry the QueryFailure flag.
    query_failure: bool,
}

/// A reply that reached the socket.
#[derive(Clone, Copy, Debug)]
struct Sent {
    id: i32,
    /// The intended reply could not be encoded and an error was sent instead, which ends any
    /// exhaust stream.
    replaced_by_error: bool,
}

impl Connection {
    async fn run(&mut self) {
        let id = self.context.id();
        loop {
            let message = match self.next_message().await {
                Ok(Some(message)) => message,
                Ok(None) => return,
                Err(error) => {
                    tracing::debug!(connection = %id, %error, "closing connection: unreadable bytes");
                    return;
                }
            };
            if self.serve(message).await == Flow::Close {
                return;
            }
        }
    }

    /// The next whole message; `Ok(None)` when the peer left, the server is shutting down, or
    /// the peer stayed idle past `idle_timeout` or held a partial frame past `read_timeout`.
    async fn next_message(&mut self) -> Result<Option<Message>, WireError> {
        if !self.io.backlog.is_empty() {
            self.decoder.extend(&self.io.backlog);
            self.io.backlog.clear();
        }
        let (idle_timeout, read_timeout) = (
            self.shared.config.idle_timeout,
            self.shared.config.read_timeout,
        );
        let mut waiting_for_first_byte = self.decoder.buffered_len() == 0;
        // `sleep` rather than an `Instant` sum: a configured `Duration::MAX` cannot overflow.
        let timer = tokio::time::sleep(if waiting_for_first_byte {
            idle_timeout
        } else {
            read_timeout
        });
        tokio::pin!(timer);
        loop {
            if let Some(message) = self.decoder.next_message()? {
                return Ok(Some(message));
            }
            let Io {
                stream,
                scratch,
                stop,
                ..
            } = &mut self.io;
            let read = tokio::select! {
                biased;
                () = stop.requested() => return Ok(None),
                () = &mut timer => {
                    let phase = if waiting_for_first_byte { "idle" } else { "mid-frame" };
                    tracing::debug!(connection = %self.context.id(), phase, "closing connection: timed out");
                    return Ok(None);
                }
                read = stream.read(scratch) => read,
            };
            match read {
                Ok(0) | Err(_) => return Ok(None),
                Ok(count) => self
                    .decoder
                    .extend(scratch.get(..count).unwrap_or_default()),
            }
            if waiting_for_first_byte {
                waiting_for_first_byte = false;
                timer.set(tokio::time::sleep(read_timeout));
            }
        }
    }

    async fn serve(&mut self, message: Message) -> Flow {
        let request_id = message.request_id;
        let kind = match message.body {
            Body::Query(_) => RequestKind::Query,
            _ => RequestKind::Msg,
        };
        let silent = matches!(&message.body, Body::Msg(msg) if msg.more_to_come());
        let compressed_with = message.compressed_with;
        let request = match Request::from_message(message) {
            Ok(request) => Arc::new(request),
            Err(error) => {
                let Some(command_error) = error.to_command_error() else {
                    tracing::debug!(connection = %self.context.id(), %error, "closing connection");
                    return Flow::Close;
                };
                let target = ReplyTarget {
                    kind,
                    response_to: request_id,
                    compressor: reply_compressor(compressed_with, ""),
                    silent,
                    exhaust: false,
                    hello_compression: None,
                    query_failure: kind == RequestKind::Query,
                };
                let mut document = command_error.to_document();
                if kind == RequestKind::Query {
                    document.insert("$err", command_error.errmsg.as_str());
                }
                return self.react(&target, Reaction::Reply(document)).await;
            }
        };
        self.context.note_request();
        let hello_compression = if request.is_hello() {
            self.context
                .note_hello(request.command(), &self.shared.config.compressors)
        } else {
            None
        };
        let target = ReplyTarget {
            kind,
            response_to: request_id,
            compressor: reply_compressor(compressed_with, request.command_name()),
            silent,
            exhaust: kind == RequestKind::Msg && request.exhaust_allowed(),
            hello_compression,
            query_failure: false,
        };
        let handler = Arc::clone(&self.shared.handler);
        let handling = handler.handle(Arc::clone(&request), &mut self.context);
        let Some(outcome) = self.io.interruptible(handling).await else {
            return Flow::Close;
        };
        match outcome {
            Outcome::React(reaction) => self.react(&target, reaction).await,
            Outcome::Stream(stream) => self.stream(target, stream).await,
        }
    }

    async fn react(&mut self, target: &ReplyTarget, reaction: Reaction) -> Flow {
        let mut reaction = reaction;
        loop {
            reaction = match reaction {
                Reaction::Delay(delay, next) => {
                    if self
                        .io
                        .interruptible(tokio::time::sleep(delay))
                        .await
                        .is_none()
                    {
                        return Flow::Close;
                    }
                    *next
                }
                Reaction::AfterGate(gate, next) => {
                    if self.io.interruptible(gate.wait()).await.is_none() {
                        return Flow::Close;
                    }
                    *next
                }
                Reaction::HangUp => return Flow::Close,
                Reaction::NoReply => return Flow::Continue,
                _ if target.silent => return Flow::Continue,
                Reaction::Raw(bytes) => {
                    return if self.io.write(&bytes).await {
                        Flow::Continue
                    } else {
                        Flow::Close
                    };
                }
                Reaction::Reply(document) => return self.reply_once(target, document).await,
                Reaction::Error(error) => {
                    return self.reply_once(target, error.to_document()).await;
                }
            };
        }
    }

    async fn reply_once(&mut self, target: &ReplyTarget, document: Document) -> Flow {
        match self.send(target, document, false).await {
            Some(_) => Flow::Continue,
            None => Flow::Close,
        }
    }

    async fn stream(&mut self, mut target: ReplyTarget, mut stream: ReplyStream) -> Flow {
        if target.silent {
            return Flow::Continue;
        }
        loop {
            let item = match self.io.interruptible(stream.next()).await {
                None => return Flow::Close,
                Some(None) => {
                    tracing::debug!(
                        connection = %self.context.id(),
                        "reply stream dropped before its final reply; closing the connection"
                    );
                    return Flow::Close;
                }
                Some(Some(item)) => item,
            };
            match item {
                StreamItem::More(document) => {
                    // The server never sets moreToCome on an error reply or without exhaustAllowed.
                    let more_to_come = target.exhaust && reply_is_ok(&document);
                    let Some(sent) = self.send(&target, document, more_to_come).await else {
                        return Flow::Close;
                    };
                    if !more_to_come || sent.replaced_by_error {
                        return Flow::Continue;
                    }
                    target.response_to = sent.id;
                }
                StreamItem::Last(reaction) => return self.react(&target, reaction).await,
            }
        }
    }

    /// Encodes and writes one reply; `None` if the connection is gone.
    async fn send(
        &mut self,
        target: &ReplyTarget,
        mut document: Document,
        more_to_come: bool,
    ) -> Option<Sent> {
        if !document.contains_key("ok") {
            document.insert("ok", 1.0);
        }
        if let Some(names) = &target.hello_compression {
            if !names.is_empty() && reply_is_ok(&document) && !document.contains_key("compression")
            {
                document.insert("compression", names.clone());
            }
        }
        let reply_id = self.shared.next_reply_id();
        let max = self.shared.config.max_message_size;
        let (bytes, replaced_by_error) = match encode_reply(
            target,
            reply_id,
            &document,
            more_to_come,
            max,
        ) {
            Ok(bytes) => (bytes, false),
            Err(error) => {
                tracing::warn!(connection = %self.context.id(), %error, "reply cannot be encoded; sending an error instead");
                let fallback =
                    CommandError::new(code::BSON_OBJECT_TOO_LARGE, "BSONObjectTooLarge", error);
                let bytes =
                    encode_reply(target, reply_id, &fallback.to_document(), false, max).ok()?;
                (bytes, true)
            }
        };
        if self.io.write(&bytes).await {
            Some(Sent {
                id: reply_id,
                replaced_by_error,
            })
        } else {
            None
        }
    }
}

/// The socket plus what must be watched while a reaction is pending.
struct Io {
    stream: Transport,
    scratch: Vec<u8>,
    /// Bytes that arrived while a reaction was pending, decoded afterwards.
    backlog: Vec<u8>,
    /// Past this many backlog bytes the connection stops reading (backpressure on a flood).
    backlog_limit: usize,
    stop: StopSignals,
}

impl Io {
    /// Runs `future` to completion unless the peer disconnects or the server shuts down first
    /// (then `None`). Bytes the peer sends meanwhile are kept for later.
    async fn interruptible<F: Future>(&mut self, future: F) -> Option<F::Output> {
        let Io {
            stream,
            scratch,
            backlog,
            backlog_limit,
            stop,
        } = self;
        tokio::select! {
            biased;
            () = stop.requested() => None,
            output = future => Some(output),
            () = watch_peer(stream, scratch, backlog, *backlog_limit) => None,
        }
    }

    /// Writes all of `bytes`; false if the peer is gone or the server is shutting down.
    async fn write(&mut self, bytes: &[u8]) -> bool {
        let Io { stream, stop, .. } = self;
        tokio::select! {
            biased;
            () = stop.requested() => false,
            // TLS buffers records until flushed; for plain TCP the flush does nothing.
            written = async {
                stream.write_all(bytes).await?;
                stream.flush().await
            } => written.is_ok(),
        }
    }
}

/// What tells a connection to close: the server shutting down, or this connection alone
/// being closed ([`super::Server::close_connection`]).
pub(super) struct StopSignals {
    pub(super) server: watch::Receiver<bool>,
    pub(super) connection: watch::Receiver<bool>,
}

impl StopSignals {
    /// Resolves once either signal is raised (or its sender is gone).
    async fn requested(&mut self) {
        tokio::select! {
            _ = self.server.wait_for(|stop| *stop) => {}
            _ = self.connection.wait_for(|stop| *stop) => {}
        }
    }
}

/// Resolves when the peer disconnects, keeping whatever it sends meanwhile in `backlog`.
async fn watch_peer(
    stream: &mut Transport,
    scratch: &mut [u8],
    backlog: &mut Vec<u8>,
    backlog_limit: usize,
) {
    loop {
        if backlog.len() >= backlog_limit {
            // A client pipelining this much is flooding: stop reading, as mongod would.
            std::future::pending::<()>().await;
        }
        match stream.read(scratch).await {
            Ok(0) | Err(_) => return,
            Ok(count) => backlog.extend_from_slice(scratch.get(..count).unwrap_or_default()),
        }
    }
}

/// The compressor to answer with: the one the request used, except for commands that must
/// never be compressed.
fn reply_compressor(used: Option<CompressorId>, command_name: &str) -> Option<Compressor> {
    if is_uncompressible_command(command_name) {
        return None;
    }
    match used? {
        CompressorId::Noop => None,
        CompressorId::Snappy => Some(Compressor::Snappy),
        CompressorId::Zlib => Some(Compressor::Zlib { level: None }),
        CompressorId::Zstd => Some(Compressor::Zstd { level: None }),
    }
}

fn encode_reply(
    target: &ReplyTarget,
    reply_id: i32,
    document: &Document,
    more_to_come: bool,
    max_message_size: usize,
) -> Result<Vec<u8>, String> {
    let raw = RawDocumentBuf::try_from(document).map_err(|error| error.to_string())?;
    let body = match target.kind {
        RequestKind::Msg => {
            let flags = MsgFlags::empty().with(MsgFlags::MORE_TO_COME, more_to_come);
            Body::Msg(OpMsg::new(raw).with_flags(flags))
        }
        RequestKind::Query => {
            let mut reply = OpReply::new(vec![raw]);
            if target.query_failure {
                reply.response_flags |= QUERY_FAILURE;
            }
            Body::Reply(reply)
        }
    };
    Message::new(reply_id, target.response_to, body)
        .to_bytes(target.compressor.as_ref(), max_message_size)
        .map_err(|error| error.to_string())
}
