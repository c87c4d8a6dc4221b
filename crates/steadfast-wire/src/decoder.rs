//! Incremental decoding of a byte stream into messages.

use crate::bson_check::BsonValidation;
use crate::{Message, WireError, frame_length};

/// Buffers bytes read from a stream and yields whole messages.
///
/// Feed it with [`FrameDecoder::extend`] (or append directly through
/// [`FrameDecoder::read_buffer`] to avoid a copy), then call [`FrameDecoder::next_message`] until
/// it returns `Ok(None)`.
///
/// When a frame's length prefix is invalid, the stream has lost its framing: the same error is
/// returned on every later call, and the connection should be closed. When a complete frame fails
/// to decode, it is consumed before the error is returned, so the next call starts at the next
/// frame (although the protocol says a connection that sent a malformed message should be
/// closed anyway).
#[derive(Debug)]
pub struct FrameDecoder {
    buffer: Vec<u8>,
    /// Bytes of `buffer` before this offset have been decoded already.
    consumed: usize,
    max_message_size: usize,
    validation: BsonValidation,
}

/// Initial buffer capacity when no frame length is known yet.
const MIN_READ_CAPACITY: usize = 4096;

impl FrameDecoder {
    /// An empty decoder that rejects frames longer than `max_message_size`.
    #[must_use]
    pub fn new(max_message_size: usize) -> Self {
        Self {
            buffer: Vec::new(),
            consumed: 0,
            max_message_size,
            validation: BsonValidation::Deep,
        }
    }

    /// Chooses how thoroughly BSON documents are checked (builder style; deep by default).
    #[must_use]
    pub fn with_validation(mut self, validation: BsonValidation) -> Self {
        self.validation = validation;
        self
    }

    /// Changes the size limit, typically to the server's `maxMessageSizeBytes` after the
    /// handshake.
    pub fn set_max_message_size(&mut self, max_message_size: usize) {
        self.max_message_size = max_message_size;
    }

    /// The size limit in force.
    #[must_use]
    pub fn max_message_size(&self) -> usize {
        self.max_message_size
    }

    /// Appends bytes received from the stream.
    pub fn extend(&mut self, bytes: &[u8]) {
        self.compact_if_worthwhile();
        self.buffer.extend_from_slice(bytes);
    }

    /// The internal buffer, for reading from a stream straight into it (for example with
    /// `AsyncReadExt::read_buf`), with room reserved for at least the rest of the pending frame.
    ///
    /// Only append to it: bytes already present belong to frames not decoded yet.
    pub fn read_buffer(&mut self) -> &mut Vec<u8> {
        if self.consumed > 0 {
            self.buffer.drain(..self.consumed.min(self.buffer.len()));
            self.consumed = 0;
        }
        let wanted = self.bytes_needed().max(MIN_READ_CAPACITY);
        self.buffer.reserve(wanted);
        &mut self.buffer
    }

    /// Bytes buffered but not decoded yet.
    #[must_use]
    pub fn buffered_len(&self) -> usize {
        self.buffer.len().saturating_sub(self.consumed)
    }

    /// How many more bytes are needed before [`FrameDecoder::next_message`] can make progress:
    /// the rest of the pending frame if its length is known, else what the length prefix still
    /// lacks; 0 if a whole frame (or an invalid prefix) is already buffered.
    #[must_use]
    pub fn bytes_needed(&self) -> usize {
        let pending = self.pending();
        match frame_length(pending, self.max_message_size) {
            Ok(Some(length)) => length.saturating_sub(pending.len()),
            Ok(None) => 4 - pending.len(),
            Err(_) => 0,
        }
    }

    /// Decodes the next whole message, or returns `Ok(None)` if more bytes are needed.
    ///
    /// # Errors
    ///
    /// Any [`WireError`] from [`frame_length`] (the frame stays buffered) or from
    /// [`Message::decode_with`] (the frame is consumed).
    pub fn next_message(&mut self) -> Result<Option<Message>, WireError> {
        let pending = self.pending();
        let Some(length) = frame_length(pending, self.max_message_size)? else {
            return Ok(None);
        };
        let Some(frame) = pending.get(..length) else {
            return Ok(None);
        };
        let decoded = Message::decode_with(frame, self.max_message_size, self.validation);
        self.consumed += length;
        if self.consumed >= self.buffer.len() {
            self.buffer.clear();
            self.consumed = 0;
        }
        decoded.map(Some)
    }

    fn pending(&self) -> &[u8] {
        self.buffer.get(self.consumed..).unwrap_or_default()
    }

    /// Moves undecoded bytes to the front once more has been consumed than remains, so that
    /// the memmove cost stays proportional to the bytes received.
    fn compact_if_worthwhile(&mut self) {
        if self.consumed > 0 && self.consumed >= self.buffered_len() {
            self.buffer.drain(..self.consumed.min(self.buffer.len()));
            self.consumed = 0;
        }
    }
}
