//! `find`, `getMore`, `killCursors`, and the cursor opening shared by every cursor command.

use std::collections::VecDeque;
use std::sync::Arc;

use bson::{Bson, Document, doc};

use super::Exec;
use super::args::{
    collection_name, missing, optional_bool, optional_document, optional_non_negative,
    required_array,
};
use super::hint::{self, Hint, IndexBounds};
use super::tail::cursor_not_found;
use crate::catalog::{lock, read, validate_namespace};
use crate::change_stream;
use crate::code;
use crate::cursor::{DEFAULT_FIRST_BATCH, OpenCursor, Tail, cursor_reply, take_batch};
use crate::errors::{CommandError, StoreResult, type_name};
use crate::projection::{Projection, ProjectionKind};
use crate::query::Filter;
use crate::sort::SortSpec;

/// How a cursor command wants its cursor kept.
#[derive(Debug, Clone, Default)]
pub(crate) struct CursorOptions {
    /// The first batch's document count (`batchSize`), 101 if unset.
    pub(crate) batch_size: Option<usize>,
    /// `singleBatch`: never keep a cursor open.
    pub(crate) single_batch: bool,
    /// `noCursorTimeout`: exempt the cursor from the idle timeout.
    pub(crate) no_timeout: bool,
    /// A tailable cursor: kept open after its results run out (unless `single_batch`).
    pub(crate) tail: Option<Tail>,
    /// The opening command had `maxTimeMS` (see [`OpenCursor::time_limited`]).
    pub(crate) time_limited: bool,
}

/// Whether `command` sets a time limit (`maxTimeMS` above 0).
pub(crate) fn has_time_limit(command: &Document) -> bool {
    command
        .get("maxTimeMS")
        .and_then(crate::value_order::Number::of)
        .is_some_and(|limit| limit.as_f64() > 0.0)
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
        tail,
        time_limited,
    } = options;
    let mut remaining = VecDeque::from(results);
    let batch = take_batch(
        &mut remaining,
        Some(batch_size.unwrap_or(DEFAULT_FIRST_BATCH)),
    );
    let keep_open =
        !single_batch && (tail.is_some() || batch.stopped_early || !remaining.is_empty());
    let id = if keep_open {
        exec.store.register_cursor(OpenCursor {
            ns: ns.to_owned(),
            remaining,
            last_used: exec.now,
            no_timeout,
            tail,
            stream: None,
            time_limited,
        })
    } else {
        0
    };
    cursor_reply("firstBatch", batch.documents, id, ns)
}

pub(crate) fn find(exec: &mut Exec<'_>, command: &Document) -> StoreResult<Document> {
    let collection = collection_name(command, "find")?;
    validate_namespace(exec.db, collection)?;
    if let Some(view) = super::views::resolve(exec, collection)? {
        return super::view_reads::find(exec, command, collection, &view);
    }
    let collation = crate::collation::of(command)?;
    let filter = match optional_document(command, "find", "filter")? {
        Some(filter) => Filter::parse(&*crate::let_vars::LetVars::read(command)?.filter(filter)?)?
            .with_collation(collation.as_ref()),
        None => Filter::match_all(),
    };
    let tailable = optional_bool(command, "find", "tailable")?.unwrap_or(false);
    let (natural_sort, sort) = match optional_document(command, "find", "sort")? {
        // A tailable cursor reads in natural order, the only sort it accepts.
        Some(sort) if tailable => (None, natural_order_only(sort)?),
        Some(sort) => {
            let (natural, rest) = hint::natural_sort(sort)?;
            (
                natural,
                SortSpec::parse(&rest)?.with_collation(collation.as_ref()),
            )
        }
        None => (None, SortSpec::parse(&Document::new())?),
    };
    let projection = match optional_document(command, "find", "projection")? {
        Some(projection) => Projection::parse(projection, ProjectionKind::Find)?,
        None => None,
    };
    if let Some(projection) = &projection {
        projection.check_query(&filter)?;
    }
    let skip = optional_non_negative(command, "find", "skip")?.unwrap_or(0);
    let limit = optional_non_negative(command, "find", "limit")?.filter(|limit| *limit > 0);
    let batch_size = optional_non_negative(command, "find", "batchSize")?;
    let single_batch = optional_bool(command, "find", "singleBatch")?.unwrap_or(false);
    let no_timeout = optional_bool(command, "find", "noCursorTimeout")?.unwrap_or(false);
    let await_data = optional_bool(command, "find", "awaitData")?.unwrap_or(false);
    if tailable && single_batch {
        return Err(CommandError::bad_value(
            "cannot use tailable option with the 'singleBatch' option",
        ));
    }
    if await_data && !tailable {
        return Err(CommandError::failed_to_parse(
            "Cannot set 'awaitData' without also setting 'tailable'",
        ));
    }
    let ns = exec.ns(collection);
    let handle = exec.collection(collection)?;
    let guard = handle.as_ref().map(|handle| read(handle));
    let hint = hint::resolve(command, guard.as_deref())?;
    let bounds = IndexBounds::parse(command, hint.as_ref())?;
    // A `$natural: -1` sort or hint reads newest first (on a capped collection too).
    let reverse = natural_sort == Some(false)
        || (natural_sort.is_none() && Hint::is_reverse_natural(hint.as_ref()));
    let hinted_index = match &hint {
        Some(Hint::Index(key)) => Some(key),
        _ => None,
    };
    // Without a sort, a forward scan can stop once skip + limit documents matched.
    let scan_limit = if sort.is_empty() && !reverse && bounds.is_none() && hinted_index.is_none() {
        limit.map(|limit| limit.saturating_add(skip))
    } else {
        None
    };
    if tailable && !guard.as_ref().is_some_and(|guard| guard.is_capped()) {
        return Err(CommandError::bad_value(format!(
            "error processing query: ns={ns}: tailable cursor requested on non capped collection"
        )));
    }
    let mut results = guard
        .as_ref()
        .map(|guard| guard.matching_documents(&filter, scan_limit))
        .unwrap_or_default();
    let index_order = match (&guard, hinted_index) {
        (Some(guard), Some(key)) => hint::index_scan(guard, key, &mut results),
        _ => None,
    };
    // Like mongod, a tailable cursor on an empty collection is not kept (SERVER-13955), so
    // a tail always starts at an existing record.
    let position = guard
        .as_ref()
        .map(|guard| (guard.uuid, guard.last_record()))
        .filter(|(_, last_record)| *last_record != 0);
    drop(guard);
    if reverse {
        results.reverse();
    }
    if let Some(bounds) = &bounds {
        results.retain(|document| bounds.contains(document));
    }
    results = match index_order {
        // An index scan returns its key order unless the find sorts otherwise.
        Some(order) if sort.is_empty() && natural_sort.is_none() => {
            order.sort(results, |document| Some(document.as_ref()))
        }
        _ => sort.sort(results, |document| Some(document.as_ref())),
    };
    let results: Vec<Arc<Document>> = results
        .into_iter()
        .skip(skip)
        .take(limit.unwrap_or(usize::MAX))
        .collect();
    let results = match &projection {
        Some(projection) => results
            .iter()
            .map(|document| {
                let position = projection
                    .is_positional()
                    .then(|| filter.matched_position(document))
                    .flatten();
                projection.apply_at(document, position).map(Arc::new)
            })
            .collect::<StoreResult<Vec<_>>>()?,
        None => results,
    };
    let tail = position
        .filter(|_| tailable)
        .map(|(uuid, last_record)| Tail {
            db: exec.db.to_owned(),
            collection: collection.to_owned(),
            uuid,
            filter,
            projection: projection.clone(),
            last_record,
            await_data,
        });
    let options = CursorOptions {
        batch_size,
        single_batch,
        no_timeout,
        time_limited: tail.is_none() && has_time_limit(command),
        tail,
    };
    Ok(open_cursor(exec, &ns, results, options))
}

/// The sort of a tailable find: none, or `{$natural: 1}` (natural order, which the tail keeps).
///
/// # Errors
///
/// mongod's BadValue for any other sort.
fn natural_order_only(sort: &Document) -> StoreResult<SortSpec> {
    let natural = match sort.iter().next() {
        None => true,
        Some((field, direction)) => {
            let forward = match direction {
                Bson::Int32(value) => *value == 1,
                Bson::Int64(value) => *value == 1,
                Bson::Double(value) => *value == 1.0,
                _ => false,
            };
            sort.len() == 1 && field == "$natural" && forward
        }
    };
    if !natural {
        return Err(CommandError::bad_value(
            "cannot use tailable option with a sort other than {$natural: 1}",
        ));
    }
    SortSpec::parse(&Document::new())
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
    let cursor = registry.get_mut(id).ok_or_else(|| cursor_not_found(id))?;
    if cursor.ns != ns {
        return Err(CommandError::new(
            code::UNAUTHORIZED,
            format!(
                "Requested getMore on namespace '{ns}', but cursor belongs to a different namespace {}",
                cursor.ns
            ),
        ));
    }
    // Change-stream cursors are tailable awaitData cursors too.
    let await_data =
        cursor.tail.as_ref().is_some_and(|tail| tail.await_data) || cursor.stream.is_some();
    if sets_await_time(command) && !await_data {
        // mongod takes a getMore's maxTimeMS as the wait of a tailable awaitData cursor, the
        // only kind that may carry one.
        return Err(CommandError::bad_value(
            "cannot set maxTimeMS on getMore command for a non-awaitData cursor",
        ));
    }
    cursor.last_used = exec.now;
    if let Some(stream) = cursor.stream.as_deref().cloned() {
        drop(registry);
        return change_stream::get_more(exec, id, &ns, stream, batch_size, command);
    }
    let tail = cursor
        .remaining
        .is_empty()
        .then(|| cursor.tail.clone())
        .flatten();
    // The registry is only ever locked alone: release it while the collection is read.
    drop(registry);
    let wait = match tail {
        Some(tail) => super::tail::refill(exec, id, &tail, command)?,
        None => None,
    };
    let mut registry = lock(&exec.store.cursors);
    let cursor = registry.get_mut(id).ok_or_else(|| cursor_not_found(id))?;
    let batch = take_batch(&mut cursor.remaining, batch_size);
    // A tailable cursor stays open when it runs out: later inserts are its next results.
    let exhausted = cursor.tail.is_none() && !batch.stopped_early && cursor.remaining.is_empty();
    let reply_id = if exhausted {
        registry.remove(id);
        0
    } else {
        id
    };
    drop(registry);
    exec.awaiting_inserts = wait;
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
