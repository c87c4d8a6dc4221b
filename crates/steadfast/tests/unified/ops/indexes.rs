//! The index management operations of a collection: `createIndex`, `createIndexes`,
//! `dropIndex`, `dropIndexes`, `listIndexes` and `listIndexNames`, in a session or not.

use std::time::Duration;

use bson::{Bson, Document};
use steadfast::options::{
    CommitQuorum, CreateIndexOptions, DropIndexOptions, IndexModel, IndexOptions, IndexVersion,
    ListIndexesOptions, Sphere2DIndexVersion, TextIndexVersion,
};
use steadfast::{ClientSession, Collection};

use super::session_cursors::drain_in_session;
use super::timed::{InSession, Timed};
use super::{OpResult, Outcome, drain};
use crate::args::Args;

/// Whether collection operation `name` is one of this file's.
pub(super) fn handles(name: &str) -> bool {
    matches!(
        name,
        "createIndex"
            | "createIndexes"
            | "dropIndex"
            | "dropIndexes"
            | "listIndexes"
            | "listIndexNames"
    )
}

/// Runs index operation `name` on `coll`, in `session` when the test named one.
pub(super) async fn run(
    name: &str,
    mut args: Args,
    coll: &Collection<Document>,
    timeout: Option<Duration>,
    session: Option<&mut ClientSession>,
) -> OpResult {
    match name {
        "createIndex" => {
            let keys = args.document("keys")?;
            let index = index_options(&mut args)?;
            let options = create_index_options(&mut args)?;
            args.finish()?;
            let model = IndexModel::builder().keys(keys).options(index).build();
            let action = coll
                .create_index(model)
                .with_options(options)
                .timed(timeout)
                .in_session(session);
            Ok(action
                .await
                .map(|r| Outcome::Value(Bson::String(r.index_name))))
        }
        "createIndexes" => {
            let models = args
                .documents("models")?
                .iter()
                .map(index_model)
                .collect::<Result<Vec<_>, _>>()?;
            let options = create_index_options(&mut args)?;
            args.finish()?;
            let action = coll
                .create_indexes(models)
                .with_options(options)
                .timed(timeout)
                .in_session(session);
            Ok(action.await.map(|r| {
                let names = r.index_names.into_iter().map(Bson::String).collect();
                Outcome::Value(Bson::Array(names))
            }))
        }
        "dropIndex" | "dropIndexes" => {
            let index = (name == "dropIndex")
                .then(|| args.string("name"))
                .transpose()?;
            let options = drop_index_options(&mut args)?;
            args.finish()?;
            let action = match index {
                Some(index) => coll.drop_index(index),
                None => coll.drop_indexes(),
            };
            let action = action
                .with_options(options)
                .timed(timeout)
                .in_session(session);
            Ok(action.await.map(|()| Outcome::Nothing))
        }
        _ => list(name, args, coll, timeout, session).await,
    }
}

/// `listIndexes` (the index documents) or `listIndexNames` (their names).
async fn list(
    name: &str,
    mut args: Args,
    coll: &Collection<Document>,
    timeout: Option<Duration>,
    session: Option<&mut ClientSession>,
) -> OpResult {
    let mode = super::collection::timeout_mode(&mut args)?;
    let mut options = ListIndexesOptions::default();
    options.batch_size = args.optional_count("batchSize")?;
    options.comment = args.take("comment");
    args.finish()?;
    if name == "listIndexNames" {
        let mut action = coll.list_index_names().timed(timeout).with_options(options);
        if let Some(mode) = mode {
            action = action.timeout_mode(mode);
        }
        let names = match session {
            Some(session) => action.session(session).await,
            None => action.await,
        };
        return Ok(names.map(|names| {
            Outcome::Value(Bson::Array(names.into_iter().map(Bson::String).collect()))
        }));
    }
    let mut action = coll.list_indexes().timed(timeout).with_options(options);
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

/// One of `createIndexes`' `models`: `{keys, options?}`.
fn index_model(model: &Document) -> Result<IndexModel, String> {
    let mut args = Args::new("createIndexes model", Some(model));
    let keys = args.document("keys")?;
    let options = match args.optional_document("options")? {
        Some(options) => {
            let mut args = Args::new("createIndexes model options", Some(&options));
            let parsed = index_options(&mut args)?;
            args.finish()?;
            parsed
        }
        None => None,
    };
    args.finish()?;
    Ok(IndexModel::builder().keys(keys).options(options).build())
}

/// `createIndex`'s and `createIndexes`' options: `commitQuorum`, `maxTimeMS`, `writeConcern`
/// and `comment`.
fn create_index_options(args: &mut Args) -> Result<CreateIndexOptions, String> {
    let mut options = CreateIndexOptions::default();
    options.commit_quorum = match args.take("commitQuorum") {
        None => None,
        Some(Bson::String(quorum)) => Some(match quorum.as_str() {
            "majority" => CommitQuorum::Majority,
            "votingMembers" => CommitQuorum::VotingMembers,
            _ => CommitQuorum::Custom(quorum),
        }),
        Some(other) => Some(CommitQuorum::Nodes(
            crate::expect_error::integer(&other)
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| format!("commitQuorum: bad value {other}"))?,
        )),
    };
    options.max_time = args.optional_duration("maxTimeMS")?;
    options.write_concern = args.optional_write_concern()?;
    options.comment = args.take("comment");
    Ok(options)
}

/// `dropIndex`'s and `dropIndexes`' options: `maxTimeMS`, `writeConcern` and `comment`.
fn drop_index_options(args: &mut Args) -> Result<DropIndexOptions, String> {
    let mut options = DropIndexOptions::default();
    options.max_time = args.optional_duration("maxTimeMS")?;
    options.write_concern = args.optional_write_concern()?;
    options.comment = args.take("comment");
    Ok(options)
}

/// Every `IndexOptions` field of the index management specification, `None` when the test
/// gave none. A non-string `name` fails rather than being dropped.
pub(crate) fn index_options(args: &mut Args) -> Result<Option<IndexOptions>, String> {
    let mut o = IndexOptions::default();
    o.name = args.optional_string("name")?;
    o.background = args.optional_bool("background")?;
    o.expire_after = args
        .optional_count::<u64>("expireAfterSeconds")?
        .map(Duration::from_secs);
    o.sparse = args.optional_bool("sparse")?;
    o.storage_engine = args.optional_document("storageEngine")?;
    o.unique = args.optional_bool("unique")?;
    o.version = args.optional_count("version")?.map(IndexVersion::Custom);
    o.default_language = args.optional_string("defaultLanguage")?;
    o.language_override = args.optional_string("languageOverride")?;
    o.text_index_version = args
        .optional_count("textIndexVersion")?
        .map(TextIndexVersion::Custom);
    o.weights = args.optional_document("weights")?;
    o.sphere_2d_index_version = args
        .optional_count("2dsphereIndexVersion")?
        .map(Sphere2DIndexVersion::Custom);
    o.bits = args.optional_count("bits")?;
    o.max = args.optional_f64("max")?;
    o.min = args.optional_f64("min")?;
    o.bucket_size = args.optional_count("bucketSize")?;
    o.partial_filter_expression = args.optional_document("partialFilterExpression")?;
    o.collation = super::crud_options::collation(args)?;
    o.wildcard_projection = args.optional_document("wildcardProjection")?;
    o.hidden = args.optional_bool("hidden")?;
    Ok((o != IndexOptions::default()).then_some(o))
}
