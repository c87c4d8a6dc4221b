//! The operation clock shared by the stores of one replica set.
//!
//! Each store's op log hands out strictly increasing timestamps on its own. When each member of
//! a simulated replica set owns a store, two members that accept writes on divergent branches
//! (a partitioned old primary and the new one) must still never stamp two different writes with
//! one timestamp: a secondary that rolls back compares op logs by timestamp, and a resume token
//! names a timestamp. Sharing one [`OpClock`] makes every member's next timestamp greater than any
//! timestamp handed out or applied by any member.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bson::Timestamp;

use super::oplog::{packed, unpacked};

/// A clock of oplog timestamps shared by the stores of one replica set (see
/// [`crate::StoreOptions::with_clock`]): no two writes on any of them get the same timestamp.
/// Cloning shares the clock; [`OpClock::default`] makes a new one at timestamp (0, 0).
#[derive(Debug, Clone, Default)]
pub struct OpClock {
    /// The newest timestamp handed out or applied by any store sharing the clock, [`packed`].
    latest: Arc<AtomicU64>,
}

impl OpClock {
    /// The newest timestamp handed out or applied by any store sharing the clock.
    pub fn latest(&self) -> Timestamp {
        unpacked(self.latest.load(Ordering::Acquire))
    }

    /// Takes the next timestamp: `candidate` if it is newer than every timestamp the clock has
    /// seen, else the one right after the newest. One atomic step, so two stores ticking at
    /// once never take the same timestamp.
    pub(crate) fn next_after(&self, candidate: Timestamp) -> Timestamp {
        let candidate = packed(candidate);
        let mut current = self.latest.load(Ordering::Acquire);
        loop {
            let next = candidate.max(current.saturating_add(1));
            match self.latest.compare_exchange_weak(
                current,
                next,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return unpacked(next),
                Err(seen) => current = seen,
            }
        }
    }

    /// Notes a timestamp taken elsewhere (a replicated entry): later ticks come after it.
    pub(crate) fn observe(&self, ts: Timestamp) {
        self.latest.fetch_max(packed(ts), Ordering::AcqRel);
    }
}
