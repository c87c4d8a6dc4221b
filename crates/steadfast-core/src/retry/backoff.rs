//! Delay formulas. Randomness arrives as a jitter value in `[0, 1)` drawn by the caller.

use std::time::Duration;

/// The largest overload backoff (client-backpressure: MAX_BACKOFF).
pub const MAX_OVERLOAD_BACKOFF: Duration = Duration::from_secs(10);
/// The default base of the overload backoff (client-backpressure: BASE_BACKOFF).
pub const DEFAULT_OVERLOAD_BASE: Duration = Duration::from_millis(100);

/// The controlled ladder for requests that were never sent: quick at first (a pool being
/// refilled, a primary about to be elected), then patient.
pub const NOT_SENT_LADDER: [Duration; 6] = [
    Duration::from_millis(1),
    Duration::from_millis(10),
    Duration::from_millis(50),
    Duration::from_millis(100),
    Duration::from_millis(500),
    Duration::from_millis(1000),
];

/// `jitter * min(10 s, base * 2^retry)`, with `base` the server's `baseBackoffMS` when positive
/// and 100 ms otherwise; `retry` is 1 for the first retry. Saturates instead of overflowing.
pub fn overload_backoff(retry: u32, base: Option<Duration>, jitter: f64) -> Duration {
    let base = base
        .filter(|b| !b.is_zero())
        .unwrap_or(DEFAULT_OVERLOAD_BASE);
    let factor = 1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX);
    let raw = base.saturating_mul(factor).min(MAX_OVERLOAD_BACKOFF);
    raw.mul_f64(jitter.clamp(0.0, 1.0))
}

/// Exponential backoff from `floor` doubling per retry up to `cap`, with "equal jitter": half the
/// delay fixed, half random, so retries spread out but never collapse to zero.
pub fn exponential_backoff(retry: u32, floor: Duration, cap: Duration, jitter: f64) -> Duration {
    let factor = 1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX);
    let full = floor.saturating_mul(factor).min(cap);
    let half = full / 2;
    half + half.mul_f64(jitter.clamp(0.0, 1.0))
}

/// The ladder step for the `retry`-th retry (0-based), holding at the last step.
pub fn ladder_step(retry: u32) -> Duration {
    let index = (retry as usize).min(NOT_SENT_LADDER.len() - 1);
    NOT_SENT_LADDER[index]
}
