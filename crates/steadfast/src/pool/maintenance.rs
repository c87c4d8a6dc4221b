//! The background task: closes perished idle connections and keeps minPoolSize connections
//! while the pool is ready. Each run does what it can right away and ends (a run never waits
//! for maxConnecting); runs happen every maintenance interval and whenever asked (after
//! `ready`, a clear, or a connection leaving a pool with a minPoolSize).

use std::sync::{Arc, Weak};
use std::time::Duration;

use steadfast_core::pool::PoolStatus;
use tokio::sync::Notify;

use super::{DIAGNOSTIC_TARGET, Inner, Shared};
use crate::runtime;

impl Shared {
    /// Starts the maintenance task on the first call, and asks it for a run afterwards.
    pub(super) fn start_or_wake_maintenance(self: &Arc<Self>, inner: &mut Inner) {
        if inner.maintenance_started {
            self.wake_maintenance();
            return;
        }
        match self.tasks() {
            Ok(tasks) => {
                inner.maintenance_started = true;
                tasks.spawn(run(
                    Arc::downgrade(self),
                    Arc::clone(&self.maintenance_wake),
                    self.maintenance_interval,
                ));
            }
            Err(error) => {
                tracing::error!(target: DIAGNOSTIC_TARGET, address = %self.address, %error,
                "the pool cannot start its background task; minPoolSize and idle connections are not maintained")
            }
        }
    }

    /// One maintenance run. Returns `false` once the pool is closed.
    fn maintain(self: &Arc<Self>) -> bool {
        let mut inner = self.lock();
        if inner.state.status() == PoolStatus::Closed {
            return false;
        }
        let outcome = inner.state.maintain(runtime::now());
        for (id, reason) in outcome.closed {
            inner.idle.remove(&id);
            self.emit_closed(id, reason);
        }
        for (id, _generation) in outcome.create {
            self.start_establishing(&mut inner, id, None);
        }
        // Closing perished connections may have freed room under maxPoolSize for a waiter.
        self.service(&mut inner);
        true
    }
}

impl super::ConnectionPool {
    /// Waits until the pool holds `minPoolSize` established connections, asking the
    /// maintenance task to create them now. Returns at once, or as soon as it happens, when
    /// the pool is not ready (paused or closed) or an establishment fails: warming never
    /// waits for a server that cannot be reached.
    ///
    /// # Cancel safety
    /// Cancel safe: the connections being created are the pool's, not the caller's.
    pub(crate) async fn fill(&self) {
        let shared = &self.shared;
        let min_pool_size = usize::try_from(shared.options.min_pool_size).unwrap_or(usize::MAX);
        let failures_before = shared.lock().failed_establishments;
        loop {
            let settled = shared.settled.notified();
            tokio::pin!(settled);
            settled.as_mut().enable();
            {
                let mut inner = shared.lock();
                let pending = usize::try_from(inner.state.pending_connections()).unwrap_or(0);
                let established = inner.state.total_connections().saturating_sub(pending);
                if inner.state.status() != PoolStatus::Ready
                    || inner.failed_establishments != failures_before
                    || established >= min_pool_size
                {
                    return;
                }
                shared.start_or_wake_maintenance(&mut inner);
            }
            settled.await;
        }
    }
}

/// The maintenance loop. It holds the pool weakly, so it never keeps a dropped pool alive, and
/// ends when the pool is closed (closing wakes it).
async fn run(pool: Weak<Shared>, wake: Arc<Notify>, interval: Option<Duration>) {
    loop {
        let Some(shared) = pool.upgrade() else {
            return;
        };
        if !shared.maintain() {
            return;
        }
        drop(shared);
        match interval {
            Some(interval) => {
                tokio::select! {
                    () = wake.notified() => {}
                    () = runtime::sleep_until(runtime::now() + interval) => {}
                }
            }
            None => wake.notified().await,
        }
    }
}
