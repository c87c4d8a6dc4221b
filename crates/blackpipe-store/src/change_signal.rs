//! "Something changed" notifications that any executor can await: a collection's inserts and
//! the op log's writes wake the awaitData getMores waiting on them ([`InsertWait`]).
//!
//! A [`ChangeSignal`] counts changes and wakes every listener of its [`Event`] on each one; a
//! [`ChangeSubscription`] remembers the count it has seen. Dropping the signal (a dropped
//! collection) closes it, which wakes every subscription too. The store stays free of any async
//! runtime: `event-listener` only parks wakers, it never spawns, sleeps or reads a clock.
//!
//! [`InsertWait`]: crate::InsertWait

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use event_listener::Event;

/// What a signal and its subscriptions share.
#[derive(Debug, Default)]
struct Shared {
    /// How many changes were signalled.
    version: AtomicU64,
    /// The signal was dropped: no change will come any more.
    closed: AtomicBool,
    event: Event,
}

/// The sending side, owned by what changes (a collection, the op log).
#[derive(Debug, Default)]
pub(crate) struct ChangeSignal {
    shared: Arc<Shared>,
}

impl ChangeSignal {
    /// Records one change and wakes every subscription waiting for one.
    pub(crate) fn notify(&self) {
        self.shared.version.fetch_add(1, Ordering::SeqCst);
        self.shared.event.notify(usize::MAX);
    }

    /// A subscription that sees every later change (the changes so far count as seen).
    pub(crate) fn subscribe(&self) -> ChangeSubscription {
        ChangeSubscription {
            seen: self.shared.version.load(Ordering::SeqCst),
            shared: Arc::clone(&self.shared),
        }
    }
}

impl Drop for ChangeSignal {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        self.shared.event.notify(usize::MAX);
    }
}

/// The receiving side: the changes it has seen, and a way to wait for the next.
#[derive(Debug, Clone)]
pub(crate) struct ChangeSubscription {
    shared: Arc<Shared>,
    /// The signal's change count when this subscription last looked.
    seen: u64,
}

impl ChangeSubscription {
    /// Whether both subscribe to the same signal.
    pub(crate) fn same_signal(&self, other: &ChangeSubscription) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// Completes once a change is signalled after the last one this subscription saw (at once
    /// if one already was), marking it seen, or once the signal is dropped.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a change is marked seen only when the call completes, so a change seen by a
    /// cancelled call is still reported by the next one.
    pub(crate) async fn changed(&mut self) {
        loop {
            if self.take_change() {
                return;
            }
            let listener = self.shared.event.listen();
            // A change between the first look and listening notified nobody: look again.
            if self.take_change() {
                return;
            }
            listener.await;
        }
    }

    /// Marks every change so far seen; true if there was a new one, or if the signal is
    /// dropped.
    fn take_change(&mut self) -> bool {
        let version = self.shared.version.load(Ordering::SeqCst);
        if version != self.seen {
            self.seen = version;
            return true;
        }
        self.shared.closed.load(Ordering::SeqCst)
    }
}
