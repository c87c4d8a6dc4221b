//! The 16-byte message header, opcodes and frame delimiting.

use crate::WireError;
use crate::read::Reader;

/// Length of the standard message header.
pub const HEADER_LEN: usize = 16;

/// Maximum message size assumed until the handshake reports `maxMessageSizeBytes`.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 48_000_000;

/// The opcodes this crate encodes and decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[repr(i32)]
pub enum OpCode {
    /// OP_REPLY, the legacy reply (to OP_QUERY).
    Reply = 1,
    /// OP_QUERY, the legacy query (only used for the legacy handshake).
    Query = 2004,
    /// OP_COMPRESSED, a compressed wrapper around another opcode.
    Compressed = 2012,
    /// OP_MSG, the extensible message used for every modern command.
    Msg = 2013,
}

impl OpCode {
    /// The opcode for a header value.
    ///
    /// # Errors
    ///
    /// [`WireError::UnknownOpCode`] for any value other than the four known opcodes.
    pub const fn from_i32(code: i32) -> Result<Self, WireError> {
        match code {
            1 => Ok(Self::Reply),
            2004 => Ok(Self::Query),
            2012 => Ok(Self::Compressed),
            2013 => Ok(Self::Msg),
            other => Err(WireError::UnknownOpCode(other)),
        }
    }

    /// The value written in the header.
    #[must_use]
    pub const fn as_i32(self) -> i32 {
        self as i32
    }
}

/// The standard header that starts every message (all fields little-endian).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MessageHeader {
    /// Total length of the message, header included.
    pub message_length: i32,
    /// Identifier chosen by the sender.
    pub request_id: i32,
    /// `request_id` of the message this one answers (0 for requests).
    pub response_to: i32,
    /// The opcode, kept raw so that unknown values can be reported.
    pub op_code: i32,
}

impl MessageHeader {
    /// Reads the header from the first 16 bytes of `bytes` (the rest is ignored).
    ///
    /// # Errors
    ///
    /// [`WireError::Truncated`] if fewer than 16 bytes are given.
    pub fn parse(bytes: &[u8]) -> Result<Self, WireError> {
        let mut reader = Reader::new(bytes, "message header");
        Ok(Self {
            message_length: reader.i32()?,
            request_id: reader.i32()?,
            response_to: reader.i32()?,
            op_code: reader.i32()?,
        })
    }

    /// The 16 header bytes.
    #[must_use]
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut bytes = [0; HEADER_LEN];
        let fields = [
            self.message_length,
            self.request_id,
            self.response_to,
            self.op_code,
        ];
        for (chunk, field) in bytes.chunks_exact_mut(4).zip(fields) {
            chunk.copy_from_slice(&field.to_le_bytes());
        }
        bytes
    }

    /// Appends the 16 header bytes to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_bytes());
    }
}

/// Reads the length prefix of the frame at the start of `buf`.
///
/// Returns `Ok(None)` while fewer than 4 bytes are available, otherwise the whole frame's length
/// (header included), which may be more than `buf` holds yet.
///
/// # Errors
///
/// [`WireError::InvalidLength`] if the length is below 16 (the header alone), and
/// [`WireError::TooLarge`] if it exceeds `max_message_size`.
pub fn frame_length(buf: &[u8], max_message_size: usize) -> Result<Option<usize>, WireError> {
    let Some(prefix) = buf.first_chunk::<4>() else {
        return Ok(None);
    };
    let declared = i32::from_le_bytes(*prefix);
    let length = usize::try_from(declared)
        .ok()
        .filter(|&length| length >= HEADER_LEN)
        .ok_or_else(|| WireError::invalid_length("messageLength", declared))?;
    if length > max_message_size {
        return Err(WireError::TooLarge {
            size: length,
            max: max_message_size,
        });
    }
    Ok(Some(length))
}
