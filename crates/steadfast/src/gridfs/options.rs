//! The options of a GridFS bucket and its operations, with the official driver's names.

use std::time::Duration;

use bson::Document;
use typed_builder::TypedBuilder;

use crate::options::{FindOneOptions, FindOptions, ReadConcern, SelectionCriteria, WriteConcern};

/// Settings of a [`GridFsBucket`](crate::gridfs::GridFsBucket) (see
/// [`Database::gridfs_bucket`](crate::Database::gridfs_bucket)). Unset fields inherit the
/// database's settings.
#[derive(Clone, Debug, Default, TypedBuilder, serde::Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct GridFsBucketOptions {
    /// The bucket name, the prefix of its two collections (`<name>.files`, `<name>.chunks`).
    /// Default `"fs"`.
    pub bucket_name: Option<String>,
    /// The chunk size of the files this bucket uploads. Default 255 KiB.
    pub chunk_size_bytes: Option<u32>,
    /// The write concern of the bucket's writes.
    pub write_concern: Option<WriteConcern>,
    /// The read concern of the bucket's reads.
    pub read_concern: Option<ReadConcern>,
    /// How the bucket's reads pick a server.
    pub selection_criteria: Option<SelectionCriteria>,
    /// timeoutMS for each of the bucket's operations (an upload or download stream's whole
    /// life, from opening to closing); `Duration::ZERO`: no limit. steadfast's addition.
    #[serde(
        default,
        rename = "timeoutMS",
        with = "steadfast_core::serde_util::duration_ms"
    )]
    pub timeout: Option<Duration>,
}

/// Options of [`GridFsBucket::open_upload_stream`](crate::gridfs::GridFsBucket::open_upload_stream).
#[derive(Clone, Debug, Default, TypedBuilder, serde::Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
#[serde(rename_all = "camelCase")]
pub struct GridFsUploadOptions {
    /// The chunk size of this file, over the bucket's.
    pub chunk_size_bytes: Option<u32>,
    /// The `metadata` document stored in the files collection document.
    pub metadata: Option<Document>,
}

/// Options of [`GridFsBucket::open_download_stream_by_name`](crate::gridfs::GridFsBucket::open_download_stream_by_name).
#[derive(Clone, Debug, Default, TypedBuilder, serde::Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct GridFsDownloadByNameOptions {
    /// Which revision of the files sharing the name, by upload date: 0 the oldest, 1 the next,
    /// ..., -2 the second newest, -1 (the default) the newest.
    pub revision: Option<i32>,
}

/// Options of [`GridFsBucket::find`](crate::gridfs::GridFsBucket::find).
#[derive(Clone, Debug, Default, TypedBuilder, serde::Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct GridFsFindOptions {
    /// Lets the server write temporary files for large sorts.
    pub allow_disk_use: Option<bool>,
    /// How many files documents each batch holds.
    pub batch_size: Option<u32>,
    /// The most files documents returned.
    pub limit: Option<i64>,
    /// The server-side time limit (deprecated in favour of timeoutMS).
    pub max_time: Option<Duration>,
    /// Keeps the server from timing out the idle cursor.
    pub no_cursor_timeout: Option<bool>,
    /// How many matching files documents to skip.
    pub skip: Option<u64>,
    /// The order of the results.
    pub sort: Option<Document>,
}

impl From<GridFsFindOptions> for FindOptions {
    fn from(options: GridFsFindOptions) -> Self {
        FindOptions {
            allow_disk_use: options.allow_disk_use,
            batch_size: options.batch_size,
            limit: options.limit,
            max_time: options.max_time,
            no_cursor_timeout: options.no_cursor_timeout,
            skip: options.skip,
            sort: options.sort,
            ..FindOptions::default()
        }
    }
}

/// Options of [`GridFsBucket::find_one`](crate::gridfs::GridFsBucket::find_one).
#[derive(Clone, Debug, Default, TypedBuilder, serde::Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct GridFsFindOneOptions {
    /// The server-side time limit (deprecated in favour of timeoutMS).
    pub max_time: Option<Duration>,
    /// How many matching files documents to skip.
    pub skip: Option<u64>,
    /// Which matching files document comes first.
    pub sort: Option<Document>,
}

impl From<GridFsFindOneOptions> for FindOneOptions {
    fn from(options: GridFsFindOneOptions) -> Self {
        FindOneOptions {
            max_time: options.max_time,
            skip: options.skip,
            sort: options.sort,
            ..FindOneOptions::default()
        }
    }
}
