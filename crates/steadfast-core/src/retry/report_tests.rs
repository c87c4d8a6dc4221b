//! The error a failed operation reports (retryable-writes' `NoWritesPerformed` rule), driven
//! through the sequences of retryable-writes prose test 6.

use std::time::Duration;

use super::tests::Run;
use super::*;

const OVERLOAD: [&str; 2] = [labels::RETRYABLE_ERROR, labels::SYSTEM_OVERLOADED_ERROR];
const OVERLOAD_NO_WRITES: [&str; 3] = [
    labels::RETRYABLE_ERROR,
    labels::SYSTEM_OVERLOADED_ERROR,
    labels::NO_WRITES_PERFORMED,
];

fn command_error(code: i32, labels: &[&str]) -> FailureFacts {
    FailureFacts {
        kind: FailureKind::Command { code },
        sent: Sent::Yes,
        labels: labels.iter().map(|s| s.to_string()).collect(),
        base_backoff: None,
        max_wire_version: 25,
    }
}

/// Runs an insert whose first attempt fails with `first` and every later one with `then`,
/// retrying as the specifications allow. Returns the state and the delays chosen before each
/// retry.
fn insert_failing(first: &FailureFacts, then: &FailureFacts) -> (RetryState, Vec<Duration>) {
    let mut run = Run::new(OperationKind::RetryableWrite);
    let mut delays = Vec::new();
    let mut facts = first;
    // Far more attempts than any rule allows: the loop ends on the state's own Stop.
    for _ in 0..10 {
        match run.fail(facts, &SpecPolicy) {
            RetryDecision::Retry { after, .. } => delays.push(after),
            RetryDecision::Stop(_) => return (run.state, delays),
        }
        facts = then;
    }
    panic!("the retry rules never stopped");
}

fn reported_code(state: &RetryState) -> Option<i32> {
    let index = state.error_to_report()?;
    state.history().get(index)?.code
}

#[test]
fn prose_6_case_1_only_errors_without_no_writes_performed_report_the_latest() {
    let (state, _) = insert_failing(
        &command_error(91, &OVERLOAD),
        &command_error(10107, &OVERLOAD),
    );
    assert_eq!(state.history().len(), 3);
    assert_eq!(reported_code(&state), Some(10107));
    assert_eq!(state.error_to_report(), Some(2), "the most recent error");
}

#[test]
fn prose_6_case_2_only_errors_with_no_writes_performed_report_the_first() {
    let (state, _) = insert_failing(
        &command_error(91, &OVERLOAD_NO_WRITES),
        &command_error(10107, &OVERLOAD_NO_WRITES),
    );
    assert_eq!(state.history().len(), 3);
    assert_eq!(state.error_to_report(), Some(0));
    assert_eq!(reported_code(&state), Some(91));
    assert_eq!(state.outcome(), Outcome::NotApplied, "the server said so");
}

#[test]
fn prose_6_case_3_a_labelled_error_never_replaces_an_attempted_one() {
    let (state, _) = insert_failing(
        &command_error(91, &OVERLOAD),
        &command_error(91, &OVERLOAD_NO_WRITES),
    );
    assert_eq!(state.history().len(), 3);
    assert_eq!(
        state.error_to_report(),
        Some(0),
        "the only error without NoWritesPerformed"
    );
    assert!(!state.history()[0].no_write_attempted);
    assert!(state.history()[2].no_write_attempted);
}

#[test]
fn prose_6_case_4_an_overload_error_sets_the_retry_limit_for_every_later_error() {
    let (state, _) = insert_failing(
        &command_error(91, &OVERLOAD),
        &command_error(
            91,
            &[labels::RETRYABLE_ERROR, labels::RETRYABLE_WRITE_ERROR],
        ),
    );
    // MAX_RETRIES (maxAdaptiveRetries, 2) + 1 attempts, not the single retry of retryable writes.
    assert_eq!(state.history().len(), 3);
    assert_eq!(
        state.history().last().and_then(|r| r.stop),
        Some(StopReason::AttemptsExhausted)
    );
}

#[test]
fn prose_6_case_5_only_the_overload_error_is_backed_off() {
    let (_, delays) = insert_failing(
        &command_error(91, &OVERLOAD),
        &command_error(
            91,
            &[labels::RETRYABLE_ERROR, labels::RETRYABLE_WRITE_ERROR],
        ),
    );
    assert_eq!(delays.len(), 2);
    assert!(
        delays[0] > Duration::ZERO,
        "backoff after the overload error"
    );
    assert_eq!(
        delays[1],
        Duration::ZERO,
        "none after a plain retryable error"
    );
}

#[test]
fn an_unlabelled_refusal_code_still_counts_as_an_attempt_when_reporting() {
    // A client-side failure first, then NotWritablePrimary without the label: the server's
    // error is the one that indicates an attempt, whatever its code suggests.
    let unsent = FailureFacts {
        kind: FailureKind::PoolCleared,
        sent: Sent::No,
        labels: [labels::RETRYABLE_WRITE_ERROR].into_iter().collect(),
        base_backoff: None,
        max_wire_version: 25,
    };
    let (state, _) = insert_failing(
        &unsent,
        &command_error(10107, &[labels::RETRYABLE_WRITE_ERROR]),
    );
    assert_eq!(state.history().len(), 2);
    assert_eq!(reported_code(&state), Some(10107));
    // Which error is reported is not what the write did: the refusal still proves nothing ran.
    assert_eq!(state.outcome(), Outcome::NotApplied);
}
