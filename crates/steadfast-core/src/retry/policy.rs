//! Pluggable retry policies. A policy sees what the specifications allow for this failure and
//! may only narrow or delay it: the orchestrator ([`super::RetryState`]) refuses any retry that
//! is not safe, caps overload retries, charges the budget, enforces the required backoff and
//! stops when a delay would outlive the deadline, whatever the policy says.

use std::fmt::Debug;
use std::time::{Duration, Instant};

use rand::RngCore;

use super::adaptive::Admission;
use super::backoff::{exponential_backoff, ladder_step};
use super::classify::{Execution, FailureFacts, RetryReason};
use super::state::AttemptRecord;
use crate::address::ServerAddress;

/// Where the retry should go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RetryTarget {
    /// Any suitable server, the failed one included.
    AnyServer,
    /// Prefer another server: the failed one is deprioritized in selection.
    AvoidFailedServer,
}

/// Why no retry happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StopReason {
    /// No retry rule applies to this error.
    NotRetryable,
    /// The request may have executed and a resend could apply it twice.
    Unsafe,
    /// The retries allowed are used up.
    AttemptsExhausted,
    /// The delay would outlive the operation's deadline.
    DeadlineWouldPass,
    /// The retry budget is spent: retrying now would feed a retry storm.
    BudgetExhausted,
    /// The policy chose not to retry.
    PolicyDeclined,
}

/// A policy's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryDecision {
    /// Retry after `after`, on `target`.
    Retry {
        /// How long to wait first.
        after: Duration,
        /// Which servers to prefer.
        target: RetryTarget,
    },
    /// Give up and report the error.
    Stop(StopReason),
}

/// What the specifications and the safety rules allow for this failure. Computed by the
/// orchestrator; a policy cannot change it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allowance {
    /// Whether the specifications (retryable reads/writes, backpressure) retry this failure now.
    pub spec_retry: bool,
    /// Whether a retry is safe at all: the error is transient and a resend cannot apply the
    /// request twice. No policy may retry beyond this.
    pub safe_retry: bool,
    /// The backoff the specifications require (overload errors), already jittered.
    pub min_delay: Duration,
    /// Whether the specifications deprioritize the failed server.
    pub avoid_failed_server: bool,
}

/// Everything a policy may look at.
#[derive(Debug)]
pub struct AttemptContext<'a> {
    /// The operation's name (`insert`, `find`, ...).
    pub operation: &'a str,
    /// Whether running the operation twice has the same effect as once.
    pub idempotent: bool,
    /// Why the attempt failed.
    pub reason: RetryReason,
    /// Whether the attempt could have executed.
    pub execution: Execution,
    /// The raw facts of the failure.
    pub facts: &'a FailureFacts,
    /// Retries already made (0 when the first attempt failed).
    pub retries_so_far: u32,
    /// The current instant (for policies that keep state over time, such as a budget).
    pub now: Instant,
    /// Time since the operation started.
    pub elapsed: Duration,
    /// Time left before the operation's deadline, if it has one.
    pub remaining: Option<Duration>,
    /// What the orchestrator allows.
    pub allowance: Allowance,
    /// The attempts so far, oldest first, this one last.
    pub history: &'a [AttemptRecord],
}

/// A retry strategy. Implementations decide *whether* and *when*; the orchestrator guarantees
/// they can never make an unsafe retry happen.
pub trait RetryPolicy: Debug + Send + Sync {
    /// Decides what to do after a failed attempt. `rng` provides jitter.
    fn decide(&self, context: &AttemptContext<'_>, rng: &mut dyn RngCore) -> RetryDecision;

    /// Whether the retries this policy makes beyond the specifications are charged to the
    /// client's retry budget.
    fn uses_budget(&self) -> bool {
        true
    }

    /// Called before an operation's first attempt is sent to `server` (retries are decided by
    /// [`RetryPolicy::decide`]): a policy may refuse the request locally, so that it is never
    /// sent. `rng` provides the random draw. The default sends everything.
    fn admit(&self, server: &ServerAddress, now: Instant, rng: &mut dyn RngCore) -> Admission {
        let _ = (server, now, rng);
        Admission::Send
    }

    /// Called with every attempt `server` answered: `shed` when the reply is an overload
    /// rejection (`SystemOverloadedError`); any other reply, an error included, means the server
    /// did the work. Attempts that got no reply (network errors) are not reported. The default
    /// ignores it.
    fn observe_reply(&self, server: &ServerAddress, now: Instant, shed: bool) {
        let _ = (server, now, shed);
    }
}

fn spec_target(allowance: &Allowance) -> RetryTarget {
    if allowance.avoid_failed_server {
        RetryTarget::AvoidFailedServer
    } else {
        RetryTarget::AnyServer
    }
}

/// Exactly the MongoDB specifications: retryable writes and reads retried once (or until the
/// deadline under timeoutMS), overload errors up to `maxAdaptiveRetries` with the prescribed
/// backoff. The default.
#[derive(Clone, Copy, Debug, Default)]
pub struct SpecPolicy;

impl RetryPolicy for SpecPolicy {
    fn decide(&self, context: &AttemptContext<'_>, _rng: &mut dyn RngCore) -> RetryDecision {
        if context.allowance.spec_retry {
            RetryDecision::Retry {
                after: context.allowance.min_delay,
                target: spec_target(&context.allowance),
            }
        } else {
            RetryDecision::Stop(StopReason::NotRetryable)
        }
    }

    fn uses_budget(&self) -> bool {
        false
    }
}

/// Never retries: every error reaches the application at once. For callers that run their own
/// retry loop, or that prefer failing fast to waiting.
#[derive(Clone, Copy, Debug, Default)]
pub struct FailFast;

impl RetryPolicy for FailFast {
    fn decide(&self, _context: &AttemptContext<'_>, _rng: &mut dyn RngCore) -> RetryDecision {
        RetryDecision::Stop(StopReason::PolicyDeclined)
    }

    fn uses_budget(&self) -> bool {
        false
    }
}

/// Retries every safe failure until the deadline (timeoutMS, or `max_duration` without one):
/// requests that were never sent follow the 1/10/50/100/500/1000 ms ladder, the others a
/// jittered exponential backoff from 1 ms to 500 ms, never shorter than the specifications'
/// required backoff. Retries beyond what the specifications would do are charged to the budget.
#[derive(Clone, Copy, Debug)]
pub struct BestEffort {
    /// The longest an operation keeps retrying when it has no deadline of its own.
    pub max_duration: Duration,
    /// The first exponential step.
    pub backoff_floor: Duration,
    /// The largest exponential step.
    pub backoff_cap: Duration,
}

impl Default for BestEffort {
    fn default() -> Self {
        BestEffort {
            max_duration: Duration::from_secs(30),
            backoff_floor: Duration::from_millis(1),
            backoff_cap: Duration::from_millis(500),
        }
    }
}

impl RetryPolicy for BestEffort {
    fn decide(&self, context: &AttemptContext<'_>, rng: &mut dyn RngCore) -> RetryDecision {
        if !context.allowance.safe_retry {
            return RetryDecision::Stop(StopReason::Unsafe);
        }
        let remaining = context
            .remaining
            .unwrap_or_else(|| self.max_duration.saturating_sub(context.elapsed));
        if remaining.is_zero() {
            return RetryDecision::Stop(StopReason::DeadlineWouldPass);
        }
        let jitter = rand::Rng::random::<f64>(rng);
        let own = if context.execution == Execution::NotSent {
            ladder_step(context.retries_so_far)
        } else {
            exponential_backoff(
                context.retries_so_far,
                self.backoff_floor,
                self.backoff_cap,
                jitter,
            )
        };
        let target = if context.allowance.avoid_failed_server || context.retries_so_far > 0 {
            RetryTarget::AvoidFailedServer
        } else {
            RetryTarget::AnyServer
        };
        RetryDecision::Retry {
            after: own.max(context.allowance.min_delay),
            target,
        }
    }
}
