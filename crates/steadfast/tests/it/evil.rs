//! The evil server: scripted blackpipe servers that send hostile replies (absurd limits in
//! hello, absurd cursor replies, streamed replies nobody asked for, hello floods, huge SCRAM
//! iteration counts, unanswered killCursors, garbage frames). Each must give a typed error or be
//! tolerated safely, and the client must stay usable.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use blackpipe::scripted::{
    DefaultResponders, Matcher, ScriptedConfig, ScriptedServer, standalone_hello,
};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use blackpipe::scripted::Responder;
use bson::oid::ObjectId;
use bson::spec::BinarySubtype;
use bson::{Binary, Bson, Document, doc, rawdoc};
use futures_util::StreamExt;
use steadfast::event::{EventListener, SdamEvent};
use steadfast::{Client, ClientBuilder, Error};
use steadfast_wire::{DEFAULT_MAX_MESSAGE_SIZE, Message, MsgFlags, OpMsg};

use crate::crud_wire::{acknowledge_writes, client_for, cursor_reply};
use crate::retry_support::within;
use crate::{client, server, server_with};

/// Runs a ping and expects it to succeed: the client is still usable.
async fn still_usable(client: &Client) {
    within(client.database("db").run_command(doc! { "ping": 1 }))
        .await
        .expect("the client is still usable");
}

#[tokio::test]
async fn absurd_limits_in_hello_are_clamped_and_writes_still_work() {
    let server = server().await;
    server.patch_hello(doc! {
        "maxBsonObjectSize": 0,
        "maxMessageSizeBytes": i32::MAX,
        "maxWriteBatchSize": -1,
    });
    acknowledge_writes(&server);
    let client = client_for(&server).await;
    let items = client.database("db").collection::<Document>("items");
    within(items.insert_many((0..5).map(|i| doc! { "i": i })))
        .await
        .expect("defaults replace the absurd limits");
    assert_eq!(
        server.requests_matching(&Matcher::command("insert")).len(),
        1,
        "one batch: no absurd split"
    );
    still_usable(&client).await;
    client.shutdown().await;
}

/// A `find` answered with `reply` must fail with a protocol error.
async fn find_fails_with(server: &ScriptedServer, client: &Client, reply: Document) -> Error {
    server.clear_rules();
    server.rule(Matcher::command("find"), reply).once();
    let items = client.database("db").collection::<Document>("items");
    let result = within(items.find(doc! {})).await;
    match result {
        Ok(_) => panic!("a malformed cursor reply must be an error"),
        Err(error) => error,
    }
}

#[tokio::test]
async fn absurd_cursor_replies_are_protocol_errors() {
    let server = server().await;
    let client = client_for(&server).await;
    let replies = [
        doc! { "cursor": { "id": 0_i64, "ns": "db.items", "firstBatch": "x" }, "ok": 1 },
        // A firstBatch of the wrong type used to be skipped for the nextBatch beside it.
        doc! { "cursor": { "id": 0_i64, "ns": "db.items", "firstBatch": { "0": {} }, "nextBatch": [] }, "ok": 1 },
        doc! { "cursor": { "id": 1.5, "ns": "db.items", "firstBatch": [] }, "ok": 1 },
        doc! { "cursor": { "id": "42", "ns": "db.items", "firstBatch": [] }, "ok": 1 },
        doc! { "cursor": { "id": 0_i64, "ns": 7, "firstBatch": [] }, "ok": 1 },
        doc! { "cursor": { "id": 0_i64, "ns": "nodot", "firstBatch": [] }, "ok": 1 },
        doc! { "cursor": { "id": 0_i64, "ns": "db.items", "firstBatch": [1, 2] }, "ok": 1 },
        doc! { "cursor": "nope", "ok": 1 },
    ];
    for reply in replies {
        let shown = reply.to_string();
        let error = find_fails_with(&server, &client, reply).await;
        assert!(error.is_protocol_error(), "{shown}: {error}");
        still_usable(&client).await;
    }
    client.shutdown().await;
}

#[tokio::test]
async fn a_get_more_reply_that_moves_the_cursor_is_a_protocol_error() {
    let server = server().await;
    server
        .rule(
            Matcher::command("find"),
            cursor_reply("firstBatch", 0..1, 42),
        )
        .once();
    server
        .rule(
            Matcher::command("getMore"),
            doc! { "cursor": { "id": 42_i64, "ns": "other.place", "nextBatch": [] }, "ok": 1 },
        )
        .once();
    let client = client_for(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let mut cursor = within(items.find(doc! {})).await.unwrap();
    assert!(within(cursor.next()).await.unwrap().is_ok());
    let error = within(cursor.next()).await.unwrap().unwrap_err();
    assert!(error.is_protocol_error(), "{error}");
    assert!(error.to_string().contains("other.place"), "{error}");
    drop(cursor);
    still_usable(&client).await;
    client.shutdown().await;
}

#[tokio::test]
async fn an_unrequested_streamed_reply_never_returns_its_connection_to_the_pool() {
    let server = server().await;
    let client = client(&server, "maxPoolSize=1").await;
    let db = client.database("db");
    let run = tokio::spawn(async move { db.run_command(doc! { "probe": 1 }).await });
    let probe = within(server.next_request(Matcher::command("probe")))
        .await
        .unwrap();
    let probe_connection = probe.connection_id();
    // A reply that promises another (moreToCome) to a request that never allowed it.
    let request_id = probe.request().request_id();
    let reply = OpMsg::new(rawdoc! { "ok": 1 }).with_flags(MsgFlags::MORE_TO_COME);
    let frame = Message::new(7, request_id, reply)
        .to_bytes(None, DEFAULT_MAX_MESSAGE_SIZE)
        .unwrap();
    probe.reply_raw(frame).unwrap();
    within(run).await.unwrap().expect("the first reply answers");
    // The only pooled connection awaits a streamed reply: reusing it would read that reply as
    // the ping's answer, or refuse to send. The pool must open a fresh one instead.
    still_usable(&client).await;
    let ping = server
        .requests_matching(&Matcher::command("ping"))
        .pop()
        .expect("the ping was sent");
    assert_ne!(ping.connection_id(), probe_connection);
    client.shutdown().await;
}

#[tokio::test]
async fn an_explicit_session_is_dirty_after_its_operation_is_cancelled() {
    let server = server().await;
    let client = client_for(&server).await;
    let mut session = client.start_session().await.unwrap();
    let db = client.database("db");
    let held = {
        let probe = db.run_command_with_session(doc! { "probe": 1 }, &mut session);
        tokio::select! {
            _ = probe => panic!("the server holds the reply"),
            held = server.next_request(Matcher::command("probe")) => held.unwrap(),
        }
    };
    // The probe's future is dropped: its command reached the server, its reply never came.
    assert!(session.is_dirty());
    drop(held);
    drop(session);
    still_usable(&client).await;
    client.shutdown().await;
}

#[tokio::test]
async fn an_implicit_session_of_a_cancelled_operation_is_not_reused() {
    let server = server().await;
    let client = client_for(&server).await;
    let db = client.database("db");
    let held = {
        let probe = db.run_command(doc! { "probe": 1 });
        tokio::select! {
            _ = probe => panic!("the server holds the reply"),
            held = server.next_request(Matcher::command("probe")) => held.unwrap(),
        }
    };
    let cancelled_lsid = held.command().get_document("lsid").unwrap().clone();
    drop(held);
    server
        .rule(Matcher::command("probe"), doc! { "ok": 1 })
        .once();
    within(db.run_command(doc! { "probe": 1 })).await.unwrap();
    let last = server
        .requests_matching(&Matcher::command("probe"))
        .pop()
        .unwrap();
    assert_ne!(
        last.command().get_document("lsid").unwrap(),
        &cancelled_lsid,
        "the interrupted session went back to the pool"
    );
    client.shutdown().await;
}

fn binary(bytes: Vec<u8>) -> Bson {
    Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes,
    })
}

#[tokio::test]
async fn a_huge_scram_iteration_count_is_an_authentication_error() {
    let server = server_with(
        ScriptedConfig::default().with_defaults(DefaultResponders::default().with_hello(false)),
    )
    .await;
    // The monitor's check; the application connection's handshake is answered below.
    server.rule(Matcher::hello(), standalone_hello()).once();
    let client = Client::with_uri_str(&format!(
        "mongodb://user:pencil@127.0.0.1:{}/?authMechanism=SCRAM-SHA-256",
        server.port()
    ))
    .await
    .unwrap();
    let db = client.database("app");
    let mut run = tokio::spawn(async move { db.run_command(doc! { "ping": 1 }).await });
    let hello = within(server.next_request(Matcher::hello())).await.unwrap();
    hello.reply(standalone_hello()).unwrap();
    let start = within(server.next_request(Matcher::command("saslStart")))
        .await
        .unwrap();
    let client_first = match start.command().get("payload") {
        Some(Bson::Binary(b)) => String::from_utf8(b.bytes.clone()).unwrap(),
        other => panic!("payload should be binary: {other:?}"),
    };
    let nonce = client_first.rsplit("r=").next().unwrap().to_string();
    // Just over the cap, so that without it the driver would answer (after a few seconds).
    let server_first = format!("r={nonce}evil,s={},i=1000001", B64.encode(b"salt"));
    start
        .reply(doc! {
            "conversationId": 1, "done": false,
            "payload": binary(server_first.into_bytes()), "ok": 1,
        })
        .unwrap();
    let error = tokio::select! {
        result = &mut run => result.unwrap().expect_err("the iteration count is refused"),
        _ = server.next_request(Matcher::command("saslContinue")) => {
            panic!("the driver ran 1,000,001 PBKDF2 iterations for a hostile server")
        }
    };
    assert!(error.is_authentication_error(), "{error}");
    assert!(error.to_string().contains("1000001"), "{error}");
    client.shutdown().await;
}

#[tokio::test]
async fn shutdown_completes_behind_an_unanswered_kill_cursors() {
    let server = server().await;
    server
        .rule(
            Matcher::command("find"),
            cursor_reply("firstBatch", 0..2, 42),
        )
        .once();
    // The background killCursors is bounded by serverSelectionTimeoutMS when timeoutMS is unset.
    let client = client(&server, "serverSelectionTimeoutMS=300").await;
    let items = client.database("db").collection::<Document>("items");
    let mut cursor = within(items.find(doc! {}).batch_size(2)).await.unwrap();
    assert!(within(cursor.next()).await.unwrap().is_ok());
    drop(cursor);
    // The server swallows the killCursors: it never answers while shutdown runs.
    let swallowed = within(server.next_request(Matcher::command("killCursors")))
        .await
        .unwrap();
    within(client.shutdown()).await;
    drop(swallowed);
}

#[tokio::test]
async fn a_negative_frame_length_is_a_protocol_error() {
    let server = server().await;
    let client = client_for(&server).await;
    let db = client.database("db");
    let run = tokio::spawn(async move { db.run_command(doc! { "probe": 1 }).await });
    let probe = within(server.next_request(Matcher::command("probe")))
        .await
        .unwrap();
    let mut frame = (-1_i32).to_le_bytes().to_vec();
    frame.extend_from_slice(&[0xff; 12]);
    probe.reply_raw(frame).unwrap();
    let error = within(run).await.unwrap().unwrap_err();
    assert!(error.is_protocol_error(), "{error}");
    still_usable(&client).await;
    client.shutdown().await;
}

#[tokio::test]
async fn connection_string_errors_never_echo_the_password() {
    for (uri, fragments) in [
        ("mongodb://user:1234?5678@127.0.0.1", ["1234", "5678"]),
        ("mongodb://user:1234/5678@127.0.0.1", ["1234", "5678"]),
        ("mongodb://user:kq7@zw9@127.0.0.1", ["kq7", "zw9"]),
        ("mongodb://user:kq7%zzw9@127.0.0.1", ["kq7", "zzw9"]),
    ] {
        let error = Client::with_uri_str(uri).await.expect_err(uri);
        let shown = format!("{error} {error:?}");
        for fragment in fragments {
            assert!(!shown.contains(fragment), "{uri}: {shown}");
        }
    }
}

/// Stalls the topology worker inside its first streamed heartbeat event until released: the
/// worker delivers events synchronously, so nothing queued behind that event is applied.
struct StallFirstStreamedHeartbeat {
    stalled: tokio::sync::Notify,
    release: Mutex<Option<std::sync::mpsc::Receiver<()>>>,
}

impl EventListener for StallFirstStreamedHeartbeat {
    fn on_sdam(&self, event: &SdamEvent) {
        if matches!(
            event,
            SdamEvent::ServerHeartbeatSucceeded { awaited: true, .. }
        ) {
            let release = self.release.lock().unwrap().take();
            if let Some(release) = release {
                self.stalled.notify_one();
                // Hands this thread's other tasks (the monitor among them) to another thread.
                tokio::task::block_in_place(|| release.recv()).ok();
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hello_flood_is_paced_by_the_topology_worker() {
    const FLOOD: i64 = 200;
    let server = server().await;
    let process_id = ObjectId::new();
    server.patch_hello(doc! { "topologyVersion": { "processId": process_id, "counter": 0_i64 } });
    let flood: Vec<Document> = (1..=FLOOD)
        .map(|counter| {
            let mut hello = standalone_hello();
            hello.insert(
                "topologyVersion",
                doc! { "processId": process_id, "counter": counter },
            );
            hello
        })
        .collect();
    // The first awaitable hello is answered by the whole flood at once (exhaust), the next
    // ones by the default responder.
    let awaitable = || Matcher::hello().has_field("maxAwaitTimeMS");
    server.rule(awaitable(), Responder::stream(flood)).once();
    let (release, released) = std::sync::mpsc::channel();
    let handler = Arc::new(StallFirstStreamedHeartbeat {
        stalled: tokio::sync::Notify::new(),
        release: Mutex::new(Some(released)),
    });
    let client = ClientBuilder::from_uri_str(&crate::uri(&server, "heartbeatFrequencyMS=500"))
        .await
        .unwrap()
        .event_listener(handler.clone())
        .build()
        .unwrap();
    within(handler.stalled.notified()).await;
    // The worker is stalled on the first streamed reply. A monitor that reads ahead would
    // drain the flood into the worker's queue and send its next awaitable hello; a paced one
    // waits for the worker however long the stall lasts. The wait below only bounds how long
    // the test looks for the wrong behaviour.
    let read_ahead = tokio::time::timeout(
        Duration::from_millis(500),
        server.wait_for_requests(awaitable(), 2),
    )
    .await;
    assert!(
        !matches!(read_ahead, Ok(Ok(_))),
        "the monitor queued the whole flood while the worker was stalled"
    );
    release.send(()).unwrap();
    // Released, the worker takes the flood one reply at a time and the client works.
    within(server.wait_for_requests(awaitable(), 2))
        .await
        .unwrap();
    still_usable(&client).await;
    client.shutdown().await;
}
