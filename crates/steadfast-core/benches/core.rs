//! Cost of the pure decisions on the hot path: one server selection (replica set with tags,
//! sharded cluster), and how it grows with the number of servers.
//!
//! Run with `cargo bench -p steadfast-core --bench core -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion};
use rand::SeedableRng;
use rand::rngs::StdRng;

use steadfast_core::ServerAddress;
use steadfast_core::description::{
    MAX_WIRE_VERSION, ServerDescription, ServerType, TopologyConfig, TopologyDescription,
    TopologyType,
};
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
        .map(|s| (s.address.clone(), s))
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
    let mut rp = ReadPreference::with_mode(ReadPreferenceMode::SecondaryPreferred);
    rp.tag_sets = vec![
        TagSet::from([("dc".to_string(), "sf".to_string())]),
        TagSet::new(),
    ];
    SelectionCriteria::ReadPreference(rp)
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

fn main() {
    // What `criterion_main!` expands to, written out so that no undocumented public function
    // is generated.
    let mut criterion = Criterion::default().configure_from_args();
    bench_selection(&mut criterion);
    bench_scaling(&mut criterion);
    criterion.final_summary();
}
