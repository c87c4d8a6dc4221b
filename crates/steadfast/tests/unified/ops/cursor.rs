//! Cursor entities (`createFindCursor`, `createCommandCursor`): iterating and closing them.
//! A cursor opened in an explicit session iterates in that session.

use std::sync::Arc;

use bson::{Bson, Document};
use steadfast::{ClientSession, Cursor, SessionCursor};

use super::{OpResult, Outcome};
use crate::args::Args;

/// A cursor entity.
pub(crate) enum CursorEntity {
    /// A cursor opened without an explicit session.
    Plain(Cursor<Document>),
    /// A cursor opened in the session entity `session`, whose `getMore`s use it.
    InSession {
        /// The cursor.
        cursor: Box<SessionCursor<Document>>,
        /// The session entity's session.
        session: Arc<tokio::sync::Mutex<Option<ClientSession>>>,
    },
}

/// Runs cursor operation `name`.
pub(super) async fn run(name: &str, args: Args, entity: &mut Option<CursorEntity>) -> OpResult {
    let mut args = args;
    if name == "close" {
        let timeout = args.optional_duration("timeoutMS")?;
        args.finish()?;
        match (entity.take(), timeout) {
            (Some(CursorEntity::Plain(cursor)), Some(timeout)) => {
                cursor.close_with_timeout(timeout);
            }
            (Some(CursorEntity::Plain(cursor)), None) => cursor.close(),
            (Some(CursorEntity::InSession { .. }), Some(_)) => {
                return Err(
                    "close: argument `timeoutMS`: a SessionCursor closes with its cursor's \
                     timeoutMS"
                        .to_owned(),
                );
            }
            // Killed in its session, on the connection its session's transaction is pinned
            // to in load-balanced mode.
            (Some(CursorEntity::InSession { cursor, session }), None) => {
                let mut guard = session.lock().await;
                if let Some(session) = guard.as_mut() {
                    return Ok(cursor.close(session).await.map(|()| Outcome::Nothing));
                }
                // The session has ended: dropping the cursor kills it in the background.
            }
            (None, _) => {}
        }
        return Ok(Ok(Outcome::Nothing));
    }
    args.finish()?;
    let cursor = entity
        .as_mut()
        .ok_or_else(|| format!("{name}: the cursor was closed"))?;
    match cursor {
        CursorEntity::Plain(cursor) => iterate(name, cursor).await,
        CursorEntity::InSession { cursor, session } => {
            let mut guard = session.lock().await;
            let session = guard
                .as_mut()
                .ok_or_else(|| format!("{name}: the cursor's session has ended"))?;
            iterate_in_session(name, cursor, session).await
        }
    }
}

async fn iterate(name: &str, cursor: &mut Cursor<Document>) -> OpResult {
    let result = match name {
        // One attempt to get a document; a tailable cursor may bring nothing.
        "iterateOnce" => cursor.try_advance().await.map(|_| Outcome::Nothing),
        // On a tailable cursor, advance asks until a document arrives.
        "iterateUntilDocumentOrError" => match cursor.advance().await {
            Ok(true) => current(name, cursor.deserialize_current())?,
            Ok(false) => return Err(format!("{name}: the cursor is exhausted")),
            Err(error) => Err(error),
        },
        other => return Err(unsupported(other)),
    };
    Ok(result)
}

async fn iterate_in_session(
    name: &str,
    cursor: &mut SessionCursor<Document>,
    session: &mut ClientSession,
) -> OpResult {
    let result = match name {
        "iterateOnce" => cursor.try_advance(session).await.map(|_| Outcome::Nothing),
        "iterateUntilDocumentOrError" => match cursor.advance(session).await {
            Ok(true) => current(name, cursor.deserialize_current())?,
            Ok(false) => return Err(format!("{name}: the cursor is exhausted")),
            Err(error) => Err(error),
        },
        other => return Err(unsupported(other)),
    };
    Ok(result)
}

/// The current document as the operation's result.
fn current(
    name: &str,
    document: Result<Document, steadfast::Error>,
) -> Result<Result<Outcome, steadfast::Error>, String> {
    let document = document.map_err(|e| format!("{name}: {e}"))?;
    Ok(Ok(Outcome::Value(Bson::Document(document))))
}

fn unsupported(name: &str) -> String {
    format!("cursor operation {name:?} is not supported by this runner")
}
