//! OP_COMPRESSED codecs: snappy (raw format), zlib and zstd.

use crate::WireError;

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

/// A compressor negotiated in the handshake, with its level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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

    /// Compresses `input` and appends the result to `out`.
    pub(crate) fn compress(&self, input: &[u8], out: &mut Vec<u8>) -> Result<(), WireError> {
        match *self {
            Self::Snappy => compress_snappy(input, out),
            Self::Zlib { level } => compress_zlib(input, level, out),
            Self::Zstd { level } => compress_zstd(input, level, out),
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

fn codec_error(error: impl std::fmt::Display) -> WireError {
    WireError::Compression(error.to_string())
}

fn compress_snappy(input: &[u8], out: &mut Vec<u8>) -> Result<(), WireError> {
    let start = out.len();
    out.resize(start + snap::raw::max_compress_len(input.len()), 0);
    let target = out.get_mut(start..).unwrap_or_default();
    let written = snap::raw::Encoder::new()
        .compress(input, target)
        .map_err(codec_error)?;
    out.truncate(start + written);
    Ok(())
}

fn compress_zlib(input: &[u8], level: Option<i32>, out: &mut Vec<u8>) -> Result<(), WireError> {
    let level = match level {
        None | Some(-1) => flate2::Compression::default(),
        Some(level @ 0..=9) => flate2::Compression::new(level.unsigned_abs()),
        Some(other) => {
            return Err(WireError::Compression(format!(
                "zlib level {other} is outside -1..=9"
            )));
        }
    };
    let mut encoder = flate2::Compress::new(level, true);
    // Deflate's worst case is a few bytes per 16 KiB block beyond the input; start there and
    // grow only if a pathological input needs more.
    out.reserve(input.len() + input.len() / 1000 + 64);
    loop {
        let consumed = usize::try_from(encoder.total_in()).unwrap_or(usize::MAX);
        let rest = input.get(consumed..).unwrap_or_default();
        let status = encoder
            .compress_vec(rest, out, flate2::FlushCompress::Finish)
            .map_err(codec_error)?;
        match status {
            flate2::Status::StreamEnd => return Ok(()),
            flate2::Status::Ok | flate2::Status::BufError => out.reserve(out.capacity().max(64)),
        }
    }
}

fn compress_zstd(input: &[u8], level: Option<i32>, out: &mut Vec<u8>) -> Result<(), WireError> {
    out.reserve(zstd::zstd_safe::compress_bound(input.len()));
    let mut compressor = zstd::bulk::Compressor::new(level.unwrap_or(0)).map_err(codec_error)?;
    compressor
        .compress_to_buffer(input, &mut appender(out))
        .map_err(codec_error)?;
    Ok(())
}

/// A zstd output buffer that appends to `out`, writing into its spare capacity without
/// zero-filling it first.
fn appender(out: &mut Vec<u8>) -> std::io::Cursor<&mut Vec<u8>> {
    let end = u64::try_from(out.len()).unwrap_or(u64::MAX);
    let mut cursor = std::io::Cursor::new(out);
    cursor.set_position(end);
    cursor
}

/// The most raw snappy can expand: its densest element is a 3-byte copy producing 64 bytes,
/// so no valid payload decompresses to more than 64/3 (rounded up to 22) times its size.
const SNAPPY_MAX_EXPANSION: usize = 22;

/// First output allocation for the streaming codecs; the buffer then grows only as fast as
/// bytes are really produced, so a small frame claiming a huge uncompressedSize costs nothing.
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
        CompressorId::Snappy => decompress_snappy(payload, declared, out)?,
        CompressorId::Zlib => decompress_zlib(payload, declared, out)?,
        CompressorId::Zstd => decompress_zstd(payload, declared, out)?,
    }
    let actual = out.len() - start;
    if actual == declared {
        Ok(())
    } else {
        Err(WireError::UncompressedSizeMismatch { declared, actual })
    }
}

fn decompression_error(error: impl std::fmt::Display) -> WireError {
    WireError::Decompression(error.to_string())
}

fn decompress_snappy(payload: &[u8], declared: usize, out: &mut Vec<u8>) -> Result<(), WireError> {
    // Raw snappy starts with the uncompressed length: reject a mismatch, or a length this
    // payload could never expand to, before allocating.
    let inner = snap::raw::decompress_len(payload).map_err(decompression_error)?;
    if inner != declared {
        return Err(WireError::UncompressedSizeMismatch {
            declared,
            actual: inner,
        });
    }
    let reachable = payload.len().saturating_mul(SNAPPY_MAX_EXPANSION);
    if declared > reachable {
        return Err(WireError::Decompression(format!(
            "a snappy payload of {} bytes cannot expand to {declared} bytes",
            payload.len()
        )));
    }
    let start = out.len();
    out.resize(start + declared, 0);
    let target = out.get_mut(start..).unwrap_or_default();
    let decoded = snap::raw::Decoder::new().decompress(payload, target);
    match decoded {
        Ok(written) => {
            out.truncate(start + written);
            Ok(())
        }
        Err(error) => {
            out.truncate(start);
            Err(decompression_error(error))
        }
    }
}

/// Makes room in `out` for the next chunk of a streaming decompression that began at `start`
/// and must produce exactly `declared` bytes, and returns how many it produced so far. Room is
/// double what was produced (at least [`INITIAL_OUTPUT_CHUNK`]) but never more than one byte
/// past `declared`: that byte lets an over-long stream show itself, and the codecs write only
/// into spare capacity, so nothing beyond it is ever produced.
///
/// # Errors
/// `UncompressedSizeMismatch` once the stream produced more than `declared`.
fn make_room(out: &mut Vec<u8>, start: usize, declared: usize) -> Result<usize, WireError> {
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

fn decompress_zlib(payload: &[u8], declared: usize, out: &mut Vec<u8>) -> Result<(), WireError> {
    let start = out.len();
    let mut decoder = flate2::Decompress::new(true);
    let counter = |value: u64| usize::try_from(value).unwrap_or(usize::MAX);
    loop {
        let produced = make_room(out, start, declared)?;
        let consumed = counter(decoder.total_in());
        let input = payload.get(consumed..).unwrap_or_default();
        let status = decoder
            // Not `Finish`: that flush requires the whole output to fit in one call, and the
            // buffer here grows between calls.
            .decompress_vec(input, out, flate2::FlushDecompress::None)
            .map_err(decompression_error)?;
        match status {
            flate2::Status::StreamEnd => break,
            flate2::Status::Ok | flate2::Status::BufError => {
                if counter(decoder.total_in()) == consumed && out.len() - start == produced {
                    return Err(WireError::Decompression(
                        "zlib stream ends before its end marker".to_owned(),
                    ));
                }
            }
        }
    }
    let consumed = counter(decoder.total_in());
    if consumed == payload.len() {
        Ok(())
    } else {
        Err(WireError::TrailingBytes {
            what: "zlib stream",
            count: payload.len().saturating_sub(consumed),
        })
    }
}

fn decompress_zstd(payload: &[u8], declared: usize, out: &mut Vec<u8>) -> Result<(), WireError> {
    // A first frame that announces more than the declared size cannot be valid: stop before
    // decompressing anything.
    if let Ok(Some(first_frame)) = zstd::zstd_safe::get_frame_content_size(payload) {
        let first_frame = usize::try_from(first_frame).unwrap_or(usize::MAX);
        if first_frame > declared {
            return Err(WireError::UncompressedSizeMismatch {
                declared,
                actual: first_frame,
            });
        }
    }
    use zstd::stream::raw::Operation as _;
    let mut decoder = zstd::stream::raw::Decoder::new().map_err(decompression_error)?;
    let start = out.len();
    let mut input = zstd::stream::raw::InBuffer::around(payload);
    loop {
        let produced = make_room(out, start, declared)?;
        let consumed = input.pos();
        let filled = out.len();
        let mut output = zstd::stream::raw::OutBuffer::around_pos(out, filled);
        let hint = decoder
            .run(&mut input, &mut output)
            .map_err(decompression_error)?;
        let frame_done = hint == 0;
        if frame_done && input.pos() == payload.len() {
            return Ok(());
        }
        if input.pos() == consumed && out.len() - start == produced {
            return Err(WireError::Decompression(
                "zstd stream ends inside a frame".to_owned(),
            ));
        }
    }
}
