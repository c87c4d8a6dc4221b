//! A raw wire-protocol client for tests that need to control every byte, and small helpers.

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::time::Duration;

use bson::{Document, RawDocumentBuf};
use steadfast_wire::{
    Body, Compressor, DEFAULT_MAX_MESSAGE_SIZE, FrameDecoder, Message, MsgFlags, OpMsg, OpQuery,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Fails the test if `future` does not finish: a guard against hangs, never a pass condition.
pub(crate) async fn within<T>(future: impl IntoFuture<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), future)
        .await
        .expect("the test hung: an awaited event never happened")
}

/// Encodes a document for the wire.
pub(crate) fn raw(document: &Document) -> RawDocumentBuf {
    RawDocumentBuf::try_from(document).expect("test documents are valid BSON")
}

/// The single document of a reply (OP_MSG body or the first OP_REPLY document).
pub(crate) fn reply_document(message: &Message) -> Document {
    let raw = match &message.body {
        Body::Msg(msg) => &msg.body,
        Body::Reply(reply) => reply.documents.first().expect("OP_REPLY has a document"),
        Body::Query(_) => panic!("a server never sends OP_QUERY"),
    };
    Document::try_from(raw.as_ref()).expect("reply is valid BSON")
}

/// Whether a reply is an OP_MSG with moreToCome set.
pub(crate) fn has_more_to_come(message: &Message) -> bool {
    matches!(&message.body, Body::Msg(msg) if msg.flags.contains(MsgFlags::MORE_TO_COME))
}

/// A client speaking raw frames over one TCP connection.
pub(crate) struct RawClient {
    stream: TcpStream,
    decoder: FrameDecoder,
    next_request_id: i32,
}

impl RawClient {
    pub(crate) async fn connect(address: SocketAddr) -> Self {
        let stream = TcpStream::connect(address)
            .await
            .expect("connect to blackpipe");
        Self {
            stream,
            decoder: FrameDecoder::new(DEFAULT_MAX_MESSAGE_SIZE),
            next_request_id: 100,
        }
    }

    /// Sends `body` through an OP_MSG and returns its request id.
    pub(crate) async fn send_msg(&mut self, msg: OpMsg, compressor: Option<&Compressor>) -> i32 {
        self.send_body(Body::Msg(msg), compressor).await
    }

    /// Sends a command as an OP_MSG and returns its request id.
    pub(crate) async fn send_command(&mut self, command: Document) -> i32 {
        self.send_msg(OpMsg::new(raw(&command)), None).await
    }

    /// Sends a command the legacy way: OP_QUERY on `<database>.$cmd`.
    pub(crate) async fn send_query(&mut self, database: &str, command: Document) -> i32 {
        self.send_body(Body::Query(OpQuery::command(database, raw(&command))), None)
            .await
    }

    pub(crate) async fn send_body(&mut self, body: Body, compressor: Option<&Compressor>) -> i32 {
        self.next_request_id += 1;
        let id = self.next_request_id;
        let bytes = Message::new(id, 0, body)
            .to_bytes(compressor, DEFAULT_MAX_MESSAGE_SIZE)
            .expect("test messages encode");
        self.write_raw(&bytes).await;
        id
    }

    pub(crate) async fn write_raw(&mut self, bytes: &[u8]) {
        self.stream
            .write_all(bytes)
            .await
            .expect("write to blackpipe");
    }

    /// The next message, or `None` once the server closed the connection.
    pub(crate) async fn receive(&mut self) -> Option<Message> {
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            if let Some(message) = self.decoder.next_message().expect("server frames decode") {
                return Some(message);
            }
            match self.stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return None,
                Ok(count) => self.decoder.extend(&chunk[..count]),
            }
        }
    }

    /// The next message, which must exist.
    pub(crate) async fn expect_message(&mut self) -> Message {
        within(self.receive())
            .await
            .expect("the server closed the connection instead of replying")
    }

    /// Sends a command and returns the reply document, checking `responseTo`.
    pub(crate) async fn round_trip(&mut self, command: Document) -> Document {
        let id = self.send_command(command).await;
        let reply = self.expect_message().await;
        assert_eq!(reply.response_to, id, "reply answers the request");
        reply_document(&reply)
    }

    /// Waits until the server closes the connection; fails if a message arrives instead.
    pub(crate) async fn expect_closed(&mut self) {
        let message = within(self.receive()).await;
        assert!(
            message.is_none(),
            "expected the server to hang up, got {message:?}"
        );
    }

    /// Reads exactly `count` bytes.
    pub(crate) async fn read_exact(&mut self, count: usize) -> Vec<u8> {
        let mut bytes = vec![0u8; count];
        within(self.stream.read_exact(&mut bytes))
            .await
            .expect("read raw bytes");
        bytes
    }

    /// Whether bytes are waiting to be read right now (without waiting for any).
    pub(crate) fn has_pending_bytes(&self) -> bool {
        let mut probe = [0u8; 1];
        match self.stream.try_read(&mut probe) {
            Ok(count) => count > 0,
            Err(error) => error.kind() != std::io::ErrorKind::WouldBlock,
        }
    }

    /// Closes the write half, as a client that stops mid-message does.
    pub(crate) async fn shutdown_write(&mut self) {
        let _ = self.stream.shutdown().await;
    }
}
