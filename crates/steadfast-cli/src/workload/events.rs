//! What the driver tells the workload while it runs: every retry (with its reason) and the
//! primary the driver currently sees.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use std::sync::Arc;

use steadfast::event::{CmapEvent, EventListener, RetryEvent, SdamEvent};

use super::timeline::TimelineRecorder;
use super::worker::note_retry;

/// Counts retries by reason and remembers the driver's view of the primary.
#[derive(Debug, Default)]
pub(crate) struct DriverWatch {
    retries: AtomicU64,
    by_reason: Mutex<BTreeMap<String, u64>>,
    by_operation: Mutex<BTreeMap<String, u64>>,
    primary: Mutex<Option<String>>,
    /// Records the driver's view for the HTML report, when the run writes one.
    timeline: Option<Arc<TimelineRecorder>>,
}

impl DriverWatch {
    /// A watch that also records the driver's view of each server into `timeline`.
    pub(crate) fn recording(timeline: Option<Arc<TimelineRecorder>>) -> Self {
        Self {
            timeline,
            ..Self::default()
        }
    }

    /// Retries so far.
    pub(crate) fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }

    /// Retries by reason ("network error", "replica set state change (code 10107)", ...).
    pub(crate) fn retries_by_reason(&self) -> BTreeMap<String, u64> {
        self.by_reason
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Retries by command name.
    pub(crate) fn retries_by_operation(&self) -> BTreeMap<String, u64> {
        self.by_operation
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The primary in the driver's latest topology description, if it knows one.
    pub(crate) fn primary(&self) -> Option<String> {
        self.primary
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn count(map: &Mutex<BTreeMap<String, u64>>, key: String) {
        *map.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key)
            .or_default() += 1;
    }
}

impl EventListener for DriverWatch {
    fn on_retry(&self, event: &RetryEvent) {
        self.retries.fetch_add(1, Ordering::Relaxed);
        note_retry();
        Self::count(&self.by_reason, event.reason.to_string());
        Self::count(&self.by_operation, event.operation.clone());
    }

    fn on_cmap(&self, event: &CmapEvent) {
        if let Some(timeline) = &self.timeline {
            timeline.on_cmap(event);
        }
    }

    fn on_sdam(&self, event: &SdamEvent) {
        if let Some(timeline) = &self.timeline {
            timeline.on_sdam(event);
        }
        if let SdamEvent::TopologyDescriptionChanged { new, .. } = event {
            let primary = new.primary().map(|server| server.address.to_string());
            *self.primary.lock().unwrap_or_else(PoisonError::into_inner) = primary;
        }
    }
}
