//! `createCollection`'s options (capped, time-series, clustered, pre- and post-images,
//! validation, views, storage engine) and
//! `modifyCollection` (sent as `collMod` through `run_command`, as steadfast, like the official
//! Rust driver, has no helper for it).

use std::time::Duration;

use bson::{Bson, Document, doc};
use steadfast::Database;
use steadfast::options::{
    ChangeStreamPreAndPostImages, ClusteredIndex, CreateCollectionOptions, IndexOptionDefaults,
    TimeseriesGranularity, TimeseriesOptions, ValidationAction, ValidationLevel,
};

use super::Outcome;
use super::timed::{InSession, Timed};
use crate::args::Args;

/// Reads every `createCollection` argument but `collection` (and `session`).
pub(super) fn create_collection_options(
    args: &mut Args,
) -> Result<CreateCollectionOptions, String> {
    let mut options = CreateCollectionOptions::default();
    options.capped = args.optional_bool("capped")?;
    options.size = args.optional_count::<u64>("size")?;
    options.max = args.optional_count::<u64>("max")?;
    options.expire_after_seconds = args
        .optional_count::<u64>("expireAfterSeconds")?
        .map(Duration::from_secs);
    if let Some(images) = args.optional_document("changeStreamPreAndPostImages")? {
        let enabled = images
            .get_bool("enabled")
            .map_err(|_| format!("changeStreamPreAndPostImages {images}"))?;
        options.change_stream_pre_and_post_images = Some(
            ChangeStreamPreAndPostImages::builder()
                .enabled(enabled)
                .build(),
        );
    }
    if let Some(index) = args.optional_document("clusteredIndex")? {
        options.clustered_index = Some(clustered_index(&index)?);
    }
    if let Some(series) = args.optional_document("timeseries")? {
        options.timeseries = Some(timeseries(&series)?);
    }
    validation_options(args, &mut options)?;
    options.storage_engine = args.optional_document("storageEngine")?;
    if let Some(defaults) = args.optional_document("indexOptionDefaults")? {
        let mut defaults = Args::new("indexOptionDefaults", Some(&defaults));
        let storage_engine = defaults.document("storageEngine")?;
        defaults.finish()?;
        options.index_option_defaults = Some(
            IndexOptionDefaults::builder()
                .storage_engine(storage_engine)
                .build(),
        );
    }
    options.view_on = args.optional_string("viewOn")?;
    options.pipeline = match args.take("pipeline") {
        Some(pipeline) => Some(pipeline_of(pipeline)?),
        None => None,
    };
    options.collation = super::crud_options::collation(args)?;
    options.write_concern = args.optional_write_concern()?;
    options.comment = args.take("comment");
    Ok(options)
}

/// `validator`, `validationLevel` and `validationAction`.
fn validation_options(
    args: &mut Args,
    options: &mut CreateCollectionOptions,
) -> Result<(), String> {
    options.validator = args.optional_document("validator")?;
    options.validation_level = match args.optional_string("validationLevel")?.as_deref() {
        None => None,
        Some("off") => Some(ValidationLevel::Off),
        Some("strict") => Some(ValidationLevel::Strict),
        Some("moderate") => Some(ValidationLevel::Moderate),
        Some(other) => return Err(format!("validationLevel {other:?} is unknown")),
    };
    options.validation_action = match args.optional_string("validationAction")?.as_deref() {
        None => None,
        Some("error") => Some(ValidationAction::Error),
        Some("warn") => Some(ValidationAction::Warn),
        Some(other) => return Err(format!("validationAction {other:?} is unknown")),
    };
    Ok(())
}

/// A view's `pipeline`: an array of stages.
fn pipeline_of(pipeline: Bson) -> Result<Vec<Document>, String> {
    let Bson::Array(stages) = pipeline else {
        return Err(format!(
            "createCollection: pipeline {pipeline} is not an array"
        ));
    };
    stages
        .into_iter()
        .map(|stage| match stage {
            Bson::Document(stage) => Ok(stage),
            other => Err(format!("createCollection: pipeline stage {other}")),
        })
        .collect()
}

fn clustered_index(spec: &Document) -> Result<ClusteredIndex, String> {
    let mut index = ClusteredIndex::default();
    for (key, value) in spec {
        match (key.as_str(), value) {
            ("key", Bson::Document(keys)) => index.key = keys.clone(),
            ("unique", Bson::Boolean(unique)) => index.unique = *unique,
            ("name", Bson::String(name)) => index.name = Some(name.clone()),
            ("v", Bson::Int32(v)) => index.v = Some(*v),
            _ => return Err(format!("clusteredIndex.{key}: {value} is not supported")),
        }
    }
    Ok(index)
}

fn timeseries(spec: &Document) -> Result<TimeseriesOptions, String> {
    let time_field = spec
        .get_str("timeField")
        .map_err(|_| format!("timeseries without a timeField: {spec}"))?;
    let seconds = |key: &str| -> Result<Option<Duration>, String> {
        match spec.get(key) {
            None => Ok(None),
            Some(value) => crate::expect_error::integer(value)
                .and_then(|n| u64::try_from(n).ok())
                .map(|n| Some(Duration::from_secs(n)))
                .ok_or_else(|| format!("timeseries.{key} {value}")),
        }
    };
    let granularity = match spec.get_str("granularity").ok() {
        None => None,
        Some("seconds") => Some(TimeseriesGranularity::Seconds),
        Some("minutes") => Some(TimeseriesGranularity::Minutes),
        Some("hours") => Some(TimeseriesGranularity::Hours),
        Some(other) => return Err(format!("timeseries.granularity {other:?}")),
    };
    Ok(TimeseriesOptions::builder()
        .time_field(time_field.to_string())
        .meta_field(spec.get_str("metaField").ok().map(str::to_string))
        .granularity(granularity)
        .bucket_max_span(seconds("bucketMaxSpanSeconds")?)
        .bucket_rounding(seconds("bucketRoundingSeconds")?)
        .build())
}

/// `modifyCollection`: `collMod` with every other argument of the command as its options,
/// under the operation's timeoutMS.
pub(super) async fn modify_collection(
    mut args: Args,
    db: &Database,
    timeout: Option<Duration>,
    session: Option<&mut steadfast::ClientSession>,
) -> Result<Result<Outcome, steadfast::Error>, String> {
    let collection = args.string("collection")?;
    let mut command = doc! { "collMod": collection };
    for key in COLL_MOD_FIELDS {
        if let Some(value) = args.take(key) {
            command.insert(key, value);
        }
    }
    args.finish()?;
    let result = db
        .run_command(command)
        .timed(timeout)
        .in_session(session)
        .await;
    Ok(result.map(|_| Outcome::Nothing))
}

/// The fields of the `collMod` command besides its name.
const COLL_MOD_FIELDS: [&str; 14] = [
    "index",
    "validator",
    "validationLevel",
    "validationAction",
    "viewOn",
    "pipeline",
    "expireAfterSeconds",
    "timeseries",
    "changeStreamPreAndPostImages",
    "cappedSize",
    "cappedMax",
    "dryRun",
    "writeConcern",
    "comment",
];
