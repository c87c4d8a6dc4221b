//! run_command round trips and typed command errors.

use blackpipe::scripted::Matcher;
use bson::doc;
use steadfast::ErrorKind;
use steadfast_wire::CompressorId;

use crate::{client, server};

#[tokio::test]
async fn run_command_round_trip_with_db() {
    let server = server().await;
    server
        .rule(Matcher::command("count"), doc! { "n": 42, "ok": 1 })
        .always();
    let client = client(&server, "").await;
    let reply = client
        .database("inventory")
        .run_command(doc! { "count": "items", "query": { "qty": { "$gt": 1 } } })
        .await
        .unwrap();
    assert_eq!(reply.get_i32("n").ok(), Some(42));
    let recorded = server
        .requests()
        .into_iter()
        .find(|r| r.command_name() == "count")
        .unwrap();
    assert_eq!(recorded.database(), "inventory");
    assert_eq!(recorded.command().get_str("$db").ok(), Some("inventory"));
    assert_eq!(recorded.command().get_str("count").ok(), Some("items"));
}

#[tokio::test]
async fn ok_zero_is_a_typed_command_error() {
    let server = server().await;
    let client = client(&server, "").await;
    let db = client.database("app");
    let run = tokio::spawn(async move {
        db.run_command(doc! { "insert": "c", "documents": [{}] })
            .await
    });
    let pending = server
        .next_request(Matcher::command("insert"))
        .await
        .unwrap();
    pending
        .reply_error(
            10107,
            "NotWritablePrimary",
            "not primary",
            &["RetryableWriteError"],
        )
        .unwrap();
    let error = run.await.unwrap().unwrap_err();
    let ErrorKind::Command(command) = error.kind() else {
        panic!("expected a command error, got {error:?}");
    };
    assert_eq!(command.code, 10107);
    assert_eq!(command.code_name, "NotWritablePrimary");
    assert_eq!(command.message, "not primary");
    assert_eq!(error.code(), Some(10107));
    assert!(error.has_label("RetryableWriteError"));
    assert!(error.is_not_writable_primary() && error.is_state_change_error());
    assert!(!error.is_network_error());
    let text = error.to_string();
    assert!(
        text.contains(&format!("127.0.0.1:{}", server.port())),
        "{text}"
    );
    assert!(text.contains("NotWritablePrimary"), "{text}");
    // A command error leaves the connection usable.
    client
        .database("app")
        .run_command(doc! { "ping": 1 })
        .await
        .unwrap();
    assert_eq!(crate::app_connections(&server), 1);
}

#[tokio::test]
async fn empty_command_is_rejected_without_io() {
    let server = server().await;
    let client = client(&server, "").await;
    let error = client.database("x").run_command(doc! {}).await.unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::InvalidArgument { .. }),
        "{error}"
    );
    assert_eq!(server.requests().len(), 0);
}

#[tokio::test]
async fn compression_round_trip_with_each_compressor() {
    for (name, id) in [
        ("snappy", CompressorId::Snappy),
        ("zlib", CompressorId::Zlib),
        ("zstd", CompressorId::Zstd),
    ] {
        let server = server().await;
        let payload = "steadfast ".repeat(500);
        let echo = payload.clone();
        server
            .rule(Matcher::command("echo"), doc! { "echo": echo, "ok": 1 })
            .always();
        let client = client(
            &server,
            &format!("compressors={name}&zlibCompressionLevel=9"),
        )
        .await;
        let reply = client
            .database("db")
            .run_command(doc! { "echo": payload.clone() })
            .await
            .unwrap();
        assert_eq!(reply.get_str("echo").ok(), Some(payload.as_str()), "{name}");
        let request = server
            .requests()
            .into_iter()
            .find(|r| r.command_name() == "echo")
            .unwrap();
        assert_eq!(request.request().compressed_with(), Some(id), "{name}");
    }
}
