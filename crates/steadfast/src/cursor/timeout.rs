//! How timeoutMS applies to a cursor (CSOT "Cursors"): the validation of `timeoutMode` and
//! `maxAwaitTimeMS`, and what the opening command and the later fetches get. Pure: the caller
//! brings the clock.

use std::time::{Duration, Instant};

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
    /// The deadline of every fetch in cursor-lifetime mode: `opened + timeout` (`None` for the
    /// iteration mode, no timeout, or a zero timeout, which means no limit).
    pub(crate) fn lifetime_deadline(
        &self,
        timeout: Option<Duration>,
        opened: Instant,
    ) -> Option<Instant> {
        match (self.mode, timeout) {
            (Some(TimeoutMode::CursorLifetime), Some(timeout)) if !timeout.is_zero() => {
                opened.checked_add(timeout)
            }
            _ => None,
        }
    }
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
    if !timeout.is_zero()
        && settings.max_await_time.is_some_and(|wait| wait >= timeout)
    {
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
