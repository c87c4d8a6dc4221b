//! Options of the index, collection and database administration operations.

use std::time::Duration;

use bson::{Bson, Document};
use steadfast_core::options::WriteConcern;

use super::collation::Collation;
use super::collection::{
    ChangeStreamPreAndPostImages, ClusteredIndex, CommitQuorum, IndexOptionDefaults,
    TimeseriesOptions, ValidationAction, ValidationLevel,
};

options_struct! {
    /// Options of `Collection::create_index` and `Collection::create_indexes`.
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    pub struct CreateIndexOptions {
        /// How many data-bearing members must build the index before it is ready (4.4+).
        commit_quorum: CommitQuorum,
        /// The server-side time limit (deprecated in favour of timeoutMS).
        #[serde(rename = "maxTimeMS", with = "steadfast_core::serde_util::duration_ms")]
        max_time: Duration,
        /// The write concern for this operation.
        #[serde(skip_serializing)]
        write_concern: WriteConcern,
        /// A comment attached to the command.
        [into] comment: Bson,
    }
}

options_struct! {
    /// Options of `Collection::drop_index` and `Collection::drop_indexes`.
    #[derive(serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct DropIndexOptions {
        /// The server-side time limit (deprecated in favour of timeoutMS).
        #[serde(rename = "maxTimeMS", with = "steadfast_core::serde_util::duration_ms")]
        max_time: Duration,
        /// The write concern for this operation.
        #[serde(skip_serializing)]
        write_concern: WriteConcern,
        /// A comment attached to the command.
        [into] comment: Bson,
    }
}

options_struct! {
    /// Options of `Collection::list_indexes`.
    #[derive(serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ListIndexesOptions {
        /// How many index descriptions each batch holds.
        #[serde(skip_serializing)]
        batch_size: u32,
        /// The server-side time limit (deprecated in favour of timeoutMS).
        #[serde(rename = "maxTimeMS", with = "steadfast_core::serde_util::duration_ms")]
        max_time: Duration,
        /// A comment attached to the command.
        [into] comment: Bson,
    }
}

options_struct! {
    /// Options of `Collection::drop`.
    #[derive(serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct DropCollectionOptions {
        /// The write concern for this operation.
        #[serde(skip_serializing)]
        write_concern: WriteConcern,
        /// A comment attached to the command.
        [into] comment: Bson,
    }
}

options_struct! {
    /// Options of `Database::create_collection`.
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    pub struct CreateCollectionOptions {
        /// Creates a capped collection (requires `size`).
        capped: bool,
        /// The maximum size in bytes of a capped collection.
        #[serde(serialize_with = "steadfast_core::serde_util::u64_as_i64")]
        size: u64,
        /// The maximum number of documents of a capped collection.
        #[serde(serialize_with = "steadfast_core::serde_util::u64_as_i64")]
        max: u64,
        /// Storage engine settings, `{ <engine name>: <options> }`.
        [into] storage_engine: Document,
        /// A validator expression every inserted or updated document must match.
        [into] validator: Document,
        /// How strictly the validator applies.
        validation_level: ValidationLevel,
        /// Whether invalid documents are rejected or only logged.
        validation_action: ValidationAction,
        /// Creates a view on this collection or view.
        [into] view_on: String,
        /// The view's pipeline.
        pipeline: Vec<Document>,
        /// The default collation of the collection.
        collation: Collation,
        /// The write concern for this operation.
        #[serde(skip_serializing)]
        write_concern: WriteConcern,
        /// Defaults for the collection's indexes.
        index_option_defaults: IndexOptionDefaults,
        /// Makes it a time-series collection.
        timeseries: TimeseriesOptions,
        /// Deletes time-series or clustered documents this long after their date, whole
        /// seconds (`expireAfterSeconds`).
        #[serde(with = "steadfast_core::serde_util::duration_secs")]
        expire_after_seconds: Duration,
        /// Lets change streams see documents' pre- and post-images (6.0+).
        change_stream_pre_and_post_images: ChangeStreamPreAndPostImages,
        /// Makes it a clustered collection (5.3+).
        clustered_index: ClusteredIndex,
        /// A comment attached to the command.
        [into] comment: Bson,
    }
}

options_struct! {
    /// Options of `Database::list_collections` and `Database::list_collection_names`.
    #[derive(serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ListCollectionsOptions {
        /// Which collections to list (matched against the listed documents).
        [into] filter: Document,
        /// Lists only the collections the user is allowed to read.
        authorized_collections: bool,
        /// How many collection descriptions each batch holds.
        #[serde(
            serialize_with = "steadfast_core::serde_util::batch_size_as_cursor",
            rename(serialize = "cursor")
        )]
        batch_size: u32,
        /// A comment attached to the command.
        [into] comment: Bson,
    }
}

options_struct! {
    /// Options of `Client::list_databases` and `Client::list_database_names`.
    #[derive(serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ListDatabasesOptions {
        /// Which databases to list.
        [into] filter: Document,
        /// Lists only the databases the user is allowed to read.
        authorized_databases: bool,
        /// A comment attached to the command.
        [into] comment: Bson,
    }
}

options_struct! {
    /// Options of `Database::drop`.
    #[derive(serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct DropDatabaseOptions {
        /// The write concern for this operation.
        #[serde(skip_serializing)]
        write_concern: WriteConcern,
        /// A comment attached to the command.
        [into] comment: Bson,
    }
}
