//! Connection framing against an in-memory peer that the test scripts byte by byte.

use bson::{RawDocumentBuf, doc, rawdoc};
use steadfast_core::ServerAddress;
use steadfast_core::description::ServerType;
use steadfast_wire::{Body, Compressor, FrameDecoder, Message, MsgFlags, OpMsg};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

use super::*;
use crate::ErrorKind;

fn pair() -> (Connection, DuplexStream) {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let connection = Connection::new(1, ServerAddress::tcp("peer", 1), Box::new(ours), None);
    (connection, theirs)
}

/// Reads one request frame from the peer side.
async fn read_request(peer: &mut DuplexStream) -> Message {
    let mut decoder = FrameDecoder::new(DEFAULT_MAX_MESSAGE_SIZE);
    loop {
        if let Some(message) = decoder.next_message().expect("valid request") {
            return message;
        }
        let n = peer.read_buf(decoder.read_buffer()).await.expect("read");
        assert!(n > 0, "client closed before sending a whole request");
    }
}

fn reply_bytes(response_to: i32, body: RawDocumentBuf, flags: MsgFlags) -> Vec<u8> {
    Message::new(
        9000 + response_to,
        response_to,
        OpMsg::new(body).with_flags(flags),
    )
    .to_bytes(None, DEFAULT_MAX_MESSAGE_SIZE)
    .expect("encodable reply")
}

fn ping() -> RawDocumentBuf {
    rawdoc! { "ping": 1, "$db": "admin" }
}

#[tokio::test]
async fn round_trip_and_reuse() {
    let (mut connection, mut peer) = pair();
    for _ in 0..2 {
        let server = async {
            let request = read_request(&mut peer).await;
            let Body::Msg(msg) = &request.body else {
                panic!("OP_MSG expected")
            };
            assert_eq!(msg.command_name(), Some("ping"));
            assert_eq!(request.compressed_with, None);
            peer.write_all(&reply_bytes(
                request.request_id,
                rawdoc! { "ok": 1 },
                MsgFlags::empty(),
            ))
            .await
            .unwrap();
        };
        let (reply, ()) = tokio::join!(
            connection.send_command(ping(), IoLimit::SocketTimeout(None)),
            server
        );
        assert_eq!(reply.unwrap(), rawdoc! { "ok": 1 });
        assert!(!connection.is_broken());
    }
}

#[tokio::test]
async fn mismatched_response_to_is_a_protocol_error_and_breaks_the_connection() {
    let (mut connection, mut peer) = pair();
    let server = async {
        let request = read_request(&mut peer).await;
        peer.write_all(&reply_bytes(
            request.request_id + 1,
            rawdoc! { "ok": 1 },
            MsgFlags::empty(),
        ))
        .await
        .unwrap();
    };
    let (reply, ()) = tokio::join!(
        connection.send_command(ping(), IoLimit::SocketTimeout(None)),
        server
    );
    let error = reply.unwrap_err();
    assert!(error.is_protocol_error(), "{error}");
    assert!(error.to_string().contains("peer:1"), "{error}");
    assert!(connection.is_broken());
    let again = connection
        .send_command(ping(), IoLimit::SocketTimeout(None))
        .await
        .unwrap_err();
    assert!(
        again.is_network_error(),
        "a broken connection refuses work: {again}"
    );
}

#[tokio::test]
async fn garbage_is_a_protocol_error() {
    let (mut connection, mut peer) = pair();
    let server = async {
        read_request(&mut peer).await;
        // A length prefix of 16 bytes with an unknown opcode.
        let mut garbage = 16_i32.to_le_bytes().to_vec();
        garbage.extend_from_slice(&[0xAB; 12]);
        peer.write_all(&garbage).await.unwrap();
    };
    let (reply, ()) = tokio::join!(
        connection.send_command(ping(), IoLimit::SocketTimeout(None)),
        server
    );
    assert!(reply.unwrap_err().is_protocol_error());
    assert!(connection.is_broken());
}

#[tokio::test]
async fn close_mid_frame_is_a_network_error() {
    let (mut connection, mut peer) = pair();
    let server = async move {
        let request = read_request(&mut peer).await;
        let bytes = reply_bytes(request.request_id, rawdoc! { "ok": 1 }, MsgFlags::empty());
        peer.write_all(&bytes[..bytes.len() / 2]).await.unwrap();
        drop(peer);
    };
    let (reply, ()) = tokio::join!(
        connection.send_command(ping(), IoLimit::SocketTimeout(None)),
        server
    );
    let error = reply.unwrap_err();
    assert!(error.is_network_error() && !error.is_timeout(), "{error}");
    assert!(error.to_string().contains("middle of a reply"), "{error}");
    assert!(connection.is_broken());
}

#[tokio::test(start_paused = true)]
async fn silent_server_hits_the_socket_timeout() {
    let (ours, mut peer) = tokio::io::duplex(1024);
    let mut connection = Connection::new(
        1,
        ServerAddress::tcp("peer", 1),
        Box::new(ours),
        Some(Duration::from_millis(200)),
    );
    let server = async {
        read_request(&mut peer).await;
        peer
    };
    let (reply, _peer) = tokio::join!(
        connection.send_command(ping(), IoLimit::SocketTimeout(None)),
        server
    );
    let error = reply.unwrap_err();
    assert!(error.is_timeout(), "{error}");
    assert!(connection.is_broken());
}

/// Sends a ping under `limit` to a peer that reads it, then blocks its thread past the 20 ms
/// socket timeout before replying, as an overloaded machine would: the client's timer expires,
/// and the reply is written before the client is polled again.
async fn reply_seen_after_the_socket_timeout(limit: IoLimit) -> Result<OpMsg> {
    let (ours, mut peer) = tokio::io::duplex(1024);
    let socket_timeout = Duration::from_millis(20);
    let mut connection = Connection::new(
        1,
        ServerAddress::tcp("peer", 1),
        Box::new(ours),
        Some(socket_timeout),
    );
    let server = async {
        let request = read_request(&mut peer).await;
        std::thread::sleep(socket_timeout * 3);
        let reply = reply_bytes(request.request_id, rawdoc! { "ok": 1 }, MsgFlags::empty());
        peer.write_all(&reply).await.expect("write reply");
        peer
    };
    let (reply, _peer) = tokio::join!(connection.send_message(OpMsg::new(ping()), limit), server);
    reply
}

#[tokio::test]
async fn an_operations_reply_first_seen_after_its_socket_timeout_is_a_timeout() {
    let error = reply_seen_after_the_socket_timeout(IoLimit::OperationSocketTimeout)
        .await
        .unwrap_err();
    assert!(error.is_timeout(), "{error}");
}

#[tokio::test]
async fn an_operations_reply_first_seen_after_its_deadline_is_a_timeout() {
    let deadline = Instant::now() + Duration::from_millis(20);
    let error = reply_seen_after_the_socket_timeout(IoLimit::Deadline(Some(deadline)))
        .await
        .unwrap_err();
    assert!(error.is_timeout(), "{error}");
}

#[tokio::test]
async fn a_handshakes_reply_found_beside_its_expired_socket_timeout_is_used() {
    let reply = reply_seen_after_the_socket_timeout(IoLimit::SocketTimeout(None)).await;
    assert!(reply.is_ok(), "{reply:?}");
}

#[tokio::test(start_paused = true)]
async fn operation_deadline_bounds_the_exchange() {
    let (mut connection, mut peer) = pair();
    let deadline = Instant::now() + Duration::from_millis(50);
    let server = async {
        read_request(&mut peer).await;
        peer
    };
    let (reply, _peer) = tokio::join!(
        connection.send_command(ping(), IoLimit::SocketTimeout(Some(deadline))),
        server
    );
    assert!(reply.unwrap_err().is_timeout());
}

#[tokio::test]
async fn a_dropped_exchange_leaves_the_connection_broken() {
    let (mut connection, mut peer) = pair();
    {
        let exchange = connection.send_command(ping(), IoLimit::SocketTimeout(None));
        tokio::pin!(exchange);
        tokio::select! {
            _ = &mut exchange => panic!("no reply was sent"),
            _ = read_request(&mut peer) => {}
        }
    }
    assert!(
        connection.is_broken(),
        "an abandoned exchange must not be reused"
    );
}

/// Sends a ping under a 50 ms operation deadline that the silent peer lets pass; returns the
/// request the peer received.
async fn ping_past_its_deadline(connection: &mut Connection, peer: &mut DuplexStream) -> Message {
    let deadline = Instant::now() + Duration::from_millis(50);
    let limit = IoLimit::Deadline(Some(deadline));
    let (reply, request) = tokio::join!(
        connection.send_message(OpMsg::new(ping()), limit),
        read_request(peer)
    );
    assert!(reply.unwrap_err().is_timeout());
    request
}

#[tokio::test(start_paused = true)]
async fn a_reply_the_deadline_left_unread_is_drained_and_the_connection_reused() {
    let (mut connection, mut peer) = pair();
    let request = ping_past_its_deadline(&mut connection, &mut peer).await;
    assert!(connection.has_late_reply());
    assert!(connection.is_broken() && !connection.is_reusable());
    let late = reply_bytes(request.request_id, rawdoc! { "ok": 1 }, MsgFlags::empty());
    peer.write_all(&late).await.unwrap();
    let drained = connection
        .drain_late_reply(Deadline::At(Instant::now() + Duration::from_secs(1)))
        .await;
    assert!(drained && connection.is_reusable() && !connection.has_late_reply());

    let server = async {
        let request = read_request(&mut peer).await;
        let reply = reply_bytes(request.request_id, rawdoc! { "ok": 2 }, MsgFlags::empty());
        peer.write_all(&reply).await.unwrap();
    };
    let (reply, ()) = tokio::join!(
        connection.send_command(ping(), IoLimit::SocketTimeout(None)),
        server
    );
    assert_eq!(
        reply.unwrap(),
        rawdoc! { "ok": 2 },
        "the next command gets its own reply"
    );
}

#[tokio::test(start_paused = true)]
async fn a_dropped_drain_leaves_the_connection_broken() {
    let (mut connection, mut peer) = pair();
    ping_past_its_deadline(&mut connection, &mut peer).await;
    {
        let drain =
            connection.drain_late_reply(Deadline::At(Instant::now() + Duration::from_secs(60)));
        tokio::pin!(drain);
        tokio::select! {
            biased;
            _ = &mut drain => panic!("no reply was sent"),
            () = std::future::ready(()) => {}
        }
    }
    assert!(!connection.has_late_reply(), "no drain is owed any more");
    assert!(connection.is_broken() && !connection.is_reusable());
}

#[tokio::test]
async fn more_to_come_replies_are_streamed() {
    let (mut connection, mut peer) = pair();
    let server = async {
        let request = read_request(&mut peer).await;
        let first = reply_bytes(
            request.request_id,
            rawdoc! { "ok": 1, "n": 1 },
            MsgFlags::MORE_TO_COME,
        );
        peer.write_all(&first).await.unwrap();
        // The next reply answers the previous reply (9000 + request id), not the request.
        let second_id = 9000 + request.request_id;
        let second = Message::new(
            second_id + 1,
            second_id,
            OpMsg::new(rawdoc! { "ok": 1, "n": 2 }),
        )
        .to_bytes(None, DEFAULT_MAX_MESSAGE_SIZE)
        .unwrap();
        peer.write_all(&second).await.unwrap();
    };
    let exhaust = OpMsg::new(ping()).with_flags(MsgFlags::EXHAUST_ALLOWED);
    let (first, ()) = tokio::join!(
        connection.send_message(exhaust, IoLimit::SocketTimeout(None)),
        server
    );
    assert_eq!(first.unwrap().body, rawdoc! { "ok": 1, "n": 1 });
    assert!(connection.is_streaming());
    let refused = connection
        .send_command(ping(), IoLimit::SocketTimeout(None))
        .await
        .unwrap_err();
    assert!(
        matches!(refused.kind(), ErrorKind::InvalidArgument { .. }),
        "{refused}"
    );
    let second = connection
        .next_streamed_reply(IoLimit::SocketTimeout(None))
        .await
        .unwrap();
    assert_eq!(second.body, rawdoc! { "ok": 1, "n": 2 });
    assert!(!connection.is_streaming());
    assert!(!connection.is_broken());
    assert!(
        connection
            .next_streamed_reply(IoLimit::SocketTimeout(None))
            .await
            .is_err(),
        "nothing pending"
    );
}

#[tokio::test]
async fn negotiated_compression_skips_uncompressible_commands() {
    let (mut connection, mut peer) = pair();
    let reply = doc! {
        "isWritablePrimary": true, "maxWireVersion": 21, "ok": 1,
        "compression": ["zlib", "snappy"],
    };
    // Ours: snappy first; the server lists zlib first: our preference decides.
    let ours = [Compressor::Snappy, Compressor::Zlib { level: None }];
    let description =
        StreamDescription::from_handshake_reply(connection.address(), &reply, &ours).unwrap();
    assert_eq!(description.compressor, Some(Compressor::Snappy));
    assert_eq!(description.server_type, ServerType::Standalone);
    connection.set_description(description);

    for (command, compressed) in [
        (rawdoc! { "ping": 1, "$db": "admin" }, true),
        (rawdoc! { "saslStart": 1, "$db": "admin" }, false),
        (rawdoc! { "hello": 1, "$db": "admin" }, false),
    ] {
        let server = async {
            let request = read_request(&mut peer).await;
            peer.write_all(&reply_bytes(
                request.request_id,
                rawdoc! { "ok": 1 },
                MsgFlags::empty(),
            ))
            .await
            .unwrap();
            request.compressed_with
        };
        let (reply, used) = tokio::join!(
            connection.send_command(command, IoLimit::SocketTimeout(None)),
            server
        );
        reply.unwrap();
        assert_eq!(used.is_some(), compressed);
    }
}

#[tokio::test]
async fn over_size_command_is_refused_before_sending() {
    let (mut connection, _peer) = pair();
    // 1000-byte documents; the message limit is raised to hold one plus 16 KiB of command.
    let reply = doc! {
        "isWritablePrimary": true, "maxWireVersion": 21, "ok": 1,
        "maxBsonObjectSize": 1000, "maxMessageSizeBytes": 1000,
    };
    connection.set_description(
        StreamDescription::from_handshake_reply(connection.address(), &reply, &[]).unwrap(),
    );
    let big = rawdoc! { "insert": "c", "pad": "x".repeat(40_000), "$db": "d" };
    let error = connection
        .send_command(big, IoLimit::SocketTimeout(None))
        .await
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::InvalidArgument { .. }),
        "{error}"
    );
    assert!(!connection.is_broken(), "nothing was written");
}

#[test]
fn the_io_deadline_is_the_operations_alone_under_timeout_ms() {
    let now = crate::runtime::now();
    let socket = Some(Duration::from_millis(10));
    let later = now + Duration::from_secs(5);
    // socketTimeoutMS gives way to the deadline, even when it is shorter, or absent.
    assert_eq!(
        io_deadline(IoLimit::Deadline(Some(later)), socket, || now),
        Some(later)
    );
    assert_eq!(io_deadline(IoLimit::Deadline(None), socket, || now), None);
}

#[test]
fn without_timeout_ms_the_io_deadline_is_the_earlier_of_socket_timeout_and_the_limit() {
    let now = crate::runtime::now();
    let socket = Duration::from_millis(10);
    let soon = now + Duration::from_millis(3);
    let later = now + Duration::from_secs(5);
    let limit = IoLimit::SocketTimeout;
    assert_eq!(
        io_deadline(limit(None), Some(socket), || now),
        Some(now + socket)
    );
    assert_eq!(
        io_deadline(limit(Some(soon)), Some(socket), || now),
        Some(soon)
    );
    assert_eq!(
        io_deadline(limit(Some(later)), Some(socket), || now),
        Some(now + socket)
    );
    assert_eq!(io_deadline(limit(Some(later)), None, || now), Some(later));
    assert_eq!(io_deadline(limit(None), None, || now), None);
    // A socket timeout past what an Instant can hold sets no limit instead of panicking.
    assert_eq!(io_deadline(limit(None), Some(Duration::MAX), || now), None);
}
