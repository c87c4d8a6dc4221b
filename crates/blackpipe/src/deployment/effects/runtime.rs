//! Launching members: binding each node's listener (a new server process with its own fail
//! points), and [`Inner::mutate`], through which every model change publishes the nodes' new
//! `topologyVersion`s and, when the set lost its primary, schedules an automatic election. The
//! pure [`Topology`] decides; this module carries its decisions out.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use bson::oid::ObjectId;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio::sync::watch;

use crate::deployment::backend::WriteTime;
use crate::deployment::capacity::MemberCapacity;
use crate::deployment::config::DeploymentConfig;
use crate::deployment::control_error::ControlError;
use crate::deployment::model::{DeploymentKind, NodeIndex, Role, Topology};
use crate::deployment::node::pipeline::MemberHandler;
use crate::deployment::replication::{MemberData, Replication};
use crate::deployment::state::{Inner, NodeCounters, Process, Slot, State, lock};
use crate::server::Server;
use blackpipe_store::Store;

/// Each node's data: for a replica set, a copy of `store` for every data-bearing member and
/// an empty store for arbiters, all on the deployment's op log clock; otherwise `store` itself,
/// shared by every node.
fn member_data(
    topology: &Topology,
    store: &Arc<Store>,
    replication: &Replication,
    rng: &mut SmallRng,
) -> Vec<Arc<MemberData>> {
    if topology.kind() != DeploymentKind::ReplicaSet {
        let shared = MemberData::new(Arc::clone(store));
        return vec![shared; topology.nodes().len()];
    }
    topology
        .nodes()
        .iter()
        .map(|node| {
            let options = replication.store_options(rng.random());
            let member_store = if node.role() == Role::Arbiter {
                Store::new(options)
            } else {
                store.fork(options)
            };
            MemberData::new(Arc::new(member_store))
        })
        .collect()
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
    let hosts = ports.iter().map(|&port| host_of(&config.host_name, port));
    Ok(match config.kind {
        DeploymentKind::Standalone => Topology::standalone(
            host_of(
                &config.host_name,
                ports.first().copied().unwrap_or_default(),
            ),
            process_ids.first().copied().unwrap_or_default(),
        ),
        DeploymentKind::Sharded => {
            Topology::sharded(hosts.zip(process_ids.iter().copied()).collect())
        }
        DeploymentKind::ReplicaSet => Topology::replica_set(
            config.set_name.clone(),
            hosts
                .zip(&config.members)
                .zip(process_ids)
                .map(|((host, options), &pid)| (host, options.clone(), pid))
                .collect(),
        )?,
    })
}

fn host_of(name: &str, port: u16) -> String {
    format!("{name}:{port}")
}

impl Inner {
    /// Binds every node and builds the initial topology.
    pub(crate) async fn start(
        config: &DeploymentConfig,
        store: Arc<Store>,
    ) -> Result<Arc<Self>, ControlError> {
        let fixed_ports = config.port != 0;
        if config.host_name != "127.0.0.1" && config.host_name != "localhost" {
            return Err(ControlError::InvalidConfig(format!(
                "host name {}: blackpipe nodes listen on 127.0.0.1 only",
                config.host_name
            )));
        }
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
        let mut rng = match config.seed {
            Some(seed) => SmallRng::seed_from_u64(seed),
            None => SmallRng::from_os_rng(),
        };
        let replication = Replication::default();
        let data = member_data(&topology, &store, &replication, &mut rng);
        let slots = ports
            .iter()
            .zip(topology.nodes())
            .zip(data)
            .map(|((&port, node), data)| Slot {
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
                data,
            })
            .collect();
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
            replication,
            rng: Mutex::new(rng),
            control: tokio::sync::Mutex::new(()),
            changes: watch::Sender::new(0),
            baseline: baseline_write_time(),
            fixed_ports,
            host_name: config.host_name.clone(),
            listener: config.server.clone(),
            users,
            auth_required: config.auth,
            load_balancer: OnceLock::new(),
            oidc,
            runtime: tokio::runtime::Handle::current(),
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
        inner.spawn_replicator();
        inner.spawn_ttl_monitor(config.ttl_monitor_period);
        Ok(inner)
    }

    /// Runs replication passes for the entries that wait out a replication lag: after each
    /// pass it sleeps until the next one is due, or until something new waits. (Passes with
    /// nothing waiting also run after every write the primary applies.)
    fn spawn_replicator(self: &Arc<Self>) {
        // Weak: the task must not keep a stopped deployment alive (it ends at its next wake-up
        // once the deployment is gone; `stop` wakes it).
        let inner = Arc::downgrade(self);
        let timer = Arc::clone(&self.replication.timer);
        self.runtime.spawn(async move {
            loop {
                let notified = timer.notified();
                let next_due = match inner.upgrade() {
                    Some(inner) => {
                        let next_due = inner.replicate();
                        inner.schedule_priority_takeover();
                        next_due
                    }
                    None => return,
                };
                let sleep = async {
                    match next_due {
                        Some(due) => tokio::time::sleep_until(due.into()).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    () = notified => {}
                    () = sleep => {}
                }
            }
        });
    }

    /// Runs mongod's TTL monitor: every `period`, the member that accepts writes deletes the
    /// documents past their TTL index's expiry, and the deletions replicate at once.
    fn spawn_ttl_monitor(self: &Arc<Self>, period: Duration) {
        // Weak: the monitor must not keep a stopped deployment alive; it ends at its next
        // tick once the deployment is gone.
        let inner = Arc::downgrade(self);
        self.runtime.spawn(async move {
            let mut ticks = tokio::time::interval(period.max(Duration::from_millis(1)));
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            // The first tick is immediate; mongod's first pass also waits a period.
            ticks.tick().await;
            loop {
                ticks.tick().await;
                let Some(inner) = inner.upgrade() else {
                    return;
                };
                inner.expire_ttl();
            }
        });
    }

    /// One TTL pass on the store that accepts writes (none while a replica set has no
    /// primary), replicated like a client's delete.
    fn expire_ttl(&self) {
        let store = {
            let state = lock(&self.state);
            let writable = match state.topology.kind() {
                DeploymentKind::ReplicaSet => state.topology.primary(),
                _ => Some(0),
            };
            writable
                .and_then(|index| state.slots.get(index))
                .map(|slot| slot.data.store())
        };
        let Some(store) = store else {
            return;
        };
        let deleted = store.expire_ttl(bson::DateTime::now());
        if deleted > 0 {
            tracing::debug!(deleted, "TTL monitor deleted expired documents");
            self.replicate();
        }
    }

    /// With automatic failover, a caught-up secondary of higher priority than the primary
    /// calls an election after the election delay (mongod's priority takeover); the primary
    /// steps down to it. One takeover is pending at a time.
    fn schedule_priority_takeover(self: &Arc<Self>) {
        let (candidate, delay) = {
            let state = lock(&self.state);
            if !state.auto_failover {
                return;
            }
            let candidate = state.topology.priority_takeover_candidate(Instant::now());
            (candidate, state.election_delay)
        };
        let Some(candidate) = candidate else {
            return;
        };
        if self
            .replication
            .takeover_pending
            .swap(true, std::sync::atomic::Ordering::AcqRel)
        {
            return;
        }
        let inner = Arc::downgrade(self);
        self.runtime.spawn(async move {
            tokio::time::sleep(delay).await;
            let Some(inner) = inner.upgrade() else {
                return;
            };
            inner
                .replication
                .takeover_pending
                .store(false, std::sync::atomic::Ordering::Release);
            let still = lock(&inner.state)
                .topology
                .priority_takeover_candidate(Instant::now())
                == Some(candidate);
            if still {
                match inner.catch_up_and_elect(candidate, |state| state.topology.elect(candidate)) {
                    Ok(()) => tracing::info!(candidate, "priority takeover"),
                    Err(error) => tracing::debug!(%error, "priority takeover failed"),
                }
            }
        });
    }

    /// Starts a server process for node `index` on `port`.
    pub(super) async fn bind(
        self: &Arc<Self>,
        index: NodeIndex,
        port: u16,
    ) -> Result<Server, ControlError> {
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
        if let Some(old) = primary_before.filter(|_| state.topology.primary() != primary_before) {
            if let Some(slot) = state.slots.get(old) {
                slot.data.store().abort_open_transactions();
            }
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
            && state.topology.kind() == DeploymentKind::ReplicaSet
            && !state.topology.primary_sees_majority();
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
        self.runtime.spawn(async move {
            tokio::time::sleep(delay).await;
            let Some(inner) = inner.upgrade() else {
                return;
            };
            // The member caught up is the one elected: if the candidate changed meanwhile (a
            // freeze ran out), the new one is caught up in turn.
            let mut outcome = Ok(Election::NoneWanted);
            for _ in 0..3 {
                let Some(candidate) = lock(&inner.state)
                    .topology
                    .election_candidate(Instant::now())
                else {
                    break;
                };
                outcome = inner.catch_up_and_elect(candidate, |state| {
                    if !state.auto_failover {
                        return Ok(Election::NoneWanted);
                    }
                    match state.topology.election_candidate(Instant::now()) {
                        Some(now) if now == candidate => state
                            .topology
                            .elect(candidate)
                            .map(|()| Election::Won(candidate)),
                        Some(_) => Ok(Election::CandidateChanged),
                        None => Ok(Election::NoneWanted),
                    }
                });
                if !matches!(outcome, Ok(Election::CandidateChanged)) {
                    break;
                }
            }
            match outcome {
                Ok(Election::Won(candidate)) => tracing::info!(candidate, "automatic election"),
                Ok(_) => tracing::debug!("no automatic election possible now"),
                Err(error) => tracing::debug!(%error, "automatic election failed"),
            }
        });
    }

    /// A port for a member added at run time: the next one after the highest in use when the
    /// deployment has fixed ports, an ephemeral one otherwise.
    pub(super) fn next_port(&self, fixed: bool) -> Result<u16, ControlError> {
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
        self.replication.timer.notify_one();
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

/// How one attempt at an automatic election ended.
enum Election {
    /// The candidate caught up was elected.
    Won(NodeIndex),
    /// No election is called for (or possible) now.
    NoneWanted,
    /// Another member became the candidate while this one caught up.
    CandidateChanged,
}
