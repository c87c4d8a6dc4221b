//! The change signal behind `InsertWait`: what a subscription reports, when it wakes, and that
//! a cancelled wait loses nothing.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use crate::change_signal::{ChangeSignal, ChangeSubscription};

/// Counts how often it was woken.
#[derive(Default)]
struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Polls `changed()` once: whether it completed.
fn ready_now(subscription: &mut ChangeSubscription) -> bool {
    let future = pin!(subscription.changed());
    future
        .poll(&mut Context::from_waker(Waker::noop()))
        .is_ready()
}

#[test]
fn a_subscription_reports_each_later_change_once() {
    let signal = ChangeSignal::default();
    signal.notify();
    let mut subscription = signal.subscribe();
    assert!(
        !ready_now(&mut subscription),
        "changes before it count as seen"
    );
    signal.notify();
    signal.notify();
    assert!(ready_now(&mut subscription));
    assert!(
        !ready_now(&mut subscription),
        "both changes were reported at once"
    );
}

#[test]
fn a_change_wakes_the_waiting_task() {
    let signal = ChangeSignal::default();
    let mut subscription = signal.subscribe();
    let counter = Arc::new(CountingWaker::default());
    let waker = Waker::from(Arc::clone(&counter));
    let mut future = pin!(subscription.changed());
    assert!(
        future
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending()
    );
    signal.notify();
    assert_eq!(counter.0.load(Ordering::SeqCst), 1);
    assert_eq!(
        future.as_mut().poll(&mut Context::from_waker(&waker)),
        Poll::Ready(())
    );
}

#[test]
fn a_change_seen_by_a_cancelled_wait_is_reported_by_the_next() {
    let signal = ChangeSignal::default();
    let mut subscription = signal.subscribe();
    {
        let future = pin!(subscription.changed());
        assert!(
            future
                .poll(&mut Context::from_waker(Waker::noop()))
                .is_pending()
        );
        signal.notify();
        // Dropped here without being polled again: cancelled.
    }
    assert!(ready_now(&mut subscription));
}

#[test]
fn dropping_the_signal_wakes_and_completes_every_wait() {
    let signal = ChangeSignal::default();
    let mut subscription = signal.subscribe();
    let counter = Arc::new(CountingWaker::default());
    let waker = Waker::from(Arc::clone(&counter));
    {
        let mut future = pin!(subscription.changed());
        assert!(
            future
                .as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_pending()
        );
        drop(signal);
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
        assert!(
            future
                .as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_ready()
        );
    }
    assert!(ready_now(&mut subscription), "closed stays closed");
}

#[test]
fn clones_share_the_signal_and_what_was_seen() {
    let signal = ChangeSignal::default();
    let other = ChangeSignal::default();
    let subscription = signal.subscribe();
    signal.notify();
    let mut clone = subscription.clone();
    assert!(clone.same_signal(&subscription));
    assert!(!clone.same_signal(&other.subscribe()));
    assert!(
        ready_now(&mut clone),
        "the clone has not seen the change either"
    );
}
