//! Replication between the members of a replica set: each data-bearing member owns a
//! [`Store`]; the primary's commands write to its own, and every secondary pulls the entries
//! of its sync source's op log and applies them to its store in order, each once its
//! replication lag has passed. The pass runs after every write the primary applies (so with
//! no lag a secondary holds the write before the primary answers it) and on a timer for the
//! entries that wait out a lag.
//!
//! The majority commit point is the newest optime that a majority of the voting data-bearing
//! members reachable from the primary have applied on the primary's branch; each member knows
//! the commit point as of its last contact with the primary. A member whose op log diverged
//! from its sync source's (a former primary that took writes nobody else received) rolls back
//! (see [`rollback`]). Arbiters hold no data (an empty store no command reaches), and a
//! standalone or a sharded deployment's routers share one store that nothing replicates.
//!
//! Pure decisions (sync source, commit point, votes) are the model's; this module carries them
//! out on the stores. It holds no lock across an `.await`.

pub(crate) mod rollback;
pub(crate) mod wait;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use bson::{Document, Timestamp, doc};
use tokio::sync::{Notify, watch};

use super::control_error::ControlError;
use super::model::{DeploymentKind, NodeIndex, Role, Topology};
use super::state::{Inner, State, lock};
use blackpipe_store::{OpClock, OplogEntry, Store, StoreOptions};

pub(crate) use rollback::RollbackLog;
pub use rollback::RolledBackWrite;

/// The timestamp before any write.
pub(crate) const NO_TIME: Timestamp = Timestamp {
    time: 0,
    increment: 0,
};

/// One member's data: its store (replaced whole by a rollback or an initial sync) and its
/// replication progress.
#[derive(Debug)]
pub(crate) struct MemberData {
    store: RwLock<Arc<Store>>,
    progress: Mutex<Progress>,
}

/// What a member's replication has fetched and knows.
#[derive(Debug)]
struct Progress {
    /// `pauseReplication`: the member fetches and applies nothing.
    paused: bool,
    /// The member's own lag, overriding the deployment's.
    lag: Option<Duration>,
    /// The member its pending entries came from.
    source: Option<NodeIndex>,
    /// Entries fetched from `source`, each with the instant it was fetched (it may be applied
    /// once the member's lag has passed since), oldest first.
    pending: VecDeque<(Instant, OplogEntry)>,
    /// The majority commit point as the member last heard it.
    known_commit: Timestamp,
}

impl Default for Progress {
    fn default() -> Self {
        Progress {
            paused: false,
            lag: None,
            source: None,
            pending: VecDeque::new(),
            known_commit: NO_TIME,
        }
    }
}

impl MemberData {
    pub(crate) fn new(store: Arc<Store>) -> Arc<MemberData> {
        Arc::new(MemberData {
            store: RwLock::new(store),
            progress: Mutex::new(Progress::default()),
        })
    }

    /// The member's store now.
    pub(crate) fn store(&self) -> Arc<Store> {
        Arc::clone(
            &self
                .store
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    fn replace_store(&self, store: Arc<Store>) {
        *self
            .store
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = store;
    }

    /// The timestamp of the newest entry the member applied.
    pub(crate) fn applied(&self) -> Timestamp {
        self.store().op_time().ts
    }

    /// The majority commit point the member knows.
    pub(crate) fn known_commit(&self) -> Timestamp {
        lock(&self.progress).known_commit
    }

    fn learn_commit(&self, commit: Timestamp) -> bool {
        let applied = self.applied();
        let mut progress = lock(&self.progress);
        let known = commit.min(applied).max(progress.known_commit);
        let advanced = known != progress.known_commit;
        progress.known_commit = known;
        advanced
    }

    /// Drops the entries fetched and not applied yet (the member's store moved otherwise: a
    /// catch-up or a rollback); the next pass fetches from where the store is.
    pub(crate) fn forget_pending(&self) {
        let mut progress = lock(&self.progress);
        progress.pending.clear();
        progress.source = None;
    }

    /// Pauses (or resumes) applying; returns whether anything changed.
    pub(crate) fn set_paused(&self, paused: bool) -> bool {
        let mut progress = lock(&self.progress);
        std::mem::replace(&mut progress.paused, paused) != paused
    }

    pub(crate) fn is_paused(&self) -> bool {
        lock(&self.progress).paused
    }

    /// Sets the member's own lag (`None`: the deployment's).
    pub(crate) fn set_lag(&self, lag: Option<Duration>) {
        lock(&self.progress).lag = lag;
    }

    pub(crate) fn lag(&self) -> Option<Duration> {
        lock(&self.progress).lag
    }
}

/// Deployment-wide replication state.
#[derive(Debug)]
pub(crate) struct Replication {
    /// The optime clock every member's store ticks, so that no two writes anywhere (on
    /// divergent branches too) share a timestamp.
    pub(crate) clock: OpClock,
    /// The majority commit point (never moves back: a committed write is never rolled back).
    commit_point: Mutex<Timestamp>,
    /// What rollbacks discarded.
    pub(crate) rollbacks: Mutex<RollbackLog>,
    /// Bumped after every replication pass that changed something, for the waits.
    pub(crate) progress: watch::Sender<u64>,
    /// Wakes the lag timer when entries start waiting.
    pub(crate) timer: Arc<Notify>,
    /// Serialises passes, so that each member applies its entries in order.
    pass: Mutex<()>,
    /// A priority takeover election is scheduled.
    pub(crate) takeover_pending: std::sync::atomic::AtomicBool,
}

impl Default for Replication {
    fn default() -> Self {
        Replication {
            clock: OpClock::default(),
            commit_point: Mutex::new(NO_TIME),
            rollbacks: Mutex::new(RollbackLog::default()),
            progress: watch::Sender::new(0),
            timer: Arc::new(Notify::new()),
            pass: Mutex::new(()),
            takeover_pending: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

impl Replication {
    /// The majority commit point.
    pub(crate) fn commit_point(&self) -> Timestamp {
        *lock(&self.commit_point)
    }

    /// Options of a member's store: `seed`, and the deployment's clock.
    pub(crate) fn store_options(&self, seed: u64) -> StoreOptions {
        StoreOptions::default()
            .with_seed(seed)
            .with_clock(self.clock.clone())
    }
}

/// What one member's pass does, decided under the state lock.
struct Plan {
    member: NodeIndex,
    data: Arc<MemberData>,
    source: Option<(NodeIndex, Arc<MemberData>)>,
    /// The source is the primary, whose branch is the set's: whatever this member holds that
    /// the primary does not is rolled back.
    source_is_primary: bool,
    lag: Duration,
}

impl Inner {
    /// The data of member `index`.
    pub(crate) fn member_data(&self, index: NodeIndex) -> Option<Arc<MemberData>> {
        lock(&self.state)
            .slots
            .get(index)
            .map(|slot| Arc::clone(&slot.data))
    }

    /// The store member `index` serves.
    pub(crate) fn store_of(&self, index: NodeIndex) -> Option<Arc<Store>> {
        self.member_data(index).map(|data| data.store())
    }

    /// The primary's store (member 0's without a primary; the shared one outside replica sets).
    pub(crate) fn primary_store(&self) -> Arc<Store> {
        let state = lock(&self.state);
        let index = state.topology.primary().unwrap_or(0);
        state
            .slots
            .get(index)
            .or_else(|| state.slots.first())
            .map(|slot| slot.data.store())
            .unwrap_or_default()
    }

    /// One replication pass: every secondary pulls from its sync source and applies what its
    /// lag allows; then the commit point moves. Returns when the next waiting entry is due.
    pub(crate) fn replicate(&self) -> Option<Instant> {
        let _pass = lock(&self.replication.pass);
        let now = tokio::time::Instant::now().into_std();
        let plans = self.plans();
        let mut next_due: Option<Instant> = None;
        let mut changed = false;
        for plan in &plans {
            let (due, applied) = self.pull(plan, now);
            changed |= applied;
            next_due = match (next_due, due) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        changed |= self.advance_commit_point();
        if changed {
            self.replication.progress.send_modify(|count| *count += 1);
            // The timer task looks for a priority takeover after each pass it runs.
            if self.takeover_possible() {
                self.replication.timer.notify_one();
            }
        }
        next_due
    }

    /// Who pulls from whom now, with what lag: every up, data-bearing secondary of a replica
    /// set.
    fn plans(&self) -> Vec<Plan> {
        let state = lock(&self.state);
        if state.topology.kind() != DeploymentKind::ReplicaSet {
            return Vec::new();
        }
        (0..state.topology.nodes().len())
            .filter(|&index| is_data_bearing(&state.topology, index))
            .filter(|&index| state.topology.primary() != Some(index))
            .filter_map(|index| {
                let data = Arc::clone(&state.slots.get(index)?.data);
                let source = sync_source(&state.topology, index)
                    .and_then(|source| Some((source, Arc::clone(&state.slots.get(source)?.data))));
                let lag = data.lag().unwrap_or(state.replication_lag);
                let source_is_primary = source
                    .as_ref()
                    .is_some_and(|(source, _)| state.topology.primary() == Some(*source));
                Some(Plan {
                    member: index,
                    data,
                    source,
                    source_is_primary,
                    lag,
                })
            })
            .collect()
    }

    /// Pulls `plan`'s member forward: fetches its source's new entries, applies those whose
    /// lag has passed. Returns when the next waiting entry is due and whether it applied
    /// anything (or rolled back).
    fn pull(&self, plan: &Plan, now: Instant) -> (Option<Instant>, bool) {
        let Some((source, source_data)) = &plan.source else {
            return (None, false);
        };
        if plan.data.is_paused() {
            return (None, false);
        }
        let mine = plan.data.store();
        let theirs = source_data.store();
        let mut progress = lock(&plan.data.progress);
        if progress.source != Some(*source) {
            progress.pending.clear();
            progress.source = Some(*source);
        }
        let fetched_through = progress
            .pending
            .back()
            .map_or_else(|| mine.op_time(), |(_, entry)| entry.op_time);
        if fetched_through.ts != NO_TIME && theirs.oplog_contains(fetched_through.ts) != Some(true)
        {
            if !plan.source_is_primary && theirs.op_time().ts <= fetched_through.ts {
                // A chained source behind this member: nothing to fetch from it yet.
                return (None, false);
            }
            progress.pending.clear();
            drop(progress);
            self.roll_back(plan.member, &plan.data, &mine, &theirs);
            return (None, true);
        }
        let fetched = theirs.oplog_since(fetched_through);
        let woke_timer = !plan.lag.is_zero() && !fetched.is_empty();
        progress
            .pending
            .extend(fetched.into_iter().map(|entry| (now, entry)));
        // Due once the lag has passed since the fetch (a lag too long to represent never
        // passes): a changed lag re-times what is already in flight.
        let due = |fetched: Instant| fetched.checked_add(plan.lag);
        let ready = progress
            .pending
            .iter()
            .take_while(|(fetched, _)| due(*fetched).is_some_and(|due| due <= now))
            .count();
        let batch: Vec<OplogEntry> = progress
            .pending
            .drain(..ready)
            .map(|(_, entry)| entry)
            .collect();
        let next_due = progress
            .pending
            .front()
            .and_then(|(fetched, _)| due(*fetched));
        drop(progress);
        if woke_timer {
            self.replication.timer.notify_one();
        }
        if batch.is_empty() {
            return (next_due, false);
        }
        if let Err(error) = mine.apply_oplog(&batch) {
            // A gap or an entry this store cannot take: start over from a copy of the source.
            tracing::warn!(member = plan.member, %error, "replication failed; resyncing");
            self.roll_back(plan.member, &plan.data, &mine, &theirs);
            return (None, true);
        }
        lock(&self.state)
            .topology
            .set_applied(plan.member, mine.op_time().ts);
        (next_due, true)
    }

    /// Recomputes the majority commit point from the members the primary reaches, and tells
    /// every member in contact with the primary whose op log is on its branch. Returns whether
    /// any member learned a newer one.
    fn advance_commit_point(&self) -> bool {
        let (candidates, informed) = {
            let mut state = lock(&self.state);
            let Some(primary) = state.topology.primary() else {
                return false;
            };
            let primary_store = state.slots[primary].data.store();
            state
                .topology
                .set_applied(primary, primary_store.op_time().ts);
            let mut candidates = Vec::new();
            let mut informed = Vec::new();
            for (index, slot) in state.slots.iter().enumerate() {
                if !is_data_bearing(&state.topology, index)
                    || !state.topology.is_linked(primary, index)
                {
                    continue;
                }
                let applied = slot.data.applied();
                let on_branch =
                    applied == NO_TIME || primary_store.oplog_contains(applied) != Some(false);
                if !on_branch {
                    // A diverged member (a former primary not rolled back yet) would take
                    // the set's commit point for its own branch: it learns it once it has
                    // rolled back.
                    continue;
                }
                informed.push(Arc::clone(&slot.data));
                let voting = state
                    .topology
                    .node(index)
                    .is_some_and(|node| node.options().votes > 0);
                if voting && applied <= primary_store.op_time().ts {
                    candidates.push(applied);
                }
            }
            (state.topology.majority_point(&mut candidates), informed)
        };
        let commit = {
            let mut point = lock(&self.replication.commit_point);
            if let Some(candidate) = candidates {
                *point = (*point).max(candidate);
            }
            *point
        };
        let mut advanced = false;
        for data in informed {
            if data.learn_commit(commit) {
                data.store().wake_change_streams();
                advanced = true;
            }
        }
        advanced
    }

    fn takeover_possible(&self) -> bool {
        let state = lock(&self.state);
        state.auto_failover
            && state
                .topology
                .priority_takeover_candidate(Instant::now())
                .is_some()
    }

    /// Catches member `index` up (see [`Inner::catch_up`]) and runs `elect` on the model, with
    /// no replication pass in between or meanwhile: a pass planned while `index` was a
    /// secondary would otherwise go on pulling into (or, finding the entries the catch-up
    /// applied, resyncing) the store of the primary it has become. A member `elect` made
    /// primary writes a no-op, as mongod's new primary does: its op log is then newer than
    /// anything the deposed primary wrote, so no later election brings back a write that
    /// this branch lacks and some member already rolled back.
    pub(crate) fn catch_up_and_elect<R>(
        self: &Arc<Self>,
        index: NodeIndex,
        elect: impl FnOnce(&mut State) -> Result<R, ControlError>,
    ) -> Result<R, ControlError> {
        let pass = lock(&self.replication.pass);
        self.catch_up(index);
        let was_primary = lock(&self.state).topology.primary() == Some(index);
        let result = self.mutate(elect);
        let elected = !was_primary && lock(&self.state).topology.primary() == Some(index);
        if elected {
            if let Some(store) = self.store_of(index) {
                // mongod's new primary notes its term in the op log before it takes writes.
                let noted = store.write_noop("new primary", bson::DateTime::now());
                lock(&self.state).topology.set_applied(index, noted.ts);
            }
        }
        drop(pass);
        if elected {
            self.replicate();
        }
        result
    }

    /// Applies what the new primary `index` lacks from the freshest member it reaches on its
    /// branch (mongod's catch-up), before it takes writes. Callers hold the pass lock.
    fn catch_up(&self, index: NodeIndex) {
        let Some(mine) = self.store_of(index) else {
            return;
        };
        let freshest = {
            let state = lock(&self.state);
            (0..state.slots.len())
                .filter(|&other| {
                    other != index
                        && is_data_bearing(&state.topology, other)
                        && state.topology.is_linked(index, other)
                })
                .map(|other| state.slots[other].data.store())
                .filter(|store| store.op_time().ts > mine.op_time().ts)
                .filter(|store| store.oplog_contains(mine.op_time().ts) == Some(true))
                .max_by_key(|store| store.op_time().ts)
        };
        if let Some(data) = self.member_data(index) {
            // What it fetched as a secondary is behind what it applies now.
            data.forget_pending();
        }
        if let Some(freshest) = freshest {
            let entries = freshest.oplog_since(mine.op_time());
            if let Err(error) = mine.apply_oplog(&entries) {
                tracing::warn!(member = index, %error, "catch-up failed");
            }
            lock(&self.state)
                .topology
                .set_applied(index, mine.op_time().ts);
        }
    }

    /// Each member's applied and known-majority optimes, for `{blackpipe: "status"}`.
    pub(crate) fn replication_status(&self) -> Vec<Document> {
        let state = lock(&self.state);
        state
            .slots
            .iter()
            .enumerate()
            .map(|(index, slot)| {
                let data_bearing = is_data_bearing(&state.topology, index);
                let mut status = doc! {
                    "member": i64::try_from(index).unwrap_or(i64::MAX),
                    "dataBearing": data_bearing,
                };
                if data_bearing && state.topology.kind() == DeploymentKind::ReplicaSet {
                    status.insert("appliedOpTime", slot.data.applied());
                    status.insert("majorityOpTime", slot.data.known_commit());
                    status.insert("replicationPaused", slot.data.is_paused());
                    let cut: Vec<i64> = state
                        .topology
                        .cut_links()
                        .filter_map(|(a, b)| match (a == index, b == index) {
                            (true, _) => Some(b),
                            (_, true) => Some(a),
                            _ => None,
                        })
                        .map(|other| i64::try_from(other).unwrap_or(i64::MAX))
                        .collect();
                    status.insert("partitionedFrom", cut);
                }
                status
            })
            .collect()
    }
}

/// Whether member `index` holds data: a replica set member that is not an arbiter and not
/// removed (every node of a standalone or sharded deployment serves the shared store).
pub(crate) fn is_data_bearing(topology: &Topology, index: NodeIndex) -> bool {
    topology
        .node(index)
        .is_some_and(|node| !matches!(node.role(), Role::Arbiter | Role::Removed))
}

/// Where `member` pulls from: the primary when it reaches it; else (chaining) the reachable
/// data-bearing member with the newest op log ahead of its own.
fn sync_source(topology: &Topology, member: NodeIndex) -> Option<NodeIndex> {
    if let Some(primary) = topology.primary() {
        if primary != member && topology.is_linked(primary, member) {
            return Some(primary);
        }
    }
    let mine = topology.node(member)?.applied();
    (0..topology.nodes().len())
        .filter(|&other| {
            other != member && is_data_bearing(topology, other) && topology.is_linked(member, other)
        })
        .filter(|&other| {
            topology
                .node(other)
                .is_some_and(|node| node.applied() > mine)
        })
        .max_by_key(|&other| topology.node(other).map(|node| node.applied()))
}
