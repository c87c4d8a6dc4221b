//! What a handler can do with a request: [`Reaction`]s, the exhaust [`ReplyStream`], and the
//! [`Gate`] a test opens to release held replies.

use std::sync::Arc;
use std::time::Duration;

use bson::{Bson, Document, doc};
use tokio::sync::{mpsc, watch};

/// How the server answers one request. Cloneable, so scripted rules can reuse one reaction.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Reaction {
    /// Reply with this document (`ok: 1` is added when the document has no `ok` field). An
    /// OP_MSG request gets an OP_MSG reply, a legacy OP_QUERY gets an OP_REPLY.
    Reply(Document),
    /// Reply with a command error: `{ok: 0, errmsg, code, codeName, errorLabels}`.
    Error(CommandError),
    /// Write these bytes to the socket as they are, header and all.
    Raw(Vec<u8>),
    /// Wait this long, then react. Only this connection waits.
    Delay(Duration, Box<Reaction>),
    /// Wait until the gate opens, then react. Only this connection waits.
    AfterGate(Gate, Box<Reaction>),
    /// Close the connection without replying.
    HangUp,
    /// Send nothing and keep the connection open: the client sees a hang.
    NoReply,
}

impl Reaction {
    /// Reply with `document`.
    pub fn reply(document: Document) -> Self {
        Self::Reply(document)
    }

    /// Reply with `{ok: 1}`.
    pub fn ok() -> Self {
        Self::Reply(doc! { "ok": 1.0 })
    }

    /// Reply with a command error without labels.
    pub fn error(code: i32, code_name: impl Into<String>, errmsg: impl Into<String>) -> Self {
        Self::Error(CommandError::new(code, code_name, errmsg))
    }

    /// Write `bytes` as they are.
    pub fn raw(bytes: impl Into<Vec<u8>>) -> Self {
        Self::Raw(bytes.into())
    }

    /// Close the connection.
    pub fn hang_up() -> Self {
        Self::HangUp
    }

    /// Never answer.
    pub fn no_reply() -> Self {
        Self::NoReply
    }

    /// This reaction, carried out after `delay`.
    #[must_use]
    pub fn after(self, delay: Duration) -> Self {
        Self::Delay(delay, Box::new(self))
    }

    /// This reaction, carried out once `gate` opens.
    #[must_use]
    pub fn after_gate(self, gate: &Gate) -> Self {
        Self::AfterGate(gate.clone(), Box::new(self))
    }
}

impl From<Document> for Reaction {
    fn from(document: Document) -> Self {
        Self::Reply(document)
    }
}

impl From<CommandError> for Reaction {
    fn from(error: CommandError) -> Self {
        Self::Error(error)
    }
}

/// A command error as mongod reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct CommandError {
    /// The numeric error code, e.g. 91 for `ShutdownInProgress`.
    pub code: i32,
    /// The code's name, e.g. `"ShutdownInProgress"`.
    pub code_name: String,
    /// The human-readable message.
    pub errmsg: String,
    /// Error labels such as `RetryableWriteError`; omitted from the reply when empty.
    pub labels: Vec<String>,
    /// Extra fields appended to the error document (e.g. `topologyVersion`).
    pub extra: Document,
}

impl CommandError {
    /// An error with no labels and no extra fields.
    pub fn new(code: i32, code_name: impl Into<String>, errmsg: impl Into<String>) -> Self {
        Self {
            code,
            code_name: code_name.into(),
            errmsg: errmsg.into(),
            labels: Vec::new(),
            extra: Document::new(),
        }
    }

    /// Adds error labels.
    #[must_use]
    pub fn with_labels<I, S>(mut self, labels: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.labels.extend(labels.into_iter().map(Into::into));
        self
    }

    /// Adds an extra field to the error document.
    #[must_use]
    pub fn with_field(mut self, key: impl Into<String>, value: impl Into<Bson>) -> Self {
        self.extra.insert(key, value);
        self
    }

    /// The error document sent on the wire.
    pub fn to_document(&self) -> Document {
        let mut document = doc! {
            "ok": 0.0,
            "errmsg": self.errmsg.as_str(),
            "code": self.code,
            "codeName": self.code_name.as_str(),
        };
        if !self.labels.is_empty() {
            let labels: Vec<Bson> = self.labels.iter().map(|l| Bson::from(l.as_str())).collect();
            document.insert("errorLabels", labels);
        }
        for (key, value) in &self.extra {
            document.insert(key.clone(), value.clone());
        }
        document
    }
}

/// What a handler returns: one reaction, or a stream of replies (exhaust).
#[derive(Debug)]
pub enum Outcome {
    /// React once.
    React(Reaction),
    /// Send several replies. When the request set `exhaustAllowed`, every reply but the last
    /// carries `moreToCome` and each one's `responseTo` is the previous reply's id; otherwise
    /// (and for legacy OP_QUERY) only the first reply is sent, as the OP_MSG spec requires.
    Stream(ReplyStream),
}

impl From<Reaction> for Outcome {
    fn from(reaction: Reaction) -> Self {
        Self::React(reaction)
    }
}

impl From<ReplyStream> for Outcome {
    fn from(stream: ReplyStream) -> Self {
        Self::Stream(stream)
    }
}

/// One element of a reply stream.
#[derive(Debug)]
pub(crate) enum StreamItem {
    /// A reply after which more will follow.
    More(Document),
    /// The final reaction of the stream.
    Last(Reaction),
}

/// The receiving end of an exhaust reply stream, returned in [`Outcome::Stream`].
///
/// If every [`ReplyStreamSender`] is dropped before [`ReplyStreamSender::finish`], the server
/// closes the connection: the client was promised more replies and would otherwise wait forever.
#[derive(Debug)]
pub struct ReplyStream {
    receiver: mpsc::Receiver<StreamItem>,
}

impl ReplyStream {
    /// A stream fed by the returned sender; `buffer` replies may be queued ahead of the socket.
    pub fn channel(buffer: usize) -> (ReplyStreamSender, ReplyStream) {
        let (sender, receiver) = mpsc::channel(buffer.max(1));
        (ReplyStreamSender { sender }, ReplyStream { receiver })
    }

    /// A stream of fixed replies; the last one ends the stream. An empty list sends nothing.
    pub fn from_replies(replies: Vec<Document>) -> ReplyStream {
        let (sender, receiver) = mpsc::channel(replies.len().max(1));
        let last_index = replies.len().checked_sub(1);
        for (index, reply) in replies.into_iter().enumerate() {
            let item = if Some(index) == last_index {
                StreamItem::Last(Reaction::Reply(reply))
            } else {
                StreamItem::More(reply)
            };
            // Cannot fail: the channel has room for every reply and the receiver is alive.
            let _ = sender.try_send(item);
        }
        if last_index.is_none() {
            let _ = sender.try_send(StreamItem::Last(Reaction::NoReply));
        }
        ReplyStream { receiver }
    }

    /// The next element, or `None` once every sender is gone.
    pub(crate) async fn next(&mut self) -> Option<StreamItem> {
        self.receiver.recv().await
    }
}

/// Feeds a [`ReplyStream`] from a handler's own task.
#[derive(Clone, Debug)]
pub struct ReplyStreamSender {
    sender: mpsc::Sender<StreamItem>,
}

/// The connection that was receiving a reply stream is gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the connection receiving this reply stream has closed")]
pub struct StreamClosed;

impl ReplyStreamSender {
    /// Queues a reply that will be followed by more.
    ///
    /// # Errors
    /// [`StreamClosed`] if the connection has closed or stopped streaming.
    ///
    /// # Cancel safety
    /// Cancel safe: if the future is dropped before it completes, the reply was not queued.
    pub async fn send(&self, reply: Document) -> Result<(), StreamClosed> {
        self.sender
            .send(StreamItem::More(reply))
            .await
            .map_err(|_| StreamClosed)
    }

    /// Queues the final reply and ends the stream.
    ///
    /// # Errors
    /// [`StreamClosed`] if the connection has closed or stopped streaming.
    ///
    /// # Cancel safety
    /// Cancel safe: if the future is dropped before it completes, nothing was queued.
    pub async fn finish(self, reply: Document) -> Result<(), StreamClosed> {
        self.finish_with(Reaction::Reply(reply)).await
    }

    /// Ends the stream with any reaction (an error, a hang-up...).
    ///
    /// # Errors
    /// [`StreamClosed`] if the connection has closed or stopped streaming.
    ///
    /// # Cancel safety
    /// Cancel safe: if the future is dropped before it completes, nothing was queued.
    pub async fn finish_with(self, reaction: Reaction) -> Result<(), StreamClosed> {
        self.sender
            .send(StreamItem::Last(reaction))
            .await
            .map_err(|_| StreamClosed)
    }

    /// Whether the connection has stopped listening to this stream.
    pub fn is_closed(&self) -> bool {
        self.sender.is_closed()
    }

    /// Resolves once the connection stops listening to this stream.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn closed(&self) {
        self.sender.closed().await;
    }
}

/// A latch a test opens to release every reaction waiting on it ([`Reaction::after_gate`]).
/// Clones share the same latch; once open it stays open.
#[derive(Clone, Debug)]
pub struct Gate {
    state: Arc<watch::Sender<bool>>,
}

impl Default for Gate {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for Gate {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.state, &other.state)
    }
}

impl Gate {
    /// A closed gate.
    pub fn new() -> Self {
        Self {
            state: Arc::new(watch::Sender::new(false)),
        }
    }

    /// Opens the gate, releasing every waiter now and in the future.
    pub fn open(&self) {
        self.state.send_replace(true);
    }

    /// Whether the gate is open.
    pub fn is_open(&self) -> bool {
        *self.state.borrow()
    }

    /// Resolves once the gate is open.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn wait(&self) {
        let mut receiver = self.state.subscribe();
        // The sender lives as long as `self`, so this can only return once the gate is open.
        let _ = receiver.wait_for(|open| *open).await;
    }
}
