//! Check-out under concurrency: futures dropped at random points leak nothing, and
//! maxPoolSize / maxConnecting hold however many tasks compete.

use std::time::Duration;

use blackpipe::scripted::Matcher;
use blackpipe::server::Reaction;
use bson::doc;
use futures_util::FutureExt as _;
use rand::rngs::SmallRng;
use rand::{Rng as _, SeedableRng as _};
use steadfast::event::CmapEvent;
use steadfast::pool::standalone::{StandaloneConnection, StandalonePool};

use crate::pool::{PATIENCE, cmap, delayed_hello, nothing_pending, pool_for, wait_until};
use crate::server;

/// Checks out with the future dropped at a point chosen by `rng`: after a single poll, after a
/// random wait, or never; a connection obtained is held for a moment, sometimes broken (so
/// that new ones must be established), then checked in.
async fn one_attempt(pool: &StandalonePool, rng: &mut SmallRng) {
    let connection = match rng.random_range(0..4) {
        0 => {
            // Polled once: enqueued (and maybe granted), then dropped.
            let _ = pool.check_out().now_or_never();
            None
        }
        1 | 2 => {
            let patience = Duration::from_micros(rng.random_range(0..4_000));
            tokio::time::timeout(patience, pool.check_out())
                .await
                .ok()
                .and_then(Result::ok)
        }
        _ => pool.check_out().await.ok(),
    };
    if let Some(mut connection) = connection {
        if rng.random_bool(0.2) {
            // The server hangs up on "probe": the connection is closed at check-in.
            let _ = connection.run_command("db", doc! { "probe": 1 }).await;
        } else {
            // Holding it makes the others queue (the workload, not a wait for an outcome).
            tokio::time::sleep(Duration::from_micros(rng.random_range(0..2_000))).await;
        }
    }
}

/// Waits until no check-out, establishment or checked-out connection is left.
async fn settle(pool: &StandalonePool, recorder: &steadfast::event::EventRecorder) {
    wait_until(recorder, nothing_pending).await;
    let counts = pool.counts();
    assert_eq!(
        counts.waiters, 0,
        "no check-out is left waiting: {counts:?}"
    );
    assert_eq!(counts.pending, 0, "{counts:?}");
    assert_eq!(counts.in_use, 0, "{counts:?}");
    assert_eq!(counts.total, counts.available, "{counts:?}");
}

async fn dropped_check_outs_leak_nothing(query: &str, seed: u64) {
    let server = server().await;
    server
        .rule(Matcher::hello(), delayed_hello(Duration::from_millis(3)))
        .always();
    server
        .rule(Matcher::command("probe"), Reaction::hang_up())
        .always();
    let (pool, recorder) = pool_for(&server, query, None);
    let pool = std::sync::Arc::new(pool);
    pool.ready();
    let mut rng = SmallRng::seed_from_u64(seed);
    for _ in 0..40 {
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let pool = pool.clone();
            let mut rng = SmallRng::seed_from_u64(rng.random());
            tasks.push(tokio::spawn(async move {
                for _ in 0..3 {
                    one_attempt(&pool, &mut rng).await;
                }
            }));
        }
        // Some tasks are aborted wherever they happen to be.
        for task in &tasks {
            if rng.random_bool(0.25) {
                task.abort();
            }
        }
        for task in tasks {
            let _ = task.await;
        }
    }
    settle(&pool, &recorder).await;
    let counts = pool.counts();
    assert!(counts.total <= 3, "maxPoolSize holds: {counts:?}");

    let events = cmap(&recorder);
    let count = |name: &str| events.iter().filter(|e| e.name() == name).count();
    assert_eq!(
        count("ConnectionCheckedOut"),
        count("ConnectionCheckedIn"),
        "every connection handed out came back"
    );
    // No slot leaked: the pool still reaches maxPoolSize and serves it all at once (held
    // together). A leaked slot would keep the third check-out from ever succeeding.
    let held = tokio::time::timeout(PATIENCE, async {
        let mut held = Vec::new();
        while held.len() < 3 {
            held.push(patient_check_out(&pool).await);
        }
        held
    })
    .await
    .expect("maxPoolSize connections can be held at once");
    let ids: Vec<u64> = held.iter().map(|c| c.id()).collect();
    drop(held);
    assert_eq!(
        pool.counts().in_use,
        0,
        "the three went back when dropped: {ids:?}"
    );
    server.wait_for_open_connections(pool.counts().total).await;
}

/// A check-out that tries again after a wait-queue timeout: under `waitQueueTimeoutMS=1` a
/// check-out that must wait for a connection being established times out (by design), while
/// the connection it started goes on into the pool for the next try.
async fn patient_check_out(pool: &StandalonePool) -> StandaloneConnection {
    loop {
        match pool.check_out().await {
            Ok(connection) => return connection,
            Err(error) if error.is_timeout() => tokio::task::yield_now().await,
            Err(error) => panic!("check-out failed: {error}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_outs_dropped_at_random_points_leak_no_slot_or_connection() {
    dropped_check_outs_leak_nothing("maxPoolSize=3&maxConnecting=1", 7).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_outs_timing_out_in_the_queue_leak_no_slot_or_connection() {
    dropped_check_outs_leak_nothing("maxPoolSize=3&maxConnecting=2&waitQueueTimeoutMS=1", 11).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_pool_size_and_max_connecting_hold_under_concurrency() {
    let server = server().await;
    server
        .rule(Matcher::hello(), delayed_hello(Duration::from_millis(20)))
        .always();
    let (pool, recorder) = pool_for(&server, "maxPoolSize=3&maxConnecting=2", None);
    let pool = std::sync::Arc::new(pool);
    pool.ready();
    let mut tasks = Vec::new();
    for _ in 0..12 {
        let pool = pool.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..4 {
                let mut connection = pool.check_out().await.expect("check-out");
                connection
                    .run_command("admin", doc! { "ping": 1 })
                    .await
                    .expect("ping");
            }
        }));
    }
    for task in tasks {
        tokio::time::timeout(PATIENCE, task)
            .await
            .expect("the tasks finish")
            .expect("no task panicked");
    }
    // The events are emitted under the pool's lock, in the order of the state changes.
    let (mut pending, mut total, mut max_pending, mut max_total) = (0i32, 0i32, 0, 0);
    let mut established = std::collections::HashSet::new();
    for event in cmap(&recorder) {
        match event {
            CmapEvent::ConnectionCreated { .. } => {
                pending += 1;
                total += 1;
            }
            CmapEvent::ConnectionReady { connection_id, .. } => {
                pending -= 1;
                established.insert(connection_id);
            }
            CmapEvent::ConnectionClosed { connection_id, .. } => {
                total -= 1;
                if !established.contains(&connection_id) {
                    pending -= 1;
                }
            }
            _ => {}
        }
        max_pending = max_pending.max(pending);
        max_total = max_total.max(total);
    }
    assert_eq!(
        max_pending, 2,
        "maxConnecting=2 is reached and never exceeded"
    );
    assert_eq!(max_total, 3, "maxPoolSize=3 is reached and never exceeded");
    assert_eq!(server.server().accepted_connections(), 3);
    assert_eq!(pool.counts().available, 3);
}
