//! What the driver sends when it opens a connection.

use blackpipe::server::RequestKind;
use bson::{Bson, doc};
use steadfast::{Client, ClientOptions, ServerApi};
use steadfast_wire::CompressorId;

use crate::{client, handshakes, server};

#[tokio::test]
async fn handshake_carries_metadata_compression_and_backpressure() {
    let server = server().await;
    let client = client(&server, "appName=handshake-test&compressors=zstd,snappy").await;
    client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .unwrap();

    let hellos = handshakes(&server);
    assert_eq!(hellos.len(), 1, "one connection, one handshake");
    let hello = &hellos[0];
    // The first message of every connection is the handshake.
    let first_on_connection = server
        .requests()
        .into_iter()
        .find(|r| r.connection_id() == hello.connection_id())
        .unwrap();
    assert_eq!(first_on_connection.sequence(), hello.sequence());
    assert_eq!(hello.command_name(), "isMaster", "legacy hello first");
    assert_eq!(
        hello.kind(),
        RequestKind::Msg,
        "handshakes travel in OP_MSG"
    );
    assert_eq!(
        hello.request().compressed_with(),
        None,
        "hello is never compressed"
    );
    assert_eq!(hello.database(), "admin");
    let command = hello.command();
    assert_eq!(command.get_bool("helloOk").ok(), Some(true));
    assert_eq!(command.get("backpressure"), Some(&Bson::from("2")));
    assert_eq!(
        command.get_array("compression").unwrap(),
        &vec![Bson::from("zstd"), Bson::from("snappy")]
    );
    let metadata = command.get_document("client").unwrap();
    assert_eq!(
        metadata
            .get_document("application")
            .unwrap()
            .get_str("name")
            .ok(),
        Some("handshake-test")
    );
    let driver = metadata.get_document("driver").unwrap();
    assert_eq!(driver.get_str("name").ok(), Some("steadfast"));
    assert!(!driver.get_str("version").unwrap().is_empty());
    assert!(metadata.get_document("os").unwrap().get_str("type").is_ok());
    assert!(metadata.get_str("platform").unwrap().starts_with("Rust"));
    for absent in [
        "saslSupportedMechs",
        "speculativeAuthenticate",
        "loadBalanced",
    ] {
        assert!(
            !command.contains_key(absent),
            "{absent} without a credential"
        );
    }

    // The server negotiated zstd (our first choice that it supports): ping goes compressed.
    let ping = server
        .requests()
        .into_iter()
        .find(|r| r.command_name() == "ping")
        .unwrap();
    assert_eq!(ping.request().compressed_with(), Some(CompressorId::Zstd));
}

#[tokio::test]
async fn empty_compression_list_without_compressors() {
    let server = server().await;
    let client = client(&server, "").await;
    client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .unwrap();
    let hello = &handshakes(&server)[0];
    assert_eq!(
        hello.command().get_array("compression").unwrap(),
        &Vec::<Bson>::new()
    );
    let ping = server
        .requests()
        .into_iter()
        .find(|r| r.command_name() == "ping")
        .unwrap();
    assert_eq!(ping.request().compressed_with(), None);
}

#[tokio::test]
async fn stable_api_uses_hello_and_declares_the_version_everywhere() {
    let server = server().await;
    let mut options = ClientOptions::default();
    options.hosts = vec![steadfast_core::ServerAddress::tcp(
        "127.0.0.1",
        server.port(),
    )];
    let client =
        Client::with_options_and_server_api(options, ServerApi::v1().strict(true)).unwrap();
    client
        .database("db")
        .run_command(doc! { "ping": 1 })
        .await
        .unwrap();
    let requests = server.requests();
    assert_eq!(requests[0].command_name(), "hello");
    assert!(!requests[0].command().contains_key("helloOk"));
    for request in &requests {
        assert_eq!(
            request.command().get_str("apiVersion").ok(),
            Some("1"),
            "{}",
            request.summary()
        );
        assert_eq!(request.command().get_bool("apiStrict").ok(), Some(true));
    }
}

#[tokio::test]
async fn one_connection_is_reused_across_commands() {
    let server = server().await;
    let client = client(&server, "").await;
    let db = client.database("admin");
    for _ in 0..5 {
        db.run_command(doc! { "ping": 1 }).await.unwrap();
    }
    assert_eq!(handshakes(&server).len(), 1);
    assert_eq!(crate::app_connections(&server), 1);
}

#[tokio::test]
async fn appended_metadata_reaches_new_connections_only_once() {
    use blackpipe::scripted::Matcher;
    use steadfast::DriverInfo;

    let server = server().await;
    let client = client(&server, "").await;
    let db = client.database("admin");
    db.run_command(doc! { "ping": 1 }).await.unwrap();
    client
        .append_metadata(DriverInfo::new("odm").version("2.1"))
        .unwrap();
    client
        .append_metadata(DriverInfo::new("odm").version("2.1"))
        .unwrap();
    assert!(client.append_metadata(DriverInfo::new("bad|name")).is_err());

    // The existing connection keeps its metadata: break it so that a new one is opened.
    let probe = tokio::spawn({
        let db = db.clone();
        async move { db.run_command(doc! { "probe": 1 }).await }
    });
    server
        .next_request(Matcher::command("probe"))
        .await
        .unwrap()
        .hang_up()
        .unwrap();
    assert!(probe.await.unwrap().is_err());
    db.run_command(doc! { "ping": 1 }).await.unwrap();

    let hellos = handshakes(&server);
    assert_eq!(hellos.len(), 2);
    let driver = |i: usize| {
        hellos[i]
            .command()
            .get_document("client")
            .unwrap()
            .get_document("driver")
            .unwrap()
            .clone()
    };
    assert_eq!(driver(0).get_str("name").ok(), Some("steadfast"));
    assert_eq!(
        driver(1).get_str("name").ok(),
        Some("steadfast|odm"),
        "appended once"
    );
    assert!(driver(1).get_str("version").unwrap().ends_with("|2.1"));
}
