use std::time::{Duration, Instant};

use bson::oid::ObjectId;

use crate::deployment::{ControlError, DeploymentKind, Health, MemberOptions, Role, Topology};

fn pid(n: u8) -> ObjectId {
    ObjectId::from_bytes([n; 12])
}

fn three_members() -> Topology {
    Topology::replica_set(
        "rs0",
        vec![
            ("127.0.0.1:1".into(), MemberOptions::electable(), pid(1)),
            ("127.0.0.1:2".into(), MemberOptions::electable(), pid(2)),
            ("127.0.0.1:3".into(), MemberOptions::electable(), pid(3)),
        ],
    )
    .unwrap()
}

fn counters(topology: &Topology) -> Vec<i64> {
    topology
        .nodes()
        .iter()
        .map(|node| node.topology_version().counter)
        .collect()
}

#[test]
fn initiated_set_has_first_member_primary_in_term_one() {
    let topology = three_members();
    assert_eq!(topology.kind(), DeploymentKind::ReplicaSet);
    assert_eq!(topology.primary(), Some(0));
    assert_eq!(topology.term(), 1);
    assert_eq!(topology.set_version(), 1);
    assert_eq!(topology.node(0).unwrap().role(), Role::Primary);
    assert_eq!(topology.node(1).unwrap().role(), Role::Secondary);
    assert_eq!(counters(&topology), vec![0, 0, 0]);
}

#[test]
fn highest_priority_member_starts_as_primary() {
    let topology = Topology::replica_set(
        "rs0",
        vec![
            ("a:1".into(), MemberOptions::passive(), pid(1)),
            ("a:2".into(), MemberOptions::electable(), pid(2)),
            (
                "a:3".into(),
                MemberOptions::electable().with_priority(5.0),
                pid(3),
            ),
        ],
    )
    .unwrap();
    assert_eq!(topology.primary(), Some(2));
}

#[test]
fn election_id_encodes_the_term() {
    let mut topology = three_members();
    assert_eq!(topology.election_id().to_hex(), "7fffffff0000000000000001");
    topology.elect(1).unwrap();
    assert_eq!(topology.election_id().to_hex(), "7fffffff0000000000000002");
}

#[test]
fn step_down_demotes_freezes_and_bumps_every_counter() {
    let mut topology = three_members();
    let now = Instant::now();
    topology
        .step_down(0, now, Duration::from_secs(60), false)
        .unwrap();
    assert_eq!(topology.primary(), None);
    assert_eq!(topology.node(0).unwrap().role(), Role::Secondary);
    assert!(topology.node(0).unwrap().is_frozen(now));
    assert_eq!(counters(&topology), vec![1, 1, 1]);
    // The frozen member is not a candidate; the next one is.
    assert_eq!(topology.election_candidate(now), Some(1));
    assert_eq!(
        topology.election_candidate(now + Duration::from_secs(61)),
        Some(0)
    );
}

#[test]
fn step_down_of_a_secondary_is_not_primary() {
    let mut topology = three_members();
    let error = topology
        .step_down(1, Instant::now(), Duration::from_secs(60), false)
        .unwrap_err();
    assert_eq!(error, ControlError::NotPrimary);
    assert_eq!(error.code(), 10107);
    assert_eq!(counters(&topology), vec![0, 0, 0]);
}

#[test]
fn step_down_needs_a_successor_unless_forced() {
    let mut topology = Topology::replica_set(
        "rs0",
        vec![
            ("a:1".into(), MemberOptions::electable(), pid(1)),
            ("a:2".into(), MemberOptions::passive(), pid(2)),
        ],
    )
    .unwrap();
    let now = Instant::now();
    let error = topology
        .step_down(0, now, Duration::from_secs(10), false)
        .unwrap_err();
    assert_eq!(error.code(), 262);
    topology
        .step_down(0, now, Duration::from_secs(10), true)
        .unwrap();
    assert_eq!(topology.primary(), None);
}

#[test]
fn elect_increments_term_and_demotes_the_old_primary() {
    let mut topology = three_members();
    topology.elect(2).unwrap();
    assert_eq!(topology.primary(), Some(2));
    assert_eq!(topology.term(), 2);
    assert_eq!(topology.node(0).unwrap().role(), Role::Secondary);
    assert_eq!(counters(&topology), vec![1, 1, 1]);
    // Electing the current primary again changes nothing.
    topology.elect(2).unwrap();
    assert_eq!(topology.term(), 2);
    assert_eq!(counters(&topology), vec![1, 1, 1]);
}

#[test]
fn passive_hidden_and_arbiter_members_are_never_elected() {
    let mut topology = Topology::replica_set(
        "rs0",
        vec![
            ("a:1".into(), MemberOptions::electable(), pid(1)),
            ("a:2".into(), MemberOptions::passive(), pid(2)),
            ("a:3".into(), MemberOptions::hidden(), pid(3)),
            ("a:4".into(), MemberOptions::arbiter(), pid(4)),
        ],
    )
    .unwrap();
    assert_eq!(topology.node(3).unwrap().role(), Role::Arbiter);
    for index in 1..4 {
        assert!(matches!(
            topology.elect(index),
            Err(ControlError::NotElectable(_))
        ));
    }
    topology.kill(0).unwrap();
    assert_eq!(topology.election_candidate(Instant::now()), None);
}

#[test]
fn killing_the_primary_leaves_the_set_without_one_until_an_election() {
    let mut topology = three_members();
    topology.kill(0).unwrap();
    assert_eq!(topology.primary(), None);
    assert_eq!(topology.node(0).unwrap().health(), Health::Down);
    assert_eq!(topology.election_candidate(Instant::now()), Some(1));
    topology.elect(1).unwrap();
    assert_eq!(topology.term(), 2);
}

#[test]
fn losing_the_majority_steps_the_primary_down_and_blocks_elections() {
    let mut topology = three_members();
    topology.kill(1).unwrap();
    assert_eq!(topology.primary(), Some(0));
    topology.partition(2).unwrap();
    assert_eq!(topology.primary(), None);
    assert_eq!(topology.elect(0), Err(ControlError::NoMajority));
    assert_eq!(topology.election_candidate(Instant::now()), None);
    topology.heal(2).unwrap();
    assert_eq!(topology.election_candidate(Instant::now()), Some(0));
}

#[test]
fn restart_gives_a_new_process_id_and_counter_zero() {
    let mut topology = three_members();
    topology.kill(1).unwrap();
    topology.restart(1, pid(9)).unwrap();
    let restarted = topology.node(1).unwrap();
    assert_eq!(restarted.health(), Health::Up);
    assert_eq!(restarted.role(), Role::Secondary);
    assert_eq!(restarted.topology_version().process_id, pid(9));
    assert_eq!(restarted.topology_version().counter, 0);
    // The others saw two changes: the kill and the restart.
    assert_eq!(topology.node(0).unwrap().topology_version().counter, 2);
}

#[test]
fn heal_of_a_killed_member_is_refused() {
    let mut topology = three_members();
    topology.kill(2).unwrap();
    assert!(matches!(
        topology.heal(2),
        Err(ControlError::Unreachable(_))
    ));
}

#[test]
fn freeze_refuses_the_primary_and_unfreezes_with_zero() {
    let mut topology = three_members();
    let now = Instant::now();
    assert_eq!(
        topology.freeze(0, now, Duration::from_secs(5)),
        Err(ControlError::FreezePrimary)
    );
    topology.freeze(1, now, Duration::from_secs(5)).unwrap();
    assert!(topology.node(1).unwrap().is_frozen(now));
    topology.freeze(1, now, Duration::ZERO).unwrap();
    assert!(!topology.node(1).unwrap().is_frozen(now));
}

#[test]
fn reconfigure_adds_removes_and_bumps_set_version() {
    let mut topology = three_members();
    let added = topology
        .reconfigure(
            vec![
                ("127.0.0.1:1".into(), MemberOptions::electable()),
                ("127.0.0.1:2".into(), MemberOptions::hidden()),
                ("127.0.0.1:4".into(), MemberOptions::arbiter()),
            ],
            None,
            || pid(4),
        )
        .unwrap();
    assert_eq!(added, vec![3]);
    assert_eq!(topology.set_version(), 2);
    assert_eq!(topology.node(2).unwrap().role(), Role::Removed);
    assert_eq!(topology.node(3).unwrap().role(), Role::Arbiter);
    assert!(topology.node(1).unwrap().options().hidden);
    assert_eq!(topology.primary(), Some(0));
    assert!(counters(&topology).iter().take(3).all(|&c| c == 1));
}

#[test]
fn reconfigure_making_the_primary_passive_steps_it_down() {
    let mut topology = three_members();
    topology
        .reconfigure(
            vec![
                ("127.0.0.1:1".into(), MemberOptions::passive()),
                ("127.0.0.1:2".into(), MemberOptions::electable()),
                ("127.0.0.1:3".into(), MemberOptions::electable()),
            ],
            Some(7),
            || pid(0),
        )
        .unwrap();
    assert_eq!(topology.primary(), None);
    assert_eq!(topology.set_version(), 7);
    assert_eq!(topology.election_candidate(Instant::now()), Some(1));
}

#[test]
fn reconfigure_rejects_invalid_configs_and_old_versions() {
    let mut topology = three_members();
    let hidden_with_priority = topology.reconfigure(
        vec![(
            "127.0.0.1:1".into(),
            MemberOptions::hidden().with_priority(1.0),
        )],
        None,
        || pid(0),
    );
    assert!(matches!(
        hidden_with_priority,
        Err(ControlError::InvalidConfig(_))
    ));
    let duplicate = topology.reconfigure(
        vec![
            ("127.0.0.1:1".into(), MemberOptions::electable()),
            ("127.0.0.1:1".into(), MemberOptions::electable()),
        ],
        None,
        || pid(0),
    );
    assert!(matches!(duplicate, Err(ControlError::InvalidConfig(_))));
    let old = topology.reconfigure(
        vec![("127.0.0.1:1".into(), MemberOptions::electable())],
        Some(1),
        || pid(0),
    );
    assert_eq!(old.unwrap_err().code(), 103);
    assert_eq!(topology.set_version(), 1);
}

#[test]
fn standalone_and_routers_refuse_replica_set_controls() {
    let mut standalone = Topology::standalone("127.0.0.1:1", pid(1));
    assert!(standalone.is_writable(0));
    assert_eq!(standalone.elect(0), Err(ControlError::NotReplicaSet));
    let mut sharded = Topology::sharded(vec![("a:1".into(), pid(1)), ("a:2".into(), pid(2))]);
    assert!(sharded.is_writable(1));
    sharded.kill(1).unwrap();
    assert!(!sharded.is_writable(1));
    sharded.restart(1, pid(3)).unwrap();
    assert_eq!(sharded.node(1).unwrap().role(), Role::Router);
    assert!(sharded.is_writable(1));
}

#[test]
fn step_down_with_an_unrepresentable_period_changes_nothing() {
    // The freeze deadline used to be computed after demoting the primary, and overflowed.
    let mut topology = three_members();
    let now = Instant::now();
    let error = topology.step_down(0, now, Duration::MAX, true).unwrap_err();
    assert_eq!(error.code(), 2);
    assert_eq!(topology.primary(), Some(0));
    assert_eq!(counters(&topology), vec![0, 0, 0]);
    assert_eq!(
        topology.freeze(1, now, Duration::MAX).unwrap_err().code(),
        2
    );
    assert!(!topology.node(1).unwrap().is_frozen(now));
}

fn non_voters(first_port: usize, count: usize) -> Vec<(String, MemberOptions)> {
    (first_port..first_port + count)
        .map(|port| {
            let options = MemberOptions::electable().with_votes(0).with_priority(0.0);
            (format!("127.0.0.1:{port}"), options)
        })
        .collect()
}

#[test]
fn reconfigure_caps_members_at_fifty_and_voters_at_seven() {
    let mut topology = three_members();
    let mut members = vec![("127.0.0.1:1".to_owned(), MemberOptions::electable())];
    members.extend(non_voters(100, crate::deployment::MAX_MEMBERS));
    let error = topology.reconfigure(members, None, || pid(9)).unwrap_err();
    assert_eq!(error.code(), 103, "{error}");
    assert_eq!(topology.nodes().len(), 3, "nothing added");
    let voters: Vec<(String, MemberOptions)> = (1..=crate::deployment::MAX_VOTING_MEMBERS + 1)
        .map(|port| (format!("127.0.0.1:{port}"), MemberOptions::electable()))
        .collect();
    let error = topology.reconfigure(voters, None, || pid(9)).unwrap_err();
    assert_eq!(error.code(), 103, "{error}");
    let mut at_cap = vec![("127.0.0.1:1".to_owned(), MemberOptions::electable())];
    at_cap.extend(non_voters(100, crate::deployment::MAX_MEMBERS - 1));
    topology.reconfigure(at_cap, None, || pid(9)).unwrap();
}

#[test]
fn endless_add_remove_reconfigs_stop_at_the_slot_cap() {
    let mut topology = three_members();
    // Each round replaces ten members with ten new hosts; without the cap every round would
    // keep ten more slots forever.
    let rounds = crate::deployment::MAX_NODE_SLOTS / 10 + 1;
    let refused = (0..rounds).find_map(|round| {
        let mut members = vec![("127.0.0.1:1".to_owned(), MemberOptions::electable())];
        members.extend(non_voters(100 + 10 * round, 10));
        topology.reconfigure(members, None, || pid(9)).err()
    });
    let error = refused.expect("the slot cap refuses a round");
    assert_eq!(error.code(), 103, "{error}");
    assert!(topology.nodes().len() <= crate::deployment::MAX_NODE_SLOTS);
}

#[test]
fn a_config_version_at_i64_max_cannot_be_incremented() {
    // `set_version + 1` used to overflow on the next reconfig without an explicit version.
    let mut topology = three_members();
    let members = || {
        vec![
            ("127.0.0.1:1".to_owned(), MemberOptions::electable()),
            ("127.0.0.1:2".to_owned(), MemberOptions::electable()),
        ]
    };
    topology
        .reconfigure(members(), Some(i64::MAX), || pid(9))
        .unwrap();
    let error = topology
        .reconfigure(members(), None, || pid(9))
        .unwrap_err();
    assert_eq!(error.code(), 103, "{error}");
    assert_eq!(topology.set_version(), i64::MAX);
}
