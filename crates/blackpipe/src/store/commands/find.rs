//! `find`, `getMore`, `killCursors`, and the cursor opening shared by every cursor command.

use std::collections::VecDeque;
use std::sync::Arc;

use bson::{Bson, Document, doc};

use super::Exec;
use super::args::{
    collection_name, missing, optional_bool, optional_document, optional_non_negative,
    required_array,
};
use crate::store::catalog::{lock, read, validate_namespace};
use crate::store::cursor::{DEFAULT_FIRST_BATCH, OpenCursor, cursor_reply, take_batch};
use crate::store::errors::{CommandError, StoreResult, code, type_name};
use crate::store::projection::{Projection, ProjectionKind};
use crate::store::query::Filter;
use crate::store::sort::SortSpec;

/// How a cursor command wants its cursor kept.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CursorOptions {
    /// The first batch's document count (`batchSize`), 101 if unset.
    pub(crate) batch_size: Option<usize>,
    /// `singleBatch`: never keep a cursor open.
    pub(crate) single_batch: bool,
    /// `noCursorTimeout`: exempt the cursor from the idle timeout.
    pub(crate) no_timeout: bool,
}

/// Replies with the first batch and, if results remain (or the batch filled up), registers a
/// cursor for `getMore`.
pub(crate) fn open_cursor(
    exec: &Exec<'_>,
    ns: &str,
    results: Vec<Arc<Document>>,
    options: CursorOptions,
) -> Document {
    let CursorOptions {
        batch_size,
        single_batch,
        no_timeout,
    } = options;
    let mut remaining = VecDeque::from(results);
    let batch = take_batch(
        &mut remaining,
        Some(batch_size.unwrap_or(DEFAULT_FIRST_BATCH)),
    );
    let keep_open = !single_batch && (batch.stopped_early || !remaining.is_empty());
    let id = if keep_open {
        exec.store.register_cursor(OpenCursor {
            ns: ns.to_owned(),
            remaining,
            last_used: exec.now,
            no_timeout,
        })
    } else {
        0
    };
    cursor_reply("firstBatch", batch.documents, id, ns)
}

pub(crate) fn find(exec: &mut Exec<'_>, command: &Document) -> StoreResult<Document> {
    let collection = collection_name(command, "find")?;
    validate_namespace(exec.db, collection)?;
    let filter = match optional_document(command, "find", "filter")? {
        Some(filter) => Filter::parse(filter)?,
        None => Filter::match_all(),
    };
    let sort = match optional_document(command, "find", "sort")? {
        Some(sort) => SortSpec::parse(sort)?,
        None => SortSpec::parse(&Document::new())?,
    };
    let projection = match optional_document(command, "find", "projection")? {
        Some(projection) => Projection::parse(projection, ProjectionKind::Find)?,
        None => None,
    };
    let skip = optional_non_negative(command, "find", "skip")?.unwrap_or(0);
    let limit = optional_non_negative(command, "find", "limit")?.filter(|limit| *limit > 0);
    let batch_size = optional_non_negative(command, "find", "batchSize")?;
    let single_batch = optional_bool(command, "find", "singleBatch")?.unwrap_or(false);
    let no_timeout = optional_bool(command, "find", "noCursorTimeout")?.unwrap_or(false);
    if optional_bool(command, "find", "tailable")?.unwrap_or(false) {
        return Err(CommandError::bad_value(format!(
            "error processing query: ns={}: tailable cursor requested on non capped collection",
            exec.ns(collection)
        )));
    }
    let ns = exec.ns(collection);
    let mut results = match exec.store.catalog.collection(exec.db, collection) {
        Some(handle) => {
            // Without a sort, scanning can stop once skip + limit documents matched.
            let scan_limit = if sort.is_empty() {
                limit.map(|limit| limit.saturating_add(skip))
            } else {
                None
            };
            read(&handle).matching_documents(&filter, scan_limit)
        }
        None => Vec::new(),
    };
    results = sort.sort(results, |document| Some(document.as_ref()));
    let results: Vec<Arc<Document>> = results
        .into_iter()
        .skip(skip)
        .take(limit.unwrap_or(usize::MAX))
        .collect();
    let results = match projection {
        Some(projection) => results
            .iter()
            .map(|document| projection.apply(document).map(Arc::new))
            .collect::<StoreResult<Vec<_>>>()?,
        None => results,
    };
    let options = CursorOptions {
        batch_size,
        single_batch,
        no_timeout,
    };
    Ok(open_cursor(exec, &ns, results, options))
}

/// A non-zero `maxTimeMS` (the deployment has already refused malformed ones; zero sets no
/// wait, as mongod reads it).
fn sets_await_time(command: &Document) -> bool {
    match command.get("maxTimeMS") {
        None => false,
        Some(Bson::Int32(millis)) => *millis != 0,
        Some(Bson::Int64(millis)) => *millis != 0,
        Some(Bson::Double(millis)) => *millis != 0.0,
        Some(_) => true,
    }
}

pub(crate) fn get_more(exec: &mut Exec<'_>, command: &Document) -> StoreResult<Document> {
    let id = match command.get("getMore") {
        Some(Bson::Int64(id)) => *id,
        Some(other) => {
            return Err(CommandError::type_mismatch(format!(
                "BSON field 'getMore.getMore' is the wrong type '{}', expected type 'long'",
                type_name(other)
            )));
        }
        None => return Err(missing("getMore", "getMore")),
    };
    let collection = match command.get("collection") {
        Some(Bson::String(collection)) => collection.as_str(),
        Some(other) => {
            return Err(CommandError::type_mismatch(format!(
                "BSON field 'getMore.collection' is the wrong type '{}', expected type 'string'",
                type_name(other)
            )));
        }
        None => return Err(missing("getMore", "collection")),
    };
    let batch_size =
        optional_non_negative(command, "getMore", "batchSize")?.filter(|size| *size > 0);
    let ns = exec.ns(collection);
    let mut registry = lock(&exec.store.cursors);
    let Some(cursor) = registry.get_mut(id) else {
        return Err(CommandError::new(
            code::CURSOR_NOT_FOUND,
            format!("cursor id {id} not found"),
        ));
    };
    if cursor.ns != ns {
        return Err(CommandError::new(
            code::UNAUTHORIZED,
            format!(
                "Requested getMore on namespace '{ns}', but cursor belongs to a different namespace {}",
                cursor.ns
            ),
        ));
    }
    if sets_await_time(command) {
        // mongod takes a getMore's maxTimeMS as the wait of a tailable awaitData cursor, the
        // only kind that may carry one; this store opens no tailable cursors.
        return Err(CommandError::bad_value(
            "cannot set maxTimeMS on getMore command for a non-awaitData cursor",
        ));
    }
    cursor.last_used = exec.now;
    let batch = take_batch(&mut cursor.remaining, batch_size);
    let exhausted = !batch.stopped_early && cursor.remaining.is_empty();
    let reply_id = if exhausted {
        registry.remove(id);
        0
    } else {
        id
    };
    drop(registry);
    Ok(cursor_reply("nextBatch", batch.documents, reply_id, &ns))
}

pub(crate) fn kill_cursors(exec: &mut Exec<'_>, command: &Document) -> StoreResult<Document> {
    let collection = collection_name(command, "killCursors")?;
    let ns = exec.ns(collection);
    let ids = required_array(command, "killCursors", "cursors")?;
    let mut killed = Vec::new();
    let mut not_found = Vec::new();
    let mut registry = lock(&exec.store.cursors);
    for id in ids {
        let Bson::Int64(id) = id else {
            return Err(CommandError::type_mismatch(format!(
                "BSON field 'killCursors.cursors' has an element of the wrong type '{}', expected type 'long'",
                type_name(id)
            )));
        };
        let owned_here = registry.get_mut(*id).is_some_and(|cursor| cursor.ns == ns);
        if owned_here {
            registry.remove(*id);
            killed.push(Bson::Int64(*id));
        } else {
            not_found.push(Bson::Int64(*id));
        }
    }
    drop(registry);
    Ok(doc! {
        "cursorsKilled": killed,
        "cursorsNotFound": not_found,
        "cursorsAlive": [],
        "cursorsUnknown": [],
        "ok": 1.0,
    })
}
