use std::time::{Duration, Instant};

use bson::oid::ObjectId;
use bson::{Document, doc};

use super::*;
use crate::address::ServerAddress;
use crate::description::{
    ServerDescription, ServerType, TopologyConfig, TopologyDescription, TopologyType,
    TopologyVersion,
};

fn addr(host: &str) -> ServerAddress {
    ServerAddress::tcp(host, 27017)
}

fn hello(host: &str, reply: Document) -> ServerDescription {
    ServerDescription::from_hello(
        addr(host),
        &reply,
        Duration::ZERO,
        Duration::ZERO,
        Instant::now(),
    )
}

fn topology(seeds: &[&str], edit: impl FnOnce(&mut TopologyConfig)) -> TopologyDescription {
    let mut config = TopologyConfig::new(seeds.iter().map(|h| addr(h)));
    edit(&mut config);
    TopologyDescription::new(&config).unwrap()
}

fn names(events: &[SdamEvent]) -> Vec<&'static str> {
    events.iter().map(SdamEvent::spec_name).collect()
}

fn primary(hosts: &[&str]) -> Document {
    doc! {"ok": 1, "isWritablePrimary": true, "setName": "rs", "hosts": hosts.to_vec(),
    "maxWireVersion": 21}
}

#[test]
fn open_and_close_emit_the_lifecycle_events() {
    let opened = TopologyDescription::open(&TopologyConfig::new([addr("a"), addr("b")])).unwrap();
    assert_eq!(
        names(&opened.events),
        [
            "topology_opening_event",
            "topology_description_changed_event",
            "server_opening_event",
            "server_opening_event"
        ]
    );
    assert_eq!(opened.added, [addr("a"), addr("b")]);
    let closed = opened.description.close();
    assert_eq!(
        names(&closed.events),
        [
            "server_closed_event",
            "server_closed_event",
            "topology_description_changed_event",
            "topology_closed_event"
        ]
    );
    assert!(closed.description.servers.is_empty());
    assert_eq!(closed.removed.len(), 2);
}

#[test]
fn load_balanced_open_moves_the_balancer_from_unknown() {
    let mut config = TopologyConfig::new([addr("a")]);
    config.load_balanced = true;
    let opened = TopologyDescription::open(&config).unwrap();
    assert_eq!(
        names(&opened.events)[3..],
        [
            "server_description_changed_event",
            "topology_description_changed_event"
        ]
    );
    assert_eq!(opened.pool_ready, Some(addr("a")));
    // Later descriptions of another type are ignored: the balancer stays a balancer.
    let change = opened
        .description
        .apply(ServerDescription::unknown(addr("a")));
    assert_eq!(change.outcome, ApplyOutcome::LoadBalancedIgnoresType);
    assert_eq!(
        change.description.servers[&addr("a")].server_type,
        ServerType::LoadBalancer
    );
}

#[test]
fn ignored_inputs_change_nothing() {
    let start = topology(&["a"], |c| c.replica_set = Some("rs".into()));
    let stranger = start.apply(hello("z", primary(&["z"])));
    assert_eq!(stranger.outcome, ApplyOutcome::NotInTopology);
    assert!(stranger.events.is_empty());

    let process_id = ObjectId::new();
    let mut newer = primary(&["a"]);
    newer.insert(
        "topologyVersion",
        doc! {"processId": process_id, "counter": 5_i64},
    );
    let known = start.apply(hello("a", newer)).description;
    let mut older = primary(&["a"]);
    older.insert(
        "topologyVersion",
        doc! {"processId": process_id, "counter": 4_i64},
    );
    let stale = known.apply(hello("a", older));
    assert_eq!(stale.outcome, ApplyOutcome::StaleTopologyVersion);
    assert!(stale.events.is_empty());
}

#[test]
fn a_primary_adds_and_removes_members_and_invalidates_the_old_primary() {
    let start = topology(&["a", "b"], |c| c.replica_set = Some("rs".into()));
    let first = start.apply(hello("a", primary(&["a", "b", "c"])));
    assert_eq!(first.added, [addr("c")]);
    assert_eq!(first.pool_ready, Some(addr("a")));
    assert_eq!(
        first.description.topology_type,
        TopologyType::ReplicaSetWithPrimary
    );
    assert_eq!(
        names(&first.events),
        [
            "server_description_changed_event",
            "server_opening_event",
            "topology_description_changed_event"
        ]
    );

    let second = first.description.apply(hello("b", primary(&["a", "b"])));
    assert_eq!(second.removed, [addr("c")]);
    assert_eq!(second.check_now, [addr("a")]);
    let old = &second.description.servers[&addr("a")];
    assert_eq!(old.server_type, ServerType::Unknown);
    assert!(
        old.error
            .as_deref()
            .is_some_and(|e| e.contains("newer primary"))
    );
    // Both servers changed, the checked one first.
    let changed: Vec<_> = second
        .events
        .iter()
        .filter_map(|e| match e {
            SdamEvent::ServerDescriptionChanged { address, .. } => Some(address.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(changed, [addr("b"), addr("a")]);
}

#[test]
fn stale_primaries_are_marked_unknown_by_election_order() {
    let start = topology(&["a", "b"], |c| c.replica_set = Some("rs".into()));
    let high = ObjectId::from_bytes([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    let low = ObjectId::from_bytes([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    let mut reply = primary(&["a", "b"]);
    reply.insert("electionId", high);
    reply.insert("setVersion", 1);
    let current = start.apply(hello("a", reply)).description;
    assert_eq!(
        (current.max_election_id, current.max_set_version),
        (Some(high), Some(1))
    );

    let mut stale = primary(&["a", "b"]);
    stale.insert("electionId", low);
    stale.insert("setVersion", 9);
    let change = current.apply(hello("b", stale));
    let b = &change.description.servers[&addr("b")];
    assert_eq!(b.server_type, ServerType::Unknown);
    assert!(
        b.error
            .as_deref()
            .is_some_and(|e| e.contains("electionId/setVersion mismatch"))
    );
    assert_eq!(
        change.description.primary().map(|p| p.address.clone()),
        Some(addr("a"))
    );
    assert_eq!(change.description.max_set_version, Some(1));
}

#[test]
fn pools_become_ready_only_for_usable_servers() {
    let replica_set = topology(&["a"], |c| c.replica_set = Some("rs".into()));
    let ghost = replica_set.apply(hello("a", doc! {"ok": 1, "isreplicaset": true}));
    assert_eq!(ghost.pool_ready, None);
    let single = topology(&["a"], |c| c.direct_connection = Some(true));
    let other = single.apply(hello("a", doc! {"ok": 1, "setName": "rs"}));
    assert_eq!(other.pool_ready, Some(addr("a")));
}

#[test]
fn state_change_codes_win_over_messages() {
    use StateChangeKind::*;
    assert_eq!(
        classify_state_change(Some(10107), ""),
        Some(NotWritablePrimary)
    );
    assert_eq!(classify_state_change(Some(91), ""), Some(NodeIsRecovering));
    assert_eq!(classify_state_change(Some(1), "not master"), None);
    assert_eq!(
        classify_state_change(None, "not master"),
        Some(NotWritablePrimary)
    );
    assert_eq!(
        classify_state_change(None, "not master or secondary"),
        Some(NodeIsRecovering)
    );
    assert_eq!(
        classify_state_change(None, "node is recovering"),
        Some(NodeIsRecovering)
    );
    assert_eq!(classify_state_change(None, "duplicate key"), None);
    assert!(
        is_shutdown_code(Some(11600)) && !is_shutdown_code(Some(189)) && !is_shutdown_code(None)
    );
}

#[test]
fn command_replies_are_read_for_sdam() {
    let failed =
        ApplicationErrorKind::from_command_reply(&doc! {"ok": 0, "code": 91, "errmsg": "x"});
    assert!(matches!(
        failed,
        Some(ApplicationErrorKind::Command(ServerErrorReply {
            code: Some(91),
            ..
        }))
    ));
    let concern = doc! {"ok": 1, "writeConcernError": {"code": 11600, "errmsg": "down"}};
    assert!(matches!(
        ApplicationErrorKind::from_command_reply(&concern),
        Some(ApplicationErrorKind::WriteConcern(ServerErrorReply {
            code: Some(11600),
            ..
        }))
    ));
    let write_errors = doc! {"ok": 1, "writeErrors": [{"code": 10107, "errmsg": "not master"}]};
    assert_eq!(
        ApplicationErrorKind::from_command_reply(&write_errors),
        None
    );
}

fn known_primary() -> TopologyDescription {
    topology(&["a"], |c| c.replica_set = Some("rs".into()))
        .apply(hello("a", primary(&["a"])))
        .description
}

fn command(code: i32) -> ApplicationErrorKind {
    ApplicationErrorKind::Command(ServerErrorReply {
        code: Some(code),
        message: String::new(),
        topology_version: None,
    })
}

#[test]
fn application_errors_follow_handle_error() {
    let topology = known_primary();
    let context = |phase, kind| ErrorContext::new(addr("a"), 3, 3, phase, kind);
    let decide = |c: &ErrorContext| on_application_error(&topology, c);

    let stale = ErrorContext::new(
        addr("a"),
        2,
        3,
        ErrorPhase::AfterHandshake,
        ApplicationErrorKind::Network,
    );
    assert_eq!(decide(&stale).ignored, Some(IgnoreReason::StaleGeneration));

    let shutdown = decide(&context(ErrorPhase::AfterHandshake, command(91)));
    assert!(shutdown.mark_unknown.is_some() && shutdown.request_check);
    assert_eq!(shutdown.clear_pool.map(|c| c.generation), Some(3));

    let not_primary = decide(&context(ErrorPhase::AfterHandshake, command(10107)));
    assert!(not_primary.mark_unknown.is_some() && not_primary.request_check);
    assert_eq!(not_primary.clear_pool, None);

    let network = decide(&context(
        ErrorPhase::AfterHandshake,
        ApplicationErrorKind::Network,
    ));
    assert!(network.mark_unknown.is_some() && network.cancel_check && !network.request_check);
    assert!(network.clear_pool.is_some_and(|c| !c.interrupt_in_use));

    let timeout = decide(&context(
        ErrorPhase::AfterHandshake,
        ApplicationErrorKind::NetworkTimeout,
    ));
    assert_eq!(timeout.ignored, Some(IgnoreReason::NoTopologyImpact));
    let ordinary = decide(&context(ErrorPhase::AfterHandshake, command(11000)));
    assert_eq!(ordinary.ignored, Some(IgnoreReason::NoTopologyImpact));

    // Before the handshake completes any error counts, unless the pool labelled it overloaded.
    let auth = decide(&context(ErrorPhase::Authentication, command(18)));
    assert!(auth.mark_unknown.is_some() && auth.clear_pool.is_some());
    let mut overloaded = context(ErrorPhase::Hello, ApplicationErrorKind::NetworkTimeout);
    overloaded.system_overloaded = true;
    assert_eq!(decide(&overloaded).ignored, Some(IgnoreReason::Overloaded));

    let gone = ErrorContext::new(
        addr("z"),
        0,
        0,
        ErrorPhase::AfterHandshake,
        ApplicationErrorKind::Network,
    );
    assert_eq!(decide(&gone).ignored, Some(IgnoreReason::NotInTopology));
}

#[test]
fn state_change_errors_are_stale_unless_their_topology_version_is_newer() {
    let process_id = ObjectId::new();
    let mut reply = primary(&["a"]);
    reply.insert(
        "topologyVersion",
        doc! {"processId": process_id, "counter": 2_i64},
    );
    let topology = topology(&["a"], |c| c.replica_set = Some("rs".into()))
        .apply(hello("a", reply))
        .description;
    let error = |counter| {
        ErrorContext::new(
            addr("a"),
            0,
            0,
            ErrorPhase::AfterHandshake,
            ApplicationErrorKind::Command(ServerErrorReply {
                code: Some(10107),
                message: String::new(),
                topology_version: Some(TopologyVersion {
                    process_id,
                    counter,
                }),
            }),
        )
    };
    let equal = on_application_error(&topology, &error(2));
    assert_eq!(equal.ignored, Some(IgnoreReason::StaleTopologyVersion));
    let newer = on_application_error(&topology, &error(3));
    let unknown = newer
        .mark_unknown
        .expect("a newer error marks the server Unknown");
    assert_eq!(unknown.topology_version.map(|v| v.counter), Some(3));
    let applied = topology.apply(unknown);
    assert_eq!(
        applied.description.topology_type,
        TopologyType::ReplicaSetNoPrimary
    );
}

#[test]
fn load_balanced_errors_never_mark_unknown_and_clear_one_service() {
    let mut config = TopologyConfig::new([addr("a")]);
    config.load_balanced = true;
    let topology = TopologyDescription::new(&config).unwrap();
    let service = ObjectId::new();
    let context = |phase, kind| {
        let mut c = ErrorContext::new(addr("a"), 0, 0, phase, kind);
        c.service_id = Some(service);
        c
    };
    let hello_error = on_application_error(&topology, &context(ErrorPhase::Hello, command(18)));
    assert_eq!(
        hello_error.ignored,
        Some(IgnoreReason::LoadBalancedHandshake)
    );
    let auth = on_application_error(
        &topology,
        &context(ErrorPhase::Authentication, ApplicationErrorKind::Network),
    );
    assert!(auth.mark_unknown.is_none());
    assert_eq!(auth.clear_pool.and_then(|c| c.service_id), Some(service));
    let shutdown =
        on_application_error(&topology, &context(ErrorPhase::AfterHandshake, command(91)));
    assert!(shutdown.mark_unknown.is_none() && !shutdown.request_check);
    assert_eq!(
        shutdown.clear_pool.and_then(|c| c.service_id),
        Some(service)
    );
}

#[test]
fn heartbeat_failures_mark_unknown_clear_and_retry_known_servers_once() {
    let known = hello("a", doc! {"ok": 1, "isWritablePrimary": true});
    let network = on_heartbeat_failure(&known, &HeartbeatFailure::Network("reset".into()), 4);
    assert_eq!(network.description.server_type, ServerType::Unknown);
    assert_eq!(network.next_check, NextCheck::Immediately);
    assert_eq!(network.clear_pool.generation, 4);
    assert!(!network.clear_pool.interrupt_in_use);

    let unknown = ServerDescription::unknown(addr("a"));
    let again = on_heartbeat_failure(&unknown, &HeartbeatFailure::Network("reset".into()), 0);
    assert_eq!(again.next_check, NextCheck::AfterInterval);

    let timeout = on_heartbeat_failure(&known, &HeartbeatFailure::NetworkTimeout("slow".into()), 0);
    assert!(timeout.clear_pool.interrupt_in_use);

    let version = TopologyVersion {
        process_id: ObjectId::new(),
        counter: 9,
    };
    let command = HeartbeatFailure::Command(ServerErrorReply {
        code: Some(91),
        message: "shutting down".into(),
        topology_version: Some(version),
    });
    let failed = on_heartbeat_failure(&known, &command, 0);
    assert_eq!(failed.next_check, NextCheck::AfterInterval);
    assert_eq!(failed.description.topology_version, Some(version));
    assert!(
        failed
            .description
            .error
            .as_deref()
            .is_some_and(|e| e.contains("shutting down"))
    );
}
