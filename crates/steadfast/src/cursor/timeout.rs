//! How timeoutMS applies to a cursor (CSOT "Cursors"): the validation of `timeoutMode` and
//! `maxAwaitTimeMS`, and what the opening command and the later fetches get. Pure: the caller
//! brings the clock.

use std::time::{Duration, Instant};

use steadfast_core::Deadline;

use super::state::CursorSettings;
use crate::error::{Error, Result};
use crate::options::TimeoutMode;

/// What timeoutMS means for one cursor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CursorTiming {
    /// The opening command carries no `maxTimeMS` (iteration mode, tailable cursors without
    /// awaitData).
    pub(crate) omit_max_time: bool,
    /// The mode in force (`None`: no timeoutMS).
    pub(crate) mode: Option<TimeoutMode>,
}

impl CursorTiming {
    /// The deadline every fetch shares in cursor-lifetime mode: `timeout` from `opened` (a zero
    /// timeout: unbounded). `None` for the iteration mode or without a timeout: each fetch
    /// then starts its own.
    pub(crate) fn lifetime_deadline(
        &self,
        timeout: Option<Duration>,
        opened: Instant,
    ) -> Option<Deadline> {
        match (self.mode, timeout) {
            (Some(TimeoutMode::CursorLifetime), Some(_)) => {
                Some(Deadline::from_timeout(timeout, opened))
            }
            _ => None,
        }
    }
}

/// How far one call goes on a tailable cursor whose batch brought nothing new.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tailing {
    /// Keep sending `getMore`s until a document arrives (`advance`, `next`, the streams).
    UntilDocument,
    /// Return after one `getMore` (`try_advance`).
    OneBatch,
}

/// The deadline of all the `getMore`s of one call that keeps tailing, from its first at
/// `now`: CSOT applies timeoutMS to the totality of the `getMore`s a driver loops through in
/// one `next`. Unbounded with 0, or a timeout too large to add to `now`.
pub(crate) fn call_deadline(timeout: Option<Duration>, now: Instant) -> Deadline {
    Deadline::from_timeout(timeout, now)
}

/// Checks the cursor options against `timeout` (the operation's resolved timeoutMS) and says
/// how the timeout applies.
///
/// # Errors
/// `InvalidArgument` for a `timeoutMode` without timeoutMS, `CursorLifetime` on a tailable
/// cursor, `Iteration` on an aggregation with `$out`/`$merge`, and a tailable await cursor
/// whose `maxAwaitTimeMS` is not below a non-zero timeoutMS.
pub(crate) fn cursor_timing(
    timeout: Option<Duration>,
    settings: &CursorSettings,
) -> Result<CursorTiming> {
    let Some(timeout) = timeout else {
        if settings.timeout_mode.is_some() {
            return Err(Error::invalid_argument(
                "timeoutMode requires a timeout (timeoutMS)",
            ));
        }
        return Ok(CursorTiming {
            omit_max_time: false,
            mode: None,
        });
    };
    let default = if settings.tailable {
        TimeoutMode::Iteration
    } else {
        TimeoutMode::CursorLifetime
    };
    let mode = settings.timeout_mode.unwrap_or(default);
    if settings.tailable && mode == TimeoutMode::CursorLifetime {
        return Err(Error::invalid_argument(
            "a tailable cursor supports only TimeoutMode::Iteration",
        ));
    }
    if settings.writes && mode == TimeoutMode::Iteration {
        return Err(Error::invalid_argument(
            "an aggregation with $out or $merge cannot use TimeoutMode::Iteration",
        ));
    }
    // A find sets max_await_time only for tailable await cursors; an aggregation's applies to
    // its getMores as a change stream's would.
    if !timeout.is_zero() && settings.max_await_time.is_some_and(|wait| wait >= timeout) {
        return Err(Error::invalid_argument(
            "maxAwaitTimeMS must be less than timeoutMS",
        ));
    }
    let omit_max_time = if settings.tailable {
        !settings.await_data
    } else {
        mode == TimeoutMode::Iteration
    };
    Ok(CursorTiming {
        omit_max_time,
        mode: Some(mode),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tailing_call_has_one_deadline_unless_unlimited() {
        let now = Instant::now();
        assert_eq!(
            call_deadline(Some(ms(100)), now),
            Deadline::At(now + ms(100))
        );
        assert_eq!(
            call_deadline(Some(Duration::ZERO), now),
            Deadline::Unbounded
        );
        assert_eq!(call_deadline(None, now), Deadline::None);
        assert_eq!(
            call_deadline(Some(Duration::MAX), now),
            Deadline::Unbounded,
            "overflow is no limit"
        );
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn tailable_await(max_await: Option<Duration>) -> CursorSettings {
        CursorSettings {
            tailable: true,
            await_data: true,
            max_await_time: max_await,
            ..CursorSettings::default()
        }
    }

    #[test]
    fn timeout_mode_without_a_timeout_is_rejected() {
        let settings = CursorSettings {
            timeout_mode: Some(TimeoutMode::Iteration),
            ..CursorSettings::default()
        };
        assert!(cursor_timing(None, &settings).is_err());
        assert!(cursor_timing(Some(ms(10)), &settings).is_ok());
    }

    #[test]
    fn non_tailable_cursors_default_to_one_deadline_for_their_lifetime() {
        let timing = cursor_timing(Some(ms(200)), &CursorSettings::default()).unwrap();
        assert_eq!(timing.mode, Some(TimeoutMode::CursorLifetime));
        assert!(!timing.omit_max_time);
        let opened = Instant::now();
        assert_eq!(
            timing.lifetime_deadline(Some(ms(200)), opened),
            Some(Deadline::At(opened + ms(200)))
        );
        // timeoutMS=0 means no limit, not an instant deadline.
        assert_eq!(
            timing.lifetime_deadline(Some(Duration::ZERO), opened),
            Some(Deadline::Unbounded)
        );
    }

    #[test]
    fn iteration_mode_omits_max_time_and_has_no_lifetime_deadline() {
        let settings = CursorSettings {
            timeout_mode: Some(TimeoutMode::Iteration),
            ..CursorSettings::default()
        };
        let timing = cursor_timing(Some(ms(200)), &settings).unwrap();
        assert!(timing.omit_max_time);
        assert_eq!(
            timing.lifetime_deadline(Some(ms(200)), Instant::now()),
            None
        );
    }

    #[test]
    fn tailable_cursors_refuse_cursor_lifetime() {
        let settings = CursorSettings {
            tailable: true,
            timeout_mode: Some(TimeoutMode::CursorLifetime),
            ..CursorSettings::default()
        };
        assert!(cursor_timing(Some(ms(200)), &settings).is_err());
    }

    #[test]
    fn only_tailable_await_cursors_send_max_time_on_the_opening_find() {
        let tailable = CursorSettings {
            tailable: true,
            ..CursorSettings::default()
        };
        assert!(
            cursor_timing(Some(ms(200)), &tailable)
                .unwrap()
                .omit_max_time
        );
        let awaiting = cursor_timing(Some(ms(200)), &tailable_await(None)).unwrap();
        assert!(!awaiting.omit_max_time);
        assert_eq!(awaiting.mode, Some(TimeoutMode::Iteration));
    }

    #[test]
    fn max_await_time_must_be_below_a_non_zero_timeout() {
        assert!(cursor_timing(Some(ms(5)), &tailable_await(Some(ms(10)))).is_err());
        assert!(cursor_timing(Some(ms(5)), &tailable_await(Some(ms(5)))).is_err());
        assert!(cursor_timing(Some(ms(10)), &tailable_await(Some(ms(5)))).is_ok());
        assert!(cursor_timing(Some(Duration::ZERO), &tailable_await(Some(ms(5)))).is_ok());
    }

    #[test]
    fn aggregations_that_write_refuse_iteration_mode() {
        let settings = CursorSettings {
            writes: true,
            timeout_mode: Some(TimeoutMode::Iteration),
            ..CursorSettings::default()
        };
        assert!(cursor_timing(Some(ms(100)), &settings).is_err());
    }
}
