//! Cursors that hand out the server's batches whole instead of one document at a time.
//!
//! `.batch()` on [`Find`](crate::action::Find), [`Aggregate`](crate::action::Aggregate),
//! [`ListCollections`](crate::action::ListCollections),
//! [`ListIndexes`](crate::action::ListIndexes) and
//! [`RunCursorCommand`](crate::action::RunCursorCommand) opens the same cursor as awaiting the
//! action does (the same `getMore`s, timeouts, load-balanced pinning, and `killCursors` when
//! it is dropped early), but each item of its stream is a [`RawBatch`]: one server reply,
//! whose documents are read in place as [`RawDocument`]s, with nothing deserialised.
//!
//! ```no_run
//! # async fn demo(coll: steadfast::Collection<bson::Document>) -> steadfast::Result<()> {
//! use futures_util::StreamExt;
//!
//! let mut batches = coll.find(bson::doc! {}).batch_size(500).batch().await?;
//! let mut total = 0;
//! while let Some(batch) = batches.next().await {
//!     for document in batch?.doc_slices()? {
//!         let _document = document?;
//!         total += 1;
//!     }
//! }
//! println!("{total} documents");
//! # Ok(())
//! # }
//! ```

use std::pin::Pin;
use std::task::{Context, Poll};

use bson::{RawArray, RawBsonRef, RawDocument, RawDocumentBuf};
use futures_core::Stream;
use futures_util::future::BoxFuture;

use crate::cursor::{Cursor, SessionCursor};
use crate::error::{Error, Result};
use crate::session::ClientSession;

/// One batch of a cursor: the server's whole reply to the command that opened the cursor or to
/// a `getMore`, its documents in `cursor.firstBatch` or `cursor.nextBatch`.
#[derive(Clone, Debug)]
pub struct RawBatch {
    reply: RawDocumentBuf,
}

impl RawBatch {
    pub(crate) fn new(reply: RawDocumentBuf) -> Self {
        RawBatch { reply }
    }

    /// The batch's documents, borrowed from the reply: `cursor.firstBatch` (the opening
    /// command's batch) or `cursor.nextBatch` (a `getMore`'s). Each entry is a document; read
    /// it with [`RawBsonRef::as_document`] or iterate [`RawArray`] directly.
    ///
    /// # Errors
    /// `InvalidResponse` when the reply has no `cursor` document, or it has neither batch
    /// array.
    pub fn doc_slices(&self) -> Result<&RawArray> {
        let cursor = self
            .reply
            .get_document("cursor")
            .map_err(|_| Error::protocol("the reply has no `cursor` document"))?;
        for name in ["firstBatch", "nextBatch"] {
            match cursor.get(name) {
                Ok(Some(RawBsonRef::Array(batch))) => return Ok(batch),
                Ok(None) => {}
                Ok(Some(_)) | Err(_) => {
                    return Err(Error::protocol(format!("`cursor.{name}` is not an array")));
                }
            }
        }
        Err(Error::protocol(
            "the cursor has neither `firstBatch` nor `nextBatch`",
        ))
    }

    /// The server's whole reply: the `cursor` document (`id`, `ns`, the batch) and the
    /// reply's other fields (`ok`, `$clusterTime`, ...).
    pub fn as_raw_document(&self) -> &RawDocument {
        &self.reply
    }
}

/// A cursor on an implicit session, as a [`Stream`] of `Result<`[`RawBatch`]`>`: one item per
/// server batch (an empty batch included), fetched with `getMore` as the stream is polled.
///
/// It is [`crate::Cursor`] handing out batches instead of documents: dropped before it is
/// exhausted, its server cursor is killed in the background; after an error the stream ends.
#[derive(Debug)]
pub struct RawBatchCursor {
    /// Always `Some` until dropped.
    inner: Option<Cursor<RawBatch>>,
}

impl RawBatchCursor {
    pub(crate) fn new(inner: Cursor<RawBatch>) -> Self {
        RawBatchCursor { inner: Some(inner) }
    }
}

impl Stream for RawBatchCursor {
    type Item = Result<RawBatch>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<RawBatch>>> {
        let Some(inner) = self.get_mut().inner.as_mut() else {
            return Poll::Ready(None);
        };
        inner
            .poll_next_raw(cx)
            .map(|item| item.map(|reply| reply.map(RawBatch::new)))
    }
}

impl Drop for RawBatchCursor {
    /// Kills the server cursor in the background if it is still open, and returns the implicit
    /// session to the pool.
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            inner.close();
        }
    }
}

/// A raw batch cursor opened with `.session(..)`: its `getMore`s run in that session, so it is
/// iterated through [`SessionRawBatchCursor::stream`], which borrows the session.
///
/// Dropped before it is exhausted, its server cursor is killed in the background, as
/// [`crate::SessionCursor`] is.
#[derive(Debug)]
pub struct SessionRawBatchCursor {
    /// Always `Some` until dropped.
    inner: Option<SessionCursor<RawBatch>>,
}

impl SessionRawBatchCursor {
    pub(crate) fn new(inner: SessionCursor<RawBatch>) -> Self {
        SessionRawBatchCursor { inner: Some(inner) }
    }

    /// A [`Stream`] over the remaining batches, fetching them in `session`, which must be the
    /// session the cursor was opened in.
    pub fn stream<'session>(
        &mut self,
        session: &'session mut ClientSession,
    ) -> SessionRawBatchCursorStream<'_, 'session> {
        SessionRawBatchCursorStream {
            state: StreamState::Idle(self, session),
        }
    }
}

impl Drop for SessionRawBatchCursor {
    /// Kills the server cursor in the background if it is still open.
    fn drop(&mut self) {
        // Dropping the session cursor kills its server cursor.
        drop(self.inner.take());
    }
}

type Fetched<'cursor, 'session> = (
    &'cursor mut SessionRawBatchCursor,
    &'session mut ClientSession,
    Option<Result<RawBatch>>,
);

enum StreamState<'cursor, 'session: 'cursor> {
    Idle(
        &'cursor mut SessionRawBatchCursor,
        &'session mut ClientSession,
    ),
    Fetching(BoxFuture<'cursor, Fetched<'cursor, 'session>>),
    Done,
}

/// The [`Stream`] of a [`SessionRawBatchCursor`]'s batches, from
/// [`SessionRawBatchCursor::stream`]. Dropping it while a `getMore` is in flight closes the
/// cursor (the batch in flight would be lost).
pub struct SessionRawBatchCursorStream<'cursor, 'session: 'cursor> {
    state: StreamState<'cursor, 'session>,
}

impl<'cursor, 'session> SessionRawBatchCursorStream<'cursor, 'session> {
    async fn fetch(
        cursor: &'cursor mut SessionRawBatchCursor,
        session: &'session mut ClientSession,
    ) -> Fetched<'cursor, 'session> {
        let item = match cursor.inner.as_mut() {
            Some(inner) => inner
                .next_raw(session)
                .await
                .map(|reply| reply.map(RawBatch::new)),
            None => None,
        };
        (cursor, session, item)
    }
}

impl Stream for SessionRawBatchCursorStream<'_, '_> {
    type Item = Result<RawBatch>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<RawBatch>>> {
        let this = self.get_mut();
        loop {
            match std::mem::replace(&mut this.state, StreamState::Done) {
                StreamState::Done => return Poll::Ready(None),
                StreamState::Idle(cursor, session) => {
                    this.state = StreamState::Fetching(Box::pin(Self::fetch(cursor, session)));
                }
                StreamState::Fetching(mut fetch) => match fetch.as_mut().poll(cx) {
                    Poll::Pending => {
                        this.state = StreamState::Fetching(fetch);
                        return Poll::Pending;
                    }
                    Poll::Ready((cursor, session, item)) => {
                        if item.is_some() {
                            this.state = StreamState::Idle(cursor, session);
                        }
                        return Poll::Ready(item);
                    }
                },
            }
        }
    }
}

#[cfg(test)]
mod tests;
