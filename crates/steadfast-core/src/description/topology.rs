//! The client's view of the whole deployment (SDAM "TopologyDescription").

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bson::oid::ObjectId;

use super::server::{ServerDescription, ServerType};
use crate::address::ServerAddress;

/// The default `localThresholdMS`: the latency window of server selection.
pub const DEFAULT_LOCAL_THRESHOLD: Duration = Duration::from_millis(15);
/// The default `heartbeatFrequencyMS` of multi-threaded and asynchronous drivers.
pub const DEFAULT_HEARTBEAT_FREQUENCY: Duration = Duration::from_secs(10);
/// The smallest interval between two checks of one server (`minHeartbeatFrequencyMS`).
pub const MIN_HEARTBEAT_FREQUENCY: Duration = Duration::from_millis(500);

/// What kind of deployment the client believes it is talking to. Serializes as its
/// specification name (`"ReplicaSetNoPrimary"`, ...), which [`TopologyType::spec_name`] gives.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
pub enum TopologyType {
    /// Exactly one server, used whatever its type (`directConnection=true`).
    Single,
    /// Not discovered yet.
    #[default]
    Unknown,
    /// One or more mongos routers.
    Sharded,
    /// A replica set whose primary is not known.
    ReplicaSetNoPrimary,
    /// A replica set with a known primary.
    ReplicaSetWithPrimary,
    /// A load balancer in front of mongos routers (`loadBalanced=true`).
    LoadBalanced,
}

impl TopologyType {
    /// The name the specifications (and their JSON tests) use, e.g. `"ReplicaSetNoPrimary"`.
    pub fn spec_name(self) -> &'static str {
        match self {
            TopologyType::Single => "Single",
            TopologyType::Unknown => "Unknown",
            TopologyType::Sharded => "Sharded",
            TopologyType::ReplicaSetNoPrimary => "ReplicaSetNoPrimary",
            TopologyType::ReplicaSetWithPrimary => "ReplicaSetWithPrimary",
            TopologyType::LoadBalanced => "LoadBalanced",
        }
    }

    /// Whether this is one of the two replica-set types.
    pub fn is_replica_set(self) -> bool {
        matches!(
            self,
            TopologyType::ReplicaSetNoPrimary | TopologyType::ReplicaSetWithPrimary
        )
    }
}

impl fmt::Display for TopologyType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.spec_name())
    }
}

/// The settings a topology starts from: the seed list and the URI options that decide the
/// initial topology type. Built by the connection-string layer (or by tests directly).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TopologyConfig {
    /// The seed list (host names lower-cased by [`ServerAddress`]); duplicates are merged.
    pub seeds: Vec<ServerAddress>,
    /// `directConnection`; `None` when the option was not given (behaves as `false`).
    pub direct_connection: Option<bool>,
    /// `replicaSet`: the required set name.
    pub replica_set: Option<String>,
    /// `loadBalanced=true`.
    pub load_balanced: bool,
    /// `localThresholdMS`.
    pub local_threshold: Duration,
    /// `heartbeatFrequencyMS`.
    pub heartbeat_frequency: Duration,
}

impl TopologyConfig {
    /// A configuration with the given seeds and every option at its default.
    pub fn new(seeds: impl IntoIterator<Item = ServerAddress>) -> Self {
        TopologyConfig {
            seeds: seeds.into_iter().collect(),
            direct_connection: None,
            replica_set: None,
            load_balanced: false,
            local_threshold: DEFAULT_LOCAL_THRESHOLD,
            heartbeat_frequency: DEFAULT_HEARTBEAT_FREQUENCY,
        }
    }
}

/// A combination of topology settings that the SDAM specification forbids.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TopologyConfigError {
    /// The seed list was empty.
    #[error("the seed list is empty")]
    NoSeeds,
    /// `directConnection=true` was combined with more than one seed.
    #[error("directConnection=true cannot be used with multiple seeds")]
    DirectConnectionWithMultipleSeeds,
    /// `loadBalanced=true` was combined with more than one seed.
    #[error("loadBalanced=true cannot be used with multiple seeds")]
    LoadBalancedWithMultipleSeeds,
    /// `loadBalanced=true` was combined with `directConnection=true`.
    #[error("loadBalanced=true cannot be used with directConnection=true")]
    LoadBalancedWithDirectConnection,
    /// `loadBalanced=true` was combined with `replicaSet`.
    #[error("loadBalanced=true cannot be used with replicaSet")]
    LoadBalancedWithReplicaSet,
    /// `heartbeatFrequencyMS` was below the 500 ms minimum.
    #[error("heartbeatFrequencyMS must be at least 500 ms, got {0:?}")]
    HeartbeatTooFrequent(Duration),
}

/// The client's view of the deployment: an immutable value, replaced as a whole on every
/// change (and shared as `Arc<TopologyDescription>` by the driver).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TopologyDescription {
    /// The topology type.
    pub topology_type: TopologyType,
    /// The replica set name: configured, or learned from the first member that reported one.
    pub set_name: Option<String>,
    /// The largest setVersion of a primary, ordered together with `max_election_id`.
    pub max_set_version: Option<i64>,
    /// The largest electionId of a primary.
    pub max_election_id: Option<ObjectId>,
    /// One description per monitored server, ordered by address.
    pub servers: BTreeMap<ServerAddress, Arc<ServerDescription>>,
    /// Why the deployment is unusable when some server's wire range does not overlap ours;
    /// `None` when every server is compatible.
    pub compatibility_error: Option<String>,
    /// The smallest `logicalSessionTimeoutMinutes` over data-bearing servers, or `None` if
    /// one of them does not support sessions.
    pub logical_session_timeout_minutes: Option<i64>,
    /// `localThresholdMS`: the width of the latency window.
    pub local_threshold: Duration,
    /// `heartbeatFrequencyMS`: needed by max-staleness estimates.
    pub heartbeat_frequency: Duration,
    /// Whether the seed list had exactly one address: a Standalone found while the type is
    /// Unknown then makes the topology Single instead of being removed.
    pub(crate) single_seed: bool,
}

impl TopologyDescription {
    /// The initial description: every seed Unknown, the type chosen from `directConnection`,
    /// `replicaSet` and `loadBalanced` as SDAM "Initial TopologyType" prescribes. In
    /// load-balanced mode the single seed is at once a LoadBalancer (it is never checked).
    ///
    /// # Errors
    /// [`TopologyConfigError`] when the seeds and options form a combination the specification
    /// forbids.
    pub fn new(config: &TopologyConfig) -> Result<Self, TopologyConfigError> {
        let mut seeds = config.seeds.clone();
        seeds.sort();
        seeds.dedup();
        if seeds.is_empty() {
            return Err(TopologyConfigError::NoSeeds);
        }
        if config.heartbeat_frequency < MIN_HEARTBEAT_FREQUENCY {
            return Err(TopologyConfigError::HeartbeatTooFrequent(
                config.heartbeat_frequency,
            ));
        }
        let direct = config.direct_connection == Some(true);
        if config.load_balanced {
            if direct {
                return Err(TopologyConfigError::LoadBalancedWithDirectConnection);
            }
            if config.replica_set.is_some() {
                return Err(TopologyConfigError::LoadBalancedWithReplicaSet);
            }
            if seeds.len() > 1 {
                return Err(TopologyConfigError::LoadBalancedWithMultipleSeeds);
            }
        }
        if direct && seeds.len() > 1 {
            return Err(TopologyConfigError::DirectConnectionWithMultipleSeeds);
        }
        let topology_type = if config.load_balanced {
            TopologyType::LoadBalanced
        } else if direct {
            TopologyType::Single
        } else if config.replica_set.is_some() {
            TopologyType::ReplicaSetNoPrimary
        } else {
            TopologyType::Unknown
        };
        let single_seed = seeds.len() == 1;
        let servers = seeds
            .into_iter()
            .map(|address| {
                let description = if config.load_balanced {
                    ServerDescription::load_balancer(address.clone())
                } else {
                    ServerDescription::unknown(address.clone())
                };
                (address, Arc::new(description))
            })
            .collect();
        let mut description = TopologyDescription {
            topology_type,
            set_name: config.replica_set.clone(),
            max_set_version: None,
            max_election_id: None,
            servers,
            compatibility_error: None,
            logical_session_timeout_minutes: None,
            local_threshold: config.local_threshold,
            heartbeat_frequency: config.heartbeat_frequency,
            single_seed,
        };
        description.refresh_derived_fields();
        Ok(description)
    }

    /// Whether every server's wire range overlaps the driver's.
    pub fn compatible(&self) -> bool {
        self.compatibility_error.is_none()
    }

    /// The description of the server at `address`, if it is part of the topology.
    pub fn server(&self, address: &ServerAddress) -> Option<&ServerDescription> {
        self.servers.get(address).map(Arc::as_ref)
    }

    /// A mutable view of one server's description. Descriptions are shared between snapshots,
    /// so this copies the one being changed (and only that one).
    pub fn server_mut(&mut self, address: &ServerAddress) -> Option<&mut ServerDescription> {
        self.servers.get_mut(address).map(Arc::make_mut)
    }

    /// Adds or replaces a server's description (call `refresh_derived_fields` afterwards).
    pub fn insert_server(&mut self, description: ServerDescription) {
        self.servers
            .insert(description.address.clone(), Arc::new(description));
    }

    /// The primary, if the topology has one.
    pub fn primary(&self) -> Option<&ServerDescription> {
        self.servers
            .values()
            .find(|s| s.server_type == ServerType::RsPrimary)
            .map(Arc::as_ref)
    }

    /// Whether some server has answered a check with a usable type.
    pub fn has_known_servers(&self) -> bool {
        self.servers.values().any(|s| s.server_type.is_known())
    }

    /// Recomputes what is derived from the server set after any change: the compatibility
    /// verdict and the logical session timeout. Descriptions are values, so whoever changes
    /// `servers` calls this before publishing.
    pub fn refresh_derived_fields(&mut self) {
        self.compatibility_error = self
            .servers
            .values()
            .find_map(|s| s.check_compatibility().err());
        self.logical_session_timeout_minutes = self.compute_session_timeout();
    }

    /// SDAM "logical session timeout": the minimum over data-bearing servers, `None` if there
    /// are none or any of them lacks the field. Load-balanced topologies take it from the
    /// connection handshake instead, so it is left `None` here.
    fn compute_session_timeout(&self) -> Option<i64> {
        let mut minimum: Option<i64> = None;
        for server in self
            .servers
            .values()
            .filter(|s| s.server_type.is_data_bearing())
        {
            let timeout = server.logical_session_timeout_minutes?;
            minimum = Some(minimum.map_or(timeout, |m| m.min(timeout)));
        }
        minimum
    }
}
