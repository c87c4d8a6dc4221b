//! The transaction operations of a session entity (`startTransaction`, `commitTransaction`,
//! `abortTransaction`, `withTransaction` with its callback of nested operations) and the
//! transaction assertions of the test runner.

use bson::Document;
use steadfast::options::{ReadConcern, ReadConcernLevel, TransactionOptions};
use steadfast::{ClientSession, TransactionState};

use super::{OpResult, Outcome};
use crate::args::{Args, write_concern};
use crate::entities::{EntityMap, SessionEntity};
use crate::fixture::Fixture;
use crate::runner::check_operation;

/// A runner failure inside a withTransaction callback, carried out of the driver's loop.
struct CallbackFailure(String);

/// Whether `name` is a transaction operation of a session entity.
pub(super) fn is_transaction_operation(name: &str) -> bool {
    matches!(
        name,
        "startTransaction" | "commitTransaction" | "abortTransaction"
    )
}

/// Runs `startTransaction`, `commitTransaction` or `abortTransaction` on `entity`.
pub(super) async fn run_on_session(
    name: &str,
    args: Args,
    entity: &SessionEntity,
    _entities: &EntityMap,
) -> OpResult {
    let mut guard = entity.session.lock().await;
    let session = guard
        .as_mut()
        .ok_or_else(|| format!("{name}: the session has ended"))?;
    run_with(name, args, session).await
}

/// Runs a transaction operation on `session` itself.
async fn run_with(name: &str, mut args: Args, session: &mut ClientSession) -> OpResult {
    let result = match name {
        "startTransaction" => {
            let options = transaction_options(&mut args)?;
            args.finish()?;
            session.start_transaction().with_options(options).await
        }
        "commitTransaction" => {
            let timeout = args.optional_duration("timeoutMS")?;
            args.finish()?;
            let mut action = session.commit_transaction();
            if let Some(timeout) = timeout {
                action = action.timeout(timeout);
            }
            action.await
        }
        "abortTransaction" => {
            let timeout = args.optional_duration("timeoutMS")?;
            args.finish()?;
            let mut action = session.abort_transaction();
            if let Some(timeout) = timeout {
                action = action.timeout(timeout);
            }
            action.await
        }
        other => return Err(format!("{other} is not a transaction operation")),
    };
    Ok(result.map(|()| Outcome::Nothing))
}

/// The TransactionOptions fields of an operation's arguments.
fn transaction_options(args: &mut Args) -> Result<Option<TransactionOptions>, String> {
    let mut options = TransactionOptions::default();
    let mut any = false;
    if let Some(concern) = args.optional_document("readConcern")? {
        let level = concern
            .get_str("level")
            .map_err(|_| "readConcern needs a level".to_owned())?;
        options.read_concern = Some(ReadConcern::new(ReadConcernLevel::parse(level)));
        any = true;
    }
    if let Some(concern) = args.optional_document("writeConcern")? {
        options.write_concern = Some(write_concern(&concern)?);
        any = true;
    }
    if let Some(preference) = args.optional_document("readPreference")? {
        options.selection_criteria = Some(super::database::read_preference(&preference)?.into());
        any = true;
    }
    if let Some(limit) = args.optional_duration("maxCommitTimeMS")? {
        options.max_commit_time = Some(limit);
        any = true;
    }
    Ok(any.then_some(options))
}

/// The TransactionOptions of a session's `defaultTransactionOptions`.
pub(crate) fn transaction_options_of(given: &Document) -> Result<TransactionOptions, String> {
    let mut args = Args::new("defaultTransactionOptions", Some(given));
    let options = transaction_options(&mut args)?;
    args.finish()?;
    Ok(options.unwrap_or_default())
}

/// `withTransaction`: runs the callback's operations (each judged by its own expectations) in
/// the convenient API's loop; a driver error of an operation ends the callback with it.
pub(super) async fn with_transaction(
    session_id: &str,
    mut args: Args,
    entities: &mut EntityMap,
) -> OpResult {
    let callback = args.documents("callback")?;
    let options = transaction_options(&mut args)?;
    let timeout = args.optional_duration("timeoutMS")?;
    args.finish()?;
    let shared = entities.session(session_id)?.session.clone();
    // The session leaves its entity for the loop: the callback's operations get it directly.
    let mut session = shared
        .lock()
        .await
        .take()
        .ok_or_else(|| format!("withTransaction: session {session_id:?} has ended"))?;
    let mut start = session.start_transaction().with_options(options);
    if let Some(timeout) = timeout {
        start = start.timeout(timeout);
    }
    let outcome = start
        .and_run2(async |session| {
            for operation in &callback {
                run_callback_operation(operation, session_id, session, entities).await?;
            }
            Ok(())
        })
        .await;
    *shared.lock().await = Some(session);
    match outcome {
        Err(error) => match error.get_custom::<CallbackFailure>() {
            Some(CallbackFailure(failure)) => Err(format!("in the callback: {failure}")),
            None => Ok(Err(error)),
        },
        Ok(()) => Ok(Ok(Outcome::Nothing)),
    }
}

/// Runs and judges one operation of a withTransaction callback.
async fn run_callback_operation(
    operation: &Document,
    session_id: &str,
    session: &mut ClientSession,
    entities: &mut EntityMap,
) -> steadfast::error::Result<()> {
    let runner_failure = |m: String| steadfast::Error::custom(CallbackFailure(m));
    let name = operation
        .get_str("name")
        .map_err(|_| runner_failure("an operation without a name".to_owned()))?;
    let object = operation
        .get_str("object")
        .map_err(|_| runner_failure(format!("{name}: no object")))?;
    let args = Args::new(name, operation.get_document("arguments").ok());
    let in_session = operation
        .get_document("arguments")
        .is_ok_and(|a| a.get_str("session").ok() == Some(session_id));
    let result = if object == session_id {
        run_with(name, args, session).await
    } else if in_session {
        super::run_in_session(name, object, args, entities, session).await
    } else {
        super::run_on_object(operation, entities).await
    };
    let driver_error = match &result {
        Ok(Err(error)) => Some(error.clone()),
        _ => None,
    };
    check_operation(operation, result, entities)
        .map_err(|m| runner_failure(format!("{name} on {object}: {m}")))?;
    driver_error.map_or(Ok(()), Err)
}

/// `assertSessionTransactionState`.
pub(super) async fn assert_state(mut args: Args, entities: &EntityMap) -> OpResult {
    let id = args.string("session")?;
    let expected = args.string("state")?;
    args.finish()?;
    let shared = entities.session(&id)?.session.clone();
    let guard = shared.lock().await;
    let session = guard
        .as_ref()
        .ok_or_else(|| format!("session {id:?} has ended"))?;
    let actual = match session.transaction_state() {
        TransactionState::None => "none",
        TransactionState::Starting => "starting",
        TransactionState::InProgress => "in_progress",
        TransactionState::Committed { .. } => "committed",
        TransactionState::Aborted => "aborted",
    };
    if actual != expected {
        return Err(format!(
            "session {id:?} is in state {actual:?}, not {expected:?}"
        ));
    }
    Ok(Ok(Outcome::Nothing))
}

/// `assertSessionPinned` (`pinned`) or `assertSessionUnpinned`.
pub(super) async fn assert_pinned(mut args: Args, entities: &EntityMap, pinned: bool) -> OpResult {
    let id = args.string("session")?;
    args.finish()?;
    let shared = entities.session(&id)?.session.clone();
    let guard = shared.lock().await;
    let session = guard
        .as_ref()
        .ok_or_else(|| format!("session {id:?} has ended"))?;
    if session.is_pinned() != pinned {
        return Err(format!(
            "session {id:?} is {}pinned ({:?})",
            if pinned { "not " } else { "" },
            session.pinned_mongos()
        ));
    }
    Ok(Ok(Outcome::Nothing))
}

/// `targetedFailPoint`: the fail point on the mongos the session is pinned to.
pub(super) async fn targeted_fail_point(
    mut args: Args,
    entities: &EntityMap,
    fixture: &mut Fixture,
) -> OpResult {
    let id = args.string("session")?;
    let command = args.document("failPoint")?;
    args.finish()?;
    let shared = entities.session(&id)?.session.clone();
    let host = {
        let guard = shared.lock().await;
        let session = guard
            .as_ref()
            .ok_or_else(|| format!("session {id:?} has ended"))?;
        session
            .pinned_mongos()
            .ok_or_else(|| format!("targetedFailPoint: session {id:?} is not pinned"))?
            .to_string()
    };
    fixture.set_targeted_fail_point(&host, command).await?;
    Ok(Ok(Outcome::Nothing))
}

/// `assertCollectionExists` (`exists`) or `assertCollectionNotExists`.
pub(super) fn assert_collection(mut args: Args, fixture: &Fixture, exists: bool) -> OpResult {
    let db = args.string("databaseName")?;
    let collection = args.string("collectionName")?;
    args.finish()?;
    let found = fixture.collection_names(&db)?.contains(&collection);
    if found != exists {
        return Err(format!(
            "collection {db}.{collection} {}",
            if exists { "does not exist" } else { "exists" }
        ));
    }
    Ok(Ok(Outcome::Nothing))
}

/// `assertIndexExists` (`exists`) or `assertIndexNotExists`.
pub(super) fn assert_index(mut args: Args, fixture: &Fixture, exists: bool) -> OpResult {
    let db = args.string("databaseName")?;
    let collection = args.string("collectionName")?;
    let index = args.string("indexName")?;
    args.finish()?;
    // A missing collection has no indexes.
    let names = fixture.index_names(&db, &collection).unwrap_or_default();
    if names.contains(&index) != exists {
        return Err(format!(
            "index {index} on {db}.{collection} {}",
            if exists { "does not exist" } else { "exists" }
        ));
    }
    Ok(Ok(Outcome::Nothing))
}
