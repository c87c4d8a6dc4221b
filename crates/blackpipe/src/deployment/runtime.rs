//! The effects layer: the shared state behind a deployment, its listeners, and the control
//! operations that change it. The pure [`Topology`] decides; this module binds ports, closes
//! connections, wakes awaitable hellos and runs election timers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use bson::oid::ObjectId;
use rand::SeedableRng;
use rand::rngs::SmallRng;
use tokio::sync::{Notify, watch};

use super::backend::WriteTime;
use super::capacity::MemberCapacity;
use super::config::DeploymentConfig;
use super::control_error::ControlError;
use super::member::MemberHandler;
use super::model::{Health, MemberOptions, NodeIndex, Role, Topology, TopologyVersion};
use crate::failpoint::{FailPoints, Overload};
use crate::server::{Server, ServerConfig};
use crate::store::Store;

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

/// What lives and dies with one server process: its fail points.
#[derive(Debug, Default)]
pub(crate) struct Process {
    pub(crate) fail_points: Mutex<FailPoints>,
    /// On a router, the transactions it routed (a restart forgets them, as a mongos does).
    pub(crate) routed_transactions: Mutex<super::router_txn::RoutedTransactions>,
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
    pub(crate) store: Arc<Store>,
    pub(crate) rng: Mutex<SmallRng>,
    /// Serialises control operations (kill, restart, reconfig...) that bind or close ports.
    control: tokio::sync::Mutex<()>,
    /// Bumped after every change, for [`Inner::wait_until`].
    changes: watch::Sender<u64>,
    /// The optime reported before any write (the set's initiation).
    pub(crate) baseline: WriteTime,
    /// Nodes were given consecutive ports (members added later continue the sequence).
    pub(crate) fixed_ports: bool,
    /// Listener settings shared by every node (bind address, limits); each node its own port.
    listener: ServerConfig,
    /// The deployment's users, as SCRAM credentials.
    pub(crate) users: crate::auth::Users,
    /// Connections must authenticate before running most commands.
    pub(crate) auth_required: bool,
    /// The load balancers in front of the routers, in load-balanced mode.
    pub(crate) load_balancer: std::sync::OnceLock<super::load_balancer::Balancer>,
    /// The MONGODB-OIDC test issuer, when the deployment accepts the mechanism.
    pub(crate) oidc: Option<Arc<crate::auth::OidcIssuer>>,
}

/// Finds a free port by binding an ephemeral one and releasing it.
fn free_port() -> std::io::Result<u16> {
    let probe = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))?;
    Ok(probe.local_addr()?.port())
}

/// The optime of "replica set initiated": one second ago, so that every write the store
/// records afterwards has a greater timestamp.
fn baseline_write_time() -> WriteTime {
    let wall = bson::DateTime::from_millis(bson::DateTime::now().timestamp_millis() - 1000);
    let seconds = u32::try_from(wall.timestamp_millis() / 1000).unwrap_or(u32::MAX);
    WriteTime {
        ts: bson::Timestamp {
            time: seconds,
            increment: 1,
        },
        wall,
    }
}

/// The initial model of `config` with its nodes on `ports`.
fn build_topology(
    config: &DeploymentConfig,
    ports: &[u16],
    process_ids: &[ObjectId],
) -> Result<Topology, ControlError> {
    let hosts = ports.iter().map(|&port| host_of(port));
    Ok(match config.kind {
        super::DeploymentKind::Standalone => Topology::standalone(
            host_of(ports.first().copied().unwrap_or_default()),
            process_ids.first().copied().unwrap_or_default(),
        ),
        super::DeploymentKind::Sharded => {
            Topology::sharded(hosts.zip(process_ids.iter().copied()).collect())
        }
        super::DeploymentKind::ReplicaSet => Topology::replica_set(
            config.set_name.clone(),
            hosts
                .zip(&config.members)
                .zip(process_ids)
                .map(|((host, options), &pid)| (host, options.clone(), pid))
                .collect(),
        )?,
    })
}

fn host_of(port: u16) -> String {
    format!("127.0.0.1:{port}")
}

/// Reads the port of a `127.0.0.1:<port>` or `localhost:<port>` host string.
fn local_port(host: &str) -> Result<u16, ControlError> {
    let (name, port) = host
        .rsplit_once(':')
        .ok_or_else(|| ControlError::InvalidConfig(format!("host {host} has no port")))?;
    if name != "127.0.0.1" && name != "localhost" {
        return Err(ControlError::InvalidConfig(format!(
            "host {host}: blackpipe nodes listen on 127.0.0.1 only"
        )));
    }
    port.parse()
        .map_err(|_| ControlError::InvalidConfig(format!("host {host} has an invalid port")))
}

impl Inner {
    /// Binds every node and builds the initial topology.
    pub(crate) async fn start(
        config: &DeploymentConfig,
        store: Arc<Store>,
    ) -> Result<Arc<Self>, ControlError> {
        let fixed_ports = config.port != 0;
        let count = config.members.len();
        // With ephemeral ports, each listener binds port 0 and the topology is rebuilt with the
        // ports the system chose before anyone can know them: no window where another socket
        // could take a probed port. Until then, distinct placeholders keep hosts unique.
        let mut ports = Vec::with_capacity(count);
        for offset in 0..count {
            let offset =
                u16::try_from(offset).map_err(|_| ControlError::Listen("too many nodes".into()))?;
            let port = if fixed_ports {
                config
                    .port
                    .checked_add(offset)
                    .ok_or_else(|| ControlError::Listen("port range overflows".into()))?
            } else {
                offset + 1
            };
            ports.push(port);
        }
        let process_ids: Vec<ObjectId> = (0..count).map(|_| ObjectId::new()).collect();
        let topology = build_topology(config, &ports, &process_ids)?;
        let slots = ports
            .iter()
            .zip(topology.nodes())
            .map(|(&port, node)| Slot {
                port,
                version: Arc::new(watch::Sender::new(node.topology_version())),
                counters: Arc::new(NodeCounters::default()),
                server: None,
                slow: Duration::ZERO,
                command_time: Duration::ZERO,
                overload: None,
                capacity: MemberCapacity::new(
                    config.capacity.filter(|_| node.role() != Role::Arbiter),
                    tokio::time::Instant::now().into_std(),
                ),
            })
            .collect();
        let rng = match config.seed {
            Some(seed) => SmallRng::seed_from_u64(seed),
            None => SmallRng::from_os_rng(),
        };
        let users = crate::auth::Users::new(&config.users, &mut rand::rng())
            .map_err(|error| ControlError::InvalidConfig(error.to_string()))?
            .with_aws_keys(config.aws_keys.clone());
        let oidc = match &config.oidc {
            Some(oidc) => Some(Arc::new(
                crate::auth::OidcIssuer::new(oidc.clone())
                    .map_err(|error| ControlError::InvalidConfig(error.to_string()))?,
            )),
            None => None,
        };
        let inner = Arc::new(Self {
            state: Mutex::new(State {
                topology,
                slots,
                auto_failover: config.auto_failover,
                election_delay: config.election_delay,
                replication_lag: config.replication_lag,
            }),
            store,
            rng: Mutex::new(rng),
            control: tokio::sync::Mutex::new(()),
            changes: watch::Sender::new(0),
            baseline: baseline_write_time(),
            fixed_ports,
            listener: config.server.clone(),
            users,
            auth_required: config.auth,
            load_balancer: std::sync::OnceLock::new(),
            oidc,
        });
        let mut bound = Vec::with_capacity(count);
        for (index, &port) in ports.iter().enumerate() {
            let server = inner
                .bind(index, if fixed_ports { port } else { 0 })
                .await?;
            bound.push(server.local_addr().port());
            lock(&inner.state).slots[index].server = Some(server);
        }
        if !fixed_ports {
            let topology = build_topology(config, &bound, &process_ids)?;
            let mut state = lock(&inner.state);
            for (slot, port) in state.slots.iter_mut().zip(&bound) {
                slot.port = *port;
            }
            state.topology = topology;
        }
        Ok(inner)
    }

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

    /// Starts a server process for node `index` on `port`.
    async fn bind(self: &Arc<Self>, index: NodeIndex, port: u16) -> Result<Server, ControlError> {
        let (version, counters) = self.with_slot(index, |slot| {
            (Arc::clone(&slot.version), Arc::clone(&slot.counters))
        })?;
        let handler = MemberHandler::new(
            Arc::clone(self),
            index,
            Arc::new(Process::default()),
            version,
            counters,
        );
        let listener = self.listener.clone().with_port(port);
        let bind = listener.bind;
        Server::bind(listener, Arc::new(handler))
            .await
            .map_err(|error| ControlError::Listen(format!("{bind}:{port}: {error}")))
    }

    /// Applies a change to the model under the lock, then publishes every node's new
    /// topologyVersion (waking awaitable hellos) and, if the set lost its primary, schedules
    /// an automatic election.
    pub(crate) fn mutate<R>(
        self: &Arc<Self>,
        change: impl FnOnce(&mut State) -> Result<R, ControlError>,
    ) -> Result<R, ControlError> {
        let mut state = lock(&self.state);
        let primary_before = state.topology.primary();
        let result = change(&mut state)?;
        // A primary that steps down, dies or is replaced aborts its open transactions, as
        // mongod does; they never commit half applied, and their clients see
        // TransientTransactionError (or, for a commit that already happened, ok on retry).
        if primary_before.is_some() && state.topology.primary() != primary_before {
            self.store.abort_open_transactions();
        }
        for (slot, node) in state.slots.iter().zip(state.topology.nodes()) {
            let version = node.topology_version();
            slot.version.send_if_modified(|current| {
                let modified = *current != version;
                *current = version;
                modified
            });
        }
        let needs_election = state.auto_failover
            && state.topology.kind() == super::DeploymentKind::ReplicaSet
            && state.topology.primary().is_none();
        let delay = state.election_delay;
        drop(state);
        self.changes.send_modify(|count| *count += 1);
        if needs_election {
            self.schedule_election(delay);
        }
        Ok(result)
    }

    fn schedule_election(self: &Arc<Self>, delay: Duration) {
        // Weak: a pending election must not keep a stopped and dropped deployment (its store,
        // op log and history) alive until the timer fires.
        let inner = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let Some(inner) = inner.upgrade() else {
                return;
            };
            let elected = inner.mutate(|state| {
                if !state.auto_failover {
                    return Ok(None);
                }
                match state.topology.election_candidate(Instant::now()) {
                    Some(candidate) => state.topology.elect(candidate).map(|()| Some(candidate)),
                    None => Ok(None),
                }
            });
            match elected {
                Ok(Some(candidate)) => tracing::info!(candidate, "automatic election"),
                Ok(None) => tracing::debug!("no automatic election possible now"),
                Err(error) => tracing::debug!(%error, "automatic election failed"),
            }
        });
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

    /// Kills node `index`: the model first (so nobody elects it), then the listener and
    /// every open connection.
    pub(crate) async fn kill(self: &Arc<Self>, index: NodeIndex) -> Result<(), ControlError> {
        let _control = self.control.lock().await;
        let server = self.mutate(|state| {
            state.topology.kill(index)?;
            Ok(state
                .slots
                .get_mut(index)
                .and_then(|slot| slot.server.take()))
        })?;
        if let Some(server) = server {
            server.shutdown().await;
        }
        Ok(())
    }

    /// Restarts a killed node as a new process on its port.
    pub(crate) async fn restart(self: &Arc<Self>, index: NodeIndex) -> Result<(), ControlError> {
        let _control = self.control.lock().await;
        let port = {
            let state = lock(&self.state);
            let node = state
                .topology
                .node(index)
                .ok_or_else(|| ControlError::UnknownMember(index.to_string()))?;
            if node.health() != Health::Down {
                return Err(ControlError::BadArgument(format!(
                    "{} is not down; kill it before restarting it",
                    node.host()
                )));
            }
            state.slots[index].port
        };
        let server = self.bind(index, port).await?;
        self.mutate(move |state| {
            state.topology.restart(index, ObjectId::new())?;
            state.slots[index].server = Some(server);
            Ok(())
        })
    }

    /// Lets node `index` answer `ShutdownInProgress` for `quiesce`, then kills it.
    pub(crate) async fn shutdown(
        self: &Arc<Self>,
        index: NodeIndex,
        quiesce: Duration,
    ) -> Result<(), ControlError> {
        self.mutate(|state| state.topology.begin_shutdown(index))?;
        tokio::time::sleep(quiesce).await;
        self.kill(index).await
    }

    /// Adds members (replSetReconfig with new hosts, or `addMember`): binds their ports first,
    /// then installs the new config.
    pub(crate) async fn reconfigure(
        self: &Arc<Self>,
        members: Vec<(String, MemberOptions)>,
        version: Option<i64>,
    ) -> Result<(), ControlError> {
        let _control = self.control.lock().await;
        let (first_new_index, new_ports) = {
            let state = lock(&self.state);
            let mut ports = Vec::new();
            for (host, _) in &members {
                if state.topology.index_of(host).is_none() {
                    ports.push(local_port(host)?);
                }
            }
            (state.topology.nodes().len(), ports)
        };
        // Slots for the new nodes exist before their servers, so handlers always find them.
        {
            let mut state = lock(&self.state);
            for &port in &new_ports {
                let version = TopologyVersion {
                    process_id: ObjectId::new(),
                    counter: 0,
                };
                state.slots.push(Slot {
                    port,
                    version: Arc::new(watch::Sender::new(version)),
                    counters: Arc::new(NodeCounters::default()),
                    server: None,
                    slow: Duration::ZERO,
                    command_time: Duration::ZERO,
                    overload: None,
                    capacity: MemberCapacity::new(None, tokio::time::Instant::now().into_std()),
                });
            }
        }
        let mut servers = Vec::new();
        for (offset, &port) in new_ports.iter().enumerate() {
            match self.bind(first_new_index + offset, port).await {
                Ok(server) => servers.push(server),
                Err(error) => {
                    lock(&self.state).slots.truncate(first_new_index);
                    return Err(error);
                }
            }
        }
        let result = self.mutate(|state| {
            let pids: Vec<ObjectId> = state.slots[first_new_index..]
                .iter()
                .map(|slot| slot.version.borrow().process_id)
                .collect();
            let mut next_pid = pids.into_iter();
            let added = state
                .topology
                .reconfigure(members, version, || next_pid.next().unwrap_or_default())?;
            for (index, server) in added.into_iter().zip(servers) {
                state.slots[index].server = Some(server);
            }
            Ok(())
        });
        if result.is_err() {
            lock(&self.state).slots.truncate(first_new_index);
        }
        result
    }

    /// A port for a member added at run time: the next one after the highest in use when the
    /// deployment has fixed ports, an ephemeral one otherwise.
    pub(crate) fn next_port(&self, fixed: bool) -> Result<u16, ControlError> {
        if fixed {
            let state = lock(&self.state);
            let highest = state.slots.iter().map(|slot| slot.port).max().unwrap_or(0);
            highest
                .checked_add(1)
                .ok_or_else(|| ControlError::Listen("no port left".into()))
        } else {
            free_port().map_err(|error| ControlError::Listen(error.to_string()))
        }
    }

    /// Shuts every listener down.
    pub(crate) async fn stop(&self) {
        if let Some(balancer) = self.load_balancer.get() {
            balancer.stop().await;
        }
        let servers: Vec<Server> = {
            let mut state = lock(&self.state);
            state
                .slots
                .iter_mut()
                .filter_map(|slot| slot.server.take())
                .collect()
        };
        for server in servers {
            server.shutdown().await;
        }
    }
}
