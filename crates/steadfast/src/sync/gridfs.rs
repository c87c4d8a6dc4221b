//! Blocking GridFS: [`GridFsBucket`] and its streams, which implement `std::io::Write` and
//! `std::io::Read` over the async streams' `futures_io` ones.

use std::future::poll_fn;
use std::io::{self, Read, Write};
use std::ops::Deref;
use std::pin::Pin;

use bson::Bson;
use futures_io::{AsyncRead, AsyncWrite};

use crate::error::Result;

use super::runtime::{self, InRuntime};

/// A blocking handle to a GridFS bucket (see [`crate::gridfs::GridFsBucket`]), from
/// [`Database::gridfs_bucket`](super::Database::gridfs_bucket). Dereferences to the async
/// bucket, whose actions it shares: `bucket.open_upload_stream("name").run()?` gives a
/// blocking [`GridFsUploadStream`], `bucket.find(filter).run()?` a blocking
/// [`Cursor`](super::Cursor).
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
