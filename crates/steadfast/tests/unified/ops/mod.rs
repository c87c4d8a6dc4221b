//! Running one operation of a test: dispatch on the object's entity type, and the
//! conversion of driver results into the documents `expectResult` describes.

mod background;
pub(crate) mod change_streams;
pub(crate) mod client_bulk_write;
pub(crate) mod collection;
mod collection_options;
mod crud_options;
pub(crate) mod cursor;
mod database;
pub(crate) mod gridfs;
pub(crate) mod indexes;
mod listings;
mod search_index;
mod session_cursors;
mod sessions;
mod test_runner;
mod threads;
mod timed;
mod transactions;
mod waits;

pub(crate) use database::read_preference;
pub(crate) use transactions::transaction_options_of;

use bson::{Bson, Document, doc};
use futures_util::TryStreamExt;
use steadfast::results::{BulkWriteResult, DeleteResult, InsertManyResult, UpdateResult};

use crate::args::Args;
use crate::entities::{Entity, EntityMap};
use crate::fixture::Fixture;

/// What an operation returned.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Nothing (void operations, test runner operations).
    Nothing,
    /// A single value, matched as a root-level value.
    Value(Bson),
    /// An iterated result: each document is matched as a root-level document.
    Documents(Vec<Bson>),
    /// A cursor not yet iterated (`createFindCursor`), saved as an entity.
    Cursor(steadfast::Cursor<Document>),
    /// A cursor not yet iterated, opened in the session entity `session`, saved as an entity
    /// that iterates in that session.
    SessionCursor {
        /// The cursor.
        cursor: Box<steadfast::SessionCursor<Document>>,
        /// The id of the session entity.
        session: String,
    },
    /// A collection (`createCollection`), saved as an entity.
    Collection(steadfast::Collection<Document>),
    /// A change stream not yet iterated (`createChangeStream`), saved as an entity.
    ChangeStream(change_streams::RawChangeStream),
}

impl Outcome {
    /// The value a `saveResultAsEntity` stores.
    pub(crate) fn into_bson(self) -> Option<Bson> {
        match self {
            Outcome::Nothing => None,
            Outcome::Value(value) => Some(value),
            Outcome::Documents(items) => Some(Bson::Array(items)),
            Outcome::Cursor(_)
            | Outcome::SessionCursor { .. }
            | Outcome::Collection(_)
            | Outcome::ChangeStream(_) => None,
        }
    }
}

/// The result of running an operation: `Err` is a runner-level problem (unknown entity,
/// unsupported argument...), which fails the test whatever it expected; the inner `Err` is
/// the driver's error, which `expectError` judges.
pub(crate) type OpResult = Result<Result<Outcome, steadfast::Error>, String>;

/// Runs `operation` (its `name`, `object` and `arguments`).
pub(crate) async fn run(
    operation: &Document,
    entities: &mut EntityMap,
    fixture: &mut Fixture,
) -> OpResult {
    let name = operation
        .get_str("name")
        .map_err(|_| "an operation without a name".to_owned())?;
    let object = operation
        .get_str("object")
        .map_err(|_| format!("{name}: no object"))?;
    if object == "testRunner" {
        let args = Args::new(name, operation.get_document("arguments").ok());
        return test_runner::run(name, args, entities, fixture).await;
    }
    if name == "withTransaction" {
        let args = Args::new(name, operation.get_document("arguments").ok());
        return transactions::with_transaction(object, args, entities).await;
    }
    if let Some(cursor) = entities.cursor_mut(object) {
        let args = Args::new(name, operation.get_document("arguments").ok());
        let result = cursor::run(name, args, cursor).await;
        background::settle_after(name, entities).await;
        return result;
    }
    if let Some(stream) = entities.change_stream_mut(object) {
        let args = Args::new(name, operation.get_document("arguments").ok());
        let result = change_streams::run(name, args, stream).await;
        background::settle_after(name, entities).await;
        return result;
    }
    let result = run_on_object(operation, entities).await;
    background::settle_after(name, entities).await;
    result
}

/// Runs `operation` on its object, an entity (not the test runner): what a thread runs.
pub(crate) async fn run_on_object(operation: &Document, entities: &EntityMap) -> OpResult {
    let name = operation
        .get_str("name")
        .map_err(|_| "an operation without a name".to_owned())?;
    let object = operation
        .get_str("object")
        .map_err(|_| format!("{name}: no object"))?;
    let args = Args::new(name, operation.get_document("arguments").ok());
    if name == "createChangeStream" {
        return change_streams::open(args, entities.get(object)?).await;
    }
    let session_id = operation
        .get_document("arguments")
        .ok()
        .and_then(|a| a.get_str("session").ok())
        .map(str::to_owned);
    let Some(session_id) = session_id else {
        return run_outside_session(name, object, args, entities).await;
    };
    let shared = entities.session(&session_id)?.session.clone();
    let mut guard = shared.lock().await;
    let session = guard
        .as_mut()
        .ok_or_else(|| format!("{name}: session {session_id:?} has ended"))?;
    run_in_session(name, object, args, entities, session).await
}

/// Runs operation `name` on `object` in `session` (already taken from its entity: the
/// callback of withTransaction holds it).
pub(crate) async fn run_in_session(
    name: &str,
    object: &str,
    args: Args,
    entities: &EntityMap,
    session: &mut steadfast::ClientSession,
) -> OpResult {
    match entities.get(object)? {
        Entity::Collection(collection) if sessions::returns_cursor(name) => {
            let collection = collection.clone();
            sessions::run_cursor_in_session(name, args, &collection, session).await
        }
        Entity::Collection(collection) => {
            let collection = collection.clone();
            collection::run(name, args, &collection, Some(session)).await
        }
        Entity::Database(database) => {
            let database = database.clone();
            database::run_on_database(name, args, &database, Some(session)).await
        }
        Entity::Client(client) => {
            let client = client.client.clone();
            database::run_on_client(name, args, &client, Some(session)).await
        }
        other => Err(format!(
            "{name} in a session on a {} is not supported by this runner",
            other.kind()
        )),
    }
}

async fn run_outside_session(
    name: &str,
    object: &str,
    args: Args,
    entities: &EntityMap,
) -> OpResult {
    match entities.get(object)? {
        Entity::Collection(collection) => {
            let collection = collection.clone();
            collection::run(name, args, &collection, None).await
        }
        Entity::Session(session) => sessions::run_on_session(name, args, session, entities).await,
        Entity::Database(database) => {
            let database = database.clone();
            database::run_on_database(name, args, &database, None).await
        }
        Entity::Client(client) => {
            let client = client.client.clone();
            database::run_on_client(name, args, &client, None).await
        }
        Entity::Bucket(bucket) => gridfs::run(name, args, &bucket.clone()).await,
        other @ (Entity::Cursor(_)
        | Entity::ChangeStream(_)
        | Entity::Bson(_)
        | Entity::Thread(_)
        | Entity::Topology(_)) => Err(format!(
            "{name}: {object:?} is a {}, not an object with these operations",
            other.kind()
        )),
    }
}

/// Drains a cursor into the documents the server returned (whatever type the API gives
/// its items: the tests match the raw documents).
pub(crate) async fn drain<T: serde::de::DeserializeOwned>(
    cursor: steadfast::Cursor<T>,
) -> Result<Vec<Bson>, steadfast::Error> {
    let documents: Vec<Document> = cursor.with_type::<Document>().try_collect().await?;
    Ok(documents.into_iter().map(Bson::Document).collect())
}

pub(crate) fn ids(map: &std::collections::HashMap<usize, Bson>) -> Document {
    let mut positions: Vec<&usize> = map.keys().collect();
    positions.sort();
    positions
        .into_iter()
        .filter_map(|p| map.get(p).map(|id| (p.to_string(), id.clone())))
        .collect()
}

fn count(n: u64) -> Bson {
    i64::try_from(n).map_or(Bson::Double(n as f64), Bson::Int64)
}

/// `BulkWriteResult` as the CRUD specification names its fields.
pub(crate) fn bulk_write_result(result: &BulkWriteResult) -> Bson {
    Bson::Document(doc! {
        "deletedCount": count(result.deleted_count),
        "insertedCount": count(result.inserted_count),
        "insertedIds": ids(&result.inserted_ids),
        "matchedCount": count(result.matched_count),
        "modifiedCount": count(result.modified_count),
        "upsertedCount": count(result.upserted_count),
        "upsertedIds": ids(&result.upserted_ids),
    })
}

/// `InsertManyResult`.
pub(crate) fn insert_many_result(result: &InsertManyResult) -> Bson {
    Bson::Document(doc! { "insertedIds": ids(&result.inserted_ids) })
}

/// `UpdateResult`.
pub(crate) fn update_result(result: &UpdateResult) -> Bson {
    let mut document = doc! {
        "matchedCount": count(result.matched_count),
        "modifiedCount": count(result.modified_count),
        "upsertedCount": i64::from(result.upserted_id.is_some()),
    };
    if let Some(id) = &result.upserted_id {
        document.insert("upsertedId", id.clone());
    }
    Bson::Document(document)
}

/// `DeleteResult`.
pub(crate) fn delete_result(result: &DeleteResult) -> Bson {
    Bson::Document(doc! { "deletedCount": count(result.deleted_count) })
}
