//! Snappy, raw (unframed) format.

use super::{codec_error, decompression_error};
use crate::WireError;

pub(super) fn compress(input: &[u8], out: &mut Vec<u8>) -> Result<(), WireError> {
    let start = out.len();
    out.resize(start + snap::raw::max_compress_len(input.len()), 0);
    let target = out.get_mut(start..).unwrap_or_default();
    let written = snap::raw::Encoder::new()
        .compress(input, target)
        .map_err(codec_error)?;
    out.truncate(start + written);
    Ok(())
}

/// The most raw snappy can expand: its densest element is a 3-byte copy producing 64 bytes,
/// so no valid payload decompresses to more than 64/3 (rounded up to 22) times its size.
const SNAPPY_MAX_EXPANSION: usize = 22;

pub(super) fn decompress(
    payload: &[u8],
    declared: usize,
    out: &mut Vec<u8>,
) -> Result<(), WireError> {
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
