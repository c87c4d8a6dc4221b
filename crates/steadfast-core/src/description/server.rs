//! The client's view of one server (SDAM "ServerDescription").

use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::fmt;
use std::time::{Duration, Instant};

use bson::oid::ObjectId;

use crate::address::ServerAddress;
use crate::selection::TagSet;

/// The oldest wire version this driver speaks: MongoDB 4.2.
pub const MIN_WIRE_VERSION: i32 = 8;
/// The MongoDB release that introduced [`MIN_WIRE_VERSION`], named in compatibility errors.
pub const MIN_SERVER_VERSION: &str = "4.2";
/// The newest wire version this driver knows: MongoDB 8.0.
pub const MAX_WIRE_VERSION: i32 = 25;

/// `maxBsonObjectSize` assumed when a hello reply omits it (16 MiB).
pub const DEFAULT_MAX_BSON_OBJECT_SIZE: i64 = 16 * 1024 * 1024;
/// `maxMessageSizeBytes` assumed when a hello reply omits it.
pub const DEFAULT_MAX_MESSAGE_SIZE_BYTES: i64 = 48_000_000;
/// `maxWriteBatchSize` assumed when a hello reply omits it.
pub const DEFAULT_MAX_WRITE_BATCH_SIZE: i64 = 100_000;

/// What kind of server a description is about (serialized by its variant's name, as the
/// official driver's).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
pub enum ServerType {
    /// A server that is not part of a replica set nor a sharded cluster.
    Standalone,
    /// A mongos router (`msg: "isdbgrid"`).
    Mongos,
    /// The writable member of a replica set.
    RsPrimary,
    /// A readable, non-writable member of a replica set.
    RsSecondary,
    /// A voting member that holds no data.
    RsArbiter,
    /// A member that is hidden, starting up, recovering or otherwise unusable for operations.
    RsOther,
    /// A member with no set name yet (`isreplicaset: true`): uninitialised or removed.
    RsGhost,
    /// A load balancer in front of mongos routers (`loadBalanced=true`).
    LoadBalancer,
    /// Not checked yet, or the last check failed.
    #[default]
    Unknown,
    /// Not checked yet, but another member reports it as primary. Asynchronous clients treat
    /// it exactly like [`ServerType::Unknown`]; it exists so the full type set can be named.
    PossiblePrimary,
}

impl ServerType {
    /// Whether the server holds data an operation can use: standalone, mongos, primary,
    /// secondary or load balancer. (Logical-session timeouts are computed over these.)
    pub fn is_data_bearing(self) -> bool {
        matches!(
            self,
            ServerType::Standalone
                | ServerType::Mongos
                | ServerType::RsPrimary
                | ServerType::RsSecondary
                | ServerType::LoadBalancer
        )
    }

    /// Whether a read may be sent to a server of this type (given a matching read preference).
    pub fn is_readable(self) -> bool {
        self.is_data_bearing()
    }

    /// Whether a write may be sent to a server of this type.
    pub fn is_writable(self) -> bool {
        matches!(
            self,
            ServerType::Standalone
                | ServerType::Mongos
                | ServerType::RsPrimary
                | ServerType::LoadBalancer
        )
    }

    /// Whether the server has answered a check (anything but Unknown and PossiblePrimary).
    pub fn is_known(self) -> bool {
        !matches!(self, ServerType::Unknown | ServerType::PossiblePrimary)
    }

    /// Whether the type is one of the replica-set member types (including ghosts).
    pub fn is_replica_set_member(self) -> bool {
        matches!(
            self,
            ServerType::RsPrimary
                | ServerType::RsSecondary
                | ServerType::RsArbiter
                | ServerType::RsOther
                | ServerType::RsGhost
        )
    }

    /// The name the specifications (and their JSON tests) use, e.g. `"RSPrimary"`.
    pub fn spec_name(self) -> &'static str {
        match self {
            ServerType::Standalone => "Standalone",
            ServerType::Mongos => "Mongos",
            ServerType::RsPrimary => "RSPrimary",
            ServerType::RsSecondary => "RSSecondary",
            ServerType::RsArbiter => "RSArbiter",
            ServerType::RsOther => "RSOther",
            ServerType::RsGhost => "RSGhost",
            ServerType::LoadBalancer => "LoadBalancer",
            ServerType::Unknown => "Unknown",
            ServerType::PossiblePrimary => "PossiblePrimary",
        }
    }
}

impl fmt::Display for ServerType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.spec_name())
    }
}

/// A server's `topologyVersion`: a process identity plus a counter the server bumps on every
/// topology change. Versions from different processes are not comparable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologyVersion {
    /// Identifies the server process; a restart changes it.
    pub process_id: ObjectId,
    /// Increases with each topology change within one process.
    pub counter: i64,
}

impl PartialOrd for TopologyVersion {
    /// Ordered by counter within one process; `None` across processes.
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        (self.process_id == other.process_id).then(|| self.counter.cmp(&other.counter))
    }
}

impl TopologyVersion {
    /// The SDAM comparison rule: is information carrying `incoming` older than information
    /// carrying `current`? Only when both are present, from the same process, and `incoming`'s
    /// counter is smaller; every other case counts the incoming information as more recent.
    pub fn is_older(incoming: Option<&TopologyVersion>, current: Option<&TopologyVersion>) -> bool {
        matches!((incoming, current), (Some(i), Some(c)) if i < c)
    }

    /// Is information carrying `incoming` no newer than `current` (older or equal)? This is
    /// the staleness rule for State Change Errors, where an equal version is already known.
    pub fn is_not_newer(
        incoming: Option<&TopologyVersion>,
        current: Option<&TopologyVersion>,
    ) -> bool {
        matches!((incoming, current), (Some(i), Some(c)) if i <= c)
    }
}

/// The client's view of one server, built from its latest hello reply or check failure.
///
/// An immutable value: a new check produces a new description. Fields are public so that
/// selection and tests can read (and build) them; constructors fill them as the SDAM
/// specification requires.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ServerDescription {
    /// The address the client connects to (not necessarily the server's `me`).
    pub address: ServerAddress,
    /// The server's type.
    pub server_type: ServerType,
    /// Why the last check or operation failed, when it did.
    pub error: Option<String>,
    /// The averaged round-trip time of hello; `None` while the server is Unknown.
    pub round_trip_time: Option<Duration>,
    /// The minimum round-trip time over recent samples; `None` while the server is Unknown.
    pub min_round_trip_time: Option<Duration>,
    /// When the server was last checked (the caller's monotonic clock); `None` = never.
    pub last_update_time: Option<Instant>,
    /// `lastWrite.lastWriteDate` of a replica-set member.
    pub last_write_date: Option<bson::DateTime>,
    /// `lastWrite.opTime` of a replica-set member (opaque).
    pub op_time: Option<bson::Bson>,
    /// The lowest wire version the server speaks.
    pub min_wire_version: i32,
    /// The highest wire version the server speaks.
    pub max_wire_version: i32,
    /// The address this member was configured with in the replica set, lower-cased.
    pub me: Option<ServerAddress>,
    /// The member's view of the set's electable and secondary members.
    pub hosts: BTreeSet<ServerAddress>,
    /// The member's view of the set's priority-zero members.
    pub passives: BTreeSet<ServerAddress>,
    /// The member's view of the set's arbiters.
    pub arbiters: BTreeSet<ServerAddress>,
    /// The member's tags.
    pub tags: TagSet,
    /// The replica set name the server reports.
    pub set_name: Option<String>,
    /// The replica set config version reported by the server.
    pub set_version: Option<i64>,
    /// The election id of a member that believes it is primary.
    pub election_id: Option<ObjectId>,
    /// Who this member thinks is primary.
    pub primary: Option<ServerAddress>,
    /// `logicalSessionTimeoutMinutes`, when sessions are supported.
    pub logical_session_timeout_minutes: Option<i64>,
    /// The server's topology version (4.4+).
    pub topology_version: Option<TopologyVersion>,
    /// Whether the server said `helloOk: true` (so `hello` may replace legacy hello).
    pub hello_ok: bool,
    /// Whether the server is a mongocryptd.
    pub iscryptd: bool,
    /// The compressors the server agreed to, in its order of preference.
    pub compressors: Vec<String>,
    /// The service id of a server behind a load balancer.
    pub service_id: Option<ObjectId>,
    /// The largest BSON document the server accepts.
    pub max_bson_object_size: i64,
    /// The largest wire message the server accepts.
    pub max_message_size_bytes: i64,
    /// The most write operations one batch may hold.
    pub max_write_batch_size: i64,
    /// The server-side id of the connection that ran hello.
    pub connection_id: Option<i64>,
}

impl ServerDescription {
    /// The description of a server that has not been checked, or whose check failed: type
    /// Unknown, no error, every other field at its default.
    pub fn unknown(address: ServerAddress) -> Self {
        ServerDescription {
            address,
            server_type: ServerType::Unknown,
            error: None,
            round_trip_time: None,
            min_round_trip_time: None,
            last_update_time: None,
            last_write_date: None,
            op_time: None,
            min_wire_version: 0,
            max_wire_version: 0,
            me: None,
            hosts: BTreeSet::new(),
            passives: BTreeSet::new(),
            arbiters: BTreeSet::new(),
            tags: TagSet::new(),
            set_name: None,
            set_version: None,
            election_id: None,
            primary: None,
            logical_session_timeout_minutes: None,
            topology_version: None,
            hello_ok: false,
            iscryptd: false,
            compressors: Vec::new(),
            service_id: None,
            max_bson_object_size: DEFAULT_MAX_BSON_OBJECT_SIZE,
            max_message_size_bytes: DEFAULT_MAX_MESSAGE_SIZE_BYTES,
            max_write_batch_size: DEFAULT_MAX_WRITE_BATCH_SIZE,
            connection_id: None,
        }
    }

    /// An Unknown description recording why the server is unusable: a failed check or a
    /// State Change Error (whose `topologyVersion`, if any, is kept so that older
    /// information cannot overwrite it).
    pub fn from_error(
        address: ServerAddress,
        error: impl Into<String>,
        topology_version: Option<TopologyVersion>,
    ) -> Self {
        let mut description = ServerDescription::unknown(address);
        description.error = Some(error.into());
        description.topology_version = topology_version;
        description
    }

    /// The description of a load balancer: in load-balanced mode the driver never checks the
    /// server, it simply treats the single seed as type LoadBalancer.
    pub fn load_balancer(address: ServerAddress) -> Self {
        let mut description = ServerDescription::unknown(address);
        description.server_type = ServerType::LoadBalancer;
        description
    }

    /// Every member address this server reports: hosts, passives and arbiters.
    pub fn all_members(&self) -> impl Iterator<Item = &ServerAddress> {
        self.hosts
            .iter()
            .chain(self.passives.iter())
            .chain(self.arbiters.iter())
    }

    /// Whether the server's wire range overlaps the driver's, or `Err` with the message the
    /// SDAM specification prescribes. Unknown servers are always compatible, and so are load
    /// balancers, which are never checked (the load-balancer specification).
    ///
    /// # Errors
    /// The compatibility error text when the ranges do not overlap.
    pub fn check_compatibility(&self) -> Result<(), String> {
        if !self.server_type.is_known() || self.server_type == ServerType::LoadBalancer {
            return Ok(());
        }
        if self.min_wire_version > MAX_WIRE_VERSION {
            return Err(format!(
                "Server at {} requires wire version {}, but this version of steadfast only \
                 supports up to {MAX_WIRE_VERSION}.",
                self.address, self.min_wire_version
            ));
        }
        if self.max_wire_version < MIN_WIRE_VERSION {
            return Err(format!(
                "Server at {} reports wire version {}, but this version of steadfast requires \
                 at least {MIN_WIRE_VERSION} (MongoDB {MIN_SERVER_VERSION}).",
                self.address, self.max_wire_version
            ));
        }
        Ok(())
    }

    /// SDAM "Server Description Equality": whether two descriptions agree on every field that
    /// decides whether a ServerDescriptionChangedEvent is published. Round-trip times, update
    /// times, lastWrite and the connection-level limits do not count.
    pub fn is_same_for_events(&self, other: &ServerDescription) -> bool {
        self.address == other.address
            && self.server_type == other.server_type
            && self.error == other.error
            && self.min_wire_version == other.min_wire_version
            && self.max_wire_version == other.max_wire_version
            && self.me == other.me
            && self.hosts == other.hosts
            && self.passives == other.passives
            && self.arbiters == other.arbiters
            && self.tags == other.tags
            && self.set_name == other.set_name
            && self.election_id == other.election_id
            && self.set_version == other.set_version
            && self.primary == other.primary
            && self.logical_session_timeout_minutes == other.logical_session_timeout_minutes
            && self.topology_version == other.topology_version
            && self.iscryptd == other.iscryptd
    }
}

/// Read accessors named as in the official driver's server information (its SDAM events and
/// selection predicates call these), over the public fields.
impl ServerDescription {
    /// The server's address.
    pub fn address(&self) -> &ServerAddress {
        &self.address
    }

    /// Its type (primary, secondary, mongos, ...).
    pub fn server_type(&self) -> ServerType {
        self.server_type
    }

    /// Its replica set tags; `None` when it has none.
    pub fn tags(&self) -> Option<&TagSet> {
        (!self.tags.is_empty()).then_some(&self.tags)
    }

    /// Its average round-trip time, once measured.
    pub fn average_round_trip_time(&self) -> Option<Duration> {
        self.round_trip_time
    }

    /// Its replica set's name, if it is a member of one.
    pub fn replica_set_name(&self) -> Option<&str> {
        self.set_name.as_deref()
    }

    /// Its replica set configuration version, if it reported one.
    pub fn replica_set_version(&self) -> Option<i64> {
        self.set_version
    }

    /// The highest wire version it speaks, once known.
    pub fn max_wire_version(&self) -> Option<i32> {
        self.server_type.is_known().then_some(self.max_wire_version)
    }

    /// The lowest wire version it speaks, once known.
    pub fn min_wire_version(&self) -> Option<i32> {
        self.server_type.is_known().then_some(self.min_wire_version)
    }

    /// The error that made it unknown, if one did.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }
}
