//! Load-balanced mode against blackpipe's scripted server standing in for a load balancer:
//! each connection's hello carries the `serviceId` of the service "behind" it (odd server-side
//! connections reach one service, even ones another), so pinning and per-service clearing are
//! observable connection by connection.

use std::ops::Range;
use std::sync::Arc;

use blackpipe::scripted::{Matcher, Responder, RuleBuilder, ScriptedServer};
use blackpipe::server::{Outcome, Reaction};
use bson::oid::ObjectId;
use bson::{Document, doc};
use futures_util::StreamExt;
use steadfast::event::{CmapEvent, CommandEvent, Event, EventRecorder};
use steadfast::{Client, ClientBuilder};

use crate::crud_wire::{acknowledge_writes, cursor_reply, script_cursor};
use crate::pool::hello_reply;
use crate::retry_support::{HANG_GUARD, within};
use crate::{server, uri};

/// The two services behind the scripted load balancer.
struct Services {
    odd: ObjectId,
    even: ObjectId,
}

/// A scripted server answering every hello as a mongos behind a load balancer would.
async fn load_balancer() -> (ScriptedServer, Services) {
    let server = server().await;
    let services = Services {
        odd: ObjectId::new(),
        even: ObjectId::new(),
    };
    let (odd, even) = (services.odd, services.even);
    server
        .rule(
            Matcher::hello(),
            Responder::from_fn(move |request, connection| {
                let mut reply = hello_reply(request.command_name() != "hello");
                let service = if connection.id.get() % 2 == 1 {
                    odd
                } else {
                    even
                };
                reply.insert("serviceId", service);
                reply.insert("msg", "isdbgrid");
                Outcome::React(Reaction::Reply(reply))
            }),
        )
        .always();
    (server, services)
}

/// A load-balanced client for `server` recording every event.
async fn lb_client(server: &ScriptedServer) -> (Client, Arc<EventRecorder>) {
    lb_client_with(server, "").await
}

/// [`lb_client`] with more connection string `options` (`&name=value...`).
async fn lb_client_with(server: &ScriptedServer, options: &str) -> (Client, Arc<EventRecorder>) {
    let events = Arc::new(EventRecorder::new());
    let client = ClientBuilder::from_uri_str(&uri(server, &format!("loadBalanced=true{options}")))
        .await
        .expect("valid connection string")
        .event_listener(events.clone())
        .build()
        .expect("the client builds");
    (client, events)
}

fn cmap(events: &EventRecorder) -> Vec<CmapEvent> {
    events
        .events()
        .into_iter()
        .filter_map(|event| match event {
            Event::Cmap(event) => Some(event),
            _ => None,
        })
        .collect()
}

/// Connections checked out and not yet checked in.
fn checked_out(events: &EventRecorder) -> usize {
    let events = cmap(events);
    let out = events
        .iter()
        .filter(|e| matches!(e, CmapEvent::ConnectionCheckedOut { .. }))
        .count();
    let back = events
        .iter()
        .filter(|e| matches!(e, CmapEvent::ConnectionCheckedIn { .. }))
        .count();
    out - back
}

/// Waits until every checked-out connection is checked back in.
async fn all_checked_in(events: &EventRecorder) {
    let guard = async {
        let mut from = 0;
        while checked_out(events) > 0 {
            let (index, _) = events
                .wait_for(from, HANG_GUARD, |e| {
                    matches!(e, Event::Cmap(CmapEvent::ConnectionCheckedIn { .. }))
                })
                .await
                .expect("a connection is checked in");
            from = index + 1;
        }
    };
    within(guard).await;
}

/// The server-side connection each request of `command` arrived on.
/// Scripts a `find` (answered once) that opens cursor `id` with the documents `first`, and the
/// `killCursors` that ends it, whose rule the caller limits.
fn script_killable_cursor(server: &ScriptedServer, first: Range<i32>, id: i64) -> RuleBuilder {
    server
        .rule(
            Matcher::command("find"),
            cursor_reply("firstBatch", first, id),
        )
        .once();
    server.rule(
        Matcher::command("killCursors"),
        doc! { "cursorsKilled": [id], "ok": 1 },
    )
}

fn connections_of(server: &ScriptedServer, command: &str) -> Vec<u64> {
    server
        .requests_matching(&Matcher::command(command))
        .iter()
        .map(|r| r.connection_id().get())
        .collect()
}

#[tokio::test]
async fn a_cursor_keeps_its_connection_until_drained_and_get_mores_use_it() {
    let (server, _) = load_balancer().await;
    script_cursor(&server, &[(0..2, 7), (2..4, 7), (4..5, 0)]);
    let (client, events) = lb_client(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let mut cursor = within(items.find(doc! {}).batch_size(2)).await.unwrap();
    assert_eq!(
        checked_out(&events),
        1,
        "the open cursor holds its connection"
    );
    // A concurrent operation needs a connection of its own.
    within(client.database("db").run_command(doc! { "ping": 1 }))
        .await
        .unwrap();
    for _ in 0..4 {
        within(cursor.next()).await.unwrap().unwrap();
    }
    assert_eq!(checked_out(&events), 1, "still pinned between getMores");
    within(cursor.next()).await.unwrap().unwrap();
    assert_eq!(
        checked_out(&events),
        0,
        "released when the server drained the cursor"
    );
    assert!(within(cursor.next()).await.is_none());
    let find = connections_of(&server, "find");
    assert_eq!(connections_of(&server, "getMore"), vec![find[0], find[0]]);
    assert_ne!(connections_of(&server, "ping"), find, "ping ran elsewhere");
    let cursor_checkouts = cmap(&events)
        .iter()
        .filter(|e| matches!(e, CmapEvent::ConnectionCheckedOut { .. }))
        .count();
    assert_eq!(
        cursor_checkouts, 2,
        "one check-out for the cursor, one for ping"
    );
    client.shutdown().await;
}

#[tokio::test]
async fn a_dropped_cursor_is_killed_on_its_pinned_connection_which_is_then_released() {
    let (server, _) = load_balancer().await;
    script_killable_cursor(&server, 0..2, 42).once();
    let (client, events) = lb_client(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let mut cursor = within(items.find(doc! {}).batch_size(2)).await.unwrap();
    within(cursor.next()).await.unwrap().unwrap();
    drop(cursor);
    all_checked_in(&events).await;
    assert_eq!(
        connections_of(&server, "killCursors"),
        connections_of(&server, "find"),
        "killCursors went on the cursor's connection"
    );
    client.shutdown().await;
}

#[tokio::test]
async fn a_cursor_whose_get_more_timed_out_is_killed_on_its_connection_after_the_late_reply() {
    // The getMore's reply, left unread by the timeout, is read off the pinned connection,
    // which then carries the killCursors (CSOT refreshes timeoutMS for close): it is the only
    // connection that reaches the service holding the cursor.
    let (server, _) = load_balancer().await;
    script_killable_cursor(&server, 0..1, 42).once();
    let (client, events) = lb_client_with(&server, "&timeoutMS=500").await;
    let items = client.database("db").collection::<Document>("items");
    let mut cursor = within(items.find(doc! {}).batch_size(1)).await.unwrap();
    within(cursor.next()).await.unwrap().unwrap();
    let fetch = tokio::spawn(async move {
        let result = cursor.next().await;
        (cursor, result)
    });
    let held = within(server.next_request(Matcher::command("getMore")))
        .await
        .expect("the getMore arrives");
    let (cursor, result) = fetch.await.unwrap();
    let error = result.expect("an item").expect_err("the getMore times out");
    assert!(error.is_timeout(), "{error:?}");
    held.reply(cursor_reply("nextBatch", 1..2, 42)).unwrap();
    cursor.close();
    all_checked_in(&events).await;
    assert_eq!(
        connections_of(&server, "killCursors"),
        connections_of(&server, "find"),
        "killCursors went on the cursor's connection"
    );
    let closed = count(&events, |e| matches!(e, CmapEvent::ConnectionClosed { .. }));
    assert_eq!(closed, 0, "the connection survived the timeout");
    client.shutdown().await;
}

#[tokio::test]
async fn a_transaction_runs_on_one_connection_until_its_session_ends() {
    let (server, _) = load_balancer().await;
    acknowledge_writes(&server);
    server
        .rule(Matcher::command("commitTransaction"), doc! { "ok": 1 })
        .always();
    let (client, events) = lb_client(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let mut session = within(client.start_session()).await.unwrap();
    within(session.start_transaction()).await.unwrap();
    for i in 0..3 {
        within(items.insert_one(doc! { "i": i }).session(&mut session))
            .await
            .unwrap();
        assert_eq!(checked_out(&events), 1, "pinned after statement {i}");
    }
    // Another operation meanwhile cannot take the transaction's connection.
    within(client.database("db").run_command(doc! { "ping": 1 }))
        .await
        .unwrap();
    within(session.commit_transaction()).await.unwrap();
    assert_eq!(
        checked_out(&events),
        1,
        "a committed transaction stays pinned"
    );
    within(session.commit_transaction()).await.unwrap();
    let inserts = connections_of(&server, "insert");
    assert_eq!(inserts.len(), 3);
    assert!(inserts.iter().all(|c| *c == inserts[0]));
    assert_eq!(
        connections_of(&server, "commitTransaction"),
        vec![inserts[0], inserts[0]],
        "commitTransaction (and its repetition) on the pinned connection"
    );
    assert_ne!(connections_of(&server, "ping"), vec![inserts[0]]);
    drop(session);
    assert_eq!(checked_out(&events), 0, "released when the session ends");
    client.shutdown().await;
}

/// The requests of `command`, in arrival order.
fn requests_of(server: &ScriptedServer, command: &str) -> Vec<Document> {
    server
        .requests_matching(&Matcher::command(command))
        .iter()
        .map(|r| r.command().clone())
        .collect()
}

/// A scripted load balancer answering a transaction's insert, one find opening cursor 42, its
/// killCursors and the transaction's abort.
async fn transaction_with_a_cursor() -> ScriptedServer {
    let (server, _) = load_balancer().await;
    acknowledge_writes(&server);
    script_killable_cursor(&server, 0..2, 42).always();
    server
        .rule(Matcher::command("abortTransaction"), doc! { "ok": 1 })
        .always();
    server
}

#[tokio::test]
async fn a_session_cursor_of_a_transaction_is_killed_in_it_on_the_transactions_connection() {
    let server = transaction_with_a_cursor().await;
    let (client, events) = lb_client(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let mut session = within(client.start_session()).await.unwrap();
    within(session.start_transaction()).await.unwrap();
    within(items.insert_one(doc! { "i": 0 }).session(&mut session))
        .await
        .unwrap();
    let cursor = within(items.find(doc! {}).batch_size(2).session(&mut session))
        .await
        .unwrap();
    within(cursor.close(&mut session)).await.unwrap();
    assert_eq!(checked_out(&events), 1, "only the transaction's connection");
    let transaction_connection = connections_of(&server, "insert");
    assert_eq!(
        connections_of(&server, "killCursors"),
        transaction_connection,
        "killCursors on the connection pinned to the transaction"
    );
    let kill = &requests_of(&server, "killCursors")[0];
    let insert = &requests_of(&server, "insert")[0];
    assert_eq!(kill.get("lsid"), insert.get("lsid"), "in the session");
    assert_eq!(
        kill.get("txnNumber"),
        insert.get("txnNumber"),
        "in its transaction"
    );
    within(session.abort_transaction()).await.unwrap();
    drop(session);
    assert_eq!(checked_out(&events), 0);
    let checkouts = count(&events, |e| {
        matches!(e, CmapEvent::ConnectionCheckedOut { .. })
    });
    assert_eq!(checkouts, 1, "no second connection was checked out");
    client.shutdown().await;
}

#[tokio::test]
async fn a_dropped_session_cursor_of_a_transaction_ends_with_it_and_takes_no_connection() {
    let server = transaction_with_a_cursor().await;
    let (client, events) = lb_client(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let mut session = within(client.start_session()).await.unwrap();
    within(session.start_transaction()).await.unwrap();
    let cursor = within(items.find(doc! {}).batch_size(2).session(&mut session))
        .await
        .unwrap();
    drop(cursor);
    within(session.abort_transaction()).await.unwrap();
    drop(session);
    assert_eq!(checked_out(&events), 0);
    // Shutdown waits for background killCursors: none was started.
    client.shutdown().await;
    assert!(connections_of(&server, "killCursors").is_empty());
    let find = connections_of(&server, "find");
    assert_eq!(connections_of(&server, "abortTransaction"), find);
}

#[tokio::test]
async fn a_session_cursor_outside_a_transaction_is_killed_in_the_session_on_its_own_connection() {
    let (server, _) = load_balancer().await;
    script_killable_cursor(&server, 0..2, 42).once();
    let (client, events) = lb_client(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let mut session = within(client.start_session()).await.unwrap();
    let mut cursor = within(items.find(doc! {}).batch_size(2).session(&mut session))
        .await
        .unwrap();
    within(cursor.next(&mut session)).await.unwrap().unwrap();
    assert_eq!(checked_out(&events), 1, "the cursor holds its connection");
    within(cursor.close(&mut session)).await.unwrap();
    assert_eq!(
        checked_out(&events),
        0,
        "released once the cursor is killed"
    );
    assert_eq!(
        connections_of(&server, "killCursors"),
        connections_of(&server, "find"),
        "killCursors went on the cursor's connection"
    );
    let kill = &requests_of(&server, "killCursors")[0];
    let find = &requests_of(&server, "find")[0];
    assert_eq!(kill.get("lsid"), find.get("lsid"), "in the session");
    assert!(!kill.contains_key("txnNumber"));
    client.shutdown().await;
}

#[tokio::test]
async fn a_retryable_code_without_the_label_is_not_retried_behind_a_load_balancer() {
    // The load balancer's server description has no wire version (it is never monitored):
    // the connection's handshake says the service is 4.4+, which labels its own retryable
    // errors, so an unlabelled InterruptedAtShutdown is final (retryable-writes
    // "RetryableWriteError Labels").
    let (server, _) = load_balancer().await;
    server
        .rule(
            Matcher::command("insert"),
            Reaction::error(11600, "InterruptedAtShutdown", "interrupted at shutdown"),
        )
        .always();
    let (client, _) = lb_client(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let error = within(items.insert_one(doc! { "i": 0 }))
        .await
        .expect_err("the unlabelled error is final");
    assert_eq!(error.code(), Some(11600));
    assert!(!error.contains_label("RetryableWriteError"));
    assert_eq!(connections_of(&server, "insert").len(), 1, "not retried");
    client.shutdown().await;
}

#[tokio::test]
async fn a_network_error_clears_only_the_failing_service() {
    let (server, services) = load_balancer().await;
    // Two cursors, pinned to two connections: server-side connection 1 (the odd service)
    // and 2 (the even one).
    server
        .rule(
            Matcher::command("find"),
            cursor_reply("firstBatch", 0..1, 5),
        )
        .times(2);
    server
        .rule(Matcher::command("getMore"), Reaction::HangUp)
        .once();
    let (client, events) = lb_client(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let mut first = within(items.find(doc! {}).batch_size(1)).await.unwrap();
    let second = within(items.find(doc! {}).batch_size(1)).await.unwrap();
    let finds = connections_of(&server, "find");
    assert_eq!(finds.len(), 2);
    assert_ne!(finds[0], finds[1]);
    server
        .rule(
            Matcher::command("killCursors"),
            doc! { "cursorsKilled": [5_i64], "ok": 1 },
        )
        .always();
    drop(second);
    all_checked_in_but(&events, 1).await;
    let created_before = count(&events, |e| {
        matches!(e, CmapEvent::ConnectionCreated { .. })
    });
    within(first.next()).await.unwrap().unwrap();
    let error = within(first.next())
        .await
        .unwrap()
        .expect_err("getMore hangs up");
    assert!(error.is_network_error(), "{error}");
    let cleared: Vec<Option<ObjectId>> = cmap(&events)
        .iter()
        .filter_map(|e| match e {
            CmapEvent::PoolCleared { service_id, .. } => Some(*service_id),
            _ => None,
        })
        .collect();
    let failing = if finds[0] % 2 == 1 {
        services.odd
    } else {
        services.even
    };
    assert_eq!(cleared, vec![Some(failing)], "only the failing service");
    // The other service's idle connection survived the clear, and serves the next command.
    within(client.database("db").run_command(doc! { "ping": 1 }))
        .await
        .unwrap();
    assert_eq!(connections_of(&server, "ping"), vec![finds[1]]);
    let created_after = count(&events, |e| {
        matches!(e, CmapEvent::ConnectionCreated { .. })
    });
    assert_eq!(created_after, created_before, "no connection was replaced");
    drop(first);
    client.shutdown().await;
}

#[tokio::test]
async fn command_events_carry_the_connections_service_id() {
    let (server, services) = load_balancer().await;
    let (client, events) = lb_client(&server).await;
    within(client.database("db").run_command(doc! { "ping": 1 }))
        .await
        .unwrap();
    let ids: Vec<Option<ObjectId>> = events
        .events()
        .into_iter()
        .filter_map(|event| match event {
            Event::Command(CommandEvent::Started(e)) => Some(e.service_id),
            Event::Command(CommandEvent::Succeeded(e)) => Some(e.service_id),
            _ => None,
        })
        .collect();
    // Server-side connection 1: the odd service.
    assert_eq!(ids, vec![Some(services.odd), Some(services.odd)]);
    client.shutdown().await;
}

#[tokio::test]
async fn a_hello_without_service_id_is_refused_in_load_balanced_mode() {
    // The default responder answers as a plain standalone, without serviceId.
    let server = server().await;
    let (client, _) = lb_client(&server).await;
    let error = within(client.database("db").run_command(doc! { "ping": 1 }))
        .await
        .expect_err("not a load balancer");
    assert!(
        error.to_string().contains(
            "Driver attempted to initialize in load balancing mode, but the server does not support this mode"
        ),
        "{error}"
    );
    client.shutdown().await;
}

#[tokio::test]
async fn a_check_out_timeout_counts_the_connections_pinned_by_purpose() {
    let (server, _) = load_balancer().await;
    script_killable_cursor(&server, 0..1, 9).always();
    let events = Arc::new(EventRecorder::new());
    let query = "loadBalanced=true&maxPoolSize=1&waitQueueTimeoutMS=100";
    let client = ClientBuilder::from_uri_str(&uri(&server, query))
        .await
        .expect("valid connection string")
        .event_listener(events.clone())
        .build()
        .expect("the client builds");
    let items = client.database("db").collection::<Document>("items");
    let cursor = within(items.find(doc! {}).batch_size(1)).await.unwrap();
    let error = within(client.database("db").run_command(doc! { "ping": 1 }))
        .await
        .expect_err("the only connection is pinned to the cursor");
    assert!(
        format!("{error:#}").contains(
            "maxPoolSize: 1, connections in use by cursors: 1, connections in use by transactions: 0, connections in use by other operations: 0"
        ),
        "{error:#}"
    );
    drop(cursor);
    client.shutdown().await;
}

fn count(events: &EventRecorder, predicate: impl Fn(&CmapEvent) -> bool) -> usize {
    cmap(events).iter().filter(|e| predicate(e)).count()
}

/// Waits until only `left` connections remain checked out.
async fn all_checked_in_but(events: &EventRecorder, left: usize) {
    let guard = async {
        let mut from = 0;
        while checked_out(events) > left {
            let (index, _) = events
                .wait_for(from, HANG_GUARD, |e| {
                    matches!(e, Event::Cmap(CmapEvent::ConnectionCheckedIn { .. }))
                })
                .await
                .expect("a connection is checked in");
            from = index + 1;
        }
    };
    within(guard).await;
}
