//! The connection pool worker (CMAP): one pool per server.
//!
//! Every decision comes from the pure state machine [`steadfast_core::pool::PoolState`], kept
//! behind a synchronous mutex that is never held across an `.await`. This module carries the
//! decisions out: it owns the idle [`Connection`]s, hands connections to waiters through
//! one-shot channels, establishes new connections on spawned tasks (so that a check-out whose
//! future is dropped never strands a pending slot), runs the background maintenance task
//! (minPoolSize, idle connections, an immediate run after a clear), interrupts in-use
//! connections when a clear asks for it, and emits every CMAP event.
//!
//! Events are emitted while the mutex is held, so subscribers see them in exactly the order of
//! the state changes they describe.

mod checkout;
mod connection;
mod errors;
mod establish;
mod log;
mod maintenance;
mod pinned;
pub mod standalone;

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use bson::oid::ObjectId;
use steadfast_core::pool::{
    CheckInDecision, CheckOutFailedReason, ConnectionClosedReason, ConnectionId, Grant, IdMap,
    PoolEvent, PoolOptions, PoolState, WaiterId,
};
use steadfast_core::{Deadline, ServerAddress};
use tokio::sync::{Notify, oneshot};

use self::connection::InterruptToken;
use crate::conn::Connection;
use crate::conn::config::ConnectionConfig;
use crate::error::{Error, Result};
use crate::event::EventEmitter;
use crate::runtime::{self, TaskTracker};

pub(crate) use self::connection::ConnectionGeneration;
pub(crate) use self::connection::PooledConnection;
pub(crate) use self::errors::{PoolFailure, failure_of};
pub(crate) use self::establish::{EstablishmentFailure, PoolErrorSink, ReportApplied};
pub(crate) use self::pinned::{PinPurpose, PinnedConnection};

/// How often the maintenance task runs when nothing asks for an earlier run.
const DEFAULT_MAINTENANCE_INTERVAL: Duration = Duration::from_secs(1);

/// The tracing target of the pool's log messages (the logging specification's `connection`
/// component).
const LOG_TARGET: &str = crate::logging::CONNECTION;

/// The tracing target of the pool's own diagnostics, which the specification does not define:
/// kept apart so that the `connection` component carries exactly the specified messages.
const DIAGNOSTIC_TARGET: &str = "steadfast::pool";

/// How long a connection whose reply timeoutMS left unread may take to deliver it before it is
/// closed instead (the figure later CMAP revisions chose for their pending responses).
const LATE_REPLY_LIMIT: Duration = Duration::from_secs(3);

/// How a pool runs its background work.
#[derive(Clone, Debug)]
pub(crate) struct PoolSettings {
    /// Where the pool spawns its tasks (establishments, maintenance); a tracker of its own,
    /// created on the first spawn, when `None`.
    pub(crate) tasks: Option<TaskTracker>,
    /// The pause between maintenance runs; `None` runs only when asked (after `ready`, a
    /// clear, or a connection leaving the pool below minPoolSize).
    pub(crate) maintenance_interval: Option<Duration>,
}

impl Default for PoolSettings {
    fn default() -> Self {
        PoolSettings {
            tasks: None,
            maintenance_interval: Some(DEFAULT_MAINTENANCE_INTERVAL),
        }
    }
}

/// How many connections and check-outs a pool has right now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolCounts {
    /// Pending + available + in use.
    pub total: usize,
    /// Established and waiting in the pool.
    pub available: usize,
    /// Being established.
    pub pending: usize,
    /// Checked out.
    pub in_use: usize,
    /// Check-outs waiting for a connection (queued or establishing one).
    pub waiters: usize,
}

/// A per-server connection pool. Cheap to clone: clones share the pool, and dropping the last
/// clone closes it (checked-out connections keep what they need to check themselves in).
#[derive(Clone)]
pub(crate) struct ConnectionPool {
    shared: Arc<Shared>,
    _closer: Arc<CloseOnDrop>,
}

/// Closes the pool when the last [`ConnectionPool`] handle goes away.
struct CloseOnDrop(Arc<Shared>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.close();
    }
}

impl std::fmt::Debug for ConnectionPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionPool")
            .field("address", &format_args!("{}", self.shared.address))
            .field("counts", &self.counts())
            .finish()
    }
}

/// What the pool and its tasks share.
pub(super) struct Shared {
    address: ServerAddress,
    options: PoolOptions,
    config: Arc<ConnectionConfig>,
    events: EventEmitter,
    sink: Option<Arc<dyn PoolErrorSink>>,
    maintenance_interval: Option<Duration>,
    /// Asks the maintenance task for an immediate run (a permit is kept if it is busy).
    maintenance_wake: Arc<Notify>,
    /// Wakes `fill` callers: a connection finished or failed establishing, or the pool was
    /// cleared or closed.
    settled: Notify,
    tasks: OnceLock<TaskTracker>,
    /// Set when the pool closes: a connection waiting for a late reply stops waiting.
    closing: InterruptToken,
    /// Checked-out connections pinned to cursors and transactions (load-balanced mode).
    pinned: pinned::PinCounts,
    inner: Mutex<Inner>,
}

/// The mutable part: the state machine and the objects its decisions refer to.
struct Inner {
    state: PoolState,
    next_waiter: WaiterId,
    waiters: IdMap<WaiterSlot>,
    /// The available connections, by id (the state machine keeps their order).
    idle: IdMap<Connection>,
    establishing: IdMap<Establishing>,
    /// The interrupt tokens of checked-out connections.
    in_use: IdMap<InterruptToken>,
    /// How many establishments have failed, so that `fill` stops at the first failure.
    failed_establishments: u64,
    /// Why the pool is paused: the error of the last clear.
    pause_cause: String,
    maintenance_started: bool,
}

/// A check-out that has not been answered yet.
struct WaiterSlot {
    sender: oneshot::Sender<Delivery>,
    started: Instant,
    phase: WaiterPhase,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WaiterPhase {
    /// In the wait queue.
    Queued,
    /// Out of the queue, waiting for the connection it was granted to be established.
    Establishing(ConnectionId),
}

/// A pending connection.
struct Establishing {
    created: Instant,
    /// The check-out it is for; `None` in the background or once that check-out left.
    waiter: Option<WaiterId>,
    task: Option<tokio::task::AbortHandle>,
}

/// The answer to a check-out.
#[allow(
    clippy::large_enum_variant,
    reason = "sent once through a oneshot channel, whose allocation holds it either way; boxing would add an allocation per check-out"
)]
enum Delivery {
    Connection {
        connection: Connection,
        generation: u32,
        interrupt: InterruptToken,
    },
    Failed(Error),
}

impl ConnectionPool {
    /// A new, paused pool for `address` with the default [`PoolSettings`]. Emits
    /// PoolCreated. Establishment errors are reported to `sdam`.
    #[allow(
        dead_code,
        reason = "the topology worker (src/sdam, landing in parallel) creates pools with it"
    )]
    pub(crate) fn new(
        address: ServerAddress,
        options: PoolOptions,
        config: Arc<ConnectionConfig>,
        events: EventEmitter,
        sdam: Option<Arc<dyn PoolErrorSink>>,
    ) -> Self {
        ConnectionPool::with_settings(
            address,
            options,
            config,
            events,
            sdam,
            PoolSettings::default(),
        )
    }

    /// [`ConnectionPool::new`] with explicit settings.
    pub(crate) fn with_settings(
        address: ServerAddress,
        options: PoolOptions,
        config: Arc<ConnectionConfig>,
        events: EventEmitter,
        sdam: Option<Arc<dyn PoolErrorSink>>,
        settings: PoolSettings,
    ) -> Self {
        let tasks = OnceLock::new();
        if let Some(tracker) = settings.tasks {
            let _ = tasks.set(tracker);
        }
        let shared = Arc::new(Shared {
            address,
            options: options.clone(),
            config,
            events,
            sink: sdam,
            maintenance_interval: settings.maintenance_interval,
            maintenance_wake: Arc::new(Notify::new()),
            settled: Notify::new(),
            tasks,
            closing: InterruptToken::default(),
            pinned: pinned::PinCounts::default(),
            inner: Mutex::new(Inner {
                state: PoolState::new(options),
                next_waiter: 1,
                waiters: IdMap::default(),
                idle: IdMap::default(),
                establishing: IdMap::default(),
                in_use: IdMap::default(),
                pause_cause: "the server has not been checked yet".to_string(),
                failed_establishments: 0,
                maintenance_started: false,
            }),
        });
        shared.emit(|| PoolEvent::PoolCreated {
            address: shared.address.clone(),
            options: shared.options.clone(),
        });
        ConnectionPool {
            _closer: Arc::new(CloseOnDrop(Arc::clone(&shared))),
            shared,
        }
    }

    /// The server this pool connects to.
    pub(crate) fn address(&self) -> &ServerAddress {
        &self.shared.address
    }

    /// The pool's generation (incremented by each clear of a non-load-balanced pool).
    pub(crate) fn generation(&self) -> u32 {
        self.shared.lock().state.generation()
    }

    /// The generation that applies to connections of `service_id` in load-balanced mode (the
    /// pool's generation otherwise, or without one).
    pub(crate) fn generation_for(&self, service_id: Option<&ObjectId>) -> u32 {
        self.shared.lock().state.generation_for(service_id)
    }

    /// The counts of connections and waiters right now.
    pub(crate) fn counts(&self) -> PoolCounts {
        let inner = self.shared.lock();
        PoolCounts {
            total: inner.state.total_connections(),
            available: inner.state.available_connections(),
            pending: inner.state.pending_connections() as usize,
            in_use: inner.in_use.len(),
            waiters: inner.waiters.len(),
        }
    }

    /// How many of the pool's tasks (establishments, maintenance) are alive.
    pub(crate) fn live_tasks(&self) -> usize {
        self.shared.tasks.get().map_or(0, TaskTracker::live)
    }

    /// Waits until none of the pool's tasks is alive (after a close, they all end).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub(crate) async fn wait_for_tasks(&self) {
        if let Some(tasks) = self.shared.tasks.get() {
            tasks.wait_until_idle().await;
        }
    }

    /// Marks the pool ready (after a successful server check): check-outs are served and the
    /// background task starts populating minPoolSize. Emits PoolReady if it was paused.
    pub(crate) fn ready(&self) {
        let mut inner = self.shared.lock();
        if inner.state.ready() {
            self.shared.emit(|| PoolEvent::PoolReady {
                address: self.shared.address.clone(),
            });
        }
        // The event is out before the background task can create anything.
        self.shared.start_or_wake_maintenance(&mut inner);
    }

    /// Clears the pool: bumps the generation (of `service_id` in load-balanced mode), pauses a
    /// non-load-balanced pool, fails every waiter with a retryable PoolClearedError naming
    /// `cause`, closes the idle connections that became stale, and, with `interrupt_in_use`,
    /// interrupts the in-use connections and cancels the pending ones of the old generation.
    /// Schedules an immediate maintenance run.
    pub(crate) fn clear(
        &self,
        cause: &Error,
        service_id: Option<ObjectId>,
        interrupt_in_use: bool,
    ) {
        self.shared.clear(cause, service_id, interrupt_in_use);
    }

    /// Closes the pool for good: idle connections are closed, pending ones cancelled, waiters
    /// failed with PoolClosedError; in-use connections are closed when checked in. Emits
    /// PoolClosed once.
    pub(crate) fn close(&self) {
        self.shared.close();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A subscriber that panicked inside an event callback must not take the pool down.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Emits a CMAP event to the subscribers and as a debug log message. The event is built
    /// only if someone listens.
    fn emit(&self, make: impl FnOnce() -> PoolEvent) {
        self.emit_with_error(make, None);
    }

    /// [`Shared::emit`] for an event caused by `error` (a failed establishment), which the log
    /// message includes.
    /// Emits ConnectionCheckOutFailed for a check-out begun at `started`; `error` is the
    /// event's cause when the reason is a connection error.
    fn emit_check_out_failed(&self, reason: CheckOutFailedReason, started: Instant, error: &Error) {
        let duration = runtime::now().saturating_duration_since(started);
        let cause = (reason == CheckOutFailedReason::ConnectionError).then_some(error);
        self.emit_with_error(
            || PoolEvent::ConnectionCheckOutFailed {
                address: self.address.clone(),
                reason,
                duration,
            },
            cause,
        );
    }

    fn emit_with_error(&self, make: impl FnOnce() -> PoolEvent, error: Option<&Error>) {
        let log = tracing::enabled!(target: LOG_TARGET, tracing::Level::DEBUG);
        if !log && !self.events.is_active() {
            return;
        }
        let event = make();
        if log {
            let error = error.map(|e| e as &dyn std::fmt::Display);
            log::event(&event, &self.address, self.events.log().topology_id, error);
        }
        self.events.cmap(|| event);
    }

    fn emit_closed(&self, connection_id: ConnectionId, reason: ConnectionClosedReason) {
        self.emit(|| PoolEvent::ConnectionClosed {
            address: self.address.clone(),
            connection_id,
            reason,
        });
    }

    fn tasks(&self) -> Result<&TaskTracker> {
        if let Some(tasks) = self.tasks.get() {
            return Ok(tasks);
        }
        let tracker = TaskTracker::new()?;
        Ok(self.tasks.get_or_init(|| tracker))
    }

    fn wake_maintenance(&self) {
        self.maintenance_wake.notify_one();
    }

    /// Serves the wait queue for as long as the state machine can, carrying out its grants.
    fn service(self: &Arc<Self>, inner: &mut Inner) {
        self.service_at(inner, runtime::now());
    }

    /// [`Shared::service`] with the clock already read (at `now`) by the caller.
    fn service_at(self: &Arc<Self>, inner: &mut Inner, mut now: Instant) {
        loop {
            let outcome = inner.state.service(now);
            if outcome.grants.is_empty() && outcome.closed.is_empty() {
                return;
            }
            for (id, reason) in outcome.closed {
                inner.idle.remove(&id);
                self.emit_closed(id, reason);
            }
            for grant in outcome.grants {
                match grant {
                    Grant::Existing { waiter, connection } => {
                        match inner.idle.remove(&connection) {
                            Some(idle) => self.deliver(inner, waiter, idle),
                            None => {
                                // The state machine and the idle map disagree: forget the id
                                // rather than hand out a connection that does not exist.
                                inner.state.remove(connection);
                                self.fail_waiter(
                                    inner,
                                    waiter,
                                    Error::network("the pool lost track of an idle connection")
                                        .with_address(&self.address),
                                    CheckOutFailedReason::ConnectionError,
                                );
                            }
                        }
                    }
                    Grant::Create {
                        waiter, connection, ..
                    } => {
                        match inner.waiters.get_mut(&waiter) {
                            Some(slot) => slot.phase = WaiterPhase::Establishing(connection),
                            None => {
                                inner.state.abandon(connection);
                            }
                        }
                        let waiter = inner.waiters.contains_key(&waiter).then_some(waiter);
                        self.start_establishing(inner, connection, waiter);
                    }
                }
            }
            now = runtime::now();
        }
    }

    /// Hands an in-use connection to `waiter` (emitting ConnectionCheckedOut), or, if that
    /// check-out is gone, puts the connection back.
    fn deliver(self: &Arc<Self>, inner: &mut Inner, waiter: WaiterId, connection: Connection) {
        let id = connection.id();
        let Some(slot) = inner.waiters.remove(&waiter) else {
            // No CheckedOut was emitted for it, so it goes back without a CheckedIn.
            self.return_unclaimed(inner, connection);
            return;
        };
        let (generation, interrupt) = self.mark_checked_out(inner, id, slot.started);
        let delivery = Delivery::Connection {
            connection,
            generation,
            interrupt,
        };
        if let Err(Delivery::Connection { connection, .. }) = slot.sender.send(delivery) {
            // The check-out's receiver is only dropped after it removed its slot under this
            // lock, so this does not happen; should it, the connection is not lost.
            let healthy = connection.is_reusable();
            self.check_in_locked(inner, connection, healthy, runtime::now());
        }
    }

    /// Records a connection the state machine handed out as in use (with the token a clear
    /// interrupts it by) and emits ConnectionCheckedOut for a check-out begun at `started`.
    /// Returns the connection's generation and that token.
    fn mark_checked_out(
        &self,
        inner: &mut Inner,
        id: ConnectionId,
        started: Instant,
    ) -> (u32, InterruptToken) {
        let generation = inner
            .state
            .generation_of(id)
            .unwrap_or_else(|| inner.state.generation());
        let interrupt = InterruptToken::default();
        inner.in_use.insert(id, interrupt.clone());
        // The clock is read only for the event that reports the duration.
        self.emit(|| PoolEvent::ConnectionCheckedOut {
            address: self.address.clone(),
            connection_id: id,
            duration: runtime::now().saturating_duration_since(started),
        });
        (generation, interrupt)
    }

    /// Puts back a connection that the state machine marked in use but nobody received.
    fn return_unclaimed(&self, inner: &mut Inner, connection: Connection) {
        let id = connection.id();
        let healthy = connection.is_reusable();
        match inner.state.check_in(id, healthy, runtime::now()) {
            CheckInDecision::Pool => {
                inner.idle.insert(id, connection);
            }
            CheckInDecision::Close(reason) => self.emit_closed(id, reason),
        }
    }

    /// Fails a check-out, emitting ConnectionCheckOutFailed.
    fn fail_waiter(
        &self,
        inner: &mut Inner,
        waiter: WaiterId,
        error: Error,
        reason: CheckOutFailedReason,
    ) {
        let Some(slot) = inner.waiters.remove(&waiter) else {
            return;
        };
        self.emit_check_out_failed(reason, slot.started, &error);
        // The receiver is gone only if the check-out already left; nothing to do then.
        let _ = slot.sender.send(Delivery::Failed(error));
    }

    /// Checks a connection in (from a dropped [`PooledConnection`]).
    fn check_in(self: &Arc<Self>, connection: Connection, healthy: bool) {
        let mut inner = self.lock();
        // One reading of the clock serves the check-in and the wait queue after it.
        let now = runtime::now();
        self.check_in_locked(&mut inner, connection, healthy, now);
        self.service_at(&mut inner, now);
    }

    /// Checks in a connection that owes a reply timeoutMS left unread, once that reply has
    /// been read and discarded (within [`LATE_REPLY_LIMIT`]); it is closed if the reply does not
    /// come, the pool closes, or a clear interrupts it. Meanwhile it stays checked out, so it
    /// counts against maxPoolSize and a clear can interrupt it.
    fn check_in_after_late_reply(
        self: &Arc<Self>,
        mut connection: Connection,
        interrupt: InterruptToken,
    ) {
        let Ok(tasks) = self.tasks() else {
            self.check_in(connection, false);
            return;
        };
        let pool = Arc::clone(self);
        tasks.spawn(async move {
            let deadline = Deadline::after(LATE_REPLY_LIMIT, runtime::now());
            let drained = tokio::select! {
                biased;
                () = interrupt.interrupted() => false,
                () = pool.closing.interrupted() => false,
                drained = connection.drain_late_reply(deadline) => drained,
            };
            // A drain cut short leaves the connection draining, which is not reusable: it is closed.
            pool.check_in(connection, drained && !interrupt.is_interrupted());
        });
    }

    fn check_in_locked(
        &self,
        inner: &mut Inner,
        connection: Connection,
        healthy: bool,
        now: Instant,
    ) {
        let id = connection.id();
        inner.in_use.remove(&id);
        self.emit(|| PoolEvent::ConnectionCheckedIn {
            address: self.address.clone(),
            connection_id: id,
        });
        match inner.state.check_in(id, healthy, now) {
            CheckInDecision::Pool => {
                inner.idle.insert(id, connection);
            }
            CheckInDecision::Close(reason) => {
                // An unhealthy connection still mid-exchange was abandoned by a cancelled
                // operation rather than broken by an error.
                let reason = match reason {
                    ConnectionClosedReason::Error if connection.is_mid_exchange() => {
                        ConnectionClosedReason::Dropped
                    }
                    other => other,
                };
                tracing::debug!(target: DIAGNOSTIC_TARGET, connection = id, reason = reason.as_str(),
                    address = %self.address, "closing a checked-in connection");
                self.emit_closed(id, reason);
                if self.options.min_pool_size > 0 {
                    self.wake_maintenance();
                }
            }
        }
    }

    fn clear(
        self: &Arc<Self>,
        cause: &Error,
        service_id: Option<ObjectId>,
        interrupt_in_use: bool,
    ) {
        let mut inner = self.lock();
        let outcome = inner.state.clear(service_id, interrupt_in_use);
        if !self.options.load_balanced {
            inner.pause_cause = cause.to_string();
        }
        if outcome.emit_event {
            self.emit(|| PoolEvent::PoolCleared {
                address: self.address.clone(),
                service_id,
                interrupt_in_use_connections: interrupt_in_use,
            });
        }
        tracing::debug!(target: DIAGNOSTIC_TARGET, address = %self.address, %cause,
            generation = inner.state.generation(), interrupt_in_use,
            failed_waiters = outcome.failed_waiters.len(), "pool cleared");
        for waiter in outcome.failed_waiters {
            let error = errors::pool_cleared(&self.address, &inner.pause_cause);
            self.fail_waiter(
                &mut inner,
                waiter,
                error,
                CheckOutFailedReason::ConnectionError,
            );
        }
        for id in outcome.closed {
            inner.idle.remove(&id);
            self.emit_closed(id, ConnectionClosedReason::Stale);
        }
        for id in outcome.interrupt {
            if let Some(token) = inner.in_use.get(&id) {
                token.interrupt();
            }
        }
        for id in outcome.cancelled {
            let error = errors::pool_cleared(&self.address, &inner.pause_cause);
            self.cancel_establishing(
                &mut inner,
                id,
                ConnectionClosedReason::Stale,
                error,
                CheckOutFailedReason::ConnectionError,
            );
        }
        self.wake_maintenance();
        self.settled.notify_waiters();
    }

    fn close(self: &Arc<Self>) {
        self.closing.interrupt();
        let mut inner = self.lock();
        let outcome = inner.state.close();
        if !outcome.emit_event {
            return;
        }
        for id in outcome.closed {
            inner.idle.remove(&id);
            self.emit_closed(id, ConnectionClosedReason::PoolClosed);
        }
        for id in outcome.cancelled {
            self.cancel_establishing(
                &mut inner,
                id,
                ConnectionClosedReason::PoolClosed,
                errors::pool_closed(&self.address),
                CheckOutFailedReason::PoolClosed,
            );
        }
        for waiter in outcome.failed_waiters {
            let error = errors::pool_closed(&self.address);
            self.fail_waiter(&mut inner, waiter, error, CheckOutFailedReason::PoolClosed);
        }
        self.emit(|| PoolEvent::PoolClosed {
            address: self.address.clone(),
        });
        // The maintenance task sees the closed state and ends.
        self.wake_maintenance();
        self.settled.notify_waiters();
    }

    /// Stops the establishment of a pending connection the state machine already forgot,
    /// failing the check-out it was for.
    fn cancel_establishing(
        &self,
        inner: &mut Inner,
        id: ConnectionId,
        reason: ConnectionClosedReason,
        error: Error,
        failed: CheckOutFailedReason,
    ) {
        let Some(entry) = inner.establishing.remove(&id) else {
            return;
        };
        if let Some(task) = &entry.task {
            task.abort();
        }
        self.emit_closed(id, reason);
        if let Some(waiter) = entry.waiter {
            self.fail_waiter(inner, waiter, error, failed);
        }
    }
}
