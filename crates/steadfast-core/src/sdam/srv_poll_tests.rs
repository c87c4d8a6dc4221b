use std::collections::BTreeSet;
use std::time::Duration;

use proptest::prelude::*;
use rand::SeedableRng;
use rand::rngs::SmallRng;

use super::*;
use crate::description::TopologyConfig;

fn host(port: u16) -> ServerAddress {
    ServerAddress::tcp("localhost.test.build.10gen.cc", port)
}

fn record(target: &str, port: u16) -> SrvRecord {
    SrvRecord {
        target: target.to_owned(),
        port,
    }
}

fn topology(ports: &[u16], topology_type: TopologyType) -> TopologyDescription {
    let config = TopologyConfig::new(ports.iter().map(|&port| host(port)));
    let mut description = TopologyDescription::new(&config).expect("valid seeds");
    description.topology_type = topology_type;
    description
}

fn ports(description: &TopologyDescription) -> Vec<u16> {
    description
        .servers
        .keys()
        .filter_map(ServerAddress::port)
        .collect()
}

fn apply(current: &[u16], verified: &[u16], max_hosts: Option<u32>) -> Option<TopologyChange> {
    let verified: Vec<ServerAddress> = verified.iter().map(|&port| host(port)).collect();
    topology(current, TopologyType::Sharded).apply_srv_hosts(
        &verified,
        max_hosts,
        &mut SmallRng::seed_from_u64(3),
    )
}

#[test]
fn a_new_record_is_added_as_unknown_and_the_others_are_left_alone() {
    let before = topology(&[27017, 27018], TopologyType::Sharded);
    let change = before
        .apply_srv_hosts(
            &[host(27017), host(27018), host(27019)],
            None,
            &mut SmallRng::seed_from_u64(1),
        )
        .expect("a change");
    assert_eq!(ports(&change.description), [27017, 27018, 27019]);
    assert_eq!(change.added, [host(27019)]);
    assert!(change.removed.is_empty());
    for port in [27017, 27018] {
        let address = host(port);
        assert!(
            Arc::ptr_eq(
                &before.servers[&address],
                &change.description.servers[&address]
            ),
            "an unchanged host keeps its description"
        );
    }
    assert!(matches!(
        change.events.as_slice(),
        [SdamEvent::ServerOpening { address }, SdamEvent::TopologyDescriptionChanged { .. }]
            if *address == host(27019)
    ));
}

#[test]
fn a_record_no_longer_listed_is_removed() {
    let change = apply(&[27017, 27018], &[27018], None).expect("a change");
    assert_eq!(ports(&change.description), [27018]);
    assert_eq!(change.removed, [host(27017)]);
    assert!(matches!(
        change.events.as_slice(),
        [
            SdamEvent::ServerClosed { .. },
            SdamEvent::TopologyDescriptionChanged { .. }
        ]
    ));
}

#[test]
fn records_replaced_by_others_replace_the_hosts() {
    let change = apply(&[27017, 27018], &[27018, 27019], None).expect("a change");
    assert_eq!(ports(&change.description), [27018, 27019]);
    let change = apply(&[27017, 27018], &[27019], None).expect("a change");
    assert_eq!(ports(&change.description), [27019]);
    let change = apply(&[27017, 27018], &[27019, 27020], None).expect("a change");
    assert_eq!(ports(&change.description), [27019, 27020]);
}

#[test]
fn the_same_records_change_nothing() {
    assert!(apply(&[27017, 27018], &[27018, 27017], None).is_none());
}

#[test]
fn srv_max_hosts_zero_or_not_smaller_than_the_records_adds_every_new_host() {
    for max in [None, Some(0), Some(3), Some(4)] {
        let change = apply(&[27017, 27018], &[27017, 27019, 27020], max).expect("a change");
        assert_eq!(ports(&change.description), [27017, 27019, 27020], "{max:?}");
    }
}

#[test]
fn srv_max_hosts_smaller_than_the_records_fills_up_to_it_at_random() {
    let mut seen = BTreeSet::new();
    for seed in 0..32 {
        let change = topology(&[27017, 27018], TopologyType::Sharded)
            .apply_srv_hosts(
                &[host(27017), host(27019), host(27020)],
                Some(2),
                &mut SmallRng::seed_from_u64(seed),
            )
            .expect("a change");
        let ports = ports(&change.description);
        assert_eq!(ports.len(), 2);
        assert!(ports.contains(&27017), "a host still listed stays");
        seen.insert(ports);
    }
    assert_eq!(
        seen.len(),
        2,
        "both new hosts get picked by some seed: {seen:?}"
    );
}

#[test]
fn no_verified_host_or_a_topology_that_does_not_poll_changes_nothing() {
    assert!(apply(&[27017], &[], None).is_none());
    for topology_type in [
        TopologyType::Single,
        TopologyType::ReplicaSetNoPrimary,
        TopologyType::ReplicaSetWithPrimary,
        TopologyType::LoadBalanced,
    ] {
        assert!(!polls_srv(topology_type));
        let changed = topology(&[27017], topology_type).apply_srv_hosts(
            &[host(27018)],
            None,
            &mut SmallRng::seed_from_u64(1),
        );
        assert!(changed.is_none(), "{topology_type:?}");
    }
    assert!(polls_srv(TopologyType::Unknown) && polls_srv(TopologyType::Sharded));
    let unknown = topology(&[27017], TopologyType::Unknown);
    let change = unknown.apply_srv_hosts(&[host(27018)], None, &mut SmallRng::seed_from_u64(1));
    assert_eq!(
        ports(&change.expect("an Unknown topology polls").description),
        [27018]
    );
}

#[test]
fn records_outside_the_parent_domain_are_ignored_not_fatal() {
    let srv_host = SrvHost::parse("test1.test.build.10gen.cc").unwrap();
    let verified = verify_records(
        &srv_host,
        &[
            record("localhost.test.build.10gen.cc.", 27017),
            record("evil.example.com", 27018),
            record("localhost.test.build.10gen.cc", 27017),
            record("localhost.test.build.10gen.cc", 0),
            record("test.build.10gen.cc.evil.com", 27019),
        ],
    );
    assert_eq!(verified.hosts, [host(27017)]);
    assert_eq!(verified.ignored.len(), 3, "{:?}", verified.ignored);
    assert!(verify_records(&srv_host, &[]).hosts.is_empty());
}

#[test]
fn the_interval_is_the_lowest_ttl_but_never_below_the_minimum() {
    let min = MIN_RESCAN_INTERVAL;
    let retry = Duration::from_secs(10);
    assert_eq!(rescan_interval(None, true, min, retry), min);
    assert_eq!(
        rescan_interval(Some(Duration::from_secs(5)), true, min, retry),
        min
    );
    let long = Duration::from_secs(300);
    assert_eq!(rescan_interval(Some(long), true, min, retry), long);
    assert_eq!(rescan_interval(Some(long), false, min, retry), retry);
}

proptest! {
    /// Whatever the current hosts, records and srvMaxHosts: hosts still listed stay, unlisted
    /// ones go, the result is made of verified hosts only and is never empty, and it holds
    /// every verified host unless srvMaxHosts caps it (then at most that many, or the hosts
    /// that stayed if they are already more).
    #[test]
    fn rescans_keep_remove_and_cap_as_specified(
        current in proptest::collection::btree_set(0u16..12, 1..8),
        verified in proptest::collection::vec(0u16..12, 0..10),
        max in proptest::option::of(0u32..10),
        seed in any::<u64>(),
    ) {
        let current: Vec<u16> = current.into_iter().collect();
        let before = topology(&current, TopologyType::Sharded);
        let listed: Vec<ServerAddress> = verified.iter().map(|&port| host(port)).collect();
        let mut distinct = listed.clone();
        distinct.sort();
        distinct.dedup();
        let change = before.apply_srv_hosts(&listed, max, &mut SmallRng::seed_from_u64(seed));
        let after = change.map_or_else(|| before.clone(), |change| change.description);
        if listed.is_empty() {
            prop_assert_eq!(ports(&after), current.clone());
            return Ok(());
        }
        prop_assert!(!after.servers.is_empty());
        for address in after.servers.keys() {
            prop_assert!(distinct.contains(address), "{} is not listed", address);
        }
        let stayed = current.iter().filter(|&&port| distinct.contains(&host(port))).count();
        for port in &current {
            let address = host(*port);
            prop_assert_eq!(after.servers.contains_key(&address), distinct.contains(&address));
        }
        let cap = max.map(|max| max as usize).filter(|&max| max > 0 && max < distinct.len());
        match cap {
            None => prop_assert_eq!(after.servers.len(), distinct.len()),
            Some(cap) => prop_assert_eq!(after.servers.len(), cap.max(stayed)),
        }
    }
}
