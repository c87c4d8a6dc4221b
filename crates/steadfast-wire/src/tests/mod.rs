//! Unit tests. Frames for error cases are built byte by byte here, independently of the
//! encoder, so that a bug shared by encoder and decoder cannot hide.

// The codec tests compress with the codec libraries themselves, so they need every codec.
mod codec_features;
#[cfg(all(feature = "snappy", feature = "zlib", feature = "zstd"))]
mod compression;
mod decoder;
mod errors;
mod roundtrip;

use bson::{RawDocumentBuf, rawdoc};

use crate::{Body, DEFAULT_MAX_MESSAGE_SIZE, Message, OpMsg, OpQuery, OpReply, WireError};

const MAX: usize = DEFAULT_MAX_MESSAGE_SIZE;

/// A frame with a correct header around `after_header`.
fn frame(request_id: i32, response_to: i32, op_code: i32, after_header: &[u8]) -> Vec<u8> {
    let length = i32::try_from(16 + after_header.len()).expect("test frame fits i32");
    let mut out = Vec::new();
    for field in [length, request_id, response_to, op_code] {
        out.extend_from_slice(&field.to_le_bytes());
    }
    out.extend_from_slice(after_header);
    out
}

/// OP_MSG bytes after the header: flags then the given raw sections.
fn msg_payload(flags: u32, sections: &[&[u8]]) -> Vec<u8> {
    let mut out = flags.to_le_bytes().to_vec();
    for section in sections {
        out.extend_from_slice(section);
    }
    out
}

/// A kind-0 section.
fn body_section(document: &RawDocumentBuf) -> Vec<u8> {
    let mut out = vec![0];
    out.extend_from_slice(document.as_bytes());
    out
}

/// A kind-1 section with a correct size field.
fn sequence_section(identifier: &[u8], documents: &[&RawDocumentBuf]) -> Vec<u8> {
    let mut payload = identifier.to_vec();
    payload.push(0);
    for document in documents {
        payload.extend_from_slice(document.as_bytes());
    }
    let size = i32::try_from(4 + payload.len()).expect("fits");
    let mut out = vec![1];
    out.extend_from_slice(&size.to_le_bytes());
    out.extend_from_slice(&payload);
    out
}

fn ping() -> RawDocumentBuf {
    rawdoc! { "ping": 1, "$db": "admin" }
}

fn sample_docs(count: i32) -> Vec<RawDocumentBuf> {
    (0..count)
        .map(|i| rawdoc! { "_id": i, "name": format!("document {i}"), "nested": { "list": [1, 2.5, "x"] } })
        .collect()
}

fn sample_msg() -> Message {
    let insert = OpMsg::new(rawdoc! { "insert": "coll", "$db": "db", "ordered": true })
        .with_sequence(crate::DocumentSequence::new("documents", sample_docs(3)));
    Message::new(7, 0, insert)
}

fn sample_query() -> Message {
    let mut query = OpQuery::command("admin", rawdoc! { "isMaster": 1, "helloOk": true });
    query.return_fields_selector = Some(rawdoc! { "ok": 1 });
    Message::new(8, 0, query)
}

fn sample_reply() -> Message {
    let mut reply = OpReply::new(sample_docs(2));
    reply.cursor_id = 42;
    reply.starting_from = 3;
    reply.response_flags = 8;
    Message::new(9, 8, reply)
}

fn decode(frame: &[u8]) -> Result<Message, WireError> {
    Message::decode(frame, MAX)
}

fn msg_of(message: &Message) -> &OpMsg {
    match &message.body {
        Body::Msg(msg) => msg,
        other => panic!("expected OP_MSG, got {other:?}"),
    }
}
