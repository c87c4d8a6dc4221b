//! The upload stream: bytes written are cut into chunks, each inserted once full; closing
//! inserts the last chunk and then the files collection document, which makes the file exist.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bson::{Bson, Document, doc, spec::BinarySubtype};
use futures_util::future::BoxFuture;
use steadfast_core::Deadline;

use super::{GridFsBucket, gridfs_error};
use crate::error::{Error, GridFsErrorKind, Result};
use crate::runtime;

/// An upload in progress, a futures-io [`AsyncWrite`](futures_io::AsyncWrite) (from
/// [`GridFsBucket::open_upload_stream`]). Write the file's bytes, then `close` it
/// (`AsyncWriteExt::close`): the file exists once `close` returns `Ok`. [`abort`](Self::abort)
/// gives up and deletes the chunks written so far; dropping the stream unclosed does the same
/// in the background.
///
/// At most one chunk is buffered: a write that fills a chunk starts its insert, and the next
/// write (or flush, or close) first waits for that insert to finish. Errors surface as
/// `std::io::Error`s whose inner error is the driver's [`Error`]
/// (`io_error.into_inner()` then `downcast::<steadfast::Error>()`).
///
/// # Cancel safety
/// Dropping a pending `write`/`close` future keeps the stream consistent: the insert in flight
/// stays owned by the stream and is awaited by the next call (or by the background cleanup
/// when the stream is dropped).
pub struct GridFsUploadStream {
    bucket: GridFsBucket,
    id: Bson,
    filename: String,
    chunk_size: u32,
    metadata: Option<Document>,
    deadline: Deadline,
    /// The chunk being filled (at most `chunk_size` bytes).
    buffer: Vec<u8>,
    /// Bytes accepted so far.
    length: u64,
    /// The number of the next chunk (the count of chunks inserted or in flight).
    next_n: u32,
    state: State,
}

enum State {
    /// Accepting bytes; `Some` while a full chunk's insert is in flight.
    Open(Option<BoxFuture<'static, Result<()>>>),
    /// `close` is inserting the last chunk and the files document.
    Closing(BoxFuture<'static, Result<()>>),
    /// Closed: the file exists.
    Closed,
    /// A write failed (if it was the close's, the file may exist: cleanups check).
    Failed,
    /// Aborted: no more writes.
    Aborted,
}

impl GridFsUploadStream {
    pub(super) fn new(
        bucket: GridFsBucket,
        id: Bson,
        filename: String,
        chunk_size: u32,
        metadata: Option<Document>,
        deadline: Deadline,
    ) -> Self {
        GridFsUploadStream {
            bucket,
            id,
            filename,
            chunk_size,
            metadata,
            deadline,
            buffer: Vec::new(),
            length: 0,
            next_n: 0,
            state: State::Open(None),
        }
    }

    /// The id of the file being uploaded (its files document's `_id`).
    pub fn id(&self) -> &Bson {
        &self.id
    }

    /// Gives the upload up: waits for the chunk insert in flight, then deletes the chunks
    /// written so far (unless a files document with this id exists: see the
    /// [module docs](super)). Later writes fail with `UploadStreamClosed`.
    ///
    /// # Errors
    /// `UploadStreamClosed` after a successful close or a previous abort; `AbortError` when
    /// the chunks could not be deleted.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropping the future midway may leave chunks behind (as a failed
    /// upload does); the stream counts as aborted.
    pub async fn abort(&mut self) -> Result<()> {
        let in_flight = match std::mem::replace(&mut self.state, State::Aborted) {
            State::Closed => {
                self.state = State::Closed;
                return Err(gridfs_error(GridFsErrorKind::UploadStreamClosed));
            }
            State::Aborted => return Err(gridfs_error(GridFsErrorKind::UploadStreamClosed)),
            State::Open(in_flight) => in_flight,
            State::Closing(closing) => Some(closing),
            State::Failed => None,
        };
        self.buffer = Vec::new();
        if let Some(write) = in_flight {
            // Settled first, so that the delete sees the chunk it may have written.
            let _ = write.await;
        }
        if self.next_n == 0 {
            // No chunk was ever sent.
            return Ok(());
        }
        self.bucket
            .delete_orphan_chunks(&self.id, self.deadline)
            .await
            .map_err(|delete_error| {
                gridfs_error(GridFsErrorKind::AbortError {
                    original_error: None,
                    delete_error,
                })
            })
    }

    /// Drives the chunk insert in flight, if any, to its end.
    fn poll_in_flight(&mut self, cx: &mut Context<'_>) -> Poll<Result<()>> {
        if let State::Open(Some(write)) = &mut self.state {
            let result = ready!(write.as_mut().poll(cx));
            self.state = match result {
                Ok(()) => State::Open(None),
                Err(_) => State::Failed,
            };
            result?;
        }
        Poll::Ready(Ok(()))
    }

    /// Starts inserting the full buffer as the next chunk.
    fn start_chunk(&mut self) -> Result<()> {
        let data = std::mem::take(&mut self.buffer);
        let n = self.take_chunk_number()?;
        let (bucket, id, deadline) = (self.bucket.clone(), self.id.clone(), self.deadline);
        self.state = State::Open(Some(Box::pin(async move {
            bucket.ensure_indexes(deadline).await?;
            insert_chunk(&bucket, &id, n, data, deadline).await
        })));
        Ok(())
    }

    /// The next chunk number, counted.
    fn take_chunk_number(&mut self) -> Result<u32> {
        let n = self.next_n;
        if i32::try_from(n).is_err() {
            return Err(Error::invalid_argument(
                "GridFS upload: more chunks than a 32-bit chunk number can count",
            ));
        }
        self.next_n = n.saturating_add(1);
        Ok(n)
    }

    /// Starts the close: the last (partial) chunk, then the files document.
    fn start_close(&mut self) -> Result<()> {
        let data = std::mem::take(&mut self.buffer);
        let last_n = if data.is_empty() {
            None
        } else {
            Some(self.take_chunk_number()?)
        };
        let length = i64::try_from(self.length)
            .map_err(|_| Error::invalid_argument("GridFS upload: length over 2^63 bytes"))?;
        let chunk_size = i32::try_from(self.chunk_size)
            .map_err(|_| Error::invalid_argument("GridFS upload: chunk size over 2^31"))?;
        let mut file = doc! {
            "_id": self.id.clone(),
            "length": length,
            "chunkSize": chunk_size,
            "uploadDate": runtime::bson_now(),
            "filename": self.filename.clone(),
        };
        if let Some(metadata) = self.metadata.take() {
            file.insert("metadata", metadata);
        }
        let (bucket, id, deadline) = (self.bucket.clone(), self.id.clone(), self.deadline);
        self.state = State::Closing(Box::pin(async move {
            bucket.ensure_indexes(deadline).await?;
            if let Some(n) = last_n {
                insert_chunk(&bucket, &id, n, data, deadline).await?;
            }
            within!(bucket.files_raw().insert_one(file), deadline).await?;
            Ok(())
        }));
        Ok(())
    }
}

/// Inserts chunk `n` of the file `id`.
async fn insert_chunk(
    bucket: &GridFsBucket,
    id: &Bson,
    n: u32,
    data: Vec<u8>,
    deadline: Deadline,
) -> Result<()> {
    let n = i32::try_from(n)
        .map_err(|_| Error::invalid_argument("GridFS upload: chunk number over 2^31"))?;
    let chunk = doc! {
        "_id": runtime::object_id(),
        "files_id": id.clone(),
        "n": n,
        "data": Bson::Binary(bson::Binary { subtype: BinarySubtype::Generic, bytes: data }),
    };
    within!(bucket.chunks().insert_one(chunk), deadline).await?;
    Ok(())
}

/// A driver error as the `std::io::Error` futures-io streams return.
pub(super) fn io_error(error: Error) -> std::io::Error {
    std::io::Error::other(error)
}

/// The error of a write to a stream that no longer accepts any.
fn closed() -> std::io::Error {
    io_error(gridfs_error(GridFsErrorKind::UploadStreamClosed))
}

impl futures_io::AsyncWrite for GridFsUploadStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_in_flight(cx)).map_err(io_error)?;
        if !matches!(this.state, State::Open(None)) {
            return Poll::Ready(Err(closed()));
        }
        let chunk_size = usize::try_from(this.chunk_size).unwrap_or(usize::MAX);
        let room = chunk_size.saturating_sub(this.buffer.len());
        let taken = room.min(buf.len());
        let length = u64::try_from(taken)
            .ok()
            .and_then(|taken| this.length.checked_add(taken))
            .ok_or_else(|| io_error(Error::invalid_argument("GridFS upload: length overflow")))?;
        if this.buffer.capacity() == 0 {
            this.buffer.reserve_exact(chunk_size.min(16 * 1024 * 1024));
        }
        this.buffer.extend_from_slice(&buf[..taken]);
        this.length = length;
        if this.buffer.len() >= chunk_size {
            this.start_chunk().map_err(io_error)?;
        }
        Poll::Ready(Ok(taken))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_in_flight(cx)).map_err(io_error)?;
        match this.state {
            State::Open(_) | State::Closed => Poll::Ready(Ok(())),
            _ => Poll::Ready(Err(closed())),
        }
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_in_flight(cx)).map_err(io_error)?;
        if let State::Open(None) = this.state {
            if let Err(error) = this.start_close() {
                this.state = State::Failed;
                return Poll::Ready(Err(io_error(error)));
            }
        }
        match &mut this.state {
            State::Closing(closing) => {
                let result = ready!(closing.as_mut().poll(cx));
                this.state = match result {
                    Ok(()) => State::Closed,
                    Err(_) => State::Failed,
                };
                Poll::Ready(result.map_err(io_error))
            }
            State::Closed => Poll::Ready(Ok(())),
            _ => Poll::Ready(Err(closed())),
        }
    }
}

impl Drop for GridFsUploadStream {
    /// An upload dropped before it was closed (or after it failed) deletes its chunks in the
    /// background, best effort, after the insert in flight settles.
    fn drop(&mut self) {
        let in_flight = match std::mem::replace(&mut self.state, State::Aborted) {
            State::Closed | State::Aborted => return,
            State::Open(in_flight) => in_flight,
            State::Closing(closing) => Some(closing),
            State::Failed => None,
        };
        if in_flight.is_none() && self.next_n == 0 {
            return;
        }
        let bucket = self.bucket.clone();
        let id = self.id.clone();
        let deadline = bucket.deadline(None);
        let executor = std::sync::Arc::clone(bucket.files().client().executor());
        executor.spawn(async move {
            if let Some(write) = in_flight {
                let _ = write.await;
            }
            if let Err(error) = bucket.delete_orphan_chunks(&id, deadline).await {
                tracing::debug!(%error, "GridFS: could not delete a dropped upload's chunks");
            }
        });
    }
}

impl fmt::Debug for GridFsUploadStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Open(_) => "open",
            State::Closing(_) => "closing",
            State::Closed => "closed",
            State::Failed => "failed",
            State::Aborted => "aborted",
        };
        f.debug_struct("GridFsUploadStream")
            .field("id", &self.id)
            .field("filename", &self.filename)
            .field("chunk_size", &self.chunk_size)
            .field("length", &self.length)
            .field("state", &state)
            .finish()
    }
}
