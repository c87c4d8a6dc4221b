//! `bulkWrite` (mongod 8.0): write ops over many namespaces in one command, each op run through
//! the same path as a one-statement `insert`/`update`/`delete` of its namespace, with the
//! results reported through a cursor (`admin.$cmd.bulkWrite`).
//!
//! The whole command is validated before any op runs (types, `nsInfo` indexes, batch size), so
//! malformed input never leaves a half-applied batch. Each op is statement `stmtId + position`
//! of the command's retryable write, so a retry replays the outcome recorded for an op that
//! already ran instead of applying it twice.

use std::sync::Arc;

use bson::{Bson, Document, doc};

use super::Exec;
use super::args::{cursor_batch_size, missing, optional_bool, optional_document, required_array};
use super::find::{CursorOptions, open_cursor};
use super::write::{MAX_WRITE_BATCH, delete, insert, update};
use crate::catalog::validate_namespace;
use crate::code;
use crate::errors::{CommandError, StoreResult, index_as_i32, type_name};

/// The namespace every `bulkWrite` results cursor is opened on.
const RESULTS_NS: &str = "admin.$cmd.bulkWrite";

/// Fields of the command copied onto each op's one-statement command.
const FORWARDED: &[&str] = &["lsid", "txnNumber", "bypassDocumentValidation", "let"];

/// One parsed op: which command it becomes, on which namespace.
struct Op<'a> {
    kind: Kind,
    db: &'a str,
    coll: &'a str,
    body: &'a Document,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Insert,
    Update,
    Delete,
}

/// The counts of the reply.
#[derive(Default)]
struct Totals {
    errors: i64,
    inserted: i64,
    matched: i64,
    modified: i64,
    upserted: i64,
    deleted: i64,
}

pub(crate) fn bulk_write(exec: &mut Exec<'_>, command: &Document) -> StoreResult<Document> {
    if exec.db != "admin" {
        return Err(CommandError::new(
            code::UNAUTHORIZED,
            "bulkWrite may only be run against the admin database.",
        ));
    }
    let namespaces = parse_ns_info(command)?;
    let items = required_array(command, "bulkWrite", "ops")?;
    if items.is_empty() || items.len() > MAX_WRITE_BATCH {
        return Err(CommandError::new(
            code::INVALID_LENGTH,
            format!(
                "Write batch sizes must be between 1 and {MAX_WRITE_BATCH}. Got {} operations.",
                items.len()
            ),
        ));
    }
    let ops = items
        .iter()
        .enumerate()
        .map(|(position, item)| parse_op(item, position, &namespaces))
        .collect::<StoreResult<Vec<_>>>()?;
    let ordered = optional_bool(command, "bulkWrite", "ordered")?.unwrap_or(true);
    let errors_only = optional_bool(command, "bulkWrite", "errorsOnly")?.unwrap_or(false);
    let batch_size = cursor_batch_size(command, "bulkWrite")?;
    let first_statement = match command.get("stmtId") {
        Some(Bson::Int32(first)) => *first,
        _ => 0,
    };
    let mut totals = Totals::default();
    let mut results = Vec::new();
    for (position, op) in ops.iter().enumerate() {
        let statement = first_statement.saturating_add(index_as_i32(position));
        let entry = run_op(exec, command, op, statement, position, &mut totals)?;
        let failed = entry.get("ok") == Some(&Bson::Double(0.0));
        if failed || !errors_only {
            results.push(Arc::new(entry));
        }
        if failed && ordered {
            break;
        }
    }
    let options = CursorOptions {
        batch_size: Some(batch_size.filter(|n| *n > 0).unwrap_or(usize::MAX)),
        ..CursorOptions::default()
    };
    let mut reply = open_cursor(exec, RESULTS_NS, results, options);
    reply.remove("ok");
    reply.insert("nErrors", saturate(totals.errors));
    reply.insert("nInserted", saturate(totals.inserted));
    reply.insert("nMatched", saturate(totals.matched));
    reply.insert("nModified", saturate(totals.modified));
    reply.insert("nUpserted", saturate(totals.upserted));
    reply.insert("nDeleted", saturate(totals.deleted));
    reply.insert("ok", 1.0);
    Ok(reply)
}

fn saturate(n: i64) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// `nsInfo`: `[{ns: "db.coll"}, ...]`, each a valid namespace.
fn parse_ns_info(command: &Document) -> StoreResult<Vec<(&str, &str)>> {
    let entries = required_array(command, "bulkWrite", "nsInfo")?;
    if entries.is_empty() || entries.len() > MAX_WRITE_BATCH {
        return Err(CommandError::bad_value(format!(
            "bulkWrite nsInfo must hold between 1 and {MAX_WRITE_BATCH} namespaces, got {}",
            entries.len()
        )));
    }
    entries
        .iter()
        .enumerate()
        .map(|(position, entry)| {
            let field = format!("nsInfo.{position}");
            let Bson::Document(entry) = entry else {
                return Err(CommandError::type_mismatch(format!(
                    "BSON field 'bulkWrite.{field}' is the wrong type '{}', expected type 'object'",
                    type_name(entry)
                )));
            };
            let ns = match entry.get("ns") {
                Some(Bson::String(ns)) => ns.as_str(),
                Some(other) => {
                    return Err(CommandError::type_mismatch(format!(
                        "BSON field 'bulkWrite.{field}.ns' is the wrong type '{}', expected type 'string'",
                        type_name(other)
                    )));
                }
                None => return Err(missing(&format!("bulkWrite.{field}"), "ns")),
            };
            let (db, coll) = ns.split_once('.').ok_or_else(|| {
                CommandError::new(code::INVALID_NAMESPACE, format!("Invalid namespace specified '{ns}'"))
            })?;
            validate_namespace(db, coll)?;
            Ok((db, coll))
        })
        .collect()
}

/// One `ops` entry: `{insert|update|delete: <nsInfo index>, ...}`.
fn parse_op<'a>(
    item: &'a Bson,
    position: usize,
    namespaces: &[(&'a str, &'a str)],
) -> StoreResult<Op<'a>> {
    let Bson::Document(body) = item else {
        return Err(CommandError::type_mismatch(format!(
            "BSON field 'bulkWrite.ops.{position}' is the wrong type '{}', expected type 'object'",
            type_name(item)
        )));
    };
    let (key, value) = body.iter().next().ok_or_else(|| {
        CommandError::failed_to_parse(format!("bulkWrite ops entry {position} is empty"))
    })?;
    let kind = match key.as_str() {
        "insert" => Kind::Insert,
        "update" => Kind::Update,
        "delete" => Kind::Delete,
        other => {
            return Err(CommandError::failed_to_parse(format!(
                "Unrecognized bulkWrite operation '{other}' in ops entry {position}"
            )));
        }
    };
    let index = match value {
        Bson::Int32(index) => usize::try_from(*index).ok(),
        other => {
            return Err(CommandError::type_mismatch(format!(
                "BSON field 'bulkWrite.ops.{position}.{key}' is the wrong type '{}', expected type 'int'",
                type_name(other)
            )));
        }
    };
    let (db, coll) = index
        .and_then(|index| namespaces.get(index))
        .copied()
        .ok_or_else(|| {
            CommandError::bad_value(format!(
                "BulkWrite ops entry {position} has an invalid nsInfo index {value}"
            ))
        })?;
    Ok(Op {
        kind,
        db,
        coll,
        body,
    })
}

/// The one-statement command an op runs as.
fn op_command(command: &Document, op: &Op<'_>, statement: i32) -> StoreResult<Document> {
    let body = op.body;
    let mut out = match op.kind {
        Kind::Insert => {
            let document = optional_document(body, "bulkWrite.ops", "document")?
                .ok_or_else(|| missing("bulkWrite.ops", "document"))?;
            doc! { "insert": op.coll, "documents": [document.clone()] }
        }
        Kind::Update => {
            let filter = optional_document(body, "bulkWrite.ops", "filter")?
                .ok_or_else(|| missing("bulkWrite.ops", "filter"))?;
            let update = body
                .get("updateMods")
                .ok_or_else(|| missing("bulkWrite.ops", "updateMods"))?;
            let mut statement = doc! { "q": filter.clone(), "u": update.clone() };
            for field in [
                "multi",
                "upsert",
                "arrayFilters",
                "collation",
                "hint",
                "sort",
            ] {
                if let Some(value) = body.get(field) {
                    statement.insert(field, value.clone());
                }
            }
            doc! { "update": op.coll, "updates": [statement] }
        }
        Kind::Delete => {
            let filter = optional_document(body, "bulkWrite.ops", "filter")?
                .ok_or_else(|| missing("bulkWrite.ops", "filter"))?;
            let multi = optional_bool(body, "bulkWrite.ops", "multi")?.unwrap_or(false);
            let mut statement = doc! { "q": filter.clone(), "limit": i32::from(!multi) };
            for field in ["collation", "hint"] {
                if let Some(value) = body.get(field) {
                    statement.insert(field, value.clone());
                }
            }
            doc! { "delete": op.coll, "deletes": [statement] }
        }
    };
    out.insert("ordered", true);
    out.insert("stmtId", statement);
    for field in FORWARDED {
        if let Some(value) = command.get(*field) {
            out.insert(*field, value.clone());
        }
    }
    Ok(out)
}

/// Whether an op's failure ends the whole command (the session or transaction cannot go on:
/// the client must retry or give up as a whole) rather than being that op's write error.
fn is_command_fatal(error: &CommandError) -> bool {
    matches!(
        error.code,
        code::WRITE_CONFLICT
            | code::NO_SUCH_TRANSACTION
            | code::TRANSACTION_TOO_LARGE
            | code::TRANSACTION_TOO_OLD
            | code::INCOMPLETE_TRANSACTION_HISTORY
            | code::TOO_MANY_LOGICAL_SESSIONS
            | code::CONFLICTING_OPERATION_IN_PROGRESS
    ) || error.extra.contains_key("errorLabels")
}

/// Runs one op in its namespace and returns its results cursor entry.
fn run_op(
    exec: &mut Exec<'_>,
    command: &Document,
    op: &Op<'_>,
    statement: i32,
    position: usize,
    totals: &mut Totals,
) -> StoreResult<Document> {
    let idx = index_as_i32(position);
    let reply = op_command(command, op, statement).and_then(|single| {
        let mut sub = Exec {
            store: exec.store,
            db: op.db,
            now: exec.now,
            last_write: None,
            awaiting_inserts: None,
            session: exec.session.clone(),
            txn: exec.txn.as_deref_mut(),
            read_at: None,
            statement: None,
            majority_committed: exec.majority_committed,
            host: exec.host,
            router: exec.router,
            bypass_validation: exec.bypass_validation,
        };
        let reply = match op.kind {
            Kind::Insert => insert(&mut sub, &single),
            // The collection's default collation, as for the update and delete commands.
            Kind::Update => super::default_collation::apply(&sub, "update", &single)
                .and_then(|single| update(&mut sub, &single)),
            Kind::Delete => super::default_collation::apply(&sub, "delete", &single)
                .and_then(|single| delete(&mut sub, &single)),
        };
        if let Some(written) = sub.last_write {
            exec.last_write = Some(written);
        }
        reply
    });
    let reply = match reply {
        Ok(reply) => reply,
        Err(error) if is_command_fatal(&error) => return Err(error),
        Err(error) => {
            totals.errors += 1;
            return Ok(error_entry(idx, error.code, &error.message, &error.extra));
        }
    };
    if let Ok(errors) = reply.get_array("writeErrors") {
        if let Some(Bson::Document(first)) = errors.first() {
            totals.errors += 1;
            let code = first.get_i32("code").unwrap_or(code::BAD_VALUE);
            let message = first.get_str("errmsg").unwrap_or_default().to_owned();
            let mut extra = first.clone();
            for field in ["index", "code", "errmsg"] {
                extra.remove(field);
            }
            return Ok(error_entry(idx, code, &message, &extra));
        }
    }
    Ok(success_entry(idx, op.kind, &reply, totals))
}

fn error_entry(idx: i32, code: i32, message: &str, extra: &Document) -> Document {
    let mut entry = doc! {
        "ok": 0.0,
        "idx": idx,
        "code": code,
        "codeName": crate::errors::code_name(code),
        "errmsg": message,
    };
    for (key, value) in extra {
        if key != "errorLabels" {
            entry.insert(key.clone(), value.clone());
        }
    }
    entry.insert("n", 0);
    entry
}

fn success_entry(idx: i32, kind: Kind, reply: &Document, totals: &mut Totals) -> Document {
    let n = i64::from(reply.get_i32("n").unwrap_or(0));
    let mut entry = doc! { "ok": 1.0, "idx": idx, "n": saturate(n) };
    match kind {
        Kind::Insert => totals.inserted += n,
        Kind::Delete => totals.deleted += n,
        Kind::Update => {
            let modified = i64::from(reply.get_i32("nModified").unwrap_or(0));
            let upserted = reply
                .get_array("upserted")
                .ok()
                .and_then(|u| u.first())
                .and_then(|u| u.as_document())
                .and_then(|u| u.get("_id"))
                .cloned();
            totals.modified += modified;
            entry.insert("nModified", saturate(modified));
            match upserted {
                Some(id) => {
                    totals.upserted += 1;
                    totals.matched += n.saturating_sub(1);
                    entry.insert("upserted", doc! { "_id": id });
                }
                None => totals.matched += n,
            }
        }
    }
    entry
}
