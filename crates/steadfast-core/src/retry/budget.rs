//! A retry budget, in the style of Finagle and tower: retries may add at most a fixed share of
//! the traffic over a sliding window, plus a small floor so a quiet client can still retry.
//! It stops a fleet of clients from multiplying an overload with their retries.
//! It is an option: a client has none unless the application turns it on, so that the default
//! makes exactly the retries the specifications allow (the client-backpressure specification
//! defers its own token bucket).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Parameters of a [`RetryBudget`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryBudgetConfig {
    /// Retries allowed per request in the window (0.1 = retries may add 10% to the traffic).
    pub retry_ratio: f64,
    /// Retries always allowed per second of window, whatever the traffic.
    pub min_retries_per_second: u32,
    /// The sliding window.
    pub window: Duration,
}

impl Default for RetryBudgetConfig {
    fn default() -> Self {
        RetryBudgetConfig {
            retry_ratio: 0.1,
            min_retries_per_second: 10,
            window: Duration::from_secs(10),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Bucket {
    start: Instant,
    requests: u64,
    retries: u64,
}

/// The budget's state: ten buckets over the window.
#[derive(Clone, Debug)]
pub struct RetryBudget {
    config: RetryBudgetConfig,
    buckets: VecDeque<Bucket>,
}

const BUCKETS: u32 = 10;

impl RetryBudget {
    /// An empty budget.
    pub fn new(config: RetryBudgetConfig) -> Self {
        RetryBudget {
            config,
            buckets: VecDeque::with_capacity(BUCKETS as usize + 1),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &RetryBudgetConfig {
        &self.config
    }

    /// Counts one request (a first attempt).
    pub fn record_request(&mut self, now: Instant) {
        self.current(now).requests += 1;
    }

    /// Takes one retry from the budget if there is room; returns whether the retry may go ahead.
    pub fn try_retry(&mut self, now: Instant) -> bool {
        self.prune(now);
        let (requests, retries) = self
            .buckets
            .iter()
            .fold((0u64, 0u64), |(q, r), b| (q + b.requests, r + b.retries));
        let floor = u64::from(self.config.min_retries_per_second)
            .saturating_mul(self.config.window.as_secs().max(1));
        let allowed = floor + (requests as f64 * self.config.retry_ratio.max(0.0)) as u64;
        if retries < allowed {
            self.current(now).retries += 1;
            true
        } else {
            false
        }
    }

    fn bucket_width(&self) -> Duration {
        (self.config.window / BUCKETS).max(Duration::from_millis(1))
    }

    fn prune(&mut self, now: Instant) {
        let window = self.config.window;
        while self
            .buckets
            .front()
            .is_some_and(|b| now.saturating_duration_since(b.start) >= window)
        {
            self.buckets.pop_front();
        }
    }

    fn current(&mut self, now: Instant) -> &mut Bucket {
        self.prune(now);
        let width = self.bucket_width();
        let fresh = self
            .buckets
            .back()
            .is_none_or(|b| now.saturating_duration_since(b.start) >= width);
        if fresh {
            self.buckets.push_back(Bucket {
                start: now,
                requests: 0,
                retries: 0,
            });
        }
        let last = self.buckets.len() - 1;
        &mut self.buckets[last]
    }
}
