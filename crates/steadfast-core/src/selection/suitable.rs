//! Which servers are suitable for an operation, by topology type and read preference
//! (server-selection.md, "Rules for server selection").

use std::time::Duration;

use super::read_preference::{ReadPreference, ReadPreferenceMode, TagSet};
use super::staleness::{WriteObservation, staleness_with_primary, staleness_without_primary};
use crate::description::{ServerDescription, ServerType, TopologyDescription, TopologyType};

/// Whether the server carries every tag of `wanted` (a read-preference tag set matches a server
/// when it is a subset of the server's tags; the empty set matches every server).
pub fn tag_set_matches(wanted: &TagSet, server_tags: &TagSet) -> bool {
    wanted
        .iter()
        .all(|(key, value)| server_tags.get(key) == Some(value))
}

/// Keeps the servers matching the first tag set that matches any of them; with no tag sets at
/// all every server is kept, and when no tag set matches, none is.
fn filter_by_tags<'a>(
    servers: Vec<&'a ServerDescription>,
    tag_sets: &[TagSet],
) -> Vec<&'a ServerDescription> {
    if tag_sets.is_empty() {
        return servers;
    }
    for wanted in tag_sets {
        let matching: Vec<_> = servers
            .iter()
            .copied()
            .filter(|s| tag_set_matches(wanted, &s.tags))
            .collect();
        if !matching.is_empty() {
            return matching;
        }
    }
    Vec::new()
}

/// The reference points of the staleness estimates, computed once per selection from the whole
/// topology (a deprioritized primary still anchors the estimate of its secondaries).
#[derive(Clone, Copy, Debug)]
pub(crate) enum StalenessReference {
    /// A primary is known: secondaries are compared with its last check.
    Primary(Option<WriteObservation>),
    /// No primary: secondaries are compared with the freshest secondary's lastWriteDate.
    FreshestSecondary(Option<i64>),
}

impl StalenessReference {
    pub(crate) fn of(topology: &TopologyDescription) -> Self {
        match topology.primary() {
            Some(primary) if topology.topology_type == TopologyType::ReplicaSetWithPrimary => {
                StalenessReference::Primary(observation(primary))
            }
            _ => StalenessReference::FreshestSecondary(
                topology
                    .servers
                    .values()
                    .filter(|s| s.server_type == ServerType::RsSecondary)
                    .filter_map(|s| s.last_write_date)
                    .map(|d| d.timestamp_millis())
                    .max(),
            ),
        }
    }
}

fn observation(server: &ServerDescription) -> Option<WriteObservation> {
    Some(WriteObservation {
        last_update_time: server.last_update_time?,
        last_write_date_ms: server.last_write_date?.timestamp_millis(),
    })
}

/// The estimated staleness of `server`: zero for anything but a secondary, `None` when the
/// replies needed for the estimate are missing (such a secondary cannot be shown to be fresh).
pub(crate) fn estimated_staleness(
    server: &ServerDescription,
    reference: StalenessReference,
    heartbeat_frequency: Duration,
) -> Option<Duration> {
    if server.server_type != ServerType::RsSecondary {
        return Some(Duration::ZERO);
    }
    match reference {
        StalenessReference::Primary(primary) => Some(staleness_with_primary(
            observation(server)?,
            primary?,
            heartbeat_frequency,
        )),
        StalenessReference::FreshestSecondary(freshest) => Some(staleness_without_primary(
            server.last_write_date?.timestamp_millis(),
            freshest?,
            heartbeat_frequency,
        )),
    }
}

/// The "secondary" algorithm shared by every non-primary mode: candidates by type, then
/// maxStalenessSeconds, then tag sets (staleness first, so that a stale member matching the
/// first tag set does not hide a fresh one matching a later set).
fn eligible_members<'a>(
    pool: &[&'a ServerDescription],
    preference: &ReadPreference,
    include_primary: bool,
    reference: StalenessReference,
    heartbeat_frequency: Duration,
) -> Vec<&'a ServerDescription> {
    let mut candidates: Vec<_> = pool
        .iter()
        .copied()
        .filter(|s| {
            s.server_type == ServerType::RsSecondary
                || (include_primary && s.server_type == ServerType::RsPrimary)
        })
        .collect();
    if let Some(max) = preference.max_staleness() {
        candidates.retain(|s| {
            estimated_staleness(s, reference, heartbeat_frequency).is_some_and(|st| st <= max)
        });
    }
    filter_by_tags(candidates, preference.tag_sets())
}

fn primary_of<'a>(pool: &[&'a ServerDescription]) -> Vec<&'a ServerDescription> {
    pool.iter()
        .copied()
        .filter(|s| s.server_type == ServerType::RsPrimary)
        .collect()
}

/// Suitable servers for a read among `pool` (a subset of `topology.servers`).
pub(crate) fn suitable_for_read<'a>(
    topology: &TopologyDescription,
    pool: &[&'a ServerDescription],
    preference: &ReadPreference,
    reference: StalenessReference,
) -> Vec<&'a ServerDescription> {
    let heartbeat = topology.heartbeat_frequency;
    match topology.topology_type {
        TopologyType::Unknown => Vec::new(),
        // A direct connection ignores the read preference: the one server serves everything.
        TopologyType::Single => of_type(pool, |t| t.is_known()),
        // mongos applies the read preference itself; every router is suitable.
        TopologyType::Sharded => of_type(pool, |t| t == ServerType::Mongos),
        TopologyType::LoadBalanced => of_type(pool, |t| t == ServerType::LoadBalancer),
        TopologyType::ReplicaSetWithPrimary | TopologyType::ReplicaSetNoPrimary => match preference
            .mode()
        {
            ReadPreferenceMode::Primary => primary_of(pool),
            ReadPreferenceMode::Secondary => {
                eligible_members(pool, preference, false, reference, heartbeat)
            }
            ReadPreferenceMode::Nearest => {
                eligible_members(pool, preference, true, reference, heartbeat)
            }
            ReadPreferenceMode::SecondaryPreferred => {
                let secondaries = eligible_members(pool, preference, false, reference, heartbeat);
                if secondaries.is_empty() {
                    primary_of(pool)
                } else {
                    secondaries
                }
            }
            ReadPreferenceMode::PrimaryPreferred => {
                let primary = primary_of(pool);
                if primary.is_empty() {
                    eligible_members(pool, preference, false, reference, heartbeat)
                } else {
                    primary
                }
            }
        },
    }
}

/// Suitable servers for a write among `pool`.
pub(crate) fn suitable_for_write<'a>(
    topology: &TopologyDescription,
    pool: &[&'a ServerDescription],
) -> Vec<&'a ServerDescription> {
    match topology.topology_type {
        TopologyType::Unknown | TopologyType::ReplicaSetNoPrimary => Vec::new(),
        TopologyType::Single => of_type(pool, |t| t.is_known()),
        TopologyType::Sharded => of_type(pool, |t| t == ServerType::Mongos),
        TopologyType::LoadBalanced => of_type(pool, |t| t == ServerType::LoadBalancer),
        TopologyType::ReplicaSetWithPrimary => primary_of(pool),
    }
}

fn of_type<'a>(
    pool: &[&'a ServerDescription],
    wanted: impl Fn(ServerType) -> bool,
) -> Vec<&'a ServerDescription> {
    pool.iter()
        .copied()
        .filter(|s| wanted(s.server_type))
        .collect()
}
