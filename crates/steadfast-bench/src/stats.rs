//! Latency samples and the figures reported for them.

use std::time::Duration;

use serde::Serialize;

/// Everything one contender did in one (workload, concurrency) cell, summed over its rounds.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    /// Completed operations.
    pub(crate) operations: u64,
    /// Time spent measuring, summed over the rounds (each round ends when its last task does).
    pub(crate) busy: Duration,
    /// One latency per completed operation, in nanoseconds.
    pub(crate) latencies_ns: Vec<u64>,
}

impl Tally {
    /// Adds one round's work.
    pub(crate) fn absorb(&mut self, busy: Duration, latencies_ns: Vec<u64>) {
        self.operations += latencies_ns.len() as u64;
        self.busy += busy;
        self.latencies_ns.extend(latencies_ns);
    }

    /// The reported figures; `None` when nothing completed.
    pub(crate) fn summarize(&mut self) -> Option<Summary> {
        if self.latencies_ns.is_empty() || self.busy.is_zero() {
            return None;
        }
        self.latencies_ns.sort_unstable();
        // Rates and percentiles are reported with a few significant digits, so f64 is ample.
        #[allow(clippy::cast_precision_loss)]
        let ops_per_sec = self.operations as f64 / self.busy.as_secs_f64();
        Some(Summary {
            operations: self.operations,
            ops_per_sec,
            p50_us: percentile_us(&self.latencies_ns, 0.50),
            p99_us: percentile_us(&self.latencies_ns, 0.99),
        })
    }
}

/// Throughput and latency of one contender in one cell.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Summary {
    /// Completed operations over all rounds.
    pub(crate) operations: u64,
    /// Operations per second of measured time.
    pub(crate) ops_per_sec: f64,
    /// Median latency, microseconds.
    pub(crate) p50_us: f64,
    /// 99th percentile latency, microseconds.
    pub(crate) p99_us: f64,
}

/// The nearest-rank percentile of sorted nanosecond samples, in microseconds.
fn percentile_us(sorted_ns: &[u64], quantile: f64) -> f64 {
    if sorted_ns.is_empty() {
        return 0.0;
    }
    // Nearest rank: the smallest sample with at least `quantile` of the samples at or below it.
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let rank = ((sorted_ns.len() as f64 * quantile).ceil() as usize).clamp(1, sorted_ns.len());
    #[allow(clippy::cast_precision_loss)]
    let micros = sorted_ns[rank - 1] as f64 / 1_000.0;
    micros
}

/// `numerator / denominator`, or `None` when either side is missing or the denominator is 0.
pub(crate) fn ratio(numerator: Option<f64>, denominator: Option<f64>) -> Option<f64> {
    match (numerator, denominator) {
        (Some(n), Some(d)) if d > 0.0 => Some(n / d),
        _ => None,
    }
}

/// Nanoseconds in `elapsed`, saturating (a latency never gets near 584 years).
pub(crate) fn nanos(elapsed: Duration) -> u64 {
    u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let samples: Vec<u64> = (1..=100).map(|i| i * 1_000).collect();
        assert!((percentile_us(&samples, 0.50) - 50.0).abs() < f64::EPSILON);
        assert!((percentile_us(&samples, 0.99) - 99.0).abs() < f64::EPSILON);
        assert!((percentile_us(&[7_000], 0.99) - 7.0).abs() < f64::EPSILON);
    }

    #[test]
    fn summary_rate_divides_operations_by_busy_time() {
        let mut tally = Tally::default();
        tally.absorb(Duration::from_millis(500), vec![3_000; 10]);
        tally.absorb(Duration::from_millis(500), vec![1_000; 10]);
        let summary = tally.summarize().expect("samples were recorded");
        assert_eq!(summary.operations, 20);
        assert!((summary.ops_per_sec - 20.0).abs() < 1e-9);
        assert!((summary.p50_us - 1.0).abs() < f64::EPSILON);
        assert!((summary.p99_us - 3.0).abs() < f64::EPSILON);
    }

    #[test]
    fn an_empty_tally_has_no_summary_and_ratios_need_both_sides() {
        assert!(Tally::default().summarize().is_none());
        assert_eq!(ratio(Some(3.0), Some(2.0)), Some(1.5));
        assert_eq!(ratio(Some(3.0), None), None);
        assert_eq!(ratio(Some(3.0), Some(0.0)), None);
    }
}
