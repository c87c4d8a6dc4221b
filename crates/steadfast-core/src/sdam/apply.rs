//! Applying a new ServerDescription to a TopologyDescription (SDAM "Updating the
//! TopologyDescription"), and the events and worker actions that follow from it.

use std::sync::Arc;

use super::events::SdamEvent;
use crate::address::ServerAddress;
use crate::description::{
    ServerDescription, ServerType, TopologyConfig, TopologyConfigError, TopologyDescription,
    TopologyType, TopologyVersion,
};

/// Whether an incoming description was used, and if not, why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApplyOutcome {
    /// The description replaced the server's previous one and the topology was updated.
    Applied,
    /// The server is no longer part of the topology (another member's reply removed it while
    /// it was being checked): the outcome is ignored.
    NotInTopology,
    /// The description's topologyVersion is older than the one already known.
    StaleTopologyVersion,
    /// In load-balanced mode only a LoadBalancer description may replace the server.
    LoadBalancedIgnoresType,
}

/// The result of one SDAM decision: the new description plus what the topology worker must
/// carry out. Nothing here has been done yet; the worker publishes `description`, delivers
/// `events` in order, and starts or stops monitors and pools as listed.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TopologyChange {
    /// The topology after the change (equal to the old one when the input was ignored).
    pub description: TopologyDescription,
    /// Events to publish, in the order the specification expects.
    pub events: Vec<SdamEvent>,
    /// Servers that entered the topology: start a monitor (and a pool) for each.
    pub added: Vec<ServerAddress>,
    /// Servers that left the topology: stop their monitors and close their pools.
    pub removed: Vec<ServerAddress>,
    /// Servers to check right away (a primary that was just invalidated by a newer one).
    pub check_now: Vec<ServerAddress>,
    /// A pool to mark ready (CMAP): the checked server turned out usable.
    pub pool_ready: Option<ServerAddress>,
    /// Whether the input was applied.
    pub outcome: ApplyOutcome,
}

impl TopologyChange {
    fn ignored(description: &TopologyDescription, outcome: ApplyOutcome) -> Self {
        TopologyChange {
            description: description.clone(),
            events: Vec::new(),
            added: Vec::new(),
            removed: Vec::new(),
            check_now: Vec::new(),
            pool_ready: None,
            outcome,
        }
    }
}

/// A topology being rewritten by one decision, with the membership changes it has made.
pub(super) struct Update {
    pub(super) topology: TopologyDescription,
    added: Vec<ServerAddress>,
    removed: Vec<ServerAddress>,
    pub(super) check_now: Vec<ServerAddress>,
}

impl Update {
    fn new(topology: TopologyDescription) -> Self {
        Update {
            topology,
            added: Vec::new(),
            removed: Vec::new(),
            check_now: Vec::new(),
        }
    }

    /// SDAM "remove": drop the server and stop monitoring it.
    pub(super) fn remove(&mut self, address: &ServerAddress) {
        if self.topology.servers.remove(address).is_some() {
            if let Some(i) = self.added.iter().position(|a| a == address) {
                self.added.remove(i);
            } else {
                self.removed.push(address.clone());
            }
        }
    }

    /// Adds a default Unknown description for a newly reported member.
    pub(super) fn add_unknown(&mut self, address: &ServerAddress) {
        if self.topology.servers.contains_key(address) {
            return;
        }
        self.topology.servers.insert(
            address.clone(),
            Arc::new(ServerDescription::unknown(address.clone())),
        );
        if let Some(i) = self.removed.iter().position(|a| a == address) {
            // Removed and re-added within one decision: its monitor simply keeps running.
            self.removed.remove(i);
        } else {
            self.added.push(address.clone());
        }
    }

    /// SDAM "checkIfHasPrimary".
    pub(super) fn check_if_has_primary(&mut self) {
        self.topology.topology_type = if self.topology.primary().is_some() {
            TopologyType::ReplicaSetWithPrimary
        } else {
            TopologyType::ReplicaSetNoPrimary
        };
    }

    /// SDAM "updateUnknownWithStandalone".
    fn update_unknown_with_standalone(&mut self, address: &ServerAddress) {
        if self.topology.single_seed {
            self.topology.topology_type = TopologyType::Single;
        } else {
            self.remove(address);
        }
    }

    /// TopologyType Single: the description is always kept, unless the configured set name
    /// does not match ("Verifying setName with TopologyType Single").
    fn update_single(&mut self, address: &ServerAddress) {
        let Some(required) = self.topology.set_name.clone() else {
            return;
        };
        let Some(server) = self.topology.servers.get_mut(address) else {
            return;
        };
        if server.server_type.is_known() && server.set_name.as_deref() != Some(required.as_str()) {
            let reported = server.set_name.as_deref().unwrap_or("no set name");
            let error = format!(
                "server reports replica set {reported:?} but replicaSet={required:?} was required"
            );
            *server = Arc::new(ServerDescription::from_error(address.clone(), error, None));
        }
    }

    fn dispatch(&mut self, address: &ServerAddress, server_type: ServerType) {
        use ServerType as S;
        use TopologyType as T;
        match (self.topology.topology_type, server_type) {
            (T::Single, _) => self.update_single(address),
            (T::LoadBalanced, _) => {}
            // Failed checks and ghosts are kept; a ghost never reveals the set's topology.
            (T::Unknown | T::ReplicaSetNoPrimary, S::Unknown | S::PossiblePrimary | S::RsGhost)
            | (T::Sharded, S::Unknown | S::PossiblePrimary | S::Mongos) => {}
            (T::ReplicaSetWithPrimary, S::Unknown | S::PossiblePrimary | S::RsGhost) => {
                self.check_if_has_primary();
            }
            (T::Unknown, S::Standalone) => self.update_unknown_with_standalone(address),
            (T::Unknown, S::Mongos) => self.topology.topology_type = T::Sharded,
            (T::Unknown | T::ReplicaSetNoPrimary, S::RsPrimary) => {
                self.topology.topology_type = T::ReplicaSetWithPrimary;
                self.update_rs_from_primary(address);
            }
            (T::Unknown, S::RsSecondary | S::RsArbiter | S::RsOther) => {
                self.topology.topology_type = T::ReplicaSetNoPrimary;
                self.update_rs_without_primary(address);
            }
            (T::Sharded, _) => self.remove(address),
            (T::ReplicaSetNoPrimary, S::RsSecondary | S::RsArbiter | S::RsOther) => {
                self.update_rs_without_primary(address);
            }
            (T::ReplicaSetWithPrimary, S::RsPrimary) => self.update_rs_from_primary(address),
            (T::ReplicaSetWithPrimary, S::RsSecondary | S::RsArbiter | S::RsOther) => {
                self.update_rs_with_primary_from_member(address);
            }
            // Standalones, mongoses and load balancers do not belong in a replica set or an
            // undiscovered topology that already knows it is not load balanced.
            (
                T::Unknown | T::ReplicaSetNoPrimary | T::ReplicaSetWithPrimary,
                S::Standalone | S::Mongos | S::LoadBalancer,
            ) => {
                self.remove(address);
                if self.topology.topology_type == T::ReplicaSetWithPrimary {
                    self.check_if_has_primary();
                }
            }
        }
    }
}

/// Unknown and PossiblePrimary are the same state for an asynchronous client, so a server
/// moving between them is no event.
fn same_server_for_events(old: &ServerDescription, new: &ServerDescription) -> bool {
    if old.server_type.is_known() || new.server_type.is_known() {
        return old.is_same_for_events(new);
    }
    let mut relabelled = old.clone();
    relabelled.server_type = new.server_type;
    relabelled.is_same_for_events(new)
}

impl TopologyDescription {
    /// Creates the topology and the events of its construction: TopologyOpening, the first
    /// TopologyDescriptionChanged (from an empty Unknown topology), ServerOpening per seed,
    /// and in load-balanced mode the load balancer's move from Unknown to LoadBalancer.
    /// `added` lists every seed.
    ///
    /// # Errors
    /// [`TopologyConfigError`] when the configuration is one the specification forbids.
    pub fn open(config: &TopologyConfig) -> Result<TopologyChange, TopologyConfigError> {
        let ready = TopologyDescription::new(config)?;
        let mut empty = ready.clone();
        empty.servers.clear();
        empty.topology_type = TopologyType::Unknown;
        empty.set_name = None;
        empty.refresh_derived_fields();

        let mut first = ready.clone();
        for server in first.servers.values_mut() {
            *server = Arc::new(ServerDescription::unknown(server.address.clone()));
        }
        first.refresh_derived_fields();

        let mut events = vec![
            SdamEvent::TopologyOpening,
            SdamEvent::TopologyDescriptionChanged {
                previous: Arc::new(empty),
                new: Arc::new(first.clone()),
            },
        ];
        let added: Vec<ServerAddress> = ready.servers.keys().cloned().collect();
        events.extend(added.iter().map(|address| SdamEvent::ServerOpening {
            address: address.clone(),
        }));
        let mut pool_ready = None;
        if ready.topology_type == TopologyType::LoadBalanced {
            let balancer = first.apply_unchecked(
                ready
                    .servers
                    .values()
                    .map(|s| s.address.clone())
                    .map(ServerDescription::load_balancer),
            );
            events.extend(balancer.events);
            pool_ready = balancer.pool_ready;
        }
        Ok(TopologyChange {
            description: ready,
            events,
            added,
            removed: Vec::new(),
            check_now: Vec::new(),
            pool_ready,
            outcome: ApplyOutcome::Applied,
        })
    }

    fn apply_unchecked(
        &self,
        descriptions: impl Iterator<Item = ServerDescription>,
    ) -> TopologyChange {
        let mut current = TopologyChange::ignored(self, ApplyOutcome::Applied);
        for description in descriptions {
            let next = current.description.apply(description);
            current.events.extend(next.events);
            current.pool_ready = next.pool_ready.or(current.pool_ready);
            current.description = next.description;
        }
        current
    }

    /// Processes the outcome of a check (or an application error's Unknown description): the
    /// SDAM TopologyType table with updateRSFromPrimary, updateRSWithoutPrimary,
    /// updateRSWithPrimaryFromMember, checkIfHasPrimary, the setName and `me` checks, stale
    /// primary detection (6.0+ and pre-6.0 orderings), compatibility and the logical session
    /// timeout. Descriptions of servers no longer in the topology, and descriptions whose
    /// topologyVersion is older than the current one, are ignored.
    pub fn apply(&self, incoming: ServerDescription) -> TopologyChange {
        let address = incoming.address.clone();
        let Some(current) = self.servers.get(&address) else {
            return TopologyChange::ignored(self, ApplyOutcome::NotInTopology);
        };
        if TopologyVersion::is_older(
            incoming.topology_version.as_ref(),
            current.topology_version.as_ref(),
        ) {
            return TopologyChange::ignored(self, ApplyOutcome::StaleTopologyVersion);
        }
        if self.topology_type == TopologyType::LoadBalanced
            && incoming.server_type != ServerType::LoadBalancer
        {
            return TopologyChange::ignored(self, ApplyOutcome::LoadBalancedIgnoresType);
        }

        let server_type = incoming.server_type;
        let mut update = Update::new(self.clone());
        update
            .topology
            .servers
            .insert(address.clone(), Arc::new(incoming));
        update.dispatch(&address, server_type);
        update.topology.refresh_derived_fields();

        let pool_ready = update.topology.servers.get(&address).and_then(|s| {
            let usable = s.server_type.is_data_bearing()
                || (s.server_type.is_known()
                    && update.topology.topology_type == TopologyType::Single);
            usable.then(|| address.clone())
        });
        let events =
            self.events_towards(&update.topology, &address, &update.added, &update.removed);
        TopologyChange {
            description: update.topology,
            events,
            added: update.added,
            removed: update.removed,
            check_now: update.check_now,
            pool_ready,
            outcome: ApplyOutcome::Applied,
        }
    }

    /// Closes the topology: every server is removed and the type becomes Unknown. Events:
    /// ServerClosed per server, TopologyDescriptionChanged, TopologyClosed.
    pub fn close(&self) -> TopologyChange {
        let mut closed = self.clone();
        closed.servers.clear();
        closed.topology_type = TopologyType::Unknown;
        closed.set_name = None;
        closed.max_election_id = None;
        closed.max_set_version = None;
        closed.refresh_derived_fields();
        let removed: Vec<ServerAddress> = self.servers.keys().cloned().collect();
        let mut events: Vec<SdamEvent> = removed
            .iter()
            .map(|address| SdamEvent::ServerClosed {
                address: address.clone(),
            })
            .collect();
        events.push(SdamEvent::TopologyDescriptionChanged {
            previous: Arc::new(self.clone()),
            new: Arc::new(closed.clone()),
        });
        events.push(SdamEvent::TopologyClosed);
        TopologyChange {
            description: closed,
            events,
            added: Vec::new(),
            removed,
            check_now: Vec::new(),
            pool_ready: None,
            outcome: ApplyOutcome::Applied,
        }
    }

    /// Whether two topology descriptions are equal for the purpose of publishing a
    /// TopologyDescriptionChangedEvent: same type, set name, election and set version maxima,
    /// compatibility, session timeout, and servers equal by "Server Description Equality".
    pub fn is_same_for_events(&self, other: &TopologyDescription) -> bool {
        self.topology_type == other.topology_type
            && self.set_name == other.set_name
            && self.max_set_version == other.max_set_version
            && self.max_election_id == other.max_election_id
            && self.compatibility_error == other.compatibility_error
            && self.logical_session_timeout_minutes == other.logical_session_timeout_minutes
            && self.servers.len() == other.servers.len()
            && self
                .servers
                .iter()
                .zip(other.servers.iter())
                .all(|((a, x), (b, y))| a == b && (Arc::ptr_eq(x, y) || x.is_same_for_events(y)))
    }

    /// The events leading from `self` to `next`: the checked server's description change
    /// first, then other changed servers, openings, closings, and the topology change.
    fn events_towards(
        &self,
        next: &TopologyDescription,
        checked: &ServerAddress,
        added: &[ServerAddress],
        removed: &[ServerAddress],
    ) -> Vec<SdamEvent> {
        let mut events = Vec::new();
        let changed = |address: &ServerAddress| -> Option<SdamEvent> {
            let old = self.servers.get(address)?;
            let new = next.servers.get(address)?;
            // Untouched servers share their description with the previous snapshot: skipping
            // them by pointer keeps an update linear in the number of servers.
            (!Arc::ptr_eq(old, new) && !same_server_for_events(old, new)).then(|| {
                SdamEvent::ServerDescriptionChanged {
                    address: address.clone(),
                    previous: Box::new(ServerDescription::clone(old)),
                    new: Box::new(ServerDescription::clone(new)),
                }
            })
        };
        events.extend(changed(checked));
        events.extend(
            next.servers
                .keys()
                .filter(|address| *address != checked)
                .filter_map(changed),
        );
        events.extend(added.iter().map(|address| SdamEvent::ServerOpening {
            address: address.clone(),
        }));
        events.extend(removed.iter().map(|address| SdamEvent::ServerClosed {
            address: address.clone(),
        }));
        if !self.is_same_for_events(next) {
            events.push(SdamEvent::TopologyDescriptionChanged {
                previous: Arc::new(self.clone()),
                new: Arc::new(next.clone()),
            });
        }
        events
    }
}
