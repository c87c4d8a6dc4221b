//! The getMore of a tailable cursor: once its results run out, it picks up the documents
//! inserted into the capped collection since it last looked.

use std::sync::Arc;
use std::time::Duration;

use bson::{Bson, Document};

use super::Exec;
use crate::Store;
use crate::catalog::{lock, read};
use crate::change_signal::ChangeSubscription;
use crate::code;
use crate::cursor::{InsertWait, Tail};
use crate::errors::{CommandError, StoreResult};

/// How long an awaitData getMore waits without a `maxTimeMS` (or with `maxTimeMS: 0`).
const DEFAULT_AWAIT_TIME: Duration = Duration::from_secs(1);

/// The error of a getMore on an unknown (or killed) cursor.
pub(crate) fn cursor_not_found(id: i64) -> CommandError {
    CommandError::new(code::CURSOR_NOT_FOUND, format!("cursor id {id} not found"))
}

/// Moves the documents inserted since the tailable cursor `id` last looked into its results.
/// For an awaitData cursor that found none, returns how the caller may wait for an insert.
///
/// # Errors
///
/// CappedPositionLost (136) if the document the cursor stopped at was removed (the cursor
/// fell behind the capped collection), QueryPlanKilled (175) if the collection is gone,
/// CursorNotFound (43) if the cursor was killed meanwhile. The cursor is closed on the first two.
pub(crate) fn refill(
    exec: &Exec<'_>,
    id: i64,
    tail: &Tail,
    command: &Document,
) -> StoreResult<Option<InsertWait>> {
    let polled = poll(exec.store, tail);
    let mut registry = lock(&exec.store.cursors);
    let Polled {
        found,
        last_record,
        changes,
    } = match polled {
        Ok(polled) => polled,
        Err(error) => {
            registry.remove(id);
            return Err(error);
        }
    };
    let cursor = registry.get_mut(id).ok_or_else(|| cursor_not_found(id))?;
    let Some(current) = cursor.tail.as_mut() else {
        return Ok(None);
    };
    // Another getMore on the same cursor may have moved it on while this one read the
    // collection: only what lies past its position now is new.
    let from = current.last_record;
    current.last_record = current.last_record.max(last_record);
    let documents: Vec<Arc<Document>> = found
        .into_iter()
        .filter(|(record, _)| *record > from)
        .map(|(_, document)| document)
        .collect();
    let found_nothing = documents.is_empty();
    registry.append(id, documents);
    Ok((found_nothing && tail.await_data).then(|| InsertWait::new(changes, await_time(command))))
}

/// What a tailable cursor found in its collection.
struct Polled {
    /// The matching documents after its position (projected), with their record ids.
    found: Vec<(u64, Arc<Document>)>,
    /// Its new position: the newest record it has read past.
    last_record: u64,
    /// A subscription taken while the collection was locked, so that no later insert is missed.
    changes: ChangeSubscription,
}

/// Reads the documents inserted after the tail's position.
///
/// # Errors
///
/// QueryPlanKilled if the collection was dropped (even if one of the same name was created
/// since), CappedPositionLost if the record at the tail's position was removed.
fn poll(store: &Store, tail: &Tail) -> StoreResult<Polled> {
    let dropped = || {
        CommandError::new(
            code::QUERY_PLAN_KILLED,
            "Executor error during getMore :: caused by :: collection dropped",
        )
    };
    let handle = store
        .catalog
        .collection(&tail.db, &tail.collection)
        .ok_or_else(dropped)?;
    let collection = read(&handle);
    if collection.uuid != tail.uuid {
        return Err(dropped());
    }
    // A tail starts at an existing record (find keeps no tail on an empty collection) and
    // only moves to existing ones; if its record is gone, capping (or a delete) removed it
    // while the cursor waited, and the documents between may be lost with it.
    if collection.get(tail.last_record).is_none() {
        return Err(CommandError::new(
            code::CAPPED_POSITION_LOST,
            format!(
                "CollectionScan died due to position in capped collection being deleted. Last seen record id: RecordId({})",
                tail.last_record
            ),
        ));
    }
    let found = collection.matching_after(tail.last_record, &tail.filter);
    let last_record = collection.last_record().max(tail.last_record);
    let changes = collection.subscribe_inserts();
    drop(collection);
    let found = found
        .into_iter()
        .map(|(record, document)| match &tail.projection {
            Some(projection) => {
                let position = projection
                    .is_positional()
                    .then(|| tail.filter.matched_position(&document))
                    .flatten();
                Ok((record, Arc::new(projection.apply_at(&document, position)?)))
            }
            None => Ok((record, document)),
        })
        .collect::<StoreResult<Vec<_>>>()?;
    Ok(Polled {
        found,
        last_record,
        changes,
    })
}

/// An awaitData getMore's wait: its `maxTimeMS` (at most mongod's largest, `INT_MAX`), or one
/// second when absent or zero.
pub(crate) fn await_time(command: &Document) -> Duration {
    let millis = match command.get("maxTimeMS") {
        Some(Bson::Int32(millis)) => i64::from(*millis),
        Some(Bson::Int64(millis)) => *millis,
        // `as` saturates and maps NaN to 0; the deployment has refused fractions already.
        Some(Bson::Double(millis)) => *millis as i64,
        _ => 0,
    };
    let millis = millis.clamp(0, i64::from(i32::MAX));
    match u64::try_from(millis) {
        Ok(millis) if millis > 0 => Duration::from_millis(millis),
        _ => DEFAULT_AWAIT_TIME,
    }
}
