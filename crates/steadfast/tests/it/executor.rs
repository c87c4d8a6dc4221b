//! What the executor puts on the wire, checked byte for byte on the scripted server: sessions,
//! cluster-time gossip, transaction numbers, `$readPreference`, `maxTimeMS`, unacknowledged
//! writes; and that a client leaks no task or socket.

use std::time::Duration;

use blackpipe::scripted::{Matcher, ScriptedServer};
use bson::{Bson, Document, Timestamp, doc};
use steadfast::event::{Event, SdamEvent};
use steadfast::options::{Acknowledgment, DatabaseOptions, ReadPreference, WriteConcern};

use crate::retry_support::{HANG_GUARD, harness, started, within};
use crate::server;

fn cluster_time(time: u32) -> Document {
    doc! {
        "clusterTime": Timestamp { time, increment: 1 },
        "signature": { "hash": bson::Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: vec![0; 20] }, "keyId": 0_i64 },
    }
}

/// The requests `server` received for command `name`.
fn requests(server: &ScriptedServer, name: &str) -> Vec<Document> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.command_name() == name)
        .map(|r| r.command().clone())
        .collect()
}

/// Makes the scripted server a replica set member reached directly.
fn member(server: &ScriptedServer, primary: bool) {
    server.patch_hello(doc! {
        "setName": "rs0",
        "hosts": [format!("127.0.0.1:{}", server.port())],
        "isWritablePrimary": primary,
        "secondary": !primary,
    });
}

#[tokio::test]
async fn every_command_carries_an_lsid_and_the_highest_cluster_time() {
    let server = server().await;
    server
        .rule(
            Matcher::command("probe"),
            doc! { "ok": 1, "$clusterTime": cluster_time(7), "operationTime": Timestamp { time: 7, increment: 1 } },
        )
        .always();
    let h = harness(&crate::uri(&server, ""), "").await;
    let db = h.client.database("app");
    within(db.run_command(doc! { "probe": 1 })).await.unwrap();
    within(db.run_command(doc! { "probe": 2 })).await.unwrap();
    let probes = requests(&server, "probe");
    assert!(probes[0].get_document("lsid").is_ok());
    assert!(
        !probes[0].contains_key("$clusterTime"),
        "nothing to gossip before a server sent a cluster time"
    );
    assert_eq!(
        probes[1].get_document("$clusterTime").ok(),
        Some(&cluster_time(7))
    );
    assert_eq!(
        probes[0].get_document("lsid").ok(),
        probes[1].get_document("lsid").ok(),
        "the implicit session went back to the pool and was reused"
    );
    assert!(
        !probes[0].contains_key("txnNumber"),
        "runCommand never gets one"
    );
    // SDAM commands never gossip, nor carry a session.
    for hello in requests(&server, "isMaster")
        .into_iter()
        .chain(requests(&server, "hello"))
    {
        assert!(!hello.contains_key("$clusterTime") && !hello.contains_key("lsid"));
    }
    h.client.shutdown().await;
}

#[tokio::test]
async fn a_network_error_makes_the_implicit_session_dirty() {
    let server = server().await;
    let h = harness(&crate::uri(&server, ""), "").await;
    let db = h.client.database("app");
    let run = tokio::spawn({
        let db = db.clone();
        async move { db.run_command(doc! { "probe": 1 }).await }
    });
    within(server.next_request(Matcher::command("probe")))
        .await
        .unwrap()
        .hang_up()
        .unwrap();
    assert!(within(run).await.unwrap().unwrap_err().is_network_error());
    within(db.run_command(doc! { "ping": 1 })).await.unwrap();
    within(db.run_command(doc! { "ping": 1 })).await.unwrap();
    let probe = &requests(&server, "probe")[0];
    let pings = requests(&server, "ping");
    assert_ne!(
        probe.get_document("lsid").ok(),
        pings[0].get_document("lsid").ok(),
        "a dirty session is never reused"
    );
    assert_eq!(
        pings[0].get_document("lsid").ok(),
        pings[1].get_document("lsid").ok()
    );
    h.client.shutdown().await;
}

#[tokio::test]
async fn a_retried_write_resends_the_same_transaction_number() {
    let server = server().await;
    member(&server, true);
    let h = harness(&crate::uri(&server, "directConnection=true"), "").await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    let insert = tokio::spawn(async move { orders.insert_one(doc! { "_id": 1 }).await });
    within(server.next_request(Matcher::command("insert")))
        .await
        .unwrap()
        .reply_error(
            10107,
            "NotWritablePrimary",
            "stepped down",
            &["RetryableWriteError"],
        )
        .unwrap();
    within(server.next_request(Matcher::command("insert")))
        .await
        .unwrap()
        .reply(doc! { "n": 1, "ok": 1 })
        .unwrap();
    within(insert).await.unwrap().unwrap();
    let inserts = requests(&server, "insert");
    assert_eq!(inserts.len(), 2);
    assert_eq!(inserts[0].get("txnNumber"), Some(&Bson::Int64(1)));
    assert_eq!(inserts[0].get("txnNumber"), inserts[1].get("txnNumber"));
    assert_eq!(inserts[0].get("lsid"), inserts[1].get("lsid"));
    h.client.shutdown().await;
}

#[tokio::test]
async fn a_standalone_gets_no_transaction_number() {
    let server = server().await;
    server
        .rule(Matcher::command("insert"), doc! { "n": 1, "ok": 1 })
        .always();
    let h = harness(&crate::uri(&server, ""), "").await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    within(orders.insert_one(doc! { "_id": 1 })).await.unwrap();
    let insert = &requests(&server, "insert")[0];
    assert!(
        !insert.contains_key("txnNumber"),
        "standalones do not support retryable writes"
    );
    assert!(insert.contains_key("lsid"));
    h.client.shutdown().await;
}

#[tokio::test]
async fn an_unacknowledged_write_is_sent_with_more_to_come_and_no_session() {
    let server = server().await;
    member(&server, true);
    let h = harness(&crate::uri(&server, "directConnection=true"), "").await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    let mut w0 = WriteConcern::default();
    w0.w = Some(Acknowledgment::Nodes(0));
    within(orders.insert_one(doc! { "_id": 1 }).write_concern(w0))
        .await
        .unwrap();
    let request = within(server.next_request(Matcher::command("insert")))
        .await
        .unwrap();
    assert!(request.request().more_to_come(), "no reply is awaited");
    let command = request.command();
    assert!(!command.contains_key("lsid") && !command.contains_key("txnNumber"));
    assert_eq!(
        command.get_document("writeConcern").ok(),
        Some(&doc! { "w": 0_i64 })
    );
    h.client.shutdown().await;
}

#[tokio::test]
async fn read_preference_is_sent_to_a_member_reached_directly() {
    let server = server().await;
    member(&server, false);
    server
        .rule(
            Matcher::command("find"),
            doc! { "cursor": { "id": 0_i64, "ns": "shop.items", "firstBatch": [] }, "ok": 1 },
        )
        .always();
    let h = harness(&crate::uri(&server, "directConnection=true"), "").await;
    let db = h.client.database("shop");
    let probe_run = tokio::spawn({
        let db = db.clone();
        async move { db.run_command(doc! { "probe": 1 }).await }
    });
    // A primary read goes to the member anyway, flagged so that a secondary accepts it.
    let probe = within(server.next_request(Matcher::command("probe")))
        .await
        .unwrap();
    assert_eq!(
        probe.command().get_document("$readPreference").ok(),
        Some(&doc! { "mode": "primaryPreferred" })
    );
    probe.ok().unwrap();
    within(probe_run).await.unwrap().unwrap();
    let items = db.collection::<Document>("items");
    within(
        items
            .find_one(doc! {})
            .selection_criteria(ReadPreference::with_mode(
                steadfast::options::ReadPreferenceMode::Nearest,
            )),
    )
    .await
    .unwrap();
    let find = &requests(&server, "find")[0];
    assert_eq!(
        find.get_document("$readPreference").ok(),
        Some(&doc! { "mode": "nearest" })
    );
    h.client.shutdown().await;
}

#[tokio::test]
async fn timeout_ms_sets_max_time_ms_from_what_is_left() {
    let server = server().await;
    let h = harness(&crate::uri(&server, ""), "").await;
    let limited = h.client.database_with_options(
        "app",
        DatabaseOptions::default().timeout(Duration::from_secs(5)),
    );
    let unlimited = h
        .client
        .database_with_options("app", DatabaseOptions::default().timeout(Duration::ZERO));
    within(limited.run_command(doc! { "ping": 1 }))
        .await
        .unwrap();
    within(unlimited.run_command(doc! { "ping": 1 }))
        .await
        .unwrap();
    within(h.client.database("app").run_command(doc! { "ping": 1 }))
        .await
        .unwrap();
    let pings = started(&h.events, "ping");
    let max_time = pings[0].command.get_i64("maxTimeMS").unwrap();
    assert!((1..=5000).contains(&max_time), "{max_time}");
    assert!(
        !pings[1].command.contains_key("maxTimeMS"),
        "timeoutMS=0: no limit"
    );
    assert!(
        !pings[2].command.contains_key("maxTimeMS"),
        "timeoutMS unset"
    );
    h.client.shutdown().await;
}

#[tokio::test]
async fn shutdown_ends_the_sessions_and_leaves_nothing_behind() {
    let server = server().await;
    let h = harness(&crate::uri(&server, ""), "").await;
    let db = h.client.database("app");
    within(db.run_command(doc! { "ping": 1 })).await.unwrap();
    let used = requests(&server, "ping")[0]
        .get_document("lsid")
        .unwrap()
        .clone();
    let tasks = h.client.background_tasks();
    assert!(
        tasks.live() > 0,
        "the worker, a monitor and the pool run as tasks"
    );
    within(h.client.clone().shutdown()).await;
    let end = &requests(&server, "endSessions")[0];
    assert_eq!(
        end.get_array("endSessions").unwrap(),
        &vec![Bson::Document(used)]
    );
    assert_eq!(
        tasks.live(),
        0,
        "shutdown returns once every task has ended"
    );
    within(server.wait_for_open_connections(0)).await;
    let last_sdam = h.events.events().into_iter().rev().find_map(|e| match e {
        Event::Sdam(event) => Some(event),
        _ => None,
    });
    assert!(
        matches!(last_sdam, Some(SdamEvent::TopologyClosed)),
        "{last_sdam:?}"
    );
    let error = within(db.run_command(doc! { "ping": 1 }))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("shut down"), "{error}");
}

#[tokio::test]
async fn an_immediate_shutdown_skips_end_sessions_and_still_closes_everything() {
    let server = server().await;
    let h = harness(&crate::uri(&server, ""), "").await;
    let db = h.client.database("app");
    within(db.run_command(doc! { "ping": 1 })).await.unwrap();
    within(h.client.clone().shutdown().immediate(true)).await;
    assert!(
        requests(&server, "endSessions").is_empty(),
        "an immediate shutdown leaves the sessions to the server's timeout"
    );
    within(server.wait_for_open_connections(0)).await;
    let error = within(db.run_command(doc! { "ping": 1 }))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("shut down"), "{error}");
}

#[tokio::test]
async fn dropping_the_client_leaks_no_task_or_socket() {
    let server = server().await;
    let h = harness(&crate::uri(&server, ""), "").await;
    let db = h.client.database("app");
    let mut session = h.client.start_session().await.unwrap();
    within(db.run_command_with_session(doc! { "ping": 1 }, &mut session))
        .await
        .unwrap();
    within(db.run_command(doc! { "ping": 1 })).await.unwrap();
    let tasks = h.client.background_tasks();
    assert!(tasks.live() > 0);
    assert!(server.open_connections() > 0);
    drop((db, session, h.client));
    tokio::time::timeout(HANG_GUARD, tasks.wait_until_idle())
        .await
        .expect("every task ends once the last handle is dropped");
    assert_eq!(tasks.live(), 0);
    within(server.wait_for_open_connections(0)).await;
}

#[tokio::test]
async fn a_raw_command_runs_as_written_and_a_malformed_one_is_refused() {
    let server = server().await;
    let h = harness(
        &crate::uri(&server, "readPreference=secondaryPreferred"),
        "",
    )
    .await;
    assert!(
        matches!(
            h.client.selection_criteria(),
            Some(steadfast::options::SelectionCriteria::ReadPreference(
                ReadPreference::SecondaryPreferred { .. }
            ))
        ),
        "{:?}",
        h.client.selection_criteria()
    );
    let db = h.client.database("app");
    let raw = bson::RawDocumentBuf::try_from(&doc! { "ping": 1 }).unwrap();
    let reply = within(db.run_raw_command(raw)).await.unwrap();
    assert_eq!(reply.get("ok"), Some(&Bson::Double(1.0)));
    assert_eq!(requests(&server, "ping").len(), 1);
    // A string element whose length runs past the document's end.
    let broken =
        bson::RawDocumentBuf::from_bytes(vec![13, 0, 0, 0, 2, b'a', 0, 100, 0, 0, 0, b'x', 0])
            .expect("the header and the terminator are sound");
    assert!(Document::try_from(broken.as_ref()).is_err());
    let error = within(db.run_raw_command(broken.clone()))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("not valid BSON"), "{error}");
    let error = within(db.run_raw_cursor_command(broken)).await.unwrap_err();
    assert!(error.to_string().contains("not valid BSON"), "{error}");
    assert_eq!(requests(&server, "ping").len(), 1, "nothing more was sent");
    h.client.shutdown().await;
}
