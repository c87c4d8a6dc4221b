//! Operations in an explicit session (`session` argument), `endSession`, and the session
//! assertions of the test runner.

use bson::{Bson, Document};
use steadfast::{ClientSession, Collection};

use super::collection::{find_options, timeout_mode};
use super::crud_options::aggregate;
use super::timed::Timed;
use super::{OpResult, Outcome};
use crate::args::Args;
use crate::entities::{EntityMap, SessionEntity};
use crate::events::{CommandStage, Observed};

/// Whether collection operation `name` returns a cursor, which in a session is a
/// `SessionCursor` iterated with the session.
pub(super) fn returns_cursor(name: &str) -> bool {
    matches!(name, "find" | "aggregate")
}

/// Runs `find` or `aggregate` in `session`, draining the session cursor.
pub(super) async fn run_cursor_in_session(
    name: &str,
    mut args: Args,
    coll: &Collection<Document>,
    session: &mut ClientSession,
) -> OpResult {
    args.take("session");
    let timeout = args.optional_duration("timeoutMS")?;
    let result = match name {
        "find" => {
            let filter = args.optional_document("filter")?.unwrap_or_default();
            let options = find_options(&mut args)?;
            let mode = timeout_mode(&mut args)?;
            args.finish()?;
            let mut action = coll.find(filter).timed(timeout).with_options(options);
            if let Some(mode) = mode {
                action = action.timeout_mode(mode);
            }
            let found = action.session(&mut *session).await;
            match found {
                Ok(cursor) => drain(cursor, session).await.map(Outcome::Documents),
                Err(e) => Err(e),
            }
        }
        "aggregate" => {
            let pipeline = args.documents("pipeline")?;
            let options = aggregate(&mut args)?;
            let mode = timeout_mode(&mut args)?;
            args.finish()?;
            let mut action = coll
                .aggregate(pipeline)
                .timed(timeout)
                .with_options(options);
            if let Some(mode) = mode {
                action = action.timeout_mode(mode);
            }
            let found = action.session(&mut *session).await;
            match found {
                Ok(cursor) => drain(cursor, session).await.map(Outcome::Documents),
                Err(e) => Err(e),
            }
        }
        other => return Err(format!("{other} does not return a cursor")),
    };
    Ok(result)
}

async fn drain(
    mut cursor: steadfast::SessionCursor<Document>,
    session: &mut ClientSession,
) -> Result<Vec<Bson>, steadfast::Error> {
    let mut documents = Vec::new();
    while let Some(document) = cursor.next(session).await {
        documents.push(Bson::Document(document?));
    }
    Ok(documents)
}

/// Runs session operation `name` (`endSession`, and the transaction operations).
pub(super) async fn run_on_session(
    name: &str,
    args: Args,
    entity: &SessionEntity,
    entities: &EntityMap,
) -> OpResult {
    if super::transactions::is_transaction_operation(name) {
        return super::transactions::run_on_session(name, args, entity, entities).await;
    }
    match name {
        "getSnapshotTime" => {
            args.finish()?;
            let guard = entity.session.lock().await;
            let session = guard
                .as_ref()
                .ok_or("getSnapshotTime: the session has ended")?;
            let time = session
                .snapshot_time()
                .ok_or("getSnapshotTime: the session has no snapshot time yet")?;
            Ok(Ok(Outcome::Value(Bson::Timestamp(time))))
        }
        "endSession" => {
            args.finish()?;
            // Dropping the session ends it: its server session returns to the pool, or is
            // discarded if dirty.
            drop(entity.session.lock().await.take());
            Ok(Ok(Outcome::Nothing))
        }
        other => Err(format!(
            "session operation {other:?} is not supported by this runner"
        )),
    }
}

/// `assertSessionDirty` (`dirty`) or `assertSessionNotDirty`.
pub(super) async fn assert_dirty(mut args: Args, entities: &EntityMap, dirty: bool) -> OpResult {
    let id = args.string("session")?;
    args.finish()?;
    let shared = entities.session(&id)?.session.clone();
    let guard = shared.lock().await;
    let session = guard
        .as_ref()
        .ok_or_else(|| format!("session {id:?} has ended"))?;
    if session.is_dirty() != dirty {
        return Err(format!(
            "session {id:?} is {}dirty",
            if dirty { "not " } else { "" }
        ));
    }
    Ok(Ok(Outcome::Nothing))
}

/// `assertSameLsidOnLastTwoCommands` (`same`) or `assertDifferentLsidOnLastTwoCommands`.
pub(super) fn assert_lsids(mut args: Args, entities: &EntityMap, same: bool) -> OpResult {
    let client = args.string("client")?;
    args.finish()?;
    let events = entities.client(&client)?.listener.events();
    let lsids: Vec<Option<&Bson>> = events
        .iter()
        .filter_map(|event| match event {
            Observed::Command(c) if c.stage == CommandStage::Started => {
                Some(c.document.get("lsid"))
            }
            _ => None,
        })
        .collect();
    let [.., before, last] = lsids.as_slice() else {
        return Err(format!(
            "client {client:?} observed fewer than two commandStartedEvents"
        ));
    };
    let (Some(before), Some(last)) = (before, last) else {
        return Err("one of the last two commands carried no lsid".to_owned());
    };
    if (before == last) != same {
        return Err(format!(
            "the last two commands' lsids are {}: {before} and {last}",
            if same { "different" } else { "the same" }
        ));
    }
    Ok(Ok(Outcome::Nothing))
}
