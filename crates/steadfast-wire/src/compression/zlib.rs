//! zlib: deflate with the zlib header.

use super::{codec_error, decompression_error, make_room};
use crate::WireError;

pub(super) fn compress(
    input: &[u8],
    level: Option<i32>,
    out: &mut Vec<u8>,
) -> Result<(), WireError> {
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

pub(super) fn decompress(
    payload: &[u8],
    declared: usize,
    out: &mut Vec<u8>,
) -> Result<(), WireError> {
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
