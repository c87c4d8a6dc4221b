//! The official `mongodb` driver as an independent client: whatever it accepts from blackpipe,
//! it would accept from mongod.

use blackpipe::scripted::{DefaultResponders, Matcher, ScriptedConfig, ScriptedServer};
use blackpipe::server::RequestKind;
use bson::{Bson, Document, doc};
use mongodb::Client;
use steadfast_wire::CompressorId;

use crate::support::within;

/// A scripted server where the test, not the default responder, answers `ping`.
async fn server_answering_ping_itself() -> ScriptedServer {
    let config =
        ScriptedConfig::default().with_defaults(DefaultResponders::default().with_ping(false));
    ScriptedServer::start_with(config).await.unwrap()
}

async fn official_client(server: &ScriptedServer, extra_options: &str) -> Client {
    let uri = format!(
        "{}&serverSelectionTimeoutMS=5000&appName=interop{extra_options}",
        server.uri()
    );
    Client::with_uri_str(uri).await.unwrap()
}

/// Shuts the client down and checks that it left no connection open on the server.
async fn shut_down_without_leaks(client: Client, server: &ScriptedServer) {
    within(client.shutdown()).await;
    within(server.wait_for_open_connections(0)).await;
}

#[tokio::test]
async fn the_official_driver_pings_through_the_script() {
    let server = server_answering_ping_itself().await;
    let client = official_client(&server, "").await;
    let database = client.database("admin");
    let ping = tokio::spawn(async move { database.run_command(doc! { "ping": 1 }).await });

    let pending = within(server.next_request("ping")).await.unwrap();
    assert_eq!(pending.database(), "admin");
    assert_eq!(pending.request().kind(), RequestKind::Msg);
    assert_eq!(pending.connection().app_name.as_deref(), Some("interop"));
    pending.reply(doc! { "ok": 1.0, "scripted": true }).unwrap();

    let reply = within(ping).await.unwrap().unwrap();
    assert!(reply.get_bool("scripted").unwrap());
    // The driver's monitor and connection handshakes were answered by the default responder.
    let hellos = server.requests_matching(&Matcher::hello());
    assert!(!hellos.is_empty());
    assert!(
        hellos.iter().any(|r| r.command().contains_key("client")),
        "a handshake carried client metadata"
    );
    shut_down_without_leaks(client, &server).await;
}

#[tokio::test]
async fn the_official_driver_inserts_through_the_script() {
    let server = ScriptedServer::start().await.unwrap();
    let client = official_client(&server, "").await;
    let collection = client.database("shop").collection::<Document>("orders");
    let insert_one = {
        let collection = collection.clone();
        tokio::spawn(async move {
            collection
                .insert_one(doc! { "_id": 1, "item": "pen" })
                .await
        })
    };

    let pending = within(server.next_request(Matcher::command("insert").db("shop")))
        .await
        .unwrap();
    let command = pending.command().clone();
    assert_eq!(command.get_str("insert").unwrap(), "orders");
    assert_eq!(command.get_str("$db").unwrap(), "shop");
    assert!(
        command.get_document("lsid").unwrap().contains_key("id"),
        "{command}"
    );
    assert_eq!(
        command.get_array("documents").unwrap(),
        &vec![Bson::Document(doc! { "_id": 1, "item": "pen" })]
    );
    assert!(
        pending.request().came_in_sequence("documents"),
        "documents came as an OP_MSG document sequence"
    );
    pending.reply(doc! { "ok": 1, "n": 1 }).unwrap();
    let result = within(insert_one).await.unwrap().unwrap();
    assert_eq!(result.inserted_id, Bson::Int32(1));

    // Two documents travel in one request, still as a document sequence.
    let insert_many = {
        let collection = collection.clone();
        tokio::spawn(async move {
            collection
                .insert_many([doc! { "_id": 2 }, doc! { "_id": 3 }])
                .await
        })
    };
    let pending = within(server.next_request("insert")).await.unwrap();
    assert_eq!(pending.command().get_array("documents").unwrap().len(), 2);
    assert_eq!(pending.request().sequence_identifiers(), ["documents"]);
    pending.reply(doc! { "ok": 1, "n": 2 }).unwrap();
    let result = within(insert_many).await.unwrap().unwrap();
    assert_eq!(result.inserted_ids.len(), 2);

    shut_down_without_leaks(client, &server).await;
}

#[tokio::test]
async fn the_official_driver_reports_scripted_write_errors() {
    let server = ScriptedServer::start().await.unwrap();
    server
        .rule(
            "insert",
            doc! {
                "ok": 1,
                "n": 0,
                "writeErrors": [{ "index": 0, "code": 11000, "errmsg": "E11000 duplicate key" }],
            },
        )
        .once();
    let client = official_client(&server, "").await;
    let error = within(
        client
            .database("shop")
            .collection::<Document>("orders")
            .insert_one(doc! { "_id": 1 }),
    )
    .await
    .unwrap_err();
    assert!(error.to_string().contains("E11000"), "{error}");
    shut_down_without_leaks(client, &server).await;
}

#[tokio::test]
async fn the_official_driver_sees_a_hang_up_as_a_network_error() {
    let server = ScriptedServer::start().await.unwrap();
    server
        .rule("find", blackpipe::server::Reaction::hang_up())
        .once();
    let client = official_client(&server, "&retryReads=false").await;
    let collection = client.database("shop").collection::<Document>("orders");
    let error = within(collection.find_one(doc! {})).await.unwrap_err();
    assert!(
        matches!(*error.kind, mongodb::error::ErrorKind::Io(_)),
        "expected a network error, got {error:?}"
    );
    shut_down_without_leaks(client, &server).await;
}

#[tokio::test]
async fn the_official_driver_negotiates_and_uses_compression() {
    let server = server_answering_ping_itself().await;
    let client = official_client(&server, "&compressors=snappy").await;
    let database = client.database("admin");
    let ping = tokio::spawn(async move { database.run_command(doc! { "ping": 1 }).await });

    let pending = within(server.next_request("ping")).await.unwrap();
    assert_eq!(
        pending.request().compressed_with(),
        Some(CompressorId::Snappy)
    );
    pending.ok().unwrap();
    within(ping).await.unwrap().unwrap();

    let handshake = server
        .requests_matching(&Matcher::hello().has_field("compression"))
        .into_iter()
        .next()
        .expect("the handshake offered compressors");
    assert_eq!(
        handshake.command().get_array("compression").unwrap(),
        &vec![Bson::from("snappy")]
    );
    shut_down_without_leaks(client, &server).await;
}
