//! Explicit sessions on the wire: the session id, cluster and operation times, causal
//! consistency, and the cases where a session cannot be used.

use bson::{Document, Timestamp, doc};
use steadfast::SessionOptions;
use steadfast::options::{Acknowledgment, WriteConcern};

use blackpipe::scripted::Matcher;

use crate::retry_support::{harness, within};
use crate::server;

fn time(t: u32) -> Timestamp {
    Timestamp {
        time: t,
        increment: 1,
    }
}

fn empty_cursor() -> Document {
    doc! { "cursor": { "id": 0_i64, "ns": "shop.items", "firstBatch": [] }, "ok": 1 }
}

#[tokio::test]
async fn a_session_sends_its_id_and_follows_the_times_its_replies_carry() {
    let server = server().await;
    server
        .rule(
            Matcher::command("probe"),
            doc! {
                "ok": 1,
                "operationTime": time(42),
                "$clusterTime": { "clusterTime": time(43), "signature": { "keyId": 0_i64 } },
            },
        )
        .always();
    let h = harness(&crate::uri(&server, ""), "").await;
    let mut session = h.client.start_session().await.unwrap();
    let db = h.client.database("app");
    within(db.run_command_with_session(doc! { "probe": 1 }, &mut session))
        .await
        .unwrap();
    let probe = within(server.wait_for_requests(Matcher::command("probe"), 1))
        .await
        .unwrap()
        .remove(0);
    assert_eq!(
        probe.command().get_document("lsid").ok(),
        Some(session.id())
    );
    assert_eq!(session.operation_time(), Some(time(42)));
    assert_eq!(
        session
            .cluster_time()
            .map(steadfast::ClusterTime::timestamp),
        Some(time(43))
    );
    h.client.shutdown().await;
}

#[tokio::test]
async fn causally_consistent_reads_wait_for_the_session_s_last_operation() {
    let server = server().await;
    server
        .rule(
            Matcher::command("insert"),
            doc! { "n": 1, "ok": 1, "operationTime": time(100) },
        )
        .always();
    server
        .rule(Matcher::command("find"), empty_cursor())
        .always();
    let h = harness(&crate::uri(&server, ""), "").await;
    let items = h.client.database("shop").collection::<Document>("items");

    let mut causal = h.client.start_session().await.unwrap();
    within(items.find_one(doc! {}).session(&mut causal))
        .await
        .unwrap();
    within(items.insert_one(doc! { "_id": 1 }).session(&mut causal))
        .await
        .unwrap();
    within(items.find_one(doc! {}).session(&mut causal))
        .await
        .unwrap();

    let mut independent = h
        .client
        .start_session_with_options(SessionOptions::default().causal_consistency(false))
        .await
        .unwrap();
    independent.advance_operation_time(time(100));
    within(items.find_one(doc! {}).session(&mut independent))
        .await
        .unwrap();

    let finds: Vec<Document> = server
        .requests()
        .into_iter()
        .filter(|r| r.command_name() == "find")
        .map(|r| r.command().clone())
        .collect();
    assert!(
        !finds[0].contains_key("readConcern"),
        "nothing to wait for before the first operation"
    );
    assert_eq!(
        finds[1].get_document("readConcern").ok(),
        Some(&doc! { "afterClusterTime": time(100) })
    );
    assert!(
        !finds[2].contains_key("readConcern"),
        "not causally consistent"
    );
    h.client.shutdown().await;
}

#[tokio::test]
async fn sessions_cannot_be_misused() {
    let server = server().await;
    let h = harness(&crate::uri(&server, ""), "").await;
    let other = harness(&crate::uri(&server, ""), "").await;
    let mut foreign = other.client.start_session().await.unwrap();
    let error = within(
        h.client
            .database("app")
            .run_command_with_session(doc! { "ping": 1 }, &mut foreign),
    )
    .await
    .unwrap_err();
    assert!(error.to_string().contains("another client"), "{error}");

    let mut mine = h.client.start_session().await.unwrap();
    let mut w0 = WriteConcern::default();
    w0.w = Some(Acknowledgment::Nodes(0));
    let error = within(
        h.client
            .database("app")
            .collection::<Document>("c")
            .insert_one(doc! {})
            .write_concern(w0)
            .session(&mut mine),
    )
    .await
    .unwrap_err();
    assert!(error.to_string().contains("unacknowledged"), "{error}");
    drop(foreign);
    other.client.shutdown().await;
    h.client.shutdown().await;
}

#[tokio::test]
async fn without_server_support_implicit_sessions_vanish_and_explicit_ones_fail() {
    let server = server().await;
    server.remove_hello_field("logicalSessionTimeoutMinutes");
    let h = harness(&crate::uri(&server, ""), "").await;
    let db = h.client.database("app");
    within(db.run_command(doc! { "ping": 1 })).await.unwrap();
    let ping = within(server.wait_for_requests(Matcher::command("ping"), 1))
        .await
        .unwrap()
        .remove(0);
    assert!(!ping.command().contains_key("lsid"));
    let mut session = h.client.start_session().await.unwrap();
    let error = within(db.run_command_with_session(doc! { "ping": 1 }, &mut session))
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("does not support sessions"),
        "{error}"
    );
    h.client.shutdown().await;
}
