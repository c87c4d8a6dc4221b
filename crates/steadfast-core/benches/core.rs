//! Cost of the pure decisions on the hot path: one server selection (replica set with tags,
//! sharded cluster), applying one hello reply to a replica-set description, and how both grow
//! with the number of servers.
//!
//! Run with `cargo bench -p steadfast-core --bench core -- --warm-up-time 1 --measurement-time 3`.
#![allow(
    clippy::disallowed_methods,
    reason = "benchmarks drive the clock, tasks and randomness themselves"
)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use bson::oid::ObjectId;
use bson::{Bson, Document, doc};
use criterion::{BatchSize, BenchmarkId, Criterion};
use rand::SeedableRng;
use rand::rngs::StdRng;

use steadfast_core::ServerAddress;
use steadfast_core::description::{
    MAX_WIRE_VERSION, ServerDescription, ServerType, TopologyConfig, TopologyDescription,
    TopologyType,
};
use steadfast_core::sdam::ApplyOutcome;
use steadfast_core::selection::{
    ReadPreference, ReadPreferenceMode, SelectionCriteria, TagSet, select,
};

const DATA_CENTERS: [&str; 3] = ["ny", "sf", "ldn"];

fn address(i: usize) -> ServerAddress {
    ServerAddress::tcp(format!("host{i}.example.net"), 27017)
}

/// A known server with a spread of round-trip times (5 to 40 ms) and a data-center tag.
fn member(i: usize, server_type: ServerType) -> ServerDescription {
    let mut s = ServerDescription::unknown(address(i));
    s.server_type = server_type;
    s.round_trip_time = Some(Duration::from_millis(5 + (i as u64 * 7) % 36));
    s.max_wire_version = MAX_WIRE_VERSION;
    s.tags = TagSet::from([
        (
            "dc".to_string(),
            DATA_CENTERS[i % DATA_CENTERS.len()].to_string(),
        ),
        ("rack".to_string(), format!("r{}", i % 5)),
    ]);
    s
}

fn topology(kind: TopologyType, servers: Vec<ServerDescription>) -> TopologyDescription {
    let config = TopologyConfig::new(servers.iter().map(|s| s.address.clone()));
    let mut t = TopologyDescription::new(&config).expect("a valid seed list");
    t.topology_type = kind;
    t.servers = servers
        .into_iter()
        .map(|s| (s.address.clone(), std::sync::Arc::new(s)))
        .collect();
    t.refresh_derived_fields();
    t
}

/// A replica set of `n` members: one primary, the rest secondaries.
fn replica_set(n: usize) -> TopologyDescription {
    let servers = (0..n)
        .map(|i| {
            let kind = if i == 0 {
                ServerType::RsPrimary
            } else {
                ServerType::RsSecondary
            };
            member(i, kind)
        })
        .collect();
    topology(TopologyType::ReplicaSetWithPrimary, servers)
}

fn sharded(n: usize) -> TopologyDescription {
    let servers = (0..n).map(|i| member(i, ServerType::Mongos)).collect();
    topology(TopologyType::Sharded, servers)
}

/// secondaryPreferred, preferring the "sf" data center, else any member.
fn tagged_secondary_preferred() -> SelectionCriteria {
    let tag_sets = vec![
        TagSet::from([("dc".to_string(), "sf".to_string())]),
        TagSet::new(),
    ];
    let rp = ReadPreference::from_parts(ReadPreferenceMode::SecondaryPreferred, tag_sets, None);
    SelectionCriteria::ReadPreference(rp.expect("secondaryPreferred takes tags"))
}

/// A fixed, uneven load: what the driver's per-server counters would report.
fn operation_count(a: &ServerAddress) -> u32 {
    match a {
        ServerAddress::Tcp { host, .. } => host.len() as u32 % 4,
        ServerAddress::Unix { .. } => 0,
    }
}

fn bench_selection(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(42);
    let rs = replica_set(50);
    let criteria = tagged_secondary_preferred();
    c.bench_function("select/rs50_secondary_preferred_tags", |b| {
        b.iter(|| {
            select(
                black_box(&rs),
                black_box(&criteria),
                &[],
                operation_count,
                &mut rng,
            )
        })
    });
    let mongoses = sharded(100);
    let write = SelectionCriteria::Write;
    c.bench_function("select/sharded100_write", |b| {
        b.iter(|| select(black_box(&mongoses), &write, &[], operation_count, &mut rng))
    });
}

fn bench_scaling(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(7);
    let criteria = tagged_secondary_preferred();
    let mut group = c.benchmark_group("select_scaling");
    for n in [10, 50, 100] {
        let rs = replica_set(n);
        group.bench_with_input(
            BenchmarkId::new("rs_secondary_preferred_tags", n),
            &rs,
            |b, t| b.iter(|| select(t, &criteria, &[], operation_count, &mut rng)),
        );
        let mongoses = sharded(n);
        group.bench_with_input(BenchmarkId::new("sharded_write", n), &mongoses, |b, t| {
            b.iter(|| select(t, &SelectionCriteria::Write, &[], operation_count, &mut rng))
        });
    }
    group.finish();
}

fn host(i: usize) -> String {
    format!("host{i}.example.net:27017")
}

/// The hello reply of member `i` of an `n`-member set whose primary is member 0.
fn hello_reply(i: usize, n: usize, last_write_ms: i64) -> Document {
    let primary = i == 0;
    let mut reply = doc! {
        "ok": 1,
        "helloOk": true,
        "isWritablePrimary": primary,
        "secondary": !primary,
        "setName": "rs0",
        "setVersion": 1,
        "hosts": (0..n).map(|h| Bson::String(host(h))).collect::<Vec<_>>(),
        "me": host(i),
        "primary": host(0),
        "minWireVersion": 0,
        "maxWireVersion": 21,
        "logicalSessionTimeoutMinutes": 30,
        "lastWrite": { "lastWriteDate": bson::DateTime::from_millis(last_write_ms) },
        "tags": { "dc": DATA_CENTERS[i % DATA_CENTERS.len()] },
    };
    if primary {
        reply.insert(
            "electionId",
            ObjectId::from_bytes([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]),
        );
    }
    reply
}

fn hello_description(i: usize, n: usize, last_write_ms: i64, now: Instant) -> ServerDescription {
    let rtt = Duration::from_millis(5 + (i as u64 * 7) % 36);
    ServerDescription::from_hello(address(i), &hello_reply(i, n, last_write_ms), rtt, rtt, now)
}

/// An `n`-member replica set discovered the way the driver discovers it: seeded with the
/// primary, whose reply adds the other members, then one reply from every secondary.
fn discovered_replica_set(n: usize, now: Instant) -> TopologyDescription {
    let mut config = TopologyConfig::new([address(0)]);
    config.replica_set = Some("rs0".to_string());
    let mut topology = TopologyDescription::new(&config).expect("a valid seed list");
    for i in 0..n {
        topology = topology
            .apply(hello_description(i, n, 1_700_000_000_000, now))
            .description;
    }
    assert_eq!(topology.topology_type, TopologyType::ReplicaSetWithPrimary);
    assert_eq!(topology.servers.len(), n);
    topology
}

fn bench_apply(c: &mut Criterion) {
    let now = Instant::now();
    let mut group = c.benchmark_group("sdam_apply_secondary_hello");
    for n in [10, 50, 100] {
        let topology = discovered_replica_set(n, now);
        // A later heartbeat of a secondary: same membership, newer lastWriteDate.
        let next = hello_description(n / 2, n, 1_700_000_010_000, now + Duration::from_secs(10));
        assert_eq!(topology.apply(next.clone()).outcome, ApplyOutcome::Applied);
        group.bench_with_input(BenchmarkId::from_parameter(n), &topology, |b, t| {
            b.iter_batched(|| next.clone(), |d| t.apply(d), BatchSize::SmallInput)
        });
    }
    group.finish();
    let topology = discovered_replica_set(50, now);
    let reply = hello_reply(25, 50, 1_700_000_010_000);
    let rtt = Duration::from_millis(9);
    c.bench_function("sdam/parse_and_apply_hello_rs50", |b| {
        b.iter(|| {
            let d = ServerDescription::from_hello(address(25), black_box(&reply), rtt, rtt, now);
            topology.apply(d)
        })
    });
}

fn main() {
    // What `criterion_main!` expands to, written out so that no undocumented public function
    // is generated.
    let mut criterion = Criterion::default().configure_from_args();
    bench_selection(&mut criterion);
    bench_scaling(&mut criterion);
    bench_apply(&mut criterion);
    criterion.final_summary();
}
