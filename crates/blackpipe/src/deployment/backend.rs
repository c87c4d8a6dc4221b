//! The adapter between the deployment and the shared [`Store`]: the members run the data
//! commands through it and report its optimes in `lastWrite` and `$clusterTime`.

use bson::{DateTime, Document, Timestamp};

use crate::store::{CommandContext, OpTime, Store};

/// An optime: the oplog timestamp of a write and its wall-clock time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteTime {
    /// The oplog timestamp.
    pub ts: Timestamp,
    /// The wall-clock time of the write.
    pub wall: DateTime,
}

fn known(op_time: OpTime) -> Option<WriteTime> {
    (op_time != OpTime::ZERO).then_some(WriteTime {
        ts: op_time.ts,
        wall: op_time.wall,
    })
}

/// Runs a data command (CRUD, cursors, indexes, collections, `endSessions`) and returns the
/// store's reply. The member has already dealt with roles, fail points and admin commands.
pub(crate) fn execute(
    store: &Store,
    database: &str,
    command: &Document,
    now: DateTime,
) -> Document {
    store
        .execute(database, command, &CommandContext::new(now))
        .reply
}

/// The optime of the latest write, if there was one.
pub(crate) fn last_write(store: &Store) -> Option<WriteTime> {
    known(store.op_time())
}

/// The optime of the latest write made at or before `wall`: what a secondary lagging behind
/// by `now - wall` has replicated.
pub(crate) fn last_write_before(store: &Store, wall: DateTime) -> Option<WriteTime> {
    known(store.op_time_at(wall))
}
