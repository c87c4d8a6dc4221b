//! The replication side of the [`Deployment`] handle: each member's store, replication lag and
//! pauses, partitions that cut links between members, and the writes rollbacks discarded.

use std::sync::Arc;
use std::time::Duration;

use bson::{Document, Timestamp};

use super::handle::Deployment;
use crate::deployment::control_error::ControlError;
use crate::deployment::model::NodeIndex;
use crate::deployment::replication::RolledBackWrite;
use crate::deployment::state::{Effects, lock};
use blackpipe_store::{CommandContext, Store};

impl Deployment {
    /// The data the primary serves (tests check it, e.g. [`Store::writes_applied`]): in a
    /// replica set each data-bearing member owns a store, and this is the current primary's
    /// (member 0's while there is none); a standalone's or a sharded deployment's routers
    /// share one.
    pub fn store(&self) -> Arc<Store> {
        self.inner.primary_store()
    }

    /// Runs `command` on database `db` of the primary's store directly (no network, no fail
    /// points, no write concern) and replicates what it wrote to the secondaries, as a write
    /// through the primary would be: tests seed and inspect data with it. Returns the store's
    /// reply.
    pub fn execute(&self, db: &str, command: &Document) -> Document {
        let context = CommandContext::new(bson::DateTime::now());
        let reply = self
            .inner
            .primary_store()
            .execute(db, command, &context)
            .reply;
        self.inner.replicate();
        reply
    }

    /// The store member `index` serves (`None` for an unknown member; an arbiter's is empty).
    pub fn member_store(&self, index: NodeIndex) -> Option<Arc<Store>> {
        self.inner.store_of(index)
    }

    /// Sets how far behind the primary every secondary applies the op log (for real: reads
    /// on a secondary are this stale, and `w: "majority"` waits this long).
    pub fn set_replication_lag(&self, lag: Duration) {
        // Without a member there is no unknown member to report.
        let _ = self.inner.set_replication_lag(None, lag);
    }

    /// Sets the replication lag of member `index` alone.
    ///
    /// # Errors
    ///
    /// [`ControlError::UnknownMember`] for an unknown member.
    pub fn set_member_replication_lag(
        &self,
        index: NodeIndex,
        lag: Duration,
    ) -> Result<(), ControlError> {
        self.inner.set_replication_lag(Some(index), lag)
    }

    /// Stops member `index` (or, with `None`, every member) from applying the op log;
    /// clients still reach it.
    ///
    /// # Errors
    ///
    /// [`ControlError::UnknownMember`] for an unknown member.
    pub fn pause_replication(&self, member: Option<NodeIndex>) -> Result<(), ControlError> {
        self.inner.set_replication_paused(member, true)
    }

    /// Lets member `index` (or every member) apply the op log again; it catches up at once.
    ///
    /// # Errors
    ///
    /// [`ControlError::UnknownMember`] for an unknown member.
    pub fn resume_replication(&self, member: Option<NodeIndex>) -> Result<(), ControlError> {
        self.inner.set_replication_paused(member, false)
    }

    /// Cuts the links between `member` and each of `from` while clients still reach every
    /// node: the primary cut off from its secondaries is the classic rollback. It stays primary
    /// (and takes `w: 1` writes) until the majority side elects another member.
    /// [`Deployment::heal`] restores the links.
    ///
    /// # Errors
    ///
    /// [`ControlError::UnknownMember`] for an unknown member; `BadArgument` when `from`
    /// names `member`.
    pub fn partition_from(
        &self,
        member: NodeIndex,
        from: &[NodeIndex],
    ) -> Result<(), ControlError> {
        self.inner.cut(member, from)
    }

    /// Every write rollbacks discarded so far, oldest first.
    pub fn rollbacks(&self) -> Vec<RolledBackWrite> {
        lock(&self.inner.replication.rollbacks)
            .entries()
            .cloned()
            .collect()
    }

    /// The majority commit point of the replica set.
    pub fn majority_commit_point(&self) -> Timestamp {
        self.inner.replication.commit_point()
    }

    /// Resolves once member `index` has applied everything the primary has (checked after
    /// every replication pass).
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future changes nothing.
    pub async fn wait_for_replication(&self, index: NodeIndex) {
        let target = self.inner.primary_store().op_time().ts;
        self.inner.await_applied(index, target, false, None).await;
    }
}
