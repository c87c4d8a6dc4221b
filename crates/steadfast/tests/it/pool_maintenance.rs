//! The pool's background work: minPoolSize population, idle connections, refills, close;
//! and load-balanced per-service generations.

use std::time::Duration;

use blackpipe::scripted::{Matcher, Responder};
use blackpipe::server::{Outcome, Reaction};
use bson::doc;
use bson::oid::ObjectId;
use steadfast::event::{CmapEvent, ConnectionClosedReason};

use crate::pool::{PATIENCE, cmap, hello_reply, names, pool_for, wait_for_count, wait_until};
use crate::server;

fn count(events: &[CmapEvent], name: &str) -> usize {
    events.iter().filter(|e| e.name() == name).count()
}

#[tokio::test]
async fn min_pool_size_is_filled_in_the_background_once_ready() {
    let server = server().await;
    let (pool, recorder) = pool_for(&server, "minPoolSize=3&maxConnecting=2", None);
    assert_eq!(pool.counts().total, 0, "a paused pool is not populated");
    pool.ready();
    wait_for_count(&recorder, "ConnectionReady", 3).await;
    let events = names(&recorder);
    assert_eq!(
        events[..2],
        ["ConnectionPoolCreated", "ConnectionPoolReady"]
    );
    assert_eq!(count(&cmap(&recorder), "ConnectionCreated"), 3);
    let counts = pool.counts();
    assert_eq!((counts.total, counts.available), (3, 3));
    server.wait_for_open_connections(3).await;
    let connection = pool.check_out().await.unwrap();
    assert!(connection.id() <= 3, "an existing connection is used");
    assert_eq!(count(&cmap(&recorder), "ConnectionCreated"), 3);
}

#[tokio::test]
async fn idle_connections_are_closed_by_the_background_task() {
    let server = server().await;
    let (pool, recorder) = pool_for(&server, "maxIdleTimeMS=30", Some(Duration::from_millis(10)));
    pool.ready();
    drop(pool.check_out().await.unwrap());
    wait_until(&recorder, |events| {
        events.iter().any(|e| {
            matches!(
                e,
                CmapEvent::ConnectionClosed {
                    connection_id: 1,
                    reason: ConnectionClosedReason::Idle,
                    ..
                }
            )
        })
    })
    .await;
    assert_eq!(pool.counts().total, 0);
    server.wait_for_open_connections(0).await;
}

#[tokio::test]
async fn a_connection_lost_below_min_pool_size_is_replaced_without_a_scheduled_run() {
    let server = server().await;
    server
        .rule(Matcher::command("probe"), Reaction::hang_up())
        .always();
    // No schedule: only the pool's own requests start runs.
    let (pool, recorder) = pool_for(&server, "minPoolSize=1", None);
    pool.ready();
    wait_for_count(&recorder, "ConnectionReady", 1).await;
    let mut connection = pool.check_out().await.unwrap();
    let _ = connection.run_command("db", doc! { "probe": 1 }).await;
    drop(connection);
    wait_for_count(&recorder, "ConnectionReady", 2).await;
    let counts = pool.counts();
    assert_eq!((counts.total, counts.available), (1, 1));
}

#[tokio::test]
async fn a_clear_stops_population_until_the_pool_is_ready_again() {
    let server = server().await;
    let (pool, recorder) = pool_for(&server, "minPoolSize=2", None);
    pool.ready();
    wait_for_count(&recorder, "ConnectionReady", 2).await;
    pool.clear(false);
    assert_eq!(pool.counts().total, 0, "the stale idle connections closed");
    let before = cmap(&recorder).len();
    pool.ready();
    wait_for_count(&recorder, "ConnectionReady", 4).await;
    let after: Vec<&str> = cmap(&recorder)[before..]
        .iter()
        .map(CmapEvent::name)
        .collect();
    assert_eq!(
        after[0], "ConnectionPoolReady",
        "population follows the ready event"
    );
    assert_eq!(count(&cmap(&recorder), "ConnectionCreated"), 4);
}

#[tokio::test]
async fn close_cancels_pending_establishments_and_ends_every_task() {
    let server = server().await;
    server.rule(Matcher::hello(), Reaction::no_reply()).always();
    let (pool, recorder) = pool_for(&server, "minPoolSize=2", Some(Duration::from_secs(3600)));
    pool.ready();
    wait_for_count(&recorder, "ConnectionCreated", 2).await;
    assert!(
        pool.live_tasks() >= 3,
        "two establishments and the maintenance task"
    );
    pool.close();
    tokio::time::timeout(PATIENCE, pool.wait_for_tasks())
        .await
        .expect("every task ends after close");
    assert_eq!(pool.live_tasks(), 0);
    let events = cmap(&recorder);
    let closed: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            CmapEvent::ConnectionClosed { reason, .. } => Some(*reason),
            _ => None,
        })
        .collect();
    assert_eq!(closed, [ConnectionClosedReason::PoolClosed; 2]);
    assert_eq!(
        events.last().map(CmapEvent::name),
        Some("ConnectionPoolClosed")
    );
    server.wait_for_open_connections(0).await;
}

#[tokio::test]
async fn load_balanced_pools_clear_one_service_and_never_pause() {
    let server = server().await;
    let (first, second) = (ObjectId::new(), ObjectId::new());
    // Odd server-side connections belong to the first service, even ones to the second.
    server
        .rule(
            Matcher::hello(),
            Responder::from_fn(move |request, connection| {
                let mut reply = hello_reply(request.command_name() != "hello");
                let service = if connection.id.get() % 2 == 1 {
                    first
                } else {
                    second
                };
                reply.insert("serviceId", service);
                reply.insert("msg", "isdbgrid");
                Outcome::React(Reaction::Reply(reply))
            }),
        )
        .always();
    let (pool, recorder) = pool_for(&server, "loadBalanced=true", None);
    // No `ready`: a load-balanced pool serves check-outs from the start.
    let a = pool
        .check_out()
        .await
        .expect("load-balanced pools never pause");
    let (b, c) = (
        pool.check_out().await.unwrap(),
        pool.check_out().await.unwrap(),
    );
    assert_eq!((a.generation(), b.generation(), c.generation()), (0, 0, 0));
    let (a_id, b_id, c_id) = (a.id(), b.id(), c.id());
    drop((b, c));
    // `a` (first service) stays checked out, so the first service keeps its entry.
    pool.clear_service(first);
    let events = cmap(&recorder);
    assert!(
        matches!(
            &events[events.len() - 2..],
            [
                CmapEvent::PoolCleared { service_id: Some(id), .. },
                CmapEvent::ConnectionClosed { connection_id, reason: ConnectionClosedReason::Stale, .. },
            ] if *id == first && *connection_id == c_id
        ),
        "{events:?}"
    );
    let kept = pool.check_out().await.expect("the pool is not paused");
    assert_eq!(kept.id(), b_id, "the other service's connection stays");
    let second_service = pool.check_out().await.unwrap();
    assert_eq!(second_service.generation(), 0);
    let first_service = pool.check_out().await.unwrap();
    assert_eq!(
        first_service.generation(),
        1,
        "a new connection of the cleared service"
    );
    assert_eq!(pool.generation(), 0, "the pool generation is untouched");
    drop(a);
    assert!(matches!(
        cmap(&recorder).last(),
        Some(CmapEvent::ConnectionClosed { connection_id, reason: ConnectionClosedReason::Stale, .. })
            if *connection_id == a_id
    ));
}
