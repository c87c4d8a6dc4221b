//! Unit tests of request decoding, handshake bookkeeping and reactions.

use std::net::{Ipv4Addr, SocketAddr};

use bson::{Bson, Document, RawDocumentBuf, doc};
use steadfast_wire::{DocumentSequence, Message, MsgFlags, OpMsg, OpQuery, OpReply};

use super::*;

fn raw(document: &Document) -> RawDocumentBuf {
    RawDocumentBuf::try_from(document).unwrap()
}

fn context() -> ConnectionContext {
    ConnectionContext::new(
        ConnectionId::new(9),
        SocketAddr::from((Ipv4Addr::LOCALHOST, 40_000)),
    )
}

#[test]
fn document_sequences_are_merged_into_the_command() {
    let msg = OpMsg::new(raw(&doc! { "insert": "c", "$db": "app" }))
        .with_sequence(DocumentSequence::new(
            "documents",
            vec![raw(&doc! { "_id": 1 }), raw(&doc! { "_id": 2 })],
        ))
        .with_flags(MsgFlags::EXHAUST_ALLOWED);
    let request = Request::from_message(Message::new(5, 0, msg)).unwrap();
    assert_eq!(request.command_name(), "insert");
    assert_eq!(request.database(), "app");
    assert_eq!(request.kind(), RequestKind::Msg);
    assert_eq!(request.request_id(), 5);
    assert!(request.exhaust_allowed());
    assert!(!request.more_to_come());
    assert_eq!(
        request.command().get_array("documents").unwrap(),
        &vec![
            Bson::Document(doc! { "_id": 1 }),
            Bson::Document(doc! { "_id": 2 })
        ]
    );
    assert!(request.came_in_sequence("documents"));
    assert!(!request.came_in_sequence("insert"));
}

#[test]
fn malformed_commands_are_rejected_with_the_right_answer() {
    let decode = |body: Document, sequences: Vec<DocumentSequence>| {
        let mut msg = OpMsg::new(raw(&body));
        msg.sequences = sequences;
        Request::from_message(Message::new(1, 0, msg)).unwrap_err()
    };
    let missing_db = decode(doc! { "ping": 1 }, Vec::new());
    assert_eq!(missing_db, RequestError::MissingDatabase);
    assert_eq!(missing_db.to_command_error().unwrap().code, 40571);

    assert_eq!(decode(doc! {}, Vec::new()), RequestError::MissingDatabase);
    let empty = OpQuery::command("admin", raw(&doc! {}));
    let empty = Request::from_message(Message::new(1, 0, empty)).unwrap_err();
    assert_eq!(empty, RequestError::EmptyCommand);
    assert_eq!(empty.to_command_error().unwrap().code, 59);
    let duplicate = decode(
        doc! { "insert": "c", "documents": [], "$db": "app" },
        vec![DocumentSequence::new("documents", Vec::new())],
    );
    assert_eq!(duplicate, RequestError::DuplicateField("documents".into()));

    let reply = Request::from_message(Message::new(1, 0, OpReply::new(Vec::new()))).unwrap_err();
    assert_eq!(reply, RequestError::UnexpectedReply);
    assert!(
        reply.to_command_error().is_none(),
        "the connection is closed instead"
    );
}

#[test]
fn legacy_queries_are_commands_only_on_cmd_namespaces() {
    let wrapped = OpQuery::command(
        "admin",
        raw(&doc! { "$query": { "isMaster": 1 }, "$readPreference": { "mode": "primary" } }),
    );
    let request = Request::from_message(Message::new(1, 0, wrapped)).unwrap();
    assert_eq!(request.kind(), RequestKind::Query);
    assert_eq!(request.command_name(), "isMaster");
    assert_eq!(request.database(), "admin");
    assert!(request.is_hello());

    let mut find = OpQuery::command("app", raw(&doc! { "x": 1 }));
    find.full_collection_name = "app.things".into();
    let error = Request::from_message(Message::new(1, 0, find)).unwrap_err();
    assert_eq!(error, RequestError::NotACommand("app.things".into()));
    assert_eq!(error.to_command_error().unwrap().code, 352);
}

#[test]
fn the_handshake_records_app_name_and_negotiates_in_client_order() {
    let mut connection = context();
    let supported = ["snappy", "zstd"].map(String::from);
    let negotiated = connection.note_hello(
        &doc! {
            "hello": 1,
            "client": { "application": { "name": "reports" }, "driver": { "name": "d" } },
            "compression": ["zlib", "zstd", "snappy", "zstd"],
        },
        &supported,
    );
    assert_eq!(
        negotiated,
        Some(vec!["zstd".to_owned(), "snappy".to_owned()])
    );
    assert_eq!(connection.negotiated_compressors(), ["zstd", "snappy"]);
    assert_eq!(connection.app_name(), Some("reports"));
    assert_eq!(connection.info().app_name.as_deref(), Some("reports"));
    assert!(connection.client_metadata().unwrap().contains_key("driver"));

    // A later monitoring hello carries neither field and changes nothing.
    assert_eq!(
        connection.note_hello(&doc! { "hello": 1 }, &supported),
        None
    );
    assert_eq!(connection.app_name(), Some("reports"));
    assert_eq!(connection.negotiated_compressors(), ["zstd", "snappy"]);
}

#[test]
fn extensions_hold_one_value_per_type() {
    let mut connection = context();
    assert_eq!(connection.extensions_mut().insert(3_u32), None);
    assert_eq!(connection.extensions_mut().insert(4_u32), Some(3));
    *connection.extensions_mut().get_mut::<u32>().unwrap() += 1;
    assert_eq!(connection.extensions().get::<u32>(), Some(&5));
    assert_eq!(connection.extensions().get::<String>(), None);
    assert_eq!(connection.extensions_mut().remove::<u32>(), Some(5));
    assert_eq!(connection.extensions().get::<u32>(), None);
}

#[test]
fn command_errors_render_as_mongod_does() {
    let error = CommandError::new(189, "PrimarySteppedDown", "stepped down")
        .with_labels(["RetryableWriteError"])
        .with_field("topologyVersion", doc! { "counter": 2_i64 });
    assert_eq!(
        error.to_document(),
        doc! {
            "ok": 0.0,
            "errmsg": "stepped down",
            "code": 189,
            "codeName": "PrimarySteppedDown",
            "errorLabels": ["RetryableWriteError"],
            "topologyVersion": { "counter": 2_i64 },
        }
    );
    assert!(
        !CommandError::new(1, "InternalError", "x")
            .to_document()
            .contains_key("errorLabels")
    );
}

#[test]
fn reactions_compose_and_gates_latch() {
    let gate = Gate::new();
    let reaction = Reaction::ok()
        .after(std::time::Duration::from_millis(5))
        .after_gate(&gate);
    let Reaction::AfterGate(held_on, inner) = reaction else {
        panic!("the gate is outermost");
    };
    assert_eq!(held_on, gate);
    assert!(matches!(*inner, Reaction::Delay(_, _)));
    assert!(!gate.is_open());
    held_on.open();
    assert!(gate.is_open(), "clones share the latch");
}

#[test]
fn an_oversized_write_batch_is_refused_before_its_documents_are_materialised() {
    let empty = raw(&doc! {});
    let msg = OpMsg::new(raw(&doc! { "insert": "c", "$db": "app" }))
        .with_sequence(DocumentSequence::new("documents", vec![empty; 100_001]));
    let error = Request::from_message(Message::new(1, 0, msg)).unwrap_err();
    assert_eq!(
        error,
        RequestError::Refused(blackpipe_store::RawRequestError::WriteBatchTooLarge {
            count: 100_001
        })
    );
    let answer = error.to_command_error().unwrap();
    assert_eq!(answer.code, 16);
    assert_eq!(
        answer.errmsg,
        "Write batch sizes must be between 1 and 100000. Got 100001 operations."
    );
}

#[test]
fn a_nesting_bomb_is_refused_before_it_is_decoded() {
    // A million levels in 8 MB: decoding it recursively would overflow the stack.
    let mut bytes = Vec::new();
    for level in (1..=1_000_000_i32).rev() {
        bytes.extend_from_slice(&(5 + 8 * level).to_le_bytes());
        bytes.extend_from_slice(&[0x03, b'a', 0]);
    }
    bytes.extend_from_slice(&[5, 0, 0, 0, 0]);
    bytes.extend(std::iter::repeat_n(0, 1_000_000));
    let body = RawDocumentBuf::from_bytes(bytes).unwrap();
    let error = Request::from_message(Message::new(1, 0, OpMsg::new(body))).unwrap_err();
    let answer = error.to_command_error().unwrap();
    assert_eq!(answer.code, 15);
    assert_eq!(
        answer.errmsg,
        "BSONObj exceeded maximum nested object depth: 200"
    );
}
