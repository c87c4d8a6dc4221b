//! Blocking cursors: [`Cursor`] (an `Iterator`) and [`SessionCursor`] (iterated in the
//! session it was opened in), wrapping the async [`crate::Cursor`] and
//! [`crate::SessionCursor`].

use bson::RawDocument;
use futures_util::StreamExt as _;
use serde::de::DeserializeOwned;

use crate::error::Result;

use super::ClientSession;
use super::runtime::{self, InRuntime};

/// A blocking cursor over the results of a query on an implicit session (see
/// [`crate::Cursor`]): an `Iterator` of `Result<T>`, fetching batches with `getMore` as it
/// goes. Dropping it kills the server cursor in the background.
///
/// A `getMore` that fails ends the iteration after its error is yielded. When called from
/// inside an async runtime, `next` yields that refusal (`InvalidArgument`) instead of blocking.
#[derive(Debug)]
pub struct Cursor<T> {
    inner: InRuntime<crate::Cursor<T>>,
}

impl<T> From<crate::Cursor<T>> for Cursor<T> {
    fn from(cursor: crate::Cursor<T>) -> Self {
        Cursor {
            inner: InRuntime::new(cursor),
        }
    }
}

impl<T> Cursor<T> {
    /// Moves to the next document, fetching a batch if needed; `false` once the cursor is
    /// exhausted (see [`crate::Cursor::advance`]).
    ///
    /// # Errors
    /// The `getMore`'s error (the cursor is closed afterwards); `InvalidArgument` inside an
    /// async runtime.
    pub fn advance(&mut self) -> Result<bool> {
        runtime::block_on(self.inner.advance())
    }

    /// Like [`Cursor::advance`], sending at most one `getMore` (see
    /// [`crate::Cursor::try_advance`]).
    ///
    /// # Errors
    /// As [`Cursor::advance`].
    pub fn try_advance(&mut self) -> Result<bool> {
        runtime::block_on(self.inner.try_advance())
    }

    /// The current document (after [`Cursor::advance`] returned `true`).
    pub fn current(&self) -> Option<&RawDocument> {
        self.inner.current()
    }

    /// Whether the cursor may have more documents, without fetching or moving (see
    /// [`crate::Cursor::has_next`]).
    pub fn has_next(&self) -> bool {
        self.inner.has_next()
    }

    /// Whether the cursor is finished: exhausted, or closed after an error.
    pub fn is_exhausted(&self) -> bool {
        self.inner.is_exhausted()
    }

    /// Closes the cursor now instead of at drop (see [`crate::Cursor::close`]).
    pub fn close(self) {
        let _context = runtime::enter().ok();
        self.inner.into_inner().close();
    }
}

impl<T: DeserializeOwned> Cursor<T> {
    /// Changes the type documents are deserialised as.
    pub fn with_type<U: DeserializeOwned>(self) -> Cursor<U> {
        Cursor::from(self.inner.into_inner().with_type())
    }

    /// The current document deserialised as `T`.
    ///
    /// # Errors
    /// `InvalidArgument` when there is no current document, `BsonDeserialization` when it
    /// does not deserialise as `T`.
    pub fn deserialize_current(&self) -> Result<T> {
        self.inner.deserialize_current()
    }
}

impl<T: DeserializeOwned> Iterator for Cursor<T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        runtime::block_on(async { Ok(self.inner.next().await) })
            .unwrap_or_else(|refused| Some(Err(refused)))
    }
}

/// A blocking cursor opened in an explicit session (see [`crate::SessionCursor`]): each fetch
/// runs in that session, which [`SessionCursor::next`] and [`SessionCursor::stream`] take.
#[derive(Debug)]
pub struct SessionCursor<T> {
    inner: InRuntime<crate::SessionCursor<T>>,
}

impl<T> From<crate::SessionCursor<T>> for SessionCursor<T> {
    fn from(cursor: crate::SessionCursor<T>) -> Self {
        SessionCursor {
            inner: InRuntime::new(cursor),
        }
    }
}

impl<T> SessionCursor<T> {
    /// Moves to the next document, fetching a batch in `session` if needed; `false` once the
    /// cursor is exhausted.
    ///
    /// # Errors
    /// The `getMore`'s error (the cursor is closed afterwards); `InvalidArgument` inside an
    /// async runtime.
    pub fn advance(&mut self, session: &mut ClientSession) -> Result<bool> {
        runtime::block_on(self.inner.advance(session))
    }

    /// Like [`SessionCursor::advance`], sending at most one `getMore` (see
    /// [`crate::SessionCursor::try_advance`]).
    ///
    /// # Errors
    /// As [`SessionCursor::advance`].
    pub fn try_advance(&mut self, session: &mut ClientSession) -> Result<bool> {
        runtime::block_on(self.inner.try_advance(session))
    }

    /// Closes the cursor now, killing the server cursor in `session` (see
    /// [`crate::SessionCursor::close`]).
    ///
    /// # Errors
    /// The `killCursors`' error; `InvalidArgument` inside an async runtime (the cursor is then
    /// closed at drop instead).
    pub fn close(self, session: &mut ClientSession) -> Result<()> {
        let cursor = self.inner.into_inner();
        runtime::block_on(cursor.close(session))
    }

    /// The current document (after [`SessionCursor::advance`] returned `true`).
    pub fn current(&self) -> Option<&RawDocument> {
        self.inner.current()
    }

    /// Whether the cursor is finished: exhausted, or closed after an error.
    pub fn is_exhausted(&self) -> bool {
        self.inner.is_exhausted()
    }

    /// Changes the type documents are deserialised as.
    pub fn with_type<U>(self) -> SessionCursor<U> {
        SessionCursor::from(self.inner.into_inner().with_type())
    }
}

impl<T: DeserializeOwned> SessionCursor<T> {
    /// The current document deserialised as `T`.
    ///
    /// # Errors
    /// `InvalidArgument` when there is no current document, `BsonDeserialization` when it
    /// does not deserialise as `T`.
    pub fn deserialize_current(&self) -> Result<T> {
        self.inner.deserialize_current()
    }

    /// The next document, fetched in `session` if needed; `None` once exhausted. Inside an
    /// async runtime, the refusal (`InvalidArgument`).
    pub fn next(&mut self, session: &mut ClientSession) -> Option<Result<T>> {
        runtime::block_on(async { Ok(self.inner.next(session).await) })
            .unwrap_or_else(|refused| Some(Err(refused)))
    }

    /// An iterator over the remaining documents, fetching in `session` (the one the cursor
    /// was opened in); it borrows the cursor and the session until dropped.
    pub fn iter<'session>(
        &mut self,
        session: &'session mut ClientSession,
    ) -> SessionCursorIter<'_, 'session, T> {
        SessionCursorIter {
            cursor: self,
            session,
        }
    }

    /// As [`SessionCursor::iter`], the cursor and the session borrowed for as long.
    pub fn stream<'a>(
        &'a mut self,
        session: &'a mut ClientSession,
    ) -> SessionCursorIter<'a, 'a, T> {
        self.iter(session)
    }
}

/// The iterator of [`SessionCursor::iter`]: yields the cursor's remaining documents, each
/// fetch in the borrowed session.
#[derive(Debug)]
pub struct SessionCursorIter<'cursor, 'session, T> {
    cursor: &'cursor mut SessionCursor<T>,
    session: &'session mut ClientSession,
}

impl<T: DeserializeOwned> Iterator for SessionCursorIter<'_, '_, T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        self.cursor.next(self.session)
    }
}
