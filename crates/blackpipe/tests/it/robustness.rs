//! Misbehaving clients lose only their own connection; shutdown closes everything.

use std::time::Duration;

use blackpipe::scripted::{Matcher, ScriptedConfig, ScriptedServer};
use blackpipe::server::{Gate, ServerConfig};
use bson::doc;
use steadfast_wire::{Message, OpMsg};

use crate::support::{RawClient, raw, within};

/// A second client that must keep working whatever the first one does.
async fn assert_bystander_works(bystander: &mut RawClient) {
    let reply = bystander
        .round_trip(doc! { "ping": 1, "$db": "admin" })
        .await;
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0);
}

#[tokio::test]
async fn garbage_bytes_close_only_that_connection() {
    let server = ScriptedServer::start().await.unwrap();
    let mut bystander = RawClient::connect(server.address()).await;
    assert_bystander_works(&mut bystander).await;

    // A length prefix below the 16-byte header size: framing is lost at once.
    let mut garbage = RawClient::connect(server.address()).await;
    garbage
        .write_raw(&[5, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4])
        .await;
    garbage.expect_closed().await;

    // A well-framed message with an unknown opcode.
    let mut unknown = RawClient::connect(server.address()).await;
    let mut frame = Vec::new();
    frame.extend_from_slice(&20_i32.to_le_bytes());
    frame.extend_from_slice(&1_i32.to_le_bytes());
    frame.extend_from_slice(&0_i32.to_le_bytes());
    frame.extend_from_slice(&9999_i32.to_le_bytes());
    frame.extend_from_slice(&[0, 0, 0, 0]);
    unknown.write_raw(&frame).await;
    unknown.expect_closed().await;

    // An OP_MSG whose body is not valid BSON.
    let mut bad_bson = RawClient::connect(server.address()).await;
    let mut frame = Vec::new();
    let body = [12_u8, 0, 0, 0, 0x02, b'a', 0, 0xff, 0xff, 0xff, 0xff, 0];
    let length = 16 + 4 + 1 + body.len();
    frame.extend_from_slice(&(length as i32).to_le_bytes());
    frame.extend_from_slice(&1_i32.to_le_bytes());
    frame.extend_from_slice(&0_i32.to_le_bytes());
    frame.extend_from_slice(&2013_i32.to_le_bytes());
    frame.extend_from_slice(&0_u32.to_le_bytes());
    frame.push(0);
    frame.extend_from_slice(&body);
    bad_bson.write_raw(&frame).await;
    bad_bson.expect_closed().await;

    within(server.wait_for_open_connections(1)).await;
    assert_bystander_works(&mut bystander).await;
    assert!(server.requests().iter().all(|r| r.command_name() == "ping"));
}

#[tokio::test]
async fn a_client_leaving_mid_message_is_cleaned_up() {
    let server = ScriptedServer::start().await.unwrap();
    let mut bystander = RawClient::connect(server.address()).await;
    let mut quitter = RawClient::connect(server.address()).await;
    within(server.wait_for_open_connections(2)).await;

    let frame = Message::new(1, 0, OpMsg::new(raw(&doc! { "ping": 1, "$db": "admin" })))
        .to_bytes(None, steadfast_wire::DEFAULT_MAX_MESSAGE_SIZE)
        .unwrap();
    quitter.write_raw(&frame[..frame.len() / 2]).await;
    quitter.shutdown_write().await;
    quitter.expect_closed().await;
    drop(quitter);

    within(server.wait_for_open_connections(1)).await;
    assert_bystander_works(&mut bystander).await;
    assert_eq!(
        server.requests().len(),
        1,
        "the half message was never a request"
    );
}

#[tokio::test]
async fn an_oversized_frame_is_refused_before_its_body_arrives() {
    let config =
        ScriptedConfig::default().with_server(ServerConfig::default().with_max_message_size(1024));
    let server = ScriptedServer::start_with(config).await.unwrap();
    let mut bystander = RawClient::connect(server.address()).await;

    // Only a header announcing 48 MB: the server must not wait for (or allocate) the body.
    let mut announcer = RawClient::connect(server.address()).await;
    let mut header = Vec::new();
    header.extend_from_slice(&48_000_000_i32.to_le_bytes());
    header.extend_from_slice(&1_i32.to_le_bytes());
    header.extend_from_slice(&0_i32.to_le_bytes());
    header.extend_from_slice(&2013_i32.to_le_bytes());
    announcer.write_raw(&header).await;
    announcer.expect_closed().await;

    // A complete, valid message just over the limit.
    let mut big = RawClient::connect(server.address()).await;
    big.send_command(doc! { "insert": "c", "pad": "x".repeat(2000), "$db": "app" })
        .await;
    big.expect_closed().await;

    within(server.wait_for_open_connections(1)).await;
    assert_bystander_works(&mut bystander).await;
}

#[tokio::test]
async fn a_flooding_client_does_not_slow_down_others() {
    let server = ScriptedServer::start().await.unwrap();
    let mut bystander = RawClient::connect(server.address()).await;
    let mut flooder = RawClient::connect(server.address()).await;

    // Far more pipelined requests than socket buffers hold, and the flooder never reads its
    // replies: its connection stalls on a full socket (backpressure), nobody else's does.
    // Large replies make the stall come after a few thousand requests rather than millions.
    server
        .rule("flood", doc! { "pad": "x".repeat(4096) })
        .always();
    let one = Message::new(1, 0, OpMsg::new(raw(&doc! { "flood": 1, "$db": "admin" })))
        .to_bytes(None, steadfast_wire::DEFAULT_MAX_MESSAGE_SIZE)
        .unwrap();
    let burst: Vec<u8> = one
        .iter()
        .copied()
        .cycle()
        .take(one.len() * 200_000)
        .collect();
    let flood = tokio::spawn(async move {
        flooder.write_raw(&burst).await;
        flooder
    });
    within(server.wait_for_requests("flood", 500))
        .await
        .unwrap();
    for _ in 0..20 {
        assert_bystander_works(&mut bystander).await;
    }

    // Hanging up the flooder (possibly mid-write) frees its connection on the server.
    flood.abort();
    let _ = flood.await;
    within(server.wait_for_open_connections(1)).await;
    assert_bystander_works(&mut bystander).await;
}

#[tokio::test]
async fn a_client_that_gives_up_on_an_unanswered_request_is_released() {
    let server = ScriptedServer::start().await.unwrap();
    let mut client = RawClient::connect(server.address()).await;
    client
        .send_command(doc! { "find": "c", "$db": "app" })
        .await;
    let pending = within(server.next_request("find")).await.unwrap();
    assert!(pending.is_connection_open());

    drop(client);
    within(server.wait_for_open_connections(0)).await;
    assert!(!pending.is_connection_open());
    let error = pending.ok().unwrap_err();
    assert!(error.to_string().contains("closed"), "{error}");
}

#[tokio::test]
async fn shutdown_closes_every_connection() {
    let server = ScriptedServer::start().await.unwrap();
    let mut clients = Vec::new();
    for _ in 0..3 {
        clients.push(RawClient::connect(server.address()).await);
    }
    // One of them is waiting for an answer the test will never give.
    clients[0]
        .send_command(doc! { "find": "c", "$db": "app" })
        .await;
    let _pending = within(server.next_request("find")).await.unwrap();
    within(server.wait_for_open_connections(3)).await;
    assert_eq!(server.server().accepted_connections(), 3);

    within(server.shutdown()).await;
    assert_eq!(server.open_connections(), 0);
    for client in &mut clients {
        client.expect_closed().await;
    }
    assert!(
        tokio::net::TcpStream::connect(server.address())
            .await
            .is_err(),
        "the listener is closed"
    );
}

#[tokio::test]
async fn dropping_the_server_closes_every_connection() {
    let server = ScriptedServer::start().await.unwrap();
    let mut client = RawClient::connect(server.address()).await;
    client
        .send_command(doc! { "find": "c", "$db": "app" })
        .await;
    within(server.wait_for_requests("find", 1)).await.unwrap();
    drop(server);
    client.expect_closed().await;
}

#[tokio::test]
async fn the_server_can_close_one_connection_or_all_and_keep_listening() {
    let server = ScriptedServer::start().await.unwrap();
    let mut first = RawClient::connect(server.address()).await;
    let mut second = RawClient::connect(server.address()).await;
    let mut third = RawClient::connect(server.address()).await;
    within(server.wait_for_open_connections(3)).await;
    let ids = server.server().connection_ids();
    assert_eq!(ids.len(), 3);

    // Which id is whose: ask each client's request.
    first.round_trip(doc! { "ping": 1, "$db": "admin" }).await;
    let first_id = server.requests()[0].connection_id();
    assert!(server.close_connection(first_id));
    first.expect_closed().await;
    within(server.wait_for_open_connections(2)).await;
    assert!(!server.close_connection(first_id), "already closed");
    assert_bystander_works(&mut second).await;

    assert_eq!(server.close_all_connections(), 2);
    second.expect_closed().await;
    third.expect_closed().await;
    within(server.wait_for_open_connections(0)).await;

    let mut newcomer = RawClient::connect(server.address()).await;
    assert_bystander_works(&mut newcomer).await;
}

async fn server_with(listener: ServerConfig) -> ScriptedServer {
    ScriptedServer::start_with(ScriptedConfig::default().with_server(listener))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_connection_past_the_limit_is_closed_at_once() {
    let server = server_with(ServerConfig::default().with_max_connections(2)).await;
    let mut first = RawClient::connect(server.address()).await;
    let _second = RawClient::connect(server.address()).await;
    within(server.wait_for_open_connections(2)).await;

    let mut refused = RawClient::connect(server.address()).await;
    refused.expect_closed().await;
    assert_bystander_works(&mut first).await;

    // A slot freed by a leaving client can be taken again.
    drop(first);
    within(server.wait_for_open_connections(1)).await;
    let mut later = RawClient::connect(server.address()).await;
    assert_bystander_works(&mut later).await;
}

#[tokio::test]
async fn a_slow_sender_holding_a_partial_frame_is_disconnected() {
    let listener = ServerConfig::default().with_read_timeout(Duration::from_millis(100));
    let server = server_with(listener).await;
    let mut bystander = RawClient::connect(server.address()).await;

    let frame = Message::new(1, 0, OpMsg::new(raw(&doc! { "ping": 1, "$db": "admin" })))
        .to_bytes(None, steadfast_wire::DEFAULT_MAX_MESSAGE_SIZE)
        .unwrap();
    let mut slow = RawClient::connect(server.address()).await;
    slow.write_raw(&frame[..frame.len() / 2]).await;
    slow.expect_closed().await;

    within(server.wait_for_open_connections(1)).await;
    assert_bystander_works(&mut bystander).await;
    assert!(server.requests().iter().all(|r| r.command_name() == "ping"));
}

#[tokio::test]
async fn an_idle_connection_is_closed_after_the_idle_timeout() {
    let listener = ServerConfig::default().with_idle_timeout(Duration::from_millis(100));
    let server = server_with(listener).await;
    let mut idle = RawClient::connect(server.address()).await;
    assert_bystander_works(&mut idle).await;
    idle.expect_closed().await;
    within(server.wait_for_open_connections(0)).await;
}

/// A request held by the server (a blocked fail point, an awaitable hello) is not idle time:
/// the held connection outlives another that really was idle for the same timeout.
#[tokio::test]
async fn a_held_request_is_not_cut_by_the_idle_or_read_timeout() {
    let timeout = Duration::from_millis(100);
    let listener = ServerConfig::default()
        .with_idle_timeout(timeout)
        .with_read_timeout(timeout);
    let server = server_with(listener).await;
    let gate = Gate::new();
    let mut held = RawClient::connect(server.address()).await;
    let held_id = held
        .send_command(doc! { "find": "held", "$db": "app" })
        .await;
    within(server.next_request(Matcher::command("find")))
        .await
        .unwrap()
        .after_gate(&gate)
        .reply(doc! { "which": "held" })
        .unwrap();

    // Connected after the request was held, so its idle timeout ends after the held one's
    // would have.
    let mut idle = RawClient::connect(server.address()).await;
    idle.expect_closed().await;

    gate.open();
    let reply = held.expect_message().await;
    assert_eq!(reply.response_to, held_id);
}

#[tokio::test]
async fn huge_freeze_and_step_down_periods_are_bad_values_and_change_nothing() {
    use blackpipe::deployment::DeploymentConfig;

    use crate::deployment::{client, start};
    let deployment = start(DeploymentConfig::replica_set(3)).await;
    let mut secondary = client(&deployment, 1).await;
    // `Duration::from_secs_f64(1e300)` used to panic the connection's task.
    let frozen = secondary
        .round_trip(doc! { "replSetFreeze": 1e300, "$db": "admin" })
        .await;
    assert_eq!(frozen.get_i32("code").unwrap(), 2, "{frozen}");
    assert_bystander_works(&mut secondary).await;

    // The freeze deadline used to overflow after the primary was already demoted.
    let mut primary = client(&deployment, 0).await;
    let stepped = primary
        .round_trip(doc! { "replSetStepDown": i64::MAX, "$db": "admin" })
        .await;
    assert_eq!(stepped.get_i32("code").unwrap(), 2, "{stepped}");
    let hello = primary
        .round_trip(doc! { "hello": 1, "$db": "admin" })
        .await;
    assert!(hello.get_bool("isWritablePrimary").unwrap(), "{hello}");
}

#[tokio::test]
async fn add_member_past_seven_voters_is_refused_with_mongods_error() {
    use blackpipe::deployment::{DeploymentConfig, MAX_VOTING_MEMBERS};

    use crate::deployment::{client, start};
    let deployment = start(DeploymentConfig::replica_set(3)).await;
    let mut admin = client(&deployment, 0).await;
    let add = doc! { "blackpipe": "addMember", "$db": "admin" };
    for _ in 3..MAX_VOTING_MEMBERS {
        let added = admin.round_trip(add.clone()).await;
        assert_eq!(added.get_f64("ok").unwrap(), 1.0, "{added}");
    }
    let refused = admin.round_trip(add).await;
    assert_eq!(refused.get_i32("code").unwrap(), 103, "{refused}");
    let config = admin
        .round_trip(doc! { "replSetGetConfig": 1, "$db": "admin" })
        .await;
    let members = config
        .get_document("config")
        .unwrap()
        .get_array("members")
        .unwrap();
    assert_eq!(members.len(), MAX_VOTING_MEMBERS);
}
