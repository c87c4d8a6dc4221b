//! One operation's retry session: the orchestrator with what it needs for the whole operation
//! (policy, deadline, start) and the failed attempts kept with their errors, from which the
//! error the operation reports is chosen.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::RngCore;

use super::budget::RetryBudget;
use super::classify::{FailureFacts, RetryReason};
use super::policy::{RetryDecision, RetryPolicy};
use super::state::{
    AttemptRecord, Observed, OperationKind, OperationProfile, Outcome, RetryState, Timing,
};
use crate::address::ServerAddress;
use crate::deadline::Deadline;

/// A failed attempt handed to [`RetrySession::on_failure`].
#[derive(Debug)]
pub struct AttemptFailure<E> {
    /// The attempt's error, kept in the session's history.
    pub error: E,
    /// What the executor observed about it.
    pub facts: FailureFacts,
    /// The server that produced it, if one was selected.
    pub server: Option<ServerAddress>,
    /// Whether the topology is sharded.
    pub sharded: bool,
}

/// The error a failed operation reports, as the rules choose it.
#[derive(Debug, PartialEq)]
pub enum FinalError<'a, E> {
    /// This attempt's error (retryable writes' `NoWritesPerformed` rule picks it).
    Chosen(&'a E),
    /// The operation's deadline passed: report a timeout that wraps the last error.
    DeadlineExpired {
        /// The last attempt's error.
        last: &'a E,
        /// The operation's timeoutMS.
        limit: Duration,
        /// How many attempts were made.
        attempts: usize,
    },
}

/// The retry state of one operation, generic over the driver's error type.
///
/// Each failed attempt is recorded once, with its error, by [`RetrySession::on_failure`]; the
/// history the policy sees and the errors the final error is built from cannot drift apart.
pub struct RetrySession<E> {
    state: RetryState,
    policy: Arc<dyn RetryPolicy>,
    deadline: Deadline,
    started: Instant,
    /// The error of each record of `state.history()`, in the same order: both grow only in
    /// [`RetrySession::on_failure`].
    errors: Vec<E>,
}

impl<E> RetrySession<E> {
    /// A session for an operation started at `started` under `deadline`. Under timeoutMS the
    /// non-overload retries continue while time remains (without end for `timeoutMS=0`, CSOT
    /// "Retryability").
    pub fn new(
        mut profile: OperationProfile,
        policy: Arc<dyn RetryPolicy>,
        deadline: Deadline,
        started: Instant,
    ) -> Self {
        profile.has_timeout = deadline.is_csot();
        RetrySession {
            state: RetryState::new(profile),
            policy,
            deadline,
            started,
            errors: Vec::new(),
        }
    }

    /// The operation's profile.
    pub fn profile(&self) -> &OperationProfile {
        self.state.profile()
    }

    /// Changes the operation's kind once the executor knows it (see [`RetryState::set_kind`]).
    pub fn set_kind(&mut self, kind: OperationKind) {
        self.state.set_kind(kind);
    }

    /// The operation's retry policy.
    pub fn policy(&self) -> &dyn RetryPolicy {
        self.policy.as_ref()
    }

    /// The operation's deadline.
    pub fn deadline(&self) -> Deadline {
        self.deadline
    }

    /// When the operation started.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Servers to deprioritize in the next selection.
    pub fn deprioritized(&self) -> &[ServerAddress] {
        self.state.deprioritized()
    }

    /// Whether no attempt has failed yet.
    pub fn is_first_attempt(&self) -> bool {
        self.errors.is_empty()
    }

    /// The failed attempts so far, oldest first, each with its error.
    pub fn attempts(&self) -> impl Iterator<Item = (&AttemptRecord, &E)> {
        self.state.history().iter().zip(&self.errors)
    }

    /// The most recent failed attempt's record.
    pub fn last_record(&self) -> Option<&AttemptRecord> {
        self.state.history().last()
    }

    /// What the failed operation did, as far as can be known.
    pub fn outcome(&self) -> Outcome {
        self.state.outcome()
    }

    /// Records `failure` and decides whether to retry, charging `budget` where the rules say.
    pub fn on_failure(
        &mut self,
        failure: AttemptFailure<E>,
        budget: Option<&mut RetryBudget>,
        now: Instant,
        rng: &mut dyn RngCore,
    ) -> RetryDecision {
        let AttemptFailure {
            error,
            facts,
            server,
            sharded,
        } = failure;
        let timing = Timing {
            now,
            elapsed: now.saturating_duration_since(self.started),
            remaining: self.deadline.remaining(now),
        };
        let observed = Observed {
            facts: &facts,
            server: server.as_ref(),
            sharded,
        };
        let decision = self
            .state
            .on_failure(observed, timing, self.policy.as_ref(), budget, rng);
        self.errors.push(error);
        decision
    }

    /// The error the failed operation reports at `now`: a timeout once the deadline has passed
    /// (or the last failure was the deadline's), else the one retryable writes' rules choose
    /// (the last when they choose none). `None` before any attempt failed.
    pub fn final_error(&self, now: Instant) -> Option<FinalError<'_, E>> {
        let last = self.errors.last()?;
        let expired = self.deadline.is_csot()
            && (self.deadline.is_expired(now)
                || self
                    .last_record()
                    .is_some_and(|r| r.reason == RetryReason::DeadlineExpired));
        if expired {
            return Some(FinalError::DeadlineExpired {
                last,
                limit: self.deadline.remaining(self.started).unwrap_or_default(),
                attempts: self.errors.len(),
            });
        }
        let chosen = self
            .state
            .error_to_report()
            .and_then(|i| self.errors.get(i))
            .unwrap_or(last);
        Some(FinalError::Chosen(chosen))
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::retry::classify::{FailureKind, Sent};
    use crate::retry::policy::SpecPolicy;
    use crate::retry::{StopReason, labels};

    const MS: Duration = Duration::from_millis(1);

    use crate::retry::tests::profile;

    fn failure(
        error: &'static str,
        kind: FailureKind,
        labels: &[&str],
    ) -> AttemptFailure<&'static str> {
        AttemptFailure {
            error,
            facts: FailureFacts {
                kind,
                sent: Sent::Yes,
                labels: labels.iter().collect(),
                base_backoff: None,
                max_wire_version: 25,
            },
            server: Some(ServerAddress::tcp("a", 1)),
            sharded: false,
        }
    }

    fn session(
        kind: OperationKind,
        deadline: Deadline,
        now: Instant,
    ) -> RetrySession<&'static str> {
        RetrySession::new(profile(kind), Arc::new(SpecPolicy), deadline, now)
    }

    #[test]
    fn each_attempt_keeps_its_own_error() {
        let now = Instant::now();
        let mut rng = StdRng::seed_from_u64(1);
        let mut s = session(OperationKind::RetryableWrite, Deadline::None, now);
        assert!(s.is_first_attempt());
        assert_eq!(s.final_error(now), None);
        let first = s.on_failure(
            failure("first", FailureKind::Network, &[]),
            None,
            now,
            &mut rng,
        );
        assert!(matches!(first, RetryDecision::Retry { .. }));
        let second = s.on_failure(
            failure("second", FailureKind::Network, &[]),
            None,
            now,
            &mut rng,
        );
        assert_eq!(second, RetryDecision::Stop(StopReason::AttemptsExhausted));
        let errors: Vec<_> = s
            .attempts()
            .map(|(record, error)| (record.attempt, *error))
            .collect();
        assert_eq!(errors, [(0, "first"), (1, "second")]);
        assert_eq!(s.final_error(now), Some(FinalError::Chosen(&"second")));
    }

    #[test]
    fn no_writes_performed_reports_the_earlier_error() {
        let now = Instant::now();
        let mut rng = StdRng::seed_from_u64(2);
        let mut s = session(OperationKind::RetryableWrite, Deadline::None, now);
        let retryable = [labels::RETRYABLE_WRITE_ERROR];
        s.on_failure(
            failure("wrote", FailureKind::Network, &retryable),
            None,
            now,
            &mut rng,
        );
        let refused = [labels::RETRYABLE_WRITE_ERROR, labels::NO_WRITES_PERFORMED];
        s.on_failure(
            failure("refused", FailureKind::Command { code: 91 }, &refused),
            None,
            now,
            &mut rng,
        );
        assert_eq!(s.final_error(now), Some(FinalError::Chosen(&"wrote")));
    }

    #[test]
    fn a_passed_deadline_reports_a_timeout_wrapping_the_last_error() {
        let now = Instant::now();
        let mut rng = StdRng::seed_from_u64(3);
        let deadline = Deadline::At(now + MS * 100);
        let mut s = session(OperationKind::RetryableRead, deadline, now);
        assert!(
            s.profile().has_timeout,
            "a finite deadline lets retries continue"
        );
        s.on_failure(
            failure("late", FailureKind::Network, &[]),
            None,
            now,
            &mut rng,
        );
        assert_eq!(s.final_error(now), Some(FinalError::Chosen(&"late")));
        assert_eq!(
            s.final_error(now + MS * 100),
            Some(FinalError::DeadlineExpired {
                last: &"late",
                limit: MS * 100,
                attempts: 1
            })
        );
    }

    #[test]
    fn deadline_failure_reports_a_timeout_even_before_the_instant() {
        let now = Instant::now();
        let mut rng = StdRng::seed_from_u64(4);
        let mut s = session(OperationKind::RetryableRead, Deadline::Unbounded, now);
        assert!(
            s.profile().has_timeout,
            "timeoutMS=0 retries without a count limit"
        );
        s.on_failure(
            failure("maxTimeMS", FailureKind::DeadlineExpired, &[]),
            None,
            now,
            &mut rng,
        );
        assert!(matches!(
            s.final_error(now),
            Some(FinalError::DeadlineExpired {
                last: &"maxTimeMS",
                attempts: 1,
                ..
            })
        ));
    }
}
