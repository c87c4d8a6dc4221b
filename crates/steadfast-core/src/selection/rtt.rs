//! Round-trip time bookkeeping: the moving average used by the latency window and the recent
//! minimum used by client-side operation timeouts.

use std::collections::VecDeque;
use std::time::Duration;

/// The weight of a new sample in the moving average (server-selection.md, "Calculation of
/// Average Round Trip Times").
pub const RTT_ALPHA: f64 = 0.2;

/// How many recent samples the minimum is taken over (server-monitoring.md, "Measuring RTT").
pub const MIN_RTT_WINDOW: usize = 10;

/// How many samples must exist before the minimum is reported as anything but zero.
pub const MIN_RTT_REQUIRED_SAMPLES: usize = 2;

/// The exponentially weighted moving average of a server's round-trip times.
///
/// The first sample after creation or [`reset`](Self::reset) is taken as the average; every
/// later sample moves the average by [`RTT_ALPHA`] of the difference. Samples are `Duration`s, so
/// a negative RTT cannot be represented at all.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RoundTripTimeEstimator {
    average: Option<Duration>,
}

impl RoundTripTimeEstimator {
    /// An estimator with no samples yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// An estimator whose average is already `average`, as if earlier samples had produced it.
    pub fn with_average(average: Duration) -> Self {
        RoundTripTimeEstimator {
            average: Some(average),
        }
    }

    /// Folds one measurement into the average and returns the new average.
    pub fn add_sample(&mut self, sample: Duration) -> Duration {
        let next = match self.average {
            None => sample,
            Some(old) => {
                // f64 seconds keep sub-nanosecond intermediate precision; the result is rounded
                // back to whole nanoseconds by `Duration`.
                let mixed =
                    RTT_ALPHA * sample.as_secs_f64() + (1.0 - RTT_ALPHA) * old.as_secs_f64();
                Duration::try_from_secs_f64(mixed).unwrap_or(old)
            }
        };
        self.average = Some(next);
        next
    }

    /// The current average, `None` before the first sample.
    pub fn average(&self) -> Option<Duration> {
        self.average
    }

    /// Forgets every sample: the server became unavailable, so the next sample starts afresh.
    pub fn reset(&mut self) {
        self.average = None;
    }
}

/// The minimum of a server's most recent [`MIN_RTT_WINDOW`] round-trip times.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MinRoundTripTime {
    recent: VecDeque<Duration>,
}

impl MinRoundTripTime {
    /// A tracker with no samples.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one measurement, forgetting the oldest once the window is full.
    pub fn add_sample(&mut self, sample: Duration) {
        if self.recent.len() == MIN_RTT_WINDOW {
            self.recent.pop_front();
        }
        self.recent.push_back(sample);
    }

    /// The smallest recent sample, or zero while fewer than [`MIN_RTT_REQUIRED_SAMPLES`] exist
    /// (a single sample is too likely to be an outlier, e.g. one that included a TCP handshake).
    pub fn minimum(&self) -> Duration {
        if self.recent.len() < MIN_RTT_REQUIRED_SAMPLES {
            return Duration::ZERO;
        }
        self.recent.iter().copied().min().unwrap_or(Duration::ZERO)
    }

    /// How many samples are currently remembered (at most [`MIN_RTT_WINDOW`]).
    pub fn sample_count(&self) -> usize {
        self.recent.len()
    }

    /// Forgets every sample.
    pub fn reset(&mut self) {
        self.recent.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: f64) -> Duration {
        Duration::from_secs_f64(v / 1000.0)
    }

    fn close(a: Duration, b: Duration) -> bool {
        a.abs_diff(b) <= Duration::from_nanos(2)
    }

    #[test]
    fn first_sample_is_taken_as_is_then_weighted() {
        let mut e = RoundTripTimeEstimator::new();
        assert_eq!(e.average(), None);
        assert_eq!(e.add_sample(ms(10.0)), ms(10.0));
        // 0.2 * 20 + 0.8 * 10 = 12
        assert!(close(e.add_sample(ms(20.0)), ms(12.0)));
        // 0.2 * 2 + 0.8 * 12 = 10
        assert!(close(e.add_sample(ms(2.0)), ms(10.0)));
    }

    #[test]
    fn reset_makes_next_sample_the_average() {
        let mut e = RoundTripTimeEstimator::with_average(ms(500.0));
        e.reset();
        assert_eq!(e.average(), None);
        assert_eq!(e.add_sample(ms(3.0)), ms(3.0));
    }

    #[test]
    fn zero_average_moves_by_alpha() {
        let mut e = RoundTripTimeEstimator::with_average(Duration::ZERO);
        assert!(close(e.add_sample(ms(5.0)), ms(1.0)));
    }

    #[test]
    fn min_rtt_is_zero_until_two_samples() {
        let mut m = MinRoundTripTime::new();
        assert_eq!(m.minimum(), Duration::ZERO);
        m.add_sample(ms(7.0));
        assert_eq!(m.minimum(), Duration::ZERO);
        m.add_sample(ms(9.0));
        assert_eq!(m.minimum(), ms(7.0));
    }

    #[test]
    fn min_rtt_forgets_samples_older_than_the_window() {
        let mut m = MinRoundTripTime::new();
        m.add_sample(ms(1.0));
        for _ in 0..MIN_RTT_WINDOW - 1 {
            m.add_sample(ms(50.0));
        }
        assert_eq!(m.minimum(), ms(1.0));
        // The eleventh sample pushes the 1 ms sample out.
        m.add_sample(ms(40.0));
        assert_eq!(m.sample_count(), MIN_RTT_WINDOW);
        assert_eq!(m.minimum(), ms(40.0));
        m.reset();
        assert_eq!(m.minimum(), Duration::ZERO);
    }
}
