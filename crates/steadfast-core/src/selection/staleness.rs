//! Max staleness: the lower bound on `maxStalenessSeconds` and the staleness estimate of a
//! secondary (max-staleness.md).

use std::time::{Duration, Instant};

use super::read_preference::{ReadPreferenceError, SMALLEST_MAX_STALENESS};

/// How often an idle primary writes a no-op to its oplog (`idleWritePeriodMS`, a constant).
pub const IDLE_WRITE_PERIOD: Duration = Duration::from_secs(10);

/// The smallest `maxStalenessSeconds` accepted against a replica set monitored every
/// `heartbeat_frequency`: at least 90 seconds and at least `heartbeat_frequency +
/// idleWritePeriodMS`, so an idle but healthy secondary is never judged too stale.
pub fn minimum_max_staleness(heartbeat_frequency: Duration) -> Duration {
    heartbeat_frequency
        .saturating_add(IDLE_WRITE_PERIOD)
        .max(SMALLEST_MAX_STALENESS)
}

/// Checks `max_staleness` against [`minimum_max_staleness`].
///
/// # Errors
/// [`ReadPreferenceError::MaxStalenessTooSmall`] when `max_staleness` is below the minimum; the
/// minimum is reported rounded up to whole seconds.
pub fn check_max_staleness(
    max_staleness: Duration,
    heartbeat_frequency: Duration,
) -> Result<(), ReadPreferenceError> {
    let minimum = minimum_max_staleness(heartbeat_frequency);
    if max_staleness < minimum {
        let minimum_secs = minimum.as_secs() + u64::from(minimum.subsec_nanos() > 0);
        return Err(ReadPreferenceError::MaxStalenessTooSmall {
            given_secs: max_staleness.as_secs(),
            minimum_secs,
        });
    }
    Ok(())
}

/// What one hello reply told about a member's replication progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteObservation {
    /// When the client received the reply (the description's `lastUpdateTime`).
    pub last_update_time: Instant,
    /// The reply's `lastWrite.lastWriteDate`, in milliseconds since the Unix epoch on the
    /// primary's clock.
    pub last_write_date_ms: i64,
}

/// `later - earlier` in signed nanoseconds, whichever order the instants are in.
fn signed_nanos_between(earlier: Instant, later: Instant) -> i128 {
    match later.checked_duration_since(earlier) {
        Some(d) => d.as_nanos() as i128,
        None => -(earlier.duration_since(later).as_nanos() as i128),
    }
}

/// A signed nanosecond estimate as a `Duration`; a negative estimate (possible with clock skew
/// between checks) is reported as zero, which is equally eligible under any bound.
fn non_negative(nanos: i128) -> Duration {
    if nanos <= 0 {
        return Duration::ZERO;
    }
    let secs = u64::try_from(nanos / 1_000_000_000).unwrap_or(u64::MAX);
    // The remainder is below 10^9, so it always fits in a u32.
    let sub = u32::try_from(nanos % 1_000_000_000).unwrap_or(0);
    Duration::new(secs, sub)
}

/// Staleness of a secondary when a primary is known:
/// `(S.lastUpdateTime - S.lastWriteDate) - (P.lastUpdateTime - P.lastWriteDate) + heartbeat`.
///
/// Only differences between the client's own clock readings and between the primary-stamped
/// write dates appear, so clock skew between client and servers cancels out.
pub fn staleness_with_primary(
    secondary: WriteObservation,
    primary: WriteObservation,
    heartbeat_frequency: Duration,
) -> Duration {
    let update_gap = signed_nanos_between(primary.last_update_time, secondary.last_update_time);
    let write_gap = (i128::from(secondary.last_write_date_ms)
        - i128::from(primary.last_write_date_ms))
        * 1_000_000;
    non_negative(update_gap - write_gap + heartbeat_frequency.as_nanos() as i128)
}

/// Staleness of a secondary when no primary is known, relative to the secondary with the
/// greatest `lastWriteDate`: `SMax.lastWriteDate - S.lastWriteDate + heartbeat`.
pub fn staleness_without_primary(
    secondary_last_write_ms: i64,
    freshest_last_write_ms: i64,
    heartbeat_frequency: Duration,
) -> Duration {
    let behind =
        (i128::from(freshest_last_write_ms) - i128::from(secondary_last_write_ms)) * 1_000_000;
    non_negative(behind + heartbeat_frequency.as_nanos() as i128)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(v: u64) -> Duration {
        Duration::from_secs(v)
    }

    #[test]
    fn minimum_is_ninety_or_heartbeat_plus_idle_write() {
        assert_eq!(minimum_max_staleness(secs(10)), secs(90));
        assert_eq!(minimum_max_staleness(secs(120)), secs(130));
        assert!(check_max_staleness(secs(90), secs(10)).is_ok());
        assert_eq!(
            check_max_staleness(secs(129), secs(120)),
            Err(ReadPreferenceError::MaxStalenessTooSmall {
                given_secs: 129,
                minimum_secs: 130
            })
        );
        assert!(check_max_staleness(secs(130), secs(120)).is_ok());
        let odd = check_max_staleness(secs(90), Duration::from_millis(80_500));
        assert!(matches!(
            odd,
            Err(ReadPreferenceError::MaxStalenessTooSmall {
                minimum_secs: 91,
                ..
            })
        ));
    }

    #[test]
    fn spec_example_with_primary_and_skewed_clock() {
        // max-staleness.md's worked example: client checks P and S at 60 s, P wrote at 10 s
        // (its clock is 50 s ahead), S at 0 s, heartbeat 10 s -> 20 s; then S at 70 s with 5 s
        // -> 25 s; then P at 80 s with 30 s -> still 25 s.
        let t0 = Instant::now();
        let at = |s: u64| t0 + secs(s);
        let obs = |update: u64, write_s: i64| WriteObservation {
            last_update_time: at(update),
            last_write_date_ms: write_s * 1000,
        };
        let hb = secs(10);
        assert_eq!(
            staleness_with_primary(obs(60, 0), obs(60, 10), hb),
            secs(20)
        );
        assert_eq!(
            staleness_with_primary(obs(70, 5), obs(60, 10), hb),
            secs(25)
        );
        assert_eq!(
            staleness_with_primary(obs(70, 5), obs(80, 30), hb),
            secs(25)
        );
    }

    #[test]
    fn secondary_checked_before_primary_can_be_fresher_than_heartbeat() {
        let t0 = Instant::now();
        let s = WriteObservation {
            last_update_time: t0,
            last_write_date_ms: 1_000,
        };
        let p = WriteObservation {
            last_update_time: t0 + secs(30),
            last_write_date_ms: 1_000,
        };
        // -30 s + 10 s is negative: reported as zero.
        assert_eq!(staleness_with_primary(s, p, secs(10)), Duration::ZERO);
    }

    #[test]
    fn spec_example_without_primary() {
        let hb = secs(10);
        assert_eq!(staleness_without_primary(20_000, 20_000, hb), secs(10));
        assert_eq!(staleness_without_primary(5_000, 20_000, hb), secs(25));
    }
}
