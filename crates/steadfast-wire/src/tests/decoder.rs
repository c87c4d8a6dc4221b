use super::*;
use crate::{Compressor, FrameDecoder};

fn stream() -> (Vec<u8>, Vec<Message>) {
    let mut messages = vec![sample_msg(), sample_query(), sample_reply()];
    let mut bytes = Vec::new();
    for message in &messages {
        message.encode(None, MAX, &mut bytes).expect("encodes");
    }
    // A compressed frame among them, with whichever codec this build has.
    let codecs = [
        Compressor::Zstd { level: None },
        Compressor::Zlib { level: None },
        Compressor::Snappy,
    ];
    if let Some(codec) = codecs.into_iter().find(Compressor::is_built) {
        let compressed = sample_msg();
        compressed
            .encode(Some(&codec), MAX, &mut bytes)
            .expect("encodes");
        let mut expected = compressed;
        expected.compressed_with = Some(codec.id());
        messages.push(expected);
    }
    (bytes, messages)
}

fn drain(decoder: &mut FrameDecoder) -> Vec<Message> {
    let mut out = Vec::new();
    while let Some(message) = decoder.next_message().expect("valid stream") {
        out.push(message);
    }
    out
}

#[test]
fn byte_by_byte_feeding_yields_every_message() {
    let (bytes, expected) = stream();
    let mut decoder = FrameDecoder::new(MAX);
    let mut decoded = Vec::new();
    for byte in &bytes {
        assert!(decoder.bytes_needed() > 0);
        decoder.extend(std::slice::from_ref(byte));
        decoded.extend(drain(&mut decoder));
    }
    assert_eq!(decoded, expected);
    assert_eq!(decoder.buffered_len(), 0);
    assert_eq!(decoder.bytes_needed(), 4);
}

#[test]
fn one_chunk_with_many_frames_and_odd_chunk_sizes() {
    let (bytes, expected) = stream();
    let mut decoder = FrameDecoder::new(MAX);
    decoder.extend(&bytes);
    assert_eq!(drain(&mut decoder), expected);
    for chunk_size in [3, 7, 64, 1000] {
        let mut decoder = FrameDecoder::new(MAX);
        let mut decoded = Vec::new();
        for chunk in bytes.chunks(chunk_size) {
            decoder.extend(chunk);
            decoded.extend(drain(&mut decoder));
        }
        assert_eq!(decoded, expected, "chunk size {chunk_size}");
    }
}

#[test]
fn read_buffer_accepts_appended_bytes_and_reserves_the_frame() {
    let (bytes, expected) = stream();
    let first_len = sample_msg().encoded_len();
    let mut decoder = FrameDecoder::new(MAX);
    decoder.extend(&bytes[..10]);
    assert_eq!(decoder.bytes_needed(), first_len - 10);
    let buffer = decoder.read_buffer();
    assert!(buffer.capacity() - buffer.len() >= first_len - 10);
    buffer.extend_from_slice(&bytes[10..]);
    assert_eq!(drain(&mut decoder), expected);
}

#[test]
fn invalid_length_prefix_is_sticky() {
    let mut decoder = FrameDecoder::new(MAX);
    decoder.extend(&[1, 0, 0, 0, 9, 9]);
    for _ in 0..3 {
        assert!(matches!(
            decoder.next_message(),
            Err(WireError::InvalidLength { .. })
        ));
    }
    assert_eq!(decoder.bytes_needed(), 0);
}

#[test]
fn a_malformed_frame_is_consumed_and_the_next_one_decodes() {
    let bad = frame(1, 0, 2013, &msg_payload(0, &[]));
    let mut decoder = FrameDecoder::new(MAX);
    decoder.extend(&bad);
    sample_reply()
        .encode(None, MAX, decoder.read_buffer())
        .expect("encodes");
    assert_eq!(decoder.next_message(), Err(WireError::MissingBody));
    assert_eq!(decoder.next_message(), Ok(Some(sample_reply())));
    assert_eq!(decoder.next_message(), Ok(None));
}

#[test]
fn size_limit_applies_and_can_change() {
    let bytes = sample_msg().to_bytes(None, MAX).expect("encodes");
    let mut decoder = FrameDecoder::new(bytes.len() - 1);
    decoder.extend(&bytes);
    assert!(matches!(
        decoder.next_message(),
        Err(WireError::TooLarge { .. })
    ));
    decoder.set_max_message_size(bytes.len());
    assert_eq!(decoder.max_message_size(), bytes.len());
    assert_eq!(decoder.next_message(), Ok(Some(sample_msg())));
}
