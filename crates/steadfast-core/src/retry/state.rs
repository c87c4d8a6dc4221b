//! The orchestrator: one per operation, it records every failed attempt, asks the policy, and
//! enforces the rules no policy may bend.

use std::time::{Duration, Instant};

use rand::RngCore;

use super::backoff::overload_backoff;
use super::budget::RetryBudget;
use super::classify::{Execution, FailureFacts, RetryReason};
use super::policy::{
    Allowance, AttemptContext, RetryDecision, RetryPolicy, RetryTarget, StopReason,
};
use crate::address::ServerAddress;
use crate::labels::Label;

/// How the retry rules see an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OperationKind {
    /// A read in the retryable-reads list (find, aggregate without $out/$merge, count, distinct,
    /// listCollections, ...).
    RetryableRead,
    /// A write sent with `lsid` + `txnNumber`: the server deduplicates resends.
    RetryableWrite,
    /// A write without a transaction id (updateMany, deleteMany, w:0, retryWrites off, a server
    /// without sessions, other commands that write).
    NonRetryableWrite,
    /// getMore: never retried by retryable reads; only overload retries apply.
    GetMore,
    /// A generic `run_command`: only overload retries apply, and only with both retryReads and
    /// retryWrites enabled.
    RunCommand,
}

impl OperationKind {
    /// Whether the operation may change data (writes and generic commands), so that a failure
    /// after sending leaves its outcome open.
    pub fn is_write_like(self) -> bool {
        matches!(
            self,
            OperationKind::RetryableWrite
                | OperationKind::NonRetryableWrite
                | OperationKind::RunCommand
        )
    }
}

/// The fixed facts of an operation that the retry rules need.
#[derive(Clone, Debug, PartialEq)]
pub struct OperationProfile {
    /// The command name.
    pub name: String,
    /// Its kind.
    pub kind: OperationKind,
    /// Whether applying it twice equals applying it once.
    pub idempotent: bool,
    /// retryReads.
    pub retry_reads: bool,
    /// retryWrites.
    pub retry_writes: bool,
    /// maxAdaptiveRetries (default 2).
    pub max_adaptive_retries: u32,
    /// enableOverloadRetargeting.
    pub overload_retargeting: bool,
    /// Whether the operation runs under timeoutMS (CSOT): then non-overload retries continue
    /// while time remains instead of stopping after one.
    pub has_timeout: bool,
}

/// One failed attempt, as kept in the retry history.
#[derive(Clone, Debug, PartialEq)]
pub struct AttemptRecord {
    /// 0 for the first attempt.
    pub attempt: u32,
    /// The server that produced the error, if one was selected.
    pub server: Option<ServerAddress>,
    /// Why it failed.
    pub reason: RetryReason,
    /// Whether it could have executed.
    pub execution: Execution,
    /// Whether it indicates that no write was attempted (never sent, or labelled
    /// `NoWritesPerformed`): the retryable-writes rule for the error to report reads this.
    pub no_write_attempted: bool,
    /// The server's error code, if any.
    pub code: Option<i32>,
    /// The delay before the next attempt, if one followed.
    pub delay: Option<Duration>,
    /// Why no further attempt followed, for the last record of a failed operation.
    pub stop: Option<StopReason>,
}

/// What an operation finally did, as far as the driver can know.
///
/// The variants are ordered from "nothing happened" to "anything may have happened", so that
/// combining the outcomes of several commands (the batches of one bulk write) never claims less
/// than any of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Outcome {
    /// Nothing was applied: every attempt was refused or never sent (or it was a read).
    NotApplied,
    /// The write was applied (for example, only its write concern failed).
    Applied,
    /// Part of a multi-statement write (a bulk write, `insert_many`, a later batch of either) is
    /// known to be applied and the rest known not to be: the server reported which statements
    /// failed, or the failure came before the remaining statements were sent. The error's
    /// partial result says which.
    PartlyApplied,
    /// The write may or may not have been applied: an attempt reached the server and its fate
    /// is unknown.
    Ambiguous,
}

/// A failed attempt as the orchestrator sees it.
#[derive(Clone, Copy, Debug)]
pub struct Observed<'a> {
    /// What the executor observed.
    pub facts: &'a FailureFacts,
    /// The server that produced the error, if one was selected.
    pub server: Option<&'a ServerAddress>,
    /// Whether the topology is sharded (a retry then avoids the failed mongos).
    pub sharded: bool,
}

/// Where the operation stands in time when an attempt fails.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// The current instant.
    pub now: Instant,
    /// The time since the operation started.
    pub elapsed: Duration,
    /// The time left before the operation's deadline; `None` without one.
    pub remaining: Option<Duration>,
}

/// The orchestrator's state for one operation.
#[derive(Debug)]
pub struct RetryState {
    profile: OperationProfile,
    history: Vec<AttemptRecord>,
    overload_seen: bool,
    deprioritized: Vec<ServerAddress>,
}

impl RetryState {
    /// A new operation.
    pub fn new(profile: OperationProfile) -> Self {
        RetryState {
            profile,
            history: Vec::new(),
            overload_seen: false,
            deprioritized: Vec::new(),
        }
    }

    /// The operation's profile.
    pub fn profile(&self) -> &OperationProfile {
        &self.profile
    }

    /// Changes the kind once the executor knows it: a write is only retryable once a server
    /// that supports sessions was selected and a txnNumber attached.
    pub fn set_kind(&mut self, kind: OperationKind) {
        self.profile.kind = kind;
    }

    /// Servers to deprioritize in the next selection.
    pub fn deprioritized(&self) -> &[ServerAddress] {
        &self.deprioritized
    }

    /// The failed attempts so far, oldest first.
    pub fn history(&self) -> &[AttemptRecord] {
        &self.history
    }

    /// Whether a retry rule applies to `facts` (ignoring how many retries were made), and how
    /// many retries the rules allow in all.
    fn retry_rule(&self, facts: &FailureFacts) -> (bool, u32) {
        let kind = self.profile.kind;
        let overload_seen = self.overload_seen || facts.is_overload();
        let flags_permit = match kind {
            OperationKind::RetryableRead | OperationKind::GetMore => self.profile.retry_reads,
            OperationKind::RetryableWrite | OperationKind::NonRetryableWrite => {
                self.profile.retry_writes
            }
            OperationKind::RunCommand => self.profile.retry_reads && self.profile.retry_writes,
        };
        let by_kind = match kind {
            OperationKind::RetryableRead => {
                self.profile.retry_reads && facts.is_retryable_read_error()
            }
            OperationKind::RetryableWrite => facts.is_retryable_write_error(),
            _ => false,
        };
        let retryable = by_kind || (facts.is_retryable_overload() && flags_permit);
        let allowed_retries = if overload_seen {
            self.profile.max_adaptive_retries
        } else if self.profile.has_timeout {
            u32::MAX
        } else {
            1
        };
        (retryable, allowed_retries)
    }

    /// What the specifications and the safety rules allow for `facts` now.
    pub fn allowance(&self, facts: &FailureFacts, sharded: bool, jitter: f64) -> Allowance {
        let kind = self.profile.kind;
        let (retryable, allowed_retries) = self.retry_rule(facts);
        let retries_so_far = self.retries_so_far();
        let spec_retry = retryable && retries_so_far < allowed_retries;

        let deduplicated = kind == OperationKind::RetryableWrite;
        let execution = facts.execution(deduplicated);
        let transient = facts.is_retryable_read_error()
            || facts.is_retryable_write_error()
            || facts.is_retryable_overload()
            || facts.labels.has(Label::RetryableError);
        let (spec_retry, safe_retry) = if kind == OperationKind::GetMore {
            // A getMore that may have reached the server may have advanced the cursor: a resend
            // would return the batch after the lost one, silently skipping documents. Only a
            // getMore that certainly did not run may go again, whatever rule or policy asks.
            // A retryable overload error (`SystemOverloadedError` + `RetryableError`) is the
            // server's word that it shed the command unprocessed: the client-backpressure
            // specification retries getMore on exactly that.
            let not_run = matches!(
                execution,
                Execution::NotSent | Execution::RejectedBeforeExecution
            ) || facts.is_retryable_overload();
            (spec_retry && not_run, (spec_retry || transient) && not_run)
        } else {
            let idempotent = self.profile.idempotent || !kind.is_write_like();
            let safe = spec_retry || (transient && execution.resend_is_safe(idempotent));
            (spec_retry, safe)
        };

        let min_delay = if facts.is_overload() {
            overload_backoff(retries_so_far + 1, facts.base_backoff, jitter)
        } else {
            Duration::ZERO
        };
        let standard_retry = matches!(
            kind,
            OperationKind::RetryableRead | OperationKind::RetryableWrite
        );
        let avoid_failed_server = (sharded && standard_retry)
            || (facts.is_overload() && self.profile.overload_retargeting);
        Allowance {
            spec_retry,
            safe_retry,
            min_delay,
            avoid_failed_server,
        }
    }

    /// Records a failed attempt and decides whether to retry. The decision is final: it
    /// already accounts for the overload cap, safety, the budget and the deadline.
    pub fn on_failure(
        &mut self,
        failure: Observed<'_>,
        timing: Timing,
        policy: &dyn RetryPolicy,
        budget: Option<&mut RetryBudget>,
        rng: &mut dyn RngCore,
    ) -> RetryDecision {
        let Observed {
            facts,
            server,
            sharded,
        } = failure;
        let jitter = rand::Rng::random::<f64>(rng);
        let allowance = self.allowance(facts, sharded, jitter);
        self.overload_seen |= facts.is_overload();
        let deduplicated = self.profile.kind == OperationKind::RetryableWrite;
        let execution = facts.execution(deduplicated);
        let retries_so_far = self.retries_so_far();
        self.history.push(AttemptRecord {
            attempt: retries_so_far,
            server: server.cloned(),
            reason: facts.reason(),
            execution,
            no_write_attempted: facts.no_write_attempted(),
            code: match facts.kind {
                super::classify::FailureKind::Command { code }
                | super::classify::FailureKind::WriteConcern { code } => Some(code),
                _ => None,
            },
            delay: None,
            stop: None,
        });

        let proposed = {
            let context = AttemptContext {
                operation: &self.profile.name,
                idempotent: self.profile.idempotent,
                reason: facts.reason(),
                execution,
                facts,
                retries_so_far,
                now: timing.now,
                elapsed: timing.elapsed,
                remaining: timing.remaining,
                allowance,
                history: &self.history,
            };
            policy.decide(&context, rng)
        };
        let mut decision = self.enforce(proposed, facts, &allowance, policy, budget, timing);
        if decision == RetryDecision::Stop(StopReason::NotRetryable) {
            // A retry rule applies, but its retries are used up: say so.
            let (retryable, allowed_retries) = self.retry_rule(facts);
            if retryable && retries_so_far >= allowed_retries {
                decision = RetryDecision::Stop(StopReason::AttemptsExhausted);
            }
        }
        if let Some(last) = self.history.last_mut() {
            match decision {
                RetryDecision::Retry { after, .. } => last.delay = Some(after),
                RetryDecision::Stop(why) => last.stop = Some(why),
            }
        }
        if let (RetryDecision::Retry { target, .. }, Some(server)) = (decision, server) {
            if target == RetryTarget::AvoidFailedServer && !self.deprioritized.contains(server) {
                self.deprioritized.push(server.clone());
            }
        }
        decision
    }

    fn enforce(
        &self,
        proposed: RetryDecision,
        facts: &FailureFacts,
        allowance: &Allowance,
        policy: &dyn RetryPolicy,
        budget: Option<&mut RetryBudget>,
        timing: Timing,
    ) -> RetryDecision {
        let Timing { now, remaining, .. } = timing;
        let execution = facts.execution(self.profile.kind == OperationKind::RetryableWrite);
        let RetryDecision::Retry { after, target } = proposed else {
            return proposed;
        };
        if !allowance.safe_retry {
            return RetryDecision::Stop(StopReason::Unsafe);
        }
        // The backpressure specification caps every retry once an overload was seen.
        let retries_so_far = self.retries_so_far().saturating_sub(1);
        if self.overload_seen && retries_so_far >= self.profile.max_adaptive_retries {
            return RetryDecision::Stop(StopReason::AttemptsExhausted);
        }
        // A policy may delay, never hurry past the required backoff, nor drop deprioritization.
        let after = after.max(allowance.min_delay);
        let target = if allowance.avoid_failed_server {
            RetryTarget::AvoidFailedServer
        } else {
            target
        };
        if let Some(remaining) = remaining
            && after >= remaining
        {
            return RetryDecision::Stop(StopReason::DeadlineWouldPass);
        }
        let beyond_spec = !allowance.spec_retry;
        let charged = execution != Execution::NotSent
            && (facts.is_overload() || (beyond_spec && policy.uses_budget()));
        if charged
            && let Some(budget) = budget
            && !budget.try_retry(now)
        {
            return RetryDecision::Stop(StopReason::BudgetExhausted);
        }
        RetryDecision::Retry { after, target }
    }

    /// Index into [`RetryState::history`] of the error to report when the operation fails,
    /// by retryable-writes' rule and nothing else: the most recent attempt that does not
    /// indicate "no write attempted" (see [`FailureFacts::no_write_attempted`]), or, if every
    /// attempt does, the first one. Reads follow the same rule, so a server's error is reported
    /// over a later failure to select or check out.
    pub fn error_to_report(&self) -> Option<usize> {
        let attempted = self.history.iter().rposition(|a| !a.no_write_attempted);
        attempted.or(if self.history.is_empty() {
            None
        } else {
            Some(0)
        })
    }

    /// What the failed operation did, as far as can be known.
    pub fn outcome(&self) -> Outcome {
        if !self.profile.kind.is_write_like() {
            return Outcome::NotApplied;
        }
        if self
            .history
            .iter()
            .any(|a| a.execution == Execution::Executed)
        {
            Outcome::Applied
        } else if self.history.iter().any(|a| {
            matches!(
                a.execution,
                Execution::MayHaveExecuted | Execution::Deduplicated
            )
        }) {
            Outcome::Ambiguous
        } else {
            Outcome::NotApplied
        }
    }

    fn retries_so_far(&self) -> u32 {
        u32::try_from(self.history.len()).unwrap_or(u32::MAX)
    }
}
