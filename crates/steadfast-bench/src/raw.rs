//! The raw baseline: pre-encoded OP_MSG commands over plain TCP sockets, the floor any driver
//! can reach. steadfast-wire builds the request bytes once and frames the replies; nothing else
//! runs between a reply and the next request.
//!
//! The same module sends the bench's own setup and fault commands (seeding data, dropping
//! collections, fail points), so that neither driver under test is involved in them.

use std::net::SocketAddr;

use bson::{Document, RawDocumentBuf};
use steadfast_wire::{Body, DEFAULT_MAX_MESSAGE_SIZE, FrameDecoder, Message, OpMsg};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::BenchError;

/// Encodes `command` (which must carry `$db`) as one OP_MSG frame with request id `request_id`.
pub(crate) fn encode(command: &Document, request_id: i32) -> Result<Vec<u8>, BenchError> {
    let body = RawDocumentBuf::try_from(command)?;
    let message = Message::new(request_id, 0, Body::Msg(OpMsg::new(body)));
    Ok(message.to_bytes(None, DEFAULT_MAX_MESSAGE_SIZE)?)
}

/// One plain TCP connection that exchanges whole frames.
pub(crate) struct RawConnection {
    stream: TcpStream,
    decoder: FrameDecoder,
    next_request_id: i32,
}

impl RawConnection {
    /// Connects with Nagle's algorithm off, as drivers do.
    pub(crate) async fn connect(address: SocketAddr) -> Result<Self, BenchError> {
        let stream = TcpStream::connect(address).await?;
        stream.set_nodelay(true)?;
        Ok(Self {
            stream,
            decoder: FrameDecoder::new(DEFAULT_MAX_MESSAGE_SIZE),
            next_request_id: 1,
        })
    }

    /// Writes pre-encoded request bytes and waits for the one reply frame, which is framed and
    /// decoded but not interpreted: the floor does no more work than it must.
    pub(crate) async fn round_trip(&mut self, request: &[u8]) -> Result<Message, BenchError> {
        self.stream.write_all(request).await?;
        loop {
            if let Some(reply) = self.decoder.next_message()? {
                return Ok(reply);
            }
            let buffer = self.decoder.read_buffer();
            if self.stream.read_buf(buffer).await? == 0 {
                return Err("the server closed a raw connection".into());
            }
        }
    }

    /// Sends `command` (encoded now) and returns the reply document; `ok: 0` is an error.
    pub(crate) async fn command(&mut self, command: &Document) -> Result<Document, BenchError> {
        let request_id = self.next_request_id;
        self.next_request_id = self.next_request_id.wrapping_add(1).max(1);
        let bytes = encode(command, request_id)?;
        let reply = self.round_trip(&bytes).await?;
        if reply.response_to != request_id {
            return Err("a raw reply answered another request".into());
        }
        let Body::Msg(msg) = reply.body else {
            return Err("a raw reply was not OP_MSG".into());
        };
        let document = Document::try_from(msg.body)?;
        let ok = match document.get("ok") {
            Some(bson::Bson::Double(ok)) => *ok == 1.0,
            Some(bson::Bson::Int32(ok)) => *ok == 1,
            Some(bson::Bson::Int64(ok)) => *ok == 1,
            Some(bson::Bson::Boolean(ok)) => *ok,
            _ => false,
        };
        if ok {
            Ok(document)
        } else {
            Err(format!(
                "{} failed: {document}",
                command.keys().next().map_or("command", String::as_str)
            )
            .into())
        }
    }
}

/// Sends one command on a fresh connection to `address`.
pub(crate) async fn one_command(
    address: SocketAddr,
    command: &Document,
) -> Result<Document, BenchError> {
    RawConnection::connect(address)
        .await?
        .command(command)
        .await
}
