//! Opening and closing: event order, no leaked tasks, dropping the last handle.

use steadfast_core::TopologyType;
use steadfast_core::options::ClientOptions;
use steadfast_core::sdam::SdamEvent;

use super::{Harness, PATIENCE, address_of, fully_discovered, replica_set};
use crate::event::Event;

#[tokio::test]
async fn events_open_with_topology_opening_and_close_with_topology_closed() {
    let deployment = replica_set(3).await;
    let harness = Harness::open(&format!("{}&heartbeatFrequencyMS=500", deployment.uri()));
    harness
        .topology_where(0, "discovery", |t| fully_discovered(t, 3))
        .await;
    assert!(harness.topology.live_tasks() > 0);
    harness.topology.shutdown().await;
    assert_eq!(harness.topology.live_tasks(), 0, "shutdown leaves no task");

    let events = harness.sdam_events();
    assert!(matches!(events.first(), Some(SdamEvent::TopologyOpening)));
    assert!(matches!(events.last(), Some(SdamEvent::TopologyClosed)));
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, SdamEvent::TopologyOpening | SdamEvent::TopologyClosed))
            .count(),
        2
    );
    // The first description change starts from an Unknown topology with no servers.
    let first_change = events.iter().find_map(|e| match e {
        SdamEvent::TopologyDescriptionChanged { previous, .. } => Some(previous.clone()),
        _ => None,
    });
    let first_change = first_change.expect("a description change");
    assert_eq!(first_change.topology_type, TopologyType::Unknown);
    assert!(first_change.servers.is_empty());
    for index in 0..3 {
        let address = address_of(&deployment, index);
        let position = |wanted: &dyn Fn(&SdamEvent) -> bool| events.iter().position(wanted);
        let opened =
            position(&|e| matches!(e, SdamEvent::ServerOpening { address: a } if *a == address))
                .expect("opened");
        let first_check = position(
            &|e| matches!(e, SdamEvent::ServerHeartbeatStarted { address: a, .. } if *a == address),
        )
        .expect("checked");
        let closed =
            position(&|e| matches!(e, SdamEvent::ServerClosed { address: a } if *a == address))
                .expect("closed");
        assert!(
            opened < first_check,
            "ServerOpening precedes the monitor's first check"
        );
        assert!(
            closed < events.len() - 1,
            "ServerClosed precedes TopologyClosed"
        );
        // Nothing about the server after it closed.
        assert!(
            events[closed + 1..]
                .iter()
                .all(|e| e.address() != Some(&address)),
            "events for {address} after ServerClosed"
        );
    }
    // The closed description is Unknown and empty.
    let snapshot = harness.topology.snapshot();
    assert_eq!(snapshot.topology_type, TopologyType::Unknown);
    assert!(snapshot.servers.is_empty());
    // Shutting down again changes nothing.
    let count = harness.events.len();
    harness.topology.shutdown().await;
    assert_eq!(harness.events.len(), count);
}

#[tokio::test]
async fn dropping_the_last_handle_closes_everything() {
    let deployment = replica_set(2).await;
    let harness = Harness::open(&format!("{}&heartbeatFrequencyMS=500", deployment.uri()));
    harness
        .topology_where(0, "discovery", |t| fully_discovered(t, 2))
        .await;
    let tracker = harness.topology.inner.tracker.clone();
    let events = harness.events.clone();
    let clone = harness.topology.clone();
    drop(harness);
    // Another handle keeps it open.
    assert!(!clone.snapshot().servers.is_empty());
    drop(clone);
    events
        .wait_for(0, PATIENCE, |e| {
            matches!(e, Event::Sdam(SdamEvent::TopologyClosed))
        })
        .await
        .expect("TopologyClosed after the last handle is dropped");
    tokio::time::timeout(PATIENCE, tracker.wait_until_idle())
        .await
        .expect("every task ends");
}

#[test]
fn opening_outside_a_runtime_is_an_error_not_a_panic() {
    let options = ClientOptions::default();
    let config =
        crate::conn::config::ConnectionConfig::from_options(&options, None).expect("config");
    let error = super::super::Topology::new(
        &options,
        std::sync::Arc::new(config),
        crate::event::EventEmitter::default(),
    )
    .expect_err("no runtime");
    assert!(error.to_string().contains("tokio runtime"), "{error}");
}

#[tokio::test]
async fn forbidden_topology_options_are_configuration_errors() {
    let mut options = ClientOptions::default();
    options.hosts = vec![
        steadfast_core::ServerAddress::tcp("a", 1),
        steadfast_core::ServerAddress::tcp("b", 2),
    ];
    options.direct_connection = Some(true);
    let config =
        crate::conn::config::ConnectionConfig::from_options(&options, None).expect("config");
    let error = super::super::Topology::new(
        &options,
        std::sync::Arc::new(config),
        crate::event::EventEmitter::default(),
    )
    .expect_err("directConnection with two seeds");
    assert!(error.to_string().contains("directConnection"), "{error}");
}
