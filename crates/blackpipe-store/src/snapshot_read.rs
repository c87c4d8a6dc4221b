//! Reads at a cluster time: `readConcern: {level: "snapshot", atClusterTime?}` on `find`,
//! `aggregate` and `distinct` outside a transaction.
//!
//! The read sees every collection as of `atClusterTime`, or as of the latest write when the
//! command gives none; the reply carries that time as `atClusterTime` (in the cursor for find
//! and aggregate, at the top level for distinct), as mongod's does, so a snapshot session reads
//! its later commands at the same time. A collection written since is copied and rewound
//! through the store's history ([`crate::history`]); one that was not is read in place.

use std::sync::{Arc, RwLock};

use bson::{Bson, Document, Timestamp};

use super::Store;
use super::catalog::{CollectionHandle, lock, read};
use super::errors::{CommandError, StoreResult, type_name};
use crate::code;

/// A command's read concern, as far as snapshots are concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReadConcern<'a> {
    /// `level`, `"local"` when absent.
    pub(crate) level: &'a str,
    /// `atClusterTime`, only with level snapshot.
    pub(crate) at_cluster_time: Option<Timestamp>,
}

/// Parses `readConcern` (`None` when the command has none).
///
/// # Errors
///
/// TypeMismatch for ill-typed fields; BadValue for an unknown level; InvalidOptions for
/// `atClusterTime` without level snapshot or after the store's latest write.
pub(crate) fn read_concern<'a>(
    store: &Store,
    command: &'a Document,
) -> StoreResult<Option<ReadConcern<'a>>> {
    let Some(read_concern) = command.get("readConcern") else {
        return Ok(None);
    };
    let Bson::Document(read_concern) = read_concern else {
        return Err(CommandError::type_mismatch(format!(
            "BSON field 'readConcern' is the wrong type '{}', expected type 'object'",
            type_name(read_concern)
        )));
    };
    let level = match read_concern.get("level") {
        None => "local",
        Some(Bson::String(level)) => level.as_str(),
        Some(other) => {
            return Err(CommandError::type_mismatch(format!(
                "BSON field 'readConcern.level' is the wrong type '{}', expected type 'string'",
                type_name(other)
            )));
        }
    };
    if !matches!(
        level,
        "local" | "majority" | "linearizable" | "available" | "snapshot"
    ) {
        return Err(CommandError::bad_value(format!(
            "Enumeration value '{level}' for field 'readConcern.level' is not a valid value."
        )));
    }
    let at_cluster_time = match read_concern.get("atClusterTime") {
        None => None,
        Some(Bson::Timestamp(at)) => Some(*at),
        Some(other) => {
            return Err(CommandError::type_mismatch(format!(
                "BSON field 'readConcern.atClusterTime' is the wrong type '{}', expected type 'timestamp'",
                type_name(other)
            )));
        }
    };
    if let Some(at) = at_cluster_time {
        if level != "snapshot" {
            return Err(CommandError::new(
                code::INVALID_OPTIONS,
                "atClusterTime is only allowed with readConcern level 'snapshot'",
            ));
        }
        let latest = lock(&store.oplog).last().ts;
        if at > latest {
            return Err(CommandError::new(
                code::INVALID_OPTIONS,
                format!(
                    "atClusterTime Timestamp({}, {}) is after the latest cluster time Timestamp({}, {})",
                    at.time, at.increment, latest.time, latest.increment
                ),
            ));
        }
    }
    Ok(Some(ReadConcern {
        level,
        at_cluster_time,
    }))
}

/// The time a command outside a transaction reads at: `Some` for level snapshot.
///
/// # Errors
///
/// As [`read_concern`]; InvalidOptions for level snapshot on a command other than find,
/// aggregate or distinct.
pub(crate) fn snapshot_read_time(
    store: &Store,
    name: &str,
    command: &Document,
) -> StoreResult<Option<Timestamp>> {
    let Some(concern) = read_concern(store, command)? else {
        return Ok(None);
    };
    // A getMore reads on from its cursor, opened at the snapshot's time; mongod takes the
    // session's snapshot read concern on it (PyMongo sends it) and it changes nothing.
    if concern.level != "snapshot" || name == "getMore" {
        return Ok(None);
    }
    if !matches!(name, "find" | "aggregate" | "distinct") {
        return Err(CommandError::new(
            code::INVALID_OPTIONS,
            format!(
                "readConcern level 'snapshot' is not supported by '{name}' outside a multi-document transaction"
            ),
        ));
    }
    Ok(Some(
        concern
            .at_cluster_time
            .unwrap_or_else(|| lock(&store.oplog).last().ts),
    ))
}

/// The time a read with `readConcern: {level: "majority"}` outside a transaction reads at: the
/// caller's majority commit point when there is one and writes came after it (else the read
/// reads the latest data in place, as a local read does).
///
/// # Errors
///
/// As [`read_concern`].
pub(crate) fn majority_read_time(
    store: &Store,
    name: &str,
    command: &Document,
    majority_committed: Option<Timestamp>,
) -> StoreResult<Option<Timestamp>> {
    let Some(committed) = majority_committed else {
        return Ok(None);
    };
    if !matches!(name, "find" | "aggregate" | "count" | "distinct") {
        return Ok(None);
    }
    let majority = read_concern(store, command)?.is_some_and(|concern| concern.level == "majority");
    let behind = committed < lock(&store.oplog).last().ts;
    Ok((majority && behind).then_some(committed))
}

/// Collection `db.name` as of `at`: the shared collection if nothing was written to it since,
/// else a private copy rewound to `at`.
///
/// # Errors
///
/// SnapshotTooOld (239) when the history no longer reaches back to `at`.
pub(crate) fn collection_at(
    store: &Store,
    db: &str,
    name: &str,
    at: Timestamp,
) -> StoreResult<Option<CollectionHandle>> {
    let Some(shared) = store.catalog.collection(db, name) else {
        return Ok(None);
    };
    let guard = read(&shared);
    if lock(&store.oplog).last().ts <= at {
        drop(guard);
        return Ok(Some(shared));
    }
    let mut copy = guard.snapshot_copy();
    lock(&store.history).rewind(&mut copy, &guard.ns, at)?;
    drop(guard);
    Ok(Some(Arc::new(RwLock::new(copy))))
}

/// Adds `atClusterTime` to a snapshot read's reply: in its cursor, else at the top level.
pub(crate) fn stamp_reply(reply: &mut Document, at: Timestamp) {
    if let Ok(cursor) = reply.get_document_mut("cursor") {
        cursor.insert("atClusterTime", at);
        return;
    }
    reply.insert("atClusterTime", at);
}
