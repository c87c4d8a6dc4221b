//! The database and client listings: `listCollections`, `listCollectionObjects`,
//! `listCollectionNames`, `listDatabases`, `listDatabaseObjects` and `listDatabaseNames`, in a
//! session or not.

use std::time::Duration;

use bson::{Bson, Document, doc};
use steadfast::options::{ListCollectionsOptions, ListDatabasesOptions};
use steadfast::{Client, ClientSession, Database};

use super::session_cursors::drain_in_session;
use super::timed::{InSession, Timed};
use super::{OpResult, Outcome, drain};
use crate::args::Args;

/// Runs collection listing `name` on `db`, in `session` when the test named one.
/// `listCollectionNames` runs the driver's `list_collection_names` (which sends `nameOnly`).
pub(super) async fn list_collections(
    name: &str,
    mut args: Args,
    db: &Database,
    timeout: Option<Duration>,
    session: Option<&mut ClientSession>,
) -> OpResult {
    let options = list_collections_options(&mut args)?;
    let mode = super::collection::timeout_mode(&mut args)?;
    if name == "listCollectionNames" {
        args.finish()?;
        let mut action = db
            .list_collection_names()
            .timed(timeout)
            .with_options(options);
        if let Some(mode) = mode {
            action = action.timeout_mode(mode);
        }
        let names = match session {
            Some(session) => action.session(session).await,
            None => action.await,
        };
        return Ok(names.map(strings));
    }
    // The driver's listing of documents never sends nameOnly: `false` is what it does.
    if args.optional_bool("nameOnly")? == Some(true) {
        return Err(format!(
            "{name}: argument `nameOnly: true`: steadfast's list_collections does not send \
             nameOnly (list_collection_names does, and yields names only)"
        ));
    }
    args.finish()?;
    let mut action = db.list_collections().timed(timeout).with_options(options);
    if let Some(mode) = mode {
        action = action.timeout_mode(mode);
    }
    let documents = match session {
        Some(session) => match action.session(&mut *session).await {
            Ok(cursor) => drain_in_session(cursor.with_type(), session).await,
            Err(e) => Err(e),
        },
        None => match action.await {
            Ok(cursor) => drain(cursor).await,
            Err(e) => Err(e),
        },
    };
    Ok(documents.map(Outcome::Documents))
}

fn list_collections_options(args: &mut Args) -> Result<ListCollectionsOptions, String> {
    let mut options = ListCollectionsOptions::default();
    options.filter = args.optional_document("filter")?;
    options.batch_size = args.optional_count("batchSize")?;
    options.authorized_collections = args.optional_bool("authorizedCollections")?;
    options.comment = args.take("comment");
    Ok(options)
}

/// Runs database listing `name` on `client`, in `session` when the test named one.
/// `listDatabaseNames`, and the others with `nameOnly: true`, run the driver's
/// `list_database_names` (which sends `nameOnly: true`); the others yield `{name}` documents.
pub(super) async fn list_databases(
    name: &str,
    mut args: Args,
    client: &Client,
    timeout: Option<Duration>,
    session: Option<&mut ClientSession>,
) -> OpResult {
    let mut options = ListDatabasesOptions::default();
    options.filter = args.optional_document("filter")?;
    options.authorized_databases = args.optional_bool("authorizedDatabases")?;
    options.comment = args.take("comment");
    let names_only = name == "listDatabaseNames";
    let name_only = if names_only {
        true
    } else {
        args.optional_bool("nameOnly")?.unwrap_or(false)
    };
    args.finish()?;
    if name_only {
        let listed = client
            .list_database_names()
            .timed(timeout)
            .in_session(session)
            .with_options(options)
            .await;
        return Ok(listed.map(|names| {
            if names_only {
                return strings(names);
            }
            let documents = names.into_iter().map(|name| doc! { "name": name });
            Outcome::Documents(documents.map(Bson::Document).collect())
        }));
    }
    let listed = client
        .list_databases()
        .timed(timeout)
        .in_session(session)
        .with_options(options)
        .await;
    Ok(listed.map(|specs| Outcome::Documents(specs.iter().map(database_document).collect())))
}

fn strings(names: Vec<String>) -> Outcome {
    Outcome::Value(Bson::Array(names.into_iter().map(Bson::String).collect()))
}

fn database_document(spec: &steadfast::results::DatabaseSpecification) -> Bson {
    let mut document = Document::new();
    document.insert("name", spec.name.clone());
    document.insert(
        "sizeOnDisk",
        i64::try_from(spec.size_on_disk).unwrap_or(i64::MAX),
    );
    document.insert("empty", spec.empty);
    if let Some(shards) = &spec.shards {
        document.insert("shards", shards.clone());
    }
    Bson::Document(document)
}
