//! The write stages of `aggregate`: `$out` and `$merge`, as the pipeline's last stage.
//!
//! The rest of the pipeline runs as usual; its output is then written through the store's own
//! write commands, so that every write is validated and reaches the op log like any other.
//! - `$out` (a collection name, or `{db, coll}`) fills a temporary
//!   collection and renames it over the target with `dropTarget`, so readers see the old
//!   contents or the new, never a mix (as mongod does). The target's indexes and options are
//!   not carried over (not modelled).
//! - `$merge` (`into` a name or `{db, coll}`, `on: "_id"` only) writes each
//!   output document by `_id`: `whenMatched` `merge` (default, `$set` of its fields),
//!   `replace`, `keepExisting` or `fail`; `whenNotMatched` `insert` (default) or `discard`.
//!   `whenMatched` pipelines, `let`, other `on` fields and `whenNotMatched: "fail"` are
//!   refused with a clear error.
//!
//! Output may go to another database (not `admin`, `config` or `local`, as mongod refuses);
//! either stage inside a transaction is refused.

use std::borrow::Cow;
use std::sync::Arc;

use bson::{Bson, Document, doc};

use super::Exec;
use super::{admin, write};
use crate::code;
use crate::errors::{CommandError, StoreResult};

/// How many documents one internal write command carries.
const CHUNK: usize = 1000;

/// A parsed `$out` or `$merge`.
#[derive(Debug)]
pub(crate) enum WriteStage {
    Out {
        target: Target,
    },
    Merge {
        target: Target,
        matched: WhenMatched,
        insert_unmatched: bool,
    },
}

/// Where a write stage's output goes: a collection, in the aggregate's database or another.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// `None`: the aggregate's own database.
    db: Option<String>,
    collection: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WhenMatched {
    Merge,
    Replace,
    KeepExisting,
    Fail,
}

/// Splits a final `$out`/`$merge` off the pipeline; `None` when the last stage is neither.
///
/// # Errors
/// Location40601 for a write stage that is not last, and the parse errors of the stage.
pub(crate) fn split<'p>(
    exec: &Exec<'_>,
    command: &Document,
    stages: &'p [Bson],
) -> StoreResult<(&'p [Bson], Option<WriteStage>)> {
    let is_write = |stage: &Bson| {
        stage
            .as_document()
            .and_then(|d| d.keys().next())
            .is_some_and(|name| name == "$out" || name == "$merge")
    };
    let Some((last, rest)) = stages.split_last() else {
        return Ok((stages, None));
    };
    if rest.iter().any(is_write) {
        return Err(CommandError::new(
            code::WRITE_STAGE_NOT_LAST,
            "$out and $merge can only be the final stage in the pipeline",
        ));
    }
    let Some(spec) = last.as_document().filter(|_| is_write(last)) else {
        return Ok((stages, None));
    };
    let level = command
        .get_document("readConcern")
        .ok()
        .and_then(|concern| concern.get_str("level").ok());
    if level == Some("linearizable") {
        return Err(CommandError::new(
            code::INVALID_OPTIONS,
            "$out and $merge cannot be used with a 'linearizable' read concern level",
        ));
    }
    if exec.txn.is_some() {
        return Err(CommandError::new(
            code::OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
            "$out and $merge cannot be used in a transaction",
        ));
    }
    let stage = match spec.iter().next() {
        Some((name, value)) if name == "$out" => WriteStage::Out {
            target: target_in(exec, value, "coll")?,
        },
        Some((_, value)) => parse_merge(exec, value)?,
        None => return Ok((stages, None)),
    };
    Ok((rest, Some(stage)))
}

/// The target collection: a name, or `{db, <coll_field>}`.
///
/// # Errors
/// FailedToParse for a malformed target; InvalidNamespace for `admin`, `config` or `local`.
fn target_in(exec: &Exec<'_>, value: &Bson, coll_field: &str) -> StoreResult<Target> {
    match value {
        Bson::String(name) if !name.is_empty() => Ok(Target {
            db: None,
            collection: name.clone(),
        }),
        Bson::Document(spec) => {
            let db = match spec.get("db") {
                None => None,
                Some(Bson::String(db)) if db == exec.db => None,
                Some(Bson::String(db)) if matches!(db.as_str(), "admin" | "config" | "local") => {
                    return Err(CommandError::new(
                        code::INVALID_NAMESPACE,
                        format!("Invalid $out/$merge target: cannot write to the '{db}' database"),
                    ));
                }
                Some(Bson::String(db)) if !db.is_empty() => Some(db.clone()),
                Some(_) => {
                    return Err(CommandError::failed_to_parse(
                        "the target database of $out/$merge must be a non-empty string",
                    ));
                }
            };
            match spec.get(coll_field) {
                Some(Bson::String(name)) if !name.is_empty() => Ok(Target {
                    db,
                    collection: name.clone(),
                }),
                _ => Err(CommandError::failed_to_parse(format!(
                    "the target of $out/$merge needs a non-empty string '{coll_field}'"
                ))),
            }
        }
        _ => Err(CommandError::failed_to_parse(
            "the target of $out/$merge must be a collection name or a document",
        )),
    }
}

fn parse_merge(exec: &Exec<'_>, value: &Bson) -> StoreResult<WriteStage> {
    let spec = match value {
        Bson::String(_) => {
            return Ok(WriteStage::Merge {
                target: target_in(exec, value, "coll")?,
                matched: WhenMatched::Merge,
                insert_unmatched: true,
            });
        }
        Bson::Document(spec) => spec,
        _ => {
            return Err(CommandError::failed_to_parse(
                "$merge requires a string or an object argument",
            ));
        }
    };
    let mut target = None;
    let mut matched = WhenMatched::Merge;
    let mut insert_unmatched = true;
    for (key, item) in spec {
        match (key.as_str(), item) {
            ("into", _) => target = Some(target_in(exec, item, "coll")?),
            ("on", Bson::String(on)) if on == "_id" => {}
            ("whenMatched", Bson::String(mode)) => {
                matched = match mode.as_str() {
                    "merge" => WhenMatched::Merge,
                    "replace" => WhenMatched::Replace,
                    "keepExisting" => WhenMatched::KeepExisting,
                    "fail" => WhenMatched::Fail,
                    other => {
                        return Err(CommandError::bad_value(format!(
                            "Enumeration value '{other}' for field 'whenMatched' is not a valid value."
                        )));
                    }
                };
            }
            ("whenNotMatched", Bson::String(mode)) if mode == "insert" => insert_unmatched = true,
            ("whenNotMatched", Bson::String(mode)) if mode == "discard" => insert_unmatched = false,
            (other, _) => {
                return Err(CommandError::bad_value(format!(
                    "blackpipe does not model $merge's '{other}' as given"
                )));
            }
        }
    }
    if matched == WhenMatched::Fail && !insert_unmatched {
        return Err(CommandError::bad_value(
            "blackpipe does not model $merge with whenMatched 'fail' and whenNotMatched 'discard'",
        ));
    }
    let target = target.ok_or_else(|| {
        CommandError::failed_to_parse("BSON field '$merge.into' is missing but a required field")
    })?;
    Ok(WriteStage::Merge {
        target,
        matched,
        insert_unmatched,
    })
}

/// Writes the pipeline's output as the stage says.
///
/// # Errors
/// The first write error of the writes (e.g. DuplicateKey for `whenMatched: "fail"`).
pub(crate) fn write_output(
    exec: &mut Exec<'_>,
    stage: &WriteStage,
    output: Vec<Arc<Document>>,
) -> StoreResult<()> {
    let target = match stage {
        WriteStage::Out { target } | WriteStage::Merge { target, .. } => target,
    };
    let Some(db) = &target.db else {
        return write_in(exec, stage, &target.collection, &output);
    };
    super::validate_database_name(db)?;
    // The writes run as commands of the target database, then report their op log position
    // back to the aggregate.
    let mut elsewhere = exec.in_database(db);
    let result = write_in(&mut elsewhere, stage, &target.collection, &output);
    let last_write = elsewhere.last_write;
    exec.last_write = last_write.or(exec.last_write);
    result
}

fn write_in(
    exec: &mut Exec<'_>,
    stage: &WriteStage,
    target: &str,
    output: &[Arc<Document>],
) -> StoreResult<()> {
    match stage {
        WriteStage::Out { .. } => out(exec, target, output),
        WriteStage::Merge {
            matched,
            insert_unmatched,
            ..
        } => merge(exec, target, *matched, *insert_unmatched, output),
    }
}

fn out(exec: &mut Exec<'_>, target: &str, output: &[Arc<Document>]) -> StoreResult<()> {
    let temporary = format!(
        "tmp.agg_out.{}",
        exec.store.new_object_id(exec.now).to_hex()
    );
    if super::views::definition(exec, target)?.is_some() {
        return Err(super::views::not_a_collection(exec, target));
    }
    let mut create = doc! { "create": &temporary };
    // As mongod's $out, the replacement keeps the target's validation (and checks the output
    // against it, unless the aggregate bypasses validation).
    if let Some(target) = exec.store.catalog.collection(exec.db, target) {
        let target = crate::catalog::read(&target);
        for option in ["validator", "validationLevel", "validationAction"] {
            if let Some(value) = target.options.get(option) {
                create.insert(option, value.clone());
            }
        }
    }
    admin::create(exec, &create)?;
    for chunk in output.chunks(CHUNK) {
        let documents: Vec<Bson> = chunk
            .iter()
            .map(|d| Bson::Document((**d).clone()))
            .collect();
        let reply = write::insert(exec, &doc! { "insert": &temporary, "documents": documents });
        if let Err(error) = reply.and_then(|reply| first_write_error(&reply)) {
            // Nothing of a failed $out is visible: the target keeps its old contents.
            admin::drop_collection(exec, &doc! { "drop": &temporary })?;
            return Err(error);
        }
    }
    let db = exec.db.to_owned();
    admin::rename(exec, (&db, &temporary), (&db, target), true)
}

fn merge(
    exec: &mut Exec<'_>,
    target: &str,
    matched: WhenMatched,
    insert_unmatched: bool,
    output: &[Arc<Document>],
) -> StoreResult<()> {
    for chunk in output.chunks(CHUNK) {
        let reply = if matched == WhenMatched::Fail && insert_unmatched {
            // A match is a duplicate key on _id: plain inserts fail exactly there.
            let documents: Vec<Bson> = chunk
                .iter()
                .map(|d| Bson::Document((**d).clone()))
                .collect();
            write::insert(exec, &doc! { "insert": target, "documents": documents })?
        } else {
            let updates = chunk
                .iter()
                .map(|document| {
                    // As mongod: an output document without `_id` gets a new ObjectId (it
                    // can match nothing, so it is inserted).
                    let document = if document.contains_key("_id") {
                        Cow::Borrowed(&**document)
                    } else {
                        let mut with_id = doc! { "_id": exec.store.new_object_id(exec.now) };
                        with_id.extend((**document).clone());
                        Cow::Owned(with_id)
                    };
                    merge_statement(&document, matched, insert_unmatched)
                })
                .collect::<StoreResult<Vec<_>>>()?;
            write::update(exec, &doc! { "update": target, "updates": updates })?
        };
        first_write_error(&reply)?;
    }
    Ok(())
}

/// The update statement that merges one output document by its `_id`.
fn merge_statement(
    document: &Document,
    matched: WhenMatched,
    insert_unmatched: bool,
) -> StoreResult<Bson> {
    let Some(id) = document.get("_id") else {
        return Err(CommandError::new(
            code::MERGE_ON_FIELD_MISSING,
            "$merge write error: 'on' field '_id' cannot be missing",
        ));
    };
    let mut fields = document.clone();
    fields.remove("_id");
    let update = match matched {
        WhenMatched::Replace => Bson::Document(document.clone()),
        // Only an insert sets the fields: an existing document is kept as it is.
        WhenMatched::KeepExisting => Bson::Document(doc! { "$setOnInsert": document.clone() }),
        WhenMatched::Merge | WhenMatched::Fail if fields.is_empty() => {
            Bson::Document(doc! { "$setOnInsert": { "_id": id.clone() } })
        }
        WhenMatched::Merge | WhenMatched::Fail => Bson::Document(doc! { "$set": fields }),
    };
    Ok(Bson::Document(doc! {
        "q": { "_id": id.clone() },
        "u": update,
        "upsert": insert_unmatched,
    }))
}

/// The first entry of a write reply's `writeErrors`, as a command error that keeps the
/// entry's extra fields (a duplicate key's `keyPattern` and `keyValue`, as mongod's reply to
/// the aggregate has them).
fn first_write_error(reply: &Document) -> StoreResult<()> {
    let Ok(errors) = reply.get_array("writeErrors") else {
        return Ok(());
    };
    let Some(entry) = errors.first().and_then(Bson::as_document) else {
        return Ok(());
    };
    let mut error = CommandError::new(
        entry.get_i32("code").unwrap_or(code::BAD_VALUE),
        entry
            .get_str("errmsg")
            .unwrap_or("$out/$merge write failed")
            .to_owned(),
    );
    error.extra = entry
        .iter()
        .filter(|(key, _)| !matches!(key.as_str(), "index" | "code" | "codeName" | "errmsg"))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    Err(error)
}
