//! Monitors: streaming against awaitable hello, polling, heartbeat events, cancellation.

use blackpipe::deployment::{Deployment, DeploymentConfig};
use blackpipe::scripted::{Matcher, ScriptedServer};
use blackpipe::server::Reaction;
use steadfast_core::Deadline;
use steadfast_core::sdam::{ErrorPhase, SdamEvent};
use steadfast_core::selection::SelectionCriteria;

use super::{Harness, address_of, replica_set};
use crate::error::Error;

fn heartbeat_succeeded(event: &SdamEvent, awaited_wanted: bool) -> bool {
    matches!(event, SdamEvent::ServerHeartbeatSucceeded { awaited, .. } if *awaited == awaited_wanted)
}

#[tokio::test]
async fn streaming_monitor_neither_spins_nor_stalls() {
    let deployment = Deployment::start(DeploymentConfig::standalone())
        .await
        .expect("standalone starts");
    let harness = Harness::open(&format!(
        "mongodb://{}/?heartbeatFrequencyMS=500",
        deployment.host(0).expect("node")
    ));
    // Five streamed replies: the server answers each awaitable hello after maxAwaitTimeMS
    // (500 ms), so this spans about two seconds of monitoring.
    let mut from = 0;
    for _ in 0..5 {
        from = harness
            .sdam(from, "a streamed heartbeat", |e| {
                heartbeat_succeeded(e, true)
            })
            .await
            + 1;
    }
    let hellos = deployment.counters(0).expect("counters").hellos();
    // Streamed (exhaust) replies are not requests: the monitor sends its handshake and one
    // awaitable hello; the RTT task its handshake and one hello per heartbeat. About eight
    // in all; a spinning monitor would send thousands, a stalled one would not get here.
    assert!(
        (4..=30).contains(&hellos),
        "{hellos} hello requests in ~2.5 s of streaming"
    );
    // The RTT task measured on its own connection, so the descriptions carry an RTT.
    let snapshot = harness.topology.snapshot();
    let server = snapshot
        .server(&address_of(&deployment, 0))
        .expect("server");
    assert!(server.round_trip_time.is_some());
    harness.topology.shutdown().await;
}

#[tokio::test]
async fn streaming_reports_a_stepdown_without_waiting_for_the_heartbeat() {
    let deployment = replica_set(2).await;
    // A heartbeat far longer than the test: only streaming can deliver the change in time.
    let harness = Harness::open(&format!(
        "{}&heartbeatFrequencyMS=60000&serverSelectionTimeoutMS=60000",
        deployment.uri()
    ));
    harness
        .topology_where(0, "discovery", |t| super::fully_discovered(t, 2))
        .await;
    // Both monitors are streaming (an awaited check is in progress on each).
    for index in 0..2 {
        let address = address_of(&deployment, index);
        harness
            .sdam(0, "an awaited heartbeat started", |e| {
                matches!(e, SdamEvent::ServerHeartbeatStarted { address: a, awaited: true, .. } if *a == address)
            })
            .await;
    }
    let mark = harness.events.len();
    deployment.elect(1).expect("member 1 is electable");
    let expected = address_of(&deployment, 1);
    harness
        .topology_where(mark, "member 1 as primary", |t| {
            super::primary_of(t).as_ref() == Some(&expected)
        })
        .await;
    harness.topology.shutdown().await;
}

#[tokio::test]
async fn polling_mode_never_awaits_and_opens_no_rtt_connection() {
    let deployment = Deployment::start(DeploymentConfig::standalone())
        .await
        .expect("standalone starts");
    let harness = Harness::open(&format!(
        "mongodb://{}/?heartbeatFrequencyMS=500&serverMonitoringMode=poll",
        deployment.host(0).expect("node")
    ));
    let mut from = 0;
    for _ in 0..3 {
        from = harness
            .sdam(from, "a polled heartbeat", |e| {
                heartbeat_succeeded(e, false)
            })
            .await
            + 1;
    }
    let events = harness.sdam_events();
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, SdamEvent::ServerHeartbeatStarted { awaited: true, .. })),
        "poll mode never sends an awaitable hello"
    );
    // Three checks on one connection: its handshake and two hellos, nothing else.
    assert_eq!(deployment.counters(0).expect("counters").hellos(), 3);
    harness.topology.shutdown().await;
}

#[tokio::test]
async fn a_network_error_cancels_the_check_in_progress() {
    let deployment = replica_set(2).await;
    let harness = Harness::open(&format!("{}&heartbeatFrequencyMS=60000", deployment.uri()));
    harness
        .topology_where(0, "discovery", |t| super::fully_discovered(t, 2))
        .await;
    let primary = address_of(&deployment, 0);
    let started = harness
        .sdam(0, "the primary's awaited check", |e| {
            matches!(e, SdamEvent::ServerHeartbeatStarted { address, awaited: true, .. } if *address == primary)
        })
        .await;
    let generation = harness.topology.inner.servers.read().unwrap()[&primary]
        .pool
        .generation();
    harness.topology.handle_application_error(
        &primary,
        &Error::network("connection reset by peer"),
        generation,
        ErrorPhase::AfterHandshake,
    );
    let failed = harness
        .sdam(started, "the awaited check failed", |e| {
            matches!(e, SdamEvent::ServerHeartbeatFailed { address, awaited: true, failure, .. }
                if *address == primary && failure.contains("cancelled"))
        })
        .await;
    // Selection requests an immediate check, which opens a new monitoring connection (an
    // unawaited heartbeat) long before the 60 s heartbeat.
    let selected = harness
        .topology
        .select_server(&SelectionCriteria::Write, &[], Deadline::None)
        .await
        .expect("rediscovered");
    assert_eq!(selected.address, primary);
    harness
        .sdam(failed, "a new connection's handshake", |e| {
            matches!(e, SdamEvent::ServerHeartbeatSucceeded { address, awaited: false, .. } if *address == primary)
        })
        .await;
    harness.topology.shutdown().await;
}

/// A check requested while the monitor's check is in progress is ignored, because that check's
/// result answers it — unless the check is then cancelled by an application network error: the
/// cancelled check answered nothing, so the request must still be honoured. Dropping it would
/// leave the server Unknown until the next heartbeat (60 s here), stalling every retry.
#[tokio::test]
async fn a_request_made_during_a_check_that_is_then_cancelled_is_honoured() {
    let deployment = replica_set(2).await;
    let harness = Harness::open(&format!("{}&heartbeatFrequencyMS=60000", deployment.uri()));
    harness
        .topology_where(0, "discovery", |t| super::fully_discovered(t, 2))
        .await;
    let primary = address_of(&deployment, 0);
    let started = harness
        .sdam(0, "the primary's awaited check", |e| {
            matches!(e, SdamEvent::ServerHeartbeatStarted { address, awaited: true, .. } if *address == primary)
        })
        .await;
    // The request arrives while the awaited hello is in progress...
    harness.topology.request_immediate_checks();
    let generation = harness.topology.inner.servers.read().unwrap()[&primary]
        .pool
        .generation();
    // ...and then an application error cancels that check.
    harness.topology.handle_application_error(
        &primary,
        &Error::network("connection reset by peer"),
        generation,
        ErrorPhase::AfterHandshake,
    );
    harness
        .sdam(started, "a new connection's handshake, long before the heartbeat", |e| {
            matches!(e, SdamEvent::ServerHeartbeatSucceeded { address, awaited: false, .. } if *address == primary)
        })
        .await;
    harness.topology.shutdown().await;
}

#[tokio::test]
async fn every_heartbeat_started_has_its_outcome_even_on_shutdown() {
    let deployment = replica_set(3).await;
    let harness = Harness::open(&format!("{}&heartbeatFrequencyMS=60000", deployment.uri()));
    harness
        .topology_where(0, "discovery", |t| super::fully_discovered(t, 3))
        .await;
    for index in 0..3 {
        let address = address_of(&deployment, index);
        harness
            .sdam(0, "an awaited check in progress", |e| {
                matches!(e, SdamEvent::ServerHeartbeatStarted { address: a, awaited: true, .. } if *a == address)
            })
            .await;
    }
    harness.topology.shutdown().await;
    let events = harness.sdam_events();
    for index in 0..3 {
        let address = address_of(&deployment, index);
        let mut open = false;
        for event in events.iter().filter(|e| e.address() == Some(&address)) {
            match event {
                SdamEvent::ServerHeartbeatStarted { .. } => {
                    assert!(!open, "two checks at once on {address}");
                    open = true;
                }
                SdamEvent::ServerHeartbeatSucceeded { .. }
                | SdamEvent::ServerHeartbeatFailed { .. } => {
                    assert!(open, "an outcome without a start on {address}");
                    open = false;
                }
                _ => {}
            }
        }
        assert!(!open, "the check in progress on {address} got no outcome");
    }
}

#[tokio::test]
async fn a_failed_check_of_a_known_server_is_retried_at_once() {
    // A scripted standalone (its hello has no topologyVersion, so the monitor polls) and a
    // heartbeat far longer than the test: only the immediate retry the specification demands
    // after a network error on a known server can make the retry arrive in time.
    let server = ScriptedServer::start().await.expect("scripted server");
    let harness = Harness::open(&format!(
        "mongodb://127.0.0.1:{}/?directConnection=true&heartbeatFrequencyMS=60000",
        server.port()
    ));
    let first = harness
        .sdam(0, "the first check", |e| heartbeat_succeeded(e, false))
        .await;
    let hang_up = server.rule(Matcher::hello(), Reaction::hang_up()).once();
    harness.topology.request_immediate_checks();
    let failed = harness
        .sdam(first, "the requested check fails", |e| {
            matches!(e, SdamEvent::ServerHeartbeatFailed { .. })
        })
        .await;
    harness
        .sdam(failed, "the immediate retry", |e| {
            heartbeat_succeeded(e, false)
        })
        .await;
    assert_eq!(hang_up.hits(), 1);
    let snapshot = harness.topology.snapshot();
    assert_eq!(snapshot.topology_type, steadfast_core::TopologyType::Single);
    harness.topology.shutdown().await;
}
