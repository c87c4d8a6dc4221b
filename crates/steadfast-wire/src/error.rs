//! The one error type of the crate.

/// Why a frame could not be encoded or decoded.
///
/// Decoding never panics: every malformed input maps to one of these variants. Apart from
/// [`WireError::TooLarge`] and [`WireError::Compression`], which can also come from encoding,
/// every variant describes bytes received from a peer, and a connection that produced one must be
/// closed because the stream can no longer be trusted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// A field or section runs past the end of the bytes available for it.
    #[error("truncated {what}: needed {needed} bytes, {available} available")]
    Truncated {
        /// Which part of the message was cut short.
        what: &'static str,
        /// Bytes the part needs.
        needed: usize,
        /// Bytes that were left.
        available: usize,
    },
    /// A length field is negative, below its minimum, or disagrees with the bytes around it.
    #[error("invalid length {length} for {what}")]
    InvalidLength {
        /// Which length field is wrong.
        what: &'static str,
        /// The value found (widened so that negative and oversized values both fit).
        length: i64,
    },
    /// A message is larger than the maximum message size in force.
    #[error("message of {size} bytes exceeds the maximum of {max} bytes")]
    TooLarge {
        /// Size of the message (for OP_COMPRESSED, the larger of the wire and uncompressed sizes).
        size: usize,
        /// The limit.
        max: usize,
    },
    /// The header (or OP_COMPRESSED's originalOpcode) names an opcode this crate does not speak.
    #[error("unknown opcode {0}")]
    UnknownOpCode(i32),
    /// An OP_COMPRESSED frame wraps another OP_COMPRESSED frame.
    #[error("OP_COMPRESSED may not wrap another OP_COMPRESSED")]
    NestedCompression,
    /// An OP_MSG section has a payload type other than 0 or 1.
    #[error("invalid OP_MSG section kind {0}")]
    InvalidSectionKind(u8),
    /// An OP_MSG has no kind-0 (body) section.
    #[error("OP_MSG has no body section")]
    MissingBody,
    /// An OP_MSG has more than one kind-0 (body) section.
    #[error("OP_MSG has more than one body section")]
    DuplicateBody,
    /// Two document sequences of one OP_MSG share an identifier.
    #[error("duplicate document sequence identifier {0:?}")]
    DuplicateSequenceIdentifier(String),
    /// An OP_MSG carries more document sequences than [`crate::MAX_DOCUMENT_SEQUENCES`].
    #[error("OP_MSG carries more than {max} document sequences")]
    TooManyDocumentSequences {
        /// The limit.
        max: usize,
    },
    /// The document sequences of an OP_MSG hold more documents than
    /// [`crate::MAX_SEQUENCE_DOCUMENTS`] together.
    #[error("OP_MSG document sequences hold more than {max} documents")]
    TooManySequenceDocuments {
        /// The limit.
        max: usize,
    },
    /// The CRC-32C trailer does not match the message.
    #[error("checksum mismatch: message carries {expected:#010x}, computed {actual:#010x}")]
    ChecksumMismatch {
        /// The checksum carried by the message.
        expected: u32,
        /// The checksum computed over the received bytes.
        actual: u32,
    },
    /// A BSON document is malformed (or nested deeper than [`crate::MAX_BSON_NESTING_DEPTH`]).
    #[error("invalid BSON: {0}")]
    InvalidBson(String),
    /// A C string lacks its terminating NUL, contains one where it must not, or is not UTF-8.
    #[error("invalid C string for {0}")]
    InvalidCString(&'static str),
    /// OP_MSG flag bits that are required but undefined (bits 2 to 15) are set.
    #[error("unsupported required OP_MSG flag bits {0:#010x}")]
    UnsupportedFlags(u32),
    /// OP_COMPRESSED names a compressor id this crate does not know.
    #[error("unknown compressor id {0}")]
    UnknownCompressor(u8),
    /// A compressed payload could not be decompressed.
    #[error("decompression failed: {0}")]
    Decompression(String),
    /// A payload decompressed to a size other than the declared uncompressedSize.
    #[error("decompressed to {actual} bytes, but uncompressedSize says {declared}")]
    UncompressedSizeMismatch {
        /// The declared uncompressedSize.
        declared: usize,
        /// The size actually produced (or a lower bound when decompression stopped early).
        actual: usize,
    },
    /// The message was to be compressed with a codec this program was built without (its
    /// cargo feature is off).
    #[error("the {0} codec is not built into this program")]
    CodecNotBuilt(&'static str),
    /// Compressing an outgoing message failed (for example an out-of-range level).
    #[error("compression failed: {0}")]
    Compression(String),
    /// OP_REPLY's numberReturned disagrees with the documents present.
    #[error("OP_REPLY declares {declared} documents but carries {actual}")]
    DocumentCountMismatch {
        /// numberReturned.
        declared: i32,
        /// Documents found.
        actual: usize,
    },
    /// Bytes remain after the last field of a message.
    #[error("{count} unexpected trailing bytes after {what}")]
    TrailingBytes {
        /// What was parsed completely before the extra bytes.
        what: &'static str,
        /// How many bytes were left over.
        count: usize,
    },
}

impl WireError {
    /// Whether the error describes bytes that break the wire protocol (malformed framing,
    /// sections, BSON, checksum or compressed payload).
    ///
    /// False for [`WireError::TooLarge`], a size limit that can be hit in either direction, and
    /// for [`WireError::Compression`] and [`WireError::CodecNotBuilt`], local failures while
    /// encoding.
    #[must_use]
    pub fn is_protocol(&self) -> bool {
        !matches!(
            self,
            Self::TooLarge { .. } | Self::Compression(_) | Self::CodecNotBuilt(_)
        )
    }

    /// Whether the error is a violated size limit ([`WireError::TooLarge`]).
    #[must_use]
    pub fn is_size_limit(&self) -> bool {
        matches!(self, Self::TooLarge { .. })
    }

    pub(crate) fn truncated(what: &'static str, needed: usize, available: usize) -> Self {
        Self::Truncated {
            what,
            needed,
            available,
        }
    }

    pub(crate) fn invalid_length(what: &'static str, length: impl Into<i64>) -> Self {
        Self::InvalidLength {
            what,
            length: length.into(),
        }
    }
}
