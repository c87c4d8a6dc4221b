//! [`ChangeStream`]: a change stream on an implicit session, as a `Stream`.

use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use bson::{Document, RawDocumentBuf};
use futures_core::Stream;
use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;

use super::core::StreamCore;
use super::event::{ChangeStreamEvent, ResumeToken};
use crate::cursor::{Tailing, deserialize};
use crate::error::Result;
use crate::session::ClientSession;

/// The stream's state and the implicit session its commands run in.
struct Owned {
    core: StreamCore,
    session: Option<ClientSession>,
}

impl Owned {
    async fn next(
        mut self: Box<Self>,
        tailing: Tailing,
    ) -> (Box<Self>, Result<Option<RawDocumentBuf>>) {
        let Owned { core, session } = &mut *self;
        let result = core.next(session.as_mut(), tailing).await;
        (self, result)
    }
}

type Pending = BoxFuture<'static, (Box<Owned>, Result<Option<RawDocumentBuf>>)>;

/// Where the stream is between calls.
enum Phase {
    Idle(Box<Owned>),
    /// A call is in flight; it stays here if the caller stops waiting, and the next call
    /// picks it up.
    Busy(Pending, Tailing),
}

/// A change stream: the changes of a collection, database or deployment, in order, as a
/// [`Stream`] of `T` (by default [`ChangeStreamEvent<Document>`]; raw events with
/// `with_type::<Document>()`). See the [module documentation](crate::change_stream) for resuming,
/// resume tokens and timeouts.
///
/// The stream ends (`None`) after an `invalidate` event or a non-resumable error; dropping it
/// kills its server cursor in the background.
#[must_use = "a change stream does nothing unless polled"]
pub struct ChangeStream<T = ChangeStreamEvent<Document>> {
    phase: Option<Phase>,
    /// The resume token as of the last completed call (kept here so it can be read while a
    /// call is in flight).
    token: Option<ResumeToken>,
    alive: bool,
    _events: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for ChangeStream<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.phase {
            Some(Phase::Idle(owned)) => owned.core.fmt(f),
            _ => f
                .debug_struct("ChangeStream")
                .field("resume_token", &self.token)
                .field("alive", &self.alive)
                .finish(),
        }
    }
}

impl<T> ChangeStream<T> {
    pub(crate) fn new(core: StreamCore, session: Option<ClientSession>) -> Self {
        let token = core.resume_token().cloned().map(ResumeToken);
        ChangeStream {
            phase: Some(Phase::Idle(Box::new(Owned { core, session }))),
            token,
            alive: true,
            _events: PhantomData,
        }
    }

    /// The token a resume would start from now: pass it to `resume_after` (or `start_after`)
    /// of a new `watch()` to continue where this stream stood. Kept current after every event
    /// and after empty batches too.
    pub fn resume_token(&self) -> Option<ResumeToken> {
        self.token.clone()
    }

    /// Whether events may still come: false after an `invalidate` event or an error that ended
    /// the stream.
    pub fn is_alive(&self) -> bool {
        self.alive
    }

    /// Changes the type the events are deserialised as (`Document` for raw events, or the
    /// application's own type when a pipeline reshapes them).
    pub fn with_type<U>(mut self) -> ChangeStream<U> {
        ChangeStream {
            phase: self.phase.take(),
            token: self.token.take(),
            alive: self.alive,
            _events: PhantomData,
        }
    }

    /// The next raw event: drives the call in flight, or starts one.
    fn poll_raw(
        &mut self,
        cx: &mut Context<'_>,
        tailing: Tailing,
    ) -> Poll<Result<Option<RawDocumentBuf>>> {
        let (mut pending, started_as) = match self.phase.take() {
            None => return Poll::Ready(Ok(None)),
            Some(Phase::Busy(pending, started_as)) => (pending, started_as),
            Some(Phase::Idle(owned)) => {
                let pending: Pending = Box::pin(owned.next(tailing));
                (pending, tailing)
            }
        };
        match pending.as_mut().poll(cx) {
            Poll::Pending => {
                self.phase = Some(Phase::Busy(pending, started_as));
                Poll::Pending
            }
            Poll::Ready((owned, result)) => {
                self.token = owned.core.resume_token().cloned().map(ResumeToken);
                self.alive = owned.core.is_alive();
                self.phase = Some(Phase::Idle(owned));
                // A call started by `next_if_any` and finished by the `Stream` may come back
                // empty-handed while the stream lives: the `Stream` keeps waiting.
                match (&result, started_as, tailing) {
                    (Ok(None), Tailing::OneBatch, Tailing::UntilDocument) if self.alive => {
                        self.poll_raw(cx, tailing)
                    }
                    _ => Poll::Ready(result),
                }
            }
        }
    }
}

impl<T: DeserializeOwned> ChangeStream<T> {
    /// The next event if one arrives in one round trip (one `getMore`, which waits up to
    /// `max_await_time` on the server), else `None` with the stream still alive (see
    /// [`ChangeStream::is_alive`]). Use it to read [`ChangeStream::resume_token`] while no
    /// event comes.
    ///
    /// # Errors
    /// As the `Stream`: an error that ended the stream, a resume's failure, or a timeout
    /// (the stream stays alive).
    ///
    /// # Cancel safety
    /// Cancel safe: a call abandoned midway stays with the stream and the next call finishes it.
    pub async fn next_if_any(&mut self) -> Result<Option<T>> {
        let raw = std::future::poll_fn(|cx| self.poll_raw(cx, Tailing::OneBatch)).await?;
        raw.map(|raw| deserialize(Some(&raw))).transpose()
    }
}

impl<T: DeserializeOwned> Stream for ChangeStream<T> {
    type Item = Result<T>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<T>>> {
        let this = self.get_mut();
        match this.poll_raw(cx, Tailing::UntilDocument) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(Some(raw))) => Poll::Ready(Some(deserialize(Some(&raw)))),
            Poll::Ready(Ok(None)) => Poll::Ready(None),
            Poll::Ready(Err(error)) => Poll::Ready(Some(Err(error))),
        }
    }
}

impl<T> Unpin for ChangeStream<T> {}
