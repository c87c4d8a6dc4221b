//! `{aggregate: 1}`: a pipeline that reads no collection, its documents coming from its first
//! stage (`$documents` or `$listLocalSessions`).

use std::sync::Arc;

use bson::{Bson, Document};

use super::Exec;
use super::args::{cursor_batch_size, required_array};
use super::find::{CursorOptions, open_cursor};
use super::foreign::ExecSource;
use crate::aggregate::{ParseContext, Pipeline, Reader};
use crate::catalog::validate_database_name;
use crate::code;
use crate::collation;
use crate::errors::{CommandError, StoreResult, type_name};
use crate::let_vars::LetVars;

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
    let (rest, write_stage) = super::aggregate_write::split(exec, command, rest)?;
    let vars = LetVars::read(command)?;
    let collation = collation::of(command)?;
    let (input, stages) = match list_local_sessions(exec, first)? {
        Some(sessions) => (sessions, vars.pipeline(rest)?.into_owned()),
        None => {
            let mut stages = vec![first.clone()];
            stages.extend_from_slice(rest);
            (Vec::new(), vars.pipeline(&stages)?.into_owned())
        }
    };
    let pipeline = Pipeline::parse_in(&stages, ParseContext::database(exec.db))?
        .with_collation(collation.as_ref())
        .with_allow_disk_use(crate::aggregate::allow_disk_use(command));
    if !is_list_local_sessions(first) && !pipeline.starts_with_documents() {
        return Err(needs_a_collection(stage_name(first)));
    }
    let mut source = ExecSource::new(exec);
    let mut reader = Reader::new(&mut source, collation);
    reader.check_involved(&pipeline)?;
    let mut output = pipeline.run_with(input, false, &mut reader)?;
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

fn stage_name(stage: &Bson) -> &str {
    match stage {
        Bson::Document(stage) if stage.len() == 1 => stage.keys().next().map_or("", String::as_str),
        _ => "",
    }
}

fn is_list_local_sessions(stage: &Bson) -> bool {
    stage_name(stage) == "$listLocalSessions"
}

/// The sessions a first stage `$listLocalSessions` lists; `None` for any other first stage
/// (`$documents` is parsed with the rest of the pipeline).
fn list_local_sessions(exec: &Exec<'_>, stage: &Bson) -> StoreResult<Option<Vec<Arc<Document>>>> {
    if !is_list_local_sessions(stage) {
        return Ok(None);
    }
    match stage
        .as_document()
        .and_then(|stage| stage.get("$listLocalSessions"))
    {
        Some(Bson::Document(options)) => {
            check_list_sessions_options(options)?;
            Ok(Some(local_sessions(exec)))
        }
        other => Err(CommandError::type_mismatch(format!(
            "$listLocalSessions options must be an object, not a {}",
            other.map_or("missing", type_name)
        ))),
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
