//! `insert`, `update` and `delete`: batches of statements with per-statement write errors,
//! ordered or unordered, retryable through the retryable-write table.

use std::sync::{Arc, Mutex, MutexGuard};

use bson::{Bson, Document, doc};

use super::Exec;
use super::args::{
    collection_name, missing, optional_bool, optional_document, required_array, statement,
};
use super::hint::Hint;
use crate::catalog::{CollectionHandle, lock, read, validate_namespace, write};
use crate::code;
use crate::collection::Collection;
use crate::cursor::MAX_BATCH_BYTES;
use crate::errors::{CommandError, StoreResult, index_as_i32};
use crate::let_vars::LetVars;
use crate::oplog::{Change, OplogWrite};
use crate::query::Filter;
use crate::retryable_writes::{
    RetryableWrite, SessionRecord, StatementOutcome, retryable_write_of, statement_ids,
};
use crate::sort::SortSpec;
use crate::update::{ApplyContext, Update, with_id_first};
use crate::validation::Write as ValidatedWrite;
use crate::value_order::{document_size, documents_identical};

/// mongod's `maxWriteBatchSize`.
pub(crate) const MAX_WRITE_BATCH: usize = 100_000;

/// The session record of a retryable write, checked out for the whole command.
pub(crate) struct CheckedOutSession {
    record: Option<(Arc<Mutex<SessionRecord>>, RetryableWrite)>,
}

impl CheckedOutSession {
    /// Finds the command's session record, if the command is a retryable write.
    /// Inside a transaction there is none: the transaction's session is already checked out,
    /// and its statements are not retryable writes.
    pub(crate) fn of(exec: &Exec<'_>, command: &Document) -> StoreResult<CheckedOutSession> {
        if exec.txn.is_some() {
            return Ok(CheckedOutSession { record: None });
        }
        let record = match retryable_write_of(command)? {
            Some(retryable) => Some((
                exec.store
                    .retryable_writes
                    .session(&retryable.session, exec.now)?,
                retryable,
            )),
            None => None,
        };
        Ok(CheckedOutSession { record })
    }

    /// Locks the record for the rest of the command (see [`crate::retryable_writes`]) and starts or
    /// resumes the command's txnNumber under that lock.
    pub(crate) fn begin(&self) -> StoreResult<Option<MutexGuard<'_, SessionRecord>>> {
        let Some((record, retryable)) = &self.record else {
            return Ok(None);
        };
        let mut guard = lock(record);
        guard.begin(retryable.txn_number, &retryable.session)?;
        Ok(Some(guard))
    }
}

/// Results accumulated over a batch.
#[derive(Default)]
struct BatchResult {
    n: i64,
    modified: i64,
    upserted: Vec<Document>,
    write_errors: Vec<Document>,
    retried: Vec<Bson>,
}

impl BatchResult {
    fn into_reply(self, with_modified: bool) -> Document {
        let mut reply = doc! { "n": i32::try_from(self.n).unwrap_or(i32::MAX) };
        if !self.upserted.is_empty() {
            reply.insert("upserted", self.upserted);
        }
        if with_modified {
            reply.insert(
                "nModified",
                i32::try_from(self.modified).unwrap_or(i32::MAX),
            );
        }
        if !self.write_errors.is_empty() {
            reply.insert("writeErrors", self.write_errors);
        }
        if !self.retried.is_empty() {
            reply.insert("retriedStmtIds", self.retried);
        }
        reply.insert("ok", 1.0);
        reply
    }
}

fn check_batch_size(count: usize) -> StoreResult<()> {
    if count == 0 || count > MAX_WRITE_BATCH {
        return Err(CommandError::new(
            code::INVALID_LENGTH,
            format!(
                "Write batch sizes must be between 1 and {MAX_WRITE_BATCH}. Got {count} operations."
            ),
        ));
    }
    Ok(())
}

/// Gives an inserted document its `_id` (generated if missing) as first field, and validates it.
pub(crate) fn prepare_for_insert(exec: &Exec<'_>, document: &Document) -> StoreResult<Document> {
    let prepared = match document.get("_id") {
        Some(Bson::Array(_)) => return Err(CommandError::bad_value("can't use an array for _id")),
        Some(Bson::RegularExpression(_)) => {
            return Err(CommandError::bad_value("can't use a regex for _id"));
        }
        Some(Bson::Undefined) => {
            return Err(CommandError::bad_value("can't use a undefined for _id"));
        }
        Some(id) => {
            check_id_has_no_dollar_fields(id)?;
            with_id_first(document.clone(), None)
        }
        None => with_id_first(
            document.clone(),
            Some(&Bson::ObjectId(exec.store.new_object_id(exec.now))),
        ),
    };
    let size = document_size(&prepared);
    if size > MAX_BATCH_BYTES {
        return Err(CommandError::bad_value(format!(
            "object to insert too large. size in bytes: {size}, max size: {MAX_BATCH_BYTES}"
        )));
    }
    Ok(prepared)
}

/// mongod refuses `$`-prefixed field names anywhere inside `_id` (5.0+ allows them elsewhere).
/// Walked with an explicit stack, so a deeply nested `_id` cannot exhaust the call stack.
fn check_id_has_no_dollar_fields(id: &Bson) -> StoreResult<()> {
    let mut pending = vec![id];
    while let Some(value) = pending.pop() {
        match value {
            Bson::Document(document) => {
                if let Some(key) = document.keys().find(|key| key.starts_with('$')) {
                    return Err(CommandError::new(
                        code::DOLLAR_PREFIXED_FIELD_NAME,
                        format!(
                            "_id fields may not contain '$'-prefixed fields: {key} is not valid for storage."
                        ),
                    ));
                }
                pending.extend(document.values());
            }
            Bson::Array(items) => pending.extend(items),
            _ => {}
        }
    }
    Ok(())
}

/// The collection for a write, created implicitly (and logged) if missing.
///
/// # Errors
///
/// Inside a transaction, as [`Exec::collection`].
pub(crate) fn collection_for_write(
    exec: &mut Exec<'_>,
    collection: &str,
) -> StoreResult<CollectionHandle> {
    let store = exec.store;
    if let Some(txn) = exec.txn.as_deref_mut() {
        return txn.collection_or_create(store, exec.db, collection);
    }
    let (handle, created) = store
        .catalog
        .collection_or_create(exec.db, collection, || store.random_uuid());
    if created {
        let uuid = read(&handle).uuid;
        exec.record_catalog(
            collection,
            Some(uuid),
            Change::Create(Arc::new(Document::new())),
        );
    }
    Ok(handle)
}

pub(crate) fn insert(exec: &mut Exec<'_>, command: &Document) -> StoreResult<Document> {
    let collection = collection_name(command, "insert")?;
    validate_namespace(exec.db, collection)?;
    super::views::refuse_view(exec, collection)?;
    let documents = required_array(command, "insert", "documents")?
        .iter()
        .enumerate()
        .map(|(position, item)| statement(item, "insert", "documents", position))
        .collect::<StoreResult<Vec<_>>>()?;
    check_batch_size(documents.len())?;
    let ordered = optional_bool(command, "insert", "ordered")?.unwrap_or(true);
    let statements = statement_ids(command, documents.len())?;
    let checked_out = CheckedOutSession::of(exec, command)?;
    let mut session = checked_out.begin()?;
    let handle = collection_for_write(exec, collection)?;
    let mut result = BatchResult::default();
    for (position, (item, statement_id)) in documents.iter().zip(&statements).enumerate() {
        if session
            .as_ref()
            .is_some_and(|record| record.executed(*statement_id).is_some())
        {
            result.n += 1;
            result.retried.push(Bson::Int32(*statement_id));
            continue;
        }
        exec.begin_statement(session.is_some().then_some(*statement_id), false);
        let outcome = prepare_for_insert(exec, item).and_then(|document| {
            let mut guard = write(&handle);
            guard.validate(&document, ValidatedWrite::Insert, exec.bypass_validation)?;
            guard.insert(document)?;
            record_insert(exec, &guard);
            Ok(())
        });
        match outcome {
            Ok(()) => {
                result.n += 1;
                if let Some(record) = session.as_mut() {
                    exec.end_statement(record, *statement_id, StatementOutcome::Inserted);
                }
            }
            Err(error) => {
                result.write_errors.push(error.to_write_error(position));
                if ordered {
                    break;
                }
            }
        }
    }
    Ok(result.into_reply(false))
}

/// What one update statement did.
pub(crate) struct UpdateResult {
    pub(crate) matched: i64,
    pub(crate) modified: i64,
    pub(crate) upserted_id: Option<Bson>,
}

/// Which match a single-document write takes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Pick<'a> {
    /// The first match in natural order, or the last with a `{$natural: -1}` hint.
    Natural { forward: bool },
    /// The first match in this sort order (8.0's `sort` of a single update).
    Sorted(&'a SortSpec),
}

impl<'a> Pick<'a> {
    /// The statement's `sort` if it has one, else natural order in its hint's direction.
    pub(crate) fn of(sort: Option<&'a SortSpec>, hint: Option<&Hint>) -> Pick<'a> {
        match sort.filter(|sort| !sort.is_empty()) {
            Some(sort) => Pick::Sorted(sort),
            None => Pick::Natural {
                forward: !Hint::is_reverse_natural(hint),
            },
        }
    }
}

/// The records an update statement modifies: every match with `multi`, else the one `pick`
/// chooses.
fn update_targets(
    collection: &Collection,
    filter: &Filter,
    multi: bool,
    pick: Pick<'_>,
) -> Vec<u64> {
    if multi {
        return collection.matching_records(filter, None);
    }
    match pick {
        Pick::Natural { forward } => single_match(collection, filter, forward)
            .into_iter()
            .collect(),
        Pick::Sorted(sort) => {
            let candidates: Vec<(u64, &Document)> = collection
                .matching_records(filter, None)
                .into_iter()
                .filter_map(|record| collection.get(record).map(|doc| (record, doc.as_ref())))
                .collect();
            let sorted = sort.sort(candidates, |(_, document)| Some(*document));
            sorted
                .first()
                .map(|(record, _)| *record)
                .into_iter()
                .collect()
        }
    }
}

/// The first match in natural order, or (reading in reverse) the last.
pub(crate) fn single_match(collection: &Collection, filter: &Filter, forward: bool) -> Option<u64> {
    if forward {
        collection
            .matching_records(filter, Some(1))
            .first()
            .copied()
    } else {
        collection.matching_records(filter, None).last().copied()
    }
}

/// Records the insert of `collection`'s newest document (the one just inserted).
pub(crate) fn record_insert(exec: &mut Exec<'_>, collection: &Collection) {
    if let Some(document) = collection.newest() {
        exec.record(OplogWrite::insert(collection, document.clone()));
    }
}

/// Records the modification of `record` from `original` into what it now holds by `update`.
pub(crate) fn record_update(
    exec: &mut Exec<'_>,
    collection: &Collection,
    record: u64,
    original: &Arc<Document>,
    update: &Update,
) {
    if let Some(updated) = collection.get(record) {
        let description = update.describe(original, updated);
        exec.record(OplogWrite::update(
            collection,
            original,
            updated.clone(),
            description,
        ));
    }
}

/// Applies an update to the matching documents of a locked collection (or upserts).
pub(crate) fn apply_update(
    exec: &mut Exec<'_>,
    collection: &mut Collection,
    filter: &Filter,
    update: &Update,
    multi: bool,
    upsert: bool,
    pick: Pick<'_>,
) -> StoreResult<UpdateResult> {
    let records = update_targets(collection, filter, multi, pick);
    if records.is_empty() {
        if !upsert {
            return Ok(UpdateResult {
                matched: 0,
                modified: 0,
                upserted_id: None,
            });
        }
        let document = update.upsert_document(
            filter,
            ApplyContext {
                is_insert: true,
                now: exec.now,
                matched_position: None,
            },
        )?;
        let document = prepare_for_insert(exec, &document)?;
        let id = document.get("_id").cloned();
        collection.validate(&document, ValidatedWrite::Insert, exec.bypass_validation)?;
        collection.insert(document)?;
        record_insert(exec, collection);
        return Ok(UpdateResult {
            matched: 0,
            modified: 0,
            upserted_id: id,
        });
    }
    let mut result = UpdateResult {
        matched: 0,
        modified: 0,
        upserted_id: None,
    };
    for record in records {
        let Some(original) = collection.get(record).cloned() else {
            continue;
        };
        let context = ApplyContext {
            is_insert: false,
            now: exec.now,
            matched_position: update
                .uses_matched_position()
                .then(|| filter.matched_position(&original))
                .flatten(),
        };
        let updated = update.apply(&original, context)?;
        result.matched += 1;
        if documents_identical(&original, &updated) {
            continue;
        }
        if document_size(&updated) > MAX_BATCH_BYTES {
            return Err(CommandError::bad_value(
                "Resulting document after update is larger than 16777216",
            ));
        }
        let write = ValidatedWrite::Update { before: &original };
        collection.validate(&updated, write, exec.bypass_validation)?;
        collection.replace(record, updated)?;
        record_update(exec, collection, record, &original, update);
        result.modified += 1;
    }
    Ok(result)
}

/// One statement of an `update` command.
struct UpdateStatement {
    filter: Document,
    update: Bson,
    multi: bool,
    upsert: bool,
    /// Which match a single-document update picks (8.0+); not allowed with `multi`.
    sort: Option<Document>,
    /// The statement's `arrayFilters`, parsed with the update.
    array_filters: Option<Bson>,
    /// How the filter and the sort compare strings (the statement's `collation`).
    collation: Option<crate::collation::Collation>,
    /// The statement's `hint` (as `{hint: ...}`), checked when the statement runs.
    hint: Document,
}

fn parse_update_statement(
    item: &Bson,
    position: usize,
    vars: &LetVars,
) -> StoreResult<UpdateStatement> {
    let statement = statement(item, "update", "updates", position)?;
    let filter = optional_document(statement, "update.updates", "q")?
        .ok_or_else(|| missing("update.updates", "q"))?;
    let update = match statement.get("u") {
        Some(Bson::Array(stages)) if stages.iter().any(|stage| stage.as_document().is_none()) => {
            // mongod refuses these while parsing the command, before any statement runs.
            return Err(CommandError::type_mismatch(
                "Each element of the 'pipeline' array must be an object",
            ));
        }
        Some(update @ (Bson::Document(_) | Bson::Array(_))) => vars.update(update)?.into_owned(),
        Some(_) => {
            return Err(CommandError::type_mismatch(
                "Update argument must be either an object or an array",
            ));
        }
        None => return Err(missing("update.updates", "u")),
    };
    Ok(UpdateStatement {
        array_filters: statement.get("arrayFilters").cloned(),
        collation: crate::collation::of(statement)?,
        filter: vars.filter(filter)?.into_owned(),
        update,
        multi: optional_bool(statement, "update.updates", "multi")?.unwrap_or(false),
        upsert: optional_bool(statement, "update.updates", "upsert")?.unwrap_or(false),
        sort: optional_document(statement, "update.updates", "sort")?.cloned(),
        hint: hint_of(statement),
    })
}

pub(crate) fn update(exec: &mut Exec<'_>, command: &Document) -> StoreResult<Document> {
    let collection = collection_name(command, "update")?;
    validate_namespace(exec.db, collection)?;
    super::views::refuse_view(exec, collection)?;
    let items = required_array(command, "update", "updates")?;
    check_batch_size(items.len())?;
    let vars = LetVars::read(command)?;
    let statements_parsed = items
        .iter()
        .enumerate()
        .map(|(position, item)| parse_update_statement(item, position, &vars))
        .collect::<StoreResult<Vec<_>>>()?;
    let ordered = optional_bool(command, "update", "ordered")?.unwrap_or(true);
    let statements = statement_ids(command, items.len())?;
    let checked_out = CheckedOutSession::of(exec, command)?;
    let mut session = checked_out.begin()?;
    let mut handle = exec.collection(collection)?;
    let mut result = BatchResult::default();
    for (position, (parsed, statement_id)) in statements_parsed.iter().zip(&statements).enumerate()
    {
        if let Some(StatementOutcome::Updated {
            matched,
            modified,
            upserted_id,
        }) = session
            .as_ref()
            .and_then(|record| record.executed(*statement_id))
        {
            result.n += matched + i64::from(upserted_id.is_some());
            result.modified += modified;
            if let Some(id) = upserted_id {
                result
                    .upserted
                    .push(doc! { "index": index_as_i32(position), "_id": id.clone() });
            }
            result.retried.push(Bson::Int32(*statement_id));
            continue;
        }
        if let Some(other) = session
            .as_ref()
            .and_then(|record| record.executed(*statement_id))
        {
            // The statement id was used by a different kind of write in this transaction.
            let error = CommandError::new(
                code::UPDATE_RETRY_MISMATCH,
                format!(
                    "update retry request is not compatible with previous write in the transaction of type: {}",
                    other.op_type()
                ),
            );
            result.write_errors.push(error.to_write_error(position));
            if ordered {
                break;
            }
            continue;
        }
        // Multi-document updates are not retryable (see below): their entries name no statement.
        let retryable = session.is_some() && !parsed.multi;
        exec.begin_statement(retryable.then_some(*statement_id), false);
        let outcome = Filter::parse(&parsed.filter).and_then(|filter| {
            let filter = filter.with_collation(parsed.collation.as_ref());
            let update =
                Update::parse_with_array_filters(&parsed.update, parsed.array_filters.as_ref())?;
            if parsed.multi && update.is_replacement() {
                return Err(CommandError::failed_to_parse(
                    "multi update is not supported for replacement-style update",
                ));
            }
            if parsed.multi && parsed.sort.is_some() {
                return Err(CommandError::failed_to_parse(
                    "Cannot specify sort with multi=true",
                ));
            }
            let sort = parsed
                .sort
                .as_ref()
                .map(|sort| Ok(SortSpec::parse(sort)?.with_collation(parsed.collation.as_ref())))
                .transpose()?;
            if handle.is_none() && parsed.upsert {
                handle = Some(collection_for_write(exec, collection)?);
            }
            let Some(handle) = &handle else {
                return Ok(UpdateResult {
                    matched: 0,
                    modified: 0,
                    upserted_id: None,
                });
            };
            let mut guard = write(handle);
            let hint = super::hint::resolve(&parsed.hint, Some(&guard))?;
            apply_update(
                exec,
                &mut guard,
                &filter,
                &update,
                parsed.multi,
                parsed.upsert,
                Pick::of(sort.as_ref(), hint.as_ref()),
            )
        });
        match outcome {
            Ok(outcome) => {
                result.n += outcome.matched + i64::from(outcome.upserted_id.is_some());
                result.modified += outcome.modified;
                if let Some(id) = &outcome.upserted_id {
                    result
                        .upserted
                        .push(doc! { "index": index_as_i32(position), "_id": id.clone() });
                }
                // Multi-document updates are not retryable: mongod does not record them either.
                if let (Some(record), false) = (session.as_mut(), parsed.multi) {
                    exec.end_statement(
                        record,
                        *statement_id,
                        StatementOutcome::Updated {
                            matched: outcome.matched,
                            modified: outcome.modified,
                            upserted_id: outcome.upserted_id,
                        },
                    );
                }
            }
            Err(error) => {
                result.write_errors.push(error.to_write_error(position));
                if ordered {
                    break;
                }
            }
        }
    }
    lite_parse_pipelines(&statements_parsed)?;
    Ok(result.into_reply(true))
}

/// mongod lite-parses every statement's update pipeline after the batch ran (to count the
/// stages it used), statements an ordered batch never reached included: an unknown stage name
/// or a stage object without exactly one field then fails the whole command, while the writes
/// of the statements that ran stay applied.
/// A statement's `hint` alone, checked against the collection when the statement runs (a
/// hint naming no index is that statement's write error, as in mongod).
fn hint_of(statement: &Document) -> Document {
    statement
        .get("hint")
        .map(|hint| doc! { "hint": hint.clone() })
        .unwrap_or_default()
}

fn lite_parse_pipelines(statements: &[UpdateStatement]) -> StoreResult<()> {
    for statement in statements {
        if let Bson::Array(stages) = &statement.update {
            crate::aggregate::lite_parse(stages)?;
        }
    }
    Ok(())
}

pub(crate) fn delete(exec: &mut Exec<'_>, command: &Document) -> StoreResult<Document> {
    let collection = collection_name(command, "delete")?;
    validate_namespace(exec.db, collection)?;
    super::views::refuse_view(exec, collection)?;
    let items = required_array(command, "delete", "deletes")?;
    check_batch_size(items.len())?;
    let vars = LetVars::read(command)?;
    let mut parsed = Vec::with_capacity(items.len());
    for (position, item) in items.iter().enumerate() {
        let statement = statement(item, "delete", "deletes", position)?;
        let filter = optional_document(statement, "delete.deletes", "q")?
            .ok_or_else(|| missing("delete.deletes", "q"))?;
        let limit = match super::args::optional_integer(statement, "delete.deletes", "limit")? {
            Some(limit @ (0 | 1)) => limit,
            Some(other) => {
                return Err(CommandError::failed_to_parse(format!(
                    "The limit field in delete objects must be 0 or 1. Got {other}"
                )));
            }
            None => return Err(missing("delete.deletes", "limit")),
        };
        let collation = crate::collation::of(statement)?;
        parsed.push((
            (vars.filter(filter)?.into_owned(), collation),
            limit == 1,
            hint_of(statement),
        ));
    }
    let ordered = optional_bool(command, "delete", "ordered")?.unwrap_or(true);
    let statements = statement_ids(command, items.len())?;
    let checked_out = CheckedOutSession::of(exec, command)?;
    let mut session = checked_out.begin()?;
    let handle = exec.collection(collection)?;
    let mut result = BatchResult::default();
    for (position, ((filter, just_one, hint), statement_id)) in
        parsed.iter().zip(&statements).enumerate()
    {
        if let Some(executed) = session
            .as_ref()
            .and_then(|record| record.executed(*statement_id))
        {
            // A statement id recorded for another kind of write deleted nothing.
            if let StatementOutcome::Deleted { count } = executed {
                result.n += count;
            }
            result.retried.push(Bson::Int32(*statement_id));
            continue;
        }
        let (filter, collation) = filter;
        exec.begin_statement(
            (session.is_some() && *just_one).then_some(*statement_id),
            false,
        );
        let outcome = Filter::parse(filter).and_then(|filter| {
            let filter = filter.with_collation(collation.as_ref());
            let Some(handle) = &handle else {
                return Ok(0);
            };
            let mut guard = write(handle);
            let hint = super::hint::resolve(hint, Some(&guard))?;
            let records = if *just_one {
                let forward = !Hint::is_reverse_natural(hint.as_ref());
                single_match(&guard, &filter, forward).into_iter().collect()
            } else {
                guard.matching_records(&filter, None)
            };
            let mut count = 0;
            for record in records {
                if let Some(removed) = guard.remove(record) {
                    exec.record(OplogWrite::delete(&guard, &removed));
                    count += 1;
                }
            }
            Ok(count)
        });
        match outcome {
            Ok(count) => {
                result.n += count;
                if let (Some(record), true) = (session.as_mut(), *just_one) {
                    exec.end_statement(record, *statement_id, StatementOutcome::Deleted { count });
                }
            }
            Err(error) => {
                result.write_errors.push(error.to_write_error(position));
                if ordered {
                    break;
                }
            }
        }
    }
    Ok(result.into_reply(false))
}
