//! Unit tests of matchers and the default hello.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use bson::{Bson, Document, RawDocumentBuf, doc};
use steadfast_wire::{DocumentSequence, Message, OpMsg, OpQuery};

use super::defaults::{self, DefaultKind};
use super::matcher::{lookup, values_equal};
use super::*;
use crate::server::{ConnectionId, ConnectionInfo, Request};

fn raw(document: &Document) -> RawDocumentBuf {
    RawDocumentBuf::try_from(document).unwrap()
}

fn msg_request(body: Document, sequences: Vec<DocumentSequence>) -> Request {
    let mut msg = OpMsg::new(raw(&body));
    msg.sequences = sequences;
    Request::from_message(Message::new(1, 0, msg)).unwrap()
}

fn connection(id: u64, app_name: Option<&str>) -> ConnectionInfo {
    ConnectionInfo {
        id: ConnectionId::new(id),
        peer: SocketAddr::from((Ipv4Addr::LOCALHOST, 50_000)),
        app_name: app_name.map(str::to_owned),
    }
}

#[test]
fn numbers_compare_by_value_across_types() {
    assert!(values_equal(&Bson::Int32(1), &Bson::Double(1.0)));
    assert!(values_equal(&Bson::Int64(7), &Bson::Int32(7)));
    assert!(!values_equal(&Bson::Int32(1), &Bson::Double(1.5)));
    assert!(!values_equal(&Bson::Int32(1), &Bson::Boolean(true)));
    assert!(values_equal(
        &Bson::Document(doc! { "w": 1, "j": true }),
        &Bson::Document(doc! { "w": 1.0, "j": true })
    ));
    assert!(
        !values_equal(
            &Bson::Document(doc! { "w": 1, "j": true }),
            &Bson::Document(doc! { "j": true, "w": 1 })
        ),
        "field order matters, as in BSON"
    );
    assert!(values_equal(
        &Bson::from(vec![1, 2]),
        &Bson::from(vec![1.0, 2.0])
    ));
    assert!(!values_equal(&Bson::from(vec![1, 2]), &Bson::from(vec![1])));
}

#[test]
fn dotted_paths_reach_into_documents_and_arrays() {
    let document = doc! { "a": { "b": [{ "c": 5 }, { "c": 6 }] } };
    assert_eq!(lookup(&document, "a.b.1.c"), Some(&Bson::Int32(6)));
    assert_eq!(lookup(&document, "a.b.2.c"), None);
    assert_eq!(lookup(&document, "a.b.x"), None);
    assert_eq!(lookup(&document, "a.zz"), None);
    assert_eq!(lookup(&document, ""), None);
}

#[test]
fn matchers_combine_every_condition() {
    let request = msg_request(
        doc! { "insert": "orders", "ordered": true, "writeConcern": { "w": "majority" }, "$db": "shop" },
        vec![DocumentSequence::new(
            "documents",
            vec![raw(&doc! { "_id": 1 })],
        )],
    );
    let on_app = connection(3, Some("billing"));
    let matcher = Matcher::command("insert")
        .db("shop")
        .field_eq("writeConcern.w", "majority")
        .field_eq("documents.0._id", 1.0)
        .has_field("ordered")
        .lacks_field("bypassDocumentValidation")
        .op_msg()
        .connection(ConnectionId::new(3))
        .app_name("billing")
        .in_sequence("documents")
        .custom("two fields", |request, _| request.command().len() > 2);
    assert!(matcher.matches(&request, &on_app));
    assert!(!matcher.matches(&request, &connection(4, Some("billing"))));
    assert!(!matcher.matches(&request, &connection(3, None)));
    assert!(
        !Matcher::command("insert")
            .db("other")
            .matches(&request, &on_app)
    );
    assert!(
        !Matcher::command("insert")
            .op_query()
            .matches(&request, &on_app)
    );
    assert!(
        !Matcher::command("insert")
            .in_sequence("updates")
            .matches(&request, &on_app)
    );
    assert!(Matcher::any().matches(&request, &on_app));
    assert_eq!(
        Matcher::command("insert")
            .db("shop")
            .has_field("lsid")
            .to_string(),
        "command insert && $db == \"shop\" && has lsid"
    );
    assert_eq!(Matcher::any().to_string(), "any request");
}

#[test]
fn the_hello_matcher_covers_the_legacy_spellings() {
    let info = connection(1, None);
    for name in ["hello", "isMaster", "ismaster"] {
        let request = msg_request(doc! { name: 1, "$db": "admin" }, Vec::new());
        assert!(Matcher::hello().matches(&request, &info), "{name}");
    }
    let query = Request::from_message(Message::new(
        1,
        0,
        OpQuery::command("admin", raw(&doc! { "isMaster": 1 })),
    ))
    .unwrap();
    assert!(Matcher::hello().op_query().matches(&query, &info));
    let ping = msg_request(doc! { "ping": 1, "$db": "admin" }, Vec::new());
    assert!(!Matcher::hello().matches(&ping, &info));
    assert!(
        !Matcher::command("IsMaster").matches(&query, &info),
        "names are case-sensitive"
    );
}

#[test]
fn legacy_hello_says_ismaster_and_ids_and_times_are_filled_in() {
    let template = standalone_hello();
    let info = connection(42, None);
    let legacy = Request::from_message(Message::new(
        1,
        0,
        OpQuery::command("admin", raw(&doc! { "isMaster": 1 })),
    ))
    .unwrap();
    let crate::server::Reaction::Reply(reply) =
        defaults::respond(DefaultKind::Hello, &legacy, &info, &template)
    else {
        panic!("hello is answered with a document");
    };
    assert!(reply.get_bool("ismaster").unwrap());
    assert!(!reply.contains_key("isWritablePrimary"));
    assert_eq!(reply.get_i32("connectionId").unwrap(), 42);
    assert!(reply.get_datetime("localTime").is_ok());
    assert_eq!(reply.keys().last().map(String::as_str), Some("ok"));

    let modern = msg_request(doc! { "hello": 1, "$db": "admin" }, Vec::new());
    let crate::server::Reaction::Reply(reply) =
        defaults::respond(DefaultKind::Hello, &modern, &info, &template)
    else {
        panic!("hello is answered with a document");
    };
    assert!(reply.get_bool("isWritablePrimary").unwrap());
}

#[test]
fn default_responders_pick_commands_by_name() {
    let all = DefaultResponders::default();
    let request = |name: &str| msg_request(doc! { name: 1, "$db": "admin" }, Vec::new());
    assert_eq!(
        all.kind_for(&request("buildinfo")),
        Some(DefaultKind::BuildInfo)
    );
    assert_eq!(
        all.kind_for(&request("buildInfo")),
        Some(DefaultKind::BuildInfo)
    );
    assert_eq!(
        all.kind_for(&request("endSessions")),
        Some(DefaultKind::EndSessions)
    );
    assert_eq!(all.kind_for(&request("find")), None);
    let none = DefaultResponders::none();
    assert_eq!(none.kind_for(&request("hello")), None);
    assert_eq!(
        none.with_hello(true).kind_for(&request("hello")),
        Some(DefaultKind::Hello)
    );
}

#[test]
fn a_rule_counts_down_and_stops() {
    let script = Arc::new(state::Script::new(
        standalone_hello(),
        DefaultResponders::none(),
        std::time::Duration::from_secs(1),
    ));
    let handle = RuleBuilder::new(
        Arc::clone(&script),
        Matcher::any(),
        Responder::from(crate::server::Reaction::ok()),
    )
    .times(2);
    assert_eq!(handle.remaining(), Some(2));
    assert!(!handle.is_exhausted());
    let always = RuleBuilder::new(script, Matcher::any(), Responder::from(doc! {})).always();
    assert_eq!(always.remaining(), None);
    always.remove();
    assert!(always.is_exhausted());
}
