//! Wire compressors a client offers (OP_COMPRESSED.md).

use std::fmt;

/// A compressor the client may offer in its handshake, in order of preference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compressor {
    /// Snappy.
    Snappy,
    /// zlib; its level is [`ClientOptions::zlib_compression_level`](super::ClientOptions).
    Zlib,
    /// Zstandard.
    Zstd,
}

/// The smallest zstd level (zstd's fastest "negative" level).
pub const MIN_ZSTD_LEVEL: i32 = -131_072;
/// The largest zstd level.
pub const MAX_ZSTD_LEVEL: i32 = 22;

/// The smallest valid `zlibCompressionLevel` (-1 means the library's default level).
pub const MIN_ZLIB_LEVEL: i32 = -1;
/// The largest valid `zlibCompressionLevel`.
pub const MAX_ZLIB_LEVEL: i32 = 9;

impl Compressor {
    /// The name used in connection strings and in the handshake's `compression` array.
    pub fn as_str(self) -> &'static str {
        match self {
            Compressor::Snappy => "snappy",
            Compressor::Zlib => "zlib",
            Compressor::Zstd => "zstd",
        }
    }

    /// Parses a compressor name (case-insensitively); `None` for an unknown name.
    pub fn parse(name: &str) -> Option<Self> {
        [Compressor::Snappy, Compressor::Zlib, Compressor::Zstd]
            .into_iter()
            .find(|c| c.as_str().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for Compressor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
