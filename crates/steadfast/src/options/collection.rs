//! Typed values of `createCollection` and `createIndexes` options: validation, time series,
//! clustered collections, change-stream images and the index build quorum.

use std::time::Duration;

use bson::{Bson, Document, doc};
use serde::{Deserialize, Serialize};
use typed_builder::TypedBuilder;

/// Whole seconds as an `Int64`, the unit of the `*Seconds` fields (saturating).
fn seconds(duration: Duration) -> Bson {
    Bson::Int64(i64::try_from(duration.as_secs()).unwrap_or(i64::MAX))
}

/// A `u32` as the `Int32` the server expects; a value past `i32::MAX` is sent as an `Int64`
/// for the server to reject rather than being silently changed.
pub(crate) fn u32_bson(value: u32) -> Bson {
    i32::try_from(value).map_or(Bson::Int64(i64::from(value)), Bson::Int32)
}

/// How strictly a collection's validator applies to updates (`validationLevel`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ValidationLevel {
    /// No validation.
    Off,
    /// Every insert and update is validated (the default).
    Strict,
    /// Updates of documents that were already invalid are not validated.
    Moderate,
}

impl From<ValidationLevel> for Bson {
    fn from(level: ValidationLevel) -> Self {
        Bson::String(
            match level {
                ValidationLevel::Off => "off",
                ValidationLevel::Strict => "strict",
                ValidationLevel::Moderate => "moderate",
            }
            .to_string(),
        )
    }
}

/// What happens to a document that fails validation (`validationAction`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ValidationAction {
    /// The write is rejected (the default).
    Error,
    /// The write goes through and the server logs a warning.
    Warn,
}

impl From<ValidationAction> for Bson {
    fn from(action: ValidationAction) -> Self {
        Bson::String(
            match action {
                ValidationAction::Error => "error",
                ValidationAction::Warn => "warn",
            }
            .to_string(),
        )
    }
}

/// The expected interval between measurements of a time-series collection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum TimeseriesGranularity {
    /// Seconds apart (the default).
    Seconds,
    /// Minutes apart.
    Minutes,
    /// Hours apart.
    Hours,
}

impl TimeseriesGranularity {
    fn as_str(self) -> &'static str {
        match self {
            TimeseriesGranularity::Seconds => "seconds",
            TimeseriesGranularity::Minutes => "minutes",
            TimeseriesGranularity::Hours => "hours",
        }
    }
}

/// Makes the created collection a time-series collection (`timeseries`).
#[derive(Clone, Debug, Default, PartialEq, TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct TimeseriesOptions {
    /// The field holding each measurement's date (required by the server).
    pub time_field: String,
    /// The field identifying the series a measurement belongs to.
    pub meta_field: Option<String>,
    /// The expected interval between measurements (do not combine with the bucket fields).
    pub granularity: Option<TimeseriesGranularity>,
    /// The widest time span of one bucket, whole seconds (`bucketMaxSpanSeconds`, 6.3+).
    pub bucket_max_span: Option<Duration>,
    /// The interval bucket start times are rounded down to (`bucketRoundingSeconds`, 6.3+).
    pub bucket_rounding: Option<Duration>,
}

impl From<TimeseriesOptions> for Bson {
    fn from(options: TimeseriesOptions) -> Self {
        let mut body = doc! { "timeField": options.time_field };
        if let Some(field) = options.meta_field {
            body.insert("metaField", field);
        }
        if let Some(granularity) = options.granularity {
            body.insert("granularity", granularity.as_str());
        }
        if let Some(span) = options.bucket_max_span {
            body.insert("bucketMaxSpanSeconds", seconds(span));
        }
        if let Some(rounding) = options.bucket_rounding {
            body.insert("bucketRoundingSeconds", seconds(rounding));
        }
        Bson::Document(body)
    }
}

/// Makes the created collection clustered on its key (`clusteredIndex`). The server requires
/// `key: { _id: 1 }` and `unique: true`, which is what `Default` gives.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ClusteredIndex {
    /// The cluster key pattern (the server accepts only `{ _id: 1 }`).
    pub key: Document,
    /// Must be `true`.
    pub unique: bool,
    /// The index name; the server derives one when unset.
    pub name: Option<String>,
    /// The index version; the server accepts only 2.
    pub v: Option<i32>,
}

impl Default for ClusteredIndex {
    fn default() -> Self {
        ClusteredIndex {
            key: doc! { "_id": 1 },
            unique: true,
            name: None,
            v: None,
        }
    }
}

impl From<ClusteredIndex> for Bson {
    fn from(index: ClusteredIndex) -> Self {
        let mut body = doc! { "key": index.key, "unique": index.unique };
        if let Some(name) = index.name {
            body.insert("name", name);
        }
        if let Some(v) = index.v {
            body.insert("v", v);
        }
        Bson::Document(body)
    }
}

/// Whether change streams on the created collection can see documents' pre- and post-images
/// (`changeStreamPreAndPostImages`, 6.0+).
#[derive(Clone, Debug, Default, PartialEq, TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct ChangeStreamPreAndPostImages {
    /// Records the images when `true`.
    pub enabled: bool,
}

impl From<ChangeStreamPreAndPostImages> for Bson {
    fn from(images: ChangeStreamPreAndPostImages) -> Self {
        Bson::Document(doc! { "enabled": images.enabled })
    }
}

/// Defaults for the indexes of the created collection (`indexOptionDefaults`).
#[derive(Clone, Debug, Default, PartialEq, TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct IndexOptionDefaults {
    /// The storage engine settings, `{ <engine name>: <options> }`.
    pub storage_engine: Document,
}

impl From<IndexOptionDefaults> for Bson {
    fn from(defaults: IndexOptionDefaults) -> Self {
        Bson::Document(doc! { "storageEngine": defaults.storage_engine })
    }
}

/// How many data-bearing voting members must finish building an index before the primary
/// marks it ready (`commitQuorum` of `createIndexes`, 4.4+).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CommitQuorum {
    /// This many members; 0 turns quorum voting off.
    Nodes(u32),
    /// Every data-bearing voting member (the server's default).
    VotingMembers,
    /// A majority of the data-bearing voting members.
    Majority,
    /// A write concern name defined by the replica set's tags.
    Custom(String),
}

impl From<CommitQuorum> for Bson {
    fn from(quorum: CommitQuorum) -> Self {
        match quorum {
            CommitQuorum::Nodes(nodes) => u32_bson(nodes),
            CommitQuorum::VotingMembers => Bson::String("votingMembers".to_string()),
            CommitQuorum::Majority => Bson::String("majority".to_string()),
            CommitQuorum::Custom(name) => Bson::String(name),
        }
    }
}
