//! [`Deployment`]: the Rust handle to a running simulated deployment, and
//! [`serve_forever`] for the `blackpipe` binary.

use std::sync::Arc;
use std::time::Duration;

use bson::oid::ObjectId;

use super::load_balancer::{self, Balancer};
use crate::deployment::balanced::Balancers;
use crate::deployment::capacity::{Capacity, CapacityChange, CapacityStats};
use crate::deployment::config::DeploymentConfig;
use crate::deployment::control_error::ControlError;
use crate::deployment::model::{DeploymentKind, MemberOptions, NodeIndex, Topology};
use crate::deployment::state::{Effects, Inner, NodeCounters, lock};
use crate::failpoint::Overload;
use blackpipe_store::{Store, StoreOptions};

/// A running standalone, replica set or sharded front end. Every node listens on its own
/// 127.0.0.1 port. Dropping the handle stops every node.
pub struct Deployment {
    pub(super) inner: Arc<Inner>,
    /// The load balancers in front of the routers, in load-balanced mode.
    pub(super) balancer: Option<Arc<Balancer>>,
}

impl std::fmt::Debug for Deployment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deployment")
            .field("uri", &self.uri())
            .finish_non_exhaustive()
    }
}

impl Deployment {
    /// Starts the nodes `config` describes over a fresh, empty [`Store`]. Must run within a
    /// tokio runtime.
    ///
    /// # Errors
    ///
    /// [`ControlError::Listen`] if a port cannot be bound; [`ControlError::InvalidConfig`] for
    /// an invalid replica set configuration.
    pub async fn start(config: DeploymentConfig) -> Result<Self, ControlError> {
        let mut options = StoreOptions::default();
        if let Some(seed) = config.seed {
            options = options.with_seed(seed);
        }
        Self::start_with_store(config, Arc::new(Store::new(options))).await
    }

    /// Starts the nodes `config` describes, serving `store` (which may already hold data). A
    /// standalone and a sharded deployment's routers serve `store` itself; in a replica set
    /// every data-bearing member starts from its own copy of it (see
    /// [`Deployment::store`] and [`Deployment::member_store`]).
    ///
    /// # Errors
    ///
    /// As [`Self::start`].
    pub async fn start_with_store(
        config: DeploymentConfig,
        store: Arc<Store>,
    ) -> Result<Self, ControlError> {
        load_balancer::validate(&config)?;
        let inner = Inner::start(&config, store).await?;
        // The handle exists before the balancers bind, so that a failure stops the nodes.
        let mut deployment = Self {
            inner,
            balancer: None,
        };
        deployment.balancer = load_balancer::start(&deployment.inner, &config).await?;
        Ok(deployment)
    }

    /// The MONGODB-OIDC test issuer (to mint tokens or advance its clock), when the
    /// deployment was configured with one.
    pub fn oidc_issuer(&self) -> Option<Arc<crate::auth::OidcIssuer>> {
        self.inner.oidc.clone()
    }

    /// What this deployment is.
    pub fn kind(&self) -> DeploymentKind {
        lock(&self.inner.state).topology.kind()
    }

    /// The `host:port` of every node, in configuration order (removed members included).
    pub fn hosts(&self) -> Vec<String> {
        lock(&self.inner.state)
            .topology
            .nodes()
            .iter()
            .map(|node| node.host().to_owned())
            .collect()
    }

    /// The `host:port` of node `index`.
    pub fn host(&self, index: NodeIndex) -> Option<String> {
        lock(&self.inner.state)
            .topology
            .node(index)
            .map(|node| node.host().to_owned())
    }

    /// A connection string naming every node (`replicaSet=<name>` for a replica set,
    /// `directConnection=true` for a standalone).
    pub fn uri(&self) -> String {
        let state = lock(&self.inner.state);
        let hosts: Vec<&str> = state
            .topology
            .nodes()
            .iter()
            .map(|node| node.host())
            .collect();
        let options = match state.topology.kind() {
            DeploymentKind::ReplicaSet => format!("?replicaSet={}", state.topology.set_name()),
            DeploymentKind::Standalone => "?directConnection=true".to_owned(),
            DeploymentKind::Sharded => String::new(),
        };
        format!("mongodb://{}/{options}", hosts.join(","))
    }

    /// A snapshot of the model: roles, health, terms, versions.
    pub fn topology(&self) -> Topology {
        self.inner.topology()
    }

    /// The current primary.
    pub fn primary(&self) -> Option<NodeIndex> {
        lock(&self.inner.state).topology.primary()
    }

    /// Request counters of node `index`.
    pub fn counters(&self, index: NodeIndex) -> Option<Arc<NodeCounters>> {
        lock(&self.inner.state)
            .slots
            .get(index)
            .map(|slot| Arc::clone(&slot.counters))
    }

    /// Client connections open right now on every running node (monitoring connections
    /// included): a client that shut down cleanly leaves none behind.
    pub fn open_connections(&self) -> usize {
        lock(&self.inner.state)
            .slots
            .iter()
            .filter_map(|slot| slot.server.as_ref())
            .map(crate::server::Server::open_connections)
            .sum::<usize>()
            + self
                .balancer
                .as_deref()
                .map_or(0, Balancer::open_connections)
    }

    /// Resolves once `predicate` holds for the model; checked now and after every change.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn wait_until(&self, predicate: impl FnMut(&Topology) -> bool) {
        self.inner.wait_until(predicate).await;
    }

    /// Resolves with the primary once there is one.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn wait_for_primary(&self) -> NodeIndex {
        self.inner
            .wait_until(|topology| topology.primary().is_some())
            .await;
        self.primary().unwrap_or_default()
    }

    /// `replSetStepDown` on the primary: it becomes a secondary and sits out automatic
    /// elections for `freeze_for`.
    ///
    /// # Errors
    ///
    /// `NotPrimary` without a primary; `NoElectableSecondary` when no member could take over.
    pub fn step_down(&self, freeze_for: Duration) -> Result<(), ControlError> {
        self.inner.step_down(None, freeze_for, false)
    }

    /// Steps the primary down even if no member can take over.
    ///
    /// # Errors
    ///
    /// `NotPrimary` without a primary.
    pub fn force_step_down(&self, freeze_for: Duration) -> Result<(), ControlError> {
        self.inner.step_down(None, freeze_for, true)
    }

    /// Makes `index` primary in a new term now.
    ///
    /// # Errors
    ///
    /// If the member is not electable or a majority is unreachable.
    pub fn elect(&self, index: NodeIndex) -> Result<(), ControlError> {
        self.inner.elect(index)
    }

    /// Makes `index` primary after `delay`.
    ///
    /// # Errors
    ///
    /// As [`Self::elect`], evaluated when the delay is over.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before the delay is over cancels the election.
    pub async fn elect_after(&self, index: NodeIndex, delay: Duration) -> Result<(), ControlError> {
        tokio::time::sleep(delay).await;
        self.inner.elect(index)
    }

    /// Keeps `index` out of automatic elections for `duration` (zero unfreezes).
    ///
    /// # Errors
    ///
    /// On the primary.
    pub fn freeze(&self, index: NodeIndex, duration: Duration) -> Result<(), ControlError> {
        self.inner.freeze(index, duration)
    }

    /// Kills `index`: its port refuses connections and its open connections drop.
    ///
    /// # Errors
    ///
    /// If `index` is unknown.
    ///
    /// # Cancel safety
    ///
    /// The node is dead as soon as the future is first polled; dropping it only stops
    /// waiting for its connections to close.
    pub async fn kill(&self, index: NodeIndex) -> Result<(), ControlError> {
        self.inner.kill(index).await
    }

    /// Restarts a killed node as a new process (new `processId`) on the same port.
    ///
    /// # Errors
    ///
    /// If the node is not down or its port cannot be bound.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: dropping the future may leave the node down.
    pub async fn restart(&self, index: NodeIndex) -> Result<(), ControlError> {
        self.inner.restart(index).await
    }

    /// Partitions `index`: it accepts connections but answers nothing while partitioned, as
    /// if the network dropped every packet (monitors time out, and a primary loses its role).
    /// Requests it receives meanwhile are held, neither processed nor answered, and replies
    /// due meanwhile are held too; see [`Deployment::heal`].
    ///
    /// # Errors
    ///
    /// If `index` is unknown.
    pub fn partition(&self, index: NodeIndex) -> Result<(), ControlError> {
        self.inner.partition(index)
    }

    /// Ends the partition of `index`. Like TCP retransmitting what a partition dropped, the
    /// requests held on each still-open connection are then processed and answered in order
    /// (a connection the client closed meanwhile dropped its held requests), and awaitable
    /// hellos held across the partition answer as the node stands after the heal.
    ///
    /// # Errors
    ///
    /// If `index` is unknown or down.
    pub fn heal(&self, index: NodeIndex) -> Result<(), ControlError> {
        self.inner.heal(index)
    }

    /// Shuts `index` down: it answers `ShutdownInProgress` for `quiesce`, then dies.
    ///
    /// # Errors
    ///
    /// If `index` is unknown.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: dropping the future during the quiesce period leaves the node
    /// answering `ShutdownInProgress` without dying.
    pub async fn shutdown_node(
        &self,
        index: NodeIndex,
        quiesce: Duration,
    ) -> Result<(), ControlError> {
        self.inner.shutdown(index, quiesce).await
    }

    /// Delays every reply of `index` by `delay` (zero restores full speed). The delay of a
    /// command with a shorter `maxTimeMS` ends at its `maxTimeMS`, with `MaxTimeMSExpired`.
    ///
    /// # Errors
    ///
    /// If `index` is unknown.
    pub fn slow(&self, index: NodeIndex, delay: Duration) -> Result<(), ControlError> {
        self.inner.slow(index, delay)
    }

    /// Makes each command the store of `index` runs (CRUD, cursors, indexes, not hello or
    /// handshakes) take `delay` to execute, as a slow query would; a command's `maxTimeMS`
    /// interrupts it with `MaxTimeMSExpired` (zero restores instant execution).
    ///
    /// # Errors
    ///
    /// If `index` is unknown.
    pub fn slow_commands(&self, index: NodeIndex, delay: Duration) -> Result<(), ControlError> {
        self.inner.slow_commands(index, delay)
    }

    /// Makes `index` reject commands with code 462 as `overload` says; `None` stops it.
    ///
    /// # Errors
    ///
    /// If `index` is unknown.
    pub fn overload(
        &self,
        index: NodeIndex,
        overload: Option<Overload>,
    ) -> Result<(), ControlError> {
        self.inner.overload(index, overload)
    }

    /// Gives `index` a capacity (`Some`: counters restart from zero) or removes it (`None`:
    /// counters kept). See [`capacity`](crate::deployment::capacity) for what it models.
    ///
    /// # Errors
    ///
    /// If `index` is unknown.
    pub fn set_capacity(
        &self,
        index: NodeIndex,
        capacity: Option<Capacity>,
    ) -> Result<(), ControlError> {
        let change = capacity.map_or(CapacityChange::Off, CapacityChange::Set);
        self.inner.set_capacity(index, change)
    }

    /// What the capacity of `index` admitted and rejected since it was configured.
    ///
    /// # Errors
    ///
    /// If `index` is unknown.
    pub fn capacity_stats(&self, index: NodeIndex) -> Result<CapacityStats, ControlError> {
        self.inner.capacity_stats(index).map(|(_, stats)| stats)
    }

    /// Turns automatic elections on or off (and optionally changes their delay).
    pub fn set_auto_failover(&self, enabled: bool, election_delay: Option<Duration>) {
        self.inner.set_auto_failover(enabled, election_delay);
    }

    /// Installs a new member list (`replSetReconfig`): `setVersion` increases; new hosts
    /// (`127.0.0.1:<port>`) start listening.
    ///
    /// # Errors
    ///
    /// For an invalid configuration or a port that cannot be bound.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: dropping the future may leave new ports bound without the config.
    pub async fn reconfigure(
        &self,
        members: Vec<(String, MemberOptions)>,
    ) -> Result<(), ControlError> {
        self.inner.reconfigure(members, None).await
    }

    /// Adds a member on a new port; returns its index.
    ///
    /// # Errors
    ///
    /// As [`Self::reconfigure`].
    ///
    /// # Cancel safety
    ///
    /// As [`Self::reconfigure`].
    pub async fn add_member(&self, options: MemberOptions) -> Result<NodeIndex, ControlError> {
        self.inner.add_member(options).await.map(|(index, _)| index)
    }

    /// Stops every node and waits until all their connections are closed.
    ///
    /// # Cancel safety
    ///
    /// Every node is told to stop before the first `.await`; dropping the future only stops
    /// waiting.
    pub async fn stop(&self) {
        if let Some(balancer) = &self.balancer {
            balancer.stop().await;
        }
        self.inner.stop().await;
    }
}

impl Deployment {
    /// `mongodb://<multi-backend balancer>/?loadBalanced=true` for a load-balanced deployment
    /// (see [`load_balancer`]); `None` otherwise.
    pub fn load_balanced_uri(&self) -> Option<String> {
        let host = self.balancer.as_ref()?.host(0)?;
        Some(format!("mongodb://{host}/?loadBalanced=true"))
    }

    /// The same through the balancer that fronts router 0 only.
    pub fn single_backend_load_balanced_uri(&self) -> Option<String> {
        let host = self.balancer.as_ref()?.host(1)?;
        Some(format!("mongodb://{host}/?loadBalanced=true"))
    }

    /// The `serviceId` router `backend` reports through the balancers now.
    pub fn service_id(&self, backend: NodeIndex) -> Option<ObjectId> {
        let balancer = self.balancer.as_ref()?;
        let process = self.topology().node(backend)?.topology_version().process_id;
        balancer.service_id(backend, process)
    }

    /// Resolves once no connection is open on the balancers (a client that shut down cleanly
    /// leaves none behind). Resolves at once without a load balancer.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn wait_for_no_balanced_connections(&self) {
        if let Some(balancer) = &self.balancer {
            balancer.wait_for_no_connections().await;
        }
    }

    /// Takes router `backend` out of the balancers (`down`), closing its balancer
    /// connections, or puts it back. Returns how many connections were closed.
    ///
    /// # Errors
    ///
    /// `BadArgument` without a load balancer; `UnknownMember` for an unknown router.
    pub fn set_backend_down(&self, backend: NodeIndex, down: bool) -> Result<usize, ControlError> {
        self.inner.set_backend_down(backend, down)
    }
}

impl Drop for Deployment {
    fn drop(&mut self) {
        // Dropping a server signals its shutdown; this also breaks the handler -> deployment
        // reference cycle.
        let servers: Vec<_> = lock(&self.inner.state)
            .slots
            .iter_mut()
            .filter_map(|slot| slot.server.take())
            .collect();
        drop(servers);
        if let Some(balancer) = &self.balancer {
            balancer.signal_stop();
        }
    }
}

/// Starts `config` and serves until the process is stopped, printing the connection string
/// (and one line per node) to standard output first.
///
/// # Errors
///
/// If the deployment cannot start.
///
/// # Cancel safety
///
/// Dropping the future stops the deployment.
pub async fn serve_forever(config: DeploymentConfig) -> Result<(), ControlError> {
    serve_forever_then(config, |_| Ok(())).await
}

/// [`serve_forever`], running `ready` once the deployment has started (the binary writes an
/// OIDC token file there).
///
/// # Errors
///
/// As [`serve_forever`], and `ready`'s error.
pub async fn serve_forever_then(
    config: DeploymentConfig,
    ready: impl FnOnce(&Deployment) -> Result<(), ControlError>,
) -> Result<(), ControlError> {
    let deployment = Deployment::start(config).await?;
    ready(&deployment)?;
    println!("{}", deployment.uri());
    for (index, host) in deployment.hosts().into_iter().enumerate() {
        println!("  node {index}: {host}");
    }
    if let Some(uri) = deployment.load_balanced_uri() {
        println!("  load balancer: {uri}");
    }
    if let Some(uri) = deployment.single_backend_load_balanced_uri() {
        println!("  load balancer (node 0 only): {uri}");
    }
    std::future::pending::<()>().await;
    Ok(())
}
