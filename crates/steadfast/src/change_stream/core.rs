//! What both stream types share: the server cursor, the resume bookkeeping and the iteration
//! that resumes after a resumable `getMore` error.

use std::sync::Arc;

use bson::{RawBson, RawBsonRef, RawDocumentBuf};
use steadfast_core::Deadline;
use steadfast_core::change_stream::{
    ErrorSource, Position, ResumeStart, ResumeState, is_resumable,
};

use crate::cursor::{
    CURSOR_GONE_CODES, CursorSettings, CursorState, KillLimit, Tailing, call_deadline, spawn_kill,
};
use crate::error::{Error, ErrorFacts, ErrorKind, Result};
use crate::executor::Executor;
use crate::operation::change_stream::{ChangeStreamReply, ChangeStreamSpec};
use crate::operation::settings::OperationSettings;
use crate::runtime;
use crate::session::ClientSession;

/// Where a stream is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Life {
    /// Events may come.
    Open,
    /// The last call ran out of its timeoutMS: the next one reopens the stream first (CSOT).
    ResumeFirst,
    /// Invalidated, closed after an error, or closed by the server: nothing more comes.
    Ended,
}

/// A change stream's state; the session is passed in by the caller on each call (its own
/// implicit one, or the application's).
pub(crate) struct StreamCore {
    executor: Arc<Executor>,
    spec: ChangeStreamSpec,
    cursor: Option<CursorState>,
    cursor_settings: CursorSettings,
    settings: OperationSettings,
    resume: ResumeState,
    /// The current batch's `postBatchResumeToken`.
    post_batch_token: Option<RawBson>,
    /// The wire version of the server holding the cursor (resumability is judged with it).
    wire_version: i32,
    life: Life,
    /// A call is running, or was abandoned midway (its future dropped): its batch may be
    /// lost, so the next call reopens the stream from the cached token.
    in_flight: bool,
}

impl std::fmt::Debug for StreamCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChangeStream")
            .field("cursor", &self.cursor.as_ref().map(CursorState::id))
            .field("life", &self.life)
            .field("resume_token", &self.resume.token())
            .finish()
    }
}

impl StreamCore {
    /// The stream after its opening `aggregate` succeeded.
    pub(crate) fn opened(
        executor: Arc<Executor>,
        spec: ChangeStreamSpec,
        reply: ChangeStreamReply,
        address: steadfast_core::ServerAddress,
        pinned: Option<crate::pool::PinnedConnection>,
        cursor_settings: CursorSettings,
        settings: OperationSettings,
    ) -> Self {
        let o = &spec.options;
        let mut resume = ResumeState::new(
            o.start_after.as_ref().map(|t| t.0.clone()),
            o.resume_after.as_ref().map(|t| t.0.clone()),
            o.start_at_operation_time,
        );
        let post_batch_token = reply
            .cursor
            .post_batch_resume_token
            .clone()
            .map(RawBson::Document);
        resume.opened(
            reply.cursor.first_batch.is_empty(),
            post_batch_token.clone(),
            reply.operation_time,
            reply.wire_version,
        );
        let wire_version = reply.wire_version;
        let cursor =
            CursorState::new(reply.cursor, address, cursor_settings.clone()).pinned_to(pinned);
        StreamCore {
            executor,
            spec,
            cursor: Some(cursor),
            cursor_settings,
            settings,
            resume,
            post_batch_token,
            wire_version,
            life: Life::Open,
            in_flight: false,
        }
    }

    /// The token a resume would use now.
    pub(crate) fn resume_token(&self) -> Option<&RawBson> {
        self.resume.token()
    }

    /// Whether more events may come.
    pub(crate) fn is_alive(&self) -> bool {
        self.life != Life::Ended
    }

    /// The next event, as the server sent it. With [`Tailing::OneBatch`] at most one
    /// `getMore` is sent and `None` means "nothing yet" while the stream stays alive; with
    /// [`Tailing::UntilDocument`] `None` means the stream ended. timeoutMS bounds the whole
    /// call, resume included.
    ///
    /// # Errors
    /// A non-resumable error (the stream ends), the error of a resume's `aggregate` (the stream
    /// ends), a timeout (the stream stays alive and the next call resumes), or
    /// `MissingResumeToken` (the stream ends).
    pub(crate) async fn next(
        &mut self,
        session: Option<&mut ClientSession>,
        tailing: Tailing,
    ) -> Result<Option<RawDocumentBuf>> {
        if std::mem::replace(&mut self.in_flight, true) && self.life != Life::Ended {
            // The previous call was abandoned with a command in flight.
            self.kill_cursor();
            self.life = Life::ResumeFirst;
        }
        let result = self.next_event(session, tailing).await;
        self.in_flight = false;
        result
    }

    /// [`StreamCore::next`] once the previous call is known to have finished.
    async fn next_event(
        &mut self,
        mut session: Option<&mut ClientSession>,
        tailing: Tailing,
    ) -> Result<Option<RawDocumentBuf>> {
        let timeout = self.settings.timeout_in(session.as_deref());
        let deadline = call_deadline(timeout, runtime::now());
        loop {
            match self.life {
                Life::Ended => return Ok(None),
                Life::ResumeFirst => {
                    self.reopen(session.as_deref_mut(), deadline).await?;
                }
                Life::Open => {}
            }
            if let Some(event) = self.pop_event()? {
                return Ok(Some(event));
            }
            if self.cursor.as_ref().is_none_or(|c| c.id() == 0) {
                // The server closed the cursor (after an invalidate, or a killed stream).
                self.end();
                return Ok(None);
            }
            let got_events = self.fetch(session.as_deref_mut(), deadline).await?;
            if !got_events && tailing == Tailing::OneBatch {
                return Ok(None);
            }
        }
    }

    /// Hands out the next buffered event and caches the token after it.
    ///
    /// # Errors
    /// `MissingResumeToken` when the event has no `_id` (the stream ends).
    fn pop_event(&mut self) -> Result<Option<RawDocumentBuf>> {
        let Some(cursor) = self.cursor.as_mut() else {
            return Ok(None);
        };
        let Some(event) = cursor.pop() else {
            return Ok(None);
        };
        let position = if cursor.buffered() == 0 {
            Position::LastInBatch
        } else {
            Position::InBatch
        };
        let id = match event.get("_id") {
            Ok(Some(id)) => Some(RawBson::from(id)),
            _ => None,
        };
        if self
            .resume
            .returned(id, position, self.post_batch_token.clone())
            .is_err()
        {
            self.end();
            return Err(Error::new(ErrorKind::MissingResumeToken));
        }
        if matches!(
            event.get("operationType"),
            Ok(Some(RawBsonRef::String("invalidate")))
        ) {
            // Nothing follows an invalidate (the server closes the cursor; killed if not).
            self.end();
        }
        Ok(Some(event))
    }

    /// Sends one `getMore`; on a resumable error, resumes once. Returns whether events arrived.
    ///
    /// # Errors
    /// As [`StreamCore::next`].
    async fn fetch(
        &mut self,
        mut session: Option<&mut ClientSession>,
        deadline: Deadline,
    ) -> Result<bool> {
        let Some(get_more) = self.cursor.as_ref().and_then(CursorState::get_more) else {
            return Ok(false);
        };
        let settings = OperationSettings {
            deadline: Some(deadline),
            ..self.settings.clone()
        };
        let mut context = settings.context(session.as_deref_mut());
        context.pinned = self.cursor.as_mut().and_then(CursorState::pinned_mut);
        let result = self.executor.execute(get_more, context).await;
        let error = match result {
            Ok(reply) => {
                self.take_batch(reply);
                return Ok(self.cursor.as_ref().is_some_and(|c| c.buffered() > 0));
            }
            Err(error) => error,
        };
        if error
            .code()
            .is_some_and(|code| CURSOR_GONE_CODES.contains(&code))
        {
            self.cursor_gone();
        }
        let out_of_time = deadline.instant().is_some() && error.is_timeout();
        if out_of_time {
            // CSOT: not resumed now (no time left), but the stream stays usable: the next
            // call reopens it.
            self.kill_cursor();
            self.life = Life::ResumeFirst;
            return Err(error);
        }
        if !is_resumable(error_source(&error), self.wire_version) {
            self.end();
            return Err(error);
        }
        tracing::debug!(%error, "change stream resuming after a resumable error");
        self.reopen(session, deadline).await?;
        Ok(self.cursor.as_ref().is_some_and(|c| c.buffered() > 0))
    }

    /// Takes in a `getMore`'s batch.
    fn take_batch(&mut self, reply: crate::cursor::CursorReply) {
        self.post_batch_token = reply.post_batch_resume_token.clone().map(RawBson::Document);
        self.resume
            .batch_received(reply.first_batch.is_empty(), self.post_batch_token.clone());
        if let Some(cursor) = self.cursor.as_mut() {
            cursor.absorb(reply);
        }
    }

    /// The resume: kills the old cursor (best effort), selects a server with the original read
    /// preference and runs the `aggregate` again from the cached starting point, in the same
    /// session.
    ///
    /// # Errors
    /// The `aggregate`'s error: the stream ends (unless it ran out of time, when the next
    /// call tries again).
    async fn reopen(
        &mut self,
        session: Option<&mut ClientSession>,
        deadline: Deadline,
    ) -> Result<()> {
        self.kill_cursor();
        let start: ResumeStart = self.resume.resume_start();
        let op = match self.spec.aggregate(Some(&start)) {
            Ok(op) => op,
            Err(error) => {
                self.end();
                return Err(error);
            }
        };
        let settings = OperationSettings {
            deadline: Some(deadline),
            ..self.settings.clone()
        };
        let result = self
            .executor
            .execute_cursor(Box::new(op), settings.context(session))
            .await;
        let (reply, pin) = match result {
            Ok(opened) => opened,
            Err(error) => {
                self.life = if deadline.instant().is_some() && error.is_timeout() {
                    Life::ResumeFirst
                } else {
                    Life::Ended
                };
                return Err(error);
            }
        };
        // A resume without the caller's session may have run on a fresh implicit one; it
        // goes back to the pool (the stream's next resume takes its own again).
        drop(pin.session);
        self.wire_version = reply.wire_version;
        self.post_batch_token = reply
            .cursor
            .post_batch_resume_token
            .clone()
            .map(RawBson::Document);
        self.resume.batch_received(
            reply.cursor.first_batch.is_empty(),
            self.post_batch_token.clone(),
        );
        self.cursor = Some(
            CursorState::new(reply.cursor, pin.address, self.cursor_settings.clone())
                .pinned_to(pin.connection),
        );
        self.life = Life::Open;
        Ok(())
    }

    /// Ends the stream and kills its cursor.
    pub(crate) fn end(&mut self) {
        self.kill_cursor();
        self.life = Life::Ended;
    }

    /// Forgets a server cursor that no longer exists.
    fn cursor_gone(&mut self) {
        if let Some(cursor) = self.cursor.as_mut() {
            cursor.forget_server_cursor();
        }
    }

    /// Kills the open server cursor in the background (errors are ignored).
    fn kill_cursor(&mut self) {
        let Some(mut cursor) = self.cursor.take() else {
            return;
        };
        let pinned = cursor.take_pinned();
        let Some(kill) = cursor.take_kill() else {
            return;
        };
        let limit = KillLimit::starting(
            self.settings.timeout_in(None),
            &self.executor,
            runtime::now(),
        );
        spawn_kill(Arc::clone(&self.executor), kill, None, limit, pinned);
    }
}

impl Drop for StreamCore {
    fn drop(&mut self) {
        self.kill_cursor();
    }
}

/// What resumability needs to know about an error. Everything that is not the server's
/// answer counts as a connection problem (the spec's "not a server error"): a failed or
/// timed-out connection, a malformed reply, and the cursor's server having left the topology;
/// the driver's own refusals (shutdown, bad arguments) do not.
fn error_source(error: &Error) -> ErrorSource<'_> {
    match error.facts() {
        ErrorFacts::Connection(_) => ErrorSource::Connection,
        ErrorFacts::Command(reply) | ErrorFacts::WriteConcern(reply) => ErrorSource::Server {
            code: reply.code,
            labels: error.label_set(),
        },
        ErrorFacts::Other if matches!(*error.kind(), ErrorKind::ServerSelection { .. }) => {
            ErrorSource::Connection
        }
        ErrorFacts::Authentication(_) | ErrorFacts::Other => ErrorSource::Driver,
    }
}

#[cfg(test)]
mod tests {
    use steadfast_core::change_stream::{ErrorSource, is_resumable};

    use super::error_source;
    use crate::error::{CommandError, Error, ErrorKind};

    fn resumable(error: &Error) -> bool {
        is_resumable(error_source(error), 21)
    }

    #[test]
    fn what_the_server_did_not_answer_resumes_and_the_drivers_refusals_do_not() {
        let unreachable = Error::new(ErrorKind::ServerSelection {
            message: "the cursor's server left the topology".into(),
        });
        assert!(matches!(
            error_source(&unreachable),
            ErrorSource::Connection
        ));
        assert!(resumable(&Error::network("reset")));
        assert!(resumable(&Error::timeout("socket timeout")));
        assert!(resumable(&Error::protocol("malformed")));
        assert!(!resumable(&Error::new(ErrorKind::Shutdown)));
        assert!(!resumable(&Error::invalid_argument("bad")));
    }

    #[test]
    fn a_server_error_resumes_by_its_label() {
        let plain = Error::new(ErrorKind::Command(CommandError::new(280, "Fatal", "no")));
        assert!(!resumable(&plain));
        let labelled = Error::new(ErrorKind::Command(CommandError::new(262, "Limit", "x")))
            .with_labels(["ResumableChangeStreamError"]);
        assert!(resumable(&labelled));
    }
}
