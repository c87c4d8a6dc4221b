//! The background task: closes perished idle connections and keeps minPoolSize connections
//! while the pool is ready. Each run does what it can right away and ends (a run never waits
//! for maxConnecting); runs happen every maintenance interval and whenever asked (after
//! `ready`, a clear, or a connection leaving a pool with a minPoolSize).

use std::sync::{Arc, Weak};
use std::time::Duration;

use steadfast_core::pool::PoolStatus;
use tokio::sync::Notify;

use super::{Inner, LOG_TARGET, Shared};
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
            Err(error) => tracing::error!(target: LOG_TARGET, address = %self.address, %error,
                "the pool cannot start its background task; minPoolSize and idle connections are not maintained"),
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
