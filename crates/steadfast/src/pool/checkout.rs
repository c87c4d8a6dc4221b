//! Checking a connection out: join the wait queue, wait for a delivery within the wait-queue
//! timeout and the operation's deadline, and leave nothing behind if the future is dropped.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use steadfast_core::Deadline;
use steadfast_core::pool::{CheckOutFailedReason, CheckOutRefusal, PoolEvent, WaiterId};
use tokio::sync::oneshot;
use tracing::Instrument as _;

use super::{
    ConnectionPool, Delivery, Inner, PooledConnection, Shared, WaiterPhase, WaiterSlot, errors,
};
use crate::error::{Error, Result};
use crate::runtime;

impl ConnectionPool {
    /// Checks out a connection: an idle one, or a new one established for this check-out, in
    /// the order check-outs arrived. Waiting in the queue is limited by `waitQueueTimeoutMS`
    /// and `deadline`, whichever is earlier; once a new connection is being established for
    /// this check-out only `deadline` applies (the establishment itself is bounded by
    /// connectTimeoutMS).
    ///
    /// # Errors
    /// PoolClosedError when the pool is closed; a retryable PoolClearedError when it is paused
    /// or cleared while waiting; WaitQueueTimeoutError (a timeout) when a limit passes; the
    /// establishment error (already reported to SDAM by the pool) when a new connection
    /// fails. [`super::failure_of`] tells them apart.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future leaves the wait queue, and a connection delivered to it
    /// or being established for it goes back to the pool.
    pub(crate) async fn check_out(&self, deadline: Deadline) -> Result<PooledConnection> {
        let span = tracing::debug_span!("check_out", address = %self.shared.address);
        check_out(&self.shared, deadline).instrument(span).await
    }
}

async fn check_out(shared: &Arc<Shared>, deadline: Deadline) -> Result<PooledConnection> {
    let started = runtime::now();
    match shared.enqueue(started)? {
        Enqueued::Served(connection) => Ok(connection),
        // Boxed: waiting is the rare case, and its timer would make every operation's future
        // larger.
        Enqueued::Waiting { waiter, receiver } => {
            boxed_wait(shared, deadline, started, waiter, receiver).await
        }
    }
}

/// [`wait_for_delivery`], boxed by a plain function: the caller's future then holds a pointer,
/// not the waiter's state.
fn boxed_wait(
    shared: &Arc<Shared>,
    deadline: Deadline,
    started: Instant,
    waiter: WaiterId,
    receiver: oneshot::Receiver<Delivery>,
) -> Pin<Box<dyn Future<Output = Result<PooledConnection>> + Send + '_>> {
    // Made before anything can be dropped, so that a dropped future leaves the queue.
    let wait = Wait {
        shared: Arc::clone(shared),
        waiter,
        receiver,
        finished: false,
    };
    Box::pin(wait_for_delivery(shared, deadline, started, wait))
}

/// Waits in the queue for a connection (or a failure) to be delivered.
async fn wait_for_delivery(
    shared: &Arc<Shared>,
    deadline: Deadline,
    started: Instant,
    mut wait: Wait,
) -> Result<PooledConnection> {
    // Only an instant bounds the wait: unbounded or unset, the wait-queue timeout alone does.
    let deadline = deadline.instant();
    let queue_limit = shared.options.wait_queue_timeout.map(|t| started + t);
    let mut limit = earliest(queue_limit, deadline);
    loop {
        let delivered = match limit {
            Some(at) => tokio::select! {
                delivery = &mut wait.receiver => Some(delivery),
                () = runtime::sleep_until(at) => None,
            },
            None => Some((&mut wait.receiver).await),
        };
        let delivery = match delivered {
            Some(Ok(delivery)) => delivery,
            Some(Err(_)) => {
                wait.finished = true;
                // Every slot is answered before its sender is dropped; this is a pool bug.
                return Err(Error::network("the pool dropped a check-out request")
                    .with_address(&shared.address));
            }
            None => {
                let deadline_passed = deadline.is_some_and(|d| runtime::now() >= d);
                match shared.wait_expired(&mut wait, deadline_passed) {
                    Expiry::KeepWaiting => {
                        limit = deadline;
                        continue;
                    }
                    Expiry::Delivered(delivery) => delivery,
                    Expiry::TimedOut(error) => {
                        wait.finished = true;
                        return Err(error);
                    }
                }
            }
        };
        wait.finished = true;
        return match delivery {
            Delivery::Connection {
                connection,
                generation,
                interrupt,
            } => Ok(PooledConnection::new(
                connection,
                generation,
                interrupt,
                Arc::clone(shared),
            )),
            Delivery::Failed(error) => Err(error),
        };
    }
}

fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// How a check-out request entered the pool.
#[allow(
    clippy::large_enum_variant,
    reason = "a short-lived return value, moved once; boxing the served connection would put an allocation back on the path this exists to shorten"
)]
enum Enqueued {
    /// Nobody was waiting and a connection was idle: it was handed over at once.
    Served(PooledConnection),
    /// The request is in the wait queue (or a connection is being established for it).
    Waiting {
        waiter: WaiterId,
        receiver: oneshot::Receiver<Delivery>,
    },
}

/// What a passed time limit means for a check-out.
#[allow(
    clippy::large_enum_variant,
    reason = "a short-lived return value, moved once"
)]
enum Expiry {
    /// The wait-queue timeout passed while a connection is being established for it: only the
    /// operation's deadline applies now.
    KeepWaiting,
    /// Something was delivered just before the limit.
    Delivered(Delivery),
    /// The check-out failed with a timeout.
    TimedOut(Error),
}

/// A check-out in progress. If its future is dropped before an answer was taken, `Drop` takes
/// the waiter out of the pool and returns anything delivered to it.
struct Wait {
    shared: Arc<Shared>,
    waiter: WaiterId,
    receiver: oneshot::Receiver<Delivery>,
    finished: bool,
}

impl Drop for Wait {
    fn drop(&mut self) {
        if !self.finished {
            self.shared.abandon_wait(self.waiter, &mut self.receiver);
        }
    }
}

impl Shared {
    /// Emits ConnectionCheckOutStarted, then hands over an idle connection at once when
    /// nobody is waiting (the state machine decides, keeping the queue's order), or joins the
    /// wait queue; fails at once when the pool is closed or paused.
    fn enqueue(self: &Arc<Self>, started: Instant) -> Result<Enqueued> {
        let mut inner = self.lock();
        self.emit(|| PoolEvent::ConnectionCheckOutStarted {
            address: self.address.clone(),
        });
        let idle = match inner.state.check_out_idle(started) {
            Ok(idle) => idle,
            Err(refusal) => return Err(self.refuse(&inner, refusal, started)),
        };
        for (id, reason) in idle.closed {
            inner.idle.remove(&id);
            self.emit_closed(id, reason);
        }
        if let Some(id) = idle.connection {
            match inner.idle.remove(&id) {
                Some(connection) => {
                    let (generation, interrupt) = self.mark_checked_out(&mut inner, id, started);
                    return Ok(Enqueued::Served(PooledConnection::new(
                        connection,
                        generation,
                        interrupt,
                        Arc::clone(self),
                    )));
                }
                // The state machine and the idle map disagree: forget the id, and queue.
                None => {
                    inner.state.remove(id);
                }
            }
        }
        let waiter = inner.next_waiter;
        inner.next_waiter += 1;
        if let Err(refusal) = inner.state.enqueue(waiter) {
            return Err(self.refuse(&inner, refusal, started));
        }
        let (sender, receiver) = oneshot::channel();
        inner.waiters.insert(
            waiter,
            WaiterSlot {
                sender,
                started,
                phase: WaiterPhase::Queued,
            },
        );
        self.service(&mut inner);
        Ok(Enqueued::Waiting { waiter, receiver })
    }

    /// A check-out the pool refused: emits ConnectionCheckOutFailed and returns the error.
    fn refuse(&self, inner: &Inner, refusal: CheckOutRefusal, started: Instant) -> Error {
        let (reason, error) = match refusal {
            CheckOutRefusal::Closed => (
                CheckOutFailedReason::PoolClosed,
                errors::pool_closed(&self.address),
            ),
            CheckOutRefusal::Paused => (
                CheckOutFailedReason::ConnectionError,
                errors::pool_cleared(&self.address, &inner.pause_cause),
            ),
        };
        self.emit_check_out_failed(reason, started, &error);
        error
    }

    /// A time limit of a check-out passed. Queued: it leaves the queue with a timeout.
    /// Establishing: it keeps waiting unless the operation's deadline passed.
    fn wait_expired(self: &Arc<Self>, wait: &mut Wait, deadline_passed: bool) -> Expiry {
        let mut inner = self.lock();
        let Some(phase) = inner.waiters.get(&wait.waiter).map(|slot| slot.phase) else {
            // Answered between the timer firing and taking the lock.
            return match wait.receiver.try_recv() {
                Ok(delivery) => Expiry::Delivered(delivery),
                Err(_) => Expiry::TimedOut(errors::wait_queue_timeout(
                    &self.address,
                    self.pinned_detail(&inner),
                )),
            };
        };
        if matches!(phase, WaiterPhase::Establishing(_)) && !deadline_passed {
            return Expiry::KeepWaiting;
        }
        self.leave(&mut inner, wait.waiter);
        if let Some(slot) = inner.waiters.remove(&wait.waiter) {
            let duration = runtime::now().saturating_duration_since(slot.started);
            self.emit(|| PoolEvent::ConnectionCheckOutFailed {
                address: self.address.clone(),
                reason: CheckOutFailedReason::Timeout,
                duration,
            });
        }
        self.service(&mut inner);
        Expiry::TimedOut(errors::wait_queue_timeout(
            &self.address,
            self.pinned_detail(&inner),
        ))
    }

    /// The future of a check-out was dropped before it took its answer.
    fn abandon_wait(
        self: &Arc<Self>,
        waiter: WaiterId,
        receiver: &mut oneshot::Receiver<Delivery>,
    ) {
        let mut inner = self.lock();
        self.leave(&mut inner, waiter);
        inner.waiters.remove(&waiter);
        // Deliveries happen under the lock and only to waiters with a slot, so after the slot is
        // gone, whatever was delivered is already in the channel.
        receiver.close();
        if let Ok(Delivery::Connection { connection, .. }) = receiver.try_recv() {
            let healthy = connection.is_reusable();
            self.check_in_locked(&mut inner, connection, healthy, runtime::now());
        }
        self.service(&mut inner);
    }

    /// Takes a waiter out of the state machine: out of the queue, or, if a connection is being
    /// established for it, turns that connection into a background one. Keeps its slot.
    fn leave(&self, inner: &mut Inner, waiter: WaiterId) {
        let Some(phase) = inner.waiters.get(&waiter).map(|slot| slot.phase) else {
            return;
        };
        match phase {
            WaiterPhase::Queued => {
                inner.state.cancel(waiter);
            }
            WaiterPhase::Establishing(connection) => {
                inner.state.abandon(connection);
                if let Some(entry) = inner.establishing.get_mut(&connection) {
                    entry.waiter = None;
                }
            }
        }
    }
}
