//! A handler that records every event and lets callers await a matching one.

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::Notify;

use super::{CmapEvent, CommandEvent, EventListener, RetryEvent, SdamEvent};

/// Any event.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Event {
    /// A connection pool event.
    Cmap(CmapEvent),
    /// A topology event.
    Sdam(SdamEvent),
    /// A command event.
    Command(CommandEvent),
    /// A retry event.
    Retry(RetryEvent),
}

/// Records events in arrival order. Register it with `Arc::new(EventRecorder::new())` in the
/// client options and keep a clone of the `Arc`.
#[derive(Debug, Default)]
pub struct EventRecorder {
    events: Mutex<Vec<Event>>,
    arrived: Notify,
}

impl EventRecorder {
    /// An empty recorder.
    pub fn new() -> Self {
        EventRecorder::default()
    }

    /// A copy of every event so far.
    pub fn events(&self) -> Vec<Event> {
        self.lock().clone()
    }

    /// The number of events so far.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Forgets everything recorded so far.
    pub fn clear(&self) {
        self.lock().clear();
    }

    /// Waits until an event at index `from` or later matches `predicate`, and returns it with
    /// its index. Returns `None` if none arrived within `timeout` (a generous bound that only
    /// keeps a broken test from hanging; the wait ends as soon as the event arrives).
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future loses nothing; events stay recorded.
    pub async fn wait_for(
        &self,
        from: usize,
        timeout: Duration,
        predicate: impl Fn(&Event) -> bool,
    ) -> Option<(usize, Event)> {
        let search = async {
            loop {
                // Register interest before looking, so an event arriving in between wakes us.
                let notified = self.arrived.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if let Some(found) = self
                    .lock()
                    .iter()
                    .enumerate()
                    .skip(from)
                    .find(|(_, e)| predicate(e))
                    .map(|(i, e)| (i, e.clone()))
                {
                    return found;
                }
                notified.await;
            }
        };
        tokio::time::timeout(timeout, search).await.ok()
    }

    /// Counts the recorded events matching `predicate`.
    pub fn count(&self, predicate: impl Fn(&Event) -> bool) -> usize {
        self.lock().iter().filter(|e| predicate(e)).count()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Event>> {
        // A handler that panicked mid-push leaves a usable Vec; keep recording.
        self.events
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn push(&self, event: Event) {
        self.lock().push(event);
        self.arrived.notify_waiters();
    }
}

impl EventListener for EventRecorder {
    fn on_cmap(&self, event: &CmapEvent) {
        self.push(Event::Cmap(event.clone()));
    }
    fn on_sdam(&self, event: &SdamEvent) {
        self.push(Event::Sdam(event.clone()));
    }
    fn on_command(&self, event: &CommandEvent) {
        self.push(Event::Command(event.clone()));
    }
    fn on_retry(&self, event: &RetryEvent) {
        self.push(Event::Retry(event.clone()));
    }
}
