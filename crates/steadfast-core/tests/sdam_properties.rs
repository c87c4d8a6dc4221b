//! Property tests of the SDAM state machine over random sequences of hello replies, failed
//! checks and application errors among a handful of addresses.
//!
//! Invariants checked after every step:
//! - at most one RSPrimary;
//! - the topology type agrees with the types of its servers;
//! - under 6.0+ rules the (maxElectionId, maxSetVersion) pair never goes backwards;
//! - an application error with a stale generation or a topologyVersion that is not newer
//!   never clears a pool nor marks a server Unknown;
//! - every server in the description was a seed or was reported by a member;
//! - `added` / `removed` describe exactly how the server set changed, and an ignored input
//!   leaves the description as it was.
#![allow(
    clippy::disallowed_methods,
    reason = "tests drive the clock, tasks and randomness themselves"
)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use bson::oid::ObjectId;
use bson::{Document, doc};
use proptest::prelude::*;

use steadfast_core::ServerAddress;
use steadfast_core::description::{
    ServerDescription, ServerType, TopologyConfig, TopologyDescription, TopologyType,
    TopologyVersion,
};
use steadfast_core::sdam::{
    ApplicationErrorKind, ApplyOutcome, ErrorContext, ErrorPhase, HeartbeatFailure,
    ServerErrorReply, TopologyChange, on_application_error, on_heartbeat_failure,
};

const HOSTS: [&str; 5] = ["a", "b", "c", "d", "e"];
const SET_NAMES: [&str; 2] = ["rs", "other"];
/// Error codes: state-change (recovering, shutdown, not writable primary) and ordinary ones.
const CODES: [i32; 7] = [91, 11600, 189, 10107, 13435, 11000, 2];

fn address(index: usize) -> ServerAddress {
    ServerAddress::tcp(HOSTS[index % HOSTS.len()], 27017)
}

fn process_id(index: u8) -> ObjectId {
    ObjectId::from_bytes([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, index])
}

#[derive(Clone, Copy, Debug)]
enum Role {
    Primary,
    Secondary,
    Arbiter,
    Other,
    Ghost,
    Standalone,
    Mongos,
}

#[derive(Clone, Debug)]
struct Hello {
    server: usize,
    role: Role,
    set_name: usize,
    members: u8,
    election_id: Option<u8>,
    set_version: Option<u8>,
    modern: bool,
    me: Option<usize>,
    primary: Option<usize>,
    topology_version: Option<(u8, u8)>,
}

#[derive(Clone, Debug)]
enum Step {
    Hello(Hello),
    CheckFailed {
        server: usize,
        timeout: bool,
    },
    AppError {
        server: usize,
        generation_lag: u8,
        kind: u8,
        code: usize,
        topology_version: Option<(u8, u8)>,
        after_handshake: bool,
    },
}

fn role() -> impl Strategy<Value = Role> {
    prop_oneof![
        4 => Just(Role::Primary),
        4 => Just(Role::Secondary),
        1 => Just(Role::Arbiter),
        1 => Just(Role::Other),
        1 => Just(Role::Ghost),
        1 => Just(Role::Standalone),
        1 => Just(Role::Mongos),
    ]
}

fn version() -> impl Strategy<Value = Option<(u8, u8)>> {
    proptest::option::of((0u8..2, 0u8..4))
}

fn step(all_modern: bool) -> impl Strategy<Value = Step> {
    let hello = (
        (0..HOSTS.len(), role(), 0..SET_NAMES.len(), 1u8..32),
        (
            proptest::option::of(0u8..4),
            proptest::option::of(0u8..4),
            any::<bool>(),
        ),
        (
            proptest::option::weighted(0.2, 0..HOSTS.len()),
            proptest::option::of(0..HOSTS.len()),
            version(),
        ),
    )
        .prop_map(
            move |(
                (server, role, set_name, members),
                (election_id, set_version, modern),
                (me, primary, topology_version),
            )| {
                Step::Hello(Hello {
                    server,
                    role,
                    set_name,
                    members,
                    election_id,
                    set_version,
                    modern: all_modern || modern,
                    me,
                    primary,
                    topology_version,
                })
            },
        );
    let failed = (0..HOSTS.len(), any::<bool>())
        .prop_map(|(server, timeout)| Step::CheckFailed { server, timeout });
    let app_error = (
        0..HOSTS.len(),
        0u8..2,
        0u8..3,
        0..CODES.len(),
        version(),
        any::<bool>(),
    )
        .prop_map(
            |(server, generation_lag, kind, code, topology_version, after_handshake)| {
                Step::AppError {
                    server,
                    generation_lag,
                    kind,
                    code,
                    topology_version,
                    after_handshake,
                }
            },
        );
    prop_oneof![6 => hello, 2 => failed, 2 => app_error]
}

fn reply(hello: &Hello) -> Document {
    let mut reply = doc! {"ok": 1, "minWireVersion": 0,
    "maxWireVersion": if hello.modern { 21 } else { 16 }};
    let set_name = SET_NAMES[hello.set_name];
    match hello.role {
        Role::Primary => {
            reply.insert("isWritablePrimary", true);
            reply.insert("setName", set_name);
        }
        Role::Secondary => {
            reply.insert("secondary", true);
            reply.insert("setName", set_name);
        }
        Role::Arbiter => {
            reply.insert("arbiterOnly", true);
            reply.insert("setName", set_name);
        }
        Role::Other => {
            reply.insert("hidden", true);
            reply.insert("setName", set_name);
        }
        Role::Ghost => {
            reply.insert("isreplicaset", true);
        }
        Role::Standalone => {
            reply.insert("isWritablePrimary", true);
        }
        Role::Mongos => {
            reply.insert("msg", "isdbgrid");
        }
    }
    if matches!(
        hello.role,
        Role::Primary | Role::Secondary | Role::Arbiter | Role::Other
    ) {
        let hosts: Vec<String> = (0..HOSTS.len())
            .filter(|i| hello.members & (1 << i) != 0)
            .map(|i| address(i).to_string())
            .collect();
        reply.insert("hosts", hosts);
        if let Some(id) = hello.election_id {
            reply.insert(
                "electionId",
                ObjectId::from_bytes([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, id]),
            );
        }
        if let Some(version) = hello.set_version {
            reply.insert("setVersion", i32::from(version));
        }
        if let Some(me) = hello.me {
            reply.insert("me", address(me).to_string());
        }
        if let Some(primary) = hello.primary {
            reply.insert("primary", address(primary).to_string());
        }
    }
    if let Some((process, counter)) = hello.topology_version {
        reply.insert(
            "topologyVersion",
            doc! {"processId": process_id(process), "counter": i64::from(counter)},
        );
    }
    reply
}

fn topology_version(v: Option<(u8, u8)>) -> Option<TopologyVersion> {
    v.map(|(process, counter)| TopologyVersion {
        process_id: process_id(process),
        counter: i64::from(counter),
    })
}

/// The simulated client: topology, pool generations, and what members have reported.
struct Client {
    topology: TopologyDescription,
    generations: Vec<u32>,
    reported: BTreeSet<ServerAddress>,
    replica_set: Option<String>,
}

impl Client {
    fn absorb(&mut self, change: TopologyChange) -> Result<(), TestCaseError> {
        let before: BTreeSet<ServerAddress> = self.topology.servers.keys().cloned().collect();
        let after: BTreeSet<ServerAddress> = change.description.servers.keys().cloned().collect();
        let added: BTreeSet<ServerAddress> = change.added.iter().cloned().collect();
        let removed: BTreeSet<ServerAddress> = change.removed.iter().cloned().collect();
        prop_assert_eq!(&after - &before, added, "added lists the new servers");
        prop_assert_eq!(
            &before - &after,
            removed,
            "removed lists the dropped servers"
        );
        if change.outcome != ApplyOutcome::Applied {
            prop_assert!(change.events.is_empty());
            prop_assert!(change.description.is_same_for_events(&self.topology));
        }
        self.topology = change.description;
        Ok(())
    }

    fn clear(&mut self, server: usize, generation: u32) {
        if self.generations[server] == generation {
            self.generations[server] += 1;
        }
    }

    fn run(&mut self, step: &Step) -> Result<(), TestCaseError> {
        match step {
            Step::Hello(hello) => {
                let description = ServerDescription::from_hello(
                    address(hello.server),
                    &reply(hello),
                    Duration::from_millis(2),
                    Duration::from_millis(1),
                    Instant::now(),
                );
                let members: Vec<ServerAddress> = description.all_members().cloned().collect();
                let change = self.topology.apply(description);
                if change.outcome == ApplyOutcome::Applied {
                    self.reported.extend(members);
                }
                self.absorb(change)
            }
            Step::CheckFailed { server, timeout } => {
                let at = address(*server);
                let previous = self
                    .topology
                    .server(&at)
                    .cloned()
                    .unwrap_or_else(|| ServerDescription::unknown(at.clone()));
                let failure = if *timeout {
                    HeartbeatFailure::NetworkTimeout("timed out".into())
                } else {
                    HeartbeatFailure::Network("reset".into())
                };
                let actions = on_heartbeat_failure(&previous, &failure, self.generations[*server]);
                let change = self.topology.apply(actions.description);
                let applied = change.outcome == ApplyOutcome::Applied;
                self.absorb(change)?;
                if applied {
                    self.clear(*server, actions.clear_pool.generation);
                }
                Ok(())
            }
            Step::AppError {
                server,
                generation_lag,
                kind,
                code,
                topology_version: version,
                after_handshake,
            } => {
                let at = address(*server);
                let pool_generation = self.generations[*server];
                let connection_generation =
                    pool_generation.saturating_sub(u32::from(*generation_lag));
                let error_version = topology_version(*version);
                let kind = match kind {
                    0 => ApplicationErrorKind::Network,
                    1 => ApplicationErrorKind::NetworkTimeout,
                    _ => ApplicationErrorKind::Command(ServerErrorReply {
                        code: Some(CODES[*code]),
                        message: "injected".into(),
                        topology_version: error_version,
                    }),
                };
                let is_command = matches!(kind, ApplicationErrorKind::Command(_));
                let phase = if *after_handshake {
                    ErrorPhase::AfterHandshake
                } else {
                    ErrorPhase::Authentication
                };
                let context = ErrorContext::new(
                    at.clone(),
                    connection_generation,
                    pool_generation,
                    phase,
                    kind,
                );
                let actions = on_application_error(&self.topology, &context);

                // Staleness computed independently of the implementation.
                let current_version = self.topology.server(&at).and_then(|s| s.topology_version);
                let stale_version = is_command
                    && matches!((error_version, current_version),
                        (Some(e), Some(c)) if e.process_id == c.process_id && e.counter <= c.counter);
                if connection_generation < pool_generation || stale_version {
                    prop_assert!(actions.clear_pool.is_none(), "stale error cleared a pool");
                    prop_assert!(actions.mark_unknown.is_none(), "stale error marked Unknown");
                }
                if let Some(unknown) = actions.mark_unknown {
                    let change = self.topology.apply(unknown);
                    self.absorb(change)?;
                }
                if let Some(clear) = actions.clear_pool {
                    self.clear(*server, clear.generation);
                }
                Ok(())
            }
        }
    }

    fn check_invariants(
        &self,
        previous_maxima: &mut (Option<ObjectId>, Option<i64>),
        all_modern: bool,
    ) -> Result<(), TestCaseError> {
        let topology = &self.topology;
        let types: Vec<ServerType> = topology.servers.values().map(|s| s.server_type).collect();
        let primaries = types
            .iter()
            .filter(|t| **t == ServerType::RsPrimary)
            .count();
        prop_assert!(primaries <= 1, "{} primaries", primaries);

        match topology.topology_type {
            TopologyType::ReplicaSetWithPrimary => prop_assert_eq!(primaries, 1),
            TopologyType::ReplicaSetNoPrimary => prop_assert_eq!(primaries, 0),
            // A ghost kept while the type was Unknown stays until its own next check.
            TopologyType::Sharded => prop_assert!(
                types.iter().all(|t| matches!(
                    t,
                    ServerType::Unknown | ServerType::Mongos | ServerType::RsGhost
                )),
                "sharded topology holds {:?}",
                types
            ),
            TopologyType::Unknown => prop_assert!(
                types
                    .iter()
                    .all(|t| matches!(t, ServerType::Unknown | ServerType::RsGhost)),
                "unknown topology holds {:?}",
                types
            ),
            TopologyType::Single => prop_assert_eq!(topology.servers.len(), 1),
            TopologyType::LoadBalanced => prop_assert!(false, "never configured here"),
        }
        if topology.topology_type.is_replica_set() {
            prop_assert!(
                !types.iter().any(|t| matches!(
                    t,
                    ServerType::Standalone | ServerType::Mongos | ServerType::LoadBalancer
                )),
                "replica set holds {:?}",
                types
            );
        }
        if let Some(name) = &self.replica_set {
            prop_assert_eq!(topology.set_name.as_ref(), Some(name));
        }
        for address in topology.servers.keys() {
            prop_assert!(
                self.reported.contains(address),
                "{} was neither a seed nor reported",
                address
            );
        }
        prop_assert_eq!(
            topology.compatible(),
            topology
                .servers
                .values()
                .all(|s| s.check_compatibility().is_ok())
        );

        let maxima = (topology.max_election_id, topology.max_set_version);
        if all_modern {
            prop_assert!(
                maxima >= *previous_maxima,
                "maxima went back: {:?} -> {:?}",
                previous_maxima,
                maxima
            );
        }
        *previous_maxima = maxima;
        Ok(())
    }
}

fn scenario() -> impl Strategy<Value = (u8, bool, bool, Vec<Step>)> {
    (1u8..32, any::<bool>(), any::<bool>()).prop_flat_map(|(seeds, replica_set, all_modern)| {
        (
            Just(seeds),
            Just(replica_set),
            Just(all_modern),
            proptest::collection::vec(step(all_modern), 1..50),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn sdam_invariants_hold((seeds, replica_set, all_modern, steps) in scenario()) {
        let seed_list: Vec<ServerAddress> =
            (0..HOSTS.len()).filter(|i| seeds & (1 << i) != 0).map(address).collect();
        let mut config = TopologyConfig::new(seed_list.clone());
        let replica_set = replica_set.then(|| SET_NAMES[0].to_string());
        config.replica_set = replica_set.clone();
        let opened = TopologyDescription::open(&config).expect("valid configuration");
        let mut client = Client {
            topology: opened.description,
            generations: vec![0; HOSTS.len()],
            reported: seed_list.into_iter().collect(),
            replica_set,
        };
        let mut maxima = (None, None);
        client.check_invariants(&mut maxima, all_modern)?;
        for step in &steps {
            client.run(step)?;
            client.check_invariants(&mut maxima, all_modern)?;
        }
    }
}
