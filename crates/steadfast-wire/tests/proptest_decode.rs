//! Property tests: the decoder never panics, whatever the bytes, and valid frames round-trip.
//!
//! Case counts are chosen to keep this binary around a few seconds in a debug build; raise them
//! locally with `PROPTEST_CASES` for a deeper run.

use bson::{RawDocumentBuf, rawdoc};
use proptest::prelude::*;
use steadfast_wire::{
    Body, Compressor, DocumentSequence, FrameDecoder, MAX_DOCUMENT_SEQUENCES, Message, MsgFlags,
    OpMsg, OpQuery, OpReply, WireError,
};

const MAX: usize = 1 << 20;

/// `PROPTEST_CASES` from the environment if set, else `default`.
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

fn document() -> impl Strategy<Value = RawDocumentBuf> {
    (
        any::<i32>(),
        "[a-z]{0,12}",
        any::<bool>(),
        proptest::collection::vec(any::<i64>(), 0..4),
    )
        .prop_map(|(number, text, flag, list)| {
            let mut array = bson::RawArrayBuf::new();
            for item in list {
                array.push(item);
            }
            rawdoc! { "n": number, "s": text, "b": flag, "list": array, "sub": { "x": 1.5 } }
        })
}

fn documents(max: usize) -> impl Strategy<Value = Vec<RawDocumentBuf>> {
    proptest::collection::vec(document(), 0..max)
}

fn op_msg() -> impl Strategy<Value = OpMsg> {
    (
        document(),
        proptest::collection::vec(("[a-z]{1,8}", documents(4)), 0..3),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(body, sequences, checksum, more, exhaust)| {
            let mut msg = OpMsg::new(body);
            for (index, (identifier, docs)) in sequences.into_iter().enumerate() {
                // Identifiers must be unique per message.
                let identifier = format!("{identifier}{index}");
                msg.sequences.push(DocumentSequence::new(identifier, docs));
            }
            msg.flags = MsgFlags::empty()
                .with(MsgFlags::CHECKSUM_PRESENT, checksum)
                .with(MsgFlags::MORE_TO_COME, more)
                .with(MsgFlags::EXHAUST_ALLOWED, exhaust);
            msg
        })
}

fn body() -> impl Strategy<Value = Body> {
    prop_oneof![
        3 => op_msg().prop_map(Body::Msg),
        1 => (document(), proptest::option::of(document()), "[a-z]{1,8}", any::<u32>(), any::<i32>(), any::<i32>())
            .prop_map(|(query, selector, db, flags, skip, limit)| {
                let mut op = OpQuery::command(&db, query);
                op.return_fields_selector = selector;
                op.flags = flags;
                op.number_to_skip = skip;
                op.number_to_return = limit;
                Body::Query(op)
            }),
        1 => (documents(5), any::<u32>(), any::<i64>(), any::<i32>())
            .prop_map(|(docs, flags, cursor, from)| {
                let mut op = OpReply::new(docs);
                op.response_flags = flags;
                op.cursor_id = cursor;
                op.starting_from = from;
                Body::Reply(op)
            }),
    ]
}

fn compressor() -> impl Strategy<Value = Option<Compressor>> {
    prop_oneof![
        Just(None),
        Just(Some(Compressor::Snappy)),
        (-1i32..=9).prop_map(|level| Some(Compressor::Zlib { level: Some(level) })),
        (1i32..=5).prop_map(|level| Some(Compressor::Zstd { level: Some(level) })),
    ]
}

fn message() -> impl Strategy<Value = (Message, Option<Compressor>)> {
    (any::<i32>(), any::<i32>(), body(), compressor()).prop_map(
        |(request_id, response_to, body, compressor)| {
            (Message::new(request_id, response_to, body), compressor)
        },
    )
}

/// One corruption of a valid frame.
#[derive(Debug, Clone)]
enum Mutation {
    FlipBit {
        index: usize,
        bit: u8,
    },
    SetByte {
        index: usize,
        value: u8,
    },
    Truncate {
        keep: usize,
    },
    /// Overwrite a little-endian i32 at some offset: the message length, a section size, a
    /// document length, uncompressedSize...
    SetI32 {
        index: usize,
        value: i32,
    },
    AddToI32 {
        index: usize,
        delta: i32,
    },
    Append {
        bytes: Vec<u8>,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let interesting_i32 = prop_oneof![
        Just(0),
        Just(-1),
        Just(4),
        Just(5),
        Just(16),
        Just(i32::MAX),
        Just(i32::MIN),
        any::<i32>(),
    ];
    prop_oneof![
        (any::<usize>(), 0u8..8).prop_map(|(index, bit)| Mutation::FlipBit { index, bit }),
        (any::<usize>(), any::<u8>()).prop_map(|(index, value)| Mutation::SetByte { index, value }),
        any::<usize>().prop_map(|keep| Mutation::Truncate { keep }),
        (any::<usize>(), interesting_i32)
            .prop_map(|(index, value)| Mutation::SetI32 { index, value }),
        (any::<usize>(), -8i32..8).prop_map(|(index, delta)| Mutation::AddToI32 { index, delta }),
        proptest::collection::vec(any::<u8>(), 1..8).prop_map(|bytes| Mutation::Append { bytes }),
    ]
}

fn apply(frame: &mut Vec<u8>, mutation: &Mutation) {
    let len = frame.len();
    match mutation {
        Mutation::FlipBit { index, bit } => frame[index % len] ^= 1 << bit,
        Mutation::SetByte { index, value } => frame[index % len] = *value,
        Mutation::Truncate { keep } => frame.truncate(keep % len),
        Mutation::SetI32 { index, value } => {
            let at = index % (len - 3);
            frame[at..at + 4].copy_from_slice(&value.to_le_bytes());
        }
        Mutation::AddToI32 { index, delta } => {
            let at = index % (len - 3);
            let old = i32::from_le_bytes(frame[at..at + 4].try_into().expect("4 bytes"));
            frame[at..at + 4].copy_from_slice(&old.wrapping_add(*delta).to_le_bytes());
        }
        Mutation::Append { bytes } => frame.extend_from_slice(bytes),
    }
}

/// Decodes with every entry point; none may panic. Returns the result of `Message::decode`.
fn decode_everywhere(bytes: &[u8]) -> Result<Message, steadfast_wire::WireError> {
    let _ = steadfast_wire::frame_length(bytes, MAX);
    let _ = Message::decode_with(bytes, MAX, steadfast_wire::BsonValidation::Framing);
    let mut decoder = FrameDecoder::new(MAX);
    decoder.extend(bytes);
    for _ in 0..4 {
        if !matches!(decoder.next_message(), Ok(Some(_))) {
            break;
        }
    }
    let result = Message::decode(bytes, MAX);
    if let Ok(message) = &result {
        // Whatever decodes must re-encode, and decode again to the same value.
        let again = message
            .to_bytes(None, MAX)
            .expect("a decoded message re-encodes");
        let mut expected = message.clone();
        expected.compressed_with = None;
        assert_eq!(Message::decode(&again, MAX), Ok(expected));
    }
    result
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(5000), ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = decode_everywhere(&bytes);
    }

    #[test]
    fn random_bytes_behind_a_plausible_header_never_panic(
        op_code in prop_oneof![Just(1i32), Just(2004), Just(2012), Just(2013), any::<i32>()],
        payload in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let mut bytes = Vec::new();
        let length = i32::try_from(16 + payload.len()).expect("small");
        for field in [length, 1, 0, op_code] {
            bytes.extend_from_slice(&field.to_le_bytes());
        }
        bytes.extend_from_slice(&payload);
        let _ = decode_everywhere(&bytes);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(1500), ..ProptestConfig::default() })]

    #[test]
    fn valid_frames_round_trip((message, compressor) in message()) {
        let bytes = message.to_bytes(compressor.as_ref(), MAX).expect("encodes");
        let decoded = Message::decode(&bytes, MAX).expect("decodes");
        prop_assert_eq!(decoded.compressed_with, compressor.map(|c| c.id()));
        prop_assert_eq!(&decoded.body, &message.body);
        prop_assert_eq!(decoded.request_id, message.request_id);
        prop_assert_eq!(decoded.response_to, message.response_to);
        if compressor.is_none() {
            prop_assert_eq!(bytes.len(), message.encoded_len());
        }
    }

    #[test]
    fn mutated_frames_never_panic(
        (message, compressor) in message(),
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        let mut bytes = message.to_bytes(compressor.as_ref(), MAX).expect("encodes");
        for mutation in &mutations {
            if bytes.len() < 4 {
                break;
            }
            apply(&mut bytes, mutation);
        }
        let _ = decode_everywhere(&bytes);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(64), ..ProptestConfig::default() })]

    #[test]
    fn sequence_count_decodes_up_to_the_cap_and_is_refused_past_it(
        count in 0..MAX_DOCUMENT_SEQUENCES * 3,
    ) {
        let mut msg = OpMsg::new(rawdoc! { "insert": "c", "$db": "d" });
        for index in 0..count {
            msg.sequences.push(DocumentSequence::new(format!("s{index}"), Vec::new()));
        }
        let bytes = Message::new(1, 0, msg).to_bytes(None, MAX).expect("encodes");
        let decoded = Message::decode(&bytes, MAX);
        if count <= MAX_DOCUMENT_SEQUENCES {
            let Ok(Message { body: Body::Msg(msg), .. }) = decoded else {
                return Err(TestCaseError::fail(format!("{count} sequences: {decoded:?}")));
            };
            prop_assert_eq!(msg.sequences.len(), count);
        } else {
            prop_assert_eq!(
                decoded.map(|_| ()),
                Err(WireError::TooManyDocumentSequences { max: MAX_DOCUMENT_SEQUENCES })
            );
        }
    }
}
