//! The database and collection operations that open a cursor, run in an explicit session:
//! `listCollections`, `listCollectionNames`, `listIndexes`, `listIndexNames` and
//! `runCursorCommand` (outside a session too, so its arguments are read in one place). Their
//! cursor is a `SessionCursor`, iterated with the session.

use std::time::Duration;

use bson::{Bson, Document};
use steadfast::{ClientSession, Collection, Database, SessionCursor};

use super::timed::Timed;
use super::{OpResult, Outcome, drain};
use crate::args::Args;
use crate::entities::Entity;

/// Whether operation `name` on a database or collection is one of this file's in a session.
pub(super) fn handles(name: &str) -> bool {
    matches!(
        name,
        "listCollections"
            | "listCollectionObjects"
            | "listCollectionNames"
            | "listIndexes"
            | "listIndexNames"
            | "runCursorCommand"
    )
}

/// Runs listing `name` on `entity` in `session`.
pub(super) async fn run(
    name: &str,
    mut args: Args,
    entity: &Entity,
    session: &mut ClientSession,
) -> OpResult {
    args.take("session");
    let timeout = args.optional_duration("timeoutMS")?;
    match entity {
        Entity::Database(db) if name == "runCursorCommand" => {
            let db = db.clone();
            run_cursor_command(name, args, &db, timeout, Some(session)).await
        }
        Entity::Database(db) => {
            let db = db.clone();
            list_collections(name, args, &db, timeout, session).await
        }
        Entity::Collection(coll) => {
            let coll = coll.clone();
            list_indexes(name, args, &coll, timeout, session).await
        }
        other => Err(format!(
            "{name} in a session on a {} is not supported by this runner",
            other.kind()
        )),
    }
}

async fn list_collections(
    name: &str,
    mut args: Args,
    db: &Database,
    timeout: Option<Duration>,
    session: &mut ClientSession,
) -> OpResult {
    let options = super::database::list_collections_options(&mut args)?;
    args.finish()?;
    let listing = db.list_collections().timed(timeout).with_options(options);
    let opened = listing.session(&mut *session).await;
    let documents = match opened {
        Ok(cursor) => drain_in_session(cursor.with_type(), session).await,
        Err(e) => Err(e),
    };
    Ok(documents.map(|documents| match name {
        "listCollectionNames" => Outcome::Value(Bson::Array(super::names(documents))),
        _ => Outcome::Documents(documents),
    }))
}

async fn list_indexes(
    name: &str,
    args: Args,
    coll: &Collection<Document>,
    timeout: Option<Duration>,
    session: &mut ClientSession,
) -> OpResult {
    let mut args = args;
    let mode = super::collection::timeout_mode(&mut args)?;
    args.finish()?;
    let mut listing = coll.list_indexes().timed(timeout);
    if let Some(mode) = mode {
        listing = listing.timeout_mode(mode);
    }
    let documents = match listing.session(&mut *session).await {
        Ok(cursor) => drain_in_session(cursor.with_type(), session).await,
        Err(e) => Err(e),
    };
    Ok(documents.map(|documents| match name {
        "listIndexNames" => Outcome::Value(Bson::Array(super::names(documents))),
        _ => Outcome::Documents(documents),
    }))
}

/// `runCursorCommand` (or `createCommandCursor`, which keeps the cursor as an entity), in
/// `session` when the test named one.
pub(super) async fn run_cursor_command(
    name: &str,
    mut args: Args,
    db: &Database,
    timeout: Option<Duration>,
    session: Option<&mut ClientSession>,
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
        Some(session) => match action.session(&mut *session).await {
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

async fn drain_in_session(
    mut cursor: SessionCursor<Document>,
    session: &mut ClientSession,
) -> Result<Vec<Bson>, steadfast::Error> {
    let mut documents = Vec::new();
    while let Some(document) = cursor.next(session).await {
        documents.push(Bson::Document(document?));
    }
    Ok(documents)
}
