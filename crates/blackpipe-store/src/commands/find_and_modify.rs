//! `findAndModify`: update, replace or remove one document and return it.

use crate::validation::Write as ValidatedWrite;
use bson::{Bson, Document, doc};

use super::Exec;
use super::args::{collection_name, optional_bool, optional_document};
use super::write::{
    CheckedOutSession, collection_for_write, prepare_for_insert, record_insert, record_update,
};
use crate::catalog::{validate_namespace, write};
use crate::code;
use crate::errors::{CommandError, StoreResult};
use crate::oplog::OplogWrite;
use crate::projection::{Projection, ProjectionKind};
use crate::query::Filter;
use crate::retryable_writes::StatementOutcome;
use crate::sort::SortSpec;
use crate::update::{ApplyContext, Update};
use crate::value_order::documents_identical;

struct Request {
    filter: Filter,
    sort: SortSpec,
    remove: bool,
    update: Option<Update>,
    return_new: bool,
    upsert: bool,
    projection: Option<Projection>,
    /// The command's `hint` (as `{hint: ...}`), checked against the collection's indexes.
    hint: Document,
}

fn parse(command: &Document, name: &str) -> StoreResult<Request> {
    let vars = crate::let_vars::LetVars::read(command)?;
    let collation = crate::collation::of(command)?;
    let filter = match optional_document(command, name, "query")? {
        Some(filter) => Filter::parse(&*vars.filter(filter)?)?.with_collation(collation.as_ref()),
        None => Filter::match_all(),
    };
    let sort =
        SortSpec::parse(optional_document(command, name, "sort")?.unwrap_or(&Document::new()))?
            .with_collation(collation.as_ref());
    let remove = optional_bool(command, name, "remove")?.unwrap_or(false);
    let return_new = optional_bool(command, name, "new")?.unwrap_or(false);
    let upsert = optional_bool(command, name, "upsert")?.unwrap_or(false);
    let update = match command.get("update") {
        None | Some(Bson::Null) => None,
        Some(update) => Some(update),
    };
    match (remove, update.is_some()) {
        (true, true) => {
            return Err(CommandError::failed_to_parse(
                "Cannot specify both an update and remove=true",
            ));
        }
        (false, false) => {
            return Err(CommandError::failed_to_parse(
                "Either an update or remove=true must be specified",
            ));
        }
        _ => {}
    }
    if remove && upsert {
        return Err(CommandError::failed_to_parse(
            "Cannot specify both upsert=true and remove=true",
        ));
    }
    if remove && return_new {
        return Err(CommandError::failed_to_parse(
            "Cannot specify both new=true and remove=true; 'remove' always returns the deleted document",
        ));
    }
    let projection = match optional_document(command, name, "fields")? {
        Some(fields) => Projection::parse(fields, ProjectionKind::Find)?,
        None => None,
    };
    if let Some(projection) = &projection {
        projection.check_query(&filter)?;
    }
    let update = update
        .map(|update| {
            Update::parse_with_array_filters(&*vars.update(update)?, command.get("arrayFilters"))
        })
        .transpose()?;
    Ok(Request {
        filter,
        sort,
        remove,
        update,
        return_new,
        upsert,
        projection,
        hint: command
            .get("hint")
            .map(|hint| bson::doc! { "hint": hint.clone() })
            .unwrap_or_default(),
    })
}

pub(crate) fn find_and_modify(
    exec: &mut Exec<'_>,
    command: &Document,
    name: &str,
) -> StoreResult<Document> {
    let collection = collection_name(command, name)?;
    validate_namespace(exec.db, collection)?;
    super::views::refuse_view(exec, collection)?;
    let request = parse(command, name)?;
    let statement_id = match command.get("stmtId") {
        Some(Bson::Int32(id)) => *id,
        _ => 0,
    };
    let checked_out = CheckedOutSession::of(exec, command)?;
    let mut session = checked_out.begin()?;
    match session
        .as_ref()
        .and_then(|record| record.executed(statement_id))
    {
        Some(StatementOutcome::FindAndModify(reply)) => {
            let mut reply = reply.clone();
            reply.insert("retriedStmtId", statement_id);
            reply.insert("ok", 1.0);
            return Ok(reply);
        }
        Some(other) => {
            return Err(CommandError::new(
                code::FIND_AND_MODIFY_RETRY_MISMATCH,
                format!(
                    "findAndModify retry request: {} is not compatible with previous write in the transaction of type: {}",
                    crate::errors::format_document(command),
                    other.op_type()
                ),
            ));
        }
        None => {}
    }
    exec.begin_statement(session.is_some().then_some(statement_id), true);
    let (last_error, value) = execute(exec, collection, &request)?;
    let mut reply = doc! { "lastErrorObject": last_error, "value": value };
    if let Some(record) = session.as_mut() {
        exec.end_statement(
            record,
            statement_id,
            StatementOutcome::FindAndModify(reply.clone()),
        );
    }
    reply.insert("ok", 1.0);
    Ok(reply)
}

/// The document findAndModify answers with, through its projection; a positional projection
/// keeps the element at the position the query matched in the document as it was found.
fn project(request: &Request, document: &Document, found: &Document) -> StoreResult<Bson> {
    Ok(Bson::Document(match &request.projection {
        Some(projection) => {
            let position = projection
                .is_positional()
                .then(|| request.filter.matched_position(found))
                .flatten();
            projection.apply_at(document, position)?
        }
        None => document.clone(),
    }))
}

fn execute(
    exec: &mut Exec<'_>,
    collection: &str,
    request: &Request,
) -> StoreResult<(Document, Bson)> {
    let handle = if request.upsert {
        Some(collection_for_write(exec, collection)?)
    } else {
        exec.collection(collection)?
    };
    let no_match = || (doc! { "n": 0, "updatedExisting": false }, Bson::Null);
    let Some(handle) = handle else {
        return Ok(if request.remove {
            (doc! { "n": 0 }, Bson::Null)
        } else {
            no_match()
        });
    };
    let mut guard = write(&handle);
    let hint = super::hint::resolve(&request.hint, Some(&guard))?;
    let target = if request.sort.is_empty() {
        let forward = !super::hint::Hint::is_reverse_natural(hint.as_ref());
        super::write::single_match(&guard, &request.filter, forward)
    } else {
        let candidates: Vec<(u64, std::sync::Arc<Document>)> = guard
            .matching_records(&request.filter, None)
            .into_iter()
            .filter_map(|record| guard.get(record).map(|document| (record, document.clone())))
            .collect();
        let sorted = request
            .sort
            .sort(candidates, |(_, document)| Some(document.as_ref()));
        sorted.first().map(|(record, _)| *record)
    };
    let Some(record) = target else {
        if request.remove {
            return Ok((doc! { "n": 0 }, Bson::Null));
        }
        let Some(update) = &request.update else {
            return Ok(no_match());
        };
        if !request.upsert {
            return Ok(no_match());
        }
        let document = update.upsert_document(
            &request.filter,
            ApplyContext {
                is_insert: true,
                now: exec.now,
                matched_position: None,
            },
        )?;
        let document = prepare_for_insert(exec, &document)?;
        let id = document.get("_id").cloned().unwrap_or(Bson::Null);
        let value = if request.return_new {
            project(request, &document, &document)?
        } else {
            Bson::Null
        };
        guard.validate(&document, ValidatedWrite::Insert, exec.bypass_validation)?;
        guard.insert(document)?;
        record_insert(exec, &guard);
        return Ok((
            doc! { "n": 1, "updatedExisting": false, "upserted": id },
            value,
        ));
    };
    let Some(original) = guard.get(record).cloned() else {
        return Ok(no_match());
    };
    if request.remove {
        guard.remove(record);
        exec.record(OplogWrite::delete(&guard, &original));
        return Ok((doc! { "n": 1 }, project(request, &original, &original)?));
    }
    let Some(update) = &request.update else {
        return Ok(no_match());
    };
    let updated = update.apply(
        &original,
        ApplyContext {
            is_insert: false,
            now: exec.now,
            matched_position: update
                .uses_matched_position()
                .then(|| request.filter.matched_position(&original))
                .flatten(),
        },
    )?;
    if !documents_identical(&original, &updated) {
        let write = ValidatedWrite::Update { before: &original };
        guard.validate(&updated, write, exec.bypass_validation)?;
        guard.replace(record, updated.clone())?;
        record_update(exec, &guard, record, &original, update);
    }
    let value = if request.return_new {
        project(request, &updated, &original)?
    } else {
        project(request, &original, &original)?
    };
    Ok((doc! { "n": 1, "updatedExisting": true }, value))
}
