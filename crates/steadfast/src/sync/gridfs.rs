//! Blocking GridFS: [`GridFsBucket`] and its streams, which implement `std::io::Write` and
//! `std::io::Read` over the async streams' `futures_io` ones.

use std::future::poll_fn;
use std::io::{self, Read, Write};
use std::ops::Deref;
use std::pin::Pin;

use bson::{Bson, Document};
use futures_io::{AsyncRead, AsyncWrite};

use crate::action::gridfs::{
    Delete, DeleteByName, Drop, Find, FindOne, OpenDownloadStream, OpenDownloadStreamByName,
    OpenUploadStream, Rename, RenameByName,
};
use crate::error::Result;
use crate::options::{ReadConcern, SelectionCriteria, WriteConcern};

/// A stored file's document in the bucket's files collection (the async API's own type).
pub use crate::gridfs::FilesCollectionDocument;

use super::runtime::{self, InRuntime};

/// A blocking handle to a GridFS bucket (see [`crate::gridfs::GridFsBucket`]), from
/// [`Database::gridfs_bucket`](super::Database::gridfs_bucket); cheap to clone. Its methods
/// build the async bucket's actions, which `.run()` finishes:
/// `bucket.open_upload_stream("name").run()?` gives a blocking [`GridFsUploadStream`],
/// `bucket.find(filter).run()?` a blocking [`Cursor`](super::Cursor).
#[derive(Clone, Debug)]
pub struct GridFsBucket {
    inner: InRuntime<crate::gridfs::GridFsBucket>,
}

impl From<crate::gridfs::GridFsBucket> for GridFsBucket {
    fn from(bucket: crate::gridfs::GridFsBucket) -> Self {
        GridFsBucket {
            inner: InRuntime::new(bucket),
        }
    }
}

impl Deref for GridFsBucket {
    type Target = crate::gridfs::GridFsBucket;

    fn deref(&self) -> &crate::gridfs::GridFsBucket {
        &self.inner
    }
}

impl GridFsBucket {
    /// The read concern of the bucket's reads (`None`: the server's default).
    pub fn read_concern(&self) -> Option<&ReadConcern> {
        self.inner.read_concern()
    }

    /// The write concern of the bucket's writes (`None`: the server's default).
    pub fn write_concern(&self) -> Option<&WriteConcern> {
        self.inner.write_concern()
    }

    /// How the bucket's reads pick a server (`None`: the client's read preference).
    pub fn selection_criteria(&self) -> Option<&SelectionCriteria> {
        self.inner.selection_criteria()
    }

    /// Starts uploading a file named `filename`; `.run()` returns a
    /// [`GridFsUploadStream`] to write it to (see
    /// [`crate::gridfs::GridFsBucket::open_upload_stream`]).
    pub fn open_upload_stream(&self, filename: impl AsRef<str>) -> OpenUploadStream<'_> {
        self.inner.open_upload_stream(filename)
    }

    /// Opens the file whose id is `id` for reading; `.run()` returns a
    /// [`GridFsDownloadStream`].
    pub fn open_download_stream(&self, id: Bson) -> OpenDownloadStream<'_> {
        self.inner.open_download_stream(id)
    }

    /// Opens a revision of the file named `filename` (the latest unless `.revision(..)`
    /// says otherwise) for reading; `.run()` returns a [`GridFsDownloadStream`].
    pub fn open_download_stream_by_name(
        &self,
        filename: impl Into<String>,
    ) -> OpenDownloadStreamByName<'_> {
        self.inner.open_download_stream_by_name(filename)
    }

    /// Finds the files documents matching `filter`; `.run()` returns a blocking
    /// [`Cursor`](super::Cursor) of [`FilesCollectionDocument`]s.
    pub fn find(&self, filter: Document) -> Find<'_> {
        self.inner.find(filter)
    }

    /// Finds the first files document matching `filter`; `.run()` returns it, or `None`.
    pub fn find_one(&self, filter: Document) -> FindOne<'_> {
        self.inner.find_one(filter)
    }

    /// Deletes the file whose id is `id`, its files document and its chunks (see
    /// [`crate::gridfs::GridFsBucket::delete`]).
    pub fn delete(&self, id: Bson) -> Delete<'_> {
        self.inner.delete(id)
    }

    /// Deletes every revision of the file named `filename` (see
    /// [`crate::gridfs::GridFsBucket::delete_by_name`]).
    pub fn delete_by_name(&self, filename: impl Into<String>) -> DeleteByName<'_> {
        self.inner.delete_by_name(filename)
    }

    /// Renames the file whose id is `id` to `new_filename`.
    pub fn rename(&self, id: Bson, new_filename: impl Into<String>) -> Rename<'_> {
        self.inner.rename(id, new_filename)
    }

    /// Renames every revision of the file named `filename` to `new_filename`.
    pub fn rename_by_name(
        &self,
        filename: impl Into<String>,
        new_filename: impl Into<String>,
    ) -> RenameByName<'_> {
        self.inner.rename_by_name(filename, new_filename)
    }

    /// Drops the bucket's files and chunks collections.
    pub fn drop(&self) -> Drop<'_> {
        crate::gridfs::GridFsBucket::drop(&self.inner)
    }
}

/// Blocks on an I/O future; the refusal inside an async runtime becomes an `io::Error` whose
/// inner error is steadfast's.
fn block_on_io<T>(future: impl Future<Output = io::Result<T>>) -> io::Result<T> {
    runtime::block_on(async { Ok(future.await) })
        .unwrap_or_else(|refused| Err(io::Error::other(refused)))
}

/// A blocking upload stream (see [`crate::gridfs::GridFsUploadStream`]): `write` buffers and
/// sends full chunks, [`close`](GridFsUploadStream::close) sends the last chunk and the files
/// document. A stream dropped without `close` is abandoned: its chunks are deleted in the
/// background, as the async stream's are.
#[derive(Debug)]
pub struct GridFsUploadStream {
    inner: InRuntime<crate::gridfs::GridFsUploadStream>,
}

impl From<crate::gridfs::GridFsUploadStream> for GridFsUploadStream {
    fn from(stream: crate::gridfs::GridFsUploadStream) -> Self {
        GridFsUploadStream {
            inner: InRuntime::new(stream),
        }
    }
}

impl GridFsUploadStream {
    /// The id of the file being uploaded.
    pub fn id(&self) -> &Bson {
        self.inner.id()
    }

    /// Sends what is buffered and the files document, completing the upload.
    ///
    /// # Errors
    /// The failed write (its inner error is steadfast's `Error`), or `UploadStreamClosed`
    /// after an abort; the refusal inside an async runtime.
    pub fn close(&mut self) -> io::Result<()> {
        let stream = &mut *self.inner;
        block_on_io(poll_fn(|cx| Pin::new(&mut *stream).poll_close(cx)))
    }

    /// Abandons the upload and deletes the chunks already sent.
    ///
    /// # Errors
    /// As [`crate::gridfs::GridFsUploadStream::abort`]; `InvalidArgument` inside an async
    /// runtime.
    pub fn abort(&mut self) -> Result<()> {
        runtime::block_on(self.inner.abort())
    }
}

impl Write for GridFsUploadStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let stream = &mut *self.inner;
        block_on_io(poll_fn(|cx| Pin::new(&mut *stream).poll_write(cx, buf)))
    }

    fn flush(&mut self) -> io::Result<()> {
        let stream = &mut *self.inner;
        block_on_io(poll_fn(|cx| Pin::new(&mut *stream).poll_flush(cx)))
    }
}

/// A blocking download stream (see [`crate::gridfs::GridFsDownloadStream`]): `read` returns
/// the file's bytes, fetching chunks as it goes.
#[derive(Debug)]
pub struct GridFsDownloadStream {
    inner: InRuntime<crate::gridfs::GridFsDownloadStream>,
}

impl From<crate::gridfs::GridFsDownloadStream> for GridFsDownloadStream {
    fn from(stream: crate::gridfs::GridFsDownloadStream) -> Self {
        GridFsDownloadStream {
            inner: InRuntime::new(stream),
        }
    }
}

impl Read for GridFsDownloadStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let stream = &mut *self.inner;
        block_on_io(poll_fn(|cx| Pin::new(&mut *stream).poll_read(cx, buf)))
    }
}
