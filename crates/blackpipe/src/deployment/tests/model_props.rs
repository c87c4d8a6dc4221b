//! Random sequences of control operations against the replica set model, checked against the
//! invariants a real replica set keeps.

use std::time::{Duration, Instant};

use bson::oid::ObjectId;
use proptest::prelude::*;

use crate::deployment::{Health, MemberOptions, Role, Topology, TopologyVersion};

#[derive(Debug, Clone)]
enum Operation {
    StepDown(usize, bool),
    Elect(usize),
    AutoElect,
    Freeze(usize, u64),
    Kill(usize),
    Restart(usize),
    Partition(usize),
    Heal(usize),
    Shutdown(usize),
    MakePassive(usize),
    AdvanceClock(u64),
}

fn operation(members: usize) -> impl Strategy<Value = Operation> {
    let member = 0..members;
    prop_oneof![
        (member.clone(), any::<bool>()).prop_map(|(m, force)| Operation::StepDown(m, force)),
        member.clone().prop_map(Operation::Elect),
        Just(Operation::AutoElect),
        (member.clone(), 0..120_u64).prop_map(|(m, secs)| Operation::Freeze(m, secs)),
        member.clone().prop_map(Operation::Kill),
        member.clone().prop_map(Operation::Restart),
        member.clone().prop_map(Operation::Partition),
        member.clone().prop_map(Operation::Heal),
        member.clone().prop_map(Operation::Shutdown),
        member.prop_map(Operation::MakePassive),
        (0..90_u64).prop_map(Operation::AdvanceClock),
    ]
}

fn initial() -> Topology {
    Topology::replica_set(
        "rs0",
        vec![
            ("h:1".into(), MemberOptions::electable(), ObjectId::new()),
            ("h:2".into(), MemberOptions::electable(), ObjectId::new()),
            (
                "h:3".into(),
                MemberOptions::electable().with_priority(2.0),
                ObjectId::new(),
            ),
            ("h:4".into(), MemberOptions::passive(), ObjectId::new()),
            ("h:5".into(), MemberOptions::arbiter(), ObjectId::new()),
        ],
    )
    .expect("valid set")
}

fn apply(topology: &mut Topology, operation: &Operation, now: &mut Instant) {
    // Errors are legitimate refusals; the invariants must hold either way.
    let _ = match operation {
        Operation::StepDown(m, force) => {
            topology.step_down(*m, *now, Duration::from_secs(60), *force)
        }
        Operation::Elect(m) => topology.elect(*m),
        Operation::AutoElect => match topology.election_candidate(*now) {
            Some(candidate) => topology.elect(candidate),
            None => Ok(()),
        },
        Operation::Freeze(m, secs) => topology.freeze(*m, *now, Duration::from_secs(*secs)),
        Operation::Kill(m) => topology.kill(*m),
        Operation::Restart(m) => {
            if topology
                .node(*m)
                .is_some_and(|node| node.health() == Health::Down)
            {
                topology.restart(*m, ObjectId::new())
            } else {
                Ok(())
            }
        }
        Operation::Partition(m) => topology.partition(*m),
        Operation::Heal(m) => topology.heal(*m),
        Operation::Shutdown(m) => topology.begin_shutdown(*m),
        Operation::MakePassive(m) => {
            let mut members: Vec<(String, MemberOptions)> = topology
                .nodes()
                .iter()
                .map(|node| (node.host().to_owned(), node.options().clone()))
                .collect();
            if let Some((_, options)) = members.get_mut(*m) {
                if !options.arbiter_only {
                    *options = MemberOptions::passive();
                }
            }
            topology
                .reconfigure(members, None, ObjectId::new)
                .map(|_| ())
        }
        Operation::AdvanceClock(secs) => {
            *now += Duration::from_secs(*secs);
            Ok(())
        }
    };
}

proptest! {
    #[test]
    fn the_model_keeps_replica_set_invariants(
        operations in proptest::collection::vec(operation(5), 1..60)
    ) {
        let mut topology = initial();
        let mut now = Instant::now();
        let mut previous_term = topology.term();
        let mut previous_versions: Vec<TopologyVersion> =
            topology.nodes().iter().map(|node| node.topology_version()).collect();
        let mut previous_set_version = topology.set_version();
        for operation in &operations {
            apply(&mut topology, operation, &mut now);
            let primaries: Vec<usize> = topology
                .nodes()
                .iter()
                .enumerate()
                .filter(|(_, node)| node.role() == Role::Primary)
                .map(|(index, _)| index)
                .collect();
            // At most one primary, and it is the one the model names.
            prop_assert!(primaries.len() <= 1, "{operation:?}: {primaries:?}");
            prop_assert_eq!(primaries.first().copied(), topology.primary());
            if let Some(primary) = topology.primary() {
                let node = topology.node(primary).unwrap();
                // A primary is up and electable.
                prop_assert_eq!(node.health(), Health::Up);
                prop_assert!(node.options().is_electable());
            }
            // Terms and config versions never go back.
            prop_assert!(topology.term() >= previous_term);
            prop_assert!(topology.set_version() >= previous_set_version);
            // Within one process, the counter never goes back.
            for (index, node) in topology.nodes().iter().enumerate() {
                let version = node.topology_version();
                if version.process_id == previous_versions[index].process_id {
                    prop_assert!(version.counter >= previous_versions[index].counter);
                } else {
                    prop_assert_eq!(version.counter, 0);
                }
            }
            // Arbiters stay arbiters.
            prop_assert_eq!(topology.node(4).unwrap().role(), Role::Arbiter);
            previous_term = topology.term();
            previous_set_version = topology.set_version();
            previous_versions = topology.nodes().iter().map(|node| node.topology_version()).collect();
        }
    }

    #[test]
    fn every_visible_change_moves_every_counter(
        operations in proptest::collection::vec(operation(5), 1..40)
    ) {
        let mut topology = initial();
        let mut now = Instant::now();
        for operation in &operations {
            let before = topology.clone();
            apply(&mut topology, operation, &mut now);
            let roles_changed = before
                .nodes()
                .iter()
                .zip(topology.nodes())
                .any(|(old, new)| old.role() != new.role() || old.health() != new.health());
            if roles_changed || before.term() != topology.term() {
                // Every surviving process saw the change: awaitable hellos wake everywhere.
                for (old, new) in before.nodes().iter().zip(topology.nodes()) {
                    let old = old.topology_version();
                    let new = new.topology_version();
                    prop_assert!(
                        old.process_id != new.process_id || new.counter > old.counter,
                        "{operation:?} changed the set without bumping a counter"
                    );
                }
            }
        }
    }
}
