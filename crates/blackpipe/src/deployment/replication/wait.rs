//! Waiting for replication: a write concern (`w: "majority"` waits for the majority commit
//! point, a numeric `w` for that many data-bearing members to hold the write), a read's
//! `afterClusterTime` on a lagging member, and a linearizable read's confirmation that its
//! primary still leads a majority. Every wait wakes on a replication pass or a topology
//! change, never on a poll.

use std::time::Duration;

use bson::Timestamp;

use super::{NO_TIME, is_data_bearing};
use crate::deployment::model::{NodeIndex, Role};
use crate::deployment::state::{Inner, lock};

/// What a write concern waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Acknowledgement {
    /// The majority commit point reaches the write.
    Majority,
    /// This many data-bearing members hold the write (the primary included).
    Members(usize),
}

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WaitOutcome {
    /// What was waited for happened.
    Satisfied,
    /// The deadline passed first.
    TimedOut,
    /// The primary the wait ran on stepped down (or the member became unreachable).
    SteppedDown,
}

impl Inner {
    /// Whether the primary `index` (in `term`) holds `target` as `acknowledgement` asks;
    /// `Err` when it is no longer that primary.
    fn acknowledged(
        &self,
        index: NodeIndex,
        term: i64,
        target: Timestamp,
        acknowledgement: Acknowledgement,
    ) -> Result<bool, ()> {
        let state = lock(&self.state);
        let topology = &state.topology;
        if topology.primary() != Some(index) || topology.term() != term {
            return Err(());
        }
        Ok(match acknowledgement {
            Acknowledgement::Majority => self.replication.commit_point() >= target,
            Acknowledgement::Members(count) => {
                let holding = (0..state.slots.len())
                    .filter(|&member| {
                        is_data_bearing(topology, member)
                            && topology.is_linked(index, member)
                            && state.slots[member].data.applied() >= target
                    })
                    .count();
                holding >= count
            }
        })
    }

    /// Waits until the primary `index` (in `term`) has `target` acknowledged as asked, or
    /// `limit` passes, or it stops being that primary.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future changes nothing.
    pub(crate) async fn await_acknowledgement(
        &self,
        index: NodeIndex,
        term: i64,
        target: Timestamp,
        acknowledgement: Acknowledgement,
        limit: Option<Duration>,
    ) -> WaitOutcome {
        self.await_condition(limit, || {
            self.acknowledged(index, term, target, acknowledgement)
        })
        .await
    }

    /// Waits until member `index` has applied `target` (with `majority`, until the commit
    /// point it knows reaches `target`), or `limit` passes.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future changes nothing.
    pub(crate) async fn await_applied(
        &self,
        index: NodeIndex,
        target: Timestamp,
        majority: bool,
        limit: Option<Duration>,
    ) -> WaitOutcome {
        self.await_condition(limit, || self.holds_time(index, target, majority))
            .await
    }

    /// Whether member `index` has reached cluster time `target`: applied (or, with
    /// `majority`, knows committed) an entry at least that late, or holds everything the
    /// primary has while `target` is no later than the newest timestamp handed out. In that
    /// case no entry of the set's branch lies between (later writes take later timestamps):
    /// mongod's primary writes a no-op to move past `target`, blackpipe needs none, so a
    /// causal read after a rollback (its time from the discarded branch) does not wait forever.
    fn holds_time(&self, index: NodeIndex, target: Timestamp, majority: bool) -> Result<bool, ()> {
        let (data, primary_data) = {
            let state = lock(&self.state);
            let data = state.slots.get(index).ok_or(())?.data.clone();
            let primary_data = state
                .topology
                .primary()
                .and_then(|primary| state.slots.get(primary))
                .map(|slot| slot.data.clone());
            (data, primary_data)
        };
        let reached = if majority {
            data.known_commit()
        } else {
            data.applied()
        };
        if reached.max(self.baseline.ts) >= target || target == NO_TIME {
            return Ok(true);
        }
        let issued = self.replication.clock.latest();
        Ok(target <= issued && primary_data.is_some_and(|primary| reached >= primary.applied()))
    }

    /// Whether member `index` is primary now, and in which term.
    pub(crate) fn primary_term(&self, index: NodeIndex) -> Option<i64> {
        let state = lock(&self.state);
        let node = state.topology.node(index)?;
        (node.role() == Role::Primary).then(|| state.topology.term())
    }

    /// Checks `condition` now and after every replication pass or topology change, until it
    /// holds (`Ok(true)`), fails (`Err`), or `limit` passes.
    async fn await_condition(
        &self,
        limit: Option<Duration>,
        mut condition: impl FnMut() -> Result<bool, ()>,
    ) -> WaitOutcome {
        let deadline = limit.and_then(|limit| tokio::time::Instant::now().checked_add(limit));
        let mut progress = self.replication.progress.subscribe();
        let mut changes = self.changes.subscribe();
        loop {
            // Marked seen before checking, so a change in between still wakes the wait.
            progress.borrow_and_update();
            changes.borrow_and_update();
            match condition() {
                Ok(true) => return WaitOutcome::Satisfied,
                Ok(false) => {}
                Err(()) => return WaitOutcome::SteppedDown,
            }
            let timer = async {
                match deadline {
                    Some(deadline) => tokio::time::sleep_until(deadline).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                changed = progress.changed() => if changed.is_err() { return WaitOutcome::TimedOut },
                changed = changes.changed() => if changed.is_err() { return WaitOutcome::TimedOut },
                () = timer => return WaitOutcome::TimedOut,
            }
        }
    }
}
