//! Bad bytes and dropped connections: each is a typed error, the connection is discarded, and
//! the next command reconnects.

use blackpipe::scripted::{Matcher, PendingRequest, ScriptedServer};
use bson::{doc, rawdoc};
use steadfast::{Client, Error};
use steadfast_wire::{DEFAULT_MAX_MESSAGE_SIZE, Message, OpMsg};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::{client, handshakes, server};

/// Runs `probe` on a fresh client, lets `react` answer it, and returns the error; then checks
/// that the next command opens a new connection and succeeds.
async fn probe_with(react: impl FnOnce(PendingRequest)) -> Error {
    let server = server().await;
    let client = client(&server, "").await;
    let error = failing_probe(&server, &client, react).await;
    let reply = client.database("db").run_command(doc! { "ping": 1 }).await;
    assert!(reply.is_ok(), "the next command reconnects: {reply:?}");
    assert_eq!(
        handshakes(&server).len(),
        2,
        "a second connection was opened"
    );
    assert_eq!(crate::app_connections(&server), 2);
    // The broken connection was closed: the new one and the monitor's remain.
    server.wait_for_open_connections(2).await;
    error
}

async fn failing_probe(
    server: &ScriptedServer,
    client: &Client,
    react: impl FnOnce(PendingRequest),
) -> Error {
    let db = client.database("db");
    let run = tokio::spawn(async move { db.run_command(doc! { "probe": 1 }).await });
    let pending = server
        .next_request(Matcher::command("probe"))
        .await
        .unwrap();
    react(pending);
    run.await.unwrap().expect_err("the probe must fail")
}

fn reply_frame(request_id: i32, response_to: i32) -> Vec<u8> {
    Message::new(request_id, response_to, OpMsg::new(rawdoc! { "ok": 1 }))
        .to_bytes(None, DEFAULT_MAX_MESSAGE_SIZE)
        .unwrap()
}

#[tokio::test]
async fn garbage_reply_is_a_protocol_error() {
    let error = probe_with(|pending| {
        let mut garbage = 24_i32.to_le_bytes().to_vec();
        garbage.extend_from_slice(b"\x01\x02\x03\x04this is not mongo");
        garbage.truncate(24);
        pending.reply_raw(garbage).unwrap();
    })
    .await;
    assert!(error.is_protocol_error(), "{error}");
    assert!(error.address().is_some());
}

#[tokio::test]
async fn over_size_length_is_a_protocol_error() {
    let error = probe_with(|pending| {
        let mut frame = (DEFAULT_MAX_MESSAGE_SIZE as i32 + 1).to_le_bytes().to_vec();
        frame.extend_from_slice(&[0; 12]);
        pending.reply_raw(frame).unwrap();
    })
    .await;
    assert!(error.is_protocol_error(), "{error}");
}

#[tokio::test]
async fn mismatched_response_to_is_a_protocol_error() {
    let error = probe_with(|pending| {
        let request_id = pending.request().request_id();
        pending
            .reply_raw(reply_frame(77, request_id.wrapping_add(1000)))
            .unwrap();
    })
    .await;
    assert!(error.is_protocol_error(), "{error}");
    assert!(error.to_string().contains("answers request"), "{error}");
}

#[tokio::test]
async fn hang_up_before_replying_is_a_network_error() {
    let error = probe_with(|pending| pending.hang_up().unwrap()).await;
    assert!(error.is_network_error() && !error.is_timeout(), "{error}");
    assert!(
        error.to_string().contains("closed the connection"),
        "{error}"
    );
}

#[tokio::test]
async fn truncated_frame_with_socket_timeout_is_a_timeout() {
    let server = server().await;
    let client = client(&server, "socketTimeoutMS=300").await;
    let error = failing_probe(&server, &client, |pending| {
        let request_id = pending.request().request_id();
        let frame = reply_frame(5, request_id);
        pending
            .reply_raw(frame[..frame.len() - 3].to_vec())
            .unwrap();
    })
    .await;
    assert!(error.is_timeout() && error.is_network_error(), "{error}");
    client
        .database("db")
        .run_command(doc! { "ping": 1 })
        .await
        .unwrap();
    assert_eq!(handshakes(&server).len(), 2);
}

/// blackpipe cannot write part of a frame and then close, so this one peer is hand-rolled:
/// it answers every hello (the monitor's and the handshakes), and when a connection sends the
/// probe it sends half of the reply and closes that socket, then stops listening.
#[tokio::test]
async fn truncated_frame_then_close_is_a_network_error() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (probed, mut probe_seen) = tokio::sync::mpsc::unbounded_channel::<()>();
    let peer = tokio::spawn(async move {
        let mut connections = Vec::new();
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let (socket, _) = accepted.unwrap();
                    connections.push(tokio::spawn(serve_until_probe(socket, probed.clone())));
                }
                _ = probe_seen.recv() => break,
            }
        }
        // The listener is dropped here: nothing can connect any more.
        connections
    });
    let client = Client::with_uri_str(&format!(
        "mongodb://127.0.0.1:{port}/?serverSelectionTimeoutMS=500"
    ))
    .await
    .unwrap();
    let error = client
        .database("db")
        .run_command(doc! { "probe": 1 })
        .await
        .unwrap_err();
    assert!(error.is_network_error() && !error.is_timeout(), "{error}");
    assert!(error.to_string().contains("middle of a reply"), "{error}");
    // The listener is gone (and the monitor's connection with it): the next command fails
    // with a network error, not a stale-socket error.
    for connection in peer.await.unwrap() {
        connection.abort();
    }
    let again = client
        .database("db")
        .run_command(doc! { "ping": 1 })
        .await
        .unwrap_err();
    assert!(
        again.is_network_error() || again.to_string().contains("network error"),
        "{again}"
    );
}

/// Answers hellos on `socket`; on any other command, writes half a reply, closes the socket
/// and reports it.
async fn serve_until_probe(
    mut socket: tokio::net::TcpStream,
    probed: tokio::sync::mpsc::UnboundedSender<()>,
) {
    let mut decoder = steadfast_wire::FrameDecoder::new(DEFAULT_MAX_MESSAGE_SIZE);
    loop {
        let message = loop {
            if let Some(message) = decoder.next_message().unwrap() {
                break message;
            }
            if socket.read_buf(decoder.read_buffer()).await.unwrap_or(0) == 0 {
                return;
            }
        };
        let steadfast_wire::Body::Msg(msg) = &message.body else {
            return;
        };
        if msg
            .command_name()
            .is_some_and(|n| n == "isMaster" || n == "hello")
        {
            let reply = Message::new(
                1,
                message.request_id,
                OpMsg::new(rawdoc! { "isWritablePrimary": true, "maxWireVersion": 21, "ok": 1 }),
            );
            if socket
                .write_all(&reply.to_bytes(None, DEFAULT_MAX_MESSAGE_SIZE).unwrap())
                .await
                .is_err()
            {
                return;
            }
            continue;
        }
        let frame = reply_frame(2, message.request_id);
        socket.write_all(&frame[..frame.len() / 2]).await.unwrap();
        drop(socket);
        let _ = probed.send(());
        return;
    }
}

#[tokio::test]
async fn refused_connection_is_a_selection_error_naming_the_address_and_the_network_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let client = Client::with_uri_str(&format!(
        "mongodb://127.0.0.1:{port}/?serverSelectionTimeoutMS=300"
    ))
    .await
    .unwrap();
    let error = client
        .database("db")
        .run_command(doc! { "ping": 1 })
        .await
        .unwrap_err();
    // The monitor's check failed, so no server was ever selectable: the error describes the
    // topology seen, with the server's address and its network error.
    assert!(
        matches!(error.kind(), steadfast::ErrorKind::ServerSelection { .. }),
        "{error}"
    );
    let text = error.to_string();
    assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
    assert!(text.contains("network error"), "{text}");
}

#[tokio::test]
async fn a_dropped_command_future_discards_the_connection() {
    let server = server().await;
    let client = client(&server, "").await;
    let db = client.database("db");
    let run = tokio::spawn(async move { db.run_command(doc! { "slow": 1 }).await });
    let pending = server.next_request(Matcher::command("slow")).await.unwrap();
    run.abort();
    assert!(run.await.unwrap_err().is_cancelled());
    pending.no_reply().ok();
    client
        .database("db")
        .run_command(doc! { "ping": 1 })
        .await
        .unwrap();
    assert_eq!(
        handshakes(&server).len(),
        2,
        "the abandoned connection was not reused"
    );
}
