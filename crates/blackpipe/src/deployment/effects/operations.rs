//! Control operations that change the model (stepdown, election, freeze, partition, heal,
//! automatic failover, a new member): each goes through [`Inner::mutate`], which publishes the
//! nodes' new `topologyVersion`s and schedules an election when the set lost its primary.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::deployment::control_error::ControlError;
use crate::deployment::model::{MemberOptions, NodeIndex};
use crate::deployment::state::{Inner, lock};

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

    /// Elects `index` after `delay`, on a timer of its own.
    pub(crate) fn elect_later(self: &Arc<Self>, index: NodeIndex, delay: Duration) {
        // Weak, as for automatic elections: a pending one keeps nothing alive.
        let inner = Arc::downgrade(self);
        tokio::spawn(async move {
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
