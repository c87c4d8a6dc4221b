//! Replication between stores: each data-bearing member of a simulated replica set owns a
//! [`Store`]; a secondary applies the entries of its sync source's op log
//! ([`Store::apply_oplog`]) and a member that cannot (it diverged, or joins empty) starts over
//! from a copy of its sync source ([`Store::fork`]).
//!
//! An entry carries what applying needs besides what change events show (`entry::ApplyInfo`):
//! an update's document after the write, a retryable write's statement with its outcome, the
//! index change of a `collMod`, and the timestamp of the source log's previous write, so that
//! a secondary sent entries with a gap before them refuses them instead of silently missing
//! writes. Applied entries land in the secondary's op log unchanged (same optimes, same
//! `txn_op_index`), so change streams and resume tokens behave the same on every member.

mod apply;
pub(crate) mod entry;
mod fork;
mod transaction;

use std::fmt;

use bson::Timestamp;

use crate::Store;
use crate::catalog::{lock, write};
use crate::oplog::{Change, OpTime, OplogEntry, OplogWrite, packed};

/// Why [`Store::apply_oplog`] could not apply an entry: the entries do not continue this
/// store's op log (a gap, or entries out of order), or an entry does not fit this store's data
/// (an unknown collection or collection UUID, a document that is not there, a refused write).
/// The entries before it were applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyError {
    op_time: OpTime,
    txn_op_index: u32,
    reason: String,
}

impl ApplyError {
    fn new(entry: &OplogEntry, reason: impl Into<String>) -> ApplyError {
        ApplyError {
            op_time: entry.op_time,
            txn_op_index: entry.txn_op_index,
            reason: reason.into(),
        }
    }

    /// The optime of the entry that could not be applied.
    pub fn op_time(&self) -> OpTime {
        self.op_time
    }

    /// Why it could not be applied.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for ApplyError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Timestamp { time, increment } = self.op_time.ts;
        write!(
            formatter,
            "cannot apply the op log entry at Timestamp({time}, {increment}) #{}: {}",
            self.txn_op_index, self.reason
        )
    }
}

impl std::error::Error for ApplyError {}

impl Store {
    /// Applies `entries`, fetched from another store's [`Store::oplog_since`] (or
    /// [`Store::oplog_entries_after`]), in order and at their optimes: this store's op log then
    /// holds the same entries, its data the same documents, indexes and collections, its
    /// history the versions the writes replaced (snapshot reads work here), its
    /// retryable-write table the retryable statements (a retry answered here replays them) and
    /// the committed transactions. Waiting tailable cursors and change streams are woken.
    /// Entries at or before this store's last optime are skipped, so a batch delivered twice
    /// applies once. The whole batch applies under the commit gate: no reader sees part of it
    /// (nor part of a transaction). Returns the store's last optime.
    ///
    /// # Errors
    ///
    /// [`ApplyError`] for the first entry that does not follow this store's last write (a
    /// gap: the source forgot entries this store never got, or diverged from it) or that
    /// cannot apply; the entries before it stay applied (a member in that state starts over
    /// from a [`Store::fork`] of its sync source).
    ///
    /// # Example
    ///
    /// ```
    /// use blackpipe_store::{CommandContext, OpClock, Store, StoreOptions};
    /// use bson::{DateTime, doc};
    ///
    /// let clock = OpClock::default();
    /// let primary = Store::new(StoreOptions::default().with_clock(clock.clone()));
    /// let secondary = Store::new(StoreOptions::default().with_clock(clock));
    /// let context = CommandContext::new(DateTime::from_millis(1_700_000_000_000));
    /// let insert = doc! { "insert": "c", "documents": [{ "_id": 1 }] };
    /// assert!(primary.execute("db", &insert, &context).is_ok());
    ///
    /// let last = secondary.apply_oplog(&primary.oplog_since(secondary.op_time()))?;
    /// assert_eq!(last, primary.op_time());
    /// assert_eq!(secondary.documents("db", "c"), [doc! { "_id": 1 }]);
    /// # Ok::<(), blackpipe_store::ApplyError>(())
    /// ```
    pub fn apply_oplog(&self, entries: &[OplogEntry]) -> Result<OpTime, ApplyError> {
        let _no_reader = write(&self.commit_gate);
        let start = lock(&self.oplog).last().ts;
        let fresh: Vec<&OplogEntry> = entries
            .iter()
            .filter(|entry| entry.op_time.ts > start)
            .collect();
        let outcome = self.apply_in_order(&fresh, start);
        if !fresh.is_empty() {
            lock(&self.oplog).notify();
        }
        outcome.map(|()| self.op_time())
    }

    /// Applies `entries`, each after the one before (the first after `last`): a committed
    /// transaction's entries (one optime) at once, any other entry alone.
    fn apply_in_order(&self, entries: &[&OplogEntry], last: Timestamp) -> Result<(), ApplyError> {
        let mut last = last;
        let mut rest = entries;
        while let Some(first) = rest.first() {
            check_successor(first, last)?;
            let in_transaction = first
                .session
                .as_ref()
                .is_some_and(|session| session.in_transaction);
            let count = if in_transaction {
                rest.iter()
                    .take_while(|entry| entry.op_time.ts == first.op_time.ts)
                    .count()
            } else {
                1
            };
            let (group, after) = rest.split_at(count);
            if in_transaction {
                self.apply_transaction(group)?;
            } else {
                self.apply_entry(first)?;
            }
            last = first.op_time.ts;
            rest = after;
        }
        Ok(())
    }

    /// Whether this store's op log has an entry at `ts`; `None` when `ts` is older than the
    /// retained log (nobody can tell). A member compares its sync source's log with its own
    /// this way to find where they diverged.
    pub fn oplog_contains(&self, ts: Timestamp) -> Option<bool> {
        lock(&self.oplog).contains(ts)
    }

    /// At most `limit` retained op log entries after timestamp `ts`, oldest first (a little
    /// more rather than part of a transaction: all the entries of the last optime come).
    pub fn oplog_entries_after(&self, ts: Timestamp, limit: usize) -> Vec<OplogEntry> {
        lock(&self.oplog).after(ts, limit)
    }

    /// Writes a no-op entry to the op log at wall time `now` (`admin.$cmd`, `{msg: message}`)
    /// and returns its optime. A new primary writes one as its term starts, as mongod's does:
    /// its op log is then newer than anything a deposed primary wrote, so that primary's
    /// writes the new branch lacks are rolled back, never brought back by a later election.
    pub fn write_noop(&self, message: &str, now: bson::DateTime) -> OpTime {
        let note = Change::Noop(std::sync::Arc::new(bson::doc! { "msg": message }));
        lock(&self.oplog).record(
            now,
            OplogWrite::catalog("admin.$cmd".to_owned(), None, note),
            None,
        )
    }

    /// Wakes the change-stream getMores waiting on this store, so that they look again: what
    /// they may return changes when the caller's majority commit point
    /// ([`crate::CommandContext::with_majority_committed`]) advances without a new write.
    pub fn wake_change_streams(&self) {
        lock(&self.oplog).notify();
    }
}

/// Checks that `entry` is the write right after `last` in its source's log.
fn check_successor(entry: &OplogEntry, last: Timestamp) -> Result<(), ApplyError> {
    if entry.op_time.ts <= last {
        return Err(ApplyError::new(entry, "the entries are out of order"));
    }
    if entry.apply.previous_ts != packed(last) {
        return Err(ApplyError::new(
            entry,
            format!(
                "a gap: the entry does not follow this store's last write at Timestamp({}, {})",
                last.time, last.increment
            ),
        ));
    }
    Ok(())
}
