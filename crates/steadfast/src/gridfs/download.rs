//! The download stream: reads a stored file's chunks in order through one cursor, checking
//! each (number and size) against the files document before handing its bytes out.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bson::{Document, RawBsonRef, RawDocument, doc};
use futures_util::future::BoxFuture;
use steadfast_core::Deadline;

use super::layout::{ChunkLayout, corrupt};
use super::upload::io_error;
use super::{FilesCollectionDocument, GridFsBucket, gridfs_error};
use crate::cursor::Cursor;
use crate::error::{Error, Result};

/// A stored file being read, a futures-io [`AsyncRead`](futures_io::AsyncRead) (from
/// [`GridFsBucket::open_download_stream`] or
/// [`GridFsBucket::open_download_stream_by_name`]). Each chunk is checked as it arrives: a
/// missing chunk, one of the wrong size or one past the last makes the read fail with a
/// GridFS error ([`MissingChunk`](crate::error::GridFsErrorKind::MissingChunk),
/// [`WrongSizeChunk`](crate::error::GridFsErrorKind::WrongSizeChunk),
/// [`WrongNumberOfChunks`](crate::error::GridFsErrorKind::WrongNumberOfChunks)) inside the
/// `std::io::Error`; a read that stops early does not see what lies beyond.
///
/// # Cancel safety
/// Dropping a pending `read` future is safe: the fetch in flight stays with the stream.
pub struct GridFsDownloadStream {
    file: FilesCollectionDocument,
    layout: ChunkLayout,
    /// The number of the next chunk expected.
    next_n: u32,
    /// The current chunk's bytes and how many were read.
    chunk: Vec<u8>,
    read: usize,
    fetch: Fetch,
}

type Advance = BoxFuture<'static, (Cursor<Document>, Result<bool>)>;

enum Fetch {
    /// Between chunks, holding the cursor.
    Idle(Cursor<Document>),
    /// Fetching the next chunk.
    Busy(Advance),
    /// Past the last chunk (or an empty file, whose chunks are never queried).
    Done,
    /// A read failed; later reads fail too.
    Failed,
}

impl GridFsDownloadStream {
    /// Opens the chunks cursor of `file` (none for an empty file).
    pub(super) async fn open(
        bucket: &GridFsBucket,
        file: FilesCollectionDocument,
        deadline: Deadline,
    ) -> Result<Self> {
        let layout = ChunkLayout::new(file.length, file.chunk_size_bytes).map_err(gridfs_error)?;
        let fetch = if layout.count() == 0 {
            Fetch::Done
        } else {
            let cursor = within!(
                bucket
                    .chunks()
                    .find(doc! { "files_id": file.id.clone() })
                    .sort(doc! { "n": 1 }),
                deadline
            )
            .await?;
            Fetch::Idle(cursor)
        };
        Ok(GridFsDownloadStream {
            file,
            layout,
            next_n: 0,
            chunk: Vec::new(),
            read: 0,
            fetch,
        })
    }

    /// The files collection document of the file being read.
    pub fn files_collection_document(&self) -> &FilesCollectionDocument {
        &self.file
    }

    /// Waits for the next chunk: `Ok(true)` once it is in `chunk`, `Ok(false)` at the end.
    fn poll_next_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Result<bool>> {
        loop {
            match std::mem::replace(&mut self.fetch, Fetch::Failed) {
                Fetch::Done => {
                    self.fetch = Fetch::Done;
                    return Poll::Ready(Ok(false));
                }
                Fetch::Failed => {
                    return Poll::Ready(Err(Error::invalid_argument(
                        "GridFS download: the stream failed earlier",
                    )));
                }
                Fetch::Idle(mut cursor) => {
                    self.fetch = Fetch::Busy(Box::pin(async move {
                        let more = cursor.advance().await;
                        (cursor, more)
                    }));
                }
                Fetch::Busy(mut advance) => {
                    let Poll::Ready((cursor, more)) = advance.as_mut().poll(cx) else {
                        self.fetch = Fetch::Busy(advance);
                        return Poll::Pending;
                    };
                    return Poll::Ready(self.take_chunk(cursor, more));
                }
            }
        }
    }

    /// Checks what the cursor advanced to and keeps its bytes.
    fn take_chunk(&mut self, cursor: Cursor<Document>, more: Result<bool>) -> Result<bool> {
        if !more? {
            if self.next_n < self.layout.count() {
                return Err(gridfs_error(crate::error::GridFsErrorKind::MissingChunk {
                    n: self.next_n,
                }));
            }
            self.fetch = Fetch::Done;
            return Ok(false);
        }
        let raw = cursor.current().ok_or_else(|| {
            Error::invalid_argument("GridFS download: the cursor advanced to no document")
        })?;
        let (n, data) = chunk_fields(raw)?;
        self.layout
            .check(self.next_n, n, data.len())
            .map_err(gridfs_error)?;
        self.chunk.clear();
        self.chunk.extend_from_slice(data);
        self.read = 0;
        self.next_n = self.next_n.saturating_add(1);
        self.fetch = Fetch::Idle(cursor);
        Ok(true)
    }
}

/// A chunk's `n` (an integer, or a double with an integral value as some drivers wrote it)
/// and its `data` bytes.
fn chunk_fields(raw: &RawDocument) -> Result<(Option<i64>, &[u8])> {
    let field = |name: &str| raw.get(name).ok().flatten();
    #[allow(
        clippy::cast_possible_truncation,
        reason = "checked integral and in range"
    )]
    let n = match field("n") {
        Some(RawBsonRef::Int32(n)) => Some(i64::from(n)),
        Some(RawBsonRef::Int64(n)) => Some(n),
        Some(RawBsonRef::Double(n)) if n.fract() == 0.0 && n.abs() < 2_147_483_648.0 => {
            Some(n as i64)
        }
        _ => None,
    };
    match field("data") {
        Some(RawBsonRef::Binary(binary)) => Ok((n, binary.bytes)),
        _ => Err(gridfs_error(corrupt("a chunk without binary `data`"))),
    }
}

impl futures_io::AsyncRead for GridFsDownloadStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        while this.read >= this.chunk.len() {
            if !ready!(this.poll_next_chunk(cx)).map_err(io_error)? {
                return Poll::Ready(Ok(0));
            }
        }
        let available = &this.chunk[this.read..];
        let count = available.len().min(buf.len());
        buf[..count].copy_from_slice(&available[..count]);
        this.read = this.read.saturating_add(count);
        Poll::Ready(Ok(count))
    }
}

impl fmt::Debug for GridFsDownloadStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GridFsDownloadStream")
            .field("id", &self.file.id)
            .field("length", &self.file.length)
            .field("next_chunk", &self.next_n)
            .finish()
    }
}
