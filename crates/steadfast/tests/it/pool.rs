//! The connection pool against a scripted server: check-out and check-in, events in order,
//! refusals, establishment errors. Helpers shared by the other `pool_*` modules live here.

use std::sync::Arc;
use std::time::Duration;

use blackpipe::scripted::{Matcher, ScriptedServer, standalone_hello};
use blackpipe::server::{Outcome, Reaction};
use bson::{Document, doc};
use steadfast::event::{CmapEvent, ConnectionClosedReason, Event, EventRecorder};
use steadfast::pool::standalone::{StandalonePool, pool_error_details};
use steadfast_core::options::ClientOptions;
use steadfast_core::options::ParsedUri;

use crate::server;

/// A generous bound that only keeps a broken test from hanging.
pub(crate) const PATIENCE: Duration = Duration::from_secs(10);

/// A pool for `server` with the URI options in `query`, recording its events.
pub(crate) fn pool_for(
    server: &ScriptedServer,
    query: &str,
    maintenance: Option<Duration>,
) -> (StandalonePool, Arc<EventRecorder>) {
    pool_for_uri(
        &format!("mongodb://127.0.0.1:{}/?{query}", server.port()),
        maintenance,
    )
}

/// A pool for the single host of `uri`, recording its events.
pub(crate) fn pool_for_uri(
    uri: &str,
    maintenance: Option<Duration>,
) -> (StandalonePool, Arc<EventRecorder>) {
    let ParsedUri::Complete { options, .. } = ClientOptions::parse(uri).expect("valid URI") else {
        panic!("not an SRV URI")
    };
    let recorder = Arc::new(EventRecorder::new());
    let pool = StandalonePool::new(
        options.hosts[0].clone(),
        &options,
        vec![recorder.clone()],
        maintenance,
    )
    .expect("pool options are valid");
    (pool, recorder)
}

/// The CMAP events recorded so far.
pub(crate) fn cmap(recorder: &EventRecorder) -> Vec<CmapEvent> {
    recorder
        .events()
        .into_iter()
        .filter_map(|event| match event {
            Event::Cmap(event) => Some(event),
            _ => None,
        })
        .collect()
}

/// The names of the CMAP events recorded so far.
pub(crate) fn names(recorder: &EventRecorder) -> Vec<&'static str> {
    cmap(recorder).iter().map(CmapEvent::name).collect()
}

/// Waits until `count` CMAP events named `name` were recorded.
pub(crate) async fn wait_for_count(recorder: &EventRecorder, name: &str, count: usize) {
    wait_until(recorder, |events| {
        events.iter().filter(|e| e.name() == name).count() >= count
    })
    .await;
}

/// Waits until `condition` holds for the recorded CMAP events (re-checked at each new event).
pub(crate) async fn wait_until(recorder: &EventRecorder, condition: impl Fn(&[CmapEvent]) -> bool) {
    loop {
        let seen = recorder.len();
        if condition(&cmap(recorder)) {
            return;
        }
        recorder
            .wait_for(seen, PATIENCE, |_| true)
            .await
            .unwrap_or_else(|| {
                panic!(
                    "no new event within {PATIENCE:?}; events so far: {:?}",
                    names(recorder)
                )
            });
    }
}

/// Whether every connection created so far has finished establishing (ready or closed).
pub(crate) fn nothing_pending(events: &[CmapEvent]) -> bool {
    let mut pending = std::collections::HashSet::new();
    for event in events {
        match event {
            CmapEvent::ConnectionCreated { connection_id, .. } => {
                pending.insert(*connection_id);
            }
            CmapEvent::ConnectionReady { connection_id, .. }
            | CmapEvent::ConnectionClosed { connection_id, .. } => {
                pending.remove(connection_id);
            }
            _ => {}
        }
    }
    pending.is_empty()
}

/// A hello reply like the default responder's, for rules that delay or gate it.
pub(crate) fn hello_reply(legacy: bool) -> Document {
    let mut reply = standalone_hello();
    if legacy && let Some(writable) = reply.remove("isWritablePrimary") {
        reply.insert("ismaster", writable);
    }
    reply
}

/// A responder answering hello like the default one, after `delay`.
pub(crate) fn delayed_hello(delay: Duration) -> blackpipe::scripted::Responder {
    blackpipe::scripted::Responder::from_fn(move |request, _| {
        let legacy = request.command_name() != "hello";
        Outcome::React(Reaction::Reply(hello_reply(legacy)).after(delay))
    })
}

#[tokio::test]
async fn check_out_establishes_and_check_in_makes_the_connection_available_again() {
    let server = server().await;
    let (pool, recorder) = pool_for(&server, "", None);
    pool.ready();
    let mut first = pool.check_out().await.expect("check-out");
    assert_eq!(first.id(), 1);
    let reply = first
        .run_command("admin", doc! { "ping": 1 })
        .await
        .unwrap();
    assert_eq!(reply.get_f64("ok").ok(), Some(1.0));
    let server_id = first.server_connection_id();
    first.check_in();
    let second = pool.check_out().await.expect("second check-out");
    assert_eq!(second.id(), 1, "the available connection is reused");
    assert_eq!(second.server_connection_id(), server_id);
    assert_eq!(server.server().accepted_connections(), 1);
    drop(second);
    assert_eq!(
        names(&recorder),
        [
            "ConnectionPoolCreated",
            "ConnectionPoolReady",
            "ConnectionCheckOutStarted",
            "ConnectionCreated",
            "ConnectionReady",
            "ConnectionCheckedOut",
            "ConnectionCheckedIn",
            "ConnectionCheckOutStarted",
            "ConnectionCheckedOut",
            "ConnectionCheckedIn",
        ]
    );
    let counts = pool.counts();
    assert_eq!((counts.total, counts.available, counts.in_use), (1, 1, 0));
}

#[tokio::test]
async fn a_paused_pool_refuses_with_a_retryable_pool_cleared_error() {
    let server = server().await;
    let (pool, recorder) = pool_for(&server, "", None);
    let error = pool.check_out().await.expect_err("the pool is paused");
    let details = pool_error_details(&error).expect("a pool error");
    assert_eq!(details.spec_type, "PoolClearedError");
    assert!(error.is_network_error() && !error.is_timeout(), "{error}");
    let failed = cmap(&recorder).pop();
    assert!(
        matches!(
            failed,
            Some(CmapEvent::ConnectionCheckOutFailed { reason, .. })
                if reason == steadfast::event::CheckOutFailedReason::ConnectionError
        ),
        "{failed:?}"
    );
    assert_eq!(server.server().accepted_connections(), 0);
}

#[tokio::test]
async fn a_closed_pool_refuses_and_closes_connections_checked_in_later() {
    let server = server().await;
    let (pool, recorder) = pool_for(&server, "", None);
    pool.ready();
    let held = pool.check_out().await.unwrap();
    let idle = pool.check_out().await.unwrap();
    drop(idle);
    pool.close();
    pool.close();
    let error = pool.check_out().await.expect_err("closed");
    let details = pool_error_details(&error).unwrap();
    assert_eq!(details.spec_type, "PoolClosedError");
    assert_eq!(
        details.message,
        "Attempted to check out a connection from closed connection pool"
    );
    drop(held);
    let events = cmap(&recorder);
    let tail: Vec<String> = events[events.len() - 7..]
        .iter()
        .map(|e| match e {
            CmapEvent::ConnectionClosed {
                connection_id,
                reason,
                ..
            } => format!("closed {connection_id} {}", reason.as_str()),
            other => other.name().to_string(),
        })
        .collect();
    assert_eq!(
        tail,
        [
            "ConnectionCheckedIn",
            "closed 2 poolClosed",
            "ConnectionPoolClosed",
            "ConnectionCheckOutStarted",
            "ConnectionCheckOutFailed",
            "ConnectionCheckedIn",
            "closed 1 poolClosed",
        ],
        "PoolClosed once, after the idle connection; the held one closes at check-in"
    );
    pool.wait_for_tasks().await;
}

#[tokio::test]
async fn a_network_error_while_connecting_is_reported_with_backpressure_and_keeps_the_pool() {
    let server = server().await;
    server.rule(Matcher::hello(), Reaction::hang_up()).once();
    let (pool, recorder) = pool_for(&server, "", None);
    pool.ready();
    let error = pool.check_out().await.expect_err("the hello is hung up on");
    let details = pool_error_details(&error).expect("a pool error");
    assert_eq!(details.spec_type, "ConnectionEstablishmentError");
    assert!(details.system_overloaded, "a network error in the hello");
    assert!(error.is_network_error());
    assert!(error.has_label("SystemOverloadedError") && error.has_label("RetryableError"));
    assert_eq!(
        pool.generation(),
        0,
        "backpressure: the pool is not cleared"
    );
    assert!(cmap(&recorder).iter().any(|e| matches!(
        e,
        CmapEvent::ConnectionClosed {
            reason: ConnectionClosedReason::Error,
            ..
        }
    )));
    let next = pool.check_out().await.expect("the next connection works");
    assert_eq!(next.id(), 2);
}

#[tokio::test]
async fn a_refused_connection_gets_the_backpressure_labels() {
    // A port nobody listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let (pool, _recorder) = pool_for_uri(&format!("mongodb://127.0.0.1:{port}/"), None);
    pool.ready();
    let error = pool.check_out().await.expect_err("refused");
    assert!(error.is_network_error(), "{error}");
    assert!(error.has_label("SystemOverloadedError") && error.has_label("RetryableError"));
    assert_eq!(
        pool.generation(),
        0,
        "backpressure: SDAM leaves the pool alone"
    );
}

#[tokio::test]
async fn a_network_error_during_authentication_gets_no_backpressure_labels() {
    let server = server().await;
    // The hello succeeds; the SASL conversation is hung up on.
    server
        .rule(Matcher::command("saslStart"), Reaction::hang_up())
        .always();
    let (pool, _recorder) = pool_for_uri(
        &format!(
            "mongodb://user:pencil@127.0.0.1:{}/?authMechanism=SCRAM-SHA-256",
            server.port()
        ),
        None,
    );
    pool.ready();
    let error = pool.check_out().await.expect_err("authentication fails");
    assert!(error.is_network_error(), "{error}");
    assert!(!error.has_label("SystemOverloadedError") && !error.has_label("RetryableError"));
    assert!(!pool_error_details(&error).unwrap().system_overloaded);
    assert_eq!(
        pool.generation(),
        1,
        "not overload: the pool is cleared, as SDAM would"
    );
}

#[tokio::test]
async fn a_command_error_in_the_hello_clears_the_standalone_pool() {
    let server = server().await;
    server
        .rule(
            Matcher::hello(),
            Reaction::error(91, "ShutdownInProgress", "shutting down"),
        )
        .once();
    let (pool, recorder) = pool_for(&server, "", None);
    pool.ready();
    let error = pool.check_out().await.expect_err("the hello fails");
    assert_eq!(error.code(), Some(91));
    let details = pool_error_details(&error).unwrap();
    assert!(!details.system_overloaded, "a server reply is not overload");
    assert!(!error.has_label("SystemOverloadedError") && !error.has_label("RetryableError"));
    assert_eq!(pool.generation(), 1, "cleared, as SDAM would");
    let order: Vec<&str> = names(&recorder)
        .into_iter()
        .filter(|n| {
            matches!(
                *n,
                "ConnectionPoolCleared" | "ConnectionClosed" | "ConnectionCheckOutFailed"
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            "ConnectionPoolCleared",
            "ConnectionClosed",
            "ConnectionCheckOutFailed"
        ]
    );
}

#[tokio::test]
async fn a_connection_broken_by_a_network_error_is_closed_at_check_in() {
    let server = server().await;
    server
        .rule(Matcher::command("probe"), Reaction::hang_up())
        .once();
    let (pool, recorder) = pool_for(&server, "", None);
    pool.ready();
    let mut connection = pool.check_out().await.unwrap();
    let error = connection
        .run_command("db", doc! { "probe": 1 })
        .await
        .expect_err("hung up");
    assert!(error.is_network_error());
    assert!(connection.is_broken());
    drop(connection);
    assert!(matches!(
        cmap(&recorder).last(),
        Some(CmapEvent::ConnectionClosed {
            connection_id: 1,
            reason: ConnectionClosedReason::Error,
            ..
        })
    ));
    assert_eq!(pool.counts().total, 0);
}
