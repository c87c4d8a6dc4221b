//! Reads through a view, rewritten as mongod rewrites them: the view's resolved pipeline first,
//! then the request as stages (`find`'s filter, sort, skip, limit and projection; `count`'s
//! query, skip and limit; `distinct`'s query), over the backing collection, with the view's
//! default collation. The cursor keeps the view's namespace.

use std::sync::Arc;

use bson::{Bson, Document, doc};

use super::Exec;
use super::args::{optional_bool, optional_document, optional_integer, optional_non_negative};
use super::find::{CursorOptions, open_cursor};
use super::read::collection_pipeline;
use super::views::{ResolvedView, collation_for};
use crate::errors::{CommandError, StoreResult};
use crate::let_vars::LetVars;

/// Runs `stages` after the view's own pipeline, over its backing collection.
pub(crate) fn run(
    exec: &mut Exec<'_>,
    command: &Document,
    view: &ResolvedView,
    stages: &[Bson],
) -> StoreResult<Vec<Arc<Document>>> {
    let mut effective = Document::new();
    if let Some(collation) = collation_for(view, command)? {
        effective.insert("collation", collation);
    }
    let mut pipeline = view.pipeline.clone();
    pipeline.extend_from_slice(stages);
    collection_pipeline(exec, &effective, &view.collection, &pipeline)
}

fn push_if_some(stages: &mut Vec<Bson>, name: &str, value: Option<Bson>) {
    if let Some(value) = value {
        stages.push(Bson::Document(doc! { name: value }));
    }
}

fn non_empty(document: Option<&Document>) -> Option<Bson> {
    document
        .filter(|document| !document.is_empty())
        .map(|document| Bson::Document(document.clone()))
}

fn positive(value: Option<usize>) -> Option<Bson> {
    value
        .filter(|value| *value > 0)
        .map(|value| Bson::Int64(i64::try_from(value).unwrap_or(i64::MAX)))
}

/// `find` on view `name`.
///
/// # Errors
/// The pipeline's errors; a tailable cursor, which a view cannot give.
pub(crate) fn find(
    exec: &mut Exec<'_>,
    command: &Document,
    name: &str,
    view: &ResolvedView,
) -> StoreResult<Document> {
    if optional_bool(command, "find", "tailable")?.unwrap_or(false) {
        return Err(CommandError::bad_value(
            "Cannot use tailable option with a view",
        ));
    }
    let mut stages = Vec::new();
    push_if_some(
        &mut stages,
        "$match",
        non_empty(optional_document(command, "find", "filter")?),
    );
    push_if_some(
        &mut stages,
        "$sort",
        non_empty(optional_document(command, "find", "sort")?),
    );
    push_if_some(
        &mut stages,
        "$skip",
        positive(optional_non_negative(command, "find", "skip")?),
    );
    push_if_some(
        &mut stages,
        "$limit",
        positive(optional_non_negative(command, "find", "limit")?),
    );
    push_if_some(
        &mut stages,
        "$project",
        non_empty(optional_document(command, "find", "projection")?),
    );
    let vars = LetVars::read(command)?;
    let output = run(exec, command, view, &vars.pipeline(&stages)?)?;
    let options = CursorOptions {
        batch_size: optional_non_negative(command, "find", "batchSize")?,
        single_batch: optional_bool(command, "find", "singleBatch")?.unwrap_or(false),
        no_timeout: optional_bool(command, "find", "noCursorTimeout")?.unwrap_or(false),
        tail: None,
        time_limited: super::find::has_time_limit(command),
    };
    Ok(open_cursor(exec, &exec.ns(name), output, options))
}

/// `count` on a view: how many documents the view's pipeline and the query leave.
pub(crate) fn count(
    exec: &mut Exec<'_>,
    command: &Document,
    view: &ResolvedView,
) -> StoreResult<Document> {
    let mut stages = Vec::new();
    push_if_some(
        &mut stages,
        "$match",
        non_empty(optional_document(command, "count", "query")?),
    );
    push_if_some(
        &mut stages,
        "$skip",
        positive(optional_non_negative(command, "count", "skip")?),
    );
    // A negative limit counts like its absolute value, as mongod does for count.
    let limit = optional_integer(command, "count", "limit")?
        .map(i64::unsigned_abs)
        .and_then(|limit| usize::try_from(limit).ok());
    push_if_some(&mut stages, "$limit", positive(limit));
    let n = run(exec, command, view, &stages)?.len();
    Ok(doc! { "n": i32::try_from(n).unwrap_or(i32::MAX), "ok": 1.0 })
}

/// The documents a `distinct` on a view reads its values from.
pub(crate) fn distinct_input(
    exec: &mut Exec<'_>,
    command: &Document,
    view: &ResolvedView,
) -> StoreResult<Vec<Arc<Document>>> {
    let mut stages = Vec::new();
    push_if_some(
        &mut stages,
        "$match",
        non_empty(optional_document(command, "distinct", "query")?),
    );
    run(exec, command, view, &stages)
}
