//! The client's memo of its last selection: the latency window that core's `candidates`
//! computed for one topology snapshot and one set of criteria.
//!
//! Selecting the same way on the same snapshot gives the same window (suitability and the
//! window depend on the snapshot and the criteria alone), so a selection that finds both
//! unchanged reuses the window and only makes the choice within it: the two random picks and
//! the operation-count comparison happen on every selection, as server-selection requires.
//! The snapshot is compared by identity (`Arc::ptr_eq`) and kept alive by the entry, so a new
//! snapshot (even an equal one) never meets an entry computed for an older one. Predicates are
//! never memoized: an application's function may answer differently from call to call.
//! Selections that set servers aside (retries) are not memoized either.

use std::sync::{Arc, RwLock};

use steadfast_core::ServerAddress;
use steadfast_core::selection::SelectionCriteria;

use super::Snapshot;

/// The last latency window computed, shared by the client's operations. Readers and the
/// writer never wait for each other: a busy lock means a miss (or a memo not kept).
#[derive(Default)]
pub(super) struct SelectionCache {
    last: RwLock<Option<Entry>>,
}

struct Entry {
    snapshot: Arc<Snapshot>,
    criteria: SelectionCriteria,
    window: Arc<[ServerAddress]>,
}

impl SelectionCache {
    /// Whether a selection with these inputs may use (and fill) the memo.
    pub(super) fn applies(criteria: &SelectionCriteria, deprioritized: &[ServerAddress]) -> bool {
        deprioritized.is_empty() && !matches!(criteria, SelectionCriteria::Predicate(_))
    }

    /// The window computed for `criteria` on this very snapshot, if it is the one remembered.
    pub(super) fn window(
        &self,
        snapshot: &Arc<Snapshot>,
        criteria: &SelectionCriteria,
    ) -> Option<Arc<[ServerAddress]>> {
        let last = self.last.try_read().ok()?;
        let entry = last.as_ref()?;
        (Arc::ptr_eq(&entry.snapshot, snapshot) && entry.criteria == *criteria)
            .then(|| Arc::clone(&entry.window))
    }

    /// Remembers the window computed for `criteria` on `snapshot`, replacing the last one.
    pub(super) fn remember(
        &self,
        snapshot: &Arc<Snapshot>,
        criteria: &SelectionCriteria,
        window: Arc<[ServerAddress]>,
    ) {
        if let Ok(mut last) = self.last.try_write() {
            *last = Some(Entry {
                snapshot: Arc::clone(snapshot),
                criteria: criteria.clone(),
                window,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use steadfast_core::TopologyDescription;
    use steadfast_core::description::TopologyConfig;
    use steadfast_core::selection::{ReadPreference, ReadPreferenceMode};

    use super::*;

    fn snapshot() -> Arc<Snapshot> {
        let config = TopologyConfig::new([ServerAddress::tcp("a", 27017)]);
        Arc::new(Snapshot {
            description: Arc::new(TopologyDescription::new(&config).expect("one seed")),
            reports_applied: 0,
            closed: false,
        })
    }

    fn window(names: &[&str]) -> Arc<[ServerAddress]> {
        names
            .iter()
            .map(|n| ServerAddress::tcp(*n, 27017))
            .collect()
    }

    #[test]
    fn the_window_is_reused_for_the_same_snapshot_and_criteria() {
        let cache = SelectionCache::default();
        let current = snapshot();
        cache.remember(&current, &SelectionCriteria::Write, window(&["a", "b"]));
        let found = cache.window(&current, &SelectionCriteria::Write);
        assert_eq!(found.as_deref(), Some(&window(&["a", "b"])[..]));
    }

    #[test]
    fn a_new_snapshot_never_meets_an_older_window() {
        let cache = SelectionCache::default();
        let old = snapshot();
        cache.remember(&old, &SelectionCriteria::Write, window(&["a"]));
        // Equal in content, but published later: the memo is not for it.
        let new = snapshot();
        assert!(cache.window(&new, &SelectionCriteria::Write).is_none());
    }

    #[test]
    fn other_criteria_miss() {
        let cache = SelectionCache::default();
        let current = snapshot();
        cache.remember(&current, &SelectionCriteria::Write, window(&["a"]));
        let secondary = SelectionCriteria::ReadPreference(ReadPreference::with_mode(
            ReadPreferenceMode::Secondary,
        ));
        assert!(cache.window(&current, &secondary).is_none());
        assert!(
            cache
                .window(&current, &SelectionCriteria::primary_read())
                .is_none()
        );
    }

    #[test]
    fn predicates_and_retries_are_never_memoized() {
        let predicate: steadfast_core::selection::Predicate = Arc::new(|_| true);
        let deprioritized = [ServerAddress::tcp("a", 27017)];
        assert!(!SelectionCache::applies(
            &SelectionCriteria::Predicate(predicate),
            &[]
        ));
        assert!(!SelectionCache::applies(
            &SelectionCriteria::Write,
            &deprioritized
        ));
        assert!(SelectionCache::applies(&SelectionCriteria::Write, &[]));
    }
}
