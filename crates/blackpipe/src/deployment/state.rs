//! The state a deployment's rooms share: the model and each member's settings under one lock
//! ([`State`]), the store, the random source, the users, and what lives and dies with one server
//! process ([`Process`]). The members read it to answer requests, the control commands change it,
//! and the effects room binds the ports and runs the timers behind it: what the control commands
//! ask of that room is [`Effects`], which it implements for [`Inner`].

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use bson::Document;
use rand::rngs::SmallRng;
use tokio::sync::{Notify, watch};

use super::backend::WriteTime;
use super::balanced::Balancers;
use super::capacity::{self, Capacity, CapacityChange, CapacityStats, MemberCapacity};
use super::control_error::ControlError;
use super::in_progress::InProgress;
use super::model::{MemberOptions, NodeIndex, Role, Topology, TopologyVersion};
use super::opcounters::OpCounters;
use super::replication::{MemberData, Replication};
use crate::failpoint::{FailPoints, Overload};
use crate::server::{Server, ServerConfig};

/// Locks a mutex, ignoring poisoning: every critical section here leaves the data consistent
/// before anything that could panic.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Request counters of one node, kept across restarts.
#[derive(Debug, Default)]
pub struct NodeCounters {
    hellos: AtomicU64,
    commands: AtomicU64,
    /// Woken after every request, so a test can await a count instead of polling it.
    arrived: Notify,
}

impl NodeCounters {
    /// Hello-family requests received (streamed exhaust replies are not requests).
    pub fn hellos(&self) -> u64 {
        self.hellos.load(Ordering::Relaxed)
    }

    /// All requests received.
    pub fn commands(&self) -> u64 {
        self.commands.load(Ordering::Relaxed)
    }

    /// Waits until `predicate` holds for these counters (checked now and after every request).
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future changes nothing.
    pub async fn wait_until(&self, predicate: impl Fn(&NodeCounters) -> bool) {
        loop {
            // Register before checking, so a request counted in between still wakes us.
            let notified = self.arrived.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if predicate(self) {
                return;
            }
            notified.await;
        }
    }

    pub(crate) fn count(&self, hello: bool) {
        self.commands.fetch_add(1, Ordering::Relaxed);
        if hello {
            self.hellos.fetch_add(1, Ordering::Relaxed);
        }
        self.arrived.notify_waiters();
    }
}

/// What lives and dies with one server process: its fail points, its counters, its start.
#[derive(Debug)]
pub(crate) struct Process {
    pub(crate) fail_points: Mutex<FailPoints>,
    /// On a router, the transactions it routed (a restart forgets them, as a mongos does).
    pub(crate) routed_transactions: Mutex<RoutedTransactions>,
    /// `serverStatus`'s `opcounters`.
    pub(crate) opcounters: OpCounters,
    /// When the process started (`serverStatus`'s uptime).
    pub(crate) started: Instant,
    /// `logComponentVerbosity` (and `logLevel`, its top `verbosity`) as `setParameter` set
    /// it: kept and reported; blackpipe's own logging is `tracing`'s.
    pub(crate) log_verbosity: Mutex<Document>,
    /// The operations running now (`currentOp`, `killOp`).
    pub(crate) in_progress: Arc<InProgress>,
}

impl Default for Process {
    fn default() -> Self {
        Self {
            fail_points: Mutex::default(),
            routed_transactions: Mutex::default(),
            opcounters: OpCounters::default(),
            started: Instant::now(),
            log_verbosity: Mutex::new(crate::deployment::log_verbosity::default_log_verbosity()),
            in_progress: Arc::default(),
        }
    }
}

/// The most transactions one router remembers having routed (the oldest are forgotten; a
/// commit of a forgotten one goes through recovery).
const MAX_ROUTED: usize = 100_000;

/// The transactions one router process routed, as `(lsid, txnNumber)` keys, oldest first.
#[derive(Debug, Default)]
pub(crate) struct RoutedTransactions {
    order: VecDeque<String>,
    keys: HashSet<String>,
}

impl RoutedTransactions {
    /// Records `key`, forgetting the oldest past [`MAX_ROUTED`].
    pub(crate) fn insert(&mut self, key: String) {
        if !self.keys.insert(key.clone()) {
            return;
        }
        self.order.push_back(key);
        while self.order.len() > MAX_ROUTED {
            if let Some(oldest) = self.order.pop_front() {
                self.keys.remove(&oldest);
            }
        }
    }

    /// Whether this router routed the transaction `key`.
    pub(crate) fn contains(&self, key: &str) -> bool {
        self.keys.contains(key)
    }
}

/// The runtime side of one node.
pub(crate) struct Slot {
    pub(crate) port: u16,
    pub(crate) version: Arc<watch::Sender<TopologyVersion>>,
    pub(crate) counters: Arc<NodeCounters>,
    pub(crate) server: Option<Server>,
    pub(crate) slow: Duration,
    pub(crate) command_time: Duration,
    pub(crate) overload: Option<Overload>,
    /// The member's capacity (admission control), its bucket and counters.
    pub(crate) capacity: MemberCapacity,
    /// The member's data: its store and replication progress (one shared by every node of a
    /// standalone or sharded deployment). Kept across kills and restarts: a restarted member
    /// keeps its data and catches up.
    pub(crate) data: Arc<MemberData>,
}

/// Everything guarded by the state lock. Held only for short, synchronous sections.
pub(crate) struct State {
    pub(crate) topology: Topology,
    pub(crate) slots: Vec<Slot>,
    pub(crate) auto_failover: bool,
    pub(crate) election_delay: Duration,
    pub(crate) replication_lag: Duration,
}

/// The shared heart of a deployment.
pub(crate) struct Inner {
    pub(crate) state: Mutex<State>,
    /// The members' op log clock, commit point, rollbacks and replication wake-ups.
    pub(crate) replication: Replication,
    pub(crate) rng: Mutex<SmallRng>,
    /// Serialises control operations (kill, restart, reconfig...) that bind or close ports.
    pub(crate) control: tokio::sync::Mutex<()>,
    /// Bumped after every change, for [`Inner::wait_until`].
    pub(crate) changes: watch::Sender<u64>,
    /// The optime reported before any write (the set's initiation).
    pub(crate) baseline: WriteTime,
    /// Nodes were given consecutive ports (members added later continue the sequence).
    pub(crate) fixed_ports: bool,
    /// The name nodes report themselves under (`127.0.0.1` or `localhost`).
    pub(crate) host_name: String,
    /// Listener settings shared by every node (bind address, limits); each node its own port.
    pub(crate) listener: ServerConfig,
    /// The deployment's users, as SCRAM credentials.
    pub(crate) users: crate::auth::Users,
    /// Connections must authenticate before running most commands.
    pub(crate) auth_required: bool,
    /// The load balancers in front of the routers, in load-balanced mode.
    pub(crate) load_balancer: OnceLock<Arc<dyn Balancers>>,
    /// The MONGODB-OIDC test issuer, when the deployment accepts the mechanism.
    pub(crate) oidc: Option<Arc<crate::auth::OidcIssuer>>,
    /// The runtime the deployment started on: its timers (elections, replication, the TTL
    /// monitor) run there, so its synchronous controls work from any thread.
    pub(crate) runtime: tokio::runtime::Handle,
}

/// What the control commands (and the [`Deployment`](crate::deployment::Deployment) handle) ask
/// of the effects room, which implements it for [`Inner`]: model changes that publish every
/// node's `topologyVersion` and may schedule an automatic election, and the operations that
/// bind or close ports.
pub(crate) trait Effects {
    /// Steps the primary (or `index`) down; it may not be re-elected automatically for
    /// `freeze_for`.
    fn step_down(
        self: &Arc<Self>,
        index: Option<NodeIndex>,
        freeze_for: Duration,
        force: bool,
    ) -> Result<(), ControlError>;

    /// Elects `index` now.
    fn elect(self: &Arc<Self>, index: NodeIndex) -> Result<(), ControlError>;

    /// Elects `index` after `delay`, on a timer of its own.
    fn elect_later(self: &Arc<Self>, index: NodeIndex, delay: Duration);

    /// Freezes (or with zero, unfreezes) `index`.
    fn freeze(self: &Arc<Self>, index: NodeIndex, duration: Duration) -> Result<(), ControlError>;

    /// Partitions `index`.
    fn partition(self: &Arc<Self>, index: NodeIndex) -> Result<(), ControlError>;

    /// Cuts the links between `index` and each of `from`; clients still reach every node.
    fn cut(self: &Arc<Self>, index: NodeIndex, from: &[NodeIndex]) -> Result<(), ControlError>;

    /// Ends the partition of `index` and restores its cut links.
    fn heal(self: &Arc<Self>, index: NodeIndex) -> Result<(), ControlError>;

    /// Turns automatic elections on or off; turning them on in a set without a primary
    /// schedules one.
    fn set_auto_failover(self: &Arc<Self>, enabled: bool, election_delay: Option<Duration>);

    /// Adds a member on a new port; returns its index and host.
    fn add_member(
        self: &Arc<Self>,
        options: MemberOptions,
    ) -> impl Future<Output = Result<(NodeIndex, String), ControlError>> + Send;

    /// Kills node `index`: the model first (so nobody elects it), then the listener and every
    /// open connection.
    fn kill(
        self: &Arc<Self>,
        index: NodeIndex,
    ) -> impl Future<Output = Result<(), ControlError>> + Send;

    /// Restarts a killed node as a new process on its port.
    fn restart(
        self: &Arc<Self>,
        index: NodeIndex,
    ) -> impl Future<Output = Result<(), ControlError>> + Send;

    /// Lets node `index` answer `ShutdownInProgress` for `quiesce`, then kills it.
    fn shutdown(
        self: &Arc<Self>,
        index: NodeIndex,
        quiesce: Duration,
    ) -> impl Future<Output = Result<(), ControlError>> + Send;

    /// Installs a new member list (replSetReconfig, `addMember`): binds the new members'
    /// ports first, then installs the config.
    fn reconfigure(
        self: &Arc<Self>,
        members: Vec<(String, MemberOptions)>,
        version: Option<i64>,
    ) -> impl Future<Output = Result<(), ControlError>> + Send;
}

impl Inner {
    /// Runs `f` on the slot of member `index`, under the state lock.
    ///
    /// # Errors
    /// [`ControlError::UnknownMember`] when there is no member `index`.
    pub(crate) fn with_slot<R>(
        &self,
        index: NodeIndex,
        f: impl FnOnce(&mut Slot) -> R,
    ) -> Result<R, ControlError> {
        let mut state = lock(&self.state);
        let slot = state
            .slots
            .get_mut(index)
            .ok_or_else(|| ControlError::UnknownMember(index.to_string()))?;
        Ok(f(slot))
    }

    /// A snapshot of the model.
    pub(crate) fn topology(&self) -> Topology {
        lock(&self.state).topology.clone()
    }

    /// Resolves once `predicate` holds for the model (checked now and after every change).
    pub(crate) async fn wait_until(&self, mut predicate: impl FnMut(&Topology) -> bool) {
        let mut changes = self.changes.subscribe();
        loop {
            if predicate(&lock(&self.state).topology) {
                return;
            }
            // The sender lives in `self`, so this cannot fail while we hold `&self`.
            if changes.changed().await.is_err() {
                return;
            }
        }
    }
    /// Delays every reply of `index` by `delay` (zero restores full speed).
    pub(crate) fn slow(&self, index: NodeIndex, delay: Duration) -> Result<(), ControlError> {
        self.with_slot(index, |slot| slot.slow = delay)
    }

    /// Makes each command the store of `index` runs take `delay` (zero restores).
    pub(crate) fn slow_commands(
        &self,
        index: NodeIndex,
        delay: Duration,
    ) -> Result<(), ControlError> {
        self.with_slot(index, |slot| slot.command_time = delay)
    }

    /// Makes `index` reject commands as `overload` says (`None` stops it).
    pub(crate) fn overload(
        &self,
        index: NodeIndex,
        overload: Option<Overload>,
    ) -> Result<(), ControlError> {
        self.with_slot(index, |slot| {
            slot.overload = overload.filter(Overload::is_active)
        })
    }

    /// Installs or removes the capacity of `index`.
    pub(crate) fn set_capacity(
        &self,
        index: NodeIndex,
        change: CapacityChange,
    ) -> Result<(), ControlError> {
        let now = tokio::time::Instant::now().into_std();
        self.with_slot(index, |slot| slot.capacity.configure(change, now))
    }

    /// The capacity of `index` and its counters.
    pub(crate) fn capacity_stats(
        &self,
        index: NodeIndex,
    ) -> Result<(Option<Capacity>, CapacityStats), ControlError> {
        self.with_slot(index, |slot| {
            (slot.capacity.limits(), slot.capacity.stats())
        })
    }

    /// The `{blackpipe: "capacityStats"}` reply for `members`.
    pub(crate) fn capacity_report(&self, members: &[NodeIndex]) -> Result<Document, ControlError> {
        let mut entries = Vec::with_capacity(members.len());
        for &index in members {
            let (capacity, stats) = self.capacity_stats(index)?;
            let host = lock(&self.state)
                .topology
                .node(index)
                .map(|node| node.host().to_owned())
                .unwrap_or_default();
            entries.push((index, host, capacity, stats));
        }
        Ok(capacity::stats_reply(&entries))
    }

    /// Members that hold data (every node but arbiters and removed members).
    pub(crate) fn data_bearing_members(&self) -> Vec<NodeIndex> {
        let state = lock(&self.state);
        state
            .topology
            .nodes()
            .iter()
            .enumerate()
            .filter(|(_, node)| !matches!(node.role(), Role::Arbiter | Role::Removed))
            .map(|(index, _)| index)
            .collect()
    }

    /// Sets how far behind the primary secondaries apply the op log: every secondary's (and
    /// the default of members added later), or with `member` that member's alone.
    pub(crate) fn set_replication_lag(
        &self,
        member: Option<NodeIndex>,
        lag: Duration,
    ) -> Result<(), ControlError> {
        match member {
            None => {
                let mut state = lock(&self.state);
                state.replication_lag = lag;
                for slot in &state.slots {
                    slot.data.set_lag(None);
                }
            }
            Some(index) => {
                self.member_data(index)
                    .ok_or_else(|| ControlError::UnknownMember(index.to_string()))?
                    .set_lag(Some(lag));
            }
        }
        // Entries in flight are re-timed now: a shorter lag may let them apply at once.
        self.replicate();
        self.replication.timer.notify_one();
        Ok(())
    }

    /// Sets mongod's `transactionLifetimeLimitSeconds` on every member's store.
    pub(crate) fn set_transaction_lifetime(&self, lifetime: Duration) {
        let state = lock(&self.state);
        for slot in &state.slots {
            slot.data.store().set_transaction_lifetime(lifetime);
        }
    }

    /// Pauses (or resumes) applying the op log on `member`, or on every member.
    pub(crate) fn set_replication_paused(
        &self,
        member: Option<NodeIndex>,
        paused: bool,
    ) -> Result<(), ControlError> {
        let targets: Vec<Arc<MemberData>> = match member {
            Some(index) => vec![
                self.member_data(index)
                    .ok_or_else(|| ControlError::UnknownMember(index.to_string()))?,
            ],
            None => lock(&self.state)
                .slots
                .iter()
                .map(|slot| Arc::clone(&slot.data))
                .collect(),
        };
        for data in targets {
            data.set_paused(paused);
        }
        if !paused {
            self.replicate();
        }
        Ok(())
    }

    /// The members of the current config, for building a new one.
    pub(crate) fn current_members(&self) -> Vec<(String, MemberOptions)> {
        let state = lock(&self.state);
        state
            .topology
            .nodes()
            .iter()
            .filter(|node| node.role() != Role::Removed)
            .map(|node| (node.host().to_owned(), node.options().clone()))
            .collect()
    }

    /// Takes router `backend` out of the load balancers (`down`) or puts it back, for the Rust
    /// API and the `lbBackend` command alike.
    ///
    /// # Errors
    /// `BadArgument` without a load balancer; `UnknownMember` for an unknown router.
    pub(crate) fn set_backend_down(
        &self,
        backend: NodeIndex,
        down: bool,
    ) -> Result<usize, ControlError> {
        self.load_balancer
            .get()
            .ok_or_else(|| {
                ControlError::BadArgument("this deployment has no load balancer".into())
            })?
            .set_down(backend, down)
    }
}
