//! Running one test of a file on one topology: a fresh deployment, `initialData`, entities,
//! operations with their expectations, fail points turned off, `expectEvents`, `outcome`.

use std::time::Duration;

use bson::{Bson, Document};

use crate::entities::{Entity, EntityMap};
use crate::events;
use crate::expect_error;
use crate::fixture::Fixture;
use crate::matcher::{match_root, match_root_array};
use crate::model::{TestCase, TestFile};
use crate::ops::cursor::CursorEntity;
use crate::ops::{self, OpResult, Outcome};
use crate::requirements::Target;

/// How long the event check waits for expected events still in flight (sent by background
/// tasks after the operation returned).
const LATE_EVENT_LIMIT: Duration = Duration::from_secs(5);

/// Runs `test` of `file` on a fresh deployment of `target`. `Err` says what failed: the
/// operation index and name, and the field that differed.
pub(crate) async fn run_case(
    file: &TestFile,
    test: &TestCase,
    target: Target,
) -> Result<(), String> {
    let mut fixture = Fixture::start(target.topology, target.auth, target.oidc).await?;
    // As the format allows, clients of tests that set fail points check their servers more
    // often, so that a server marked Unknown by an injected state-change error is rediscovered
    // quickly (a streaming check in progress ignores requests for an immediate check).
    let uses_fail_points = test
        .operations
        .iter()
        .any(|op| matches!(op.get_str("name"), Ok("failPoint" | "targetedFailPoint")));
    fixture.set_fast_heartbeat(uses_fail_points);
    let mut entities = EntityMap::default();
    let result = run_in(&mut fixture, &mut entities, file, test).await;
    // Fail points are turned off even when the test failed, as the format requires.
    let cleanup = fixture.disable_fail_points().await;
    entities.close().await;
    crate::logs::reset();
    fixture.stop().await;
    result.and(cleanup.map_err(|e| format!("after the test: {e}")))
}

async fn run_in(
    fixture: &mut Fixture,
    entities: &mut EntityMap,
    file: &TestFile,
    test: &TestCase,
) -> Result<(), String> {
    fixture.load(&file.initial_data)?;
    entities.create(&file.entities, fixture).await?;
    for (index, operation) in test.operations.iter().enumerate() {
        let name = operation.get_str("name").unwrap_or("?");
        let object = operation.get_str("object").unwrap_or("?");
        let label = format!("operation {index} ({name} on {object})");
        let result = ops::run(operation, entities, fixture).await;
        check_operation(operation, result, entities).map_err(|e| format!("{label}: {e}"))?;
    }
    for expected in &test.expect_events {
        let client = expected
            .get_str("client")
            .map_err(|_| "expectEvents entry without a client".to_owned())?;
        let listener = &entities.client(client)?.listener;
        listener
            .wait_until(
                |seen| events::observed_enough(expected, seen),
                LATE_EVENT_LIMIT,
            )
            .await;
        let observed = listener.events();
        events::check(expected, &observed, entities)
            .map_err(|e| format!("expectEvents for {client}: {e}"))?;
    }
    crate::logs::check(
        &test.expect_log_messages,
        |client| Ok(entities.client(client)?.client.topology_id()),
        entities,
    )
    .await?;
    crate::spans::check(
        &test.expect_tracing_messages,
        |client| {
            entities
                .client(client)?
                .tracing
                .clone()
                .ok_or_else(|| format!("client {client:?} does not observe tracing messages"))
        },
        entities,
    )
    .await?;
    if let Some(outcome) = &test.outcome {
        fixture.check_outcome(outcome)?;
    }
    Ok(())
}

/// Judges an operation's result by its `expectError` / `expectResult` /
/// `ignoreResultAndError`, and saves it when `saveResultAsEntity` asks.
pub(crate) fn check_operation(
    operation: &Document,
    result: OpResult,
    entities: &mut EntityMap,
) -> Result<(), String> {
    let result = result?;
    if operation.get_bool("ignoreResultAndError").unwrap_or(false) {
        return Ok(());
    }
    if let Ok(expected) = operation.get_document("expectError") {
        return match result {
            Err(error) => {
                let partial = partial_result(operation, &error);
                expect_error::check(expected, &error, partial.as_ref(), entities)
            }
            Ok(outcome) => Err(format!(
                "expected an error, but the operation succeeded with {}",
                describe(&outcome)
            )),
        };
    }
    let outcome =
        result.map_err(|error| format!("unexpected error: {}", describe_error(&error)))?;
    if let Some(expected) = operation.get("expectResult") {
        match &outcome {
            Outcome::Nothing => match_root(expected, None, entities),
            Outcome::Value(value) => match_root(expected, Some(value), entities),
            Outcome::Documents(items) => match_root_array(expected, items, entities),
            // A cursor has no value to match: only an expectation of nothing passes.
            Outcome::Cursor(_)
            | Outcome::SessionCursor { .. }
            | Outcome::Collection(_)
            | Outcome::ChangeStream(_) => match_root(expected, None, entities),
        }
        .map_err(|m| format!("expectResult {m}; the result was {}", describe(&outcome)))?;
    }
    if let Ok(id) = operation.get_str("saveResultAsEntity") {
        match outcome {
            Outcome::Cursor(cursor) => {
                let cursor = CursorEntity::Plain(cursor);
                return entities.insert(id, Entity::Cursor(std::sync::Mutex::new(Some(cursor))));
            }
            Outcome::SessionCursor { cursor, session } => {
                let session = entities.session(&session)?.session.clone();
                let cursor = CursorEntity::InSession { cursor, session };
                return entities.insert(id, Entity::Cursor(std::sync::Mutex::new(Some(cursor))));
            }
            Outcome::Collection(coll) => return entities.insert(id, Entity::Collection(coll)),
            Outcome::ChangeStream(stream) => {
                let stream = std::sync::Mutex::new(Some(stream));
                return entities.insert(id, Entity::ChangeStream(stream));
            }
            _ => {}
        }
        let value = outcome
            .into_bson()
            .ok_or_else(|| format!("saveResultAsEntity {id:?}: the operation returned nothing"))?;
        entities.insert(id, Entity::Bson(value))?;
    }
    Ok(())
}

/// What a failed write reports it applied, shaped as the operation's result (the partial
/// result that `expectError.expectResult` matches), for the writes that carry one.
fn partial_result(operation: &Document, error: &steadfast::Error) -> Option<Bson> {
    if operation.get_str("name").ok()? == "clientBulkWrite" {
        return ops::client_bulk_write::partial_result(error);
    }
    let applied = &error.partial_write()?.applied;
    match operation.get_str("name").ok()? {
        // insertMany's partial result is matched as a bulk write result (the suite checks its
        // counts, as the CRUD specification's bulk write exception carries them).
        "bulkWrite" | "insertMany" => Some(ops::bulk_write_result(applied)),
        _ => None,
    }
}

fn describe(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Nothing => "nothing".to_owned(),
        Outcome::Value(value) => value.to_string(),
        Outcome::Documents(items) => Bson::Array(items.clone()).to_string(),
        Outcome::Cursor(_) | Outcome::SessionCursor { .. } => "a cursor".to_owned(),
        Outcome::Collection(_) => "a collection".to_owned(),
        Outcome::ChangeStream(_) => "a change stream".to_owned(),
    }
}

/// An error with what helps to diagnose it: labels, code, and every attempt.
pub(crate) fn describe_error(error: &steadfast::Error) -> String {
    let attempts: Vec<String> = error
        .retry_history()
        .iter()
        .map(|a| {
            let server = a
                .address
                .as_ref()
                .map_or_else(|| "no server".to_owned(), ToString::to_string);
            format!("{server}: {}", a.error)
        })
        .collect();
    format!(
        "{error} (labels {:?}, code {:?}, attempts [{}])",
        error.labels().iter().collect::<Vec<_>>(),
        error.code(),
        attempts.join("; ")
    )
}
