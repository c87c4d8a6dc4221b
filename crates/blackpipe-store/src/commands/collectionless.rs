//! `{aggregate: 1}`: a pipeline that reads no collection, its documents coming from its first
//! stage (`$documents` or `$listLocalSessions`).

use std::sync::Arc;

use bson::{Bson, Document};

use super::Exec;
use super::args::{cursor_batch_size, required_array};
use super::find::{CursorOptions, open_cursor};
use crate::aggregate::Pipeline;
use crate::catalog::validate_database_name;
use crate::code;
use crate::errors::{CommandError, StoreResult, type_name};

/// Runs `{aggregate: 1, pipeline, cursor}` (the caller has checked `cursor` and `explain`).
///
/// `$listLocalSessions` lists the store's session cache: every session a command named in its
/// `lsid` (this aggregate's own included), until it expires after the session timeout. blackpipe
/// has no users, so every session is the unauthenticated user's and `allUsers`/`users` select
/// them all.
///
/// # Errors
///
/// InvalidNamespace (73), as mongod, for an empty pipeline or a first stage that needs a
/// collection; a `$documents` value that is not an array of objects; the pipeline's errors.
pub(crate) fn aggregate(exec: &mut Exec<'_>, command: &Document) -> StoreResult<Document> {
    validate_database_name(exec.db)?;
    let stages = required_array(command, "aggregate", "pipeline")?;
    let batch_size = cursor_batch_size(command, "aggregate")?;
    let Some((first, rest)) = stages.split_first() else {
        return Err(CommandError::new(
            code::INVALID_NAMESPACE,
            "{aggregate: 1} is not valid for an empty pipeline.",
        ));
    };
    let input = source_documents(exec, first)?;
    let (rest, write_stage) = super::aggregate_write::split(exec, command, rest)?;
    let mut output = Pipeline::parse(rest)?
        .with_allow_disk_use(crate::aggregate::allow_disk_use(command))
        .run(input, false)?;
    if let Some(stage) = write_stage {
        super::aggregate_write::write_output(exec, &stage, std::mem::take(&mut output))?;
    }
    let ns = format!("{}.$cmd.aggregate", exec.db);
    let options = CursorOptions {
        batch_size,
        ..CursorOptions::default()
    };
    Ok(open_cursor(exec, &ns, output, options))
}

/// The documents a collectionless first stage produces.
fn source_documents(exec: &Exec<'_>, stage: &Bson) -> StoreResult<Vec<Arc<Document>>> {
    let name = match stage {
        Bson::Document(stage) if stage.len() == 1 => stage.iter().next(),
        _ => None,
    };
    match name {
        Some((name, Bson::Array(documents))) if name == "$documents" => documents
            .iter()
            .map(|document| match document {
                Bson::Document(document) => Ok(Arc::new(document.clone())),
                other => Err(not_an_array_of_objects(other)),
            })
            .collect(),
        Some((name, other)) if name == "$documents" => Err(not_an_array_of_objects(other)),
        Some((name, Bson::Document(options))) if name == "$listLocalSessions" => {
            check_list_sessions_options(options)?;
            Ok(local_sessions(exec))
        }
        Some((name, other)) if name == "$listLocalSessions" => {
            Err(CommandError::type_mismatch(format!(
                "$listLocalSessions options must be an object, not a {}",
                type_name(other)
            )))
        }
        // Any other stage needs a collection; a malformed one gets the pipeline parser's error.
        _ => Err(Pipeline::parse(std::slice::from_ref(stage))
            .err()
            .unwrap_or_else(|| needs_a_collection(name.map_or("", |(name, _)| name)))),
    }
}

/// `$listLocalSessions` takes `allUsers` (a bool) and `users` (an array of `{user, db}`).
fn check_list_sessions_options(options: &Document) -> StoreResult<()> {
    for (key, value) in options {
        let well_typed = match key.as_str() {
            "allUsers" => matches!(value, Bson::Boolean(_)),
            "users" => matches!(value, Bson::Array(_)),
            _ => {
                return Err(CommandError::new(
                    code::IDL_UNKNOWN_FIELD,
                    format!("BSON field '$listSessions.{key}' is an unknown field."),
                ));
            }
        };
        if !well_typed {
            return Err(CommandError::type_mismatch(format!(
                "BSON field '$listSessions.{key}' is the wrong type '{}'",
                type_name(value)
            )));
        }
    }
    Ok(())
}

/// One document per cached session: `{_id: {id, uid}, lastUse}`.
fn local_sessions(exec: &Exec<'_>) -> Vec<Arc<Document>> {
    exec.store
        .retryable_writes
        .cached_sessions()
        .into_iter()
        .map(|(key, last_use)| {
            Arc::new(bson::doc! {
                "_id": key.cache_id(),
                "lastUse": bson::DateTime::from_millis(last_use),
            })
        })
        .collect()
}

fn needs_a_collection(stage: &str) -> CommandError {
    CommandError::new(
        code::INVALID_NAMESPACE,
        format!("{{aggregate: 1}} is not valid for '{stage}'; a collection is required."),
    )
}

fn not_an_array_of_objects(value: &Bson) -> CommandError {
    CommandError::new(
        code::DOCUMENTS_NOT_AN_ARRAY,
        format!(
            "$documents must evaluate to an array of objects, found {}",
            type_name(value)
        ),
    )
}
