use std::time::{Duration, Instant};

use super::*;

fn pool(max: Option<u32>, max_connecting: u32) -> PoolState {
    let mut p = PoolState::new(PoolOptions {
        max_pool_size: max,
        max_connecting,
        ..PoolOptions::default()
    });
    assert!(p.ready());
    p
}

/// Checks out for `waiter` and establishes whatever it was granted.
fn check_out(p: &mut PoolState, waiter: WaiterId, now: Instant) -> ConnectionId {
    p.enqueue(waiter).unwrap();
    let outcome = p.service(now);
    match outcome.grants.as_slice() {
        [Grant::Existing { connection, .. }] => *connection,
        [Grant::Create { connection, .. }] => {
            assert_eq!(
                p.established(*connection, None, now),
                EstablishedDecision::HandToWaiter
            );
            *connection
        }
        other => panic!("expected one grant, got {other:?}"),
    }
}

#[test]
fn new_pool_is_paused_and_refuses_check_outs() {
    let mut p = PoolState::new(PoolOptions::default());
    assert_eq!(p.status(), PoolStatus::Paused);
    assert_eq!(p.enqueue(1), Err(CheckOutRefusal::Paused));
    assert!(p.ready());
    assert!(!p.ready(), "ready twice emits no second event");
}

#[test]
fn connection_ids_start_at_one_and_increase() {
    let mut p = pool(None, 2);
    let now = Instant::now();
    assert_eq!(check_out(&mut p, 1, now), 1);
    assert_eq!(check_out(&mut p, 2, now), 2);
}

#[test]
fn available_connections_are_reused_lifo() {
    let mut p = pool(None, 2);
    let now = Instant::now();
    let a = check_out(&mut p, 1, now);
    let b = check_out(&mut p, 2, now);
    assert_eq!(p.check_in(a, true, now), CheckInDecision::Pool);
    assert_eq!(p.check_in(b, true, now), CheckInDecision::Pool);
    assert_eq!(
        check_out(&mut p, 3, now),
        b,
        "most recently checked in first"
    );
    assert_eq!(p.total_connections(), 2);
}

#[test]
fn max_connecting_blocks_then_releases_in_fifo_order() {
    let mut p = pool(None, 2);
    let now = Instant::now();
    for w in 1..=3 {
        p.enqueue(w).unwrap();
    }
    let out = p.service(now);
    assert_eq!(
        out.grants.len(),
        2,
        "only maxConnecting=2 establishments at once"
    );
    assert_eq!(p.waiters(), 1);
    let Grant::Create { connection, .. } = out.grants[0] else {
        panic!()
    };
    p.established(connection, None, now);
    let out = p.service(now);
    assert!(matches!(
        out.grants.as_slice(),
        [Grant::Create { waiter: 3, .. }]
    ));
}

#[test]
fn max_pool_size_makes_waiters_wait_for_a_check_in() {
    let mut p = pool(Some(1), 2);
    let now = Instant::now();
    let a = check_out(&mut p, 1, now);
    p.enqueue(2).unwrap();
    p.enqueue(3).unwrap();
    assert!(p.service(now).grants.is_empty());
    p.check_in(a, true, now);
    let out = p.service(now);
    assert_eq!(
        out.grants,
        vec![Grant::Existing {
            waiter: 2,
            connection: a
        }]
    );
    assert_eq!(p.waiters(), 1, "waiter 3 still queued behind");
}

#[test]
fn cancelled_waiter_leaves_the_queue() {
    let mut p = pool(Some(1), 1);
    let now = Instant::now();
    let _a = check_out(&mut p, 1, now);
    p.enqueue(2).unwrap();
    assert!(p.cancel(2));
    assert!(!p.cancel(2));
    assert_eq!(p.waiters(), 0);
}

#[test]
fn failed_establishment_frees_the_slot() {
    let mut p = pool(Some(1), 1);
    let now = Instant::now();
    p.enqueue(1).unwrap();
    let Grant::Create { connection, .. } = p.service(now).grants[0] else {
        panic!()
    };
    p.enqueue(2).unwrap();
    assert!(p.service(now).grants.is_empty());
    p.establish_failed(connection);
    assert_eq!(p.total_connections(), 0);
    assert_eq!(p.pending_connections(), 0);
    assert!(matches!(
        p.service(now).grants.as_slice(),
        [Grant::Create { waiter: 2, .. }]
    ));
}

#[test]
fn clear_pauses_fails_waiters_and_makes_connections_stale() {
    let mut p = pool(Some(1), 1);
    let now = Instant::now();
    let a = check_out(&mut p, 1, now);
    p.enqueue(2).unwrap();
    let out = p.clear(None, false);
    assert!(out.emit_event);
    assert_eq!(out.failed_waiters, vec![2]);
    assert!(out.interrupt.is_empty());
    assert_eq!(p.status(), PoolStatus::Paused);
    assert_eq!(p.generation(), 1);
    assert_eq!(
        p.check_in(a, true, now),
        CheckInDecision::Close(ConnectionClosedReason::Stale)
    );
    assert_eq!(p.total_connections(), 0);
    let again = p.clear(None, false);
    assert!(!again.emit_event, "clearing a paused pool emits no event");
}

#[test]
fn clear_with_interrupt_lists_in_use_connections_of_old_generations() {
    let mut p = pool(None, 2);
    let now = Instant::now();
    let a = check_out(&mut p, 1, now);
    let b = check_out(&mut p, 2, now);
    p.check_in(b, true, now);
    let out = p.clear(None, true);
    assert_eq!(out.interrupt, vec![a]);
    assert_eq!(
        out.closed,
        vec![b],
        "stale available connections close at once"
    );
    assert_eq!(p.total_connections(), 0);
}

#[test]
fn stale_available_connection_is_closed_during_check_out() {
    let mut p = pool(None, 2);
    let now = Instant::now();
    let a = check_out(&mut p, 1, now);
    let b = check_out(&mut p, 2, now);
    p.check_in(a, true, now);
    // A connection checked in after the clear is stale and closed at check-in, not pooled.
    p.clear(None, false);
    p.ready();
    assert_eq!(
        p.check_in(b, true, now),
        CheckInDecision::Close(ConnectionClosedReason::Stale)
    );
    let c = check_out(&mut p, 3, now);
    assert!(c > b, "a new connection was created");
}

#[test]
fn idle_connections_perish() {
    let mut p = PoolState::new(PoolOptions {
        max_idle_time: Some(Duration::from_millis(100)),
        ..PoolOptions::default()
    });
    p.ready();
    let t0 = Instant::now();
    let a = check_out(&mut p, 1, t0);
    p.check_in(a, true, t0);
    let later = t0 + Duration::from_millis(150);
    p.enqueue(2).unwrap();
    let out = p.service(later);
    assert_eq!(out.closed, vec![(a, ConnectionClosedReason::Idle)]);
    assert!(matches!(out.grants.as_slice(), [Grant::Create { .. }]));
}

#[test]
fn maintenance_fills_min_pool_size_within_max_connecting_only_when_ready() {
    let mut p = PoolState::new(PoolOptions {
        min_pool_size: 3,
        max_connecting: 2,
        ..PoolOptions::default()
    });
    let now = Instant::now();
    assert!(
        p.maintain(now).create.is_empty(),
        "paused pools are not populated"
    );
    p.ready();
    let out = p.maintain(now);
    assert_eq!(out.create.len(), 2);
    for (id, _) in &out.create {
        p.established(*id, None, now);
    }
    assert_eq!(p.available_connections(), 2);
    assert_eq!(p.maintain(now).create.len(), 1);
    assert!(p.maintain(now).create.is_empty());
}

#[test]
fn closed_pool_refuses_and_closes_check_ins() {
    let mut p = pool(None, 2);
    let now = Instant::now();
    let a = check_out(&mut p, 1, now);
    let b = check_out(&mut p, 2, now);
    p.check_in(b, true, now);
    p.enqueue(3).unwrap_or(());
    let closing = p.close();
    assert!(closing.emit_event);
    assert_eq!(closing.closed, vec![b]);
    assert_eq!(closing.failed_waiters, vec![3]);
    assert_eq!(
        p.close(),
        CloseOutcome::default(),
        "closing twice does nothing"
    );
    assert_eq!(p.enqueue(4), Err(CheckOutRefusal::Closed));
    assert_eq!(
        p.check_in(a, true, now),
        CheckInDecision::Close(ConnectionClosedReason::PoolClosed)
    );
    assert_eq!(p.total_connections(), 0);
}

#[test]
fn unhealthy_check_in_closes_with_error() {
    let mut p = pool(None, 2);
    let now = Instant::now();
    let a = check_out(&mut p, 1, now);
    assert_eq!(
        p.check_in(a, false, now),
        CheckInDecision::Close(ConnectionClosedReason::Error)
    );
}

#[test]
fn load_balanced_clear_is_per_service_and_never_pauses() {
    let mut p = PoolState::new(PoolOptions {
        load_balanced: true,
        ..PoolOptions::default()
    });
    // Load-balanced pools are marked ready at creation: no monitor will do it.
    assert!(p.ready());
    let now = Instant::now();
    let s1 = ObjectId::from_bytes([1; 12]);
    let s2 = ObjectId::from_bytes([2; 12]);
    p.enqueue(1).unwrap();
    let Grant::Create { connection: a, .. } = p.service(now).grants[0] else {
        panic!()
    };
    p.established(a, Some(s1), now);
    p.enqueue(2).unwrap();
    let Grant::Create { connection: b, .. } = p.service(now).grants[0] else {
        panic!()
    };
    p.established(b, Some(s2), now);
    let out = p.clear(Some(s1), false);
    assert!(out.emit_event);
    assert!(out.failed_waiters.is_empty());
    assert_ne!(p.status(), PoolStatus::Paused);
    assert_eq!(
        p.check_in(a, true, now),
        CheckInDecision::Close(ConnectionClosedReason::Stale)
    );
    assert_eq!(p.check_in(b, true, now), CheckInDecision::Pool);
}

#[test]
fn a_waiter_waits_for_an_unclaimed_background_connection_instead_of_creating_one() {
    let mut p = PoolState::new(PoolOptions {
        min_pool_size: 2,
        max_pool_size: Some(3),
        max_connecting: 2,
        ..PoolOptions::default()
    });
    p.ready();
    let now = Instant::now();
    let background: Vec<ConnectionId> = p.maintain(now).create.iter().map(|c| c.0).collect();
    assert_eq!(background.len(), 2);
    p.enqueue(1).unwrap();
    p.enqueue(2).unwrap();
    assert!(
        p.service(now).grants.is_empty(),
        "both wait: maxConnecting is reached"
    );
    assert_eq!(
        p.established(background[0], None, now),
        EstablishedDecision::MakeAvailable
    );
    let out = p.service(now);
    assert_eq!(
        out.grants,
        vec![Grant::Existing {
            waiter: 1,
            connection: background[0]
        }],
        "the second waiter does not start a third connection while the second background one is under way"
    );
    p.established(background[1], None, now);
    let out = p.service(now);
    assert_eq!(
        out.grants,
        vec![Grant::Existing {
            waiter: 2,
            connection: background[1]
        }]
    );
    assert_eq!(p.total_connections(), 2);
}

#[test]
fn a_failed_background_connection_lets_the_waiter_create_its_own() {
    let mut p = PoolState::new(PoolOptions {
        min_pool_size: 1,
        ..PoolOptions::default()
    });
    p.ready();
    let now = Instant::now();
    let (background, _) = p.maintain(now).create[0];
    p.enqueue(1).unwrap();
    assert!(p.service(now).grants.is_empty());
    assert!(p.establish_failed(background));
    assert!(!p.establish_failed(background), "reported once");
    assert!(matches!(
        p.service(now).grants.as_slice(),
        [Grant::Create { waiter: 1, .. }]
    ));
}

#[test]
fn an_abandoned_connection_becomes_available_when_established() {
    let mut p = pool(None, 2);
    let now = Instant::now();
    p.enqueue(1).unwrap();
    let [Grant::Create { connection, .. }] = p.service(now).grants[..] else {
        panic!("expected a create grant")
    };
    assert!(p.abandon(connection));
    p.enqueue(2).unwrap();
    assert!(
        p.service(now).grants.is_empty(),
        "the next waiter waits for the abandoned connection"
    );
    assert_eq!(
        p.established(connection, None, now),
        EstablishedDecision::MakeAvailable
    );
    assert_eq!(
        p.service(now).grants,
        vec![Grant::Existing {
            waiter: 2,
            connection
        }]
    );
    assert!(!p.abandon(connection), "no longer pending");
}

#[test]
fn clear_with_interrupt_cancels_pending_connections_of_old_generations() {
    let mut p = pool(None, 2);
    let now = Instant::now();
    p.enqueue(1).unwrap();
    let [Grant::Create { connection, .. }] = p.service(now).grants[..] else {
        panic!("expected a create grant")
    };
    let out = p.clear(None, true);
    assert_eq!(out.cancelled, vec![connection]);
    assert_eq!(p.pending_connections(), 0);
    assert_eq!(p.total_connections(), 0);
    assert_eq!(
        p.established(connection, None, now),
        EstablishedDecision::Forgotten
    );
    assert!(!p.establish_failed(connection));
}

#[test]
fn clear_without_interrupt_lets_pending_connections_finish() {
    let mut p = pool(None, 2);
    let now = Instant::now();
    p.enqueue(1).unwrap();
    let [Grant::Create { connection, .. }] = p.service(now).grants[..] else {
        panic!("expected a create grant")
    };
    let out = p.clear(None, false);
    assert!(out.cancelled.is_empty());
    assert_eq!(
        p.established(connection, None, now),
        EstablishedDecision::HandToWaiter,
        "the check-out that created it still gets it"
    );
    assert_eq!(
        p.check_in(connection, true, now),
        CheckInDecision::Close(ConnectionClosedReason::Stale)
    );
}

#[test]
fn a_background_connection_made_stale_on_the_way_is_closed() {
    let mut p = PoolState::new(PoolOptions {
        min_pool_size: 1,
        ..PoolOptions::default()
    });
    p.ready();
    let now = Instant::now();
    let (connection, _) = p.maintain(now).create[0];
    p.clear(None, false);
    assert_eq!(
        p.established(connection, None, now),
        EstablishedDecision::Close(ConnectionClosedReason::Stale)
    );
    assert_eq!(p.total_connections(), 0);
}

#[test]
fn close_cancels_pending_connections_and_fails_waiters() {
    let mut p = pool(Some(1), 1);
    let now = Instant::now();
    p.enqueue(1).unwrap();
    let [Grant::Create { connection, .. }] = p.service(now).grants[..] else {
        panic!("expected a create grant")
    };
    p.enqueue(2).unwrap();
    let out = p.close();
    assert_eq!(out.cancelled, vec![connection]);
    assert_eq!(out.failed_waiters, vec![2]);
    assert_eq!(p.total_connections(), 0);
    assert_eq!(
        p.established(connection, None, now),
        EstablishedDecision::Forgotten
    );
}

#[test]
fn a_connection_established_after_close_is_closed() {
    let mut p = PoolState::new(PoolOptions {
        min_pool_size: 1,
        ..PoolOptions::default()
    });
    p.ready();
    let now = Instant::now();
    let (connection, _) = p.maintain(now).create[0];
    // The worker had not yet learnt of the close when the establishment finished.
    p.status = PoolStatus::Closed;
    assert_eq!(
        p.established(connection, None, now),
        EstablishedDecision::Close(ConnectionClosedReason::PoolClosed)
    );
}

#[test]
fn generation_of_follows_service_generations() {
    let mut p = PoolState::new(PoolOptions {
        load_balanced: true,
        ..PoolOptions::default()
    });
    let now = Instant::now();
    let service = ObjectId::new();
    p.clear(Some(service), false);
    p.enqueue(1).unwrap();
    let [Grant::Create { connection, .. }] = p.service(now).grants[..] else {
        panic!("expected a create grant")
    };
    p.established(connection, Some(service), now);
    assert_eq!(
        p.generation_of(connection),
        Some(0),
        "the entry was dropped with no connections"
    );
    p.clear(Some(service), false);
    assert_eq!(p.generation_of(connection), Some(0));
    assert_eq!(
        p.check_in(connection, true, now),
        CheckInDecision::Close(ConnectionClosedReason::Stale)
    );
}

#[test]
fn options_from_client_options() {
    let client = ClientOptions {
        max_pool_size: 0,
        min_pool_size: 3,
        max_connecting: 4,
        max_idle_time: Some(Duration::ZERO),
        wait_queue_timeout: Some(Duration::from_millis(50)),
        ..ClientOptions::default()
    };
    let options = PoolOptions::from(&client);
    assert_eq!(options.max_pool_size, None, "0 is unlimited");
    assert_eq!(options.min_pool_size, 3);
    assert_eq!(options.max_connecting, 4);
    assert_eq!(options.max_idle_time, None, "0 is no limit");
    assert_eq!(options.wait_queue_timeout, Some(Duration::from_millis(50)));
    assert_eq!(
        PoolOptions::from(&ClientOptions::default()),
        PoolOptions::default()
    );
}

#[test]
fn check_out_idle_takes_an_available_connection_when_nobody_waits() {
    let mut p = pool(None, 2);
    let now = Instant::now();
    let a = check_out(&mut p, 1, now);
    p.check_in(a, true, now);
    let taken = p.check_out_idle(now).unwrap();
    assert_eq!(taken.connection, Some(a));
    assert!(taken.closed.is_empty());
    assert_eq!(p.available_connections(), 0);
    assert_eq!(
        p.check_in(a, true, now),
        CheckInDecision::Pool,
        "it was in use"
    );
}

#[test]
fn check_out_idle_never_passes_a_queued_request() {
    let mut p = pool(None, 2);
    let now = Instant::now();
    let a = check_out(&mut p, 1, now);
    p.check_in(a, true, now);
    // A request queued but not yet serviced owns the next available connection.
    p.enqueue(2).unwrap();
    let taken = p.check_out_idle(now).unwrap();
    assert_eq!(taken.connection, None);
    assert_eq!(p.available_connections(), 1);
    let out = p.service(now);
    assert_eq!(
        out.grants,
        vec![Grant::Existing {
            waiter: 2,
            connection: a
        }]
    );
}

#[test]
fn check_out_idle_closes_perished_connections_and_refuses_when_paused() {
    let mut p = PoolState::new(PoolOptions {
        max_idle_time: Some(Duration::from_millis(100)),
        ..PoolOptions::default()
    });
    assert_eq!(
        p.check_out_idle(Instant::now()),
        Err(CheckOutRefusal::Paused)
    );
    p.ready();
    let t0 = Instant::now();
    let a = check_out(&mut p, 1, t0);
    p.check_in(a, true, t0);
    let taken = p.check_out_idle(t0 + Duration::from_millis(150)).unwrap();
    assert_eq!(
        taken.connection, None,
        "nothing usable: the request must queue"
    );
    assert_eq!(taken.closed, vec![(a, ConnectionClosedReason::Idle)]);
    assert_eq!(p.total_connections(), 0);
}
