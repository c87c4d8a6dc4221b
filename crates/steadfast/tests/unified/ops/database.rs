//! Database and client operations.

use bson::{Bson, Document};
use steadfast::options::{
    DriverInfo, DropCollectionOptions, HedgedReadOptions, ReadPreference, ReadPreferenceMode,
};
use steadfast::{Client, Database};

use super::session_cursors::drain_in_session;
use super::timed::{InSession, Timed};
use super::{OpResult, Outcome, drain};
use crate::args::Args;

/// Runs database operation `name`.
pub(super) async fn run_on_database(
    name: &str,
    mut args: Args,
    db: &Database,
    mut session: Option<&mut steadfast::ClientSession>,
) -> OpResult {
    // The caller resolved the `session` argument (a session cursor entity keeps its id).
    let session_id = args.take("session");
    let timeout = args.optional_duration("timeoutMS")?;
    let result = match name {
        "runCommand" => {
            let command = args.document("command")?;
            let command_name = args.string("commandName")?;
            let read_preference = match args.take("readPreference") {
                Some(Bson::Document(preference)) => Some(read_preference(&preference)?),
                Some(other) => return Err(format!("runCommand: readPreference {other}")),
                None => None,
            };
            args.finish()?;
            if command.keys().next().map(String::as_str) != Some(command_name.as_str()) {
                return Err(format!(
                    "runCommand: commandName {command_name:?} is not the command's first key"
                ));
            }
            let mut action = db.run_command(command);
            if let Some(preference) = read_preference {
                action = action.selection_criteria(preference);
            }
            action
                .timed(timeout)
                .in_session(session.take())
                .await
                .map(|reply| Outcome::Value(Bson::Document(reply)))
        }
        "runCursorCommand" | "createCommandCursor" => {
            let session = session.map(|session| (session, session_id));
            return super::session_cursors::run_cursor_command(name, args, db, timeout, session)
                .await;
        }
        "dropCollection" => {
            let name = args.string("collection")?;
            let mut options = DropCollectionOptions::default();
            options.write_concern = args.optional_write_concern()?;
            options.comment = args.take("comment");
            args.finish()?;
            let coll = db.collection::<Document>(&name);
            coll.drop()
                .with_options(options)
                .timed(timeout)
                .in_session(session.take())
                .await
                .map(|()| Outcome::Nothing)
        }
        "createCollection" => {
            let name = args.string("collection")?;
            let options = super::collection_options::create_collection_options(&mut args)?;
            args.finish()?;
            db.create_collection(&name)
                .timed(timeout)
                .in_session(session.take())
                .with_options(options)
                .await
                .map(|()| Outcome::Collection(db.collection::<Document>(&name)))
        }
        "modifyCollection" => {
            return super::collection_options::modify_collection(args, db, timeout, session).await;
        }
        "aggregate" => {
            let pipeline = args.documents("pipeline")?;
            let options = super::crud_options::aggregate(&mut args)?;
            let mode = super::collection::timeout_mode(&mut args)?;
            args.finish()?;
            let mut action = db.aggregate(pipeline).timed(timeout).with_options(options);
            if let Some(mode) = mode {
                action = action.timeout_mode(mode);
            }
            let documents = match session.take() {
                Some(session) => match action.session(&mut *session).await {
                    Ok(cursor) => drain_in_session(cursor, session).await,
                    Err(e) => Err(e),
                },
                None => match action.await {
                    Ok(cursor) => drain(cursor).await,
                    Err(e) => Err(e),
                },
            };
            documents.map(Outcome::Documents)
        }
        "listCollections" | "listCollectionObjects" | "listCollectionNames" => {
            return super::listings::list_collections(name, args, db, timeout, session).await;
        }
        other => {
            return Err(format!(
                "database operation {other:?} is not supported by this runner"
            ));
        }
    };
    Ok(result)
}

/// Runs client operation `name`, in `session` when the test named one.
pub(super) async fn run_on_client(
    name: &str,
    mut args: Args,
    client: &Client,
    mut session: Option<&mut steadfast::ClientSession>,
) -> OpResult {
    // The caller resolved the `session` argument.
    args.take("session");
    let timeout = args.optional_duration("timeoutMS")?;
    let result = match name {
        "clientBulkWrite" => {
            return super::client_bulk_write::run(args, client, session, timeout).await;
        }
        "dropDatabase" => {
            let database = args.string("database")?;
            args.finish()?;
            client
                .database(&database)
                .drop()
                .timed(timeout)
                .in_session(session.take())
                .await
                .map(|()| Outcome::Nothing)
        }
        "listDatabases" | "listDatabaseObjects" | "listDatabaseNames" => {
            return super::listings::list_databases(name, args, client, timeout, session).await;
        }
        "appendMetadata" => {
            let info = driver_info(&args.document("driverInfoOptions")?)?;
            args.finish()?;
            client.append_metadata(info).map(|()| Outcome::Nothing)
        }
        "close" => {
            args.finish()?;
            // Clones share the client's state: this closes the entity's client itself.
            client.clone().shutdown().await;
            Ok(Outcome::Nothing)
        }
        other => {
            return Err(format!(
                "client operation {other:?} is not supported by this runner"
            ));
        }
    };
    Ok(result)
}

/// A read preference argument: its mode, `maxStalenessSeconds`, `tagSets` and `hedge`.
pub(crate) fn read_preference(document: &Document) -> Result<ReadPreference, String> {
    let mode = document
        .get_str("mode")
        .map_err(|_| "readPreference without a mode".to_owned())?;
    let known = ["mode", "maxStalenessSeconds", "tagSets", "hedge"];
    if let Some(other) = document.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(format!(
            "readPreference {document}: `{other}` is not supported"
        ));
    }
    let preference = ReadPreferenceMode::parse(mode)
        .map(ReadPreference::with_mode)
        .ok_or_else(|| format!("readPreference mode {mode:?}"))?;
    let max_staleness = match document.get("maxStalenessSeconds") {
        None => None,
        Some(value) => {
            let seconds = crate::expect_error::integer(value)
                .and_then(|s| u64::try_from(s).ok())
                .ok_or_else(|| format!("maxStalenessSeconds: bad value {value}"))?;
            Some(std::time::Duration::from_secs(seconds))
        }
    };
    let tag_sets = match document.get("tagSets") {
        None => None,
        Some(Bson::Array(sets)) => Some(sets.iter().map(tag_set).collect::<Result<_, _>>()?),
        Some(other) => return Err(format!("tagSets: bad value {other}")),
    };
    let hedge = match document.get("hedge") {
        None => None,
        Some(Bson::Document(hedge)) => Some(hedged(hedge)?),
        Some(other) => return Err(format!("hedge: bad value {other}")),
    };
    if max_staleness.is_none() && tag_sets.is_none() && hedge.is_none() {
        return Ok(preference);
    }
    let options = steadfast::options::ReadPreferenceOptions::builder()
        .max_staleness(max_staleness)
        .tag_sets(tag_sets)
        .hedge(hedge)
        .build();
    Ok(preference.with_options(options))
}

/// A read preference's `hedge`: `{enabled: <bool>}`.
fn hedged(hedge: &Document) -> Result<HedgedReadOptions, String> {
    let mut args = crate::args::Args::new("readPreference.hedge", Some(hedge));
    let enabled = args
        .optional_bool("enabled")?
        .ok_or("readPreference.hedge without `enabled`")?;
    args.finish()?;
    Ok(HedgedReadOptions::new(enabled))
}

/// `appendMetadata`'s `driverInfoOptions`: `name`, and optionally `version` and `platform`.
fn driver_info(options: &Document) -> Result<DriverInfo, String> {
    let mut args = Args::new("appendMetadata.driverInfoOptions", Some(options));
    let info = DriverInfo::builder()
        .name(args.string("name")?)
        .version(args.optional_string("version")?)
        .platform(args.optional_string("platform")?)
        .build();
    args.finish()?;
    Ok(info)
}

/// One tag set of a read preference: a document of string values.
fn tag_set(set: &Bson) -> Result<steadfast::options::TagSet, String> {
    let Bson::Document(set) = set else {
        return Err(format!("tag set {set}: not a document"));
    };
    set.iter()
        .map(|(name, value)| match value {
            Bson::String(value) => Ok((name.clone(), value.clone())),
            other => Err(format!("tag {name}: {other} is not a string")),
        })
        .collect()
}
