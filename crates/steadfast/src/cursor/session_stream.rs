//! `SessionCursorStream`: a [`SessionCursor`] and its session, borrowed together as a `Stream`.

use std::pin::Pin;
use std::task::{Context, Poll};

use bson::Document;
use futures_core::Stream;
use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;

use super::SessionCursor;
use crate::error::Result;
use crate::session::ClientSession;

/// What a finished fetch hands back: the borrows it took, and the next item.
type Fetched<'cursor, 'session, T> = (
    &'cursor mut SessionCursor<T>,
    &'session mut ClientSession,
    Option<Result<T>>,
);

/// Where the stream is between polls.
enum Phase<'cursor, 'session, T> {
    /// Waiting to be polled; holds the cursor and the session.
    Idle(&'cursor mut SessionCursor<T>, &'session mut ClientSession),
    /// A [`SessionCursor::next`] in progress, which holds the borrows until it completes.
    Fetching(BoxFuture<'cursor, Fetched<'cursor, 'session, T>>),
    /// Only while switching phases, or after a fetch was dropped unfinished.
    Gone,
}

/// The [`Stream`] of `Result<T>` that [`SessionCursor::stream`] returns: the cursor's
/// remaining documents, each `getMore` sent in the borrowed session.
///
/// Its position lives in the cursor: once the stream is dropped, [`SessionCursor::next`] or a
/// new stream continues with the next document. Dropping the stream while a `getMore` is in
/// flight abandons that `getMore` (its batch is lost), which closes the cursor as a cancelled
/// [`SessionCursor::next`] does; the stream then ends.
pub struct SessionCursorStream<'cursor, 'session, T = Document> {
    phase: Phase<'cursor, 'session, T>,
}

impl<'cursor, 'session, T> SessionCursorStream<'cursor, 'session, T> {
    pub(super) fn new(
        cursor: &'cursor mut SessionCursor<T>,
        session: &'session mut ClientSession,
    ) -> Self {
        SessionCursorStream {
            phase: Phase::Idle(cursor, session),
        }
    }
}

impl<T> std::fmt::Debug for SessionCursorStream<'_, '_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let phase = match &self.phase {
            Phase::Idle(..) => "idle",
            Phase::Fetching(_) => "fetching",
            Phase::Gone => "gone",
        };
        f.debug_struct("SessionCursorStream")
            .field("phase", &phase)
            .finish()
    }
}

impl<'cursor, 'session, T> Stream for SessionCursorStream<'cursor, 'session, T>
where
    T: DeserializeOwned + 'cursor,
    'session: 'cursor,
{
    type Item = Result<T>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<T>>> {
        let this = self.get_mut();
        loop {
            match std::mem::replace(&mut this.phase, Phase::Gone) {
                Phase::Idle(cursor, session) => {
                    this.phase = Phase::Fetching(Box::pin(async move {
                        let item = cursor.next(session).await;
                        (cursor, session, item)
                    }));
                }
                Phase::Fetching(mut fetch) => {
                    return match fetch.as_mut().poll(cx) {
                        Poll::Pending => {
                            this.phase = Phase::Fetching(fetch);
                            Poll::Pending
                        }
                        Poll::Ready((cursor, session, item)) => {
                            this.phase = Phase::Idle(cursor, session);
                            Poll::Ready(item)
                        }
                    };
                }
                Phase::Gone => return Poll::Ready(None),
            }
        }
    }
}

impl<T> Drop for SessionCursorStream<'_, '_, T> {
    /// Ends a fetch in flight first: the abandoned `getMore` closes the cursor (see the type's
    /// documentation) before the borrows of the cursor and the session are released.
    fn drop(&mut self) {
        if let Phase::Fetching(fetch) = std::mem::replace(&mut self.phase, Phase::Gone) {
            drop(fetch);
        }
    }
}
