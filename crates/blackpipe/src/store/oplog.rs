//! The operation clock and op log: every applied write gets a strictly increasing optime, and a
//! bounded log of recent writes lets a lagging secondary report where it would be.

use std::collections::{HashMap, VecDeque};

use bson::{Bson, DateTime, Document, Timestamp};

use super::key::encode_key;
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

/// What kind of change an op log entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OplogOp {
    /// A document was inserted (also for upserts).
    Insert,
    /// A document was updated or replaced.
    Update,
    /// A document was deleted.
    Delete,
    /// A catalog change: create, drop, index creation or removal.
    Command,
}

/// One applied write.
#[derive(Debug, Clone, PartialEq)]
pub struct OplogEntry {
    /// When the write was applied.
    pub op_time: OpTime,
    /// `db.collection` for document writes, `db.$cmd` for catalog changes.
    pub ns: String,
    /// The kind of change.
    pub op: OplogOp,
    /// The `_id` of the document written, for document writes.
    pub id: Option<Bson>,
    /// For a write of a committed multi-document transaction: the transaction's `lsid` and
    /// `txnNumber` (change events show them); `None` for any other write.
    pub transaction: Option<TransactionStamp>,
}

/// The session and transaction number of a committed multi-document transaction's write.
#[derive(Debug, Clone, PartialEq)]
pub struct TransactionStamp {
    /// The transaction's `lsid` document, as the client sent it.
    pub lsid: Document,
    /// The transaction's `txnNumber`.
    pub txn_number: i64,
}

/// Bytes the retained entries may hold (namespaces and `_id`s, plus a fixed cost per entry);
/// past it the oldest are forgotten, whatever the entry capacity. Large `_id`s cannot make the
/// op log grow without bound.
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
    /// The timestamp of the newest write no longer retained (zero while nothing was forgotten).
    forgotten: Timestamp,
}

fn entry_size(entry: &OplogEntry) -> usize {
    ENTRY_OVERHEAD_BYTES
        + entry.ns.len()
        + entry.id.as_ref().map_or(0, value_size)
        + entry
            .transaction
            .as_ref()
            .map_or(0, |stamp| document_size(&stamp.lsid))
}

impl Oplog {
    pub(crate) fn new(capacity: usize) -> Oplog {
        Oplog {
            last: OpTime::ZERO,
            entries: VecDeque::new(),
            capacity,
            bytes: 0,
            applied: HashMap::new(),
            forgotten: Timestamp {
                time: 0,
                increment: 0,
            },
        }
    }

    /// Records one write applied at wall time `now`, returning its optime.
    pub(crate) fn record(
        &mut self,
        now: DateTime,
        ns: &str,
        op: OplogOp,
        id: Option<Bson>,
    ) -> OpTime {
        self.record_stamped(now, ns, op, id, None)
    }

    /// Records one write, stamped with the committed transaction it belongs to (if any).
    pub(crate) fn record_stamped(
        &mut self,
        now: DateTime,
        ns: &str,
        op: OplogOp,
        id: Option<Bson>,
        transaction: Option<TransactionStamp>,
    ) -> OpTime {
        let wall = if now > self.last.wall {
            now
        } else {
            self.last.wall
        };
        let seconds = u32::try_from(wall.timestamp_millis().div_euclid(1000)).unwrap_or(u32::MAX);
        let ts = if seconds > self.last.ts.time {
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
        self.last = OpTime { ts, wall };
        if op != OplogOp::Command {
            *self.applied.entry(ns.to_owned()).or_default() += 1;
        }
        if self.capacity > 0 {
            let entry = OplogEntry {
                op_time: self.last,
                ns: ns.to_owned(),
                op,
                id,
                transaction,
            };
            self.bytes = self.bytes.saturating_add(entry_size(&entry));
            self.entries.push_back(entry);
            self.evict_oldest();
        } else {
            self.forgotten = self.last.ts;
        }
        self.last
    }

    /// Forgets the oldest entries until both the entry capacity and [`MAX_OPLOG_BYTES`] hold
    /// (the newest entry is always kept).
    fn evict_oldest(&mut self) {
        while self.entries.len() > 1
            && (self.entries.len() > self.capacity || self.bytes > MAX_OPLOG_BYTES)
        {
            if let Some(oldest) = self.entries.pop_front() {
                self.bytes = self.bytes.saturating_sub(entry_size(&oldest));
                self.forgotten = oldest.op_time.ts;
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
        let start = self
            .entries
            .partition_point(|entry| entry.op_time.ts <= after.ts);
        self.entries.iter().skip(start).cloned().collect()
    }

    pub(crate) fn applied(&self, ns: &str) -> u64 {
        self.applied.get(ns).copied().unwrap_or(0)
    }

    /// Whether a document of `ns` with encoded `_id` `key` was written after `after`:
    /// `None` when the retained log no longer reaches back to `after`, so nobody can tell.
    pub(crate) fn wrote_since(&self, after: Timestamp, ns: &str, key: &[u8]) -> Option<bool> {
        if self.last.ts <= after {
            return Some(false);
        }
        if after < self.forgotten {
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
}
