//! The operation clock and op log: every applied write gets a strictly increasing optime, and a
//! bounded log of recent writes lets a lagging secondary report where it would be.
//!
//! A committed transaction is the exception: all its writes share one optime (mongod writes
//! them as one `applyOps` entry), recorded as consecutive entries told apart by
//! [`OplogEntry::txn_op_index`]. Entries stay one per document, so every reader of the log
//! (change streams, the conflict check, the consumer's tap) handles a transaction's writes as
//! it handles any other write; only the position of an entry is `(timestamp, index)`.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use bson::{Bson, DateTime, Document, Timestamp};

use super::change_signal::{ChangeSignal, ChangeSubscription};
use super::key::encode_key;
use super::op_clock::OpClock;
use super::replication::entry::ApplyInfo;
use super::value_order::{document_size, value_size};

/// The position of a write in the store's history: the oplog timestamp (seconds + increment)
/// and the wall-clock time the write was applied at (as given by the caller).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpTime {
    /// The oplog timestamp; strictly increasing across writes.
    pub ts: Timestamp,
    /// The wall-clock time of the write, never decreasing.
    pub wall: DateTime,
}

impl OpTime {
    /// The optime before any write: timestamp (0, 0) at the Unix epoch.
    pub const ZERO: OpTime = OpTime {
        ts: Timestamp {
            time: 0,
            increment: 0,
        },
        wall: DateTime::from_millis(0),
    };
}

/// A timestamp as one number that orders as the timestamp does (seconds, then increment).
pub(crate) fn packed(ts: Timestamp) -> u64 {
    (u64::from(ts.time) << 32) | u64::from(ts.increment)
}

/// The timestamp of a [`packed`] number.
pub(crate) fn unpacked(packed: u64) -> Timestamp {
    Timestamp {
        time: u32::try_from(packed >> 32).unwrap_or(u32::MAX),
        increment: u32::try_from(packed & u64::from(u32::MAX)).unwrap_or(u32::MAX),
    }
}

/// What kind of change an op log entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OplogOp {
    /// A document was inserted (also for upserts).
    Insert,
    /// A document was updated or replaced.
    Update,
    /// A document was deleted.
    Delete,
    /// A catalog change: create, drop, rename, index creation or removal, database drop.
    Command,
}

/// What one op log entry changed, with what a change event about it shows.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Change {
    /// A document was inserted (also by an upsert); the document as stored.
    Insert(Arc<Document>),
    /// A document was modified by update operators or an update pipeline.
    Update {
        /// The change event's `updateDescription`: `updatedFields`, `removedFields`,
        /// `truncatedArrays`, `disambiguatedPaths`.
        description: Arc<Document>,
        /// The document after the update, kept only when the collection records
        /// pre- and post-images (`changeStreamPreAndPostImages`).
        post_image: Option<Arc<Document>>,
    },
    /// A document was replaced; the replacement as stored.
    Replace(Arc<Document>),
    /// A document was deleted.
    Delete,
    /// A collection was created with these options.
    Create(Arc<Document>),
    /// Indexes were created (their specifications).
    CreateIndexes(Arc<Vec<Document>>),
    /// Indexes were dropped (their names).
    DropIndexes(Arc<Vec<String>>),
    /// A collection's options changed (`collMod`).
    Modify(Arc<Document>),
    /// A collection was dropped.
    Drop,
    /// A collection was renamed to `to` (`db.collection`); `dropped_target` is the UUID of the
    /// collection `dropTarget` replaced, if any.
    Rename {
        /// The new namespace.
        to: String,
        /// The UUID of the collection the rename dropped, if it dropped one.
        dropped_target: Option<[u8; 16]>,
    },
    /// A database was dropped (its collections' drops come first, each in its own entry).
    DropDatabase,
    /// Nothing changed: a note in the op log, such as the one a new primary writes at the
    /// start of its term (mongod's `{msg: "new primary"}`). No change stream shows it.
    Noop(Arc<Document>),
}

impl Change {
    /// The coarse kind of the change.
    pub fn op(&self) -> OplogOp {
        match self {
            Change::Insert(_) => OplogOp::Insert,
            Change::Update { .. } | Change::Replace(_) => OplogOp::Update,
            Change::Delete => OplogOp::Delete,
            _ => OplogOp::Command,
        }
    }

    /// An update's post-image, if the entry keeps one.
    fn post_image(&self) -> Option<&Arc<Document>> {
        match self {
            Change::Update { post_image, .. } => post_image.as_ref(),
            _ => None,
        }
    }

    /// Approximate bytes held besides the entry's fixed cost.
    fn size(&self) -> usize {
        match self {
            Change::Insert(document) | Change::Replace(document) => document_size(document),
            Change::Update {
                description,
                post_image,
            } => document_size(description)
                .saturating_add(post_image.as_deref().map_or(0, document_size)),
            Change::Create(document) | Change::Modify(document) | Change::Noop(document) => {
                document_size(document)
            }
            Change::CreateIndexes(specs) => specs
                .iter()
                .map(document_size)
                .fold(0, usize::saturating_add),
            Change::DropIndexes(names) => {
                names.iter().map(String::len).fold(0, usize::saturating_add)
            }
            Change::Rename { to, .. } => to.len(),
            Change::Delete | Change::Drop | Change::DropDatabase => 0,
        }
    }
}

/// The session of a write made by a retryable write or a transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteSession {
    /// The command's `lsid`.
    pub lsid: Arc<Document>,
    /// The command's `txnNumber`.
    pub txn_number: i64,
    /// Whether the write belongs to a multi-document transaction (change events show the
    /// session only then, as mongod's do).
    pub in_transaction: bool,
}

/// One write, as a command hands it to the op log.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OplogWrite {
    /// `db.collection` (`db.$cmd` for a database drop).
    pub(crate) ns: String,
    /// The collection's UUID, when the write concerns one.
    pub(crate) uuid: Option<[u8; 16]>,
    /// The `_id` of the document written, for document writes.
    pub(crate) id: Option<Bson>,
    pub(crate) change: Change,
    /// The document before an update, replacement or delete, when the collection records
    /// pre- and post-images.
    pub(crate) pre_image: Option<Arc<Document>>,
    /// The version an update, replacement or delete replaced, whatever the collection's
    /// options: the store's history keeps it for reads at an earlier time (not the op log).
    pub(crate) previous: Option<Arc<Document>>,
    /// What a secondary needs to apply the write.
    pub(crate) apply: ApplyInfo,
}

impl OplogWrite {
    /// Approximate bytes the write holds as a transaction keeps it until its commit (the
    /// namespace, `_id`, change and pre-image; not `previous`, which it does not keep). Nor an
    /// update's after-image: mongod bounds a transaction by its oplog entries, where an update
    /// is a diff (the description here), so counting it would refuse transactions mongod
    /// takes; it is at most one more document per write, a bounded factor.
    pub(crate) fn size(&self) -> usize {
        ENTRY_OVERHEAD_BYTES
            .saturating_add(self.ns.len())
            .saturating_add(self.id.as_ref().map_or(0, value_size))
            .saturating_add(self.change.size())
            .saturating_add(self.pre_image.as_deref().map_or(0, document_size))
    }

    /// A catalog change of namespace `ns`.
    pub(crate) fn catalog(ns: String, uuid: Option<[u8; 16]>, change: Change) -> OplogWrite {
        OplogWrite {
            ns,
            uuid,
            id: None,
            change,
            pre_image: None,
            previous: None,
            apply: ApplyInfo::default(),
        }
    }
}

/// One applied write.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct OplogEntry {
    /// When the write was applied.
    pub op_time: OpTime,
    /// `db.collection` (for catalog changes too: the collection created, dropped, renamed or
    /// whose indexes changed); `db.$cmd` for a database drop.
    pub ns: String,
    /// The kind of change.
    pub op: OplogOp,
    /// The `_id` of the document written, for document writes.
    pub id: Option<Bson>,
    /// The UUID of the collection written, when the write concerns one.
    pub uuid: Option<[u8; 16]>,
    /// What changed.
    pub change: Change,
    /// The document before an update, replacement or delete, kept only when the collection
    /// records pre- and post-images (`changeStreamPreAndPostImages: {enabled: true}`).
    pub pre_image: Option<Arc<Document>>,
    /// The session and transaction number of a retryable or transactional write.
    pub session: Option<WriteSession>,
    /// The entry's place among the writes of its optime: 0 for a lone write, the write's
    /// index within the transaction for a committed transaction's writes (mongod's
    /// `txnOpIndex`), which all share one optime.
    pub txn_op_index: u32,
    /// What a secondary needs to apply the entry ([`crate::Store::apply_oplog`]).
    pub(crate) apply: ApplyInfo,
}

impl OplogEntry {
    /// The database and collection of the entry's namespace.
    pub fn db_and_collection(&self) -> (&str, &str) {
        self.ns.split_once('.').unwrap_or((self.ns.as_str(), ""))
    }
}

/// Bytes the retained entries may hold (namespaces, `_id`s, documents and images, plus a fixed
/// cost per entry); past it the oldest are forgotten, whatever the entry capacity. Large
/// documents cannot make the op log grow without bound.
pub(crate) const MAX_OPLOG_BYTES: usize = 64 * 1024 * 1024;

/// Approximate bytes one entry costs besides its namespace and `_id`.
const ENTRY_OVERHEAD_BYTES: usize = 96;

/// The clock, the bounded entry log and per-namespace counters of applied document writes.
#[derive(Debug)]
pub(crate) struct Oplog {
    last: OpTime,
    entries: VecDeque<OplogEntry>,
    capacity: usize,
    /// Bytes held by `entries`, per [`entry_size`].
    bytes: usize,
    applied: HashMap<String, u64>,
    /// The position (timestamp, [`OplogEntry::txn_op_index`]) of the newest entry forgotten,
    /// if any was: a change stream positioned before it has lost history.
    evicted_through: Option<(Timestamp, u32)>,
    /// Signalled on every write, so that change-stream getMores wait for writes instead of
    /// polling.
    changes: ChangeSignal,
    /// Shared with the other members' op logs, so no two writes anywhere share a timestamp.
    clock: OpClock,
}

fn entry_size(entry: &OplogEntry) -> usize {
    let session = entry
        .session
        .as_ref()
        .map_or(0, |session| document_size(&session.lsid));
    ENTRY_OVERHEAD_BYTES
        .saturating_add(entry.ns.len())
        .saturating_add(entry.id.as_ref().map_or(0, value_size))
        .saturating_add(entry.change.size())
        .saturating_add(entry.pre_image.as_deref().map_or(0, document_size))
        .saturating_add(entry.apply.size(entry.change.post_image()))
        .saturating_add(session)
}

impl Oplog {
    pub(crate) fn new(capacity: usize, clock: OpClock) -> Oplog {
        Oplog {
            last: OpTime::ZERO,
            entries: VecDeque::new(),
            capacity,
            bytes: 0,
            applied: HashMap::new(),
            evicted_through: None,
            changes: ChangeSignal::default(),
            clock,
        }
    }

    /// Records one write applied at wall time `now`, returning its optime.
    pub(crate) fn record(
        &mut self,
        now: DateTime,
        write: OplogWrite,
        session: Option<WriteSession>,
    ) -> OpTime {
        let mut write = write;
        write.apply.previous_ts = packed(self.last.ts);
        let op_time = self.tick(now);
        self.push(op_time, 0, write, session);
        self.changes.notify();
        op_time
    }

    /// Records the writes of one committed transaction, in order, all at one optime (the
    /// returned one; `None`, and no tick of the clock, when there are none). A reader of the
    /// log or of the history at any timestamp sees all of them or none.
    pub(crate) fn record_transaction(
        &mut self,
        now: DateTime,
        writes: Vec<OplogWrite>,
        session: &WriteSession,
    ) -> Option<OpTime> {
        if writes.is_empty() {
            return None;
        }
        let previous_ts = packed(self.last.ts);
        let op_time = self.tick(now);
        for (index, mut write) in (0..=u32::MAX).zip(writes) {
            write.apply.previous_ts = previous_ts;
            self.push(op_time, index, write, Some(session.clone()));
        }
        self.changes.notify();
        Some(op_time)
    }

    /// Advances the clock for a write applied at wall time `now`: a timestamp after every
    /// earlier one of this log and of the shared clock, a wall time never earlier.
    fn tick(&mut self, now: DateTime) -> OpTime {
        let wall = if now > self.last.wall {
            now
        } else {
            self.last.wall
        };
        let seconds = u32::try_from(wall.timestamp_millis().div_euclid(1000)).unwrap_or(u32::MAX);
        let candidate = if seconds > self.last.ts.time {
            Timestamp {
                time: seconds,
                increment: 1,
            }
        } else {
            Timestamp {
                time: self.last.ts.time,
                increment: self.last.ts.increment.saturating_add(1),
            }
        };
        let ts = self.clock.next_after(candidate);
        self.last = OpTime { ts, wall };
        self.last
    }

    /// Appends one entry at `op_time` (already taken from [`Oplog::tick`]).
    fn push(
        &mut self,
        op_time: OpTime,
        txn_op_index: u32,
        write: OplogWrite,
        session: Option<WriteSession>,
    ) {
        let op = write.change.op();
        self.push_entry(OplogEntry {
            op_time,
            ns: write.ns,
            op,
            id: write.id,
            uuid: write.uuid,
            change: write.change,
            pre_image: write.pre_image,
            session,
            txn_op_index,
            apply: write.apply,
        });
    }

    /// Counts and retains one entry (its optime is already the log's last).
    fn push_entry(&mut self, entry: OplogEntry) {
        if entry.op != OplogOp::Command {
            let applied = self.applied.entry(entry.ns.clone()).or_default();
            *applied = applied.saturating_add(1);
        }
        if self.capacity > 0 {
            self.bytes = self.bytes.saturating_add(entry_size(&entry));
            self.entries.push_back(entry);
            self.evict_oldest();
        } else {
            self.evicted_through = Some((entry.op_time.ts, entry.txn_op_index));
        }
    }

    /// Appends an entry another store's op log made, at its optime (a replicated write; the
    /// caller checked that it comes after [`Oplog::last`]), which becomes this log's last
    /// optime, wall time included (a secondary reports its source's `lastWriteDate`). The
    /// shared clock learns its timestamp. Waiting readers are woken by [`Oplog::notify`], once
    /// per applied batch.
    pub(crate) fn append(&mut self, entry: OplogEntry) {
        self.clock.observe(entry.op_time.ts);
        self.last = entry.op_time;
        self.push_entry(entry);
    }

    /// At most `limit` retained entries strictly after timestamp `after`, oldest first, and
    /// never part of a transaction: past `limit`, the rest of the last entry's optime follows.
    pub(crate) fn after(&self, after: Timestamp, limit: usize) -> Vec<OplogEntry> {
        let start = self
            .entries
            .partition_point(|entry| entry.op_time.ts <= after);
        let mut taken: Vec<OplogEntry> = Vec::new();
        for entry in self.entries.iter().skip(start) {
            let same_optime = taken
                .last()
                .is_some_and(|last| last.op_time.ts == entry.op_time.ts);
            if taken.len() >= limit && !same_optime {
                break;
            }
            taken.push(entry.clone());
        }
        taken
    }

    /// The shared clock the log ticks with.
    pub(crate) fn clock(&self) -> &OpClock {
        &self.clock
    }

    /// Wakes the change-stream getMores waiting for a write.
    pub(crate) fn notify(&self) {
        self.changes.notify();
    }

    /// Whether an entry at `ts` is retained; `None` when `ts` is older than the retained log
    /// reaches (nobody can tell).
    pub(crate) fn contains(&self, ts: Timestamp) -> Option<bool> {
        match self.evicted_through {
            Some((evicted, _)) if ts < evicted => return None,
            // The newest forgotten entry was at `ts`.
            Some((evicted, _)) if ts == evicted => return Some(true),
            _ => {}
        }
        let position = self.entries.partition_point(|entry| entry.op_time.ts < ts);
        Some(
            self.entries
                .get(position)
                .is_some_and(|entry| entry.op_time.ts == ts),
        )
    }

    /// A copy holding the same entries, counters and clock position, retaining `capacity`
    /// entries and ticking with `clock` (a forked store's log).
    pub(crate) fn copy(&self, capacity: usize, clock: OpClock) -> Oplog {
        clock.observe(self.last.ts);
        let mut copy = Oplog {
            last: self.last,
            entries: self.entries.clone(),
            capacity,
            bytes: self.bytes,
            applied: self.applied.clone(),
            evicted_through: self.evicted_through,
            changes: ChangeSignal::default(),
            clock,
        };
        if capacity == 0 {
            if let Some(newest) = copy.entries.pop_back() {
                copy.evicted_through = Some((newest.op_time.ts, newest.txn_op_index));
            }
            copy.entries.clear();
            copy.bytes = 0;
        }
        copy.evict_oldest();
        copy
    }

    /// Forgets the oldest entries until both the entry capacity and [`MAX_OPLOG_BYTES`] hold
    /// (the newest entry is always kept).
    fn evict_oldest(&mut self) {
        while self.entries.len() > 1
            && (self.entries.len() > self.capacity || self.bytes > MAX_OPLOG_BYTES)
        {
            if let Some(oldest) = self.entries.pop_front() {
                self.bytes = self.bytes.saturating_sub(entry_size(&oldest));
                self.evicted_through = Some((oldest.op_time.ts, oldest.txn_op_index));
            }
        }
    }

    /// How many entries are retained.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn last(&self) -> OpTime {
        self.last
    }

    /// The optime of the newest write applied at or before `wall`. Older than the retained log,
    /// the oldest retained entry's predecessor is unknown, so the answer is [`OpTime::ZERO`].
    pub(crate) fn at(&self, wall: DateTime) -> OpTime {
        if self.last.wall <= wall {
            return self.last;
        }
        let newer = self
            .entries
            .partition_point(|entry| entry.op_time.wall <= wall);
        match newer
            .checked_sub(1)
            .and_then(|position| self.entries.get(position))
        {
            Some(entry) => entry.op_time,
            None => OpTime::ZERO,
        }
    }

    /// Retained entries strictly after `after`.
    pub(crate) fn since(&self, after: OpTime) -> Vec<OplogEntry> {
        self.from(after.ts, u32::MAX, usize::MAX)
    }

    /// At most `limit` retained entries at or after position (`ts`, `txn_op_index`), oldest
    /// first.
    pub(crate) fn from(&self, ts: Timestamp, txn_op_index: u32, limit: usize) -> Vec<OplogEntry> {
        let start = self
            .entries
            .partition_point(|entry| (entry.op_time.ts, entry.txn_op_index) < (ts, txn_op_index));
        self.entries
            .iter()
            .skip(start)
            .take(limit)
            .cloned()
            .collect()
    }

    /// The position (timestamp, [`OplogEntry::txn_op_index`]) of the newest forgotten entry, if
    /// any was forgotten.
    pub(crate) fn evicted_through(&self) -> Option<(Timestamp, u32)> {
        self.evicted_through
    }

    /// A subscription that sees every later write (the current one counts as seen).
    pub(crate) fn subscribe(&self) -> ChangeSubscription {
        self.changes.subscribe()
    }

    /// Whether a document of `ns` with encoded `_id` `key` was written after `after`:
    /// `None` when the retained log no longer reaches back to `after`, so nobody can tell.
    pub(crate) fn wrote_since(&self, after: Timestamp, ns: &str, key: &[u8]) -> Option<bool> {
        if self.last.ts <= after {
            return Some(false);
        }
        if self
            .evicted_through
            .is_some_and(|(evicted, _)| after < evicted)
        {
            return None;
        }
        let newer = self
            .entries
            .iter()
            .rev()
            .take_while(|entry| entry.op_time.ts > after);
        Some(newer.into_iter().any(|entry| {
            entry.ns == ns && entry.id.as_ref().is_some_and(|id| encode_key(id) == key)
        }))
    }

    pub(crate) fn applied(&self, ns: &str) -> u64 {
        self.applied.get(ns).copied().unwrap_or(0)
    }
}
