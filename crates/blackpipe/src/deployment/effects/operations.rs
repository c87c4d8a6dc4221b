//! The effects the control commands ask for, as [`Effects`] (declared at the foot, so that
//! the control room reaches them without importing this room): model changes that publish
//! every node's `topologyVersion` and may schedule an automatic election (stepdown, election,
//! freeze, partition, heal, automatic failover), and the operations that bind or close ports
//! (kill, restart, shutdown, reconfig, a new member).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bson::oid::ObjectId;
use tokio::sync::watch;

use crate::deployment::capacity::MemberCapacity;
use crate::deployment::control_error::ControlError;
use crate::deployment::model::{DeploymentKind, Health, MemberOptions, NodeIndex, TopologyVersion};
use crate::deployment::replication::MemberData;
use crate::deployment::state::{Effects, Inner, NodeCounters, Slot, lock};
use blackpipe_store::Store;
use rand::Rng;

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

impl Effects for Inner {
    /// Steps the primary (or `index`) down; it may not be re-elected automatically for
    /// `freeze_for`.
    fn step_down(
        self: &Arc<Self>,
        index: Option<NodeIndex>,
        freeze_for: Duration,
        force: bool,
    ) -> Result<(), ControlError> {
        self.mutate(|state| {
            let target = match index {
                Some(index) => index,
                None => state.topology.primary().ok_or(ControlError::NotPrimary)?,
            };
            state
                .topology
                .step_down(target, Instant::now(), freeze_for, force)
        })
    }

    /// Elects `index` now.
    fn elect(self: &Arc<Self>, index: NodeIndex) -> Result<(), ControlError> {
        self.catch_up_and_elect(index, |state| state.topology.elect(index))
    }

    /// Elects `index` after `delay`, on a timer of its own.
    fn elect_later(self: &Arc<Self>, index: NodeIndex, delay: Duration) {
        // Weak, as for automatic elections: a pending one keeps nothing alive.
        let inner = Arc::downgrade(self);
        self.runtime.spawn(async move {
            tokio::time::sleep(delay).await;
            let Some(inner) = inner.upgrade() else {
                return;
            };
            if let Err(error) = inner.elect(index) {
                tracing::warn!(%error, index, "delayed election failed");
            }
        });
    }

    /// Freezes (or with zero, unfreezes) `index`.
    fn freeze(self: &Arc<Self>, index: NodeIndex, duration: Duration) -> Result<(), ControlError> {
        self.mutate(|state| state.topology.freeze(index, Instant::now(), duration))
    }

    /// Partitions `index`.
    fn partition(self: &Arc<Self>, index: NodeIndex) -> Result<(), ControlError> {
        self.mutate(|state| state.topology.partition(index))
    }

    /// Cuts the links between `index` and each of `from`.
    fn cut(self: &Arc<Self>, index: NodeIndex, from: &[NodeIndex]) -> Result<(), ControlError> {
        self.mutate(|state| state.topology.cut(index, from))
    }

    /// Ends the partition of `index` (and restores its cut links); it catches up, rolling
    /// back first if it diverged.
    fn heal(self: &Arc<Self>, index: NodeIndex) -> Result<(), ControlError> {
        self.mutate(|state| state.topology.heal(index))?;
        self.replicate();
        Ok(())
    }

    /// Turns automatic elections on or off; turning them on in a set without a primary
    /// schedules one.
    fn set_auto_failover(self: &Arc<Self>, enabled: bool, election_delay: Option<Duration>) {
        // `mutate` with no model change: it schedules the election if one is now due.
        let _ = self.mutate(|state| {
            state.auto_failover = enabled;
            if let Some(delay) = election_delay {
                state.election_delay = delay;
            }
            Ok(())
        });
    }

    /// Adds a member on a new port; returns its index and host.
    async fn add_member(
        self: &Arc<Self>,
        options: MemberOptions,
    ) -> Result<(NodeIndex, String), ControlError> {
        let port = self.next_port(self.fixed_ports)?;
        let host = format!("{}:{port}", self.host_name);
        let mut members = self.current_members();
        members.push((host.clone(), options));
        self.reconfigure(members, None).await?;
        let index = lock(&self.state)
            .topology
            .index_of(&host)
            .ok_or_else(|| ControlError::UnknownMember(host.clone()))?;
        Ok((index, host))
    }

    /// Kills node `index`: the model first (so nobody elects it), then the listener and
    /// every open connection.
    async fn kill(self: &Arc<Self>, index: NodeIndex) -> Result<(), ControlError> {
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
    async fn restart(self: &Arc<Self>, index: NodeIndex) -> Result<(), ControlError> {
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
        })?;
        // The restarted process kept its data: it catches up (or rolls back) now.
        self.replicate();
        Ok(())
    }

    /// Lets node `index` answer `ShutdownInProgress` for `quiesce`, then kills it.
    async fn shutdown(
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
    async fn reconfigure(
        self: &Arc<Self>,
        members: Vec<(String, MemberOptions)>,
        version: Option<i64>,
    ) -> Result<(), ControlError> {
        let _control = self.control.lock().await;
        let (first_new_index, new_ports) = {
            let state = lock(&self.state);
            let mut ports = Vec::new();
            for (host, options) in &members {
                if state.topology.index_of(host).is_none() {
                    ports.push((local_port(host)?, options.arbiter_only));
                }
            }
            (state.topology.nodes().len(), ports)
        };
        // Slots for the new nodes exist before their servers, so handlers always find them.
        // A new data-bearing member starts from a copy of the primary's data (initial sync).
        let primary_store = self.primary_store();
        {
            let mut state = lock(&self.state);
            for &(port, arbiter) in &new_ports {
                let options = self.replication.store_options(lock(&self.rng).random());
                let store = if arbiter || state.topology.kind() != DeploymentKind::ReplicaSet {
                    Store::new(options)
                } else {
                    primary_store.fork(options)
                };
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
                    data: MemberData::new(Arc::new(store)),
                });
            }
        }
        let mut servers = Vec::new();
        for (offset, &(port, _)) in new_ports.iter().enumerate() {
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
}
