//! Fuzzes the wire decoder: arbitrary bytes must never panic, and whatever decodes must
//! re-encode to a frame that decodes to the same message.
//!
//! Run with `cargo +nightly fuzz run decode`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use steadfast_wire::{BsonValidation, FrameDecoder, Message, frame_length};

/// Small enough that the fuzzer explores limits instead of allocating.
const MAX: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let _ = frame_length(data, MAX);
    let _ = Message::decode_with(data, MAX, BsonValidation::Framing);

    // The stream decoder, fed in two uneven pieces, must agree with itself on every frame.
    let mut decoder = FrameDecoder::new(MAX);
    let split = data.len() / 3;
    decoder.extend(&data[..split]);
    while let Ok(Some(_)) = decoder.next_message() {}
    decoder.extend(&data[split..]);
    while let Ok(Some(_)) = decoder.next_message() {}

    if let Ok(message) = Message::decode(data, MAX) {
        let bytes = message
            .to_bytes(None, MAX)
            .expect("a decoded message re-encodes");
        let mut expected = message;
        expected.compressed_with = None;
        assert_eq!(Message::decode(&bytes, MAX), Ok(expected));
    }
});
