//! Blocking change streams: [`ChangeStream`] (an `Iterator`) and [`SessionChangeStream`],
//! wrapping the async ones; resumption after a resumable error is theirs.

use futures_util::StreamExt as _;
use serde::de::DeserializeOwned;

use crate::change_stream::event::ResumeToken;
use crate::error::Result;

use super::ClientSession;
use super::runtime::{self, InRuntime};

/// A blocking change stream on an implicit session (see [`crate::change_stream::ChangeStream`]):
/// an `Iterator` of events that blocks until the next one arrives, resuming once after a
/// resumable error as the async stream does. The iteration ends when the stream does (an
/// `invalidate` event, or an error, which is yielded first).
#[derive(Debug)]
pub struct ChangeStream<T> {
    inner: InRuntime<crate::change_stream::ChangeStream<T>>,
}

impl<T> From<crate::change_stream::ChangeStream<T>> for ChangeStream<T> {
    fn from(stream: crate::change_stream::ChangeStream<T>) -> Self {
        ChangeStream {
            inner: InRuntime::new(stream),
        }
    }
}

impl<T> ChangeStream<T> {
    /// The token a resume would start from now (pass it to `resume_after` or `start_after`
    /// of a new `watch()`).
    pub fn resume_token(&self) -> Option<ResumeToken> {
        self.inner.resume_token()
    }

    /// Whether events may still come.
    pub fn is_alive(&self) -> bool {
        self.inner.is_alive()
    }

    /// Changes the type the events are deserialised as.
    pub fn with_type<U>(self) -> ChangeStream<U> {
        ChangeStream::from(self.inner.into_inner().with_type())
    }
}

impl<T: DeserializeOwned> ChangeStream<T> {
    /// The next event if the server has one now: one `getMore` at most, `None` when its batch
    /// is empty (see [`crate::change_stream::ChangeStream::next_if_any`]).
    ///
    /// # Errors
    /// The `getMore`'s error that the stream could not resume from; `InvalidArgument` inside
    /// an async runtime.
    pub fn next_if_any(&mut self) -> Result<Option<T>> {
        runtime::block_on(self.inner.next_if_any())
    }
}

impl<T: DeserializeOwned> Iterator for ChangeStream<T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        runtime::block_on(async { Ok(self.inner.next().await) })
            .unwrap_or_else(|refused| Some(Err(refused)))
    }
}

/// A blocking change stream opened in an explicit session (see
/// [`crate::change_stream::session::SessionChangeStream`]): its `getMore`s run in the session
/// that [`SessionChangeStream::next`] takes.
#[derive(Debug)]
pub struct SessionChangeStream<T> {
    inner: InRuntime<crate::change_stream::session::SessionChangeStream<T>>,
}

impl<T> From<crate::change_stream::session::SessionChangeStream<T>> for SessionChangeStream<T> {
    fn from(stream: crate::change_stream::session::SessionChangeStream<T>) -> Self {
        SessionChangeStream {
            inner: InRuntime::new(stream),
        }
    }
}

impl<T> SessionChangeStream<T> {
    /// The token a resume would start from now.
    pub fn resume_token(&self) -> Option<ResumeToken> {
        self.inner.resume_token()
    }

    /// Whether events may still come.
    pub fn is_alive(&self) -> bool {
        self.inner.is_alive()
    }

    /// Changes the type the events are deserialised as.
    pub fn with_type<U>(self) -> SessionChangeStream<U> {
        SessionChangeStream::from(self.inner.into_inner().with_type())
    }
}

impl<T: DeserializeOwned> SessionChangeStream<T> {
    /// Blocks until the next event, fetched in `session`; `None` once the stream has ended.
    ///
    /// # Errors
    /// The error the stream could not resume from; `InvalidArgument` inside an async runtime.
    pub fn next(&mut self, session: &mut ClientSession) -> Result<Option<T>> {
        runtime::block_on(self.inner.next(session))
    }

    /// The next event if the server has one now (one `getMore` at most).
    ///
    /// # Errors
    /// As [`SessionChangeStream::next`].
    pub fn next_if_any(&mut self, session: &mut ClientSession) -> Result<Option<T>> {
        runtime::block_on(self.inner.next_if_any(session))
    }
}
