//! Sans-I/O framing of the MongoDB wire protocol.
//!
//! This crate turns [`Message`] values into bytes and bytes into [`Message`] values; it never
//! touches a socket, a clock or a runtime, so the driver and the blackpipe test server share it
//! and it can be tested and fuzzed in isolation.
//!
//! It covers the standard 16-byte header ([`MessageHeader`]), OP_MSG ([`OpMsg`]: flag bits, one
//! kind-0 body, kind-1 [`DocumentSequence`]s, the CRC-32C checksum), the legacy OP_QUERY and
//! OP_REPLY used by the legacy handshake ([`OpQuery`], [`OpReply`]), and OP_COMPRESSED with
//! snappy, zlib and zstd ([`Compressor`]). [`FrameDecoder`] splits a byte stream into frames.
//!
//! # Design
//!
//! - **Untrusted input never panics.** Every read goes through a bounds-checked reader and every
//!   length taken from the wire is converted with checked arithmetic; anything malformed becomes a
//!   typed [`WireError`]. A proptest and a cargo-fuzz target exercise this.
//! - **Limits are enforced before allocating.** The maximum message size is checked on the length
//!   prefix and on OP_COMPRESSED's uncompressedSize before any buffer is sized from them, each
//!   codec stops once it would exceed the declared size, and the decompressed size must equal it.
//! - **BSON is validated once, at the edge.** Received documents are walked deeply, in one pass
//!   that accepts exactly what bson's own parsers accept ([`check_bson`], [`BsonValidation`],
//!   [`MAX_BSON_NESTING_DEPTH`]), so that later readers cannot fail on malformed bytes or recurse
//!   without bound.
//! - **One pass, few copies.** Encoding computes the exact size first (to check the limit and
//!   reserve once) and writes each document's bytes directly; decoding copies each document out
//!   of the frame exactly once, into the [`bson::RawDocumentBuf`] the caller receives.

mod bson_check;
mod compression;
mod decoder;
mod error;
mod flags;
mod frame;
mod header;
mod op_msg;
mod op_query;
mod op_reply;
mod read;

pub use bson_check::{BsonValidation, MAX_BSON_NESTING_DEPTH, check_bson, find_top_level};
pub use compression::{Compressor, CompressorId, UnknownCompressor, is_uncompressible_command};
pub use decoder::FrameDecoder;
pub use error::WireError;
pub use flags::MsgFlags;
pub use frame::{Body, Message};
pub use header::{DEFAULT_MAX_MESSAGE_SIZE, HEADER_LEN, MessageHeader, OpCode, frame_length};
pub use op_msg::{DocumentSequence, MAX_DOCUMENT_SEQUENCES, MAX_SEQUENCE_DOCUMENTS, OpMsg};
pub use op_query::OpQuery;
pub use op_reply::OpReply;

#[cfg(test)]
mod tests;
