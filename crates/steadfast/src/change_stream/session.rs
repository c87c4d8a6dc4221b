//! [`SessionChangeStream`]: a change stream opened in an explicit session.

use std::marker::PhantomData;

use bson::Document;
use serde::de::DeserializeOwned;

use super::core::StreamCore;
use super::event::{ChangeStreamEvent, ResumeToken};
use crate::cursor::{Tailing, deserialize};
use crate::error::Result;
use crate::session::ClientSession;

/// A change stream opened with `.session(&mut session)`: its `getMore`s and resumes must run
/// in that session, so each call takes it. Otherwise as [`ChangeStream`](super::ChangeStream).
#[must_use = "a change stream does nothing unless polled"]
pub struct SessionChangeStream<T = ChangeStreamEvent<Document>> {
    core: StreamCore,
    _events: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for SessionChangeStream<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.core.fmt(f)
    }
}

impl<T> SessionChangeStream<T> {
    pub(crate) fn new(core: StreamCore) -> Self {
        SessionChangeStream {
            core,
            _events: PhantomData,
        }
    }

    /// The token a resume would start from now (see
    /// [`ChangeStream::resume_token`](super::ChangeStream::resume_token)).
    pub fn resume_token(&self) -> Option<ResumeToken> {
        self.core.resume_token().cloned().map(ResumeToken)
    }

    /// Whether events may still come.
    pub fn is_alive(&self) -> bool {
        self.core.is_alive()
    }

    /// Changes the type the events are deserialised as.
    pub fn with_type<U>(self) -> SessionChangeStream<U> {
        SessionChangeStream {
            core: self.core,
            _events: PhantomData,
        }
    }
}

impl<T: DeserializeOwned> SessionChangeStream<T> {
    /// The next event, waiting (and resuming) until one arrives; `None` once the stream ended.
    ///
    /// # Errors
    /// As [`ChangeStream`](super::ChangeStream)'s `Stream`.
    ///
    /// # Cancel safety
    /// Cancel safe as far as events go: if the future is dropped with a command in flight,
    /// the next call kills that cursor and resumes from the cached token, so no event is lost
    /// or repeated (at the cost of a new `aggregate`).
    pub async fn next(&mut self, session: &mut ClientSession) -> Result<Option<T>> {
        let raw = self
            .core
            .next(Some(session), Tailing::UntilDocument)
            .await?;
        raw.map(|raw| deserialize(Some(&raw))).transpose()
    }

    /// The next event if one arrives in one round trip, else `None` with the stream alive.
    ///
    /// # Errors
    /// As [`SessionChangeStream::next`].
    ///
    /// # Cancel safety
    /// As [`SessionChangeStream::next`].
    pub async fn next_if_any(&mut self, session: &mut ClientSession) -> Result<Option<T>> {
        let raw = self.core.next(Some(session), Tailing::OneBatch).await?;
        raw.map(|raw| deserialize(Some(&raw))).transpose()
    }
}
