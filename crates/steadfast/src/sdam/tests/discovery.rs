//! Discovery from one seed, following elections and stepdowns, membership changes.

use std::time::Duration;

use blackpipe::deployment::MemberOptions;
use steadfast_core::Deadline;
use steadfast_core::TopologyType;
use steadfast_core::sdam::SdamEvent;
use steadfast_core::selection::{ReadPreference, ReadPreferenceMode, SelectionCriteria};

use super::{Harness, address_of, fully_discovered, primary_of, replica_set};

fn secondary_read() -> SelectionCriteria {
    SelectionCriteria::ReadPreference(ReadPreference::with_mode(ReadPreferenceMode::Secondary))
}

#[tokio::test]
async fn discovers_a_three_member_set_from_one_secondary_seed() {
    let deployment = replica_set(3).await;
    let seed = deployment.host(2).expect("node 2");
    let harness = Harness::open(&format!("mongodb://{seed}/?heartbeatFrequencyMS=500"));

    harness
        .topology_where(0, "the whole set with its primary", |t| {
            fully_discovered(t, 3)
        })
        .await;
    let snapshot = harness.topology.snapshot();
    assert_eq!(snapshot.set_name.as_deref(), Some("rs0"));
    assert_eq!(primary_of(&snapshot), Some(address_of(&deployment, 0)));

    let write = harness
        .topology
        .select_server(&SelectionCriteria::Write, &[], Deadline::None)
        .await
        .expect("a primary is selectable");
    assert_eq!(write.address, address_of(&deployment, 0));
    assert_eq!(write.topology_type, TopologyType::ReplicaSetWithPrimary);

    let read = harness
        .topology
        .select_server(&secondary_read(), &[], Deadline::None)
        .await
        .expect("a secondary is selectable");
    assert_ne!(read.address, address_of(&deployment, 0));

    // The members the seed reported were opened once each, after the seed.
    let opened: Vec<_> = harness
        .sdam_events()
        .iter()
        .filter_map(|e| match e {
            SdamEvent::ServerOpening { address } => Some(address.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(opened.len(), 3, "{opened:?}");
    assert_eq!(opened[0], address_of(&deployment, 2));
    harness.topology.shutdown().await;
}

#[tokio::test]
async fn follows_a_stepdown_to_the_new_primary() {
    let deployment = replica_set(3).await;
    let harness = Harness::open(&format!("{}&heartbeatFrequencyMS=500", deployment.uri()));
    harness
        .topology_where(0, "discovery", |t| fully_discovered(t, 3))
        .await;
    let old = address_of(&deployment, 0);
    let mark = harness.events.len();

    deployment
        .step_down(Duration::from_secs(60))
        .expect("the primary steps down");
    deployment
        .wait_until(|t| t.primary().is_some_and(|p| p != 0))
        .await;
    let expected = address_of(&deployment, deployment.primary().expect("elected"));

    harness
        .topology_where(mark, "the new primary", |t| {
            primary_of(t).as_ref() == Some(&expected)
        })
        .await;
    let write = harness
        .topology
        .select_server(&SelectionCriteria::Write, &[], Deadline::None)
        .await
        .expect("the new primary is selectable");
    assert_eq!(write.address, expected);
    assert_ne!(write.address, old);
    harness.topology.shutdown().await;
}

#[tokio::test]
async fn follows_an_election_of_a_chosen_member() {
    let deployment = replica_set(3).await;
    let harness = Harness::open(&format!("{}&heartbeatFrequencyMS=500", deployment.uri()));
    harness
        .topology_where(0, "discovery", |t| fully_discovered(t, 3))
        .await;
    let mark = harness.events.len();
    deployment.elect(1).expect("member 1 is electable");
    let expected = address_of(&deployment, 1);
    harness
        .topology_where(mark, "member 1 as primary", |t| {
            primary_of(t).as_ref() == Some(&expected)
                && t.servers
                    .values()
                    .filter(|s| s.server_type.is_writable())
                    .count()
                    == 1
        })
        .await;
    let write = harness
        .topology
        .select_server(&SelectionCriteria::Write, &[], Deadline::None)
        .await
        .expect("selectable");
    assert_eq!(write.address, expected);
    harness.topology.shutdown().await;
}

#[tokio::test]
async fn opens_added_members_and_closes_removed_ones() {
    let deployment = replica_set(3).await;
    let harness = Harness::open(&format!("{}&heartbeatFrequencyMS=500", deployment.uri()));
    harness
        .topology_where(0, "discovery", |t| fully_discovered(t, 3))
        .await;

    let mark = harness.events.len();
    let added = deployment
        .add_member(MemberOptions::electable())
        .await
        .expect("a fourth member joins");
    let added = address_of(&deployment, added);
    harness
        .sdam(
            mark,
            "the new member opened",
            |e| matches!(e, SdamEvent::ServerOpening { address } if *address == added),
        )
        .await;
    harness
        .topology_where(mark, "four members known", |t| fully_discovered(t, 4))
        .await;

    // Reconfigure back to the first three: the fourth is closed.
    let mark = harness.events.len();
    let keep: Vec<_> = (0..3)
        .map(|i| {
            (
                deployment.host(i).expect("node"),
                MemberOptions::electable(),
            )
        })
        .collect();
    deployment.reconfigure(keep).await.expect("reconfig");
    harness
        .sdam(
            mark,
            "the removed member closed",
            |e| matches!(e, SdamEvent::ServerClosed { address } if *address == added),
        )
        .await;
    assert!(harness.topology.snapshot().server(&added).is_none());
    assert_eq!(harness.topology.operation_count(&added), 0);
    harness.topology.shutdown().await;
}
