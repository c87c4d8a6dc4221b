//! `createCollection`'s options (capped, time-series, clustered, pre- and post-images) and
//! `modifyCollection` (sent as `collMod` through `run_command`, as steadfast, like the official
//! Rust driver, has no helper for it).

use std::time::Duration;

use bson::{Bson, Document, doc};
use steadfast::Database;
use steadfast::options::{
    ChangeStreamPreAndPostImages, ClusteredIndex, CreateCollectionOptions, TimeseriesGranularity,
    TimeseriesOptions,
};

use super::Outcome;
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
    Ok(options)
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

/// `modifyCollection`: `collMod` with every other argument as its options.
pub(super) async fn modify_collection(
    mut args: Args,
    db: &Database,
    session: Option<&mut steadfast::ClientSession>,
) -> Result<Result<Outcome, steadfast::Error>, String> {
    let collection = args.string("collection")?;
    let mut command = doc! { "collMod": collection };
    for key in [
        "index",
        "changeStreamPreAndPostImages",
        "validator",
        "validationLevel",
        "validationAction",
        "expireAfterSeconds",
    ] {
        if let Some(value) = args.take(key) {
            command.insert(key, value);
        }
    }
    args.finish()?;
    let action = db.run_command(command);
    let result = match session {
        Some(session) => action.session(session).await,
        None => action.await,
    };
    Ok(result.map(|_| Outcome::Nothing))
}
