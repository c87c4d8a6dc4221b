//! The connection pool (CMAP) as a pure state machine.
//!
//! [`PoolState`] holds everything the specification says a pool knows — its status, generation,
//! per-service generations, the connections it owns and in which state, and the FIFO wait queue —
//! and answers every question with a decision value. The async pool worker in `steadfast` owns one
//! `PoolState` per server, performs the I/O the decisions ask for (establish, close, interrupt) and
//! reports the results back. Keeping the rules here means that the fairness of the wait queue,
//! `maxConnecting`, generations and perishing are unit-tested without sockets or a clock.

pub mod events;

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::time::{Duration, Instant};

use bson::oid::ObjectId;

pub use events::{CheckOutFailedReason, ConnectionClosedReason, PoolEvent};

use crate::options::ClientOptions;

/// The identifier of a connection within its pool: assigned from 1 in order of creation.
pub type ConnectionId = u64;

/// The identifier the worker gives a check-out request while it waits in the queue.
pub type WaiterId = u64;

/// A map keyed by a [`ConnectionId`] or a [`WaiterId`]. The ids are the pool's own counters,
/// never taken from the network, so they need no collision-resistant hash: the pool looks ids
/// up several times per operation, and [`IdHasher`] costs a few instructions where the
/// standard library's SipHash costs over a hundred.
pub type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;

/// The hasher of [`IdMap`]: one multiplication by an odd constant (Fibonacci hashing), which
/// spreads consecutive ids over both the low bits (the bucket) and the high bits (the hash
/// table's tag).
#[derive(Clone, Copy, Debug, Default)]
pub struct IdHasher(u64);

/// 2^64 divided by the golden ratio, rounded to odd.
const FIBONACCI: u64 = 0x9E37_79B9_7F4A_7C15;

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Ids are hashed by `write_u64`; any other input still hashes deterministically.
        for &byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(byte)).wrapping_mul(FIBONACCI);
        }
    }

    fn write_u64(&mut self, id: u64) {
        self.0 = (self.0 ^ id).wrapping_mul(FIBONACCI);
    }
}

/// The pool options of the CMAP specification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolOptions {
    /// The most connections (pending, available and in use) the pool may hold; `None` is
    /// unlimited (`maxPoolSize=0` in a connection string).
    pub max_pool_size: Option<u32>,
    /// Connections kept open in the background while the pool is ready.
    pub min_pool_size: u32,
    /// The most connections being established at once.
    pub max_connecting: u32,
    /// How long a connection may stay available before it is closed as idle.
    pub max_idle_time: Option<Duration>,
    /// Whether the pool serves a load balancer (per-`serviceId` generations, no pausing).
    pub load_balanced: bool,
    /// How long a check-out may wait in the queue (`waitQueueTimeoutMS`); `None` is no limit
    /// beyond the operation's own deadline. The worker enforces it: the state machine has no
    /// clock.
    pub wait_queue_timeout: Option<Duration>,
}

impl From<&ClientOptions> for PoolOptions {
    /// The pool options a client's options imply (`maxPoolSize=0` becomes unlimited, a zero
    /// `maxIdleTimeMS` or `waitQueueTimeoutMS` means no limit).
    fn from(options: &ClientOptions) -> Self {
        PoolOptions {
            max_pool_size: (options.max_pool_size != 0).then_some(options.max_pool_size),
            min_pool_size: options.min_pool_size,
            max_connecting: options.max_connecting.max(1),
            max_idle_time: options.max_idle_time.filter(|t| !t.is_zero()),
            load_balanced: options.load_balanced,
            wait_queue_timeout: options.wait_queue_timeout.filter(|t| !t.is_zero()),
        }
    }
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions {
            max_pool_size: Some(100),
            min_pool_size: 0,
            max_connecting: 2,
            max_idle_time: None,
            load_balanced: false,
            wait_queue_timeout: None,
        }
    }
}

/// The three states of a pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolStatus {
    /// The initial state, and the state after a clear: no check-outs, no background creation.
    Paused,
    /// Serving check-outs and populating to `minPoolSize`.
    Ready,
    /// Closed for good.
    Closed,
}

/// Where a connection is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ConnectionState {
    /// Being established; `for_waiter` is set when a check-out created it.
    Pending { for_waiter: bool },
    /// In the pool since the given instant.
    Available { since: Instant },
    /// Checked out.
    InUse,
}

#[derive(Clone, Debug)]
struct ConnectionRecord {
    generation: u32,
    service_id: Option<ObjectId>,
    state: ConnectionState,
}

/// Why a check-out could not even join the wait queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckOutRefusal {
    /// The pool is closed (PoolClosedError).
    Closed,
    /// The pool is paused after a clear (PoolClearedError: retryable, does not mark the server
    /// Unknown).
    Paused,
}

/// What a waiter at the head of the queue was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grant {
    /// An established connection taken from the pool, now in use.
    Existing {
        /// The waiter served.
        waiter: WaiterId,
        /// The connection handed over.
        connection: ConnectionId,
    },
    /// A new pending connection that the waiter must establish (and then report with
    /// [`PoolState::established`] or [`PoolState::establish_failed`]).
    Create {
        /// The waiter served.
        waiter: WaiterId,
        /// The new connection's id.
        connection: ConnectionId,
        /// The generation the connection belongs to.
        generation: u32,
    },
}

/// The result of servicing the wait queue: grants to hand out and perished connections to close.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceOutcome {
    /// Waiters served, in queue order.
    pub grants: Vec<Grant>,
    /// Available connections found perished on the way, to be closed.
    pub closed: Vec<(ConnectionId, ConnectionClosedReason)>,
}

/// The answer to [`PoolState::check_out_idle`]: an available connection handed over at once,
/// or none (the request joins the wait queue), and the perished connections met on the way.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IdleCheckOut {
    /// The connection handed over, now in use; `None` when the request must wait its turn.
    pub connection: Option<ConnectionId>,
    /// Available connections found perished on the way, to be closed.
    pub closed: Vec<(ConnectionId, ConnectionClosedReason)>,
}

/// What to do with a connection being checked in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckInDecision {
    /// Keep it: it is available again.
    Pool,
    /// Close it, for the reason given.
    Close(ConnectionClosedReason),
}

/// What to do with a connection whose establishment just succeeded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EstablishedDecision {
    /// Hand it to the waiter that created it: it is now in use.
    HandToWaiter,
    /// It was created in the background (or its waiter left): it is now available. Call
    /// [`PoolState::service`]: a waiter may be waiting for it.
    MakeAvailable,
    /// Close it: the pool was closed, or it is a background connection that a clear made stale
    /// while it was being established. The pool has already forgotten it.
    Close(ConnectionClosedReason),
    /// The pool no longer knows it (a clear with `interruptInUseConnections` or a close
    /// cancelled it and already reported it closed): drop it silently.
    Forgotten,
}

/// What a clear asks the worker to do.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClearOutcome {
    /// Whether a PoolClearedEvent is due (not when the pool was already paused).
    pub emit_event: bool,
    /// Waiters to fail with a retryable PoolClearedError, eagerly.
    pub failed_waiters: Vec<WaiterId>,
    /// In-use connections to interrupt (only with `interruptInUseConnections`).
    pub interrupt: Vec<ConnectionId>,
    /// Pending connections of the old generation whose establishment must be cancelled (only
    /// with `interruptInUseConnections`): the pool has forgotten them. A waiter that was
    /// establishing one of them fails with a retryable PoolClearedError.
    pub cancelled: Vec<ConnectionId>,
    /// Available connections that are now stale and can be closed right away.
    pub closed: Vec<ConnectionId>,
}

/// What closing the pool asks the worker to do.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CloseOutcome {
    /// Whether a PoolClosedEvent is due (not when the pool was already closed).
    pub emit_event: bool,
    /// Available connections to close.
    pub closed: Vec<ConnectionId>,
    /// Pending connections whose establishment must be cancelled; the pool has forgotten them.
    pub cancelled: Vec<ConnectionId>,
    /// Waiters to fail with PoolClosedError.
    pub failed_waiters: Vec<WaiterId>,
}

/// Background work for one maintenance run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MaintenanceOutcome {
    /// Perished available connections to close.
    pub closed: Vec<(ConnectionId, ConnectionClosedReason)>,
    /// New pending connections to establish and then report with [`PoolState::established`].
    pub create: Vec<(ConnectionId, u32)>,
}

/// The state of one pool. See the module documentation.
#[derive(Clone, Debug)]
pub struct PoolState {
    options: PoolOptions,
    status: PoolStatus,
    generation: u32,
    service_generations: HashMap<ObjectId, ServiceEntry>,
    next_connection_id: ConnectionId,
    connections: IdMap<ConnectionRecord>,
    /// Available connections, most recently checked in last (taken LIFO to keep the hot set small
    /// and let idle ones age out).
    available: Vec<ConnectionId>,
    pending: u32,
    wait_queue: VecDeque<WaiterId>,
}

#[derive(Clone, Copy, Debug, Default)]
struct ServiceEntry {
    generation: u32,
    connections: u32,
}

impl PoolState {
    /// A new pool: paused, generation 0.
    pub fn new(options: PoolOptions) -> Self {
        PoolState {
            options,
            status: PoolStatus::Paused,
            generation: 0,
            service_generations: HashMap::new(),
            next_connection_id: 1,
            connections: IdMap::default(),
            available: Vec::new(),
            pending: 0,
            wait_queue: VecDeque::new(),
        }
    }

    /// The pool's options.
    pub fn options(&self) -> &PoolOptions {
        &self.options
    }

    /// Paused, ready or closed.
    pub fn status(&self) -> PoolStatus {
        self.status
    }

    /// The pool's generation (non-load-balanced mode).
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// The generation that applies to connections of `service_id` (load-balanced mode), or the
    /// pool generation without one.
    pub fn generation_for(&self, service_id: Option<&ObjectId>) -> u32 {
        match service_id {
            Some(id) if self.options.load_balanced => self
                .service_generations
                .get(id)
                .map_or(0, |entry| entry.generation),
            _ => self.generation,
        }
    }

    /// Pending + available + in use.
    pub fn total_connections(&self) -> usize {
        self.connections.len()
    }

    /// Connections waiting in the pool.
    pub fn available_connections(&self) -> usize {
        self.available.len()
    }

    /// Connections being established.
    pub fn pending_connections(&self) -> u32 {
        self.pending
    }

    /// Check-out requests waiting.
    pub fn waiters(&self) -> usize {
        self.wait_queue.len()
    }

    /// Marks the pool ready. Returns whether it changed (and so whether a PoolReadyEvent is due).
    pub fn ready(&mut self) -> bool {
        if self.status == PoolStatus::Paused {
            self.status = PoolStatus::Ready;
            true
        } else {
            false
        }
    }

    /// Closes the pool for good: the available connections are closed, pending establishments
    /// cancelled and waiters failed with PoolClosedError. In-use connections are closed when
    /// they are checked in. Closing a closed pool does nothing.
    pub fn close(&mut self) -> CloseOutcome {
        if self.status == PoolStatus::Closed {
            return CloseOutcome::default();
        }
        self.status = PoolStatus::Closed;
        let closed: Vec<ConnectionId> = std::mem::take(&mut self.available);
        for id in &closed {
            self.forget(*id);
        }
        let cancelled = self.ids_where(|r| matches!(r.state, ConnectionState::Pending { .. }));
        for id in &cancelled {
            self.forget(*id);
        }
        CloseOutcome {
            emit_event: true,
            closed,
            cancelled,
            failed_waiters: self.wait_queue.drain(..).collect(),
        }
    }

    /// The generation a known connection belongs to (its service's, in load-balanced mode).
    pub fn generation_of(&self, connection: ConnectionId) -> Option<u32> {
        self.connections.get(&connection).map(|r| r.generation)
    }

    /// Whether `connection` is being established.
    pub fn is_pending(&self, connection: ConnectionId) -> bool {
        matches!(
            self.connections.get(&connection).map(|r| r.state),
            Some(ConnectionState::Pending { .. })
        )
    }

    /// The waiter that a [`Grant::Create`] was for left before the connection was established
    /// (its future was dropped or its deadline passed). The connection keeps being established
    /// and will become available instead of in use. Returns whether it was still pending.
    pub fn abandon(&mut self, connection: ConnectionId) -> bool {
        match self.connections.get_mut(&connection) {
            Some(record) if matches!(record.state, ConnectionState::Pending { .. }) => {
                record.state = ConnectionState::Pending { for_waiter: false };
                true
            }
            _ => false,
        }
    }

    /// A check-out request joins the wait queue. Call [`PoolState::service`] afterwards.
    ///
    /// # Errors
    /// [`CheckOutRefusal`] when the pool is closed or paused.
    pub fn enqueue(&mut self, waiter: WaiterId) -> Result<(), CheckOutRefusal> {
        self.accepting()?;
        self.wait_queue.push_back(waiter);
        Ok(())
    }

    /// Whether the pool takes check-outs: not when closed, nor paused (unless load-balanced).
    fn accepting(&self) -> Result<(), CheckOutRefusal> {
        match self.status {
            PoolStatus::Closed => Err(CheckOutRefusal::Closed),
            PoolStatus::Paused if !self.options.load_balanced => Err(CheckOutRefusal::Paused),
            _ => Ok(()),
        }
    }

    /// Serves a check-out at once from the available connections, without it joining the wait
    /// queue. Only when nobody is queued: an earlier request is never passed over (CMAP serves
    /// requests in the order they arrive), so this is exactly what [`PoolState::enqueue`] then
    /// [`PoolState::service`] would decide for a request arriving at an empty queue, minus the
    /// queue. When it hands nothing over, the caller enqueues the request as usual.
    ///
    /// # Errors
    /// [`CheckOutRefusal`] when the pool is closed or paused, as [`PoolState::enqueue`].
    pub fn check_out_idle(&mut self, now: Instant) -> Result<IdleCheckOut, CheckOutRefusal> {
        self.accepting()?;
        let mut outcome = IdleCheckOut::default();
        if self.wait_queue.is_empty() {
            outcome.connection = self.take_available(now, &mut outcome.closed);
        }
        Ok(outcome)
    }

    /// A waiter left the queue without being served (timed out or its future was dropped).
    /// Returns whether it was still queued. Call [`PoolState::service`] afterwards: the next
    /// waiter may now be at the head.
    pub fn cancel(&mut self, waiter: WaiterId) -> bool {
        let before = self.wait_queue.len();
        self.wait_queue.retain(|w| *w != waiter);
        before != self.wait_queue.len()
    }

    /// Serves the wait queue in order for as long as the head can be served: with a non-perished
    /// available connection (closing perished ones met on the way), or with a new pending
    /// connection while under `maxPoolSize` and `maxConnecting`. A newer request is never served
    /// before an older one.
    ///
    /// While a connection started in the background (for `minPoolSize`, or abandoned by its
    /// waiter) is still being established and nobody has claimed it, the head waits for it
    /// instead of starting another one: it was started earlier, so it is ready sooner, and a
    /// second connection would overshoot the pool size the background run aimed for.
    pub fn service(&mut self, now: Instant) -> ServiceOutcome {
        let mut outcome = ServiceOutcome::default();
        while let Some(&waiter) = self.wait_queue.front() {
            if let Some(connection) = self.take_available(now, &mut outcome.closed) {
                self.wait_queue.pop_front();
                outcome.grants.push(Grant::Existing { waiter, connection });
            } else if self.unclaimed_background_pending() > 0 {
                break;
            } else if self.may_create() {
                self.wait_queue.pop_front();
                let (connection, generation) = self.create(true);
                outcome.grants.push(Grant::Create {
                    waiter,
                    connection,
                    generation,
                });
            } else {
                break;
            }
        }
        outcome
    }

    /// A pending connection finished its handshake. One created for a waiter is now in use; one
    /// created in the background is available. `service_id` is the handshake's (load-balanced).
    /// Call [`PoolState::service`] afterwards: `maxConnecting` may have been freed.
    pub fn established(
        &mut self,
        connection: ConnectionId,
        service_id: Option<ObjectId>,
        now: Instant,
    ) -> EstablishedDecision {
        let Some(record) = self.connections.get(&connection) else {
            return EstablishedDecision::Forgotten;
        };
        let ConnectionState::Pending { for_waiter } = record.state else {
            return EstablishedDecision::Forgotten;
        };
        if self.status == PoolStatus::Closed {
            self.forget(connection);
            return EstablishedDecision::Close(ConnectionClosedReason::PoolClosed);
        }
        if !for_waiter && !self.options.load_balanced && self.is_stale(record) {
            // Nobody waits for it and a clear made it stale on the way: pooling it would only
            // mean closing it at the next check-out.
            self.forget(connection);
            return EstablishedDecision::Close(ConnectionClosedReason::Stale);
        }
        let Some(record) = self.connections.get_mut(&connection) else {
            return EstablishedDecision::Forgotten;
        };
        self.pending -= 1;
        if self.options.load_balanced
            && let Some(id) = service_id
        {
            let entry = self.service_generations.entry(id).or_default();
            entry.connections += 1;
            record.generation = entry.generation;
            record.service_id = Some(id);
        }
        if for_waiter {
            record.state = ConnectionState::InUse;
            EstablishedDecision::HandToWaiter
        } else {
            record.state = ConnectionState::Available { since: now };
            self.available.push(connection);
            EstablishedDecision::MakeAvailable
        }
    }

    /// A pending connection failed to establish: it is gone. Returns whether the pool still
    /// knew it (a cancelled one was already reported closed). Call [`PoolState::service`]
    /// afterwards.
    pub fn establish_failed(&mut self, connection: ConnectionId) -> bool {
        if self.is_pending(connection) {
            self.forget(connection);
            true
        } else {
            false
        }
    }

    /// An in-use connection comes back. `healthy` is false when it hit an error (network,
    /// timeout, protocol) and must be closed. Call [`PoolState::service`] afterwards.
    pub fn check_in(
        &mut self,
        connection: ConnectionId,
        healthy: bool,
        now: Instant,
    ) -> CheckInDecision {
        let Some(record) = self.connections.get(&connection) else {
            // Already closed (interrupted by a clear, or by pool close): nothing to keep.
            return CheckInDecision::Close(ConnectionClosedReason::Stale);
        };
        let decision = if self.status == PoolStatus::Closed {
            CheckInDecision::Close(ConnectionClosedReason::PoolClosed)
        } else if !healthy {
            CheckInDecision::Close(ConnectionClosedReason::Error)
        } else if self.is_stale(record) {
            CheckInDecision::Close(ConnectionClosedReason::Stale)
        } else {
            CheckInDecision::Pool
        };
        match decision {
            CheckInDecision::Pool => {
                if let Some(record) = self.connections.get_mut(&connection) {
                    record.state = ConnectionState::Available { since: now };
                }
                self.available.push(connection);
            }
            CheckInDecision::Close(_) => self.forget(connection),
        }
        decision
    }

    /// Clears the pool: bumps the generation (of `service_id` in load-balanced mode), pauses a
    /// non-load-balanced pool, fails every waiter, and lists in-use connections of the old
    /// generation to interrupt when `interrupt_in_use` is set.
    pub fn clear(&mut self, service_id: Option<ObjectId>, interrupt_in_use: bool) -> ClearOutcome {
        let mut outcome = ClearOutcome::default();
        if self.status == PoolStatus::Closed {
            return outcome;
        }
        if self.options.load_balanced {
            // Load-balanced pools never pause and keep their waiters; only that service's
            // connections become stale.
            // A service without connections has no entry (the specification drops entries whose
            // count reaches 0), and nothing of it can become stale.
            if let Some(entry) = service_id.and_then(|id| self.service_generations.get_mut(&id)) {
                entry.generation += 1;
            }
            outcome.emit_event = true;
        } else {
            let old_generation = self.generation;
            self.generation += 1;
            outcome.emit_event = self.status != PoolStatus::Paused;
            self.status = PoolStatus::Paused;
            outcome.failed_waiters = self.wait_queue.drain(..).collect();
            if interrupt_in_use {
                let interrupt = self.ids_where(|r| {
                    r.state == ConnectionState::InUse && r.generation <= old_generation
                });
                let cancelled = self.ids_where(|r| {
                    matches!(r.state, ConnectionState::Pending { .. })
                        && r.generation <= old_generation
                });
                for id in interrupt.iter().chain(&cancelled) {
                    self.forget(*id);
                }
                outcome.interrupt = interrupt;
                outcome.cancelled = cancelled;
            }
        }
        let stale: Vec<ConnectionId> = self
            .available
            .iter()
            .copied()
            .filter(|id| self.connections.get(id).is_some_and(|r| self.is_stale(r)))
            .collect();
        for id in &stale {
            self.forget(*id);
        }
        outcome.closed = stale;
        outcome
    }

    /// One background run: close perished available connections, and, while ready, start as
    /// many connections as `minPoolSize` still needs within `maxConnecting`. A run does what it
    /// can now and never waits.
    pub fn maintain(&mut self, now: Instant) -> MaintenanceOutcome {
        let mut outcome = MaintenanceOutcome::default();
        let perished: Vec<(ConnectionId, ConnectionClosedReason)> = self
            .available
            .iter()
            .filter_map(|id| {
                let record = self.connections.get(id)?;
                self.perish_reason(record, now).map(|reason| (*id, reason))
            })
            .collect();
        for (id, _) in &perished {
            self.forget(*id);
        }
        outcome.closed = perished;
        if self.status == PoolStatus::Ready {
            while self.connections.len() < self.options.min_pool_size as usize && self.may_create()
            {
                outcome.create.push(self.create(false));
            }
        }
        outcome
    }

    /// Forgets a connection that the worker closed for its own reasons (for example an
    /// interrupted in-use connection whose task reported back). Returns whether it was known.
    pub fn remove(&mut self, connection: ConnectionId) -> bool {
        let known = self.connections.contains_key(&connection);
        self.forget(connection);
        known
    }

    /// The ids of the connections whose record satisfies `predicate`, in creation order.
    fn ids_where(&self, predicate: impl Fn(&ConnectionRecord) -> bool) -> Vec<ConnectionId> {
        let mut ids: Vec<ConnectionId> = self
            .connections
            .iter()
            .filter(|(_, r)| predicate(r))
            .map(|(id, _)| *id)
            .collect();
        ids.sort_unstable();
        ids
    }

    /// Pending connections that no waiter is establishing.
    fn unclaimed_background_pending(&self) -> usize {
        self.connections
            .values()
            .filter(|r| r.state == ConnectionState::Pending { for_waiter: false })
            .count()
    }

    fn may_create(&self) -> bool {
        let under_max = self
            .options
            .max_pool_size
            .is_none_or(|max| self.connections.len() < max as usize);
        under_max && self.pending < self.options.max_connecting
    }

    fn create(&mut self, for_waiter: bool) -> (ConnectionId, u32) {
        let id = self.next_connection_id;
        self.next_connection_id += 1;
        self.pending += 1;
        self.connections.insert(
            id,
            ConnectionRecord {
                generation: self.generation,
                service_id: None,
                state: ConnectionState::Pending { for_waiter },
            },
        );
        (id, self.generation)
    }

    fn take_available(
        &mut self,
        now: Instant,
        closed: &mut Vec<(ConnectionId, ConnectionClosedReason)>,
    ) -> Option<ConnectionId> {
        while let Some(id) = self.available.pop() {
            let Some(record) = self.connections.get(&id) else {
                continue;
            };
            if let Some(reason) = self.perish_reason(record, now) {
                self.forget(id);
                closed.push((id, reason));
                continue;
            }
            if let Some(record) = self.connections.get_mut(&id) {
                record.state = ConnectionState::InUse;
            }
            return Some(id);
        }
        None
    }

    fn is_stale(&self, record: &ConnectionRecord) -> bool {
        record.generation != self.generation_for(record.service_id.as_ref())
    }

    fn perish_reason(
        &self,
        record: &ConnectionRecord,
        now: Instant,
    ) -> Option<ConnectionClosedReason> {
        if self.is_stale(record) {
            return Some(ConnectionClosedReason::Stale);
        }
        match (record.state, self.options.max_idle_time) {
            (ConnectionState::Available { since }, Some(max_idle))
                if now.saturating_duration_since(since) >= max_idle =>
            {
                Some(ConnectionClosedReason::Idle)
            }
            _ => None,
        }
    }

    /// Removes a connection from every count.
    fn forget(&mut self, id: ConnectionId) {
        let Some(record) = self.connections.remove(&id) else {
            return;
        };
        match record.state {
            ConnectionState::Pending { .. } => self.pending -= 1,
            ConnectionState::Available { .. } => self.available.retain(|a| *a != id),
            ConnectionState::InUse => {}
        }
        if let Some(service) = record.service_id
            && let Some(entry) = self.service_generations.get_mut(&service)
        {
            entry.connections = entry.connections.saturating_sub(1);
            if entry.connections == 0 {
                self.service_generations.remove(&service);
            }
        }
    }
}

#[cfg(test)]
mod tests;
