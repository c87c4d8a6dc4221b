use bson::{RawDocumentBuf, rawdoc};

use super::*;
use crate::{BsonValidation, DocumentSequence, MAX_BSON_NESTING_DEPTH, MsgFlags, frame_length};

fn ping_frame_payload() -> Vec<u8> {
    msg_payload(0, &[&body_section(&ping())])
}

/// A syntactically framed document whose only element has the undefined type byte 0x42.
fn bad_element_type_doc() -> Vec<u8> {
    let mut doc = vec![0, 0, 0, 0, 0x42, b'k', 0, 0];
    let len = u8::try_from(doc.len()).expect("small");
    doc[0] = len;
    doc
}

/// `{ "s": <string with invalid UTF-8> }`, correctly framed.
fn bad_utf8_doc() -> Vec<u8> {
    let mut doc = vec![0, 0, 0, 0, 0x02, b's', 0, 3, 0, 0, 0, 0xFF, 0xFE, 0, 0];
    let len = u8::try_from(doc.len()).expect("small");
    doc[0] = len;
    doc
}

/// A document nested `depth` levels deep (the outer document is level 1).
fn nested(depth: usize) -> RawDocumentBuf {
    let mut doc = rawdoc! {};
    for _ in 1..depth {
        doc = rawdoc! { "a": doc };
    }
    doc
}

#[test]
fn truncated_frames_are_reported() {
    let bytes = frame(1, 0, 2013, &ping_frame_payload());
    for cut in [0, 3, 10, 15, 16, 20, bytes.len() - 1] {
        let error = decode(&bytes[..cut]).expect_err("truncated");
        assert!(
            matches!(error, WireError::Truncated { .. }),
            "cut {cut}: {error:?}"
        );
        assert!(error.is_protocol());
    }
}

#[test]
fn frame_longer_than_its_length_is_rejected() {
    let mut bytes = frame(1, 0, 2013, &ping_frame_payload());
    bytes.push(0);
    assert_eq!(
        decode(&bytes),
        Err(WireError::TrailingBytes {
            what: "frame",
            count: 1
        })
    );
}

#[test]
fn lengths_below_the_header_or_negative_are_invalid() {
    for declared in [0i32, 15, -1, i32::MIN] {
        let mut bytes = frame(1, 0, 2013, &ping_frame_payload());
        bytes[..4].copy_from_slice(&declared.to_le_bytes());
        let expected = Err(WireError::InvalidLength {
            what: "messageLength",
            length: i64::from(declared),
        });
        assert_eq!(decode(&bytes), expected);
        assert_eq!(frame_length(&bytes, MAX), expected.map(|_| None));
    }
}

#[test]
fn oversized_frames_are_rejected() {
    let bytes = frame(1, 0, 2013, &ping_frame_payload());
    let error = Message::decode(&bytes, bytes.len() - 1).expect_err("too large");
    assert_eq!(
        error,
        WireError::TooLarge {
            size: bytes.len(),
            max: bytes.len() - 1
        }
    );
    assert!(error.is_size_limit() && !error.is_protocol());
    assert!(matches!(
        frame_length(&i32::MAX.to_le_bytes(), MAX),
        Err(WireError::TooLarge { .. })
    ));
}

#[test]
fn unknown_opcodes_are_rejected() {
    for op_code in [0, 2, 2001, 2005, 2014, -2013] {
        let bytes = frame(1, 0, op_code, &ping_frame_payload());
        assert_eq!(decode(&bytes), Err(WireError::UnknownOpCode(op_code)));
    }
}

#[test]
fn unknown_section_kind_is_rejected() {
    let mut section = body_section(&ping());
    section[0] = 2;
    let bytes = frame(1, 0, 2013, &msg_payload(0, &[&section]));
    assert_eq!(decode(&bytes), Err(WireError::InvalidSectionKind(2)));
}

#[test]
fn body_must_appear_exactly_once() {
    let empty = frame(1, 0, 2013, &msg_payload(0, &[]));
    assert_eq!(decode(&empty), Err(WireError::MissingBody));
    let only_sequence = frame(
        1,
        0,
        2013,
        &msg_payload(0, &[&sequence_section(b"documents", &[&ping()])]),
    );
    assert_eq!(decode(&only_sequence), Err(WireError::MissingBody));
    let body = body_section(&ping());
    let twice = frame(1, 0, 2013, &msg_payload(0, &[&body, &body]));
    assert_eq!(decode(&twice), Err(WireError::DuplicateBody));
}

#[test]
fn duplicate_sequence_identifiers_are_rejected() {
    let sequence = sequence_section(b"documents", &[&ping()]);
    let bytes = frame(
        1,
        0,
        2013,
        &msg_payload(0, &[&body_section(&ping()), &sequence, &sequence]),
    );
    assert_eq!(
        decode(&bytes),
        Err(WireError::DuplicateSequenceIdentifier(
            "documents".to_owned()
        ))
    );
}

#[test]
fn inconsistent_sequence_sizes_are_rejected() {
    let good = sequence_section(b"documents", &[&ping()]);
    for size in [-1i32, 0, 3, 4] {
        let mut section = good.clone();
        section[1..5].copy_from_slice(&size.to_le_bytes());
        let bytes = frame(
            1,
            0,
            2013,
            &msg_payload(0, &[&body_section(&ping()), &section]),
        );
        assert_eq!(
            decode(&bytes),
            Err(WireError::InvalidLength {
                what: "document sequence size",
                length: i64::from(size)
            }),
            "size {size}"
        );
    }
    // Size running past the end of the message.
    let mut section = good.clone();
    let too_big = i32::try_from(good.len() + 10).expect("small");
    section[1..5].copy_from_slice(&too_big.to_le_bytes());
    let bytes = frame(
        1,
        0,
        2013,
        &msg_payload(0, &[&body_section(&ping()), &section]),
    );
    assert!(matches!(
        decode(&bytes),
        Err(WireError::InvalidLength { .. })
    ));
    // Size cutting the last document short.
    let mut section = good.clone();
    let too_small = i32::try_from(good.len() - 1 - 2).expect("small");
    section[1..5].copy_from_slice(&too_small.to_le_bytes());
    let bytes = frame(
        1,
        0,
        2013,
        &msg_payload(0, &[&section, &body_section(&ping())]),
    );
    let error = decode(&bytes).expect_err("document overruns sequence");
    assert!(
        matches!(
            error,
            WireError::Truncated {
                what: "document sequence",
                ..
            }
        ),
        "{error:?}"
    );
}

#[test]
fn sequence_identifier_must_be_a_utf8_cstring() {
    // No NUL anywhere in the sequence payload.
    let mut section = vec![1];
    section.extend_from_slice(&8i32.to_le_bytes());
    section.extend_from_slice(b"abcd");
    let bytes = frame(
        1,
        0,
        2013,
        &msg_payload(0, &[&body_section(&ping()), &section]),
    );
    assert_eq!(
        decode(&bytes),
        Err(WireError::InvalidCString("document sequence identifier"))
    );
    let section = sequence_section(b"\xFF\xFE", &[]);
    let bytes = frame(
        1,
        0,
        2013,
        &msg_payload(0, &[&body_section(&ping()), &section]),
    );
    assert_eq!(
        decode(&bytes),
        Err(WireError::InvalidCString("document sequence identifier"))
    );
}

#[test]
fn unknown_required_flag_bits_are_rejected() {
    for bit in 2..16 {
        let flags = 1u32 << bit;
        let bytes = frame(1, 0, 2013, &msg_payload(flags, &[&body_section(&ping())]));
        assert_eq!(
            decode(&bytes),
            Err(WireError::UnsupportedFlags(flags)),
            "bit {bit}"
        );
        assert_eq!(
            MsgFlags::from_bits(flags),
            Err(WireError::UnsupportedFlags(flags))
        );
    }
}

#[test]
fn bad_checksums_are_rejected() {
    let message = Message::new(
        1,
        0,
        OpMsg::new(ping()).with_flags(MsgFlags::CHECKSUM_PRESENT),
    );
    let good = message.to_bytes(None, MAX).expect("encodes");
    for index in [4, 20, 25, good.len() - 5, good.len() - 1] {
        let mut bytes = good.clone();
        bytes[index] ^= 0x01;
        let error = decode(&bytes).expect_err("corrupted");
        assert!(
            matches!(error, WireError::ChecksumMismatch { .. }),
            "byte {index}: {error:?}"
        );
    }
    // The flag is set but there is no room for the checksum after the flags.
    let bytes = frame(1, 0, 2013, &1u32.to_le_bytes());
    assert!(matches!(
        decode(&bytes),
        Err(WireError::Truncated {
            what: "OP_MSG checksum",
            ..
        })
    ));
}

#[test]
fn malformed_bson_is_rejected() {
    let cases: Vec<Vec<u8>> = vec![
        bad_element_type_doc(),
        bad_utf8_doc(),
        // Nested document with a bad element inside.
        {
            let inner = bad_element_type_doc();
            let mut doc = vec![0, 0, 0, 0, 0x03, b'n', 0];
            doc.extend_from_slice(&inner);
            doc.push(0);
            let len = u8::try_from(doc.len()).expect("small");
            doc[0] = len;
            doc
        },
        // Missing the final NUL.
        vec![5, 0, 0, 0, 1],
    ];
    for doc in cases {
        let mut section = vec![0];
        section.extend_from_slice(&doc);
        let bytes = frame(1, 0, 2013, &msg_payload(0, &[&section]));
        let error = decode(&bytes).expect_err("malformed BSON");
        assert!(
            matches!(error, WireError::InvalidBson(_)),
            "{doc:?}: {error:?}"
        );
    }
    // Document length below the minimum.
    let bytes = frame(1, 0, 2013, &msg_payload(0, &[&[0, 4, 0, 0, 0]]));
    assert_eq!(
        decode(&bytes),
        Err(WireError::InvalidLength {
            what: "BSON document",
            length: 4
        })
    );
}

#[test]
fn framing_validation_defers_element_errors_but_checks_frames() {
    let mut section = vec![0];
    section.extend_from_slice(&bad_element_type_doc());
    let bytes = frame(1, 0, 2013, &msg_payload(0, &[&section]));
    let decoded =
        Message::decode_with(&bytes, MAX, BsonValidation::Framing).expect("frame is fine");
    assert!(
        msg_of(&decoded)
            .body
            .iter()
            .next()
            .expect("one element")
            .is_err()
    );
    let bytes = frame(1, 0, 2013, &msg_payload(0, &[&[0, 5, 0, 0, 0, 1]]));
    assert!(matches!(
        Message::decode_with(&bytes, MAX, BsonValidation::Framing),
        Err(WireError::InvalidBson(_))
    ));
}

#[test]
fn nesting_is_limited() {
    let deepest = frame(
        1,
        0,
        2013,
        &msg_payload(0, &[&body_section(&nested(MAX_BSON_NESTING_DEPTH))]),
    );
    decode(&deepest).expect("the limit itself is accepted");
    let too_deep = frame(
        1,
        0,
        2013,
        &msg_payload(0, &[&body_section(&nested(MAX_BSON_NESTING_DEPTH + 1))]),
    );
    assert!(matches!(decode(&too_deep), Err(WireError::InvalidBson(_))));
}

#[test]
fn op_query_errors() {
    let good = sample_query().to_bytes(None, MAX).expect("encodes");
    let mut extra = good[16..].to_vec();
    extra.push(7);
    assert_eq!(
        decode(&frame(8, 0, 2004, &extra)),
        Err(WireError::TrailingBytes {
            what: "OP_QUERY",
            count: 1
        })
    );
    let no_nul = [0u8, 0, 0, 0, b'a', b'b'];
    assert_eq!(
        decode(&frame(8, 0, 2004, &no_nul)),
        Err(WireError::InvalidCString("fullCollectionName"))
    );
    let no_query = [0u8, 0, 0, 0, b'a', 0, 0, 0, 0, 0, 0, 0, 0, 0];
    assert!(matches!(
        decode(&frame(8, 0, 2004, &no_query)),
        Err(WireError::Truncated { .. })
    ));
}

#[test]
fn op_reply_errors() {
    let good = sample_reply().to_bytes(None, MAX).expect("encodes");
    let mut wrong_count = good.clone();
    wrong_count[32..36].copy_from_slice(&3i32.to_le_bytes());
    assert_eq!(
        decode(&wrong_count),
        Err(WireError::DocumentCountMismatch {
            declared: 3,
            actual: 2
        })
    );
    let mut negative = good.clone();
    negative[32..36].copy_from_slice(&(-1i32).to_le_bytes());
    assert_eq!(
        decode(&negative),
        Err(WireError::InvalidLength {
            what: "numberReturned",
            length: -1
        })
    );
    let mut huge = good;
    huge[32..36].copy_from_slice(&i32::MAX.to_le_bytes());
    assert!(matches!(
        decode(&huge),
        Err(WireError::DocumentCountMismatch { .. })
    ));
}

#[test]
fn encode_errors_leave_out_untouched() {
    let mut out = b"keep".to_vec();
    let message = sample_msg();
    let error = message
        .encode(None, message.encoded_len() - 1, &mut out)
        .expect_err("over limit");
    assert_eq!(
        error,
        WireError::TooLarge {
            size: message.encoded_len(),
            max: message.encoded_len() - 1
        }
    );
    message
        .encode(None, message.encoded_len(), &mut out)
        .expect("at the limit");
    out.truncate(4);

    let bad_identifier = Message::new(
        1,
        0,
        OpMsg::new(ping()).with_sequence(DocumentSequence::new("doc\0uments", vec![ping()])),
    );
    assert_eq!(
        bad_identifier.encode(None, MAX, &mut out),
        Err(WireError::InvalidCString("document sequence identifier"))
    );
    let mut query = OpQuery::command("admin", ping());
    query.full_collection_name = "ad\0min.$cmd".to_owned();
    assert_eq!(
        Message::new(1, 0, query).encode(None, MAX, &mut out),
        Err(WireError::InvalidCString("fullCollectionName"))
    );
    assert_eq!(out, b"keep");
}

#[test]
fn error_messages_are_informative() {
    let error = WireError::TooLarge { size: 10, max: 5 };
    assert_eq!(
        error.to_string(),
        "message of 10 bytes exceeds the maximum of 5 bytes"
    );
    let error = WireError::ChecksumMismatch {
        expected: 1,
        actual: 2,
    };
    assert!(error.to_string().contains("0x00000001"));
}

/// An OP_MSG frame with a `ping` body followed by `count` empty sequences named `s0`, `s1`...
fn msg_with_empty_sequences(count: usize) -> Vec<u8> {
    let mut payload = msg_payload(0, &[&body_section(&ping())]);
    for index in 0..count {
        payload.extend_from_slice(&sequence_section(format!("s{index}").as_bytes(), &[]));
    }
    frame(1, 0, 2013, &payload)
}

#[test]
fn sequences_are_capped_at_the_documented_limit() {
    let at_cap = decode(&msg_with_empty_sequences(crate::MAX_DOCUMENT_SEQUENCES)).expect("decodes");
    let Body::Msg(msg) = at_cap.body else {
        panic!("OP_MSG expected");
    };
    assert_eq!(msg.sequences.len(), crate::MAX_DOCUMENT_SEQUENCES);
    assert_eq!(
        decode(&msg_with_empty_sequences(crate::MAX_DOCUMENT_SEQUENCES + 1)),
        Err(WireError::TooManyDocumentSequences {
            max: crate::MAX_DOCUMENT_SEQUENCES
        })
    );
}

#[test]
fn forty_thousand_empty_sequences_are_refused_by_the_cap() {
    // Before the cap every identifier was compared with all earlier ones: 40,000 sequences
    // took seconds. Now the decoder stops at the cap, whatever follows.
    assert_eq!(
        decode(&msg_with_empty_sequences(40_000)),
        Err(WireError::TooManyDocumentSequences {
            max: crate::MAX_DOCUMENT_SEQUENCES
        })
    );
}

/// An OP_MSG frame with a `ping` body and one sequence of `count` empty documents.
fn msg_with_empty_documents(count: usize) -> Vec<u8> {
    let empty = rawdoc! {};
    let documents = vec![&empty; count];
    let payload = msg_payload(
        0,
        &[
            &body_section(&ping()),
            &sequence_section(b"documents", &documents),
        ],
    );
    frame(1, 0, 2013, &payload)
}

#[test]
fn sequence_documents_are_capped_before_each_is_allocated() {
    let at_cap = decode(&msg_with_empty_documents(crate::MAX_SEQUENCE_DOCUMENTS)).expect("decodes");
    let Body::Msg(msg) = at_cap.body else {
        panic!("OP_MSG expected");
    };
    assert_eq!(
        msg.sequences[0].documents.len(),
        crate::MAX_SEQUENCE_DOCUMENTS
    );
    assert_eq!(
        decode(&msg_with_empty_documents(crate::MAX_SEQUENCE_DOCUMENTS + 1)),
        Err(WireError::TooManySequenceDocuments {
            max: crate::MAX_SEQUENCE_DOCUMENTS
        })
    );
}
