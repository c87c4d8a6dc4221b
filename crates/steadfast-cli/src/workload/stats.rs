//! Figures computed from a run once it is over: latency percentiles and how long the
//! application waited, after each fault, for its first successful write.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::ledger::WriteSpan;

/// Latency percentiles of every operation in a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct LatencySummary {
    /// Operations measured.
    pub(crate) count: usize,
    /// Median, in microseconds.
    pub(crate) p50_us: u64,
    /// 99th percentile, in microseconds.
    pub(crate) p99_us: u64,
    /// The slowest operation, in microseconds.
    pub(crate) max_us: u64,
}

/// Sorts `latencies` and summarises them; `None` when there are none.
pub(crate) fn summarize_latencies(latencies: &mut [Duration]) -> Option<LatencySummary> {
    latencies.sort_unstable();
    let max = *latencies.last()?;
    let micros = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    Some(LatencySummary {
        count: latencies.len(),
        p50_us: micros(nearest_rank(latencies, 50)),
        p99_us: micros(nearest_rank(latencies, 99)),
        max_us: micros(max),
    })
}

/// The nearest-rank percentile of sorted, non-empty `sorted`.
fn nearest_rank(sorted: &[Duration], percent: usize) -> Duration {
    // Nearest rank: the smallest value such that `percent`% of the samples are at or below it.
    let rank = (sorted.len() * percent).div_ceil(100).max(1);
    sorted
        .get(rank - 1)
        .or(sorted.last())
        .copied()
        .unwrap_or_default()
}

/// How long after `injected` the first write sent at or after it was acknowledged; `None` if
/// no write sent after the fault succeeded.
pub(crate) fn time_to_first_write(injected: Instant, writes: &[WriteSpan]) -> Option<Duration> {
    writes
        .iter()
        .filter(|span| span.sent >= injected)
        .map(|span| span.acknowledged.saturating_duration_since(injected))
        .min()
}

/// Formats a duration in microseconds for people: "850 µs", "12.3 ms", "1.25 s".
pub(crate) fn human_micros(micros: u64) -> String {
    if micros < 1_000 {
        format!("{micros} µs")
    } else if micros < 1_000_000 {
        format!("{:.1} ms", micros as f64 / 1_000.0)
    } else {
        format!("{:.2} s", micros as f64 / 1_000_000.0)
    }
}

/// Formats a duration for people.
pub(crate) fn human(duration: Duration) -> String {
    human_micros(u64::try_from(duration.as_micros()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let mut samples: Vec<Duration> = (1..=100).map(ms).collect();
        samples.reverse();
        let summary = summarize_latencies(&mut samples).expect("samples");
        assert_eq!(summary.count, 100);
        assert_eq!(summary.p50_us, 50_000);
        assert_eq!(summary.p99_us, 99_000);
        assert_eq!(summary.max_us, 100_000);
    }

    #[test]
    fn one_sample_is_every_percentile() {
        let summary = summarize_latencies(&mut [ms(7)]).expect("one sample");
        assert_eq!(
            (summary.p50_us, summary.p99_us, summary.max_us),
            (7_000, 7_000, 7_000)
        );
    }

    #[test]
    fn no_samples_no_summary() {
        assert_eq!(summarize_latencies(&mut []), None);
    }

    #[test]
    fn recovery_counts_only_writes_sent_after_the_fault() {
        let start = Instant::now();
        let fault = start + ms(100);
        let writes = [
            // In flight when the fault hit, acknowledged right after: not a recovery.
            WriteSpan {
                sent: start + ms(90),
                acknowledged: start + ms(101),
            },
            WriteSpan {
                sent: start + ms(150),
                acknowledged: start + ms(1_400),
            },
            WriteSpan {
                sent: start + ms(300),
                acknowledged: start + ms(1_200),
            },
        ];
        assert_eq!(time_to_first_write(fault, &writes), Some(ms(1_100)));
        assert_eq!(time_to_first_write(start + ms(2_000), &writes), None);
    }

    #[test]
    fn human_units() {
        assert_eq!(human_micros(850), "850 µs");
        assert_eq!(human_micros(12_345), "12.3 ms");
        assert_eq!(human_micros(1_250_000), "1.25 s");
    }
}
