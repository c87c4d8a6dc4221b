//! Zstandard.

use super::{codec_error, decompression_error, make_room};
use crate::WireError;

pub(super) fn compress(
    input: &[u8],
    level: Option<i32>,
    out: &mut Vec<u8>,
) -> Result<(), WireError> {
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

pub(super) fn decompress(
    payload: &[u8],
    declared: usize,
    out: &mut Vec<u8>,
) -> Result<(), WireError> {
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
