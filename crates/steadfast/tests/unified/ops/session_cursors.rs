//! `runCursorCommand` and `createCommandCursor`, in an explicit session or not (their
//! arguments are read in one place); in a session the cursor is a `SessionCursor`, iterated
//! with the session, and `createCommandCursor` saves it as a cursor entity that iterates in
//! that session.

use std::time::Duration;

use bson::{Bson, Document};
use steadfast::{ClientSession, Database, SessionCursor};

use super::timed::Timed;
use super::{OpResult, Outcome, drain};
use crate::args::Args;

/// `runCursorCommand` (or `createCommandCursor`, which keeps the cursor as an entity), in
/// `session` when the test named one (`session_id` is its entity's id).
pub(super) async fn run_cursor_command(
    name: &str,
    mut args: Args,
    db: &Database,
    timeout: Option<Duration>,
    session: Option<(&mut ClientSession, Option<Bson>)>,
) -> OpResult {
    let command = args.document("command")?;
    if let Some(Bson::String(command_name)) = args.take("commandName") {
        if command.keys().next() != Some(&command_name) {
            return Err(format!(
                "{name}: commandName {command_name:?} is not the command's first key"
            ));
        }
    }
    let batch_size = args.optional_count::<u32>("batchSize")?;
    let cursor_type = super::collection::cursor_type(&mut args)?;
    let mode = super::collection::timeout_mode(&mut args)?;
    let max_time = args.optional_duration("maxTimeMS")?;
    let comment = args.take("comment");
    let read_preference = match args.take("readPreference") {
        Some(Bson::Document(preference)) => Some(super::database::read_preference(&preference)?),
        Some(other) => return Err(format!("{name}: readPreference {other}")),
        None => None,
    };
    args.finish()?;
    let mut action = db.run_cursor_command(command).timed(timeout);
    if let Some(batch_size) = batch_size {
        action = action.batch_size(batch_size);
    }
    if let Some(max_time) = max_time {
        action = action.max_time(max_time);
    }
    if let Some(comment) = comment {
        action = action.comment(comment);
    }
    if let Some(preference) = read_preference {
        action = action.selection_criteria(preference);
    }
    if let Some(cursor_type) = cursor_type {
        action = action.cursor_type(cursor_type);
    }
    if let Some(mode) = mode {
        action = action.timeout_mode(mode);
    }
    let result = match session {
        Some((session, Some(Bson::String(id)))) if name == "createCommandCursor" => action
            .session(session)
            .await
            .map(|cursor| Outcome::SessionCursor {
                cursor: Box::new(cursor),
                session: id,
            }),
        Some((_, id)) if name == "createCommandCursor" => {
            return Err(format!("{name}: session {id:?}"));
        }
        Some((session, _)) => match action.session(&mut *session).await {
            Ok(cursor) => drain_in_session(cursor, session)
                .await
                .map(Outcome::Documents),
            Err(e) => Err(e),
        },
        None => match action.await {
            Ok(cursor) if name == "createCommandCursor" => Ok(Outcome::Cursor(cursor)),
            Ok(cursor) => drain(cursor).await.map(Outcome::Documents),
            Err(e) => Err(e),
        },
    };
    Ok(result)
}

/// Every document left in a session cursor, iterated in `session`.
pub(super) async fn drain_in_session(
    mut cursor: SessionCursor<Document>,
    session: &mut ClientSession,
) -> Result<Vec<Bson>, steadfast::Error> {
    let mut documents = Vec::new();
    while let Some(document) = cursor.next(session).await {
        documents.push(Bson::Document(document?));
    }
    Ok(documents)
}
