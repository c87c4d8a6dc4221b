//! Reading back the options `listCollections` reports a collection was created with, into the
//! same typed [`CreateCollectionOptions`] that creates one.

use std::time::Duration;

use bson::{Bson, Document};
use serde::{Deserialize, Deserializer};

use super::admin::CreateCollectionOptions;
use super::collation::Collation;
use super::collection::{
    ChangeStreamPreAndPostImages, ClusteredIndex, IndexOptionDefaults, TimeseriesGranularity,
    TimeseriesOptions, ValidationAction, ValidationLevel,
};
use super::index::bson_as_u64;

/// `createCollection` options as the server lists them.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CollectionSpec {
    capped: Option<bool>,
    size: Option<Bson>,
    max: Option<Bson>,
    storage_engine: Option<Document>,
    validator: Option<Document>,
    validation_level: Option<ValidationLevel>,
    validation_action: Option<ValidationAction>,
    view_on: Option<String>,
    pipeline: Option<Vec<Document>>,
    collation: Option<Collation>,
    index_option_defaults: Option<IndexOptionDefaultsSpec>,
    timeseries: Option<TimeseriesSpec>,
    expire_after_seconds: Option<Bson>,
    change_stream_pre_and_post_images: Option<ImagesSpec>,
    clustered_index: Option<ClusteredIndexSpec>,
    comment: Option<Bson>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct IndexOptionDefaultsSpec {
    storage_engine: Document,
}

#[derive(Deserialize)]
struct ImagesSpec {
    enabled: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TimeseriesSpec {
    time_field: String,
    meta_field: Option<String>,
    granularity: Option<TimeseriesGranularity>,
    bucket_max_span_seconds: Option<Bson>,
    bucket_rounding_seconds: Option<Bson>,
}

/// Atlas reports the clustered index of a time-series collection as `true`.
#[derive(Deserialize)]
#[serde(untagged)]
enum ClusteredIndexSpec {
    Flag(bool),
    Index {
        key: Document,
        unique: bool,
        name: Option<String>,
        v: Option<i32>,
    },
}

/// A whole number of seconds as listed (any numeric width; negative or fractional: `None`).
fn listed_seconds(value: Option<Bson>) -> Option<Duration> {
    value
        .as_ref()
        .and_then(bson_as_u64)
        .map(Duration::from_secs)
}

impl From<TimeseriesSpec> for TimeseriesOptions {
    fn from(spec: TimeseriesSpec) -> Self {
        TimeseriesOptions {
            time_field: spec.time_field,
            meta_field: spec.meta_field,
            granularity: spec.granularity,
            bucket_max_span: listed_seconds(spec.bucket_max_span_seconds),
            bucket_rounding: listed_seconds(spec.bucket_rounding_seconds),
        }
    }
}

impl From<CollectionSpec> for CreateCollectionOptions {
    fn from(spec: CollectionSpec) -> Self {
        let clustered_index = match spec.clustered_index {
            None | Some(ClusteredIndexSpec::Flag(false)) => None,
            Some(ClusteredIndexSpec::Flag(true)) => Some(ClusteredIndex::default()),
            Some(ClusteredIndexSpec::Index {
                key,
                unique,
                name,
                v,
            }) => Some(ClusteredIndex {
                key,
                unique,
                name,
                v,
            }),
        };
        CreateCollectionOptions {
            capped: spec.capped,
            size: spec.size.as_ref().and_then(bson_as_u64),
            max: spec.max.as_ref().and_then(bson_as_u64),
            storage_engine: spec.storage_engine,
            validator: spec.validator,
            validation_level: spec.validation_level,
            validation_action: spec.validation_action,
            view_on: spec.view_on,
            pipeline: spec.pipeline,
            collation: spec.collation,
            write_concern: None,
            index_option_defaults: spec
                .index_option_defaults
                .map(|defaults| IndexOptionDefaults {
                    storage_engine: defaults.storage_engine,
                }),
            timeseries: spec.timeseries.map(TimeseriesOptions::from),
            expire_after_seconds: listed_seconds(spec.expire_after_seconds),
            change_stream_pre_and_post_images: spec.change_stream_pre_and_post_images.map(
                |images| ChangeStreamPreAndPostImages {
                    enabled: images.enabled,
                },
            ),
            clustered_index,
            comment: spec.comment,
        }
    }
}

impl<'de> Deserialize<'de> for CreateCollectionOptions {
    /// Reads the `options` of a `listCollections` entry. Numbers are accepted in any width;
    /// an unknown validation level, action or granularity is an error.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        CollectionSpec::deserialize(deserializer).map(CreateCollectionOptions::from)
    }
}

impl<'de> Deserialize<'de> for TimeseriesOptions {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        TimeseriesSpec::deserialize(deserializer).map(TimeseriesOptions::from)
    }
}
