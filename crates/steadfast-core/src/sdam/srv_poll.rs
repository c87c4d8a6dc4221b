//! Polling SRV records for mongos discovery (polling-srv-records-for-mongos-discovery.md): the
//! pure rules. The driver's poller task asks DNS, hands the answer to [`verify_records`], has
//! the topology worker apply the verified hosts with
//! [`TopologyDescription::apply_srv_hosts`], and waits [`rescan_interval`] before the next
//! rescan.

use std::sync::Arc;
use std::time::Duration;

use rand::Rng;

use super::apply::{ApplyOutcome, TopologyChange};
use super::events::SdamEvent;
use crate::address::ServerAddress;
use crate::description::{ServerDescription, TopologyDescription, TopologyType};
use crate::options::OptionsError;
use crate::options::srv::{SrvHost, SrvRecord, choose_hosts};

/// The shortest interval between two rescans that found hosts, whatever the records' TTL.
pub const MIN_RESCAN_INTERVAL: Duration = Duration::from_secs(60);

/// Whether SRV records are polled in a topology of this type: only while it is Sharded or
/// still Unknown (never for a replica set, a single server or a load balancer).
pub fn polls_srv(topology_type: TopologyType) -> bool {
    matches!(topology_type, TopologyType::Sharded | TopologyType::Unknown)
}

/// The hosts of one rescan's SRV answer that may join the topology.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerifiedHosts {
    /// Valid targets, in answer order, without duplicates.
    pub hosts: Vec<ServerAddress>,
    /// Why each other record was ignored (a target outside the parent domain, port 0): the
    /// driver logs them; they are not errors.
    pub ignored: Vec<OptionsError>,
}

/// Checks a rescan's SRV records as the initial lookup does, except that a record that fails
/// the check is ignored instead of failing the whole answer.
pub fn verify_records(srv_host: &SrvHost, records: &[SrvRecord]) -> VerifiedHosts {
    let mut verified = VerifiedHosts::default();
    for record in records {
        match srv_host.check_target(record) {
            Ok(address) if !verified.hosts.contains(&address) => verified.hosts.push(address),
            Ok(_) => {}
            Err(reason) => verified.ignored.push(reason),
        }
    }
    verified
}

/// How long to wait after a rescan before the next one. A rescan that found hosts waits the
/// lowest TTL of its records, but at least `min_interval` ([`MIN_RESCAN_INTERVAL`] outside
/// tests; `min_interval` alone when the TTLs are unknown). A rescan that found none (no
/// records, none valid, or a DNS failure) retries after `retry_interval` (the client's
/// heartbeatFrequencyMS).
pub fn rescan_interval(
    lowest_ttl: Option<Duration>,
    found_hosts: bool,
    min_interval: Duration,
    retry_interval: Duration,
) -> Duration {
    if !found_hosts {
        return retry_interval;
    }
    lowest_ttl.map_or(min_interval, |ttl| ttl.max(min_interval))
}

impl TopologyDescription {
    /// Applies the verified hosts of a rescan: servers no longer listed are removed, servers
    /// still listed are left alone, and new ones are added as Unknown, all of them when
    /// `max_hosts` (srvMaxHosts) is absent, zero, or not smaller than the number of verified
    /// hosts, otherwise ones chosen at random (`rng`, as for the initial selection) until the
    /// topology has `max_hosts` servers. Events: ServerOpening per added server, ServerClosed
    /// per removed one, then TopologyDescriptionChanged.
    ///
    /// `None` when nothing changes, and whenever the topology is not one that polls
    /// ([`polls_srv`]) or `verified` is empty (an empty answer never empties the topology).
    pub fn apply_srv_hosts(
        &self,
        verified: &[ServerAddress],
        max_hosts: Option<u32>,
        rng: &mut impl Rng,
    ) -> Option<TopologyChange> {
        if !polls_srv(self.topology_type) || verified.is_empty() {
            return None;
        }
        let removed: Vec<ServerAddress> = self
            .servers
            .keys()
            .filter(|address| !verified.contains(address))
            .cloned()
            .collect();
        let kept = self.servers.len().saturating_sub(removed.len());
        let mut candidates: Vec<ServerAddress> = Vec::new();
        for address in verified {
            if !self.servers.contains_key(address) && !candidates.contains(address) {
                candidates.push(address.clone());
            }
        }
        let added = match max_hosts.and_then(|max| usize::try_from(max).ok()) {
            Some(max) if max > 0 && max < verified.len() => {
                let room = max.saturating_sub(kept);
                if room == 0 {
                    Vec::new()
                } else {
                    // `room` <= `max`, which came from a u32.
                    choose_hosts(candidates, u32::try_from(room).ok(), rng)
                }
            }
            _ => candidates,
        };
        if added.is_empty() && removed.is_empty() {
            return None;
        }
        Some(self.with_members_changed(added, removed))
    }

    fn with_members_changed(
        &self,
        added: Vec<ServerAddress>,
        removed: Vec<ServerAddress>,
    ) -> TopologyChange {
        let mut next = self.clone();
        for address in &removed {
            next.servers.remove(address);
        }
        for address in &added {
            next.servers.insert(
                address.clone(),
                Arc::new(ServerDescription::unknown(address.clone())),
            );
        }
        next.refresh_derived_fields();
        let mut events: Vec<SdamEvent> = added
            .iter()
            .map(|address| SdamEvent::ServerOpening {
                address: address.clone(),
            })
            .collect();
        events.extend(removed.iter().map(|address| SdamEvent::ServerClosed {
            address: address.clone(),
        }));
        events.push(SdamEvent::TopologyDescriptionChanged {
            previous: Arc::new(self.clone()),
            new: Arc::new(next.clone()),
        });
        TopologyChange {
            description: next,
            events,
            added,
            removed,
            check_now: Vec::new(),
            pool_ready: None,
            outcome: ApplyOutcome::Applied,
        }
    }
}

#[cfg(test)]
#[path = "srv_poll_tests.rs"]
mod tests;
