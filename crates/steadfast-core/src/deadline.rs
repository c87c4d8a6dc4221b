//! An operation's deadline (client-side operations timeout, "CSOT") and the rules that follow
//! from it: what is left, when it has passed, how long a check-out may wait, what `maxTimeMS`
//! to send, which I/O limit applies, and how long a retry may sleep.
//!
//! Time is an argument (`now`), never read here, so every rule is tested without a runtime.

use std::time::{Duration, Instant};

/// The time limit of one operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Deadline {
    /// timeoutMS is not set: the deprecated per-step timeouts (socketTimeoutMS,
    /// waitQueueTimeoutMS, ...) apply as they always did.
    #[default]
    None,
    /// timeoutMS is 0: no limit at all, and the deprecated per-step timeouts are ignored.
    Unbounded,
    /// timeoutMS is set: the operation must end by this instant.
    At(Instant),
}

/// What bounds the reads and writes of one exchange on a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IoLimit {
    /// Under timeoutMS: only the operation's deadline (none when unbounded); socketTimeoutMS
    /// is ignored. A reply the driver first sees after the deadline counts as late.
    Deadline(Option<Instant>),
    /// Without timeoutMS: the connection's socketTimeoutMS bounds each read and write, and the
    /// instant, if any (a handshake's or a monitor's limit), bounds them all.
    SocketTimeout(Option<Instant>),
    /// Without timeoutMS, an operation's command: socketTimeoutMS bounds each read and write.
    /// Like [`IoLimit::Deadline`], and unlike [`IoLimit::SocketTimeout`] (handshakes, monitor
    /// checks), a reply the driver first sees after the limit passed counts as late.
    OperationSocketTimeout,
}

/// The deadline leaves no more time than the server's minimum round trip: sending the command
/// could only end in a timeout (CSOT "Command Execution").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotEnoughTime {
    /// What was left of the deadline.
    pub remaining: Duration,
    /// The server's minimum round-trip time.
    pub min_rtt: Duration,
}

impl IoLimit {
    /// The instant that bounds the exchange, if any (also the limit of what it waits for
    /// besides the socket, such as an authentication's token source).
    pub fn instant(&self) -> Option<Instant> {
        match self {
            IoLimit::Deadline(at) | IoLimit::SocketTimeout(at) => *at,
            IoLimit::OperationSocketTimeout => None,
        }
    }
}

impl Deadline {
    /// The deadline of an operation started at `started` with timeoutMS `timeout` (`None`: not
    /// set; zero: unbounded). A timeout too large to add to `started` is unbounded.
    pub fn from_timeout(timeout: Option<Duration>, started: Instant) -> Self {
        match timeout {
            None => Deadline::None,
            Some(t) if t.is_zero() => Deadline::Unbounded,
            Some(t) => started
                .checked_add(t)
                .map_or(Deadline::Unbounded, Deadline::At),
        }
    }

    /// Whether timeoutMS applies (possibly zero): then the deprecated per-step timeouts give
    /// way to it.
    pub fn is_csot(&self) -> bool {
        !matches!(self, Deadline::None)
    }

    /// The instant the operation must end by, if there is one.
    pub fn instant(&self) -> Option<Instant> {
        match self {
            Deadline::At(at) => Some(*at),
            Deadline::None | Deadline::Unbounded => None,
        }
    }

    /// The time left at `now` (zero once passed); `None` without a finite deadline.
    pub fn remaining(&self, now: Instant) -> Option<Duration> {
        self.instant().map(|at| at.saturating_duration_since(now))
    }

    /// Whether the deadline has passed at `now`.
    pub fn is_expired(&self, now: Instant) -> bool {
        self.instant().is_some_and(|at| now >= at)
    }

    /// How long a connection check-out may wait. Under timeoutMS it is min(serverSelectionTimeoutMS
    /// since selection began, the deadline) (CSOT "Server Selection"): `At` that instant, or
    /// `Unbounded` when neither can be reached. Without timeoutMS it is `None`, and the pool's
    /// waitQueueTimeoutMS applies.
    pub fn checkout_limit(
        &self,
        selection_started: Instant,
        server_selection_timeout: Duration,
    ) -> Deadline {
        if !self.is_csot() {
            return Deadline::None;
        }
        let selection_limit = selection_started.checked_add(server_selection_timeout);
        let earliest = match (selection_limit, self.instant()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        earliest.map_or(Deadline::Unbounded, Deadline::At)
    }

    /// `limit` from `now`, or `Unbounded` when `now + limit` cannot be represented. For limits
    /// that are always set and never mean "no limit" when zero (a fixed budget of the driver's
    /// own, such as the time a late reply may take to arrive).
    pub fn after(limit: Duration, now: Instant) -> Self {
        now.checked_add(limit)
            .map_or(Deadline::Unbounded, Deadline::At)
    }

    /// The `maxTimeMS` to send at `now` to a server whose minimum round trip is `min_rtt`:
    /// what is left minus that round trip, so that the server gives up before the driver does
    /// and the connection survives. `Ok(None)` without a finite deadline.
    ///
    /// # Errors
    /// [`NotEnoughTime`] when no more than `min_rtt` is left: the command must not be sent.
    pub fn max_time_ms(
        &self,
        now: Instant,
        min_rtt: Duration,
    ) -> Result<Option<Duration>, NotEnoughTime> {
        let Some(remaining) = self.remaining(now) else {
            return Ok(None);
        };
        match remaining.checked_sub(min_rtt) {
            Some(left) if !left.is_zero() => Ok(Some(left)),
            _ => Err(NotEnoughTime { remaining, min_rtt }),
        }
    }

    /// What bounds an exchange's reads and writes: the deadline under timeoutMS, else
    /// socketTimeoutMS (CSOT "socketTimeoutMS").
    pub fn io_limit(&self) -> IoLimit {
        if self.is_csot() {
            IoLimit::Deadline(self.instant())
        } else {
            IoLimit::OperationSocketTimeout
        }
    }

    /// `delay` shortened to what is left at `now`: a retry never sleeps past the deadline.
    pub fn cap(&self, delay: Duration, now: Instant) -> Duration {
        self.remaining(now).map_or(delay, |left| delay.min(left))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn at(now: Instant, ms: u64) -> Deadline {
        Deadline::At(now + MS * u32::try_from(ms).unwrap_or(u32::MAX))
    }

    #[test]
    fn from_timeout_distinguishes_absent_zero_and_set() {
        let now = Instant::now();
        assert_eq!(Deadline::from_timeout(None, now), Deadline::None);
        assert_eq!(
            Deadline::from_timeout(Some(Duration::ZERO), now),
            Deadline::Unbounded
        );
        assert_eq!(
            Deadline::from_timeout(Some(MS * 50), now),
            Deadline::At(now + MS * 50)
        );
        assert_eq!(
            Deadline::from_timeout(Some(Duration::MAX), now),
            Deadline::Unbounded
        );
    }

    #[test]
    fn csot_applies_when_timeout_is_set_even_to_zero() {
        let now = Instant::now();
        assert!(!Deadline::None.is_csot());
        assert!(Deadline::Unbounded.is_csot());
        assert!(at(now, 5).is_csot());
    }

    #[test]
    fn remaining_and_expiry() {
        let now = Instant::now();
        let deadline = at(now, 100);
        assert_eq!(deadline.remaining(now), Some(MS * 100));
        assert_eq!(deadline.remaining(now + MS * 150), Some(Duration::ZERO));
        assert!(!deadline.is_expired(now + MS * 99));
        assert!(deadline.is_expired(now + MS * 100));
        assert_eq!(Deadline::Unbounded.remaining(now), None);
        assert!(!Deadline::Unbounded.is_expired(now + MS * 1_000_000));
        assert!(!Deadline::None.is_expired(now));
    }

    #[test]
    fn checkout_limit_is_the_earlier_of_selection_timeout_and_deadline_under_csot() {
        let now = Instant::now();
        let sst = MS * 30;
        assert_eq!(
            at(now, 100).checkout_limit(now, sst),
            Deadline::At(now + sst)
        );
        assert_eq!(
            at(now, 10).checkout_limit(now, sst),
            Deadline::At(now + MS * 10)
        );
        assert_eq!(
            Deadline::Unbounded.checkout_limit(now, sst),
            Deadline::At(now + sst)
        );
        assert_eq!(
            Deadline::Unbounded.checkout_limit(now, Duration::MAX),
            Deadline::Unbounded
        );
        // Without timeoutMS the pool's own waitQueueTimeoutMS applies.
        assert_eq!(Deadline::None.checkout_limit(now, sst), Deadline::None);
    }

    #[test]
    fn after_is_a_finite_limit_from_now_even_when_zero() {
        let now = Instant::now();
        assert_eq!(Deadline::after(MS * 5, now), Deadline::At(now + MS * 5));
        assert_eq!(Deadline::after(Duration::ZERO, now), Deadline::At(now));
        assert_eq!(Deadline::after(Duration::MAX, now), Deadline::Unbounded);
    }

    #[test]
    fn max_time_ms_leaves_room_for_the_round_trip() {
        let now = Instant::now();
        let deadline = at(now, 100);
        assert_eq!(deadline.max_time_ms(now, MS * 10), Ok(Some(MS * 90)));
        assert_eq!(
            deadline.max_time_ms(now, Duration::ZERO),
            Ok(Some(MS * 100))
        );
        assert_eq!(Deadline::None.max_time_ms(now, MS * 10), Ok(None));
        assert_eq!(Deadline::Unbounded.max_time_ms(now, MS * 10), Ok(None));
    }

    #[test]
    fn max_time_ms_refuses_when_no_more_than_the_round_trip_is_left() {
        let now = Instant::now();
        let deadline = at(now, 10);
        let refused = NotEnoughTime {
            remaining: MS * 10,
            min_rtt: MS * 10,
        };
        assert_eq!(deadline.max_time_ms(now, MS * 10), Err(refused));
        assert!(deadline.max_time_ms(now, MS * 20).is_err());
        assert!(deadline.max_time_ms(now + MS * 10, Duration::ZERO).is_err());
    }

    #[test]
    fn io_limit_is_the_deadline_under_csot_and_the_socket_timeout_otherwise() {
        let now = Instant::now();
        assert_eq!(
            at(now, 100).io_limit(),
            IoLimit::Deadline(Some(now + MS * 100))
        );
        assert_eq!(Deadline::Unbounded.io_limit(), IoLimit::Deadline(None));
        assert_eq!(Deadline::None.io_limit(), IoLimit::OperationSocketTimeout);
    }

    #[test]
    fn an_io_limit_s_instant_is_the_one_either_variant_carries() {
        let now = Instant::now();
        assert_eq!(IoLimit::Deadline(Some(now)).instant(), Some(now));
        assert_eq!(IoLimit::SocketTimeout(Some(now)).instant(), Some(now));
        assert_eq!(IoLimit::Deadline(None).instant(), None);
        assert_eq!(IoLimit::SocketTimeout(None).instant(), None);
    }

    #[test]
    fn cap_shortens_a_delay_to_the_time_left() {
        let now = Instant::now();
        assert_eq!(at(now, 100).cap(MS * 500, now), MS * 100);
        assert_eq!(at(now, 100).cap(MS * 50, now), MS * 50);
        assert_eq!(Deadline::None.cap(MS * 500, now), MS * 500);
        assert_eq!(Deadline::Unbounded.cap(MS * 500, now), MS * 500);
    }
}
