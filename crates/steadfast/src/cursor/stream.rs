//! `Cursor<T>`: a stream of documents backed by a server cursor on an implicit session.

use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bson::{RawDocument, RawDocumentBuf};
use futures_core::Stream;
use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;
use steadfast_core::Deadline;

use super::state::CursorState;
use super::timeout::{Tailing, call_deadline};
use crate::error::{Error, ErrorKind, Result};
use crate::executor::Executor;
use crate::operation::get_more::KillCursors;
use crate::operation::settings::OperationSettings;
use crate::pool::PinnedConnection;
use crate::runtime;
use crate::session::ClientSession;

/// Server error codes after which the server cursor no longer exists.
pub(crate) const CURSOR_GONE_CODES: [i32; 3] = [
    43,  /* CursorNotFound */
    237, /* CursorKilled */
    175, /* QueryPlanKilled */
];

/// What a cursor needs to fetch batches; moved into the `getMore` future while one is in
/// flight and handed back when it completes.
struct Core {
    executor: Arc<Executor>,
    state: CursorState,
    /// The implicit session the cursor was opened on; returned to the pool when the cursor
    /// is exhausted, closed or dropped.
    session: Option<ClientSession>,
    settings: OperationSettings,
}

impl Core {
    /// Sends the next `getMore` (never retried by retryable reads) and buffers its batch.
    async fn fetch(mut self: Box<Self>) -> (Box<Self>, Result<()>) {
        let Some(get_more) = self.state.get_more() else {
            return (self, Ok(()));
        };
        let mut context = self.settings.context(self.session.as_mut());
        context.pinned = self.state.pinned_mut();
        let result = self.executor.execute(get_more, context).await;
        let result = match result {
            Ok(reply) => {
                self.state.absorb(reply);
                Ok(())
            }
            Err(error) => {
                if error
                    .code()
                    .is_some_and(|code| CURSOR_GONE_CODES.contains(&code))
                {
                    self.state.forget_server_cursor();
                }
                Err(error)
            }
        };
        (self, result)
    }

    /// Ends the cursor: kills the server cursor if one is open (in the background, within the
    /// cursor's timeoutMS afresh) and returns the session.
    fn close(mut self: Box<Self>) {
        let session = self.session.take();
        let pinned = self.state.take_pinned();
        if let Some(kill) = self.state.take_kill() {
            let limit = KillLimit::starting(
                self.settings.timeout_in(None),
                &self.executor,
                runtime::now(),
            );
            spawn_kill(Arc::clone(&self.executor), kill, session, limit, pinned);
        }
    }
}

/// Where the cursor is in its life.
enum Phase {
    /// Waiting for the application; the next document is buffered or a `getMore` is due.
    Idle(Box<Core>),
    /// A `getMore` is in flight.
    Fetching(BoxFuture<'static, (Box<Core>, Result<()>)>),
    /// A `getMore` timed out, or failed on a cursor pinned to a connection (load-balanced
    /// mode): the cursor yields nothing more (the lost reply may have held a batch), but keeps
    /// its server cursor (and a pinned connection) until it is closed or dropped, which kills
    /// the server cursor (on the pinned connection if it still works, load-balancers).
    Failed(Box<Core>),
    /// Exhausted, closed after an error, or killed.
    Finished,
}

/// A cursor over the results of `find`, `aggregate` or a listing command, as a
/// [`Stream`](futures_core::Stream) of `Result<T>`.
///
/// Batches are fetched with `getMore` on the server that holds the cursor, as the stream is
/// polled. A cursor dropped before it is exhausted is killed (`killCursors`) in the background;
/// its implicit session goes back to the pool when it is exhausted or dropped. After an error,
/// the cursor is closed (the error is returned once, then the stream ends): a batch that may
/// have been lost is never skipped silently.
///
/// In load-balanced mode the cursor keeps the connection it was opened on checked out for its
/// `getMore`s and `killCursors` (the service behind the balancer that holds the server cursor
/// is reachable only through it), until the server drains the cursor or the cursor is closed or
/// dropped; after an error the connection stays with the cursor until then. Calls on one
/// cursor never overlap (they take `&mut self`).
///
/// Use it with `futures::StreamExt`/`TryStreamExt`, or with [`Cursor::advance`] and
/// [`Cursor::deserialize_current`]:
///
/// ```no_run
/// # async fn demo(orders: steadfast::Collection<bson::Document>) -> steadfast::Result<()> {
/// let mut cursor = orders.find(bson::doc! {}).batch_size(100).await?;
/// while cursor.advance().await? {
///     let order = cursor.deserialize_current()?;
///     println!("{order}");
/// }
/// # Ok(())
/// # }
/// ```
pub struct Cursor<T> {
    phase: Phase,
    current: Option<RawDocumentBuf>,
    /// While a `getMore` is in flight, what killing the server cursor takes if the cursor is
    /// dropped before the reply arrives.
    kill_if_dropped: Option<(Arc<Executor>, KillCursors, Option<Duration>)>,
    /// The deadline of the tailable `advance` call in progress (see `tailing_deadline`).
    call_deadline: Option<Deadline>,
    _documents: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for Cursor<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Cursor");
        match &self.phase {
            Phase::Idle(core) => d
                .field("id", &core.state.id())
                .field("address", &format_args!("{}", core.state.address()))
                .field("buffered", &core.state.buffered()),
            Phase::Fetching(_) => d.field("phase", &"fetching"),
            Phase::Failed(_) => d.field("phase", &"failed"),
            Phase::Finished => d.field("phase", &"finished"),
        };
        d.finish()
    }
}

impl<T> Cursor<T> {
    pub(crate) fn new(
        executor: Arc<Executor>,
        state: CursorState,
        session: Option<ClientSession>,
        settings: OperationSettings,
    ) -> Self {
        Cursor {
            phase: Phase::Idle(Box::new(Core {
                executor,
                state,
                session,
                settings,
            })),
            current: None,
            kill_if_dropped: None,
            call_deadline: None,
            _documents: PhantomData,
        }
    }

    /// Moves to the next document, fetching batches if needed. Returns `false` once the cursor
    /// is exhausted. On a tailable cursor it keeps asking (`getMore`) until a document arrives,
    /// under one timeoutMS for the whole call (CSOT's iteration mode); see
    /// [`Cursor::try_advance`] for a single attempt. (Without `awaitData` the server answers
    /// each `getMore` at once, so this asks as fast as it answers: prefer an awaitData cursor,
    /// or pace `try_advance` yourself.)
    ///
    /// # Errors
    /// The `getMore`'s error (a timeout under timeoutMS); the cursor is closed afterwards.
    ///
    /// # Cancel safety
    /// Cancel safe: an in-flight `getMore` stays with the cursor and the next call resumes it.
    pub async fn advance(&mut self) -> Result<bool> {
        std::future::poll_fn(|cx| self.poll_advance(cx, Tailing::UntilDocument)).await
    }

    /// Like [`Cursor::advance`], but sends at most one `getMore`: on a tailable cursor that
    /// batch may bring nothing new, and this returns `false` with the cursor still open (see
    /// [`Cursor::is_exhausted`]).
    ///
    /// # Errors
    /// The `getMore`'s error; the cursor is closed afterwards.
    ///
    /// # Cancel safety
    /// Cancel safe, as [`Cursor::advance`].
    pub async fn try_advance(&mut self) -> Result<bool> {
        std::future::poll_fn(|cx| self.poll_advance(cx, Tailing::OneBatch)).await
    }

    /// The current document (after [`Cursor::advance`] returned `true`).
    pub fn current(&self) -> Option<&RawDocument> {
        self.current.as_deref()
    }

    /// Whether the cursor may have more documents: `true` while documents are buffered or the
    /// server cursor is still open (a `getMore` may bring more, or, at the end, an empty last
    /// batch), `false` once it is exhausted or closed after an error. Sends nothing and does not
    /// move the cursor.
    pub fn has_next(&self) -> bool {
        match &self.phase {
            Phase::Idle(core) => !core.state.is_exhausted(),
            Phase::Fetching(_) => true,
            Phase::Failed(_) | Phase::Finished => false,
        }
    }

    /// Whether the cursor is finished: exhausted, or closed after an error.
    pub fn is_exhausted(&self) -> bool {
        matches!(self.phase, Phase::Finished | Phase::Failed(_))
    }

    /// Closes the cursor now instead of at drop: the server cursor is killed in the background
    /// and the session released. Under timeoutMS the `killCursors` gets the cursor's timeout
    /// afresh, even if the cursor's own deadline has passed.
    pub fn close(mut self) {
        self.finish();
    }

    /// [`Cursor::close`] with `timeout` (instead of the cursor's timeoutMS) bounding the
    /// `killCursors`.
    pub fn close_with_timeout(mut self, timeout: Duration) {
        // The `killCursors` takes this as the cursor's timeoutMS.
        if let Phase::Idle(core) | Phase::Failed(core) = &mut self.phase {
            core.settings.operation_timeout = Some(timeout);
        }
        if let Some((_, _, own)) = &mut self.kill_if_dropped {
            *own = Some(timeout);
        }
        self.finish();
    }

    fn finish(&mut self) {
        match std::mem::replace(&mut self.phase, Phase::Finished) {
            Phase::Idle(core) | Phase::Failed(core) => core.close(),
            Phase::Fetching(_) => {
                if let Some((executor, kill, own)) = self.kill_if_dropped.take() {
                    let limit = KillLimit::starting(own, &executor, runtime::now());
                    spawn_kill(executor, kill, None, limit, None);
                }
            }
            Phase::Finished => {}
        }
    }

    fn poll_advance(&mut self, cx: &mut Context<'_>, tailing: Tailing) -> Poll<Result<bool>> {
        let result = self.poll_advance_inner(cx, tailing);
        if result.is_ready() {
            self.call_deadline = None;
        }
        result
    }

    fn poll_advance_inner(&mut self, cx: &mut Context<'_>, tailing: Tailing) -> Poll<Result<bool>> {
        loop {
            match std::mem::replace(&mut self.phase, Phase::Finished) {
                Phase::Finished => {
                    self.current = None;
                    return Poll::Ready(Ok(false));
                }
                Phase::Failed(core) => {
                    self.current = None;
                    self.phase = Phase::Failed(core);
                    return Poll::Ready(Ok(false));
                }
                Phase::Idle(mut core) => {
                    if let Some(document) = core.state.pop() {
                        self.current = Some(document);
                        self.phase = Phase::Idle(core);
                        return Poll::Ready(Ok(true));
                    }
                    self.current = None;
                    if core.state.is_exhausted() {
                        // Phase stays Finished; a server cursor left open at the limit is
                        // killed and the session returned.
                        core.close();
                        return Poll::Ready(Ok(false));
                    }
                    // A pinned cursor's connection is closed if the getMore is abandoned,
                    // and the server closes the cursor with it: nothing to kill then.
                    let kill = core.state.kill_op().filter(|_| !core.state.is_pinned());
                    self.kill_if_dropped = kill.map(|kill| {
                        let timeout = core.settings.timeout_in(None);
                        (Arc::clone(&core.executor), kill, timeout)
                    });
                    if core.state.is_tailable() {
                        core.settings.deadline = self.tailing_deadline(&core, tailing);
                    }
                    self.phase = Phase::Fetching(Box::pin(core.fetch()));
                }
                Phase::Fetching(mut fetch) => match fetch.as_mut().poll(cx) {
                    Poll::Pending => {
                        self.phase = Phase::Fetching(fetch);
                        return Poll::Pending;
                    }
                    Poll::Ready((core, result)) => {
                        self.kill_if_dropped = None;
                        if let Err(error) = result {
                            // A timed-out fetch also keeps its server cursor until the cursor
                            // is closed or dropped: killing it at once would race the caller,
                            // which is still looking at the timeout (CSOT's tests expect no
                            // killCursors after a timed-out getMore).
                            if core.state.is_pinned() || error.is_timeout() {
                                self.phase = Phase::Failed(core);
                            } else {
                                core.close();
                            }
                            return Poll::Ready(Err(error));
                        }
                        let empty_tailable = core.state.buffered() == 0
                            && core.state.is_tailable()
                            && !core.state.is_exhausted();
                        self.phase = Phase::Idle(core);
                        if empty_tailable && tailing == Tailing::OneBatch {
                            return Poll::Ready(Ok(false));
                        }
                    }
                },
            }
        }
    }
}

impl<T> Cursor<T> {
    /// The deadline of the `getMore`s of the tailable call in progress, fixed at its first.
    fn tailing_deadline(&mut self, core: &Core, tailing: Tailing) -> Option<Deadline> {
        if tailing == Tailing::OneBatch {
            return None;
        }
        let deadline = *self.call_deadline.get_or_insert_with(|| {
            let timeout = core.settings.timeout_in(core.session.as_ref());
            call_deadline(timeout, runtime::now())
        });
        Some(deadline)
    }
}

impl<T> Cursor<T> {
    /// The next buffered entry taken out whole, without deserialising it: for a cursor over a
    /// raw-batch state, the next batch's server reply. `None` once the cursor is finished.
    pub(crate) fn poll_next_raw(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<RawDocumentBuf>>> {
        match self.poll_advance(cx, Tailing::UntilDocument) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(true)) => Poll::Ready(self.current.take().map(Ok)),
            Poll::Ready(Ok(false)) => Poll::Ready(None),
            Poll::Ready(Err(error)) => Poll::Ready(Some(Err(error))),
        }
    }
}

impl<T: DeserializeOwned> Cursor<T> {
    /// The current document deserialised as `T`.
    ///
    /// # Errors
    /// `InvalidArgument` when there is no current document, `BsonDeserialization` when it does
    /// not deserialise as `T`.
    pub fn deserialize_current(&self) -> Result<T> {
        deserialize(self.current.as_deref())
    }

    /// Changes the type documents are deserialised as.
    pub fn with_type<U>(mut self) -> Cursor<U> {
        Cursor {
            phase: std::mem::replace(&mut self.phase, Phase::Finished),
            current: self.current.take(),
            kill_if_dropped: self.kill_if_dropped.take(),
            call_deadline: self.call_deadline.take(),
            _documents: PhantomData,
        }
    }
}

impl<T: DeserializeOwned> Stream for Cursor<T> {
    type Item = Result<T>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<T>>> {
        let this = self.get_mut();
        match this.poll_advance(cx, Tailing::UntilDocument) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(true)) => Poll::Ready(Some(this.deserialize_current())),
            Poll::Ready(Ok(false)) => Poll::Ready(None),
            Poll::Ready(Err(error)) => Poll::Ready(Some(Err(error))),
        }
    }
}

impl<T> Drop for Cursor<T> {
    fn drop(&mut self) {
        self.finish();
    }
}

/// `document` deserialised as `T`.
///
/// # Errors
/// `InvalidArgument` when there is no document; `BsonDeserialization` when it does not
/// deserialise.
pub(crate) fn deserialize<T: DeserializeOwned>(document: Option<&RawDocument>) -> Result<T> {
    let document = document.ok_or_else(|| {
        Error::invalid_argument("there is no current document: call advance() first")
    })?;
    bson::deserialize_from_slice(document.as_bytes())
        .map_err(|e| Error::new(ErrorKind::BsonDeserialization(e)))
}

/// The longest a background killCursors may take when the client has no timeoutMS. It is best
/// effort (the server times idle cursors out after ten minutes anyway), and
/// [`crate::Client::shutdown`] waits for it: a server that never answers must not hold shutdown up.
const KILL_CURSORS_LIMIT: Duration = Duration::from_secs(10);

/// What bounds a background `killCursors`, fixed where the cursor is closed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KillLimit {
    deadline: Deadline,
    /// No `maxTimeMS`: the cursor had no timeoutMS (see [`KillLimit::starting`]).
    omit_max_time: bool,
}

impl KillLimit {
    /// The limit of a `killCursors` closing a cursor whose timeoutMS is `timeout`, from `now`:
    /// that timeout afresh (CSOT refreshes it for the close), else [`KILL_CURSORS_LIMIT`]
    /// capped by serverSelectionTimeoutMS (as `endSessions` is at shutdown). `maxTimeMS` only
    /// when the cursor had timeoutMS: the fallback limit is the driver's own bound on a
    /// background task, not a server-side one.
    pub(crate) fn starting(timeout: Option<Duration>, executor: &Executor, now: Instant) -> Self {
        let limit = timeout
            .filter(|timeout| !timeout.is_zero())
            .unwrap_or_else(|| KILL_CURSORS_LIMIT.min(executor.options().server_selection_timeout));
        KillLimit {
            deadline: Deadline::from_timeout(Some(limit), now),
            omit_max_time: timeout.is_none(),
        }
    }

    /// When the `killCursors` must be done by.
    pub(crate) fn deadline(self) -> Deadline {
        self.deadline
    }

    /// The settings of the `killCursors` this limit bounds.
    pub(crate) fn settings(self) -> OperationSettings {
        OperationSettings {
            deadline: Some(self.deadline),
            omit_max_time: self.omit_max_time,
            ..OperationSettings::default()
        }
    }
}

/// Kills a server cursor in the background (best effort: the server also times cursors out),
/// within `limit`.
pub(crate) fn spawn_kill(
    executor: Arc<Executor>,
    kill: KillCursors,
    session: Option<ClientSession>,
    limit: KillLimit,
    pinned: Option<PinnedConnection>,
) {
    if pinned.as_ref().is_some_and(|pin| !pin.is_recoverable()) {
        // A network error broke the pinned connection: no killCursors (the server closes the
        // cursor with the connection); dropping the pin checks the connection in, closed.
        return;
    }
    let settings = limit.settings();
    let runner = Arc::clone(&executor);
    executor.spawn(async move {
        let mut session = session;
        let mut pinned = pinned;
        if let Some(pin) = pinned.as_mut() {
            // A getMore that timed out left its reply unread on the pinned connection.
            if !pin.recover(limit.deadline).await {
                return;
            }
        }
        let mut context = settings.context(session.as_mut());
        // On the cursor's pinned connection, checked in once the killCursors is done,
        // whatever its result (load-balancers, "Behaviour With Cursors").
        context.pinned = pinned.as_mut();
        if let Err(error) = runner.execute(kill, context).await {
            tracing::debug!(%error, "killCursors failed; the server will time the cursor out");
        }
        drop(pinned);
    });
}
