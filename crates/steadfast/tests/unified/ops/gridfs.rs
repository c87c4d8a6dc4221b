//! The `bucket` entity (a GridFS bucket) and its operations: upload, download,
//! uploadWithId, downloadByName, find, delete, deleteByName, rename, renameByName, drop.

use bson::{Binary, Bson, Document, spec::BinarySubtype};
use futures_util::io::{AsyncReadExt, AsyncWriteExt};
use steadfast::gridfs::GridFsBucket;
use steadfast::options::{GridFsBucketOptions, GridFsFindOptions, ReadConcern, ReadConcernLevel};

use super::{OpResult, Outcome, drain};
use crate::args::Args;
use crate::entities::{Entity, EntityMap};

/// Creates a `bucket` entity: `{id, database, bucketOptions?}`.
pub(crate) fn create_bucket(spec: &Document, entities: &EntityMap) -> Result<GridFsBucket, String> {
    if let Some(unknown) = spec
        .keys()
        .find(|k| !["id", "database", "bucketOptions"].contains(&k.as_str()))
    {
        return Err(format!(
            "bucket entity: `{unknown}` is not supported by this runner"
        ));
    }
    let database_id = spec.get_str("database").map_err(|e| e.to_string())?;
    let Entity::Database(database) = entities.get(database_id)? else {
        return Err(format!("entity {database_id:?} is not a database"));
    };
    let options = match spec.get_document("bucketOptions") {
        Ok(given) => bucket_options(given)?,
        Err(_) => GridFsBucketOptions::default(),
    };
    Ok(database.gridfs_bucket(options))
}

/// A bucket entity's `bucketOptions`. `disableMD5` is accepted and ignored: the GridFS
/// specification makes it a no-op for a driver that never computes MD5, as steadfast does.
fn bucket_options(given: &Document) -> Result<GridFsBucketOptions, String> {
    let mut args = Args::new("bucketOptions", Some(given));
    let mut options = GridFsBucketOptions::default();
    options.bucket_name = args.optional_string("bucketName")?;
    options.chunk_size_bytes = args.optional_count::<u32>("chunkSizeBytes")?;
    options.write_concern = args.optional_write_concern()?;
    options.read_concern = args
        .optional_document("readConcern")?
        .map(|concern| read_concern(&concern))
        .transpose()?;
    options.selection_criteria = args
        .optional_document("readPreference")?
        .map(|preference| super::read_preference(&preference).map(Into::into))
        .transpose()?;
    options.timeout = args.optional_duration("timeoutMS")?;
    args.optional_bool("disableMD5")?;
    args.finish()?;
    Ok(options)
}

/// A `readConcern`: `{level}`.
fn read_concern(concern: &Document) -> Result<ReadConcern, String> {
    let mut args = Args::new("bucketOptions.readConcern", Some(concern));
    let level = args.string("level")?;
    args.finish()?;
    Ok(ReadConcern::new(ReadConcernLevel::parse(&level)))
}

/// Runs bucket operation `name`.
pub(super) async fn run(name: &str, mut args: Args, bucket: &GridFsBucket) -> OpResult {
    let timeout = args.optional_duration("timeoutMS")?;
    let result = match name {
        "upload" | "uploadWithId" => upload(name, args, bucket, timeout).await?,
        "download" => {
            let id = args.take("id").ok_or("download: no id")?;
            args.finish()?;
            let mut action = bucket.open_download_stream(id);
            if let Some(timeout) = timeout {
                action = action.timeout(timeout);
            }
            match action.await {
                Ok(stream) => read_all(stream).await,
                Err(error) => Err(error),
            }
        }
        "downloadByName" => {
            let filename = args.string("filename")?;
            let revision = args.optional_count::<i32>("revision")?;
            args.finish()?;
            let mut action = bucket.open_download_stream_by_name(filename);
            if let Some(revision) = revision {
                action = action.revision(revision);
            }
            if let Some(timeout) = timeout {
                action = action.timeout(timeout);
            }
            match action.await {
                Ok(stream) => read_all(stream).await,
                Err(error) => Err(error),
            }
        }
        "find" => {
            let filter = args.document("filter")?;
            let options = find_options(&mut args)?;
            args.finish()?;
            let mut action = bucket.find(filter).with_options(options);
            if let Some(timeout) = timeout {
                action = action.timeout(timeout);
            }
            match action.await {
                Ok(cursor) => drain(cursor).await.map(Outcome::Documents),
                Err(error) => Err(error),
            }
        }
        _ => return run_write(name, args, bucket, timeout).await,
    };
    Ok(result)
}

/// `find`'s options.
fn find_options(args: &mut Args) -> Result<GridFsFindOptions, String> {
    let mut options = GridFsFindOptions::default();
    options.allow_disk_use = args.optional_bool("allowDiskUse")?;
    options.batch_size = args.optional_count("batchSize")?;
    options.limit = args.optional_integer("limit")?;
    options.max_time = args.optional_duration("maxTimeMS")?;
    options.no_cursor_timeout = args.optional_bool("noCursorTimeout")?;
    options.skip = args.optional_count("skip")?;
    options.sort = args.optional_document("sort")?;
    Ok(options)
}

/// The bucket operations that return nothing.
async fn run_write(
    name: &str,
    mut args: Args,
    bucket: &GridFsBucket,
    timeout: Option<std::time::Duration>,
) -> OpResult {
    let result = match name {
        "delete" => {
            let id = args.take("id").ok_or("delete: no id")?;
            args.finish()?;
            let action = bucket.delete(id);
            match timeout {
                Some(t) => action.timeout(t).await,
                None => action.await,
            }
        }
        "deleteByName" => {
            let filename = args.string("filename")?;
            args.finish()?;
            let action = bucket.delete_by_name(filename);
            match timeout {
                Some(t) => action.timeout(t).await,
                None => action.await,
            }
        }
        "rename" => {
            let id = args.take("id").ok_or("rename: no id")?;
            let new_filename = args.string("newFilename")?;
            args.finish()?;
            let action = bucket.rename(id, new_filename);
            match timeout {
                Some(t) => action.timeout(t).await,
                None => action.await,
            }
        }
        "renameByName" => {
            let filename = args.string("filename")?;
            let new_filename = args.string("newFilename")?;
            args.finish()?;
            let action = bucket.rename_by_name(filename, new_filename);
            match timeout {
                Some(t) => action.timeout(t).await,
                None => action.await,
            }
        }
        "drop" => {
            args.finish()?;
            let action = bucket.drop();
            match timeout {
                Some(t) => action.timeout(t).await,
                None => action.await,
            }
        }
        other => {
            return Err(format!(
                "bucket operation {other:?} is not supported by this runner"
            ));
        }
    };
    Ok(result.map(|()| Outcome::Nothing))
}

/// `upload` (or `uploadWithId`, with the file's `id`): writes `source` (`{$$hexBytes: ..}`)
/// through an upload stream and closes it; the result is the new file's id. `disableMD5` is
/// accepted and ignored: steadfast never computes the deprecated MD5, which the GridFS
/// specification makes the option a no-op for.
async fn upload(
    name: &str,
    mut args: Args,
    bucket: &GridFsBucket,
    timeout: Option<std::time::Duration>,
) -> Result<Result<Outcome, steadfast::Error>, String> {
    let id = match name {
        "uploadWithId" => Some(
            args.take("id")
                .ok_or("uploadWithId: argument `id` is required")?,
        ),
        _ => None,
    };
    let filename = args.string("filename")?;
    let source = hex_bytes(&args.document("source")?)?;
    let chunk_size = args.optional_count::<u32>("chunkSizeBytes")?;
    let metadata = args.optional_document("metadata")?;
    args.optional_bool("disableMD5")?;
    args.finish()?;
    let mut action = bucket.open_upload_stream(filename);
    if let Some(id) = id {
        action = action.id(id);
    }
    if let Some(chunk_size) = chunk_size {
        action = action.chunk_size_bytes(chunk_size);
    }
    if let Some(metadata) = metadata {
        action = action.metadata(metadata);
    }
    if let Some(timeout) = timeout {
        action = action.timeout(timeout);
    }
    let mut stream = match action.await {
        Ok(stream) => stream,
        Err(error) => return Ok(Err(error)),
    };
    let written = async {
        stream.write_all(&source).await?;
        stream.close().await
    }
    .await;
    Ok(match written {
        Ok(()) => Ok(Outcome::Value(stream.id().clone())),
        Err(error) => Err(driver_error(error)),
    })
}

/// Reads a download stream to its end, as a binary value.
async fn read_all(
    mut stream: steadfast::gridfs::GridFsDownloadStream,
) -> Result<Outcome, steadfast::Error> {
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).await.map_err(driver_error)?;
    Ok(Outcome::Value(Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes,
    })))
}

/// The driver error inside a stream's `std::io::Error`.
fn driver_error(error: std::io::Error) -> steadfast::Error {
    match error
        .into_inner()
        .map(|inner| inner.downcast::<steadfast::Error>())
    {
        Some(Ok(error)) => *error,
        Some(Err(other)) => steadfast::Error::custom(other.to_string()),
        None => steadfast::Error::custom("an I/O error without a source".to_string()),
    }
}

/// The bytes of `{$$hexBytes: "0a1b.."}`.
fn hex_bytes(source: &Document) -> Result<Vec<u8>, String> {
    let hex = source
        .get_str("$$hexBytes")
        .map_err(|_| format!("upload: source {source} is not {{$$hexBytes: ..}}"))?;
    if hex.len() % 2 != 0 {
        return Err(format!("$$hexBytes: odd length {hex:?}"));
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| {
            hex.get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or_else(|| format!("$$hexBytes: not hex: {hex:?}"))
        })
        .collect()
}
