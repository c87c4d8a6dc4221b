//! The scripted server's basics: awaiting and answering requests, rules, default responders,
//! the request record.

use std::time::Duration;

use blackpipe::scripted::{
    DefaultResponders, HandledBy, Matcher, Responder, ScriptError, ScriptedConfig, ScriptedServer,
};
use blackpipe::server::{CommandError, Gate, Outcome, Reaction, RequestKind};
use bson::{Bson, Document, doc};

use crate::support::{RawClient, reply_document, within};

#[tokio::test]
async fn a_test_awaits_a_request_and_replies() {
    let server = ScriptedServer::start().await.unwrap();
    let mut client = RawClient::connect(server.address()).await;
    let id = client
        .send_command(doc! { "find": "things", "filter": { "x": 1 }, "$db": "app" })
        .await;

    let pending = within(server.next_request(Matcher::command("find").db("app")))
        .await
        .unwrap();
    assert_eq!(pending.command_name(), "find");
    assert_eq!(pending.database(), "app");
    assert_eq!(
        pending.command().get_document("filter").unwrap(),
        &doc! { "x": 1 }
    );
    pending
        .reply(doc! { "cursor": { "id": 0_i64, "ns": "app.things", "firstBatch": [] } })
        .unwrap();

    let reply = client.expect_message().await;
    assert_eq!(reply.response_to, id);
    let document = reply_document(&reply);
    assert_eq!(
        document.get_f64("ok").unwrap(),
        1.0,
        "ok: 1 is added: {document}"
    );
    assert_eq!(
        document
            .get_document("cursor")
            .unwrap()
            .get_str("ns")
            .unwrap(),
        "app.things"
    );
}

#[tokio::test]
async fn a_request_that_arrived_earlier_waits_in_the_queue() {
    let server = ScriptedServer::start().await.unwrap();
    let mut client = RawClient::connect(server.address()).await;
    let id = client
        .send_command(doc! { "count": "c", "$db": "app" })
        .await;
    within(server.wait_for_requests("count", 1)).await.unwrap();
    assert_eq!(server.unclaimed_requests().len(), 1);

    let pending = server.try_next_request("count").expect("queued");
    pending.reply(doc! { "n": 3 }).unwrap();
    assert_eq!(client.expect_message().await.response_to, id);
    assert!(server.unclaimed_requests().is_empty());
}

#[tokio::test]
async fn reply_error_sends_code_name_message_and_labels() {
    let server = ScriptedServer::start().await.unwrap();
    let mut client = RawClient::connect(server.address()).await;
    client
        .send_command(doc! { "insert": "c", "$db": "app" })
        .await;
    within(server.next_request("insert"))
        .await
        .unwrap()
        .reply_error(
            91,
            "ShutdownInProgress",
            "going away",
            &["RetryableWriteError"],
        )
        .unwrap();
    let reply = reply_document(&client.expect_message().await);
    assert_eq!(reply.get_f64("ok").unwrap(), 0.0);
    assert_eq!(reply.get_i32("code").unwrap(), 91);
    assert_eq!(reply.get_str("codeName").unwrap(), "ShutdownInProgress");
    assert_eq!(reply.get_str("errmsg").unwrap(), "going away");
    assert_eq!(
        reply.get_array("errorLabels").unwrap(),
        &vec![Bson::from("RetryableWriteError")]
    );
}

#[tokio::test]
async fn rules_answer_in_order_and_stop_after_their_count() {
    let server = ScriptedServer::start().await.unwrap();
    let twice = server.rule("count", doc! { "n": 5 }).times(2);
    let errors = server
        .rule(
            Matcher::command("count").field_eq("query.kind", "bad"),
            CommandError::new(2, "BadValue", "bad query"),
        )
        .always();
    let mut client = RawClient::connect(server.address()).await;

    for _ in 0..2 {
        let reply = client.round_trip(doc! { "count": "c", "$db": "app" }).await;
        assert_eq!(reply.get_i32("n").unwrap(), 5);
    }
    assert_eq!(twice.hits(), 2);
    assert!(twice.is_exhausted());
    assert_eq!(twice.remaining(), Some(0));

    // The count rule is used up, so a matching request falls through to the next rule...
    let reply = client
        .round_trip(doc! { "count": "c", "query": { "kind": "bad" }, "$db": "app" })
        .await;
    assert_eq!(reply.get_i32("code").unwrap(), 2);
    assert_eq!(errors.remaining(), None, "an `always` rule has no count");

    // ...and one no rule matches waits for the test.
    let id = client
        .send_command(doc! { "count": "c", "$db": "app" })
        .await;
    let pending = within(server.next_request("count")).await.unwrap();
    pending.reply(doc! { "n": 9 }).unwrap();
    let reply = client.expect_message().await;
    assert_eq!(reply.response_to, id);
    assert_eq!(reply_document(&reply).get_i32("n").unwrap(), 9);

    let handled: Vec<HandledBy> = server
        .requests_matching(&Matcher::command("count"))
        .iter()
        .map(|record| record.handled_by())
        .collect();
    assert_eq!(
        handled,
        [
            HandledBy::Rule,
            HandledBy::Rule,
            HandledBy::Rule,
            HandledBy::Test
        ]
    );
}

#[tokio::test]
async fn a_removed_rule_stops_answering_and_hits_can_be_awaited() {
    let server = ScriptedServer::start().await.unwrap();
    let rule = server.rule("getMore", Reaction::ok()).always();
    let mut client = RawClient::connect(server.address()).await;
    client
        .round_trip(doc! { "getMore": 1_i64, "$db": "app" })
        .await;
    within(rule.wait_for_hits(1)).await;
    rule.remove();
    assert!(rule.is_exhausted());
    client
        .send_command(doc! { "getMore": 1_i64, "$db": "app" })
        .await;
    let pending = within(server.next_request("getMore")).await.unwrap();
    assert_eq!(rule.hits(), 1);
    pending.ok().unwrap();
    client.expect_message().await;
}

#[tokio::test]
async fn a_responder_function_can_echo_the_request() {
    let server = ScriptedServer::start().await.unwrap();
    server
        .rule(
            "insert",
            Responder::from_fn(|request, _| {
                let n = request.command().get_array("documents").map_or(0, Vec::len);
                Outcome::React(Reaction::reply(doc! { "n": n as i32 }))
            }),
        )
        .always();
    let mut client = RawClient::connect(server.address()).await;
    let reply = client
        .round_trip(doc! { "insert": "c", "documents": [{ "a": 1 }, { "a": 2 }], "$db": "app" })
        .await;
    assert_eq!(reply.get_i32("n").unwrap(), 2);
}

#[tokio::test]
async fn hang_up_closes_only_that_connection() {
    let server = ScriptedServer::start().await.unwrap();
    let mut doomed = RawClient::connect(server.address()).await;
    let mut bystander = RawClient::connect(server.address()).await;
    within(server.wait_for_open_connections(2)).await;

    doomed
        .send_command(doc! { "find": "c", "$db": "app" })
        .await;
    within(server.next_request("find"))
        .await
        .unwrap()
        .hang_up()
        .unwrap();
    doomed.expect_closed().await;
    within(server.wait_for_open_connections(1)).await;

    let reply = bystander
        .round_trip(doc! { "ping": 1, "$db": "admin" })
        .await;
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0);
}

#[tokio::test]
async fn a_pending_request_dropped_unanswered_hangs_up() {
    let server = ScriptedServer::start().await.unwrap();
    let mut client = RawClient::connect(server.address()).await;
    client
        .send_command(doc! { "find": "c", "$db": "app" })
        .await;
    drop(within(server.next_request("find")).await.unwrap());
    client.expect_closed().await;
}

#[tokio::test]
async fn raw_bytes_are_written_verbatim() {
    let server = ScriptedServer::start().await.unwrap();
    let mut client = RawClient::connect(server.address()).await;
    client
        .send_command(doc! { "find": "c", "$db": "app" })
        .await;
    let bytes = b"not a MongoDB reply at all".to_vec();
    within(server.next_request("find"))
        .await
        .unwrap()
        .reply_raw(bytes.clone())
        .unwrap();
    assert_eq!(client.read_exact(bytes.len()).await, bytes);
}

/// One connection's reply is held until the test opens a gate; meanwhile another connection
/// is answered. The held client provably has no reply yet when the other has its own.
#[tokio::test]
async fn a_held_reply_does_not_delay_another_connection() {
    let server = ScriptedServer::start().await.unwrap();
    let gate = Gate::new();
    let mut slow = RawClient::connect(server.address()).await;
    let mut fast = RawClient::connect(server.address()).await;

    let slow_id = slow
        .send_command(doc! { "find": "slow", "$db": "app" })
        .await;
    within(server.next_request(Matcher::command("find").field_eq("find", "slow")))
        .await
        .unwrap()
        .after_gate(&gate)
        .reply(doc! { "which": "slow" })
        .unwrap();

    let fast_id = fast
        .send_command(doc! { "find": "fast", "$db": "app" })
        .await;
    within(server.next_request(Matcher::command("find").field_eq("find", "fast")))
        .await
        .unwrap()
        .reply(doc! { "which": "fast" })
        .unwrap();
    let fast_reply = fast.expect_message().await;
    assert_eq!(fast_reply.response_to, fast_id);
    assert_eq!(
        reply_document(&fast_reply).get_str("which").unwrap(),
        "fast"
    );
    assert!(
        !slow.has_pending_bytes(),
        "the gated reply must still be held"
    );

    gate.open();
    let slow_reply = slow.expect_message().await;
    assert_eq!(slow_reply.response_to, slow_id);
    assert_eq!(
        reply_document(&slow_reply).get_str("which").unwrap(),
        "slow"
    );
}

/// A rule whose reaction sleeps for an hour on one connection does not hold up another, and a
/// client that gives up while its reply is delayed is cleaned up at once.
#[tokio::test]
async fn a_delayed_rule_does_not_block_other_connections() {
    let server = ScriptedServer::start().await.unwrap();
    server
        .rule(
            Matcher::command("find").field_eq("find", "slow"),
            Reaction::ok().after(Duration::from_secs(3600)),
        )
        .always();
    let mut slow = RawClient::connect(server.address()).await;
    let mut fast = RawClient::connect(server.address()).await;
    slow.send_command(doc! { "find": "slow", "$db": "app" })
        .await;
    within(server.wait_for_requests(Matcher::command("find"), 1))
        .await
        .unwrap();

    let reply = fast.round_trip(doc! { "ping": 1, "$db": "admin" }).await;
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0);

    drop(slow);
    within(server.wait_for_open_connections(1)).await;
}

#[tokio::test]
async fn the_default_hello_describes_a_writable_standalone() {
    let server = ScriptedServer::start().await.unwrap();
    let mut client = RawClient::connect(server.address()).await;
    let reply = client
        .round_trip(doc! {
            "hello": 1,
            "client": { "application": { "name": "orders" }, "driver": { "name": "t", "version": "1" } },
            "$db": "admin",
        })
        .await;
    assert!(reply.get_bool("isWritablePrimary").unwrap());
    assert!(reply.get_bool("helloOk").unwrap());
    assert_eq!(reply.get_i32("maxWireVersion").unwrap(), 25);
    assert_eq!(reply.get_i32("minWireVersion").unwrap(), 0);
    assert_eq!(
        reply.get_i32("maxBsonObjectSize").unwrap(),
        16 * 1024 * 1024
    );
    assert_eq!(reply.get_i32("maxMessageSizeBytes").unwrap(), 48_000_000);
    assert_eq!(reply.get_i32("maxWriteBatchSize").unwrap(), 100_000);
    assert_eq!(reply.get_i32("logicalSessionTimeoutMinutes").unwrap(), 30);
    assert_eq!(reply.get_i32("connectionId").unwrap(), 1);
    assert!(reply.get_datetime("localTime").is_ok());
    assert!(
        !reply.contains_key("compression"),
        "no compressors were offered"
    );

    // The handshake's appName is remembered for the connection, and matchers filter on it.
    client
        .send_command(doc! { "find": "c", "$db": "app" })
        .await;
    let pending = within(server.next_request(Matcher::command("find").app_name("orders")))
        .await
        .unwrap();
    assert_eq!(pending.connection().app_name.as_deref(), Some("orders"));
    pending.ok().unwrap();
}

#[tokio::test]
async fn legacy_op_query_hello_gets_an_op_reply() {
    let server = ScriptedServer::start().await.unwrap();
    let mut client = RawClient::connect(server.address()).await;
    let id = client
        .send_query("admin", doc! { "isMaster": 1, "helloOk": true })
        .await;
    let reply = client.expect_message().await;
    assert_eq!(reply.response_to, id);
    assert!(
        matches!(reply.body, steadfast_wire::Body::Reply(_)),
        "{reply:?}"
    );
    let document = reply_document(&reply);
    assert!(document.get_bool("ismaster").unwrap(), "{document}");
    assert!(!document.contains_key("isWritablePrimary"));
    assert!(document.get_bool("helloOk").unwrap());

    let records = server.requests();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].kind(), RequestKind::Query);
    assert_eq!(records[0].database(), "admin");
    assert_eq!(records[0].handled_by(), HandledBy::DefaultResponder);
    assert_eq!(
        server.requests_matching(&Matcher::hello().op_query()).len(),
        1
    );
    assert!(
        server
            .requests_matching(&Matcher::hello().op_msg())
            .is_empty()
    );
}

#[tokio::test]
async fn the_hello_document_can_be_patched_or_replaced() {
    let server = ScriptedServer::start().await.unwrap();
    let mut client = RawClient::connect(server.address()).await;
    server.patch_hello(doc! { "maxWireVersion": 21, "setName": "rs0" });
    let reply = client.round_trip(doc! { "hello": 1, "$db": "admin" }).await;
    assert_eq!(reply.get_i32("maxWireVersion").unwrap(), 21);
    assert_eq!(reply.get_str("setName").unwrap(), "rs0");
    assert!(reply.get_bool("isWritablePrimary").unwrap());

    server.set_hello(doc! { "isWritablePrimary": false, "secondary": true, "connectionId": 77 });
    let reply = client.round_trip(doc! { "hello": 1, "$db": "admin" }).await;
    assert!(reply.get_bool("secondary").unwrap());
    assert_eq!(
        reply.get_i32("connectionId").unwrap(),
        77,
        "a template value wins"
    );
    assert!(!reply.contains_key("maxWireVersion"));
}

#[tokio::test]
async fn default_responders_can_be_turned_off() {
    let config =
        ScriptedConfig::default().with_defaults(DefaultResponders::default().with_ping(false));
    let server = ScriptedServer::start_with(config).await.unwrap();
    let mut client = RawClient::connect(server.address()).await;
    let build_info = client
        .round_trip(doc! { "buildInfo": 1, "$db": "admin" })
        .await;
    assert!(build_info.get_str("version").is_ok());
    let end = client
        .round_trip(doc! { "endSessions": [], "$db": "admin" })
        .await;
    assert_eq!(end.get_f64("ok").unwrap(), 1.0);

    client
        .send_command(doc! { "ping": 1, "$db": "admin" })
        .await;
    let ping = within(server.next_request("ping")).await.unwrap();
    ping.reply_error(13, "Unauthorized", "no", &[]).unwrap();
    assert_eq!(
        reply_document(&client.expect_message().await)
            .get_i32("code")
            .unwrap(),
        13
    );

    server.set_default_responders(DefaultResponders::none());
    client
        .send_command(doc! { "hello": 1, "$db": "admin" })
        .await;
    within(server.next_request(Matcher::hello()))
        .await
        .unwrap()
        .ok()
        .unwrap();
    client.expect_message().await;
}

#[tokio::test]
async fn a_timeout_names_the_matcher_and_the_unclaimed_requests() {
    let server = ScriptedServer::start().await.unwrap();
    let mut client = RawClient::connect(server.address()).await;
    client
        .send_command(doc! { "aggregate": "c", "$db": "app" })
        .await;
    within(server.wait_for_requests("aggregate", 1))
        .await
        .unwrap();

    let error = server
        .next_request_within(
            Matcher::command("find").db("app"),
            Duration::from_millis(20),
        )
        .await
        .unwrap_err();
    let ScriptError::Timeout {
        matcher, unclaimed, ..
    } = &error
    else {
        panic!("expected a timeout, got {error:?}");
    };
    assert_eq!(matcher, "command find && $db == \"app\"");
    assert_eq!(unclaimed.len(), 1);
    assert!(unclaimed[0].contains("aggregate"), "{unclaimed:?}");
    assert!(error.to_string().contains("aggregate"));

    // The unclaimed request is still there for a matcher that fits.
    within(server.next_request("aggregate"))
        .await
        .unwrap()
        .ok()
        .unwrap();
    client.expect_message().await;
}

#[tokio::test]
async fn the_record_keeps_arrival_order_across_connections() {
    let server = ScriptedServer::start().await.unwrap();
    server.rule(Matcher::any(), Reaction::ok()).always();
    let mut first = RawClient::connect(server.address()).await;
    let mut second = RawClient::connect(server.address()).await;
    first.round_trip(doc! { "a": 1, "$db": "x" }).await;
    second.round_trip(doc! { "b": 1, "$db": "y" }).await;
    first.round_trip(doc! { "c": 1, "$db": "x" }).await;

    let records = server.requests();
    let names: Vec<&str> = records.iter().map(|r| r.command_name()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    let sequences: Vec<u64> = records.iter().map(|r| r.sequence()).collect();
    assert_eq!(sequences, [1, 2, 3]);
    assert_eq!(records[0].connection_id(), records[2].connection_id());
    assert_ne!(records[0].connection_id(), records[1].connection_id());
    let on_first: Vec<Document> = server
        .requests_matching(&Matcher::any().connection(records[0].connection_id()))
        .iter()
        .map(|r| r.command().clone())
        .collect();
    assert_eq!(on_first.len(), 2);
}

#[tokio::test]
async fn start_on_uses_the_given_port_and_fails_if_it_is_taken() {
    let first = ScriptedServer::start().await.unwrap();
    let port = first.port();
    assert_eq!(
        first.uri(),
        format!("mongodb://127.0.0.1:{port}/?directConnection=true")
    );
    assert!(
        ScriptedServer::start_on(port).await.is_err(),
        "port {port} is taken"
    );

    within(first.shutdown()).await;
    drop(first);
    let second = ScriptedServer::start_on(port).await.unwrap();
    assert_eq!(second.address().port(), port);
    let mut client = RawClient::connect(second.address()).await;
    client.round_trip(doc! { "ping": 1, "$db": "admin" }).await;
}
