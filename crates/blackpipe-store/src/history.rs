//! Recent document versions, for reads at a past cluster time (snapshot reads, transactions).
//!
//! Every document write records the state it replaced (the previous version, or none for an
//! insert) with the write's optime. A reader copies a collection under its lock and, still under
//! that lock, rewinds the copy by putting back the previous versions of the writes newer than
//! its read time, newest first. Each step restores a state the collection really held, so unique
//! indexes stay consistent throughout.
//!
//! Bounded like mongod's `minSnapshotHistoryWindowInSeconds` (300 s) and more: versions older
//! than [`HISTORY_WINDOW_MILLIS`], past [`MAX_HISTORY_VERSIONS`] or past [`MAX_HISTORY_BYTES`]
//! of previous documents are forgotten; reading before a forgotten version fails with
//! SnapshotTooOld (239). Capped collections drop their oldest documents without recording them,
//! so reads of a capped collection at a past time may miss documents since capped away.

use std::collections::VecDeque;
use std::sync::Arc;

use bson::{Document, Timestamp};

use super::collection::Collection;
use super::errors::{CommandError, StoreResult};
use super::oplog::OpTime;
use super::value_order::document_size;
use crate::code;

/// How long (by wall time of the writes) versions are kept: mongod's default
/// `minSnapshotHistoryWindowInSeconds`.
pub(crate) const HISTORY_WINDOW_MILLIS: i64 = 300_000;

/// The most versions kept.
pub(crate) const MAX_HISTORY_VERSIONS: usize = 100_000;

/// The most bytes of previous documents kept.
pub(crate) const MAX_HISTORY_BYTES: usize = 64 * 1024 * 1024;

/// Approximate bytes one version costs besides its previous document.
const VERSION_OVERHEAD_BYTES: usize = 96;

#[derive(Debug, Clone)]
struct Version {
    op_time: OpTime,
    ns: String,
    key: Vec<u8>,
    previous: Option<Arc<Document>>,
    bytes: usize,
}

/// See the module documentation.
#[derive(Debug, Clone)]
pub(crate) struct History {
    versions: VecDeque<Version>,
    bytes: usize,
    /// The newest timestamp forgotten: reads at or before it cannot be rewound to.
    forgotten: Timestamp,
}

impl Default for History {
    fn default() -> Self {
        History {
            versions: VecDeque::new(),
            bytes: 0,
            forgotten: Timestamp {
                time: 0,
                increment: 0,
            },
        }
    }
}

impl History {
    /// Records that the write at `op_time` replaced `previous` (none: the document was
    /// inserted) of document `key` in `ns`. Called under the collection's lock, so the versions
    /// of one collection are in write order.
    pub(crate) fn push(
        &mut self,
        op_time: OpTime,
        ns: &str,
        key: Vec<u8>,
        previous: Option<Arc<Document>>,
    ) {
        let bytes = VERSION_OVERHEAD_BYTES
            + ns.len()
            + key.len()
            + previous.as_deref().map_or(0, document_size);
        self.bytes = self.bytes.saturating_add(bytes);
        self.versions.push_back(Version {
            op_time,
            ns: ns.to_owned(),
            key,
            previous,
            bytes,
        });
        let cutoff = op_time
            .wall
            .timestamp_millis()
            .saturating_sub(HISTORY_WINDOW_MILLIS);
        while let Some(oldest) = self.versions.front() {
            let over = self.versions.len() > MAX_HISTORY_VERSIONS
                || self.bytes > MAX_HISTORY_BYTES
                || oldest.op_time.wall.timestamp_millis() < cutoff;
            if !over {
                break;
            }
            if let Some(oldest) = self.versions.pop_front() {
                self.bytes = self.bytes.saturating_sub(oldest.bytes);
                if oldest.op_time.ts > self.forgotten {
                    self.forgotten = oldest.op_time.ts;
                }
            }
        }
    }

    /// Rewinds `copy` (a copy of collection `ns` taken under the lock the caller still holds)
    /// to its state at `at`.
    ///
    /// # Errors
    ///
    /// SnapshotTooOld (239) when versions newer than `at` were forgotten.
    pub(crate) fn rewind(&self, copy: &mut Collection, ns: &str, at: Timestamp) -> StoreResult<()> {
        if at < self.forgotten {
            return Err(CommandError::new(
                code::SNAPSHOT_TOO_OLD,
                format!(
                    "Read timestamp Timestamp({}, {}) is older than the oldest available timestamp",
                    at.time, at.increment
                ),
            ));
        }
        let newer = self
            .versions
            .iter()
            .rev()
            .take_while(|version| version.op_time.ts > at);
        for version in newer.filter(|version| version.ns == ns) {
            copy.restore(&version.key, version.previous.as_deref());
        }
        Ok(())
    }
}
