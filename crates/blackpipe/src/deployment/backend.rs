//! What the deployment needs from the data it serves, as a trait: the members run the CRUD
//! commands through it and report its optimes in `lastWrite` and `$clusterTime`.

use bson::{DateTime, Document, Timestamp};

/// An optime: the oplog timestamp of a write and its wall-clock time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteTime {
    /// The oplog timestamp.
    pub ts: Timestamp,
    /// The wall-clock time of the write.
    pub wall: DateTime,
}

/// The data behind a deployment, shared by all its nodes (a replica set's members see the same
/// data; replication lag is only reported, through [`DataStore::last_write_before`]).
pub trait DataStore: Send + Sync + 'static {
    /// Runs a data command (CRUD, cursors, indexes, collections, sessions) on `database` and
    /// returns mongod's reply: `{ok: 1, ...}` or `{ok: 0, errmsg, code, codeName}`. The
    /// deployment has already dealt with roles, fail points and admin commands. `now` is the
    /// wall-clock time to record for a write.
    fn execute(&self, database: &str, command: &Document, now: DateTime) -> Document;

    /// The optime of the latest write, if there was one.
    fn last_write(&self) -> Option<WriteTime>;

    /// The optime of the latest write made at or before `wall` (what a secondary lagging
    /// behind by `now - wall` has replicated).
    fn last_write_before(&self, wall: DateTime) -> Option<WriteTime>;
}
