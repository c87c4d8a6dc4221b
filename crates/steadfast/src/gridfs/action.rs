//! The actions of a [`GridFsBucket`]: builders that run when awaited (`IntoFuture`), like
//! every steadfast action. Each takes `.timeout(..)` (steadfast's addition): the operation's
//! timeoutMS, over the bucket's; for a stream, the limit of its whole life.

use std::future::IntoFuture;
use std::time::Duration;

use bson::{Bson, Document, doc};
use futures_util::future::BoxFuture;
use steadfast_core::Deadline;

use super::{
    FilesCollectionDocument, GridFsBucket, GridFsDownloadByNameOptions, GridFsDownloadStream,
    GridFsFileIdentifier, GridFsFindOneOptions, GridFsFindOptions, GridFsUploadOptions,
    GridFsUploadStream, not_found,
};
use crate::cursor::Cursor;
use crate::error::{Error, Result};
use crate::options::{FindOneOptions, FindOptions};
use crate::runtime;

/// Defines an action struct over a bucket with the given extra fields, its `timeout` setter,
/// and its `IntoFuture`: when first polled, the action starts its deadline (its own timeout,
/// else the bucket's) and runs `execute(self, deadline)`, which each action defines.
macro_rules! gridfs_action {
    ($(#[$meta:meta])* $name:ident { $($field:ident : $ty:ty),* $(,)? } => $output:ty) => {
        $(#[$meta])*
        #[must_use = "an action does nothing until awaited"]
        pub struct $name<'a> {
            bucket: &'a GridFsBucket,
            timeout: Option<Duration>,
            $($field: $ty,)*
        }

        impl $name<'_> {
            /// Sets timeoutMS for this operation (a stream's whole life), over the bucket's
            /// (`Duration::ZERO`: no limit).
            pub fn timeout(mut self, timeout: Duration) -> Self {
                self.timeout = Some(timeout);
                self
            }
        }

        impl<'a> IntoFuture for $name<'a> {
            type Output = Result<$output>;
            type IntoFuture = BoxFuture<'a, Self::Output>;

            fn into_future(self) -> Self::IntoFuture {
                Box::pin(async move {
                    let deadline = self.bucket.deadline(self.timeout);
                    self.execute(deadline).await
                })
            }
        }
    };
}

/// `with_options` and the option setters filling `self.options.<field>`.
macro_rules! gridfs_setters {
    ($options:ident; $($field:ident : $ty:ty),* $(,)?) => {
        /// Replaces every option at once.
        pub fn with_options(mut self, options: impl Into<Option<$options>>) -> Self {
            self.options = options.into().unwrap_or_default();
            self
        }

        option_setters!($options; $($field: $ty),*);
    };
}

impl GridFsBucket {
    /// Opens a stream that uploads a new file named `filename`: write its bytes, then close
    /// the stream. Nothing is sent until the first chunk is full (or the close). Before the
    /// bucket's first write, the indexes are created if the files collection is empty.
    ///
    /// # Errors
    /// `InvalidArgument` for a chunk size of 0 or over 2^31 - 1 (when awaited); the stream's
    /// writes and close report the server's errors.
    pub fn open_upload_stream(&self, filename: impl AsRef<str>) -> OpenUploadStream<'_> {
        OpenUploadStream {
            bucket: self,
            timeout: None,
            filename: filename.as_ref().to_string(),
            id: None,
            options: GridFsUploadOptions::default(),
        }
    }

    /// Opens a stream that reads the file with `_id: id`.
    ///
    /// # Errors
    /// `FileNotFound` when no files document has the id; a corrupt files document
    /// (`CorruptFile`); the server's errors.
    pub fn open_download_stream(&self, id: Bson) -> OpenDownloadStream<'_> {
        OpenDownloadStream {
            bucket: self,
            timeout: None,
            id,
        }
    }

    /// Opens a stream that reads a revision of the files named `filename` (the newest
    /// unless `.revision(..)` says otherwise).
    ///
    /// # Errors
    /// `FileNotFound` when no file has the name, `RevisionNotFound` when the revision does not
    /// exist; as [`open_download_stream`](Self::open_download_stream) otherwise.
    pub fn open_download_stream_by_name(
        &self,
        filename: impl Into<String>,
    ) -> OpenDownloadStreamByName<'_> {
        OpenDownloadStreamByName {
            bucket: self,
            timeout: None,
            filename: filename.into(),
            options: GridFsDownloadByNameOptions::default(),
        }
    }

    /// Finds files documents matching `filter`; awaiting returns a cursor.
    ///
    /// # Errors
    /// The server's errors.
    pub fn find(&self, filter: Document) -> Find<'_> {
        Find {
            bucket: self,
            timeout: None,
            filter,
            options: GridFsFindOptions::default(),
        }
    }

    /// Finds the first files document matching `filter`.
    ///
    /// # Errors
    /// The server's errors.
    pub fn find_one(&self, filter: Document) -> FindOne<'_> {
        FindOne {
            bucket: self,
            timeout: None,
            filter,
            options: GridFsFindOneOptions::default(),
        }
    }

    /// Deletes the file with `_id: id`: its files document first (so that it stops being
    /// visible), then its chunks.
    ///
    /// # Errors
    /// `FileNotFound` when no files document had the id (its orphan chunks, if any, are
    /// deleted all the same); the server's errors.
    pub fn delete(&self, id: Bson) -> Delete<'_> {
        Delete {
            bucket: self,
            timeout: None,
            id,
        }
    }

    /// Deletes every revision of the files named `filename`, files documents first.
    ///
    /// # Errors
    /// `FileNotFound` when no file has the name; the server's errors.
    pub fn delete_by_name(&self, filename: impl Into<String>) -> DeleteByName<'_> {
        DeleteByName {
            bucket: self,
            timeout: None,
            filename: filename.into(),
        }
    }

    /// Renames the file with `_id: id`.
    ///
    /// # Errors
    /// `FileNotFound` when no files document has the id; the server's errors.
    pub fn rename(&self, id: Bson, new_filename: impl Into<String>) -> Rename<'_> {
        Rename {
            bucket: self,
            timeout: None,
            id,
            new_filename: new_filename.into(),
        }
    }

    /// Renames every revision of the files named `filename`.
    ///
    /// # Errors
    /// `FileNotFound` when no file has the name; the server's errors.
    pub fn rename_by_name(
        &self,
        filename: impl Into<String>,
        new_filename: impl Into<String>,
    ) -> RenameByName<'_> {
        RenameByName {
            bucket: self,
            timeout: None,
            filename: filename.into(),
            new_filename: new_filename.into(),
        }
    }

    /// Drops the bucket's files and chunks collections (files first). The next upload
    /// creates the indexes again.
    ///
    /// # Errors
    /// The server's errors.
    pub fn drop(&self) -> Drop<'_> {
        Drop {
            bucket: self,
            timeout: None,
        }
    }
}

gridfs_action! {
    /// The action of [`GridFsBucket::open_upload_stream`].
    OpenUploadStream { filename: String, id: Option<Bson>, options: GridFsUploadOptions }
        => GridFsUploadStream
}

impl OpenUploadStream<'_> {
    /// Sets the new file's `_id` (default: a new `ObjectId`). It must be unique in the bucket.
    pub fn id(mut self, id: Bson) -> Self {
        self.id = Some(id);
        self
    }

    gridfs_setters!(GridFsUploadOptions; chunk_size_bytes: u32, metadata: Document);

    async fn execute(self, deadline: Deadline) -> Result<GridFsUploadStream> {
        let chunk_size = self
            .options
            .chunk_size_bytes
            .unwrap_or_else(|| self.bucket.chunk_size_bytes());
        if chunk_size == 0 || i32::try_from(chunk_size).is_err() {
            return Err(Error::invalid_argument(format!(
                "GridFS chunk size {chunk_size}: it must be between 1 and 2^31 - 1"
            )));
        }
        let id = self
            .id
            .unwrap_or_else(|| Bson::ObjectId(runtime::object_id()));
        Ok(GridFsUploadStream::new(
            self.bucket.clone(),
            id,
            self.filename,
            chunk_size,
            self.options.metadata,
            deadline,
        ))
    }
}

gridfs_action! {
    /// The action of [`GridFsBucket::open_download_stream`].
    OpenDownloadStream { id: Bson } => GridFsDownloadStream
}

impl OpenDownloadStream<'_> {
    async fn execute(self, deadline: Deadline) -> Result<GridFsDownloadStream> {
        let file = self.bucket.file_by_id(&self.id, deadline).await?;
        GridFsDownloadStream::open(self.bucket, file, deadline).await
    }
}

gridfs_action! {
    /// The action of [`GridFsBucket::open_download_stream_by_name`].
    OpenDownloadStreamByName { filename: String, options: GridFsDownloadByNameOptions }
        => GridFsDownloadStream
}

impl OpenDownloadStreamByName<'_> {
    gridfs_setters!(GridFsDownloadByNameOptions; revision: i32);

    async fn execute(self, deadline: Deadline) -> Result<GridFsDownloadStream> {
        let revision = self.options.revision.unwrap_or(-1);
        let file = self
            .bucket
            .file_by_name(&self.filename, revision, deadline)
            .await?;
        GridFsDownloadStream::open(self.bucket, file, deadline).await
    }
}

gridfs_action! {
    /// The action of [`GridFsBucket::find`].
    Find { filter: Document, options: GridFsFindOptions }
        => Cursor<FilesCollectionDocument>
}

impl Find<'_> {
    gridfs_setters!(GridFsFindOptions;
        allow_disk_use: bool,
        batch_size: u32,
        limit: i64,
        max_time: Duration,
        no_cursor_timeout: bool,
        skip: u64,
        sort: Document,
    );

    async fn execute(self, deadline: Deadline) -> Result<Cursor<FilesCollectionDocument>> {
        let options = FindOptions::from(self.options);
        within!(
            self.bucket.files().find(self.filter).with_options(options),
            deadline
        )
        .await
    }
}

gridfs_action! {
    /// The action of [`GridFsBucket::find_one`].
    FindOne { filter: Document, options: GridFsFindOneOptions }
        => Option<FilesCollectionDocument>
}

impl FindOne<'_> {
    gridfs_setters!(GridFsFindOneOptions; max_time: Duration, skip: u64, sort: Document);

    async fn execute(self, deadline: Deadline) -> Result<Option<FilesCollectionDocument>> {
        let options = FindOneOptions::from(self.options);
        within!(
            self.bucket
                .files()
                .find_one(self.filter)
                .with_options(options),
            deadline
        )
        .await
    }
}

gridfs_action! {
    /// The action of [`GridFsBucket::delete`].
    Delete { id: Bson } => ()
}

impl Delete<'_> {
    async fn execute(self, deadline: Deadline) -> Result<()> {
        let bucket = self.bucket;
        let filter = doc! { "_id": self.id.clone() };
        let files = within!(bucket.files().delete_one(filter), deadline).await?;
        let chunks = doc! { "files_id": self.id.clone() };
        within!(bucket.chunks().delete_many(chunks), deadline).await?;
        if files.deleted_count == 0 {
            return Err(not_found(GridFsFileIdentifier::Id(self.id)));
        }
        Ok(())
    }
}

gridfs_action! {
    /// The action of [`GridFsBucket::delete_by_name`].
    DeleteByName { filename: String } => ()
}

impl DeleteByName<'_> {
    async fn execute(self, deadline: Deadline) -> Result<()> {
        let bucket = self.bucket;
        let mut cursor = within!(
            bucket
                .files_raw()
                .find(doc! { "filename": self.filename.as_str() })
                .projection(doc! { "_id": 1 }),
            deadline
        )
        .await?;
        let (mut ids, mut found) = (Vec::new(), false);
        while cursor.advance().await? {
            found = true;
            if let Some(id) = cursor
                .current()
                .and_then(|raw| raw.get("_id").ok().flatten())
            {
                ids.push(Bson::try_from(id).map_err(|e| {
                    Error::invalid_argument(format!("GridFS: a files document _id: {e}"))
                })?);
            }
            if ids.len() >= DELETE_BATCH {
                delete_files(bucket, std::mem::take(&mut ids), deadline).await?;
            }
        }
        if !found {
            return Err(not_found(GridFsFileIdentifier::Filename(self.filename)));
        }
        delete_files(bucket, ids, deadline).await
    }
}

/// How many files `delete_by_name` deletes per pair of commands, so that its memory and its
/// commands stay small however many revisions a name has.
const DELETE_BATCH: usize = 1000;

/// Deletes the files documents with the given ids, then their chunks.
async fn delete_files(bucket: &GridFsBucket, ids: Vec<Bson>, deadline: Deadline) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let files = doc! { "_id": { "$in": ids.clone() } };
    within!(bucket.files().delete_many(files), deadline).await?;
    let chunks = doc! { "files_id": { "$in": ids } };
    within!(bucket.chunks().delete_many(chunks), deadline).await?;
    Ok(())
}

gridfs_action! {
    /// The action of [`GridFsBucket::rename`].
    Rename { id: Bson, new_filename: String } => ()
}

impl Rename<'_> {
    async fn execute(self, deadline: Deadline) -> Result<()> {
        let file = GridFsFileIdentifier::Id(self.id);
        rename_files(self.bucket, file, &self.new_filename, deadline).await
    }
}

gridfs_action! {
    /// The action of [`GridFsBucket::rename_by_name`].
    RenameByName { filename: String, new_filename: String } => ()
}

impl RenameByName<'_> {
    async fn execute(self, deadline: Deadline) -> Result<()> {
        let file = GridFsFileIdentifier::Filename(self.filename);
        rename_files(self.bucket, file, &self.new_filename, deadline).await
    }
}

/// Sets `new_filename` on the files documents `file` names: the one with the id, or every
/// revision of the name.
///
/// # Errors
/// `FileNotFound` when no files document matched; the server's errors.
async fn rename_files(
    bucket: &GridFsBucket,
    file: GridFsFileIdentifier,
    new_filename: &str,
    deadline: Deadline,
) -> Result<()> {
    let update = doc! { "$set": { "filename": new_filename } };
    let files = bucket.files();
    let result = match &file {
        GridFsFileIdentifier::Id(id) => {
            within!(
                files.update_one(doc! { "_id": id.clone() }, update),
                deadline
            )
            .await?
        }
        GridFsFileIdentifier::Filename(name) => {
            let filter = doc! { "filename": name.as_str() };
            within!(files.update_many(filter, update), deadline).await?
        }
    };
    if result.matched_count == 0 {
        return Err(not_found(file));
    }
    Ok(())
}

gridfs_action! {
    /// The action of [`GridFsBucket::drop`].
    Drop {} => ()
}

impl Drop<'_> {
    async fn execute(self, deadline: Deadline) -> Result<()> {
        within!(self.bucket.files().drop(), deadline).await?;
        within!(self.bucket.chunks().drop(), deadline).await?;
        self.bucket.forget_indexes();
        Ok(())
    }
}
