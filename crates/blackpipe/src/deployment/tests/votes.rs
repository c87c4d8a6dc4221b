//! Elections with cut links and op log positions, and the majority a write needs.

use std::time::Instant;

use bson::Timestamp;
use bson::oid::ObjectId;

use crate::deployment::{ControlError, MemberOptions, Topology};

fn ts(time: u32) -> Timestamp {
    Timestamp { time, increment: 1 }
}

fn set(arbiter_last: bool) -> Topology {
    let last = if arbiter_last {
        MemberOptions::arbiter()
    } else {
        MemberOptions::electable()
    };
    Topology::replica_set(
        "rs0",
        vec![
            (
                "h:1".into(),
                MemberOptions::electable(),
                ObjectId::from_bytes([1; 12]),
            ),
            (
                "h:2".into(),
                MemberOptions::electable(),
                ObjectId::from_bytes([2; 12]),
            ),
            ("h:3".into(), last, ObjectId::from_bytes([3; 12])),
        ],
    )
    .unwrap()
}

#[test]
fn voters_deny_a_candidate_whose_op_log_is_older_than_theirs() {
    let mut topology = set(false);
    topology.set_applied(0, ts(9));
    topology.set_applied(1, ts(8));
    topology.set_applied(2, ts(5));
    topology.kill(0).unwrap();
    assert_eq!(topology.votes_for(2), 1, "only itself");
    assert!(!topology.can_win(2));
    assert!(matches!(
        topology.elect(2),
        Err(ControlError::ElectionLost(_))
    ));
    assert_eq!(topology.votes_for(1), 2);
    topology.elect(1).unwrap();
    assert_eq!(topology.primary(), Some(1));
}

#[test]
fn an_automatic_election_picks_the_newest_op_log_among_winners() {
    let mut topology = set(false);
    topology.set_applied(0, ts(9));
    topology.set_applied(1, ts(7));
    topology.set_applied(2, ts(8));
    topology.kill(0).unwrap();
    assert_eq!(topology.election_candidate(Instant::now()), Some(2));
}

#[test]
fn a_primary_cut_off_from_the_majority_keeps_its_role_until_another_is_elected() {
    let mut topology = set(false);
    topology.cut(0, &[1, 2]).unwrap();
    assert_eq!(topology.primary(), Some(0), "clients still reach it");
    assert!(!topology.primary_sees_majority());
    assert!(!topology.is_linked(0, 1));
    assert!(topology.is_linked(1, 2));
    let candidate = topology.election_candidate(Instant::now()).unwrap();
    assert_ne!(candidate, 0);
    topology.elect(candidate).unwrap();
    assert_eq!(topology.primary(), Some(candidate));
    assert!(topology.primary_sees_majority());
    topology.heal(0).unwrap();
    assert!(topology.is_linked(0, 1));
    assert_eq!(topology.cut_links().count(), 0);
}

#[test]
fn a_member_cannot_be_cut_from_itself() {
    let mut topology = set(false);
    assert!(matches!(
        topology.cut(0, &[0]),
        Err(ControlError::BadArgument(_))
    ));
    assert!(matches!(
        topology.cut(0, &[7]),
        Err(ControlError::UnknownMember(_))
    ));
}

#[test]
fn a_majority_write_needs_a_majority_of_voters_but_no_more_data_bearers_than_exist() {
    let mut positions = vec![ts(9), ts(5), ts(7)];
    let topology = set(false);
    assert_eq!(topology.write_majority_count(), 2);
    assert_eq!(topology.majority_point(&mut positions), Some(ts(7)));
    // Primary, secondary, arbiter: the two data-bearing members.
    let topology = set(true);
    assert_eq!(topology.write_majority_count(), 2);
    let mut positions = vec![ts(9)];
    assert_eq!(topology.majority_point(&mut positions), None);
}
