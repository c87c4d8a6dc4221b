//! `SessionCursor<T>`: a cursor opened in an explicit session, which every `getMore` must use.

use std::marker::PhantomData;
use std::sync::Arc;

use bson::{RawDocument, RawDocumentBuf};
use serde::de::DeserializeOwned;

use super::session_stream::SessionCursorStream;
use super::state::CursorState;
use super::stream::{KillLimit, deserialize, spawn_kill};
use super::timeout::{Tailing, call_deadline};
use crate::error::Result;
use crate::executor::Executor;
use crate::operation::settings::OperationSettings;
use crate::runtime;
use crate::session::ClientSession;

/// A cursor opened with `.session(&mut session)`. Its `getMore`s must run in the same session,
/// so each fetching call takes the session: [`SessionCursor::next`],
/// [`SessionCursor::advance`], or [`SessionCursor::stream`] for a `Stream` borrowing both.
///
/// [`SessionCursor::close`] kills the server cursor in the session. Dropped before it is
/// exhausted, the cursor is killed in the background without the session, except when it was
/// opened in a load-balanced transaction (see [`SessionCursor::close`]).
pub struct SessionCursor<T> {
    executor: Arc<Executor>,
    state: CursorState,
    settings: OperationSettings,
    current: Option<RawDocumentBuf>,
    closed: bool,
    /// The `txnNumber` of the session's transaction the cursor was opened in, if any: the
    /// server cursor belongs to it and ends with it, and in load-balanced mode it is reachable
    /// only on the connection pinned to that transaction (the cursor has none of its own).
    transaction: Option<i64>,
    _documents: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for SessionCursor<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionCursor")
            .field("id", &self.state.id())
            .field("address", &format_args!("{}", self.state.address()))
            .field("buffered", &self.state.buffered())
            .field("closed", &self.closed)
            .finish()
    }
}

impl<T> SessionCursor<T> {
    /// A cursor opened in `session` (whose transaction, if one is active, owns it).
    pub(crate) fn new(
        executor: Arc<Executor>,
        state: CursorState,
        settings: OperationSettings,
        session: &ClientSession,
    ) -> Self {
        SessionCursor {
            executor,
            state,
            settings,
            current: None,
            closed: false,
            transaction: current_transaction(session),
            _documents: PhantomData,
        }
    }

    /// Moves to the next document, fetching batches in `session` if needed. Returns `false`
    /// once the cursor is exhausted. On a tailable cursor it keeps asking until a document
    /// arrives, under one timeoutMS for the whole call, as [`crate::Cursor::advance`] does;
    /// [`SessionCursor::try_advance`] makes a single attempt.
    ///
    /// # Errors
    /// The `getMore`'s error; the cursor is closed afterwards.
    ///
    /// # Cancel safety
    /// Not cancel safe: a `getMore` abandoned midway loses its batch, so the cursor is closed
    /// (and killed) if the future is dropped while one is in flight.
    pub async fn advance(&mut self, session: &mut ClientSession) -> Result<bool> {
        self.advance_with(session, Tailing::UntilDocument).await
    }

    /// Like [`SessionCursor::advance`], but sends at most one `getMore`: on a tailable cursor
    /// it returns `false` with the cursor still open when that batch brought nothing new.
    ///
    /// # Errors
    /// The `getMore`'s error; the cursor is closed afterwards.
    ///
    /// # Cancel safety
    /// As [`SessionCursor::advance`].
    pub async fn try_advance(&mut self, session: &mut ClientSession) -> Result<bool> {
        self.advance_with(session, Tailing::OneBatch).await
    }

    async fn advance_with(
        &mut self,
        session: &mut ClientSession,
        tailing: Tailing,
    ) -> Result<bool> {
        let mut deadline = None;
        loop {
            if let Some(document) = self.state.pop() {
                self.current = Some(document);
                return Ok(true);
            }
            self.current = None;
            if self.closed || self.state.is_exhausted() {
                self.close_now();
                return Ok(false);
            }
            let Some(get_more) = self.state.get_more() else {
                self.close_now();
                return Ok(false);
            };
            if self.state.is_tailable() {
                // A tailable cursor has no lifetime deadline: only the call's, when it loops.
                if tailing == Tailing::UntilDocument && deadline.is_none() {
                    let timeout = self.settings.timeout_in(Some(session));
                    deadline = Some(call_deadline(timeout, runtime::now()));
                }
                self.settings.deadline = deadline;
            }
            // Until the reply is absorbed, a dropped future must leave the cursor closed.
            self.closed = true;
            let mut context = self.settings.context(Some(session));
            context.pinned = self.state.pinned_mut();
            match self.executor.execute(get_more, context).await {
                Ok(reply) => {
                    self.closed = false;
                    self.state.absorb(reply);
                    let nothing_new = self.state.buffered() == 0
                        && self.state.is_tailable()
                        && !self.state.is_exhausted();
                    if nothing_new && tailing == Tailing::OneBatch {
                        return Ok(false);
                    }
                }
                Err(error) if error.is_timeout() => {
                    // Closed (the lost reply may have held a batch), but the server cursor is
                    // killed when the cursor is closed or dropped, not at once: an immediate
                    // kill would race the caller, still looking at the timeout (CSOT's tests
                    // expect no killCursors after a timed-out getMore).
                    return Err(error);
                }
                Err(error) => {
                    self.close_now();
                    return Err(error);
                }
            }
        }
    }

    /// The current document (after [`SessionCursor::advance`] returned `true`).
    pub fn current(&self) -> Option<&RawDocument> {
        self.current.as_deref()
    }

    /// Whether the cursor is exhausted or closed.
    pub fn is_exhausted(&self) -> bool {
        self.closed || self.state.is_exhausted()
    }

    /// Closes the cursor in `session`, the session it was opened in: kills its server cursor
    /// if still open, with the session's `lsid` (and as a statement of the transaction it was
    /// opened in, if that one is still active), on the connection the cursor is pinned to or,
    /// in a load-balanced transaction, on the transaction's pinned connection, so that no
    /// other connection is checked out; then releases the cursor's pinned connection. Unlike a
    /// drop, it waits for the `killCursors`, which gets the cursor's timeoutMS afresh.
    ///
    /// A cursor whose transaction has ended is not killed (the server ended it with the
    /// transaction); one opened outside a transaction, closed while the session is in one, is
    /// killed in the background without the session, as a drop does. A cursor whose pinned
    /// connection was broken by a network error is not killed (load-balancers, "Behaviour
    /// With Cursors").
    ///
    /// # Errors
    /// The `killCursors`' error; the cursor is closed either way, and the server times the
    /// cursor out (or ends it with its transaction).
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped while the `killCursors` is in flight, the command is abandoned
    /// and the connection it ran on closed (a transaction's pinned connection with it). The
    /// cursor is closed either way; nothing panics.
    pub async fn close(mut self, session: &mut ClientSession) -> Result<()> {
        let now_in = current_transaction(session);
        if self.transaction.is_some() && self.transaction != now_in {
            // Its transaction ended, and the server's cursor with it.
            self.state.forget_server_cursor();
        }
        if self.transaction.is_none() && now_in.is_some() {
            // A killCursors in the session would join (or start) its transaction.
            self.close_now();
            return Ok(());
        }
        self.closed = true;
        let mut pinned = self.state.take_pinned();
        let Some(kill) = self.state.take_kill() else {
            return Ok(());
        };
        let limit = KillLimit::starting(
            self.settings.timeout_in(Some(session)),
            &self.executor,
            runtime::now(),
        );
        let settings = limit.settings();
        if let Some(pin) = pinned.as_mut() {
            // A network error broke the pinned connection (the server closes the cursor with
            // it; dropping the pin checks it in, closed), unless it only owes the reply of a
            // getMore that timed out.
            if !pin.recover(limit.deadline()).await {
                return Ok(());
            }
        }
        let mut context = settings.context(Some(session));
        // The cursor's own pin, when it has one; else the executor takes the transaction's
        // in load-balanced mode, or the pool's.
        context.pinned = pinned.as_mut();
        let killed = self.executor.execute(kill, context).await;
        // Checked in whatever the result (load-balancers, "Behaviour With Cursors").
        drop(pinned);
        killed
    }

    /// Marks the cursor closed, kills its server cursor in the background (when still open)
    /// and releases its pinned connection; dropping the cursor does the same. A cursor of a
    /// load-balanced transaction is not killed here: only the session's pinned connection
    /// reaches the service that holds it, and the server ends it with the transaction.
    fn close_now(&mut self) {
        self.closed = true;
        let pinned = self.state.take_pinned();
        let reachable_without_session =
            self.transaction.is_none() || !self.executor.options().load_balanced;
        if !reachable_without_session {
            self.state.forget_server_cursor();
        }
        if let Some(kill) = self.state.take_kill() {
            let limit = KillLimit::starting(
                self.settings.timeout_in(None),
                &self.executor,
                runtime::now(),
            );
            spawn_kill(Arc::clone(&self.executor), kill, None, limit, pinned);
        }
    }
}

impl<T: DeserializeOwned> SessionCursor<T> {
    /// The current document deserialised as `T`.
    ///
    /// # Errors
    /// `InvalidArgument` when there is no current document, `BsonDeserialization` when it does
    /// not deserialise as `T`.
    pub fn deserialize_current(&self) -> Result<T> {
        deserialize(self.current.as_deref())
    }

    /// The next document, fetched in `session` if needed; `None` once exhausted.
    ///
    /// # Cancel safety
    /// As [`SessionCursor::advance`].
    pub async fn next(&mut self, session: &mut ClientSession) -> Option<Result<T>> {
        match self.advance(session).await {
            Ok(true) => Some(self.deserialize_current()),
            Ok(false) => None,
            Err(error) => Some(Err(error)),
        }
    }
}

impl<T> SessionCursor<T> {
    /// A [`Stream`](futures_core::Stream) over the remaining documents, each fetch in
    /// `session` (the session the cursor was opened in). The stream borrows both, so the
    /// session cannot be used for anything else while it lives; drop it (or use
    /// [`SessionCursor::next`]) to use the session between documents. A later stream or
    /// [`SessionCursor::next`] carries on where this one stopped.
    pub fn stream<'session>(
        &mut self,
        session: &'session mut ClientSession,
    ) -> SessionCursorStream<'_, 'session, T> {
        SessionCursorStream::new(self, session)
    }

    /// The next buffered entry taken out whole, fetched in `session` if needed, without
    /// deserialising it: for a cursor over a raw-batch state, the next batch's server reply.
    /// `None` once exhausted.
    pub(crate) async fn next_raw(
        &mut self,
        session: &mut ClientSession,
    ) -> Option<Result<RawDocumentBuf>> {
        match self.advance(session).await {
            Ok(true) => self.current.take().map(Ok),
            Ok(false) => None,
            Err(error) => Some(Err(error)),
        }
    }

    /// Changes the type documents are deserialised as (the same server cursor and
    /// buffered documents).
    pub fn with_type<U>(mut self) -> SessionCursor<U> {
        SessionCursor {
            executor: Arc::clone(&self.executor),
            state: self.state.take(),
            settings: self.settings.clone(),
            current: self.current.take(),
            closed: self.closed,
            transaction: self.transaction,
            _documents: PhantomData,
        }
    }
}

/// The `txnNumber` of `session`'s active transaction, if one is starting or in progress.
fn current_transaction(session: &ClientSession) -> Option<i64> {
    session
        .in_transaction()
        .then(|| session.current_txn_number())
        .flatten()
}

impl<T> Drop for SessionCursor<T> {
    fn drop(&mut self) {
        self.close_now();
    }
}
