//! The pure model of a deployment: nodes, roles, terms, `setVersion` and each node's
//! `topologyVersion`.
//!
//! No clock, no I/O: callers pass `now` and new process ids. Every change to what any node would
//! say in its hello reply increments every node's `topologyVersion.counter`, which is what wakes
//! awaitable hellos.

mod votes;

use std::time::{Duration, Instant};

use bson::Timestamp;
use bson::oid::ObjectId;

use super::control_error::ControlError;
pub use super::member_options::MemberOptions;

/// What a deployment is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeploymentKind {
    /// One mongod without replication.
    Standalone,
    /// A replica set.
    ReplicaSet,
    /// mongos-like routers over one shared store.
    Sharded,
}

/// The role a node plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A standalone mongod.
    Standalone,
    /// A mongos router.
    Router,
    /// The replica set primary.
    Primary,
    /// A replica set secondary.
    Secondary,
    /// A replica set arbiter.
    Arbiter,
    /// A former member that a reconfiguration removed.
    Removed,
}

/// Whether a node's process is reachable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// Running and answering.
    Up,
    /// Killed: its port refuses connections.
    Down,
    /// Partitioned: connections are accepted but never answered.
    Partitioned,
    /// Shutting down: commands fail with `ShutdownInProgress` until it goes down.
    ShuttingDown,
}

/// A `topologyVersion`: the process id and its change counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TopologyVersion {
    /// Changes on every restart.
    pub process_id: ObjectId,
    /// Increases on every significant change; starts at 0 in each process.
    pub counter: i64,
}

/// One node (a standalone, a replica set member or a router).
#[derive(Debug, Clone)]
pub struct Node {
    host: String,
    options: MemberOptions,
    role: Role,
    health: Health,
    version: TopologyVersion,
    frozen_until: Option<Instant>,
    /// The newest op log entry the member has applied (what it votes with).
    applied: Timestamp,
}

impl Node {
    fn new(host: String, options: MemberOptions, role: Role, process_id: ObjectId) -> Self {
        Self {
            host,
            options,
            role,
            health: Health::Up,
            version: TopologyVersion {
                process_id,
                counter: 0,
            },
            frozen_until: None,
            applied: Timestamp {
                time: 0,
                increment: 0,
            },
        }
    }

    /// `host:port`.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The member configuration (defaults for standalones and routers).
    pub fn options(&self) -> &MemberOptions {
        &self.options
    }

    /// The current role.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Whether the process is reachable.
    pub fn health(&self) -> Health {
        self.health
    }

    /// The current `topologyVersion`.
    pub fn topology_version(&self) -> TopologyVersion {
        self.version
    }

    /// The timestamp of the newest op log entry the member has applied, as the model last
    /// heard it (see [`Topology::set_applied`]).
    pub fn applied(&self) -> Timestamp {
        self.applied
    }

    /// True while `replSetFreeze` or a stepdown keeps it from running for election.
    pub fn is_frozen(&self, now: Instant) -> bool {
        self.frozen_until.is_some_and(|until| until > now)
    }

    fn is_reachable(&self) -> bool {
        self.health == Health::Up
    }

    fn is_voter(&self) -> bool {
        self.role != Role::Removed && self.options.votes > 0
    }

    fn bump(&mut self) {
        self.version.counter += 1;
    }
}

/// The state of a whole deployment.
#[derive(Debug, Clone)]
pub struct Topology {
    kind: DeploymentKind,
    set_name: String,
    set_version: i64,
    term: i64,
    primary: Option<usize>,
    nodes: Vec<Node>,
    /// Links cut by `partition ... from`, as `(lower index, higher index)`.
    cut_links: std::collections::BTreeSet<(NodeIndex, NodeIndex)>,
}

/// A node's index in [`Topology::nodes`].
pub type NodeIndex = usize;

impl Topology {
    /// A standalone mongod at `host`.
    pub fn standalone(host: impl Into<String>, process_id: ObjectId) -> Self {
        Self {
            kind: DeploymentKind::Standalone,
            set_name: String::new(),
            set_version: 0,
            term: 0,
            primary: None,
            cut_links: Default::default(),
            nodes: vec![Node::new(
                host.into(),
                MemberOptions::default(),
                Role::Standalone,
                process_id,
            )],
        }
    }

    /// Routers at `hosts`, each with its process id.
    pub fn sharded(routers: Vec<(String, ObjectId)>) -> Self {
        Self {
            kind: DeploymentKind::Sharded,
            set_name: String::new(),
            set_version: 0,
            term: 0,
            primary: None,
            cut_links: Default::default(),
            nodes: routers
                .into_iter()
                .map(|(host, pid)| Node::new(host, MemberOptions::default(), Role::Router, pid))
                .collect(),
        }
    }

    /// A freshly initiated replica set (`setVersion` 1, term 1) whose primary is the
    /// highest-priority electable member (the first one on ties).
    ///
    /// # Errors
    ///
    /// [`ControlError::InvalidConfig`] for an empty set, duplicate hosts, invalid member options
    /// or no electable member.
    pub fn replica_set(
        set_name: impl Into<String>,
        members: Vec<(String, MemberOptions, ObjectId)>,
    ) -> Result<Self, ControlError> {
        check_member_counts(members.iter().map(|(_, options, _)| options))
            .map_err(ControlError::InvalidConfig)?;
        validate_members(members.iter().map(|(host, options, _)| (host, options)))?;
        let nodes: Vec<Node> = members
            .into_iter()
            .map(|(host, options, pid)| {
                let role = if options.arbiter_only {
                    Role::Arbiter
                } else {
                    Role::Secondary
                };
                Node::new(host, options, role, pid)
            })
            .collect();
        let mut topology = Self {
            kind: DeploymentKind::ReplicaSet,
            set_name: set_name.into(),
            set_version: 1,
            term: 0,
            primary: None,
            nodes,
            cut_links: Default::default(),
        };
        let first = topology
            .best_winner(None)
            .ok_or_else(|| ControlError::InvalidConfig("no electable member".into()))?;
        topology.install_primary(first);
        Ok(topology)
    }

    /// What this deployment is.
    pub fn kind(&self) -> DeploymentKind {
        self.kind
    }

    /// The replica set name (empty for other kinds).
    pub fn set_name(&self) -> &str {
        &self.set_name
    }

    /// The config version.
    pub fn set_version(&self) -> i64 {
        self.set_version
    }

    /// The election term (0 before any election).
    pub fn term(&self) -> i64 {
        self.term
    }

    /// The `electionId` of the current term: `7fffffff` followed by the term, big-endian, as
    /// mongod builds it.
    pub fn election_id(&self) -> ObjectId {
        let mut bytes = [0u8; 12];
        bytes[..4].copy_from_slice(&[0x7f, 0xff, 0xff, 0xff]);
        bytes[4..].copy_from_slice(&self.term.to_be_bytes());
        ObjectId::from_bytes(bytes)
    }

    /// The primary's index, if there is one.
    pub fn primary(&self) -> Option<NodeIndex> {
        self.primary
    }

    /// Every node.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// One node.
    pub fn node(&self, index: NodeIndex) -> Option<&Node> {
        self.nodes.get(index)
    }

    /// The index of the node at `host`.
    pub fn index_of(&self, host: &str) -> Option<NodeIndex> {
        self.nodes.iter().position(|node| node.host == host)
    }

    /// Can this node accept writes right now?
    pub fn is_writable(&self, index: NodeIndex) -> bool {
        self.nodes.get(index).is_some_and(|node| {
            node.health == Health::Up
                && matches!(node.role, Role::Standalone | Role::Router | Role::Primary)
        })
    }

    fn node_mut(&mut self, index: NodeIndex) -> Result<&mut Node, ControlError> {
        self.nodes
            .get_mut(index)
            .ok_or(ControlError::UnknownMember(index.to_string()))
    }

    fn require_replica_set(&self) -> Result<(), ControlError> {
        if self.kind == DeploymentKind::ReplicaSet {
            Ok(())
        } else {
            Err(ControlError::NotReplicaSet)
        }
    }

    fn bump_all(&mut self) {
        for node in &mut self.nodes {
            node.bump();
        }
    }

    fn reachable_majority(&self) -> bool {
        let voters = self.nodes.iter().filter(|node| node.is_voter()).count();
        let reachable = self
            .nodes
            .iter()
            .filter(|node| node.is_voter() && node.is_reachable())
            .count();
        reachable > voters / 2
    }

    fn install_primary(&mut self, index: NodeIndex) {
        if let Some(old) = self.primary.take() {
            self.nodes[old].role = Role::Secondary;
        }
        self.term += 1;
        self.primary = Some(index);
        self.nodes[index].role = Role::Primary;
        self.nodes[index].frozen_until = None;
    }

    fn demote_primary(&mut self) {
        if let Some(old) = self.primary.take() {
            self.nodes[old].role = Role::Secondary;
        }
    }

    /// A primary that can no longer see a majority of voters steps down (mongod does so after
    /// its election timeout; the model does it at once).
    fn enforce_majority(&mut self) {
        if self.primary.is_some() && !self.reachable_majority() {
            self.demote_primary();
        }
    }

    /// The member an automatic election would choose now (see [`Topology::can_win`]: the
    /// newest op log among those a majority would vote for, then priority; not frozen), if the
    /// set has no primary or its primary no longer reaches a majority over uncut links.
    pub fn election_candidate(&self, now: Instant) -> Option<NodeIndex> {
        if self.kind != DeploymentKind::ReplicaSet || self.primary_sees_majority() {
            return None;
        }
        self.best_winner(Some(now))
            .filter(|&candidate| Some(candidate) != self.primary)
    }

    /// `replSetStepDown`: the primary becomes a secondary and may not run for election for
    /// `freeze_for`.
    ///
    /// # Errors
    ///
    /// `NotWritablePrimary` if `index` is not primary; `ExceededTimeLimit` if no electable
    /// secondary is reachable and `force` is false.
    pub fn step_down(
        &mut self,
        index: NodeIndex,
        now: Instant,
        freeze_for: Duration,
        force: bool,
    ) -> Result<(), ControlError> {
        self.require_replica_set()?;
        self.node_mut(index)?;
        if self.primary != Some(index) {
            return Err(ControlError::NotPrimary);
        }
        let has_successor = self
            .nodes
            .iter()
            .enumerate()
            .any(|(i, node)| i != index && node.is_reachable() && node.options.is_electable());
        if !force && !has_successor {
            return Err(ControlError::NoElectableSecondary);
        }
        // Computed before demoting: a period too long to represent must change nothing.
        let frozen_until = deadline(now, freeze_for)?;
        self.demote_primary();
        self.nodes[index].frozen_until = Some(frozen_until);
        self.bump_all();
        Ok(())
    }

    /// Makes `index` primary in a new term (the old primary, if any, becomes a secondary).
    /// Explicit elections ignore `replSetFreeze`; automatic ones respect it.
    ///
    /// # Errors
    ///
    /// If the member is not electable (arbiter, priority 0, hidden, removed, unreachable) or a
    /// majority of voters is unreachable.
    pub fn elect(&mut self, index: NodeIndex) -> Result<(), ControlError> {
        self.require_replica_set()?;
        let node = self.node_mut(index)?;
        if node.role == Role::Primary {
            return Ok(());
        }
        if !node.options.is_electable() || node.role != Role::Secondary {
            return Err(ControlError::NotElectable(node.host.clone()));
        }
        if !node.is_reachable() {
            return Err(ControlError::Unreachable(node.host.clone()));
        }
        if !self.reachable_majority() {
            return Err(ControlError::NoMajority);
        }
        if !self.can_win(index) {
            return Err(ControlError::ElectionLost(self.nodes[index].host.clone()));
        }
        self.install_primary(index);
        self.bump_all();
        Ok(())
    }

    /// `replSetFreeze`: keep a secondary from running for election until `now + duration`
    /// (a zero duration unfreezes). Not visible in hello, so no topology change.
    ///
    /// # Errors
    ///
    /// `NotSecondary` on the primary.
    pub fn freeze(
        &mut self,
        index: NodeIndex,
        now: Instant,
        duration: Duration,
    ) -> Result<(), ControlError> {
        self.require_replica_set()?;
        let node = self.node_mut(index)?;
        if node.role == Role::Primary {
            return Err(ControlError::FreezePrimary);
        }
        let frozen_until = if duration.is_zero() {
            None
        } else {
            Some(deadline(now, duration)?)
        };
        node.frozen_until = frozen_until;
        Ok(())
    }

    /// Kills a node: it refuses connections; a primary loses its role.
    ///
    /// # Errors
    ///
    /// If `index` is unknown.
    pub fn kill(&mut self, index: NodeIndex) -> Result<(), ControlError> {
        self.set_health(index, Health::Down)
    }

    /// Partitions a node: it accepts connections and never answers; the others see it as
    /// down, so a primary loses its role.
    ///
    /// # Errors
    ///
    /// If `index` is unknown.
    pub fn partition(&mut self, index: NodeIndex) -> Result<(), ControlError> {
        self.set_health(index, Health::Partitioned)
    }

    /// Starts shutting a node down: it answers `ShutdownInProgress`; a primary loses its role.
    ///
    /// # Errors
    ///
    /// If `index` is unknown.
    pub fn begin_shutdown(&mut self, index: NodeIndex) -> Result<(), ControlError> {
        self.set_health(index, Health::ShuttingDown)
    }

    /// Ends a partition: the node answers again, as a secondary if it was primary, and every
    /// link `partition ... from` cut to it is restored.
    ///
    /// # Errors
    ///
    /// If `index` is unknown or the node is down rather than partitioned.
    pub fn heal(&mut self, index: NodeIndex) -> Result<(), ControlError> {
        let node = self.node_mut(index)?;
        match node.health {
            Health::Partitioned => {
                self.restore_links(index);
                self.set_health(index, Health::Up)
            }
            Health::Up => {
                if self.restore_links(index) {
                    self.bump_all();
                }
                Ok(())
            }
            Health::Down | Health::ShuttingDown => {
                Err(ControlError::Unreachable(node.host.clone()))
            }
        }
    }

    fn set_health(&mut self, index: NodeIndex, health: Health) -> Result<(), ControlError> {
        let node = self.node_mut(index)?;
        if node.health == health {
            return Ok(());
        }
        node.health = health;
        if health != Health::Up && self.primary == Some(index) {
            self.demote_primary();
        }
        self.enforce_majority();
        self.bump_all();
        Ok(())
    }

    /// Restarts a node as a new process: new `processId`, counter 0, a secondary (or arbiter)
    /// that must be elected to become primary again.
    ///
    /// # Errors
    ///
    /// If `index` is unknown.
    pub fn restart(&mut self, index: NodeIndex, process_id: ObjectId) -> Result<(), ControlError> {
        let kind = self.kind;
        if self.primary == Some(index) {
            self.demote_primary();
        }
        let node = self.node_mut(index)?;
        node.health = Health::Up;
        node.frozen_until = None;
        if kind == DeploymentKind::ReplicaSet && node.role != Role::Removed {
            node.role = if node.options.arbiter_only {
                Role::Arbiter
            } else {
                Role::Secondary
            };
        }
        self.bump_all();
        // The new process starts counting from zero.
        let node = self.node_mut(index)?;
        node.version = TopologyVersion {
            process_id,
            counter: 0,
        };
        Ok(())
    }

    /// `replSetReconfig`: installs a new member list. Members are matched by host; new hosts
    /// are added as secondaries (or arbiters) with the process ids `new_process_id` gives;
    /// hosts left out become [`Role::Removed`]. A primary that becomes unelectable or is
    /// removed steps down. `version`, if given, must exceed the current `setVersion`.
    /// Returns the indexes of the added nodes.
    ///
    /// # Errors
    ///
    /// `InvalidConfig` for invalid members; `NewConfigIncompatible` for a version that does not
    /// increase.
    pub fn reconfigure(
        &mut self,
        members: Vec<(String, MemberOptions)>,
        version: Option<i64>,
        mut new_process_id: impl FnMut() -> ObjectId,
    ) -> Result<Vec<NodeIndex>, ControlError> {
        self.require_replica_set()?;
        check_member_counts(members.iter().map(|(_, options)| options))
            .map_err(ControlError::NewConfigIncompatible)?;
        validate_members(members.iter().map(|(host, options)| (host, options)))?;
        let new_hosts = members
            .iter()
            .filter(|(host, _)| self.index_of(host).is_none())
            .count();
        if self.nodes.len().saturating_add(new_hosts) > MAX_NODE_SLOTS {
            return Err(ControlError::NewConfigIncompatible(format!(
                "blackpipe keeps at most {MAX_NODE_SLOTS} members, removed ones included"
            )));
        }
        // Checked before anything changes: a client may have set the version to i64::MAX.
        let next_version = match version {
            Some(version) => version,
            None => self.set_version.checked_add(1).ok_or_else(|| {
                ControlError::NewConfigIncompatible(format!(
                    "the config version {} cannot be incremented",
                    self.set_version
                ))
            })?,
        };
        if let Some(version) = version {
            if version <= self.set_version {
                return Err(ControlError::NewConfigIncompatible(format!(
                    "the new config version {version} must be greater than the current \
                     version {}",
                    self.set_version
                )));
            }
        }
        let mut added = Vec::new();
        let mut listed = vec![false; self.nodes.len()];
        for (host, options) in members {
            let role_for_options = if options.arbiter_only {
                Role::Arbiter
            } else {
                Role::Secondary
            };
            match self.index_of(&host) {
                Some(index) => {
                    listed[index] = true;
                    let node = &mut self.nodes[index];
                    if node.role == Role::Removed
                        || node.options.arbiter_only != options.arbiter_only
                    {
                        node.role = role_for_options;
                    }
                    node.options = options;
                }
                None => {
                    added.push(self.nodes.len());
                    self.nodes
                        .push(Node::new(host, options, role_for_options, new_process_id()));
                }
            }
        }
        for (index, was_listed) in listed.into_iter().enumerate() {
            if !was_listed {
                self.nodes[index].role = Role::Removed;
            }
        }
        if let Some(primary) = self.primary {
            let node = &self.nodes[primary];
            if node.role == Role::Removed || !node.options.is_electable() {
                let removed = node.role == Role::Removed;
                self.primary = None;
                if !removed {
                    self.nodes[primary].role = Role::Secondary;
                }
            }
        }
        self.enforce_majority();
        self.set_version = next_version;
        self.bump_all();
        Ok(added)
    }
}

/// The most members a replica set config may list, as in mongod.
pub const MAX_MEMBERS: usize = 50;

/// The most voting members a replica set config may list, as in mongod.
pub const MAX_VOTING_MEMBERS: usize = 7;

/// The most node slots a deployment keeps, removed members included (a removed member keeps
/// its slot so that re-adding its host finds it): bounds memory and listeners under endless
/// add/remove reconfigs.
pub const MAX_NODE_SLOTS: usize = 4 * MAX_MEMBERS;

/// `now + duration`, or `BadArgument` when that instant cannot be represented.
fn deadline(now: Instant, duration: Duration) -> Result<Instant, ControlError> {
    now.checked_add(duration)
        .ok_or_else(|| ControlError::BadArgument(format!("{duration:?} is too long")))
}

/// mongod's limits on a config's size: at most [`MAX_MEMBERS`] members, of which at most
/// [`MAX_VOTING_MEMBERS`] vote. Returns the message mongod's limit error carries.
fn check_member_counts<'a>(members: impl Iterator<Item = &'a MemberOptions>) -> Result<(), String> {
    let (count, voters) = members.fold((0usize, 0usize), |(count, voters), options| {
        (count + 1, voters + usize::from(options.votes > 0))
    });
    if count > MAX_MEMBERS {
        return Err(format!(
            "Replica set configuration contains {count} members, but must have at least 1 and \
             no more than {MAX_MEMBERS}"
        ));
    }
    if voters > MAX_VOTING_MEMBERS {
        return Err(format!(
            "Replica set configuration contains {voters} voting members, but must be at least \
             1 and no more than {MAX_VOTING_MEMBERS}"
        ));
    }
    Ok(())
}

fn validate_members<'a>(
    members: impl Iterator<Item = (&'a String, &'a MemberOptions)>,
) -> Result<(), ControlError> {
    let mut seen: Vec<&str> = Vec::new();
    for (host, options) in members {
        if seen.contains(&host.as_str()) {
            return Err(ControlError::InvalidConfig(format!(
                "duplicate host {host}"
            )));
        }
        options.validate(host)?;
        seen.push(host);
    }
    if seen.is_empty() {
        return Err(ControlError::InvalidConfig(
            "a replica set needs at least one member".into(),
        ));
    }
    Ok(())
}
