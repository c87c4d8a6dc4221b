//! OP_COMPRESSED codecs: snappy (raw format), zlib and zstd, each built only with its cargo
//! feature (`snappy`, `zlib`, `zstd`). A codec left out keeps its place in the enums, so the
//! protocol's ids and names stay complete; using it is an error, never a panic.

use crate::WireError;

#[cfg(feature = "snappy")]
mod snappy;
#[cfg(feature = "zlib")]
mod zlib;
#[cfg(feature = "zstd")]
mod zstd;

/// A codec left out of the build: compressing with it is a local error (the driver refuses it
/// at client creation, so this is only reached by a caller that skipped that check), and a
/// peer that sends it used a codec the handshake never offered.
#[cfg_attr(
    all(feature = "snappy", feature = "zlib", feature = "zstd"),
    allow(unused_macros, reason = "every codec is built")
)]
macro_rules! absent_codec {
    ($module:ident, $name:literal, ($($param:ident: $ty:ty),*)) => {
        mod $module {
            use crate::WireError;

            pub(super) fn compress($($param: $ty,)* _out: &mut Vec<u8>) -> Result<(), WireError> {
                $(let _ = $param;)*
                Err(WireError::CodecNotBuilt($name))
            }

            pub(super) fn decompress(
                _payload: &[u8],
                _declared: usize,
                _out: &mut Vec<u8>,
            ) -> Result<(), WireError> {
                Err(WireError::Decompression(format!(
                    "the peer compressed with {}, which this program was built without and never offered",
                    $name
                )))
            }
        }
    };
}

#[cfg(not(feature = "snappy"))]
absent_codec!(snappy, "snappy", (input: &[u8]));
#[cfg(not(feature = "zlib"))]
absent_codec!(zlib, "zlib", (input: &[u8], level: Option<i32>));
#[cfg(not(feature = "zstd"))]
absent_codec!(zstd, "zstd", (input: &[u8], level: Option<i32>));

/// Compressor ids carried by OP_COMPRESSED.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum CompressorId {
    /// The payload is stored uncompressed (used for testing).
    Noop = 0,
    /// Snappy, raw (unframed) format.
    Snappy = 1,
    /// zlib (deflate with the zlib header).
    Zlib = 2,
    /// Zstandard.
    Zstd = 3,
}

impl CompressorId {
    /// The id for a byte from the wire.
    ///
    /// # Errors
    ///
    /// [`WireError::UnknownCompressor`] for ids 4 to 255, which are reserved.
    pub const fn from_u8(id: u8) -> Result<Self, WireError> {
        match id {
            0 => Ok(Self::Noop),
            1 => Ok(Self::Snappy),
            2 => Ok(Self::Zlib),
            3 => Ok(Self::Zstd),
            other => Err(WireError::UnknownCompressor(other)),
        }
    }

    /// The byte written on the wire.
    #[must_use]
    pub const fn as_u8(self) -> u8 {
        self as u8
    }
}

/// A compressor negotiated in the handshake, with its level. Serializes as the official
/// driver's does: `"Snappy"`, `{ "Zlib": { "level": .. } }`, `{ "Zstd": { "level": .. } }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Compressor {
    /// Snappy; it has no level.
    Snappy,
    /// zlib; `level` is -1 (default, 6) or 0 to 9, `None` meaning the default.
    Zlib {
        /// Compression level, the `zlibCompressionLevel` option.
        level: Option<i32>,
    },
    /// Zstandard; `level` as understood by zstd, `None` meaning zstd's default (3).
    Zstd {
        /// Compression level.
        level: Option<i32>,
    },
}

/// A compressor name [`Compressor::from_str`](std::str::FromStr::from_str) does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown compressor {0:?}: expected snappy, zlib or zstd")]
pub struct UnknownCompressor(pub String);

impl std::str::FromStr for Compressor {
    type Err = UnknownCompressor;

    /// Parses a handshake name (`snappy`, `zlib`, `zstd`, ASCII case ignored), with the
    /// default level.
    ///
    /// # Errors
    /// [`UnknownCompressor`] for any other name.
    fn from_str(name: &str) -> Result<Self, UnknownCompressor> {
        Compressor::from_name(name, None).ok_or_else(|| UnknownCompressor(name.to_string()))
    }
}

impl Compressor {
    /// The name used in the handshake's `compression` array.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Self::Snappy => "snappy",
            Self::Zlib { .. } => "zlib",
            Self::Zstd { .. } => "zstd",
        }
    }

    /// The id written into OP_COMPRESSED.
    #[must_use]
    pub fn id(&self) -> CompressorId {
        match self {
            Self::Snappy => CompressorId::Snappy,
            Self::Zlib { .. } => CompressorId::Zlib,
            Self::Zstd { .. } => CompressorId::Zstd,
        }
    }

    /// The compressor for a handshake name (ASCII case-insensitive), or `None` if unknown.
    /// `zlib_level` only applies to zlib.
    #[must_use]
    pub fn from_name(name: &str, zlib_level: Option<i32>) -> Option<Self> {
        if name.eq_ignore_ascii_case("snappy") {
            Some(Self::Snappy)
        } else if name.eq_ignore_ascii_case("zlib") {
            Some(Self::Zlib { level: zlib_level })
        } else if name.eq_ignore_ascii_case("zstd") {
            Some(Self::Zstd { level: None })
        } else {
            None
        }
    }

    /// Whether this codec was built into the program (its cargo feature is on). A codec left
    /// out must not be offered in the handshake: compressing with it fails.
    #[must_use]
    pub const fn is_built(&self) -> bool {
        match self {
            Self::Snappy => cfg!(feature = "snappy"),
            Self::Zlib { .. } => cfg!(feature = "zlib"),
            Self::Zstd { .. } => cfg!(feature = "zstd"),
        }
    }

    /// Compresses `input` and appends the result to `out`.
    pub(crate) fn compress(&self, input: &[u8], out: &mut Vec<u8>) -> Result<(), WireError> {
        match *self {
            Self::Snappy => snappy::compress(input, out),
            Self::Zlib { level } => zlib::compress(input, level, out),
            Self::Zstd { level } => zstd::compress(input, level, out),
        }
    }
}

/// Commands whose messages must never be compressed (handshake and authentication), compared
/// exactly as the server compares command names.
const UNCOMPRESSIBLE_COMMANDS: [&str; 12] = [
    "hello",
    "isMaster",
    "ismaster",
    "saslStart",
    "saslContinue",
    "getnonce",
    "authenticate",
    "createUser",
    "updateUser",
    "copydbSaslStart",
    "copydbgetnonce",
    "copydb",
];

/// Whether a command (named by the first key of its body) must be sent uncompressed.
#[must_use]
pub fn is_uncompressible_command(name: &str) -> bool {
    UNCOMPRESSIBLE_COMMANDS.contains(&name)
}

#[cfg_attr(
    not(any(feature = "snappy", feature = "zlib", feature = "zstd")),
    allow(dead_code, reason = "only the codecs use it")
)]
pub(super) fn codec_error(error: impl std::fmt::Display) -> WireError {
    WireError::Compression(error.to_string())
}

/// First output allocation for the streaming codecs; the buffer then grows only as fast as
/// bytes are really produced, so a small frame claiming a huge uncompressedSize costs nothing.
#[cfg_attr(
    not(any(feature = "zlib", feature = "zstd")),
    allow(dead_code, reason = "only the streaming codecs use it")
)]
const INITIAL_OUTPUT_CHUNK: usize = 16 * 1024;

/// Decompresses an OP_COMPRESSED payload, appending exactly `declared` bytes to `out`.
///
/// Nothing is allocated from `declared` alone, which the peer chose: snappy's own length
/// header must match it and be reachable from the payload's size, and zlib and zstd grow
/// `out` as they really produce bytes. Every codec is stopped as soon as it would produce more
/// than `declared`.
pub(crate) fn decompress(
    id: CompressorId,
    payload: &[u8],
    declared: usize,
    out: &mut Vec<u8>,
) -> Result<(), WireError> {
    let start = out.len();
    match id {
        CompressorId::Noop => {
            if payload.len() != declared {
                return Err(WireError::UncompressedSizeMismatch {
                    declared,
                    actual: payload.len(),
                });
            }
            out.extend_from_slice(payload);
        }
        CompressorId::Snappy => snappy::decompress(payload, declared, out)?,
        CompressorId::Zlib => zlib::decompress(payload, declared, out)?,
        CompressorId::Zstd => zstd::decompress(payload, declared, out)?,
    }
    let actual = out.len() - start;
    if actual == declared {
        Ok(())
    } else {
        Err(WireError::UncompressedSizeMismatch { declared, actual })
    }
}

#[cfg_attr(
    not(any(feature = "snappy", feature = "zlib", feature = "zstd")),
    allow(dead_code, reason = "only the codecs use it")
)]
pub(super) fn decompression_error(error: impl std::fmt::Display) -> WireError {
    WireError::Decompression(error.to_string())
}

/// Makes room in `out` for the next chunk of a streaming decompression that began at `start`
/// and must produce exactly `declared` bytes, and returns how many it produced so far. Room is
/// double what was produced (at least [`INITIAL_OUTPUT_CHUNK`]) but never more than one byte
/// past `declared`: that byte lets an over-long stream show itself, and the codecs write only
/// into spare capacity, so nothing beyond it is ever produced.
///
/// # Errors
/// `UncompressedSizeMismatch` once the stream produced more than `declared`.
#[cfg_attr(
    not(any(feature = "zlib", feature = "zstd")),
    allow(dead_code, reason = "only the streaming codecs use it")
)]
pub(super) fn make_room(
    out: &mut Vec<u8>,
    start: usize,
    declared: usize,
) -> Result<usize, WireError> {
    let produced = out.len() - start;
    if produced > declared {
        return Err(WireError::UncompressedSizeMismatch {
            declared,
            actual: produced,
        });
    }
    let limit = declared.saturating_add(1);
    let room = limit
        .saturating_sub(produced)
        .min(produced.max(INITIAL_OUTPUT_CHUNK));
    if out.capacity() - out.len() < room {
        out.reserve_exact(room);
    }
    Ok(produced)
}
