//! The selection loop: timeouts and their messages, deadlines, operation counts, deprioritized
//! servers, waiting for a server to appear.

use std::time::Duration;

use steadfast_core::Deadline;
use steadfast_core::ServerAddress;
use steadfast_core::selection::{ReadPreference, ReadPreferenceMode, SelectionCriteria};

use super::{Harness, address_of, fully_discovered, replica_set};
use crate::error::ErrorKind;
use crate::runtime;

/// A port on 127.0.0.1 where nothing listens (bound, then released).
async fn dead_port() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    drop(listener);
    port
}

fn selection_message(error: &crate::error::Error) -> &str {
    match error.kind() {
        ErrorKind::ServerSelection { message } => message,
        other => panic!("expected a server selection error, got {other:?}"),
    }
}

#[tokio::test]
async fn timeout_error_describes_the_topology_it_saw() {
    let port = dead_port().await;
    let harness = Harness::open(&format!(
        "mongodb://127.0.0.1:{port}/?replicaSet=rs0&serverSelectionTimeoutMS=300&heartbeatFrequencyMS=500"
    ));
    let address = ServerAddress::tcp("127.0.0.1", port);
    // Wait until the first check has failed, so the message can name its error.
    harness
        .topology_where(0, "the failed check", |t| {
            t.server(&address).is_some_and(|s| s.error.is_some())
        })
        .await;
    let error = harness
        .topology
        .select_server(&SelectionCriteria::Write, &[], Deadline::None)
        .await
        .expect_err("nothing listens");
    let message = selection_message(&error);
    assert!(message.contains("timed out after"), "{message}");
    assert!(message.contains("serverSelectionTimeoutMS"), "{message}");
    assert!(message.contains("write"), "{message}");
    assert!(
        message.contains("ReplicaSetNoPrimary (set rs0)"),
        "{message}"
    );
    assert!(
        message.contains(&format!("127.0.0.1:{port} Unknown (error:")),
        "{message}"
    );
    harness.topology.shutdown().await;
}

#[tokio::test]
async fn the_operation_deadline_ends_selection_first() {
    let port = dead_port().await;
    let harness = Harness::open(&format!(
        "mongodb://127.0.0.1:{port}/?serverSelectionTimeoutMS=600000"
    ));
    let deadline = runtime::now() + Duration::from_millis(200);
    let error = harness
        .topology
        .select_server(
            &SelectionCriteria::primary_read(),
            &[],
            Deadline::At(deadline),
        )
        .await
        .expect_err("nothing listens");
    let message = selection_message(&error);
    assert!(message.contains("the operation's deadline"), "{message}");
    assert!(runtime::now() >= deadline);
    harness.topology.shutdown().await;
}

#[tokio::test]
async fn an_invalid_read_preference_fails_at_once() {
    let deployment = replica_set(2).await;
    let harness = Harness::open(&format!(
        "{}&serverSelectionTimeoutMS=600000",
        deployment.uri()
    ));
    harness
        .topology_where(0, "discovery", |t| fully_discovered(t, 2))
        .await;
    // maxStalenessSeconds below the minimum (90 s) is invalid for a replica set.
    let preference = ReadPreference::from_parts(
        ReadPreferenceMode::Secondary,
        Vec::new(),
        Some(Duration::from_secs(10)),
    )
    .unwrap();
    let error = harness
        .topology
        .select_server(
            &SelectionCriteria::ReadPreference(preference),
            &[],
            Deadline::None,
        )
        .await
        .expect_err("invalid maxStalenessSeconds");
    assert!(!selection_message(&error).contains("timed out"), "{error}");
    harness.topology.shutdown().await;
}

#[tokio::test]
async fn selection_waits_for_a_server_to_appear() {
    let deployment = replica_set(2).await;
    // Selection starts before anything is known: it must wait for discovery, not fail.
    let harness = Harness::open(&format!(
        "{}&heartbeatFrequencyMS=500&serverSelectionTimeoutMS=60000",
        deployment.uri()
    ));
    let selected = harness
        .topology
        .select_server(&SelectionCriteria::Write, &[], Deadline::None)
        .await
        .expect("the primary is discovered");
    assert_eq!(selected.address, address_of(&deployment, 0));
    harness.topology.shutdown().await;
}

#[tokio::test]
async fn operation_counts_balance_the_window_and_deprioritized_servers_are_avoided() {
    let deployment = replica_set(2).await;
    // Both members inside the latency window, whatever their round-trip times.
    let harness = Harness::open(&format!(
        "{}&heartbeatFrequencyMS=500&localThresholdMS=100000",
        deployment.uri()
    ));
    harness
        .topology_where(0, "discovery", |t| fully_discovered(t, 2))
        .await;
    let nearest =
        SelectionCriteria::ReadPreference(ReadPreference::with_mode(ReadPreferenceMode::Nearest));
    let (a, b) = (address_of(&deployment, 0), address_of(&deployment, 1));
    let counts = || {
        (
            harness.topology.operation_count(&a),
            harness.topology.operation_count(&b),
        )
    };
    // With two servers in the window both are drawn, so the less busy one always wins: the
    // counts never drift more than one apart.
    let mut held = Vec::new();
    for _ in 0..10 {
        held.push(
            harness
                .topology
                .select_server(&nearest, &[], Deadline::None)
                .await
                .expect("selectable"),
        );
        let (x, y) = counts();
        assert!(x.abs_diff(y) <= 1, "operation counts {x} and {y}");
    }
    assert_eq!(counts(), (5, 5));
    // A deprioritized server is avoided while another is suitable, however busy that one is.
    for _ in 0..5 {
        let other = harness
            .topology
            .select_server(&nearest, std::slice::from_ref(&a), Deadline::None)
            .await
            .expect("selectable");
        assert_eq!(other.address, b);
        held.push(other);
    }
    assert_eq!(counts(), (5, 10));
    // Dropping a selected server ends its operation.
    held.clear();
    assert_eq!(counts(), (0, 0));
    harness.topology.shutdown().await;
}

#[tokio::test]
async fn selection_on_a_closed_topology_fails() {
    let deployment = replica_set(1).await;
    let harness = Harness::open(&deployment.uri());
    harness.topology.shutdown().await;
    let error = harness
        .topology
        .select_server(&SelectionCriteria::Write, &[], Deadline::None)
        .await
        .expect_err("closed");
    assert!(selection_message(&error).contains("closed"), "{error}");
}

#[tokio::test]
async fn a_load_balancer_is_selectable_at_once_and_never_monitored() {
    let port = dead_port().await;
    // Nothing needs to listen: a load balancer is never checked, and selection does not
    // connect.
    let harness = Harness::open(&format!(
        "mongodb://127.0.0.1:{port}/?loadBalanced=true&heartbeatFrequencyMS=500"
    ));
    let selected = harness
        .topology
        .select_server(&SelectionCriteria::Write, &[], Deadline::None)
        .await
        .expect("the load balancer");
    assert_eq!(selected.address, ServerAddress::tcp("127.0.0.1", port));
    assert_eq!(
        selected.topology_type,
        steadfast_core::TopologyType::LoadBalanced
    );
    drop(selected);
    harness.topology.shutdown().await;
    assert!(
        !harness.sdam_events().iter().any(|e| matches!(
            e,
            steadfast_core::sdam::SdamEvent::ServerHeartbeatStarted { .. }
        )),
        "no monitor runs in load-balanced mode"
    );
}
