use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand::rngs::StdRng;

use super::backoff::{NOT_SENT_LADDER, exponential_backoff, ladder_step, overload_backoff};
use super::*;
use crate::address::ServerAddress;

/// An `insert` profile of `kind` with the specifications' defaults (shared by the retry tests).
pub(super) fn profile(kind: OperationKind) -> OperationProfile {
    OperationProfile {
        name: "insert".into(),
        kind,
        idempotent: false,
        retry_reads: true,
        retry_writes: true,
        max_adaptive_retries: 2,
        overload_retargeting: false,
        has_timeout: false,
    }
}

fn facts(kind: FailureKind, sent: Sent, labels: &[&str]) -> FailureFacts {
    FailureFacts {
        kind,
        sent,
        labels: labels.iter().map(|s| s.to_string()).collect(),
        base_backoff: None,
        max_wire_version: 25,
    }
}

fn network() -> FailureFacts {
    facts(FailureKind::Network, Sent::Yes, &[])
}

fn overload() -> FailureFacts {
    facts(
        FailureKind::Command { code: 462 },
        Sent::Yes,
        &[labels::SYSTEM_OVERLOADED_ERROR, labels::RETRYABLE_ERROR],
    )
}

/// One operation's retry state driven failure by failure (shared by the retry tests).
pub(super) struct Run {
    pub(super) state: RetryState,
    rng: StdRng,
    now: Instant,
}

impl Run {
    pub(super) fn new(kind: OperationKind) -> Self {
        Run {
            state: RetryState::new(profile(kind)),
            rng: StdRng::seed_from_u64(42),
            now: Instant::now(),
        }
    }

    pub(super) fn fail(&mut self, f: &FailureFacts, policy: &dyn RetryPolicy) -> RetryDecision {
        self.fail_with(f, policy, None, None)
    }

    fn fail_with(
        &mut self,
        f: &FailureFacts,
        policy: &dyn RetryPolicy,
        remaining: Option<Duration>,
        budget: Option<&mut RetryBudget>,
    ) -> RetryDecision {
        let server = ServerAddress::tcp("a", 1);
        self.state.on_failure(
            Observed {
                facts: f,
                server: Some(&server),
                sharded: false,
            },
            Timing {
                now: self.now,
                elapsed: Duration::ZERO,
                remaining,
            },
            policy,
            budget,
            &mut self.rng,
        )
    }
}

#[test]
fn retryable_write_retried_once_on_network_error() {
    let mut run = Run::new(OperationKind::RetryableWrite);
    assert!(
        matches!(run.fail(&network(), &SpecPolicy), RetryDecision::Retry { after, .. } if after.is_zero())
    );
    // Still a retryable error, but the one retry is spent.
    assert_eq!(
        run.fail(&network(), &SpecPolicy),
        RetryDecision::Stop(StopReason::AttemptsExhausted)
    );
    assert_eq!(run.state.history().len(), 2);
    assert_eq!(run.state.outcome(), Outcome::Ambiguous);
}

#[test]
fn exhausted_overload_retries_are_reported_as_such() {
    let mut run = Run::new(OperationKind::NonRetryableWrite);
    for _ in 0..2 {
        assert!(matches!(
            run.fail(&overload(), &SpecPolicy),
            RetryDecision::Retry { .. }
        ));
    }
    assert_eq!(
        run.fail(&overload(), &SpecPolicy),
        RetryDecision::Stop(StopReason::AttemptsExhausted)
    );
    assert_eq!(
        run.state.history().last().and_then(|r| r.stop),
        Some(StopReason::AttemptsExhausted)
    );
}

#[test]
fn non_retryable_write_is_never_resent_after_it_may_have_executed() {
    let mut run = Run::new(OperationKind::NonRetryableWrite);
    assert_eq!(
        run.fail(&network(), &SpecPolicy),
        RetryDecision::Stop(StopReason::NotRetryable)
    );
    // BestEffort cannot widen it either: the resend could apply the write twice.
    let mut run = Run::new(OperationKind::NonRetryableWrite);
    assert_eq!(
        run.fail(&network(), &BestEffort::default()),
        RetryDecision::Stop(StopReason::Unsafe)
    );
}

#[test]
fn best_effort_retries_unsent_requests_on_the_ladder() {
    let mut run = Run::new(OperationKind::NonRetryableWrite);
    let unsent = facts(FailureKind::ConnectionEstablishment, Sent::No, &[]);
    for (retry, step) in NOT_SENT_LADDER.iter().take(3).enumerate() {
        let RetryDecision::Retry { after, target } = run.fail(&unsent, &BestEffort::default())
        else {
            panic!("an unsent request is always safe to retry");
        };
        assert_eq!(after, *step);
        // The first retry may return to the same server; later ones prefer another.
        let expected = if retry == 0 {
            RetryTarget::AnyServer
        } else {
            RetryTarget::AvoidFailedServer
        };
        assert_eq!(target, expected);
    }
    assert_eq!(run.state.outcome(), Outcome::NotApplied);
}

#[test]
fn retryable_read_codes_and_spec_once_limit() {
    let mut run = Run::new(OperationKind::RetryableRead);
    let not_primary = facts(FailureKind::Command { code: 10107 }, Sent::Yes, &[]);
    assert!(matches!(
        run.fail(&not_primary, &SpecPolicy),
        RetryDecision::Retry { .. }
    ));
    assert!(matches!(
        run.fail(&not_primary, &SpecPolicy),
        RetryDecision::Stop(_)
    ));
    assert_eq!(
        run.state.outcome(),
        Outcome::NotApplied,
        "reads apply nothing"
    );

    let mut run = Run::new(OperationKind::RetryableRead);
    let dup = facts(FailureKind::Command { code: 11000 }, Sent::Yes, &[]);
    assert_eq!(
        run.fail(&dup, &SpecPolicy),
        RetryDecision::Stop(StopReason::NotRetryable)
    );
}

/// A policy that retries whatever it is shown: proves the orchestrator, not the policy, keeps
/// a getMore that may have run from going again.
#[derive(Debug)]
struct AlwaysRetry;

impl RetryPolicy for AlwaysRetry {
    fn decide(&self, _context: &AttemptContext<'_>, _rng: &mut dyn rand::RngCore) -> RetryDecision {
        RetryDecision::Retry {
            after: Duration::ZERO,
            target: RetryTarget::AnyServer,
        }
    }
}

#[test]
fn get_more_that_may_have_run_is_never_retried_by_any_policy() {
    let mut get_more = profile(OperationKind::GetMore);
    // The driver may call a getMore idempotent; the rule must not depend on that.
    get_more.idempotent = true;
    let timeout = facts(FailureKind::NetworkTimeout, Sent::Yes, &[]);
    let best_effort = BestEffort::default();
    let policies: [&dyn RetryPolicy; 3] = [&SpecPolicy, &best_effort, &AlwaysRetry];
    for failure in [network(), timeout] {
        for policy in policies {
            let mut run = Run::new(OperationKind::GetMore);
            run.state = RetryState::new(get_more.clone());
            let decision = run.fail(&failure, policy);
            assert!(
                matches!(decision, RetryDecision::Stop(_)),
                "{policy:?} after {failure:?}: {decision:?}"
            );
        }
    }
    // A retryable overload error says the server shed the getMore unprocessed, whatever its
    // code: the client-backpressure specification retries it.
    let shed = facts(
        FailureKind::Command { code: 2 },
        Sent::Yes,
        &[labels::SYSTEM_OVERLOADED_ERROR, labels::RETRYABLE_ERROR],
    );
    let mut run = Run::new(OperationKind::GetMore);
    run.state = RetryState::new(profile(OperationKind::GetMore));
    assert!(matches!(
        run.fail(&shed, &SpecPolicy),
        RetryDecision::Retry { .. }
    ));
    // A getMore that never left the driver may still go again.
    let mut run = Run::new(OperationKind::GetMore);
    run.state = RetryState::new(get_more);
    let unsent = facts(FailureKind::ConnectionEstablishment, Sent::No, &[]);
    assert!(matches!(
        run.fail(&unsent, &best_effort),
        RetryDecision::Retry { .. }
    ));
}

#[test]
fn get_more_and_run_command_only_retry_overload() {
    let mut run = Run::new(OperationKind::GetMore);
    assert!(matches!(
        run.fail(&network(), &SpecPolicy),
        RetryDecision::Stop(_)
    ));
    let mut run = Run::new(OperationKind::GetMore);
    assert!(matches!(
        run.fail(&overload(), &SpecPolicy),
        RetryDecision::Retry { .. }
    ));
    let mut run = Run::new(OperationKind::RunCommand);
    assert!(matches!(
        run.fail(&overload(), &SpecPolicy),
        RetryDecision::Retry { .. }
    ));
    // runCommand needs both retryReads and retryWrites.
    let mut p = profile(OperationKind::RunCommand);
    p.retry_reads = false;
    let mut state = RetryState::new(p);
    let mut rng = StdRng::seed_from_u64(1);
    let d = state.on_failure(
        Observed {
            facts: &overload(),
            server: None,
            sharded: false,
        },
        Timing {
            now: Instant::now(),
            elapsed: Duration::ZERO,
            remaining: None,
        },
        &SpecPolicy,
        None,
        &mut rng,
    );
    assert!(matches!(d, RetryDecision::Stop(_)));
}

#[test]
fn overload_retries_stop_at_max_adaptive_retries_even_under_timeout() {
    let mut p = profile(OperationKind::RetryableWrite);
    p.has_timeout = true;
    let mut state = RetryState::new(p);
    let mut rng = StdRng::seed_from_u64(9);
    let now = Instant::now();
    let mut decisions = Vec::new();
    for _ in 0..4 {
        decisions.push(state.on_failure(
            Observed {
                facts: &overload(),
                server: None,
                sharded: false,
            },
            Timing {
                now,
                elapsed: Duration::ZERO,
                remaining: Some(Duration::from_secs(60)),
            },
            &SpecPolicy,
            None,
            &mut rng,
        ));
    }
    let retries = decisions
        .iter()
        .filter(|d| matches!(d, RetryDecision::Retry { .. }))
        .count();
    assert_eq!(retries, 2);
    // BestEffort cannot exceed the cap either.
    let mut state = RetryState::new(profile(OperationKind::RetryableWrite));
    let mut retries = 0;
    for _ in 0..6 {
        if let RetryDecision::Retry { .. } = state.on_failure(
            Observed {
                facts: &overload(),
                server: None,
                sharded: false,
            },
            Timing {
                now,
                elapsed: Duration::ZERO,
                remaining: None,
            },
            &BestEffort::default(),
            None,
            &mut rng,
        ) {
            retries += 1;
        }
    }
    assert_eq!(retries, 2);
}

#[test]
fn overload_backoff_follows_the_formula() {
    assert_eq!(overload_backoff(1, None, 1.0), Duration::from_millis(200));
    assert_eq!(overload_backoff(2, None, 0.5), Duration::from_millis(200));
    assert_eq!(
        overload_backoff(1, Some(Duration::from_millis(50)), 1.0),
        Duration::from_millis(100)
    );
    assert_eq!(
        overload_backoff(1, Some(Duration::ZERO), 1.0),
        Duration::from_millis(200),
        "non-positive base ignored"
    );
    assert_eq!(
        overload_backoff(40, None, 1.0),
        Duration::from_secs(10),
        "capped, saturating"
    );
    assert_eq!(
        overload_backoff(3, Some(Duration::from_secs(u64::MAX / 2)), 1.0),
        Duration::from_secs(10)
    );
    assert_eq!(overload_backoff(1, None, 0.0), Duration::ZERO);
}

#[test]
fn overload_retry_waits_the_required_backoff_and_retargets_when_enabled() {
    let mut p = profile(OperationKind::RetryableWrite);
    p.overload_retargeting = true;
    let mut state = RetryState::new(p);
    let mut rng = StdRng::seed_from_u64(3);
    let mut f = overload();
    f.base_backoff = Some(Duration::from_millis(1000));
    let d = state.on_failure(
        Observed {
            facts: &f,
            server: Some(&ServerAddress::tcp("a", 1)),
            sharded: false,
        },
        Timing {
            now: Instant::now(),
            elapsed: Duration::ZERO,
            remaining: None,
        },
        &SpecPolicy,
        None,
        &mut rng,
    );
    let RetryDecision::Retry { after, target } = d else {
        panic!("{d:?}")
    };
    assert!(after <= Duration::from_millis(2000));
    assert_eq!(target, RetryTarget::AvoidFailedServer);
    assert_eq!(state.deprioritized(), &[ServerAddress::tcp("a", 1)]);
}

#[test]
fn delay_beyond_deadline_stops_at_once() {
    let mut run = Run::new(OperationKind::RetryableWrite);
    let mut f = overload();
    f.base_backoff = Some(Duration::from_secs(5));
    // Find a seed-independent case: with 1 ms left, any non-zero backoff is too long.
    let d = run.fail_with(&f, &SpecPolicy, Some(Duration::from_millis(1)), None);
    assert!(matches!(
        d,
        RetryDecision::Stop(StopReason::DeadlineWouldPass) | RetryDecision::Retry { .. }
    ));
    if let RetryDecision::Retry { after, .. } = d {
        assert!(after < Duration::from_millis(1));
    }
    let mut run = Run::new(OperationKind::RetryableWrite);
    assert_eq!(
        run.fail_with(
            &network(),
            &BestEffort::default(),
            Some(Duration::ZERO),
            None
        ),
        RetryDecision::Stop(StopReason::DeadlineWouldPass)
    );
}

#[test]
fn fail_fast_never_retries() {
    let mut run = Run::new(OperationKind::RetryableWrite);
    assert_eq!(
        run.fail(&network(), &FailFast),
        RetryDecision::Stop(StopReason::PolicyDeclined)
    );
}

#[test]
fn sharded_retries_deprioritize_the_failed_mongos() {
    let mut state = RetryState::new(profile(OperationKind::RetryableRead));
    let mut rng = StdRng::seed_from_u64(4);
    let d = state.on_failure(
        Observed {
            facts: &network(),
            server: Some(&ServerAddress::tcp("m1", 1)),
            sharded: true,
        },
        Timing {
            now: Instant::now(),
            elapsed: Duration::ZERO,
            remaining: None,
        },
        &SpecPolicy,
        None,
        &mut rng,
    );
    assert!(matches!(
        d,
        RetryDecision::Retry {
            target: RetryTarget::AvoidFailedServer,
            ..
        }
    ));
    assert_eq!(state.deprioritized().len(), 1);
}

#[test]
fn pre_4_4_servers_use_the_code_list_and_4_4_needs_the_label() {
    let mut old = facts(FailureKind::Command { code: 91 }, Sent::Yes, &[]);
    old.max_wire_version = 8;
    assert!(old.is_retryable_write_error());
    let new = facts(FailureKind::Command { code: 91 }, Sent::Yes, &[]);
    assert!(!new.is_retryable_write_error());
    let labelled = facts(
        FailureKind::Command { code: 91 },
        Sent::Yes,
        &[labels::RETRYABLE_WRITE_ERROR],
    );
    assert!(labelled.is_retryable_write_error());
}

#[test]
fn error_to_report_follows_no_writes_performed_rules() {
    let mut run = Run::new(OperationKind::RetryableWrite);
    let mut p = profile(OperationKind::RetryableWrite);
    p.has_timeout = true;
    run.state = RetryState::new(p);
    run.fail_with(&network(), &SpecPolicy, Some(Duration::from_secs(9)), None);
    let no_writes = facts(
        FailureKind::Command { code: 10107 },
        Sent::Yes,
        &[labels::RETRYABLE_WRITE_ERROR, labels::NO_WRITES_PERFORMED],
    );
    run.fail_with(&no_writes, &SpecPolicy, Some(Duration::from_secs(9)), None);
    assert_eq!(
        run.state.error_to_report(),
        Some(0),
        "the attempt that may have written wins"
    );

    let mut run = Run::new(OperationKind::RetryableWrite);
    let unsent = facts(FailureKind::PoolCleared, Sent::No, &[]);
    run.fail(&unsent, &SpecPolicy);
    run.fail(&no_writes, &SpecPolicy);
    assert_eq!(
        run.state.error_to_report(),
        Some(0),
        "none wrote: the first error"
    );
    assert_eq!(run.state.outcome(), Outcome::NotApplied);
}

#[test]
fn write_concern_error_means_applied() {
    let mut run = Run::new(OperationKind::RetryableWrite);
    let wce = facts(FailureKind::WriteConcern { code: 64 }, Sent::Yes, &[]);
    assert!(matches!(
        run.fail(&wce, &SpecPolicy),
        RetryDecision::Stop(_)
    ));
    assert_eq!(run.state.outcome(), Outcome::Applied);
}

#[test]
fn budget_stops_charged_retries_but_never_unsent_ones() {
    let config = RetryBudgetConfig {
        retry_ratio: 0.0,
        min_retries_per_second: 1,
        window: Duration::from_secs(1),
    };
    let mut budget = RetryBudget::new(config);
    let now = Instant::now();
    assert!(budget.try_retry(now));
    assert!(!budget.try_retry(now));
    // Unsent requests are not charged: BestEffort retries them even with the budget spent.
    let mut run = Run::new(OperationKind::NonRetryableWrite);
    let unsent = facts(FailureKind::ConnectionEstablishment, Sent::No, &[]);
    assert!(matches!(
        run.fail_with(&unsent, &BestEffort::default(), None, Some(&mut budget)),
        RetryDecision::Retry { .. }
    ));
    // An overload retry is charged.
    let mut run = Run::new(OperationKind::RetryableWrite);
    assert_eq!(
        run.fail_with(&overload(), &SpecPolicy, None, Some(&mut budget)),
        RetryDecision::Stop(StopReason::BudgetExhausted)
    );
    // The window slides.
    assert!(budget.try_retry(now + Duration::from_secs(2)));
}

#[test]
fn budget_grows_with_traffic() {
    let config = RetryBudgetConfig {
        retry_ratio: 0.5,
        min_retries_per_second: 0,
        window: Duration::from_secs(10),
    };
    let mut budget = RetryBudget::new(config);
    let now = Instant::now();
    for _ in 0..10 {
        budget.record_request(now);
    }
    let granted = (0..10).filter(|_| budget.try_retry(now)).count();
    assert_eq!(granted, 5);
}

#[test]
fn backoff_helpers_are_bounded() {
    assert_eq!(ladder_step(0), Duration::from_millis(1));
    assert_eq!(ladder_step(99), Duration::from_millis(1000));
    let floor = Duration::from_millis(1);
    let cap = Duration::from_millis(500);
    for retry in 0..40 {
        let d = exponential_backoff(retry, floor, cap, 0.999);
        assert!(d <= cap);
        assert!(exponential_backoff(retry, floor, cap, 0.0) >= d / 2);
    }
}

#[test]
fn execution_classification() {
    assert_eq!(
        facts(FailureKind::PoolCleared, Sent::No, &[]).execution(false),
        Execution::NotSent
    );
    assert_eq!(
        facts(FailureKind::Command { code: 10107 }, Sent::Yes, &[]).execution(false),
        Execution::RejectedBeforeExecution
    );
    assert_eq!(
        facts(FailureKind::Command { code: 11602 }, Sent::Yes, &[]).execution(false),
        Execution::MayHaveExecuted
    );
    assert_eq!(network().execution(true), Execution::Deduplicated);
    assert!(Execution::Deduplicated.resend_is_safe(false));
    assert!(!Execution::MayHaveExecuted.resend_is_safe(false));
    assert!(Execution::MayHaveExecuted.resend_is_safe(true));
}
