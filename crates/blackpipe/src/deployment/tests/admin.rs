use std::time::{Duration, Instant};

use bson::doc;
use bson::oid::ObjectId;

use crate::deployment::admin::{
    AdminRequest, MemberRef, blackpipe_status, config_reply, parse_admin, parse_freeze,
    parse_reconfig, parse_step_down, status_reply,
};
use crate::deployment::{ControlError, MemberOptions, Topology};

fn set() -> Topology {
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
            (
                "h:3".into(),
                MemberOptions::arbiter(),
                ObjectId::from_bytes([3; 12]),
            ),
        ],
    )
    .unwrap()
}

#[test]
fn member_refs_resolve_by_index_host_or_receiver() {
    let topology = set();
    assert_eq!(MemberRef::Receiver.resolve(&topology, 2), Ok(2));
    assert_eq!(MemberRef::Index(1).resolve(&topology, 0), Ok(1));
    assert_eq!(MemberRef::Host("h:3".into()).resolve(&topology, 0), Ok(2));
    assert!(matches!(
        MemberRef::Index(9).resolve(&topology, 0),
        Err(ControlError::UnknownMember(_))
    ));
    assert!(matches!(
        MemberRef::Host("h:9".into()).resolve(&topology, 0),
        Err(ControlError::UnknownMember(_))
    ));
}

#[test]
fn admin_commands_parse_with_defaults() {
    match parse_admin(&doc! {"blackpipe": "stepDown"}).unwrap() {
        AdminRequest::StepDown {
            member,
            freeze_for,
            force,
        } => {
            assert_eq!(member, None);
            assert_eq!(freeze_for, Duration::from_secs(60));
            assert!(!force);
        }
        other => panic!("unexpected {other:?}"),
    }
    match parse_admin(&doc! {"blackpipe": "elect", "member": 2, "delayMS": 250}).unwrap() {
        AdminRequest::Elect { member, after } => {
            assert_eq!(member, MemberRef::Index(2));
            assert_eq!(after, Duration::from_millis(250));
        }
        other => panic!("unexpected {other:?}"),
    }
    match parse_admin(&doc! {"blackpipe": "kill", "member": "h:2"}).unwrap() {
        AdminRequest::Kill { member } => assert_eq!(member, MemberRef::Host("h:2".into())),
        other => panic!("unexpected {other:?}"),
    }
    match parse_admin(&doc! {"blackpipe": "partition"}).unwrap() {
        AdminRequest::Partition { member, from } => {
            assert_eq!(member, MemberRef::Receiver);
            assert_eq!(from, None);
        }
        other => panic!("unexpected {other:?}"),
    }
    match parse_admin(&doc! {"blackpipe": "overload", "mode": {"times": 3}, "baseBackoffMS": 50})
        .unwrap()
    {
        AdminRequest::Overload { member, overload } => {
            assert_eq!(member, MemberRef::Receiver);
            assert!(overload.is_active());
        }
        other => panic!("unexpected {other:?}"),
    }
    match parse_admin(&doc! {"blackpipe": "addMember", "hidden": true}).unwrap() {
        AdminRequest::AddMember { options } => {
            assert!(options.hidden);
            assert_eq!(options.priority, 0.0);
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn admin_commands_reject_missing_or_malformed_fields() {
    for command in [
        doc! {"blackpipe": "elect"},
        doc! {"blackpipe": "restart"},
        doc! {"blackpipe": "slow"},
        doc! {"blackpipe": "slow", "delayMS": -5},
        doc! {"blackpipe": "freeze"},
        doc! {"blackpipe": "kill", "member": [1]},
        doc! {"blackpipe": "autoFailover"},
        doc! {"blackpipe": "teleport"},
        doc! {"blackpipe": 1},
    ] {
        let error = parse_admin(&command).unwrap_err();
        assert_eq!(error.code(), 2, "{command}");
    }
}

#[test]
fn repl_set_step_down_and_freeze_parse_like_mongod() {
    assert_eq!(
        parse_step_down(&doc! {"replSetStepDown": 30, "force": true}).unwrap(),
        (Duration::from_secs(30), true)
    );
    assert_eq!(
        parse_step_down(&doc! {"replSetStepDown": 5})
            .unwrap_err()
            .code(),
        2,
        "shorter than the 10 s catch-up period"
    );
    assert_eq!(
        parse_step_down(&doc! {"replSetStepDown": 5, "secondaryCatchUpPeriodSecs": 1}).unwrap(),
        (Duration::from_secs(5), false)
    );
    assert_eq!(
        parse_step_down(&doc! {"replSetStepDown": 5, "force": true}).unwrap(),
        (Duration::from_secs(5), true),
        "a forced stepdown's catch-up period is 0 by default"
    );
    assert_eq!(
        parse_freeze(&doc! {"replSetFreeze": 0}).unwrap(),
        Duration::ZERO
    );
}

#[test]
fn reconfig_reads_members_and_checks_the_set_name() {
    let (members, version) = parse_reconfig(
        &doc! {"replSetReconfig": {"_id": "rs0", "version": 4, "members": [
            {"_id": 0, "host": "h:1"},
            {"_id": 1, "host": "h:2", "priority": 0, "hidden": true, "tags": {"dc": "x"}},
        ]}},
        "rs0",
    )
    .unwrap();
    assert_eq!(version, Some(4));
    assert_eq!(members[0].0, "h:1");
    assert_eq!(members[0].1.priority, 1.0);
    assert!(members[1].1.hidden);
    assert_eq!(members[1].1.tags, vec![("dc".to_string(), "x".to_string())]);
    let wrong_name = parse_reconfig(
        &doc! {"replSetReconfig": {"_id": "other", "members": []}},
        "rs0",
    );
    assert_eq!(wrong_name.unwrap_err().code(), 93);
}

#[test]
fn config_and_status_documents_describe_the_set() {
    let mut topology = set();
    topology.kill(1).unwrap();
    let config = config_reply(&topology);
    let config = config.get_document("config").unwrap();
    assert_eq!(config.get_str("_id").unwrap(), "rs0");
    assert_eq!(config.get_array("members").unwrap().len(), 3);
    let now = bson::DateTime::from_millis(1_700_000_000_000);
    let status = status_reply(
        &topology,
        0,
        bson::Timestamp {
            time: 0,
            increment: 0,
        },
        now,
    );
    assert_eq!(status.get_datetime("date").unwrap(), &now);
    assert_eq!(status.get_i32("votingMembersCount").unwrap(), 3);
    assert_eq!(status.get_i32("majorityVoteCount").unwrap(), 2);
    assert_eq!(
        status.get_i32("writableVotingMembersCount").unwrap(),
        2,
        "the arbiter holds no data"
    );
    assert_eq!(
        status.get_str("syncSourceHost").unwrap(),
        "",
        "the primary syncs from nobody"
    );
    let members = status.get_array("members").unwrap();
    let states: Vec<&str> = members
        .iter()
        .map(|m| m.as_document().unwrap().get_str("stateStr").unwrap())
        .collect();
    assert_eq!(
        states,
        vec!["PRIMARY", "(not reachable/healthy)", "ARBITER"]
    );
    assert_eq!(status.get_i32("myState").unwrap(), 1);
    let killed = members[1].as_document().unwrap();
    assert_eq!(
        killed
            .get_datetime("lastHeartbeat")
            .unwrap()
            .timestamp_millis(),
        0,
        "never heard from"
    );
    let arbiter = members[2].as_document().unwrap();
    assert_eq!(arbiter.get_datetime("lastHeartbeat").unwrap(), &now);
    assert!(members[0].as_document().unwrap().get_bool("self").unwrap());
    // A secondary syncs from the primary it reaches.
    let mut healthy = set();
    healthy.kill(2).ok();
    let seen_by_secondary = status_reply(
        &healthy,
        1,
        bson::Timestamp {
            time: 0,
            increment: 0,
        },
        now,
    );
    assert_eq!(
        seen_by_secondary.get_str("syncSourceHost").unwrap(),
        "h:1",
        "{seen_by_secondary}"
    );
    let summary = blackpipe_status(&topology, Instant::now());
    assert_eq!(summary.get_str("primary").unwrap(), "h:1");
    assert_eq!(summary.get_array("nodes").unwrap().len(), 3);
}

#[test]
fn huge_or_non_finite_durations_are_bad_values_not_panics() {
    // `from_secs_f64(1e300)` used to panic the handling task.
    for value in [
        bson::Bson::Double(1e300),
        bson::Bson::Double(f64::INFINITY),
        bson::Bson::Double(f64::NAN),
        bson::Bson::Double(-1.0),
        bson::Bson::Int64(i64::MAX),
    ] {
        let freeze = parse_freeze(&doc! {"replSetFreeze": value.clone()}).unwrap_err();
        assert_eq!(freeze.code(), 2, "replSetFreeze {value}");
        let step_down = parse_step_down(&doc! {"replSetStepDown": value.clone()}).unwrap_err();
        assert_eq!(step_down.code(), 2, "replSetStepDown {value}");
        let catch_up = parse_step_down(
            &doc! {"replSetStepDown": 60, "secondaryCatchUpPeriodSecs": value.clone()},
        )
        .unwrap_err();
        assert_eq!(catch_up.code(), 2, "secondaryCatchUpPeriodSecs {value}");
    }
}

#[test]
fn admin_durations_longer_than_the_cap_are_refused() {
    let too_many_ms = i64::MAX;
    for command in [
        doc! {"blackpipe": "stepDown", "secs": 1e300},
        doc! {"blackpipe": "freeze", "secs": i64::MAX},
        doc! {"blackpipe": "elect", "member": 1, "delayMS": too_many_ms},
        doc! {"blackpipe": "shutdown", "quiesceMS": too_many_ms},
        doc! {"blackpipe": "slow", "delayMS": too_many_ms},
        doc! {"blackpipe": "replicationLag", "lagMS": too_many_ms},
        doc! {"blackpipe": "autoFailover", "enabled": true, "electionDelayMS": too_many_ms},
    ] {
        let error = parse_admin(&command).unwrap_err();
        assert_eq!(error.code(), 2, "{command}");
    }
    let longest = crate::deployment::admin::MAX_CONTROL_DURATION;
    let at_cap = i64::try_from(longest.as_secs()).unwrap();
    assert_eq!(
        parse_freeze(&doc! {"replSetFreeze": at_cap}).unwrap(),
        longest
    );
}
