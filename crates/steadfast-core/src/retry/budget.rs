//! A retry budget, in the style of Finagle and tower: retries may add at most a fixed share of
//! the traffic over a sliding window, plus a small floor so a quiet client can still retry.
//! It stops a fleet of clients from multiplying an overload with their retries.
//! It is an option: a client has none unless the application turns it on, so that the default
//! makes exactly the retries the specifications allow (the client-backpressure specification
//! defers its own token bucket).

use std::ops::Add;
use std::time::{Duration, Instant};

use super::window::SlidingWindow;

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

#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    requests: u64,
    retries: u64,
}

impl Add for Counts {
    type Output = Counts;

    fn add(self, other: Counts) -> Counts {
        Counts {
            requests: self.requests.saturating_add(other.requests),
            retries: self.retries.saturating_add(other.retries),
        }
    }
}

/// The budget's state: requests and retries over the window.
#[derive(Clone, Debug)]
pub struct RetryBudget {
    config: RetryBudgetConfig,
    counts: SlidingWindow<Counts>,
}

impl RetryBudget {
    /// An empty budget.
    pub fn new(config: RetryBudgetConfig) -> Self {
        RetryBudget {
            config,
            counts: SlidingWindow::new(config.window),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &RetryBudgetConfig {
        &self.config
    }

    /// Counts one request (a first attempt).
    pub fn record_request(&mut self, now: Instant) {
        self.counts.current(now).requests += 1;
    }

    /// Takes one retry from the budget if there is room; returns whether the retry may go ahead.
    pub fn try_retry(&mut self, now: Instant) -> bool {
        let Counts { requests, retries } = self.counts.totals(now);
        let floor = u64::from(self.config.min_retries_per_second)
            .saturating_mul(self.config.window.as_secs().max(1));
        let allowed = floor + (requests as f64 * self.config.retry_ratio.max(0.0)) as u64;
        if retries < allowed {
            self.counts.current(now).retries += 1;
            true
        } else {
            false
        }
    }
}
