//! Counters over a sliding window, in ten buckets: the window slides in steps of a tenth of its
//! length, so memory is fixed and old traffic is forgotten a bucket at a time. Shared by the
//! retry budget and the adaptive throttle, which count different things over the same kind of
//! window.

use std::collections::VecDeque;
use std::ops::Add;
use std::time::{Duration, Instant};

/// Buckets per window.
const BUCKETS: u32 = 10;

/// Counters of type `C` summed over the last `window`.
#[derive(Clone, Debug)]
pub(crate) struct SlidingWindow<C> {
    window: Duration,
    buckets: VecDeque<(Instant, C)>,
}

impl<C: Default + Copy + Add<Output = C>> SlidingWindow<C> {
    /// An empty window of length `window`.
    pub(crate) fn new(window: Duration) -> Self {
        SlidingWindow {
            window,
            buckets: VecDeque::with_capacity(BUCKETS as usize + 1),
        }
    }

    /// The counters of the bucket that `now` falls in, opened if needed.
    pub(crate) fn current(&mut self, now: Instant) -> &mut C {
        self.prune(now);
        let width = (self.window / BUCKETS).max(Duration::from_millis(1));
        let fresh = self
            .buckets
            .back()
            .is_none_or(|(start, _)| now.saturating_duration_since(*start) >= width);
        if fresh {
            self.buckets.push_back((now, C::default()));
        }
        let last = self.buckets.len() - 1;
        &mut self.buckets[last].1
    }

    /// The sum of the counters still inside the window at `now`.
    pub(crate) fn totals(&mut self, now: Instant) -> C {
        self.prune(now);
        self.buckets
            .iter()
            .fold(C::default(), |sum, (_, counts)| sum + *counts)
    }

    /// Whether nothing is left inside the window at `now`.
    pub(crate) fn is_empty(&mut self, now: Instant) -> bool {
        self.prune(now);
        self.buckets.is_empty()
    }

    fn prune(&mut self, now: Instant) {
        while self
            .buckets
            .front()
            .is_some_and(|(start, _)| now.saturating_duration_since(*start) >= self.window)
        {
            self.buckets.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_inside_the_window_add_up_and_old_buckets_are_forgotten() {
        let start = Instant::now();
        let mut window: SlidingWindow<u64> = SlidingWindow::new(Duration::from_secs(1));
        for step in 0..10u64 {
            *window.current(start + Duration::from_millis(step * 100)) += 1;
        }
        assert_eq!(window.totals(start + Duration::from_millis(999)), 10);
        // The first bucket (opened at 0 ms) leaves the window at 1 s, the next at 1.1 s.
        assert_eq!(window.totals(start + Duration::from_millis(1_000)), 9);
        assert_eq!(window.totals(start + Duration::from_millis(1_150)), 8);
        assert!(!window.is_empty(start + Duration::from_millis(1_899)));
        assert!(window.is_empty(start + Duration::from_millis(1_900)));
    }

    #[test]
    fn events_within_one_bucket_width_share_a_bucket() {
        let start = Instant::now();
        let mut window: SlidingWindow<u64> = SlidingWindow::new(Duration::from_secs(1));
        *window.current(start) += 1;
        *window.current(start + Duration::from_millis(99)) += 1;
        assert_eq!(window.buckets.len(), 1);
        *window.current(start + Duration::from_millis(100)) += 1;
        assert_eq!(window.buckets.len(), 2);
        assert_eq!(window.totals(start + Duration::from_millis(100)), 3);
    }
}
