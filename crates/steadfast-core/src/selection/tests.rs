//! Unit tests of whole selections: deprioritization, operation counts, staleness, validation.

use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand::rngs::StdRng;

use super::*;
use crate::address::ServerAddress;
use crate::description::{
    ServerDescription, ServerType, TopologyConfig, TopologyDescription, TopologyType,
};

fn addr(host: &str) -> ServerAddress {
    ServerAddress::tcp(host, 27017)
}

fn server(host: &str, server_type: ServerType, rtt_ms: u64) -> ServerDescription {
    let mut s = ServerDescription::unknown(addr(host));
    s.server_type = server_type;
    s.round_trip_time = Some(Duration::from_millis(rtt_ms));
    s.max_wire_version = crate::description::MAX_WIRE_VERSION;
    s
}

fn topology(kind: TopologyType, servers: Vec<ServerDescription>) -> TopologyDescription {
    let config = TopologyConfig::new(servers.iter().map(|s| s.address.clone()));
    let mut t = TopologyDescription::new(&config).expect("valid config");
    t.topology_type = kind;
    t.servers = servers
        .into_iter()
        .map(|s| (s.address.clone(), std::sync::Arc::new(s)))
        .collect();
    t.refresh_derived_fields();
    t
}

fn read(mode: ReadPreferenceMode) -> SelectionCriteria {
    SelectionCriteria::ReadPreference(ReadPreference::with_mode(mode))
}

fn pick(
    t: &TopologyDescription,
    criteria: &SelectionCriteria,
    deprioritized: &[ServerAddress],
    rng: &mut StdRng,
) -> Selection {
    select(t, criteria, deprioritized, |_| 0, rng)
}

fn replica_set() -> TopologyDescription {
    topology(
        TopologyType::ReplicaSetWithPrimary,
        vec![
            server("p", ServerType::RsPrimary, 5),
            server("s1", ServerType::RsSecondary, 5),
            server("s2", ServerType::RsSecondary, 5),
        ],
    )
}

#[test]
fn deprioritized_mongos_is_avoided_while_another_exists() {
    let t = topology(
        TopologyType::Sharded,
        vec![
            server("m1", ServerType::Mongos, 5),
            server("m2", ServerType::Mongos, 5),
        ],
    );
    let mut rng = StdRng::seed_from_u64(1);
    for _ in 0..100 {
        assert_eq!(
            pick(&t, &SelectionCriteria::Write, &[addr("m1")], &mut rng),
            Selection::Selected(addr("m2"))
        );
    }
    // With every mongos deprioritized, selection falls back on all of them.
    let found = candidates(&t, &SelectionCriteria::Write, &[addr("m1"), addr("m2")]).unwrap();
    assert_eq!(found.suitable.len(), 2);
    assert!(found.used_deprioritized);
}

#[test]
fn secondary_preferred_with_all_secondaries_deprioritized_reads_the_primary() {
    let t = replica_set();
    let mut rng = StdRng::seed_from_u64(2);
    let verdict = pick(
        &t,
        &read(ReadPreferenceMode::SecondaryPreferred),
        &[addr("s1"), addr("s2")],
        &mut rng,
    );
    assert_eq!(verdict, Selection::Selected(addr("p")));
}

#[test]
fn primary_preferred_with_deprioritized_primary_reads_a_secondary() {
    let t = replica_set();
    let mut rng = StdRng::seed_from_u64(3);
    let verdict = pick(
        &t,
        &read(ReadPreferenceMode::PrimaryPreferred),
        &[addr("p")],
        &mut rng,
    );
    assert!(
        matches!(&verdict, Selection::Selected(a) if *a != addr("p")),
        "{verdict:?}"
    );
    // A deprioritized primary is still used for writes: nothing else can take them.
    let write = pick(&t, &SelectionCriteria::Write, &[addr("p")], &mut rng);
    assert_eq!(write, Selection::Selected(addr("p")));
}

#[test]
fn less_busy_server_wins_within_the_window() {
    let t = topology(
        TopologyType::Sharded,
        vec![
            server("busy", ServerType::Mongos, 5),
            server("idle", ServerType::Mongos, 6),
        ],
    );
    let mut rng = StdRng::seed_from_u64(4);
    let counts = |a: &ServerAddress| if *a == addr("busy") { 9 } else { 1 };
    for _ in 0..100 {
        let verdict = select(&t, &SelectionCriteria::Write, &[], counts, &mut rng);
        assert_eq!(verdict, Selection::Selected(addr("idle")));
    }
}

#[test]
fn server_outside_the_latency_window_is_never_chosen() {
    let t = topology(
        TopologyType::Sharded,
        vec![
            server("near", ServerType::Mongos, 5),
            server("far", ServerType::Mongos, 21),
        ],
    );
    let mut rng = StdRng::seed_from_u64(5);
    // "far" has no operations in flight, yet it is 16 ms slower than "near".
    let counts = |a: &ServerAddress| if *a == addr("near") { 100 } else { 0 };
    for _ in 0..100 {
        let verdict = select(&t, &SelectionCriteria::Write, &[], counts, &mut rng);
        assert_eq!(verdict, Selection::Selected(addr("near")));
    }
}

#[test]
fn writes_without_a_primary_find_nothing_and_say_why() {
    let mut t = replica_set();
    t.servers.remove(&addr("p"));
    t.topology_type = TopologyType::ReplicaSetNoPrimary;
    let mut rng = StdRng::seed_from_u64(6);
    match pick(&t, &SelectionCriteria::Write, &[], &mut rng) {
        Selection::NoneSuitable { reason } => {
            assert!(reason.contains("write"), "{reason}");
            assert!(reason.contains("ReplicaSetNoPrimary"), "{reason}");
        }
        other => panic!("expected NoneSuitable, got {other:?}"),
    }
}

#[test]
fn unreachable_servers_report_their_errors() {
    let mut down = ServerDescription::from_error(addr("a"), "connection refused", None);
    down.round_trip_time = None;
    let t = topology(TopologyType::Unknown, vec![down]);
    let mut rng = StdRng::seed_from_u64(7);
    match pick(&t, &SelectionCriteria::primary_read(), &[], &mut rng) {
        Selection::NoneSuitable { reason } => {
            assert!(reason.contains("a:27017: connection refused"), "{reason}");
        }
        other => panic!("expected NoneSuitable, got {other:?}"),
    }
}

#[test]
fn incompatible_topology_is_an_error_not_a_wait() {
    let mut old = server("a", ServerType::Standalone, 5);
    old.max_wire_version = 2;
    let t = topology(TopologyType::Single, vec![old]);
    let mut rng = StdRng::seed_from_u64(8);
    assert!(matches!(
        pick(&t, &SelectionCriteria::Write, &[], &mut rng),
        Selection::Invalid(SelectionError::IncompatibleTopology(_))
    ));
}

/// A mode with a staleness bound of `seconds` and no tags.
fn staleness_bound(mode: ReadPreferenceMode, seconds: u64) -> ReadPreference {
    ReadPreference::from_parts(mode, Vec::new(), Some(Duration::from_secs(seconds))).unwrap()
}

#[test]
fn a_predicate_chooses_among_available_data_bearing_servers() {
    let t = replica_set();
    let mut rng = StdRng::seed_from_u64(3);
    let not_the_primary: Predicate = std::sync::Arc::new(|server: &ServerInfo<'_>| {
        server.server_type() != ServerType::RsPrimary
    });
    let criteria = SelectionCriteria::Predicate(not_the_primary);
    let found = candidates(&t, &criteria, &[]).unwrap();
    assert!(!found.suitable.is_empty());
    assert!(
        found
            .suitable
            .iter()
            .all(|s| s.server_type == ServerType::RsSecondary)
    );
    assert!(matches!(pick(&t, &criteria, &[], &mut rng), Selection::Selected(a) if a != addr("p")));

    let nobody: Predicate = std::sync::Arc::new(|_: &ServerInfo<'_>| false);
    let criteria = SelectionCriteria::Predicate(nobody);
    assert!(matches!(
        pick(&t, &criteria, &[], &mut rng),
        Selection::NoneSuitable { .. }
    ));
}

#[test]
fn invalid_read_preferences_are_rejected() {
    let t = replica_set();
    let mut rng = StdRng::seed_from_u64(9);
    let tags = vec![TagSet::from([("dc".to_string(), "ny".to_string())])];
    assert_eq!(
        ReadPreference::from_parts(ReadPreferenceMode::Primary, tags, None),
        Err(ReadPreferenceError::PrimaryWithTags)
    );
    // Below heartbeatFrequencyMS + idleWritePeriodMS against a replica set...
    let rp = staleness_bound(ReadPreferenceMode::Nearest, 60);
    let criteria = SelectionCriteria::ReadPreference(rp);
    assert!(matches!(
        pick(&t, &criteria, &[], &mut rng),
        Selection::Invalid(SelectionError::InvalidReadPreference(
            ReadPreferenceError::MaxStalenessTooSmall { .. }
        ))
    ));
    // ...but mongos checks it itself, so a sharded selection goes ahead.
    let sharded = topology(
        TopologyType::Sharded,
        vec![server("m", ServerType::Mongos, 5)],
    );
    assert_eq!(
        pick(&sharded, &criteria, &[], &mut rng),
        Selection::Selected(addr("m"))
    );
}

#[test]
fn stale_and_unmeasurable_secondaries_are_not_eligible() {
    let now = Instant::now();
    let mut t = replica_set();
    let write_at = |ms: i64| Some(bson::DateTime::from_millis(ms));
    for s in t.servers.values_mut() {
        std::sync::Arc::make_mut(s).last_update_time = Some(now);
    }
    let primary = t.server_mut(&addr("p")).unwrap();
    primary.last_write_date = write_at(1_000_000);
    // s1 is 200 s behind the primary: 200 s + 10 s heartbeat > 120 s.
    t.server_mut(&addr("s1")).unwrap().last_write_date = write_at(800_000);
    // s2 never reported a lastWriteDate, so its staleness cannot be estimated.
    let rp = staleness_bound(ReadPreferenceMode::Secondary, 120);
    let criteria = SelectionCriteria::ReadPreference(rp);
    let found = candidates(&t, &criteria, &[]).unwrap();
    assert!(found.suitable.is_empty());

    // 100 s behind: 110 s estimated staleness is within 120 s.
    t.server_mut(&addr("s1")).unwrap().last_write_date = write_at(900_000);
    let found = candidates(&t, &criteria, &[]).unwrap();
    let names: Vec<_> = found.suitable.iter().map(|s| s.address.clone()).collect();
    assert_eq!(names, [addr("s1")]);

    // secondaryPreferred falls back on the primary when no secondary is fresh enough.
    t.server_mut(&addr("s1")).unwrap().last_write_date = write_at(0);
    let rp = staleness_bound(ReadPreferenceMode::SecondaryPreferred, 120);
    let found = candidates(&t, &SelectionCriteria::ReadPreference(rp), &[]).unwrap();
    let names: Vec<_> = found.suitable.iter().map(|s| s.address.clone()).collect();
    assert_eq!(names, [addr("p")]);
}

#[test]
fn staleness_is_filtered_before_tags() {
    // The member matching the first tag set is stale, so the second tag set applies.
    let mut t = replica_set();
    t.topology_type = TopologyType::ReplicaSetNoPrimary;
    t.servers.remove(&addr("p"));
    let tag = |v: &str| TagSet::from([("dc".to_string(), v.to_string())]);
    let s1 = t.server_mut(&addr("s1")).unwrap();
    s1.tags = tag("first");
    s1.last_write_date = Some(bson::DateTime::from_millis(0));
    let s2 = t.server_mut(&addr("s2")).unwrap();
    s2.tags = tag("second");
    s2.last_write_date = Some(bson::DateTime::from_millis(300_000));
    let rp = ReadPreference::from_parts(
        ReadPreferenceMode::Secondary,
        vec![tag("first"), tag("second")],
        Some(Duration::from_secs(120)),
    )
    .unwrap();
    let found = candidates(&t, &SelectionCriteria::ReadPreference(rp), &[]).unwrap();
    let names: Vec<_> = found.suitable.iter().map(|s| s.address.clone()).collect();
    assert_eq!(names, [addr("s2")]);
}

#[test]
fn single_topology_ignores_the_read_preference_but_needs_a_known_server() {
    let t = topology(
        TopologyType::Single,
        vec![server("a", ServerType::RsSecondary, 5)],
    );
    let mut rng = StdRng::seed_from_u64(10);
    assert_eq!(
        pick(&t, &SelectionCriteria::primary_read(), &[], &mut rng),
        Selection::Selected(addr("a"))
    );
    let t = topology(
        TopologyType::Single,
        vec![server("a", ServerType::Unknown, 5)],
    );
    assert!(matches!(
        pick(&t, &SelectionCriteria::Write, &[], &mut rng),
        Selection::NoneSuitable { .. }
    ));
}

#[test]
fn a_write_stage_keeps_the_read_preference_only_when_every_available_server_is_5_0() {
    let secondary = read(ReadPreferenceMode::SecondaryPreferred);
    let mut old = server("s2", ServerType::RsSecondary, 5);
    old.max_wire_version = WRITE_STAGE_ON_SECONDARY_WIRE_VERSION - 1;
    let mixed = topology(
        TopologyType::ReplicaSetWithPrimary,
        vec![server("p", ServerType::RsPrimary, 5), old.clone()],
    );
    assert_eq!(
        write_stage_criteria(&mixed, &secondary),
        SelectionCriteria::primary_read()
    );
    let recent = topology(
        TopologyType::ReplicaSetWithPrimary,
        vec![
            server("p", ServerType::RsPrimary, 5),
            server("s1", ServerType::RsSecondary, 5),
        ],
    );
    assert_eq!(write_stage_criteria(&recent, &secondary), secondary);
    // An unavailable server's wire version is not known, so it does not count.
    old.server_type = ServerType::Unknown;
    let unreached = topology(
        TopologyType::ReplicaSetWithPrimary,
        vec![server("p", ServerType::RsPrimary, 5), old],
    );
    assert_eq!(write_stage_criteria(&unreached, &secondary), secondary);
}

#[test]
fn a_write_stage_behind_a_load_balancer_keeps_the_read_preference() {
    let secondary = read(ReadPreferenceMode::Secondary);
    let mut balancer = server("lb", ServerType::LoadBalancer, 5);
    balancer.max_wire_version = 0;
    let t = topology(TopologyType::LoadBalanced, vec![balancer]);
    assert_eq!(write_stage_criteria(&t, &secondary), secondary);
    assert_eq!(
        write_stage_criteria(&t, &SelectionCriteria::Write),
        SelectionCriteria::Write
    );
}

#[test]
fn server_info_shows_a_predicate_the_servers_description() {
    let mut secondary = server("b", ServerType::RsSecondary, 7);
    secondary.set_name = Some("rs0".to_owned());
    secondary.tags.insert("dc".to_owned(), "east".to_owned());
    let info = ServerInfo::new(&secondary);
    assert_eq!(info.address(), &addr("b"));
    assert_eq!(info.server_type(), ServerType::RsSecondary);
    assert_eq!(info.replica_set_name(), Some("rs0"));
    assert_eq!(
        info.average_round_trip_time(),
        Some(Duration::from_millis(7))
    );
    assert_eq!(
        info.tags()
            .and_then(|tags| tags.get("dc"))
            .map(String::as_str),
        Some("east")
    );
    assert_eq!(info.error(), None);
    let shown = info.to_string();
    assert!(
        shown.contains("Address: b:27017") && shown.contains("RsSecondary"),
        "{shown}"
    );
    let unknown = ServerDescription::unknown(addr("c"));
    assert_eq!(ServerInfo::new(&unknown).max_wire_version(), None);
}
