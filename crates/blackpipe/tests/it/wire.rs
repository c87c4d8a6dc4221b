//! Wire-level behaviour: OP_COMPRESSED, compressor negotiation, moreToCome, exhaust streams,
//! checksums and malformed commands.

use blackpipe::scripted::{Matcher, Responder, ScriptedConfig, ScriptedServer};
use blackpipe::server::{Reaction, ReplyStream, ServerConfig};
use bson::{Bson, doc};
use steadfast_wire::{Body, Compressor, CompressorId, DocumentSequence, MsgFlags, OpMsg, OpQuery};

use crate::support::{RawClient, has_more_to_come, raw, reply_document, within};

fn compression_of(reply: &bson::Document) -> Option<Vec<String>> {
    reply.get_array("compression").ok().map(|names| {
        names
            .iter()
            .map(|name| {
                name.as_str()
                    .expect("compressor names are strings")
                    .to_owned()
            })
            .collect()
    })
}

#[tokio::test]
async fn hello_announces_the_common_compressors_in_the_clients_order() {
    let server = ScriptedServer::start().await.unwrap();
    let mut client = RawClient::connect(server.address()).await;
    let reply = client
        .round_trip(doc! {
            "hello": 1,
            "compression": ["zstd", "lz4", "snappy", "zlib"],
            "$db": "admin",
        })
        .await;
    assert_eq!(
        compression_of(&reply).unwrap(),
        ["zstd", "snappy", "zlib"],
        "unknown lz4 dropped, client order kept"
    );
}

#[tokio::test]
async fn hello_omits_compression_when_nothing_is_in_common() {
    let config = ScriptedConfig::default()
        .with_server(ServerConfig::default().with_compressors(["zlib", "snappy"]));
    let server = ScriptedServer::start_with(config).await.unwrap();
    let mut client = RawClient::connect(server.address()).await;
    let reply = client
        .round_trip(doc! { "hello": 1, "compression": ["zstd", "snappy"], "$db": "admin" })
        .await;
    assert_eq!(compression_of(&reply).unwrap(), ["snappy"]);

    let mut other = RawClient::connect(server.address()).await;
    let reply = other
        .round_trip(doc! { "hello": 1, "compression": ["zstd"], "$db": "admin" })
        .await;
    assert_eq!(compression_of(&reply), None);
}

#[tokio::test]
async fn compressed_requests_get_replies_compressed_the_same_way() {
    let server = ScriptedServer::start().await.unwrap();
    server
        .rule("find", doc! { "cursor": { "id": 0_i64, "ns": "app.c", "firstBatch": [{ "x": "y".repeat(200) }] } })
        .always();
    let mut client = RawClient::connect(server.address()).await;
    for compressor in [
        Compressor::Snappy,
        Compressor::Zlib { level: Some(6) },
        Compressor::Zstd { level: None },
    ] {
        let command = doc! { "find": "c", "filter": { "k": "v".repeat(100) }, "$db": "app" };
        let id = client
            .send_msg(OpMsg::new(raw(&command)), Some(&compressor))
            .await;
        let reply = client.expect_message().await;
        assert_eq!(reply.response_to, id);
        assert_eq!(
            reply.compressed_with,
            Some(compressor.id()),
            "{}",
            compressor.name()
        );
        let batch = reply_document(&reply)
            .get_document("cursor")
            .unwrap()
            .get_array("firstBatch")
            .unwrap()
            .clone();
        assert_eq!(batch.len(), 1);
    }
    let used: Vec<Option<CompressorId>> = server
        .requests()
        .iter()
        .map(|r| r.request().compressed_with())
        .collect();
    assert_eq!(
        used,
        [
            Some(CompressorId::Snappy),
            Some(CompressorId::Zlib),
            Some(CompressorId::Zstd)
        ]
    );
}

#[tokio::test]
async fn an_uncompressed_request_gets_an_uncompressed_reply() {
    let server = ScriptedServer::start().await.unwrap();
    let mut client = RawClient::connect(server.address()).await;
    client
        .round_trip(doc! { "hello": 1, "compression": ["snappy"], "$db": "admin" })
        .await;
    client
        .send_command(doc! { "ping": 1, "$db": "admin" })
        .await;
    let reply = client.expect_message().await;
    assert_eq!(reply.compressed_with, None);
}

#[tokio::test]
async fn more_to_come_requests_get_no_reply() {
    let server = ScriptedServer::start().await.unwrap();
    let inserts = server.rule("insert", doc! { "n": 1 }).always();
    let mut client = RawClient::connect(server.address()).await;
    let unacknowledged = OpMsg::new(raw(&doc! {
        "insert": "c",
        "writeConcern": { "w": 0 },
        "$db": "app",
    }))
    .with_flags(MsgFlags::MORE_TO_COME)
    .with_sequence(DocumentSequence::new(
        "documents",
        vec![raw(&doc! { "_id": 1 })],
    ));
    client.send_msg(unacknowledged, None).await;
    let ping_id = client
        .send_command(doc! { "ping": 1, "$db": "admin" })
        .await;

    // The first message back answers the ping: the w:0 insert got nothing.
    let reply = client.expect_message().await;
    assert_eq!(reply.response_to, ping_id);
    assert_eq!(inserts.hits(), 1, "the insert was still handled");
    let record = &server.requests_matching(&Matcher::command("insert"))[0];
    assert!(record.request().more_to_come());
    assert!(record.request().came_in_sequence("documents"));
}

#[tokio::test]
async fn an_exhaust_request_gets_a_chained_stream_of_replies() {
    let server = ScriptedServer::start().await.unwrap();
    server
        .rule(
            "getMore",
            Responder::stream(vec![
                doc! { "batch": 1 },
                doc! { "batch": 2 },
                doc! { "batch": 3 },
            ]),
        )
        .always();
    let mut client = RawClient::connect(server.address()).await;
    let request = OpMsg::new(raw(
        &doc! { "getMore": 7_i64, "collection": "c", "$db": "app" },
    ))
    .with_flags(MsgFlags::EXHAUST_ALLOWED);
    let id = client.send_msg(request, None).await;

    let mut previous = id;
    for batch in 1..=3 {
        let reply = client.expect_message().await;
        assert_eq!(
            reply.response_to, previous,
            "each reply answers the previous one"
        );
        assert_eq!(reply_document(&reply).get_i32("batch").unwrap(), batch);
        assert_eq!(
            has_more_to_come(&reply),
            batch < 3,
            "moreToCome on all but the last"
        );
        previous = reply.request_id;
    }

    // Without exhaustAllowed, only the first reply is sent, without moreToCome.
    let id = client
        .send_command(doc! { "getMore": 7_i64, "collection": "c", "$db": "app" })
        .await;
    let reply = client.expect_message().await;
    assert_eq!(reply.response_to, id);
    assert!(!has_more_to_come(&reply));
    assert_eq!(reply_document(&reply).get_i32("batch").unwrap(), 1);
    let reply = client.round_trip(doc! { "ping": 1, "$db": "admin" }).await;
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0, "nothing else was queued");
}

#[tokio::test]
async fn a_stream_fed_by_the_test_sends_each_reply_as_it_comes() {
    let server = ScriptedServer::start().await.unwrap();
    server.set_default_responders(blackpipe::scripted::DefaultResponders::none());
    let mut client = RawClient::connect(server.address()).await;
    let request = OpMsg::new(raw(&doc! {
        "hello": 1,
        "topologyVersion": { "processId": bson::oid::ObjectId::new(), "counter": 0_i64 },
        "maxAwaitTimeMS": 10_000_i64,
        "$db": "admin",
    }))
    .with_flags(MsgFlags::EXHAUST_ALLOWED);
    client.send_msg(request, None).await;
    let (sender, stream) = ReplyStream::channel(1);
    within(server.next_request(Matcher::hello()))
        .await
        .unwrap()
        .stream(stream)
        .unwrap();

    for counter in 0..3_i64 {
        within(sender.send(doc! { "isWritablePrimary": true, "counter": counter }))
            .await
            .unwrap();
        let reply = client.expect_message().await;
        assert!(has_more_to_come(&reply));
        assert_eq!(reply_document(&reply).get_i64("counter").unwrap(), counter);
    }
    // An error ends the stream: the server never sets moreToCome on ok: 0.
    within(
        sender.send(
            doc! { "ok": 0.0, "code": 91, "codeName": "ShutdownInProgress", "errmsg": "bye" },
        ),
    )
    .await
    .unwrap();
    let reply = client.expect_message().await;
    assert!(!has_more_to_come(&reply));
    within(sender.closed()).await;
    assert!(sender.is_closed());
}

#[tokio::test]
async fn dropping_a_stream_sender_early_hangs_up() {
    let server = ScriptedServer::start().await.unwrap();
    let mut client = RawClient::connect(server.address()).await;
    let request = OpMsg::new(raw(
        &doc! { "getMore": 1_i64, "collection": "c", "$db": "app" },
    ))
    .with_flags(MsgFlags::EXHAUST_ALLOWED);
    client.send_msg(request, None).await;
    let (sender, stream) = ReplyStream::channel(4);
    within(server.next_request("getMore"))
        .await
        .unwrap()
        .stream(stream)
        .unwrap();
    within(sender.send(doc! { "batch": 1 })).await.unwrap();
    drop(sender);
    assert!(has_more_to_come(&client.expect_message().await));
    client.expect_closed().await;
}

#[tokio::test]
async fn requests_with_a_checksum_are_accepted() {
    let server = ScriptedServer::start().await.unwrap();
    let mut client = RawClient::connect(server.address()).await;
    let request =
        OpMsg::new(raw(&doc! { "ping": 1, "$db": "admin" })).with_flags(MsgFlags::CHECKSUM_PRESENT);
    let id = client.send_msg(request, None).await;
    let reply = client.expect_message().await;
    assert_eq!(reply.response_to, id);
    assert!(server.requests()[0].request().checksum_present());
}

#[tokio::test]
async fn an_op_msg_without_db_gets_an_error() {
    let server = ScriptedServer::start().await.unwrap();
    let mut client = RawClient::connect(server.address()).await;
    let reply = client.round_trip(doc! { "ping": 1 }).await;
    assert_eq!(reply.get_f64("ok").unwrap(), 0.0);
    assert_eq!(reply.get_i32("code").unwrap(), 40571);
    assert!(
        server.requests().is_empty(),
        "not a command the handler sees"
    );
    let reply = client.round_trip(doc! { "ping": 1, "$db": "admin" }).await;
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0, "the connection survives");
}

#[tokio::test]
async fn a_legacy_query_outside_cmd_fails_with_query_failure() {
    let server = ScriptedServer::start().await.unwrap();
    let mut client = RawClient::connect(server.address()).await;
    let mut query = OpQuery::command("app", raw(&doc! { "x": 1 }));
    query.full_collection_name = "app.things".to_owned();
    let id = client.send_body(Body::Query(query), None).await;
    let reply = client.expect_message().await;
    assert_eq!(reply.response_to, id);
    let Body::Reply(op_reply) = &reply.body else {
        panic!("expected OP_REPLY, got {reply:?}");
    };
    assert_eq!(op_reply.response_flags & 2, 2, "QueryFailure");
    let document = reply_document(&reply);
    assert!(document.get_str("$err").is_ok(), "{document}");
    assert_eq!(document.get("ok"), Some(&Bson::Double(0.0)));
}

#[tokio::test]
async fn a_reply_error_reaction_keeps_the_connection() {
    let server = ScriptedServer::start().await.unwrap();
    server
        .rule(
            "find",
            Reaction::error(11600, "InterruptedAtShutdown", "stopping"),
        )
        .once();
    let mut client = RawClient::connect(server.address()).await;
    let reply = client.round_trip(doc! { "find": "c", "$db": "app" }).await;
    assert_eq!(reply.get_str("codeName").unwrap(), "InterruptedAtShutdown");
    client
        .send_command(doc! { "find": "c", "$db": "app" })
        .await;
    within(server.next_request("find"))
        .await
        .unwrap()
        .ok()
        .unwrap();
    client.expect_message().await;
}
