//! GridFS: files larger than a document, stored as a files collection document (name, length,
//! chunk size, upload date, metadata) and numbered chunks of bytes in a chunks collection.
//!
//! A [`GridFsBucket`] (from [`Database::gridfs_bucket`]) uploads through a
//! [`GridFsUploadStream`] (a futures-io `AsyncWrite`) and downloads through a
//! [`GridFsDownloadStream`] (a futures-io `AsyncRead`), and finds, renames and deletes stored
//! files. Names and shapes are the official driver's.
//!
//! ```no_run
//! # async fn demo(db: steadfast::Database) -> steadfast::Result<()> {
//! use futures_util::io::{AsyncReadExt, AsyncWriteExt};
//!
//! let bucket = db.gridfs_bucket(None);
//! let mut upload = bucket.open_upload_stream("report.pdf").await?;
//! upload.write_all(b"%PDF-1.7 ...").await?;
//! upload.close().await?; // the file exists from here on
//! let id = upload.id().clone();
//!
//! let mut bytes = Vec::new();
//! bucket.open_download_stream(id).await?.read_to_end(&mut bytes).await?;
//! assert_eq!(bytes, b"%PDF-1.7 ...");
//! # Ok(())
//! # }
//! ```
//!
//! # Failover and incomplete uploads
//!
//! Each chunk is inserted with its own `insert` and the files collection document last, all
//! retryable writes: a stepdown or a dropped connection during an upload is retried with the
//! same transaction number, so the upload completes and no chunk is stored twice (the unique
//! `{files_id: 1, n: 1}` index would refuse a second copy anyway). An upload that fails for
//! good is never visible as a file, because the files document is written last; its chunks
//! are orphans that [`GridFsUploadStream::abort`] (or dropping the stream, in the background)
//! deletes, unless a files document with the upload's id exists (then the chunks belong to a
//! stored file and are kept). As the specification requires, a failed write itself does not
//! start a cleanup before reporting the error.
//!
//! # Timeouts
//!
//! Each operation runs under one timeoutMS (the action's `.timeout(..)`, else the bucket's
//! [`GridFsBucketOptions::timeout`], else the database's, else the client's): for a stream,
//! from opening it to closing it, every chunk included (CSOT specification, GridFS API).
//! Cursors the bucket opens use the cursor-lifetime mode.
//!
//! # Memory
//!
//! An upload stream buffers at most one chunk (the one being filled, or the one in flight); a
//! download stream holds one chunk plus the server's current cursor batch (at most 16 MiB).

/// The `action` run within `$deadline` (a cursor it opens shares it for its life), when that
/// sets a limit (`?` once it has passed); otherwise the action as it is.
macro_rules! within {
    ($action:expr, $deadline:expr) => {{
        let action = $action;
        match crate::gridfs::limit_of($deadline)? {
            Some(deadline) => action.within(deadline),
            None => action,
        }
    }};
}

pub(crate) mod action;
mod download;
mod indexes;
mod layout;
pub(crate) mod options;
mod upload;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bson::{Bson, DateTime, Document, doc};
use serde::{Deserialize, Serialize};
use steadfast_core::Deadline;

pub use download::GridFsDownloadStream;
pub use options::{
    GridFsBucketOptions, GridFsDownloadByNameOptions, GridFsFindOneOptions, GridFsFindOptions,
    GridFsUploadOptions,
};
pub use upload::GridFsUploadStream;

use crate::coll::Collection;
use crate::db::Database;
use crate::error::{Error, ErrorKind, GridFsErrorKind, GridFsFileIdentifier, Result};
use crate::options::{CollectionOptions, ReadConcern, SelectionCriteria, WriteConcern};
use crate::runtime;

/// The bucket name when none is given.
const DEFAULT_BUCKET_NAME: &str = "fs";
/// The chunk size when none is given: 255 KiB, so that a chunk and its fields stay under
/// 256 KiB.
const DEFAULT_CHUNK_SIZE_BYTES: u32 = 255 * 1024;

/// A stored file's files collection document.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FilesCollectionDocument {
    /// The file's unique id (an `ObjectId` unless the uploader chose one).
    #[serde(rename = "_id")]
    pub id: Bson,
    /// The file's length in bytes.
    pub length: u64,
    /// The size of each chunk but the last, in bytes.
    #[serde(rename = "chunkSize")]
    pub chunk_size_bytes: u32,
    /// When the upload completed.
    pub upload_date: DateTime,
    /// The file's name (not unique: files sharing a name are revisions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// The application's metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Document>,
}

/// A GridFS bucket: a files collection and a chunks collection sharing a name prefix. Cheap
/// to clone; creating one does no I/O.
#[derive(Clone, Debug)]
pub struct GridFsBucket {
    inner: Arc<BucketInner>,
}

#[derive(Debug)]
struct BucketInner {
    db: Database,
    options: GridFsBucketOptions,
    files: Collection<FilesCollectionDocument>,
    /// The same files collection, read and written as plain documents.
    files_raw: Collection<Document>,
    chunks: Collection<Document>,
    /// Whether this bucket has made sure the indexes exist (before its first write).
    indexes_checked: AtomicBool,
}

impl crate::Database {
    /// A GridFS bucket in this database. Unset options inherit the database's read concern,
    /// write concern, read preference and timeout.
    pub fn gridfs_bucket(&self, options: impl Into<Option<GridFsBucketOptions>>) -> GridFsBucket {
        GridFsBucket::new(self.clone(), options.into().unwrap_or_default())
    }
}

impl GridFsBucket {
    fn new(db: Database, mut options: GridFsBucketOptions) -> Self {
        options.read_concern = options.read_concern.or_else(|| db.read_concern().cloned());
        options.write_concern = options
            .write_concern
            .or_else(|| db.write_concern().cloned());
        options.selection_criteria = options
            .selection_criteria
            .or_else(|| db.selection_criteria().cloned());
        let name = options
            .bucket_name
            .clone()
            .unwrap_or_else(|| DEFAULT_BUCKET_NAME.to_string());
        let settings = CollectionOptions {
            read_concern: options.read_concern.clone(),
            write_concern: options.write_concern.clone(),
            selection_criteria: options.selection_criteria.clone(),
            ..CollectionOptions::default()
        };
        let files = db.collection_with_options(&format!("{name}.files"), settings.clone());
        let chunks = db.collection_with_options(&format!("{name}.chunks"), settings);
        let files_raw = files.clone_with_type();
        GridFsBucket {
            inner: Arc::new(BucketInner {
                db,
                options,
                files,
                files_raw,
                chunks,
                indexes_checked: AtomicBool::new(false),
            }),
        }
    }

    /// The read concern of the bucket's reads (`None`: the server's default).
    pub fn read_concern(&self) -> Option<&ReadConcern> {
        self.inner.options.read_concern.as_ref()
    }

    /// The write concern of the bucket's writes (`None`: the server's default).
    pub fn write_concern(&self) -> Option<&WriteConcern> {
        self.inner.options.write_concern.as_ref()
    }

    /// How the bucket's reads pick a server (`None`: the client's read preference).
    pub fn selection_criteria(&self) -> Option<&SelectionCriteria> {
        self.inner.options.selection_criteria.as_ref()
    }

    /// The files collection (`<bucket>.files`).
    pub(crate) fn files(&self) -> &Collection<FilesCollectionDocument> {
        &self.inner.files
    }

    /// The files collection, read as plain documents.
    fn files_raw(&self) -> &Collection<Document> {
        &self.inner.files_raw
    }

    /// The chunks collection (`<bucket>.chunks`).
    pub(crate) fn chunks(&self) -> &Collection<Document> {
        &self.inner.chunks
    }

    /// The chunk size of uploads that set none.
    fn chunk_size_bytes(&self) -> u32 {
        self.inner
            .options
            .chunk_size_bytes
            .unwrap_or(DEFAULT_CHUNK_SIZE_BYTES)
    }

    /// The deadline of an operation that starts now with the action's `timeout`, else the
    /// bucket's, the database's or the client's.
    pub(crate) fn deadline(&self, timeout: Option<Duration>) -> Deadline {
        let db = &self.inner.db;
        let timeout = timeout
            .or(self.inner.options.timeout)
            .or(db.options().timeout)
            .or(db.client().options().timeout);
        runtime::start_deadline(timeout)
    }

    /// Makes sure the indexes exist before the bucket's first write (see `indexes.rs`).
    pub(crate) async fn ensure_indexes(&self, deadline: Deadline) -> Result<()> {
        if self.inner.indexes_checked.load(Ordering::Acquire) {
            return Ok(());
        }
        indexes::ensure(self, deadline).await?;
        self.inner.indexes_checked.store(true, Ordering::Release);
        Ok(())
    }

    /// Makes the next write check the indexes again (after the bucket was dropped).
    fn forget_indexes(&self) {
        self.inner.indexes_checked.store(false, Ordering::Release);
    }

    /// Deletes the chunks of the upload `id` that never became a file: only when no files
    /// document has that id (otherwise the chunks belong to a stored file, the upload's own
    /// if its close succeeded after all, or another file's with the same id).
    pub(crate) async fn delete_orphan_chunks(&self, id: &Bson, deadline: Deadline) -> Result<()> {
        let stored = within!(
            self.files_raw()
                .find_one(doc! { "_id": id.clone() })
                .projection(doc! { "_id": 1 })
                .selection_criteria(SelectionCriteria::ReadPreference(
                    crate::options::ReadPreference::Primary
                )),
            deadline
        )
        .await?;
        if stored.is_some() {
            return Err(Error::invalid_argument(format!(
                "a files document with id {id} exists (the upload completed, or the id is \
                 another file's): its chunks were kept"
            )));
        }
        within!(
            self.chunks().delete_many(doc! { "files_id": id.clone() }),
            deadline
        )
        .await?;
        Ok(())
    }

    /// The files collection document with `_id: id`.
    async fn file_by_id(&self, id: &Bson, deadline: Deadline) -> Result<FilesCollectionDocument> {
        within!(self.files().find_one(doc! { "_id": id.clone() }), deadline)
            .await?
            .ok_or_else(|| not_found(GridFsFileIdentifier::Id(id.clone())))
    }

    /// Revision `revision` of the files named `filename` (0 the oldest, -1 the newest).
    async fn file_by_name(
        &self,
        filename: &str,
        revision: i32,
        deadline: Deadline,
    ) -> Result<FilesCollectionDocument> {
        let (order, skip) = if revision >= 0 {
            (1, i64::from(revision))
        } else {
            (-1, -(i64::from(revision) + 1))
        };
        let found = within!(
            self.files()
                .find_one(doc! { "filename": filename })
                .sort(doc! { "uploadDate": order })
                .skip(skip.unsigned_abs()),
            deadline
        )
        .await?;
        if let Some(file) = found {
            return Ok(file);
        }
        let any = within!(
            self.files_raw()
                .find_one(doc! { "filename": filename })
                .projection(doc! { "_id": 1 }),
            deadline
        )
        .await?;
        Err(match any {
            Some(_) => Error::new(ErrorKind::GridFs(GridFsErrorKind::RevisionNotFound {
                revision,
            })),
            None => not_found(GridFsFileIdentifier::Filename(filename.to_string())),
        })
    }
}

/// A `FileNotFound` error.
fn not_found(identifier: GridFsFileIdentifier) -> Error {
    Error::new(ErrorKind::GridFs(GridFsErrorKind::FileNotFound {
        identifier,
    }))
}

/// A GridFS error of `kind`.
fn gridfs_error(kind: GridFsErrorKind) -> Error {
    Error::new(ErrorKind::GridFs(kind))
}

/// `deadline` when it sets a limit, for every command of the GridFS operation (or of a
/// stream's whole life) to share; `None` when it sets none (each command then follows its
/// collection's timeout).
///
/// # Errors
/// A timeout error once the deadline has passed: the next command is not sent.
fn limit_of(deadline: Deadline) -> Result<Option<Deadline>> {
    let Some(left) = deadline.remaining(runtime::now()) else {
        return Ok(None);
    };
    if left.is_zero() {
        return Err(Error::timeout(
            "GridFS operation: timeoutMS expired before the next command",
        ));
    }
    Ok(Some(deadline))
}
