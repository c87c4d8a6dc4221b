//! Clearing a pool: waiters fail at once with a retryable error, stale connections close, and
//! with `interruptInUseConnections` in-use and pending connections are interrupted.

use std::sync::Arc;

use blackpipe::scripted::Matcher;
use blackpipe::server::Reaction;
use bson::doc;
use steadfast::event::{CheckOutFailedReason, CmapEvent, ConnectionClosedReason};
use steadfast::pool::standalone::pool_error_details;

use crate::pool::{PATIENCE, cmap, names, pool_for, wait_for_count};
use crate::server;

/// The recorded events from the first one named `first` on, as short descriptions.
fn tail_from(events: &[CmapEvent], first: &str) -> Vec<String> {
    let start = events
        .iter()
        .position(|e| e.name() == first)
        .unwrap_or(events.len());
    events[start..]
        .iter()
        .map(|e| match e {
            CmapEvent::ConnectionClosed {
                connection_id,
                reason,
                ..
            } => format!("closed {connection_id} {}", reason.as_str()),
            CmapEvent::ConnectionCheckOutFailed { reason, .. } => {
                format!("failed {}", reason.as_str())
            }
            other => other.name().to_string(),
        })
        .collect()
}

#[tokio::test]
async fn a_clear_fails_every_waiter_at_once_and_stale_connections_close_at_check_in() {
    let server = server().await;
    let (pool, recorder) = pool_for(&server, "maxPoolSize=1", None);
    let pool = Arc::new(pool);
    pool.ready();
    let held = pool.check_out().await.unwrap();
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move { pool.check_out().await })
        })
        .collect();
    wait_for_count(&recorder, "ConnectionCheckOutStarted", 4).await;
    pool.clear(false);
    for waiter in waiters {
        let error = tokio::time::timeout(PATIENCE, waiter)
            .await
            .expect("the waiter is failed without waiting for any timeout")
            .unwrap()
            .expect_err("the pool was cleared");
        let details = pool_error_details(&error).expect("a pool error");
        assert_eq!(details.spec_type, "PoolClearedError");
        assert!(
            details
                .message
                .starts_with("Connection pool for 127.0.0.1:"),
            "{}",
            details.message
        );
        assert!(
            error.is_network_error() && !error.is_timeout(),
            "retryable: {error}"
        );
    }
    drop(held);
    assert_eq!(
        tail_from(&cmap(&recorder), "ConnectionPoolCleared"),
        [
            "ConnectionPoolCleared",
            "failed connectionError",
            "failed connectionError",
            "failed connectionError",
            "ConnectionCheckedIn",
            "closed 1 stale",
        ]
    );
    let error = pool.check_out().await.expect_err("paused until ready");
    assert_eq!(
        pool_error_details(&error).unwrap().spec_type,
        "PoolClearedError"
    );
    pool.ready();
    assert_eq!(
        pool.check_out().await.unwrap().id(),
        2,
        "a fresh connection"
    );
}

#[tokio::test]
async fn a_clear_closes_idle_connections_right_away() {
    let server = server().await;
    let (pool, recorder) = pool_for(&server, "", None);
    pool.ready();
    let (a, b) = (
        pool.check_out().await.unwrap(),
        pool.check_out().await.unwrap(),
    );
    drop((a, b));
    server.wait_for_open_connections(2).await;
    pool.clear(false);
    let tail = tail_from(&cmap(&recorder), "ConnectionPoolCleared");
    assert_eq!(tail[0], "ConnectionPoolCleared");
    let mut closed = tail[1..].to_vec();
    closed.sort();
    assert_eq!(closed, ["closed 1 stale", "closed 2 stale"]);
    assert_eq!(pool.counts().total, 0);
    server.wait_for_open_connections(0).await;
}

#[tokio::test]
async fn without_interrupting_an_in_use_connection_keeps_working_until_check_in() {
    let server = server().await;
    let (pool, recorder) = pool_for(&server, "", None);
    pool.ready();
    let mut connection = pool.check_out().await.unwrap();
    pool.clear(false);
    assert!(!connection.is_interrupted());
    connection
        .run_command("admin", doc! { "ping": 1 })
        .await
        .expect("a cleared pool does not break in-use connections");
    drop(connection);
    assert!(matches!(
        cmap(&recorder).last(),
        Some(CmapEvent::ConnectionClosed {
            reason: ConnectionClosedReason::Stale,
            ..
        })
    ));
}

#[tokio::test]
async fn interrupting_fails_the_in_flight_operation_promptly_with_a_retryable_error() {
    let server = server().await;
    // The server never answers "hang": only the interrupt can end the operation.
    server
        .rule(Matcher::command("hang"), Reaction::no_reply())
        .always();
    let (pool, recorder) = pool_for(&server, "", None);
    pool.ready();
    let mut busy = pool.check_out().await.unwrap();
    let mut idle = pool.check_out().await.unwrap();
    let operation = tokio::spawn(async move {
        let result = busy.run_command("db", doc! { "hang": 1 }).await;
        (result, busy)
    });
    server
        .wait_for_requests(Matcher::command("hang"), 1)
        .await
        .expect("the operation reached the server");
    pool.clear(true);
    let (result, busy) = tokio::time::timeout(PATIENCE, operation)
        .await
        .expect("the interrupt ends the operation")
        .unwrap();
    let error = result.expect_err("interrupted");
    let details = pool_error_details(&error).expect("a pool error");
    assert_eq!(details.spec_type, "PoolClearedError");
    assert_eq!(
        details.message,
        format!(
            "Connection to 127.0.0.1:{} interrupted due to server monitor timeout",
            server.port()
        )
    );
    assert!(
        error.is_network_error() && !error.is_timeout(),
        "retryable: {error}"
    );
    assert!(busy.is_interrupted() && busy.is_broken());

    // A connection that was not busy is interrupted too: its next command fails at once.
    assert!(idle.is_interrupted());
    let error = idle
        .run_command("admin", doc! { "ping": 1 })
        .await
        .expect_err("interrupted");
    assert_eq!(
        pool_error_details(&error).unwrap().spec_type,
        "PoolClearedError"
    );
    drop((busy, idle));
    let tail = tail_from(&cmap(&recorder), "ConnectionPoolCleared");
    assert_eq!(
        tail,
        [
            "ConnectionPoolCleared",
            "ConnectionCheckedIn",
            "closed 1 stale",
            "ConnectionCheckedIn",
            "closed 2 stale",
        ]
    );
    assert_eq!(pool.counts().total, 0);
    server.wait_for_open_connections(0).await;
}

#[tokio::test]
async fn interrupting_cancels_a_pending_establishment_and_fails_its_check_out() {
    let server = server().await;
    server.rule(Matcher::hello(), Reaction::no_reply()).always();
    let (pool, recorder) = pool_for(&server, "", None);
    let pool = Arc::new(pool);
    pool.ready();
    let check_out = {
        let pool = pool.clone();
        tokio::spawn(async move { pool.check_out().await })
    };
    wait_for_count(&recorder, "ConnectionCreated", 1).await;
    server
        .wait_for_requests(Matcher::hello(), 1)
        .await
        .expect("the hello was sent");
    pool.clear(true);
    let error = tokio::time::timeout(PATIENCE, check_out)
        .await
        .expect("the check-out fails at once")
        .unwrap()
        .expect_err("its connection was cancelled");
    assert_eq!(
        pool_error_details(&error).unwrap().spec_type,
        "PoolClearedError"
    );
    assert!(matches!(
        cmap(&recorder).last(),
        Some(CmapEvent::ConnectionCheckOutFailed {
            reason: CheckOutFailedReason::ConnectionError,
            ..
        })
    ));
    assert_eq!(
        names(&recorder)[names(&recorder).len() - 3..],
        [
            "ConnectionPoolCleared",
            "ConnectionClosed",
            "ConnectionCheckOutFailed"
        ]
    );
    let counts = pool.counts();
    assert_eq!((counts.total, counts.pending), (0, 0));
    // The establishment task is gone: the socket it held is closed.
    server.wait_for_open_connections(0).await;
}
