use std::time::{Duration, Instant};

use bson::oid::ObjectId;
use bson::{Bson, Document, doc};

use super::*;
use crate::address::ServerAddress;
use crate::description::server::{
    DEFAULT_MAX_BSON_OBJECT_SIZE, DEFAULT_MAX_MESSAGE_SIZE_BYTES, DEFAULT_MAX_WRITE_BATCH_SIZE,
};

fn a() -> ServerAddress {
    ServerAddress::tcp("a", 27017)
}

fn parse(reply: Document) -> ServerDescription {
    let rtt = Duration::from_millis(7);
    ServerDescription::from_hello(a(), &reply, rtt, Duration::from_millis(3), Instant::now())
}

#[test]
fn server_types_follow_the_hello_rules() {
    let cases = [
        (
            doc! {"ok": 1, "isWritablePrimary": true},
            ServerType::Standalone,
        ),
        (doc! {"ok": 1.0, "msg": "isdbgrid"}, ServerType::Mongos),
        (
            doc! {"ok": 1, "isWritablePrimary": true, "setName": "rs"},
            ServerType::RsPrimary,
        ),
        (
            doc! {"ok": 1, "ismaster": true, "setName": "rs"},
            ServerType::RsPrimary,
        ),
        (
            doc! {"ok": 1, "secondary": true, "setName": "rs"},
            ServerType::RsSecondary,
        ),
        (
            doc! {"ok": 1, "arbiterOnly": true, "setName": "rs"},
            ServerType::RsArbiter,
        ),
        (
            doc! {"ok": 1, "isWritablePrimary": true, "hidden": true, "setName": "rs"},
            ServerType::RsOther,
        ),
        (doc! {"ok": 1, "setName": "rs"}, ServerType::RsOther),
        (doc! {"ok": 1, "isreplicaset": true}, ServerType::RsGhost),
        (doc! {"ok": 0, "errmsg": "boom"}, ServerType::Unknown),
        (doc! {"isWritablePrimary": true}, ServerType::Unknown),
    ];
    for (reply, expected) in cases {
        assert_eq!(parse(reply.clone()).server_type, expected, "{reply}");
    }
    // isWritablePrimary wins over a legacy ismaster when both are present.
    let both = doc! {"ok": 1, "isWritablePrimary": false, "ismaster": true, "setName": "rs"};
    assert_eq!(parse(both).server_type, ServerType::RsOther);
}

#[test]
fn hello_fields_are_parsed_and_host_names_lower_cased() {
    let election_id = ObjectId::new();
    let process_id = ObjectId::new();
    let reply = doc! {
        "ok": 1, "isWritablePrimary": true, "setName": "rs", "setVersion": 3_i64,
        "electionId": election_id, "me": "A:27017", "primary": "A",
        "hosts": ["A:27017", "b:1"], "passives": ["C"], "arbiters": ["D:2"],
        "tags": {"dc": "ny"}, "minWireVersion": 0, "maxWireVersion": 21,
        "logicalSessionTimeoutMinutes": 30, "helloOk": true, "compression": ["zstd"],
        "maxBsonObjectSize": 1_000_000, "maxMessageSizeBytes": 2_000_000, "maxWriteBatchSize": 5,
        "connectionId": 42,
        "lastWrite": {"lastWriteDate": bson::DateTime::from_millis(5), "opTime": {"ts": 1}},
        "topologyVersion": {"processId": process_id, "counter": 4_i64},
    };
    let d = parse(reply);
    assert_eq!(d.me, Some(a()));
    assert_eq!(d.primary, Some(a()));
    let hosts: Vec<String> = d.hosts.iter().map(ToString::to_string).collect();
    assert_eq!(hosts, ["a:27017", "b:1"]);
    assert_eq!(d.all_members().count(), 4);
    assert_eq!(d.tags.get("dc").map(String::as_str), Some("ny"));
    assert_eq!((d.set_version, d.election_id), (Some(3), Some(election_id)));
    assert_eq!((d.min_wire_version, d.max_wire_version), (0, 21));
    assert_eq!(d.logical_session_timeout_minutes, Some(30));
    assert!(d.hello_ok);
    assert_eq!(d.compressors, ["zstd"]);
    assert_eq!(
        (
            d.max_bson_object_size,
            d.max_message_size_bytes,
            d.max_write_batch_size
        ),
        (1_000_000, 2_000_000, 5)
    );
    assert_eq!(d.connection_id, Some(42));
    assert_eq!(d.last_write_date, Some(bson::DateTime::from_millis(5)));
    assert!(d.op_time.is_some());
    assert_eq!(
        d.topology_version,
        Some(TopologyVersion {
            process_id,
            counter: 4
        })
    );
    assert_eq!(d.round_trip_time, Some(Duration::from_millis(7)));
    assert_eq!(d.min_round_trip_time, Some(Duration::from_millis(3)));
    assert!(d.last_update_time.is_some());
}

#[test]
fn failed_or_malformed_replies_are_unknown_without_rtt() {
    let failed = parse(doc! {"ok": 0, "errmsg": "not authorized"});
    assert_eq!(failed.server_type, ServerType::Unknown);
    assert!(
        failed
            .error
            .as_deref()
            .is_some_and(|e| e.contains("not authorized"))
    );
    assert_eq!(failed.round_trip_time, None);

    for reply in [
        doc! {"ok": 1, "hosts": "a"},
        doc! {"ok": 1, "hosts": [1]},
        doc! {"ok": 1, "me": "a:notaport"},
        doc! {"ok": 1, "setName": 5},
        doc! {"ok": 1, "electionId": "x"},
        doc! {"ok": 1, "topologyVersion": {"counter": 1}},
        doc! {"ok": 1, "tags": {"dc": 1}},
    ] {
        let d = parse(reply.clone());
        assert_eq!(d.server_type, ServerType::Unknown, "{reply}");
        assert!(
            d.error.as_deref().is_some_and(|e| e.contains("malformed")),
            "{reply}"
        );
    }
    let defaults = parse(doc! {"ok": 1});
    assert_eq!(
        defaults.max_bson_object_size,
        server::DEFAULT_MAX_BSON_OBJECT_SIZE
    );
    assert_eq!(
        (defaults.min_wire_version, defaults.max_wire_version),
        (0, 0)
    );
}

#[test]
fn topology_versions_compare_within_one_process_only() {
    let p = ObjectId::new();
    let q = ObjectId::new();
    let v = |process_id, counter| {
        Some(TopologyVersion {
            process_id,
            counter,
        })
    };
    assert!(TopologyVersion::is_older(
        v(p, 1).as_ref(),
        v(p, 2).as_ref()
    ));
    assert!(!TopologyVersion::is_older(
        v(p, 2).as_ref(),
        v(p, 2).as_ref()
    ));
    assert!(TopologyVersion::is_not_newer(
        v(p, 2).as_ref(),
        v(p, 2).as_ref()
    ));
    assert!(!TopologyVersion::is_not_newer(
        v(p, 3).as_ref(),
        v(p, 2).as_ref()
    ));
    // Another process, or a missing side, always counts as newer information.
    assert!(!TopologyVersion::is_not_newer(
        v(q, 0).as_ref(),
        v(p, 2).as_ref()
    ));
    assert!(!TopologyVersion::is_older(None, v(p, 2).as_ref()));
    assert!(!TopologyVersion::is_not_newer(v(p, 0).as_ref(), None));
}

#[test]
fn event_equality_ignores_rtt_and_sees_tags() {
    let first = parse(doc! {"ok": 1, "secondary": true, "setName": "rs"});
    let mut second = first.clone();
    second.round_trip_time = Some(Duration::from_secs(3));
    second.last_update_time = None;
    assert!(first.is_same_for_events(&second));
    second.tags.insert("dc".into(), "sf".into());
    assert!(!first.is_same_for_events(&second));
}

#[test]
fn compatibility_errors_name_the_server_and_versions() {
    let old = parse(doc! {"ok": 1, "maxWireVersion": 7});
    let error = old.check_compatibility().unwrap_err();
    assert!(error.contains("reports wire version 7"), "{error}");
    assert!(
        error.contains(&format!("at least {MIN_WIRE_VERSION} (MongoDB 4.2)")),
        "{error}"
    );
    let new = parse(doc! {"ok": 1, "minWireVersion": 99, "maxWireVersion": 100});
    assert!(
        new.check_compatibility()
            .unwrap_err()
            .contains("requires wire version 99")
    );
    let fine = parse(doc! {"ok": 1, "maxWireVersion": MAX_WIRE_VERSION});
    assert!(fine.check_compatibility().is_ok());
    assert!(
        ServerDescription::unknown(a())
            .check_compatibility()
            .is_ok()
    );
    assert!(
        ServerDescription::load_balancer(a())
            .check_compatibility()
            .is_ok()
    );
}

#[test]
fn initial_topology_type_and_forbidden_combinations() {
    let two = [a(), ServerAddress::tcp("b", 27017)];
    let build = |seeds: &[ServerAddress], edit: &dyn Fn(&mut TopologyConfig)| {
        let mut config = TopologyConfig::new(seeds.iter().cloned());
        edit(&mut config);
        TopologyDescription::new(&config)
    };
    let kind = |r: Result<TopologyDescription, TopologyConfigError>| r.map(|t| t.topology_type);
    assert_eq!(kind(build(&two, &|_| {})), Ok(TopologyType::Unknown));
    assert_eq!(
        kind(build(&two, &|c| c.replica_set = Some("rs".into()))),
        Ok(TopologyType::ReplicaSetNoPrimary)
    );
    assert_eq!(
        kind(build(&two[..1], &|c| {
            c.direct_connection = Some(true);
            c.replica_set = Some("rs".into());
        })),
        Ok(TopologyType::Single)
    );
    let balanced = build(&two[..1], &|c| c.load_balanced = true).unwrap();
    assert_eq!(balanced.topology_type, TopologyType::LoadBalanced);
    assert_eq!(balanced.servers[&a()].server_type, ServerType::LoadBalancer);
    assert!(balanced.compatible());

    let error = |r: Result<TopologyDescription, TopologyConfigError>| r.err();
    assert_eq!(
        error(build(&[], &|_| {})),
        Some(TopologyConfigError::NoSeeds)
    );
    assert_eq!(
        error(build(&two, &|c| c.direct_connection = Some(true))),
        Some(TopologyConfigError::DirectConnectionWithMultipleSeeds)
    );
    assert_eq!(
        error(build(&two, &|c| c.load_balanced = true)),
        Some(TopologyConfigError::LoadBalancedWithMultipleSeeds)
    );
    assert_eq!(
        error(build(&two[..1], &|c| {
            c.load_balanced = true;
            c.direct_connection = Some(true);
        })),
        Some(TopologyConfigError::LoadBalancedWithDirectConnection)
    );
    assert_eq!(
        error(build(&two[..1], &|c| {
            c.load_balanced = true;
            c.replica_set = Some("rs".into());
        })),
        Some(TopologyConfigError::LoadBalancedWithReplicaSet)
    );
    assert!(matches!(
        error(build(&two, &|c| c.heartbeat_frequency =
            Duration::from_millis(499))),
        Some(TopologyConfigError::HeartbeatTooFrequent(_))
    ));
    // Duplicate seeds collapse into one server.
    let same = build(&[a(), ServerAddress::tcp("A", 27017)], &|_| {}).unwrap();
    assert_eq!(same.servers.len(), 1);
}

#[test]
fn session_timeout_is_the_minimum_over_data_bearing_servers() {
    let b = ServerAddress::tcp("b", 27017);
    let mut topology = TopologyDescription::new(&TopologyConfig::new([a(), b.clone()])).unwrap();
    let member = |address: ServerAddress, minutes: Option<i32>| {
        let mut reply = doc! {"ok": 1, "secondary": true, "setName": "rs"};
        if let Some(m) = minutes {
            reply.insert("logicalSessionTimeoutMinutes", m);
        }
        ServerDescription::from_hello(
            address,
            &reply,
            Duration::ZERO,
            Duration::ZERO,
            Instant::now(),
        )
    };
    topology.insert_server(member(a(), Some(30)));
    topology.insert_server(member(b.clone(), Some(10)));
    topology.refresh_derived_fields();
    assert_eq!(topology.logical_session_timeout_minutes, Some(10));
    topology.insert_server(member(b.clone(), None));
    topology.refresh_derived_fields();
    assert_eq!(topology.logical_session_timeout_minutes, None);
    // An arbiter holds no data, so its missing timeout does not count.
    let arbiter = doc! {"ok": 1, "arbiterOnly": true, "setName": "rs"};
    topology.insert_server(ServerDescription::from_hello(
        b,
        &arbiter,
        Duration::ZERO,
        Duration::ZERO,
        Instant::now(),
    ));
    topology.refresh_derived_fields();
    assert_eq!(topology.logical_session_timeout_minutes, Some(30));
}

#[test]
fn advertised_size_limits_are_clamped_to_sane_ranges() {
    let limits = |reply: Document| {
        let d = parse(reply);
        assert_eq!(d.server_type, ServerType::Standalone, "{:?}", d.error);
        (
            d.max_bson_object_size,
            d.max_message_size_bytes,
            d.max_write_batch_size,
        )
    };
    let defaults = (
        DEFAULT_MAX_BSON_OBJECT_SIZE,
        DEFAULT_MAX_MESSAGE_SIZE_BYTES,
        DEFAULT_MAX_WRITE_BATCH_SIZE,
    );
    let hello = |bson: Bson, message: Bson, batch: Bson| {
        doc! {
            "ok": 1, "isWritablePrimary": true,
            "maxBsonObjectSize": bson, "maxMessageSizeBytes": message, "maxWriteBatchSize": batch,
        }
    };
    // Absent, zero and negative values mean MongoDB's defaults.
    assert_eq!(limits(doc! {"ok": 1, "isWritablePrimary": true}), defaults);
    assert_eq!(limits(hello(0.into(), 0.into(), 0.into())), defaults);
    assert_eq!(
        limits(hello((-1).into(), i64::MIN.into(), (-5).into())),
        defaults
    );
    // Huge values are capped at the defaults (the wire crate's 48 MB frame limit for messages).
    let huge = Bson::Int32(i32::MAX);
    assert_eq!(limits(hello(huge.clone(), huge.clone(), huge)), defaults);
    assert_eq!(
        limits(hello(i64::MAX.into(), i64::MAX.into(), i64::MAX.into())),
        defaults
    );
    // Tiny positive values are kept, except that a message always holds the largest document
    // and the command around it.
    let (bson, message, batch) = limits(hello(1.into(), 1.into(), 1.into()));
    assert_eq!((bson, message, batch), (1, 1 + 16 * 1024, 1));
    // Lower, plausible values are kept as the server said.
    let plausible = limits(hello(1_000_000.into(), 2_000_000.into(), 1000.into()));
    assert_eq!(plausible, (1_000_000, 2_000_000, 1000));
    // A message limit too small for the largest document grows to hold it.
    let (bson, message, _) = limits(hello(
        DEFAULT_MAX_BSON_OBJECT_SIZE.into(),
        1_000_000.into(),
        1000.into(),
    ));
    assert_eq!(message, bson + 16 * 1024);
}
