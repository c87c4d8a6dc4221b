//! `count`, `distinct` and `aggregate`.

use std::sync::Arc;

use bson::{Bson, Document, doc};

use super::Exec;
use super::aggregate_write;
use super::args::{
    collection_name, cursor_batch_size, missing, optional_document, optional_integer,
    optional_non_negative, required_array,
};
use super::coll_stats::{self, CollStatsSpec};
use super::find::{CursorOptions, open_cursor};
use super::foreign::ExecSource;
use super::hint::{self, Hint};
use super::{view_reads, views};
use crate::aggregate::{ParseContext, Pipeline, Reader};
use crate::catalog::{read, validate_namespace};
use crate::change_stream;
use crate::collation;
use crate::errors::{CommandError, StoreResult, type_name};
use crate::path::{Leaf, collect_leaves, split_path};
use crate::query::Filter;
use crate::value_order::{compare_values, values_equal};

fn filter_of(command: &Document, name: &str) -> StoreResult<Filter> {
    match optional_document(command, name, "query")? {
        Some(filter) => Ok(Filter::parse(filter)?.with_collation(collation::of(command)?.as_ref())),
        None => Ok(Filter::match_all()),
    }
}

pub(crate) fn count(exec: &mut Exec<'_>, command: &Document) -> StoreResult<Document> {
    let collection = collection_name(command, "count")?;
    validate_namespace(exec.db, collection)?;
    if let Some(view) = views::resolve(exec, collection)? {
        return view_reads::count(exec, command, &view);
    }
    let filter = filter_of(command, "count")?;
    let skip = optional_non_negative(command, "count", "skip")?.unwrap_or(0);
    // A negative limit counts like its absolute value, as mongod does for count.
    let limit = optional_integer(command, "count", "limit")?
        .map(i64::unsigned_abs)
        .filter(|limit| *limit > 0)
        .map(|limit| usize::try_from(limit).unwrap_or(usize::MAX));
    let matched = match exec.collection(collection)? {
        Some(handle) => {
            let collection = read(&handle);
            hint::resolve(command, Some(&collection))?;
            let scan_limit = limit.map(|limit| limit.saturating_add(skip));
            collection.matching_records(&filter, scan_limit).len()
        }
        None => 0,
    };
    let n = matched
        .saturating_sub(skip)
        .min(limit.unwrap_or(usize::MAX));
    Ok(doc! { "n": i32::try_from(n).unwrap_or(i32::MAX), "ok": 1.0 })
}

pub(crate) fn distinct(exec: &mut Exec<'_>, command: &Document) -> StoreResult<Document> {
    let collection = collection_name(command, "distinct")?;
    validate_namespace(exec.db, collection)?;
    let key = match command.get("key") {
        Some(Bson::String(key)) => key.clone(),
        Some(other) => {
            return Err(CommandError::type_mismatch(format!(
                "BSON field 'distinct.key' is the wrong type '{}', expected type 'string'",
                type_name(other)
            )));
        }
        None => return Err(missing("distinct", "key")),
    };
    let filter = filter_of(command, "distinct")?;
    let mut collation = collation::of(command)?;
    let documents = match views::resolve(exec, collection)? {
        Some(view) => {
            // A view's values compare under the view's collation.
            let effective = views::collation_for(&view, command)?
                .map(|collation| doc! { "collation": collation })
                .unwrap_or_default();
            collation = collation::of(&effective)?;
            view_reads::distinct_input(exec, command, &view)?
        }
        None => match exec.collection(collection)? {
            Some(handle) => {
                let collection = read(&handle);
                hint::resolve(command, Some(&collection))?;
                collection.matching_documents(&filter, None)
            }
            None => Vec::new(),
        },
    };
    let same = |a: &Bson, b: &Bson| match &collation {
        Some(collation) => values_equal(&collation.fold(a), &collation.fold(b)),
        None => values_equal(a, b),
    };
    let parts = split_path(&key);
    let mut values: Vec<Bson> = Vec::new();
    for document in documents {
        let mut leaves = Vec::new();
        collect_leaves(&document, &parts, &mut leaves);
        for leaf in leaves {
            let Leaf::Present(value) = leaf else {
                continue;
            };
            // Arrays contribute their elements, as mongod's distinct does.
            let candidates: Vec<&Bson> = match value {
                Bson::Array(items) => items.iter().collect(),
                other => vec![other],
            };
            for candidate in candidates {
                if !values.iter().any(|existing| same(existing, candidate)) {
                    values.push(candidate.clone());
                }
            }
        }
    }
    values.sort_by(compare_values);
    Ok(doc! { "values": values, "ok": 1.0 })
}

pub(crate) fn aggregate(exec: &mut Exec<'_>, command: &Document) -> StoreResult<Document> {
    // The legacy `{aggregate: ..., explain: true}` form: the plan at the queryPlanner level.
    if matches!(command.get("explain"), Some(Bson::Boolean(true)))
        && matches!(command.get("aggregate"), Some(Bson::String(_)))
    {
        let mut inner = command.clone();
        inner.remove("explain");
        return super::explain::explain(
            exec,
            &bson::doc! { "explain": inner, "verbosity": "queryPlanner" },
        );
    }
    let collection = match command.get("aggregate") {
        Some(Bson::String(collection)) => collection.clone(),
        Some(other)
            if other.as_i32() == Some(1)
                || other.as_f64() == Some(1.0)
                || other.as_i64() == Some(1) =>
        {
            check_cursor_and_explain(command)?;
            let stages = required_array(command, "aggregate", "pipeline")?;
            if change_stream::change_stream_stage(stages).is_some() {
                return change_stream::aggregate(exec, command, None, stages);
            }
            if change_stream::has_later_change_stream(stages) {
                return Err(change_stream::not_first_stage());
            }
            return super::collectionless::aggregate(exec, command);
        }
        _ => collection_name(command, "aggregate")?.to_owned(),
    };
    validate_namespace(exec.db, &collection)?;
    let stages = required_array(command, "aggregate", "pipeline")?;
    check_cursor_and_explain(command)?;
    if change_stream::change_stream_stage(stages).is_some() {
        return change_stream::aggregate(exec, command, Some(&collection), stages);
    }
    if change_stream::has_later_change_stream(stages) {
        return Err(change_stream::not_first_stage());
    }
    coll_stats::check_not_later(stages)?;
    let batch_size = cursor_batch_size(command, "aggregate")?;
    let (stages, write_stage) = aggregate_write::split(exec, command, stages)?;
    let vars = crate::let_vars::LetVars::read(command)?;
    let mut output = match coll_stats::first_stage(stages) {
        Some(options) => {
            let spec = CollStatsSpec::parse(options)?;
            let input = spec.run(exec, &collection)?;
            let rest = vars.pipeline(&stages[1..])?;
            let collation = collation::of(command)?;
            let pipeline = Pipeline::parse_in(&rest, ParseContext::database(exec.db))?
                .with_collation(collation.as_ref())
                .with_allow_disk_use(crate::aggregate::allow_disk_use(command));
            let mut source = ExecSource::new(exec);
            let mut reader = Reader::new(&mut source, collation);
            reader.check_involved(&pipeline)?;
            pipeline.run_with(input, false, &mut reader)?
        }
        None => match views::resolve(exec, &collection)? {
            Some(view) => view_reads::run(exec, command, &view, &vars.pipeline(stages)?)?,
            None => collection_pipeline(exec, command, &collection, &vars.pipeline(stages)?)?,
        },
    };
    if let Some(stage) = write_stage {
        // The read at a past time (majority) is done: the output goes to the current data,
        // never to a rewound copy.
        exec.read_at = None;
        aggregate_write::write_output(exec, &stage, std::mem::take(&mut output))?;
    }
    let ns = exec.ns(&collection);
    let options = CursorOptions {
        batch_size,
        time_limited: super::find::has_time_limit(command),
        ..CursorOptions::default()
    };
    Ok(open_cursor(exec, &ns, output, options))
}

/// Runs `stages` over the documents of `collection` (none when it does not exist).
pub(crate) fn collection_pipeline(
    exec: &mut Exec<'_>,
    command: &Document,
    collection: &str,
    stages: &[Bson],
) -> StoreResult<Vec<Arc<Document>>> {
    let collation = collation::of(command)?;
    let pipeline = Pipeline::parse_in(stages, ParseContext::database(exec.db))?
        .with_collation(collation.as_ref())
        .with_allow_disk_use(crate::aggregate::allow_disk_use(command));
    if pipeline.starts_with_documents() {
        return Err(CommandError::new(
            crate::code::INVALID_NAMESPACE,
            "'$documents' can only be run with {aggregate: 1}",
        ));
    }
    let input: Vec<Arc<Document>> = match exec.collection(collection)? {
        Some(handle) => {
            let guard = read(&handle);
            let hint = hint::resolve(command, Some(&guard))?;
            let mut input: Vec<Arc<Document>> = match pipeline.leading_match() {
                Some(filter) => guard.matching_documents(filter, None),
                None => guard.documents().cloned().collect(),
            };
            if Hint::is_reverse_natural(hint.as_ref()) {
                input.reverse();
            }
            input
        }
        None => Vec::new(),
    };
    // The stages reading other collections read them as this command sees them.
    let mut source = ExecSource::new(exec);
    let mut reader = Reader::new(&mut source, collation);
    reader.check_involved(&pipeline)?;
    pipeline.run_with(input, true, &mut reader)
}

/// An aggregate must ask for a cursor (a collectionless one cannot be explained by blackpipe).
fn check_cursor_and_explain(command: &Document) -> StoreResult<()> {
    if command
        .get("explain")
        .is_some_and(|explain| explain.as_bool() == Some(true))
    {
        return Err(CommandError::bad_value(
            "blackpipe does not explain collectionless aggregates",
        ));
    }
    if optional_document(command, "aggregate", "cursor")?.is_none() {
        return Err(CommandError::failed_to_parse(
            "The 'cursor' option is required, except for aggregate with the explain argument",
        ));
    }
    Ok(())
}
