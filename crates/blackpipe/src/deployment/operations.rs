//! Control operations that only touch the model and per-node settings (no ports to bind or
//! close): stepdown, election, freeze, partition, slowness, overload, capacity, replication lag.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bson::Document;

use super::capacity::{self, Capacity, CapacityChange, CapacityStats};
use super::control_error::ControlError;
use super::model::{MemberOptions, NodeIndex, Role};
use super::runtime::{Inner, lock};
use crate::failpoint::Overload;

impl Inner {
    /// Steps the primary (or `index`) down; it may not be re-elected automatically for
    /// `freeze_for`.
    pub(crate) fn step_down(
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
    pub(crate) fn elect(self: &Arc<Self>, index: NodeIndex) -> Result<(), ControlError> {
        self.mutate(|state| state.topology.elect(index))
    }

    /// Freezes (or with zero, unfreezes) `index`.
    pub(crate) fn freeze(
        self: &Arc<Self>,
        index: NodeIndex,
        duration: Duration,
    ) -> Result<(), ControlError> {
        self.mutate(|state| state.topology.freeze(index, Instant::now(), duration))
    }

    /// Partitions `index`.
    pub(crate) fn partition(self: &Arc<Self>, index: NodeIndex) -> Result<(), ControlError> {
        self.mutate(|state| state.topology.partition(index))
    }

    /// Ends the partition of `index`.
    pub(crate) fn heal(self: &Arc<Self>, index: NodeIndex) -> Result<(), ControlError> {
        self.mutate(|state| state.topology.heal(index))
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

    /// Sets the lag secondaries report in `lastWrite`.
    pub(crate) fn set_replication_lag(&self, lag: Duration) {
        lock(&self.state).replication_lag = lag;
    }

    /// Turns automatic elections on or off; turning them on in a set without a primary
    /// schedules one.
    pub(crate) fn set_auto_failover(
        self: &Arc<Self>,
        enabled: bool,
        election_delay: Option<Duration>,
    ) {
        // `mutate` with no model change: it schedules the election if one is now due.
        let _ = self.mutate(|state| {
            state.auto_failover = enabled;
            if let Some(delay) = election_delay {
                state.election_delay = delay;
            }
            Ok(())
        });
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

    /// Adds a member on a new port; returns its index and host.
    pub(crate) async fn add_member(
        self: &Arc<Self>,
        options: MemberOptions,
    ) -> Result<(NodeIndex, String), ControlError> {
        let port = self.next_port(self.fixed_ports)?;
        let host = format!("127.0.0.1:{port}");
        let mut members = self.current_members();
        members.push((host.clone(), options));
        self.reconfigure(members, None).await?;
        let index = lock(&self.state)
            .topology
            .index_of(&host)
            .ok_or_else(|| ControlError::UnknownMember(host.clone()))?;
        Ok((index, host))
    }
}
