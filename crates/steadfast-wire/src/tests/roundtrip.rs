use bson::rawdoc;

use super::*;
use crate::{
    DocumentSequence, HEADER_LEN, MessageHeader, MsgFlags, OpCode, frame_length,
    is_uncompressible_command,
};

fn round_trip(message: &Message) -> Vec<u8> {
    let bytes = message.to_bytes(None, MAX).expect("encodes");
    assert_eq!(bytes.len(), message.encoded_len());
    assert_eq!(frame_length(&bytes, MAX), Ok(Some(bytes.len())));
    let decoded = decode(&bytes).expect("decodes");
    assert_eq!(&decoded, message);
    bytes
}

#[test]
fn op_msg_body_only_has_the_documented_layout() {
    let body = ping();
    let message = Message::new(0x0102_0304, 0x0A0B_0C0D, OpMsg::new(body.clone()));
    let bytes = round_trip(&message);
    let expected = frame(
        0x0102_0304,
        0x0A0B_0C0D,
        2013,
        &msg_payload(0, &[&body_section(&body)]),
    );
    assert_eq!(bytes, expected);
}

#[test]
fn op_msg_with_sequences_has_the_documented_layout() {
    let docs = sample_docs(2);
    let updates = sample_docs(1);
    let msg = OpMsg::new(ping())
        .with_sequence(DocumentSequence::new("documents", docs.clone()))
        .with_sequence(DocumentSequence::new("updates", updates.clone()));
    let message = Message::new(1, 0, msg);
    let bytes = round_trip(&message);
    let expected = frame(
        1,
        0,
        2013,
        &msg_payload(
            0,
            &[
                &body_section(&ping()),
                &sequence_section(b"documents", &[&docs[0], &docs[1]]),
                &sequence_section(b"updates", &[&updates[0]]),
            ],
        ),
    );
    assert_eq!(bytes, expected);
}

#[test]
fn op_msg_sections_in_any_order_and_empty_sequences_decode() {
    let docs = sample_docs(2);
    let payload = msg_payload(
        0,
        &[
            &sequence_section(b"documents", &[&docs[0], &docs[1]]),
            &sequence_section(b"empty", &[]),
            &body_section(&ping()),
        ],
    );
    let decoded = decode(&frame(3, 0, 2013, &payload)).expect("decodes");
    let msg = msg_of(&decoded);
    assert_eq!(msg.body, ping());
    assert_eq!(msg.sequences.len(), 2);
    assert_eq!(msg.sequences[0].identifier, "documents");
    assert_eq!(msg.sequences[0].documents, docs);
    assert_eq!(msg.sequences[1].identifier, "empty");
    assert!(msg.sequences[1].documents.is_empty());
}

#[test]
fn op_msg_flags_round_trip() {
    for flags in [
        MsgFlags::MORE_TO_COME,
        MsgFlags::EXHAUST_ALLOWED,
        MsgFlags::MORE_TO_COME | MsgFlags::EXHAUST_ALLOWED,
    ] {
        let message = Message::new(5, 4, OpMsg::new(ping()).with_flags(flags));
        let bytes = round_trip(&message);
        assert_eq!(bytes[16..20], flags.bits().to_le_bytes());
        let decoded = decode(&bytes).expect("decodes");
        assert_eq!(
            msg_of(&decoded).more_to_come(),
            flags.contains(MsgFlags::MORE_TO_COME)
        );
        assert_eq!(
            msg_of(&decoded).exhaust_allowed(),
            flags.contains(MsgFlags::EXHAUST_ALLOWED)
        );
    }
}

#[test]
fn checksum_is_crc32c_of_everything_before_it() {
    let mut message = sample_msg();
    if let Body::Msg(msg) = &mut message.body {
        msg.flags.insert(MsgFlags::CHECKSUM_PRESENT);
    }
    let bytes = round_trip(&message);
    let (covered, trailer) = bytes.split_at(bytes.len() - 4);
    assert_eq!(trailer, crc32c::crc32c(covered).to_le_bytes());
    let header = MessageHeader::parse(&bytes).expect("header");
    assert_eq!(usize::try_from(header.message_length), Ok(bytes.len()));
}

#[test]
fn optional_high_flag_bits_are_accepted_and_kept() {
    let payload = msg_payload(1 << 20, &[&body_section(&ping())]);
    let bytes = frame(1, 0, 2013, &payload);
    let decoded = decode(&bytes).expect("unknown optional bits are ignored");
    assert_eq!(msg_of(&decoded).flags.bits(), 1 << 20);
    assert_eq!(decoded.to_bytes(None, MAX).expect("encodes"), bytes);
}

#[test]
fn op_query_round_trips_with_and_without_selector() {
    let with_selector = sample_query();
    let bytes = round_trip(&with_selector);
    let mut expected_body = 0u32.to_le_bytes().to_vec();
    expected_body.extend_from_slice(b"admin.$cmd\0");
    expected_body.extend_from_slice(&0i32.to_le_bytes());
    expected_body.extend_from_slice(&(-1i32).to_le_bytes());
    if let Body::Query(query) = &with_selector.body {
        expected_body.extend_from_slice(query.query.as_bytes());
        expected_body.extend_from_slice(
            query
                .return_fields_selector
                .as_ref()
                .expect("selector")
                .as_bytes(),
        );
    }
    assert_eq!(bytes, frame(8, 0, 2004, &expected_body));

    let without = Message::new(2, 0, OpQuery::command("db", rawdoc! { "hello": 1 }));
    round_trip(&without);
}

#[test]
fn op_reply_round_trips_with_zero_and_many_documents() {
    let bytes = round_trip(&sample_reply());
    let mut expected_body = Vec::new();
    expected_body.extend_from_slice(&8u32.to_le_bytes());
    expected_body.extend_from_slice(&42i64.to_le_bytes());
    expected_body.extend_from_slice(&3i32.to_le_bytes());
    expected_body.extend_from_slice(&2i32.to_le_bytes());
    for doc in sample_docs(2) {
        expected_body.extend_from_slice(doc.as_bytes());
    }
    assert_eq!(bytes, frame(9, 8, 1, &expected_body));

    round_trip(&Message::new(1, 1, OpReply::new(Vec::new())));
}

#[test]
fn encode_appends_after_existing_bytes() {
    let mut out = b"prefix".to_vec();
    sample_msg().encode(None, MAX, &mut out).expect("encodes");
    assert_eq!(&out[..6], b"prefix");
    assert_eq!(decode(&out[6..]).expect("decodes"), sample_msg());
}

#[test]
fn command_name_is_the_first_body_key() {
    assert_eq!(OpMsg::new(ping()).command_name(), Some("ping"));
    assert_eq!(OpMsg::new(rawdoc! {}).command_name(), None);
}

#[test]
fn header_round_trips_and_opcodes_map() {
    let header = MessageHeader {
        message_length: 100,
        request_id: -5,
        response_to: 77,
        op_code: 2013,
    };
    let bytes = header.to_bytes();
    assert_eq!(bytes.len(), HEADER_LEN);
    assert_eq!(MessageHeader::parse(&bytes), Ok(header));
    for code in [
        OpCode::Reply,
        OpCode::Query,
        OpCode::Compressed,
        OpCode::Msg,
    ] {
        assert_eq!(OpCode::from_i32(code.as_i32()), Ok(code));
    }
    assert_eq!(OpCode::Msg.as_i32(), 2013);
    assert_eq!(OpCode::Compressed.as_i32(), 2012);
    assert_eq!(OpCode::Query.as_i32(), 2004);
    assert_eq!(OpCode::Reply.as_i32(), 1);
}

#[test]
fn frame_length_waits_for_four_bytes() {
    assert_eq!(frame_length(&[], MAX), Ok(None));
    assert_eq!(frame_length(&[16, 0, 0], MAX), Ok(None));
    assert_eq!(frame_length(&[16, 0, 0, 0], MAX), Ok(Some(16)));
}

#[test]
fn msg_flags_operations() {
    let mut flags = MsgFlags::empty();
    assert!(!flags.contains(MsgFlags::MORE_TO_COME));
    flags.insert(MsgFlags::MORE_TO_COME);
    flags |= MsgFlags::CHECKSUM_PRESENT;
    assert!(flags.contains(MsgFlags::MORE_TO_COME | MsgFlags::CHECKSUM_PRESENT));
    flags.remove(MsgFlags::MORE_TO_COME);
    assert_eq!(flags, MsgFlags::CHECKSUM_PRESENT);
    assert_eq!(
        flags.with(MsgFlags::EXHAUST_ALLOWED, true).bits(),
        1 | 1 << 16
    );
    assert_eq!(
        flags.with(MsgFlags::CHECKSUM_PRESENT, false),
        MsgFlags::empty()
    );
    assert_eq!(
        MsgFlags::from_bits(0b11 | 1 << 16).map(MsgFlags::bits),
        Ok(0b11 | 1 << 16)
    );
}

#[test]
fn uncompressible_commands_are_the_handshake_and_auth_ones() {
    for name in [
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
    ] {
        assert!(is_uncompressible_command(name), "{name}");
    }
    for name in ["ping", "find", "insert", "Hello", "getMore"] {
        assert!(!is_uncompressible_command(name), "{name}");
    }
}
