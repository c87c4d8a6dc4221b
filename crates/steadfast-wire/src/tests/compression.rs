use std::io::Write;

use super::*;
use crate::{Compressor, CompressorId, MsgFlags};

const ALL: [Compressor; 5] = [
    Compressor::Snappy,
    Compressor::Zlib { level: None },
    Compressor::Zlib { level: Some(9) },
    Compressor::Zstd { level: None },
    Compressor::Zstd { level: Some(7) },
];

/// An OP_COMPRESSED frame built by hand.
fn compressed_frame(
    original_op_code: i32,
    uncompressed_size: i32,
    id: u8,
    payload: &[u8],
) -> Vec<u8> {
    let mut after_header = original_op_code.to_le_bytes().to_vec();
    after_header.extend_from_slice(&uncompressed_size.to_le_bytes());
    after_header.push(id);
    after_header.extend_from_slice(payload);
    frame(11, 12, 2012, &after_header)
}

fn zlib(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).expect("in memory");
    encoder.finish().expect("in memory")
}

fn snappy(bytes: &[u8]) -> Vec<u8> {
    snap::raw::Encoder::new()
        .compress_vec(bytes)
        .expect("in memory")
}

fn size_of(bytes: &[u8]) -> i32 {
    i32::try_from(bytes.len()).expect("fits")
}

#[test]
fn every_body_kind_round_trips_through_every_compressor() {
    for compressor in ALL {
        for message in [sample_msg(), sample_query(), sample_reply()] {
            let bytes = message.to_bytes(Some(&compressor), MAX).expect("encodes");
            assert_eq!(bytes[12..16], 2012i32.to_le_bytes(), "{compressor:?}");
            assert_eq!(bytes[24], compressor.id().as_u8());
            let decoded = decode(&bytes).expect("decodes");
            assert_eq!(decoded.compressed_with, Some(compressor.id()));
            assert_eq!(decoded.body, message.body);
            assert_eq!(decoded.request_id, message.request_id);
            assert_eq!(decoded.response_to, message.response_to);
        }
    }
}

#[test]
fn compressed_fields_describe_the_original_message() {
    let message = sample_msg();
    let plain = message.to_bytes(None, MAX).expect("encodes");
    let bytes = message
        .to_bytes(Some(&Compressor::Snappy), MAX)
        .expect("encodes");
    assert_eq!(bytes[..4], size_of(&bytes).to_le_bytes());
    assert_eq!(
        bytes[4..12],
        plain[4..12],
        "request id and response to are kept"
    );
    assert_eq!(bytes[16..20], 2013i32.to_le_bytes());
    assert_eq!(bytes[20..24], size_of(&plain[16..]).to_le_bytes());
    let inner = snap::raw::Decoder::new()
        .decompress_vec(&bytes[25..])
        .expect("raw snappy");
    assert_eq!(inner, plain[16..]);
}

#[test]
fn frames_compressed_by_the_codec_libraries_directly_decode() {
    let plain = sample_reply().to_bytes(None, MAX).expect("encodes");
    let original = &plain[16..];
    let cases = [
        (CompressorId::Noop, original.to_vec()),
        (CompressorId::Snappy, snappy(original)),
        (CompressorId::Zlib, zlib(original)),
        (
            CompressorId::Zstd,
            zstd::bulk::compress(original, 1).expect("in memory"),
        ),
    ];
    for (id, payload) in cases {
        let bytes = compressed_frame(1, size_of(original), id.as_u8(), &payload);
        let decoded = decode(&bytes).expect("decodes");
        assert_eq!(decoded.compressed_with, Some(id));
        assert_eq!(decoded.body, sample_reply().body);
    }
}

#[test]
fn checksum_inside_compression_covers_the_uncompressed_message() {
    let mut message = sample_msg();
    if let Body::Msg(msg) = &mut message.body {
        msg.flags.insert(MsgFlags::CHECKSUM_PRESENT);
    }
    let plain = message.to_bytes(None, MAX).expect("encodes");
    for compressor in ALL {
        let bytes = message.to_bytes(Some(&compressor), MAX).expect("encodes");
        let decoded = decode(&bytes).expect("checksum verifies");
        assert_eq!(decoded.body, message.body);
    }
    // Same payload compressed by hand, but with a corrupted checksum: must be rejected.
    let mut corrupted = plain[16..].to_vec();
    let last = corrupted.len() - 1;
    corrupted[last] ^= 0xFF;
    let bytes = compressed_frame(2013, size_of(&corrupted), 1, &snappy(&corrupted));
    assert!(matches!(
        decode(&bytes),
        Err(WireError::ChecksumMismatch { .. })
    ));
}

#[test]
fn compressor_names_ids_and_levels() {
    assert_eq!(
        Compressor::from_name("snappy", Some(3)),
        Some(Compressor::Snappy)
    );
    assert_eq!(
        Compressor::from_name("ZLIB", Some(3)),
        Some(Compressor::Zlib { level: Some(3) })
    );
    assert_eq!(
        Compressor::from_name("zstd", Some(3)),
        Some(Compressor::Zstd { level: None })
    );
    assert_eq!(Compressor::from_name("snoopy", None), None);
    for compressor in ALL {
        assert_eq!(
            Compressor::from_name(compressor.name(), None).map(|c| c.id()),
            Some(compressor.id())
        );
        assert_eq!(
            CompressorId::from_u8(compressor.id().as_u8()),
            Ok(compressor.id())
        );
    }
    assert_eq!(CompressorId::from_u8(0), Ok(CompressorId::Noop));
    assert_eq!(
        CompressorId::from_u8(4),
        Err(WireError::UnknownCompressor(4))
    );
    for level in [-1, 0, 1, 9] {
        let compressor = Compressor::Zlib { level: Some(level) };
        let bytes = sample_msg()
            .to_bytes(Some(&compressor), MAX)
            .expect("valid level");
        assert_eq!(decode(&bytes).expect("decodes").body, sample_msg().body);
    }
}

#[test]
fn invalid_zlib_level_is_a_compression_error_and_leaves_out_untouched() {
    let mut out = b"keep".to_vec();
    let error = sample_msg()
        .encode(Some(&Compressor::Zlib { level: Some(10) }), MAX, &mut out)
        .expect_err("level 10 is invalid");
    assert!(matches!(error, WireError::Compression(_)));
    assert!(!error.is_protocol());
    assert_eq!(out, b"keep");
}

#[test]
fn unknown_compressor_id_is_rejected() {
    let bytes = compressed_frame(2013, 5, 9, &[0; 5]);
    assert_eq!(decode(&bytes), Err(WireError::UnknownCompressor(9)));
}

#[test]
fn nested_compression_and_unknown_original_opcode_are_rejected() {
    let bytes = compressed_frame(2012, 5, 0, &[0; 5]);
    assert_eq!(decode(&bytes), Err(WireError::NestedCompression));
    let bytes = compressed_frame(2010, 5, 0, &[0; 5]);
    assert_eq!(decode(&bytes), Err(WireError::UnknownOpCode(2010)));
}

#[test]
fn garbage_payloads_are_decompression_errors() {
    let garbage = [0xFFu8; 40];
    for id in [1u8, 2, 3] {
        let error = decode(&compressed_frame(2013, 64, id, &garbage)).expect_err("garbage");
        assert!(
            matches!(error, WireError::Decompression(_)),
            "id {id}: {error:?}"
        );
        assert!(error.is_protocol());
    }
}

#[test]
fn declared_size_must_match_the_decompressed_size() {
    let plain = sample_msg().to_bytes(None, MAX).expect("encodes");
    let original = &plain[16..];
    let real = size_of(original);
    let payloads = [
        (0u8, original.to_vec()),
        (1, snappy(original)),
        (2, zlib(original)),
        (3, zstd::bulk::compress(original, 1).expect("in memory")),
    ];
    for (id, payload) in payloads {
        for declared in [real - 1, real + 1] {
            let error =
                decode(&compressed_frame(2013, declared, id, &payload)).expect_err("wrong size");
            assert!(
                matches!(
                    error,
                    WireError::UncompressedSizeMismatch { .. } | WireError::Decompression(_)
                ),
                "id {id}, declared {declared}: {error:?}"
            );
        }
    }
}

#[test]
fn decompression_bomb_stops_at_the_declared_size() {
    // 20 MB of zeros compress to a few KB; declaring a small size must not inflate it all.
    let bomb = vec![0u8; 20_000_000];
    for (id, payload) in [
        (2u8, zlib(&bomb)),
        (3, zstd::bulk::compress(&bomb, 1).expect("in memory")),
        (1, snappy(&bomb)),
    ] {
        assert!(payload.len() < 1_000_000);
        let error = decode(&compressed_frame(2013, 1000, id, &payload)).expect_err("bomb");
        assert!(
            matches!(
                error,
                WireError::UncompressedSizeMismatch { declared: 1000, .. }
                    | WireError::Decompression(_)
            ),
            "id {id}: {error:?}"
        );
    }
}

#[test]
fn declared_size_beyond_the_limit_is_rejected_before_decompressing() {
    let bytes = compressed_frame(2013, i32::MAX, 2, &zlib(b"tiny"));
    assert!(matches!(decode(&bytes), Err(WireError::TooLarge { .. })));
    let bytes = compressed_frame(2013, 1000, 2, &zlib(&[0; 1000]));
    assert!(bytes.len() < 1010);
    assert_eq!(
        Message::decode(&bytes, 1010),
        Err(WireError::TooLarge {
            size: 1016,
            max: 1010
        })
    );
    let bytes = compressed_frame(2013, -1, 0, &[]);
    assert!(matches!(
        decode(&bytes),
        Err(WireError::InvalidLength { .. })
    ));
}

#[test]
fn zlib_trailing_bytes_are_rejected() {
    let plain = sample_msg().to_bytes(None, MAX).expect("encodes");
    let mut payload = zlib(&plain[16..]);
    payload.extend_from_slice(b"junk");
    let error =
        decode(&compressed_frame(2013, size_of(&plain[16..]), 2, &payload)).expect_err("junk");
    assert!(
        matches!(error, WireError::TrailingBytes { count: 4, .. }),
        "{error:?}"
    );
}

#[test]
fn compressed_encoding_respects_the_size_limit() {
    let message = sample_msg();
    let limit = message.encoded_len() - 1;
    let error = message
        .to_bytes(Some(&Compressor::Snappy), limit)
        .expect_err("over limit");
    assert!(error.is_size_limit());
}

fn zstd_bytes(bytes: &[u8]) -> Vec<u8> {
    zstd::bulk::compress(bytes, 0).expect("in memory")
}

/// The largest uncompressedSize the default maximum message size lets a peer claim (48 MB).
const CLAIMED: usize = MAX - crate::HEADER_LEN;

/// Nothing in `out` may come from the claim: only from bytes really decompressed.
const SMALL: usize = 1 << 20;

/// A 30-byte raw snappy payload whose length header claims [`CLAIMED`] bytes.
fn snappy_claiming_48_mb() -> Vec<u8> {
    let mut payload = Vec::new();
    let mut length = CLAIMED;
    while length >= 0x80 {
        payload.push(u8::try_from(length & 0x7f).expect("7 bits") | 0x80);
        length >>= 7;
    }
    payload.push(u8::try_from(length).expect("below 0x80"));
    // Copies with a 2-byte offset: the densest element snappy has.
    while payload.len() < 30 {
        payload.extend_from_slice(&[0xfe, 0x01, 0x00]);
    }
    payload.truncate(30);
    payload
}

#[test]
fn a_tiny_payload_claiming_48_mb_is_refused_without_allocating_it() {
    let cases = [
        (CompressorId::Snappy, snappy_claiming_48_mb()),
        (CompressorId::Zlib, zlib(b"tiny")),
        (CompressorId::Zstd, zstd_bytes(b"tiny")),
    ];
    for (id, payload) in cases {
        assert!(payload.len() <= 30, "{id:?}: {} bytes", payload.len());
        let mut out = Vec::new();
        let error = crate::compression::decompress(id, &payload, CLAIMED, &mut out)
            .expect_err("cannot expand to the claim");
        assert!(error.is_protocol(), "{id:?}: {error:?}");
        assert!(
            out.capacity() < SMALL,
            "{id:?} allocated {} bytes from the claim",
            out.capacity()
        );
    }
}

#[test]
fn a_tiny_frame_claiming_48_mb_is_a_decode_error() {
    let claimed = i32::try_from(CLAIMED).expect("fits");
    for (id, payload) in [
        (1, snappy_claiming_48_mb()),
        (2, zlib(b"tiny")),
        (3, zstd_bytes(b"tiny")),
    ] {
        let error = decode(&compressed_frame(2013, claimed, id, &payload)).expect_err("claim");
        assert!(error.is_protocol(), "compressor {id}: {error:?}");
    }
}

#[test]
fn large_payloads_decompress_across_many_buffer_growths() {
    // Three megabytes of zeros compress to a few kilobytes, so the output buffer grows many
    // times from its first small chunk.
    let plain = vec![0u8; 3 << 20];
    for (id, payload) in [
        (CompressorId::Zlib, zlib(&plain)),
        (CompressorId::Zstd, zstd_bytes(&plain)),
        (CompressorId::Snappy, snappy(&plain)),
    ] {
        let mut out = b"header".to_vec();
        crate::compression::decompress(id, &payload, plain.len(), &mut out).expect("decompresses");
        assert_eq!(out.get(..6), Some(&b"header"[..]), "{id:?}");
        assert!(out.get(6..) == Some(&plain[..]), "{id:?}");
    }
}

#[test]
fn over_long_streaming_payloads_are_refused_at_the_declared_size() {
    let plain = vec![7u8; 100_000];
    for (id, payload) in [
        (CompressorId::Zlib, zlib(&plain)),
        (CompressorId::Zstd, zstd_bytes(&plain)),
    ] {
        let mut out = Vec::new();
        let error = crate::compression::decompress(id, &payload, 50_000, &mut out)
            .expect_err("longer than declared");
        assert!(
            matches!(
                error,
                WireError::UncompressedSizeMismatch {
                    declared: 50_000,
                    ..
                }
            ),
            "{id:?}: {error:?}"
        );
        assert!(out.len() <= 50_001, "{id:?} produced {}", out.len());
    }
}
