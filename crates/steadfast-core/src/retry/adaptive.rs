//! Client-side adaptive throttling, after the Google SRE book ("Handling Overload"): each client
//! counts, over a sliding window, the requests it made and the ones the server *accepted* (any
//! reply that is not an overload rejection, errors included: the server did the work). Once the
//! server sheds load, the client refuses new requests locally, before sending them, with
//! probability `max(0, (requests - K × accepts) / (requests + 1))`, so what it sends converges
//! on about `K` times what the server can accept instead of multiplying the overload.
//!
//! Retries after an overload rejection are held to a fraction of the first attempts over the
//! same window, so that retries can never become a storm of their own.
//!
//! A request still in flight is counted only once its reply is known: counting it on sending
//! would make a burst of concurrent requests look like rejections before any server answered.
//! With `K ≥ 1` this makes the throttle provably inert until the server sheds something.
//!
//! Everything here is pure: the clock and the random draw are arguments.

use std::collections::HashMap;
use std::ops::Add;
use std::time::{Duration, Instant};

use super::window::SlidingWindow;
use crate::address::ServerAddress;

/// Parameters of the adaptive throttle.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct AdaptiveConfig {
    /// `K`: how many requests per accepted request the client keeps sending before it refuses
    /// any locally. The default, 1.05, keeps attempts per success near 1 under overload (the
    /// open-loop cell of steadfast-bench measures it: 1.07 at 3x the capacity); the SRE
    /// book's 2 lets half the requests be rejected before the client throttles, about 2
    /// attempts per success. A server shedding under 5% of requests never sees a refusal.
    /// Values below 1 (or not finite) are treated as 1, so that a server that sheds nothing
    /// never sees a refusal.
    pub accept_multiplier: f64,
    /// The sliding window over which requests and accepts are counted (default 2 s); it is
    /// also how long the throttle remembers an overload after it ends.
    pub window: Duration,
    /// Overload retries allowed per first attempt over the window (default 0.05: retries add
    /// at most 5% to the traffic). Negative or not finite is treated as 0.
    pub retry_ratio: f64,
}

impl Default for AdaptiveConfig {
    fn default() -> Self {
        AdaptiveConfig {
            accept_multiplier: 1.05,
            window: Duration::from_secs(2),
            retry_ratio: 0.05,
        }
    }
}

impl AdaptiveConfig {
    fn multiplier(&self) -> f64 {
        if self.accept_multiplier.is_finite() {
            self.accept_multiplier.max(1.0)
        } else {
            1.0
        }
    }

    fn ratio(&self) -> f64 {
        if self.retry_ratio.is_finite() {
            self.retry_ratio.max(0.0)
        } else {
            0.0
        }
    }
}

/// The probability with which the next request is refused locally:
/// `max(0, (requests - K × accepts) / (requests + 1))`, always in `[0, 1)`.
pub fn refusal_probability(requests: u64, accepts: u64, accept_multiplier: f64) -> f64 {
    // u64 -> f64 loses precision only past 2^53 requests, far beyond any window.
    let requests = requests as f64;
    let excess = requests - accept_multiplier * accepts as f64;
    if excess.is_nan() || excess <= 0.0 {
        return 0.0;
    }
    (excess / (requests + 1.0)).clamp(0.0, 1.0)
}

/// The throttle's verdict on a request about to be sent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Admission {
    /// Send it.
    Send,
    /// Refuse it locally: it is never sent.
    Refuse {
        /// The refusal probability that applied.
        probability: f64,
    },
}

#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    /// Requests with a known fate: replied to, or refused locally.
    requests: u64,
    /// Replies that were not overload rejections.
    accepts: u64,
    /// First attempts sent.
    firsts: u64,
    /// Overload retries granted.
    retries: u64,
}

impl Add for Counts {
    type Output = Counts;

    fn add(self, other: Counts) -> Counts {
        Counts {
            requests: self.requests.saturating_add(other.requests),
            accepts: self.accepts.saturating_add(other.accepts),
            firsts: self.firsts.saturating_add(other.firsts),
            retries: self.retries.saturating_add(other.retries),
        }
    }
}

/// One server's throttle: counts over a sliding window (ten buckets).
#[derive(Clone, Debug)]
pub struct AdaptiveThrottle {
    config: AdaptiveConfig,
    counts: SlidingWindow<Counts>,
}

impl AdaptiveThrottle {
    /// A throttle that has seen nothing.
    pub fn new(config: AdaptiveConfig) -> Self {
        AdaptiveThrottle {
            config,
            counts: SlidingWindow::new(config.window),
        }
    }

    /// The probability that a request at `now` is refused.
    pub fn refusal_probability(&mut self, now: Instant) -> f64 {
        let totals = self.counts.totals(now);
        refusal_probability(totals.requests, totals.accepts, self.config.multiplier())
    }

    /// Decides whether a first attempt goes out, given a uniform `draw` in `[0, 1)`. A refusal
    /// is counted as a request (its fate is known), so the refusals themselves keep the
    /// probability up while the server stays overloaded.
    pub fn admit(&mut self, now: Instant, draw: f64) -> Admission {
        let probability = self.refusal_probability(now);
        if draw < probability {
            self.counts.current(now).requests += 1;
            Admission::Refuse { probability }
        } else {
            self.counts.current(now).firsts += 1;
            Admission::Send
        }
    }

    /// Records a server's reply: `shed` when it rejected the request for overload.
    pub fn record_reply(&mut self, now: Instant, shed: bool) {
        let bucket = self.counts.current(now);
        bucket.requests += 1;
        if !shed {
            bucket.accepts += 1;
        }
    }

    /// Takes one overload retry if retries stay within the ratio of first attempts; returns
    /// whether the retry may go ahead.
    pub fn try_retry(&mut self, now: Instant) -> bool {
        let totals = self.counts.totals(now);
        // u64 -> f64: exact far beyond any window's counts.
        let allowed = totals.firsts as f64 * self.config.ratio();
        if (totals.retries + 1) as f64 <= allowed {
            self.counts.current(now).retries += 1;
            true
        } else {
            false
        }
    }

    /// Whether the window holds nothing at `now` (the throttle can be forgotten).
    pub fn is_idle(&mut self, now: Instant) -> bool {
        self.counts.is_empty(now)
    }
}

/// The most servers tracked at once. A deployment has far fewer; the bound only keeps memory
/// fixed whatever addresses a topology reports over time.
pub const MAX_TRACKED_SERVERS: usize = 256;

/// One [`AdaptiveThrottle`] per server address: overload is a property of a server, so an
/// overloaded primary does not throttle reads sent to healthy secondaries or other mongoses.
#[derive(Clone, Debug)]
pub struct AdaptiveThrottles {
    config: AdaptiveConfig,
    servers: HashMap<ServerAddress, AdaptiveThrottle>,
}

impl AdaptiveThrottles {
    /// No server tracked yet.
    pub fn new(config: AdaptiveConfig) -> Self {
        AdaptiveThrottles {
            config,
            servers: HashMap::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &AdaptiveConfig {
        &self.config
    }

    /// `server`'s throttle, created if needed. `None` only when [`MAX_TRACKED_SERVERS`] busy
    /// servers are tracked already: the caller then neither counts nor refuses (the throttle
    /// fails open rather than refusing on no evidence).
    pub fn server(
        &mut self,
        server: &ServerAddress,
        now: Instant,
    ) -> Option<&mut AdaptiveThrottle> {
        if !self.servers.contains_key(server) {
            if self.servers.len() >= MAX_TRACKED_SERVERS {
                self.servers.retain(|_, throttle| !throttle.is_idle(now));
            }
            if self.servers.len() >= MAX_TRACKED_SERVERS {
                return None;
            }
            self.servers
                .insert(server.clone(), AdaptiveThrottle::new(self.config));
        }
        self.servers.get_mut(server)
    }

    /// The number of servers tracked.
    pub fn len(&self) -> usize {
        self.servers.len()
    }

    /// Whether no server is tracked.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }
}

#[cfg(test)]
mod tests;
