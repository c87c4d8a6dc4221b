//! A whole message as a frame: the header, the body by opcode ([`Body`]), and the optional
//! OP_COMPRESSED wrapping.

use crate::bson_check::BsonValidation;
use crate::compression::{self, CompressorId};
use crate::read::{Reader, len_i64};
use crate::{
    Compressor, HEADER_LEN, MessageHeader, OpCode, OpMsg, OpQuery, OpReply, WireError, frame_length,
};

/// The body of a message, by opcode.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// OP_MSG.
    Msg(OpMsg),
    /// OP_QUERY.
    Query(OpQuery),
    /// OP_REPLY.
    Reply(OpReply),
}

impl Body {
    /// The opcode this body is sent with (before any compression).
    #[must_use]
    pub fn op_code(&self) -> OpCode {
        match self {
            Self::Msg(_) => OpCode::Msg,
            Self::Query(_) => OpCode::Query,
            Self::Reply(_) => OpCode::Reply,
        }
    }

    /// Length of the encoded body, without header and before compression.
    fn encoded_len(&self) -> usize {
        match self {
            Self::Msg(msg) => msg.encoded_len(),
            Self::Query(query) => query.encoded_len(),
            Self::Reply(reply) => reply.encoded_len(),
        }
    }
}

impl From<OpMsg> for Body {
    fn from(msg: OpMsg) -> Self {
        Self::Msg(msg)
    }
}

impl From<OpQuery> for Body {
    fn from(query: OpQuery) -> Self {
        Self::Query(query)
    }
}

impl From<OpReply> for Body {
    fn from(reply: OpReply) -> Self {
        Self::Reply(reply)
    }
}

/// A whole message.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The sender's identifier for this message.
    pub request_id: i32,
    /// The `request_id` this message answers (0 for requests).
    pub response_to: i32,
    /// The body.
    pub body: Body,
    /// On decode, the compressor the peer used (`None` if the frame was not OP_COMPRESSED), so
    /// a server can reply in kind. Ignored on encode, where the `compressor` argument decides.
    pub compressed_with: Option<CompressorId>,
}

/// OP_COMPRESSED fields after the header: originalOpcode, uncompressedSize, compressorId.
const COMPRESSED_PREFIX_LEN: usize = 4 + 4 + 1;

impl Message {
    /// An uncompressed message.
    #[must_use]
    pub fn new(request_id: i32, response_to: i32, body: impl Into<Body>) -> Self {
        Self {
            request_id,
            response_to,
            body: body.into(),
            compressed_with: None,
        }
    }

    /// Length of the frame [`Message::encode`] produces without compression.
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        HEADER_LEN + self.body.encoded_len()
    }

    /// Appends the encoded frame to `out`.
    ///
    /// With `compressor`, the frame is wrapped in OP_COMPRESSED; whether a command may be
    /// compressed at all ([`crate::is_uncompressible_command`]) is the caller's decision. With
    /// [`crate::MsgFlags::CHECKSUM_PRESENT`] set on an OP_MSG, a CRC-32C of the uncompressed
    /// message is appended to it (inside the compressed payload when compressing). On error,
    /// `out` is left as it was.
    ///
    /// # Errors
    ///
    /// [`WireError::TooLarge`] if the message (compressed or not) exceeds `max_message_size`;
    /// [`WireError::InvalidCString`] if a sequence identifier or collection name contains NUL;
    /// [`WireError::Compression`] if the compressor fails or has an invalid level.
    pub fn encode(
        &self,
        compressor: Option<&Compressor>,
        max_message_size: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), WireError> {
        let start = out.len();
        let result = match compressor {
            None => self.encode_plain(max_message_size, out),
            Some(compressor) => self.encode_compressed(compressor, max_message_size, out),
        };
        if result.is_err() {
            out.truncate(start);
        }
        result
    }

    /// Encodes into a new buffer; see [`Message::encode`].
    ///
    /// # Errors
    ///
    /// As [`Message::encode`].
    pub fn to_bytes(
        &self,
        compressor: Option<&Compressor>,
        max_message_size: usize,
    ) -> Result<Vec<u8>, WireError> {
        let mut out = Vec::new();
        self.encode(compressor, max_message_size, &mut out)?;
        Ok(out)
    }

    /// The checked total length, as the i32 the header carries.
    fn checked_length(size: usize, max_message_size: usize) -> Result<i32, WireError> {
        let too_large = WireError::TooLarge {
            size,
            max: max_message_size,
        };
        if size > max_message_size {
            return Err(too_large);
        }
        i32::try_from(size).map_err(|_| too_large)
    }

    fn encode_plain(&self, max_message_size: usize, out: &mut Vec<u8>) -> Result<(), WireError> {
        let length = self.encoded_len();
        let message_length = Self::checked_length(length, max_message_size)?;
        out.reserve(length);
        let start = out.len();
        MessageHeader {
            message_length,
            request_id: self.request_id,
            response_to: self.response_to,
            op_code: self.body.op_code().as_i32(),
        }
        .write_to(out);
        match &self.body {
            Body::Msg(msg) => msg.encode_after_header(start, out),
            Body::Query(query) => query.encode_after_header(out),
            Body::Reply(reply) => reply.encode_after_header(out),
        }
    }

    fn encode_compressed(
        &self,
        compressor: &Compressor,
        max_message_size: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), WireError> {
        let mut plain = Vec::new();
        self.encode_plain(max_message_size, &mut plain)?;
        let original = plain.get(HEADER_LEN..).unwrap_or_default();
        let uncompressed_size = i32::try_from(original.len()).map_err(|_| WireError::TooLarge {
            size: plain.len(),
            max: max_message_size,
        })?;
        let start = out.len();
        out.reserve(HEADER_LEN + COMPRESSED_PREFIX_LEN + original.len() / 2);
        // The length is patched in once the compressed size is known.
        MessageHeader {
            message_length: 0,
            request_id: self.request_id,
            response_to: self.response_to,
            op_code: OpCode::Compressed.as_i32(),
        }
        .write_to(out);
        out.extend_from_slice(&self.body.op_code().as_i32().to_le_bytes());
        out.extend_from_slice(&uncompressed_size.to_le_bytes());
        out.push(compressor.id().as_u8());
        compressor.compress(original, out)?;
        let length = out.len() - start;
        let message_length = Self::checked_length(length, max_message_size)?;
        if let Some(field) = out.get_mut(start..start + 4) {
            field.copy_from_slice(&message_length.to_le_bytes());
        }
        Ok(())
    }

    /// Decodes exactly one whole frame, as delimited by its length prefix, checking every BSON
    /// document deeply ([`BsonValidation::Deep`]).
    ///
    /// OP_COMPRESSED is decompressed (and [`Message::compressed_with`] set), an OP_MSG checksum
    /// is verified when present, and every section and document is validated.
    ///
    /// # Errors
    ///
    /// A [`WireError`] describing the first problem found; never panics on any input.
    pub fn decode(frame: &[u8], max_message_size: usize) -> Result<Self, WireError> {
        Self::decode_with(frame, max_message_size, BsonValidation::Deep)
    }

    /// [`Message::decode`] with a chosen BSON validation depth.
    ///
    /// # Errors
    ///
    /// As [`Message::decode`].
    pub fn decode_with(
        frame: &[u8],
        max_message_size: usize,
        validation: BsonValidation,
    ) -> Result<Self, WireError> {
        let header = checked_header(frame, max_message_size)?;
        let after_header = frame.get(HEADER_LEN..).unwrap_or_default();
        let body = match OpCode::from_i32(header.op_code)? {
            OpCode::Msg => Body::Msg(OpMsg::decode(frame, validation)?),
            OpCode::Query => Body::Query(OpQuery::decode(after_header, validation)?),
            OpCode::Reply => Body::Reply(OpReply::decode(after_header, validation)?),
            OpCode::Compressed => {
                return decode_compressed(&header, after_header, max_message_size, validation);
            }
        };
        Ok(Self {
            request_id: header.request_id,
            response_to: header.response_to,
            body,
            compressed_with: None,
        })
    }
}

/// Parses the header and checks that its length matches the frame and the limit.
fn checked_header(frame: &[u8], max_message_size: usize) -> Result<MessageHeader, WireError> {
    let header = MessageHeader::parse(frame)?;
    let length = frame_length(frame, max_message_size)?.unwrap_or_default();
    match length.cmp(&frame.len()) {
        std::cmp::Ordering::Equal => Ok(header),
        std::cmp::Ordering::Greater => Err(WireError::truncated("frame", length, frame.len())),
        std::cmp::Ordering::Less => Err(WireError::TrailingBytes {
            what: "frame",
            count: frame.len() - length,
        }),
    }
}

fn decode_compressed(
    header: &MessageHeader,
    after_header: &[u8],
    max_message_size: usize,
    validation: BsonValidation,
) -> Result<Message, WireError> {
    let mut reader = Reader::new(after_header, "OP_COMPRESSED");
    let original_op_code = reader.i32()?;
    match OpCode::from_i32(original_op_code)? {
        OpCode::Compressed => return Err(WireError::NestedCompression),
        OpCode::Msg | OpCode::Query | OpCode::Reply => {}
    }
    let declared = reader.i32()?;
    let uncompressed_size = usize::try_from(declared)
        .map_err(|_| WireError::invalid_length("uncompressedSize", declared))?;
    let total = uncompressed_size.saturating_add(HEADER_LEN);
    if total > max_message_size {
        return Err(WireError::TooLarge {
            size: total,
            max: max_message_size,
        });
    }
    let message_length = i32::try_from(total)
        .map_err(|_| WireError::invalid_length("uncompressedSize", len_i64(total)))?;
    let compressor = CompressorId::from_u8(reader.u8()?)?;
    // Rebuild the original frame, header included, so that the inner decoder (and the OP_MSG
    // checksum, which covers the uncompressed header) sees exactly what was compressed.
    // Only the header is reserved: the peer chose uncompressedSize, so the codecs grow the
    // buffer as they really produce bytes.
    let mut original = Vec::with_capacity(HEADER_LEN);
    MessageHeader {
        message_length,
        request_id: header.request_id,
        response_to: header.response_to,
        op_code: original_op_code,
    }
    .write_to(&mut original);
    compression::decompress(compressor, reader.rest(), uncompressed_size, &mut original)?;
    let mut message = Message::decode_with(&original, max_message_size, validation)?;
    message.compressed_with = Some(compressor);
    Ok(message)
}
