use std::time::Duration;

use super::*;
use crate::labels::{ErrorLabels, Label};

fn labels(names: &[Label]) -> ErrorLabels {
    let mut set = ErrorLabels::new();
    for label in names {
        set.insert(*label);
    }
    set
}

#[test]
fn a_transaction_runs_none_starting_in_progress_committed() {
    let mut state = TransactionState::default();
    assert_eq!(state.start(), Ok(false));
    assert_eq!(state.begin_operation(), OperationRole::First);
    state.first_command_sent();
    assert_eq!(state.begin_operation(), OperationRole::Inside);
    assert_eq!(state.commit(), Ok(CommitAction::Send { rerun: false }));
    assert_eq!(state, TransactionState::Committed { empty: false });
    // Committing again re-runs the commit (with the retry's majority write concern).
    assert_eq!(state.commit(), Ok(CommitAction::Send { rerun: true }));
}

#[test]
fn an_empty_transaction_commits_and_aborts_without_a_command() {
    let mut state = TransactionState::default();
    state.start().unwrap();
    assert_eq!(state.commit(), Ok(CommitAction::Skip));
    assert_eq!(state.commit(), Ok(CommitAction::Skip));
    assert_eq!(state.start(), Ok(true), "a committed session unpins");
    assert_eq!(state.abort(), Ok(AbortAction::Skip));
    assert_eq!(state, TransactionState::Aborted);
}

#[test]
fn misuse_is_refused_and_leaves_the_state_alone() {
    let mut state = TransactionState::default();
    assert_eq!(state.commit(), Err(TransactionMisuse::NoTransactionStarted));
    assert_eq!(state.abort(), Err(TransactionMisuse::NoTransactionStarted));
    assert_eq!(state, TransactionState::None);

    state.start().unwrap();
    assert_eq!(state.start(), Err(TransactionMisuse::AlreadyInProgress));
    assert_eq!(state, TransactionState::Starting);
    state.first_command_sent();
    assert_eq!(state.start(), Err(TransactionMisuse::AlreadyInProgress));
    assert_eq!(state, TransactionState::InProgress);

    assert_eq!(state.abort(), Ok(AbortAction::Send));
    assert_eq!(state.abort(), Err(TransactionMisuse::AbortTwice));
    assert_eq!(state.commit(), Err(TransactionMisuse::CommitAfterAbort));
    assert_eq!(state, TransactionState::Aborted);

    state.start().unwrap();
    state.first_command_sent();
    state.commit().unwrap();
    assert_eq!(state.abort(), Err(TransactionMisuse::AbortAfterCommit));
    assert_eq!(state, TransactionState::Committed { empty: false });
}

#[test]
fn misuse_messages_are_the_specifications() {
    assert_eq!(
        TransactionMisuse::AlreadyInProgress.to_string(),
        "Transaction already in progress"
    );
    assert_eq!(
        TransactionMisuse::CommitAfterAbort.to_string(),
        "Cannot call commitTransaction after calling abortTransaction"
    );
}

#[test]
fn an_operation_after_a_finished_transaction_leaves_it_and_unpins() {
    for finish in [TransactionState::commit, |s: &mut TransactionState| {
        s.abort().map(|_| CommitAction::Skip)
    }] {
        let mut state = TransactionState::default();
        state.start().unwrap();
        state.first_command_sent();
        finish(&mut state).unwrap();
        assert_eq!(
            state.begin_operation(),
            OperationRole::Outside { unpin: true }
        );
        assert_eq!(state, TransactionState::None);
        assert_eq!(
            state.begin_operation(),
            OperationRole::Outside { unpin: false }
        );
    }
}

#[test]
fn only_sending_a_command_makes_the_transaction_in_progress() {
    let mut state = TransactionState::default();
    state.first_command_sent();
    assert_eq!(state, TransactionState::None);
    state.start().unwrap();
    state.first_command_sent();
    state.first_command_sent();
    assert_eq!(state, TransactionState::InProgress);
}

#[test]
fn statements_without_a_reply_are_transient_but_commits_are_unknown() {
    let none = ErrorLabels::new();
    let statement = transaction_labels(
        TransactionCommand::Statement,
        TransactionFailure::NoReply,
        &none,
        false,
    );
    assert_eq!(statement, labels(&[Label::TransientTransactionError]));
    let commit = transaction_labels(
        TransactionCommand::Commit,
        TransactionFailure::NoReply,
        &none,
        false,
    );
    assert_eq!(commit, labels(&[Label::UnknownTransactionCommitResult]));
    let server_error = transaction_labels(
        TransactionCommand::Statement,
        TransactionFailure::Command { code: 11000 },
        &none,
        false,
    );
    assert!(server_error.is_empty());
}

#[test]
fn a_commit_refused_after_an_attempt_that_may_have_run_is_unknown() {
    // Found by `steadfast torture --workload transfer --seed 44`: a commit answered with a
    // write concern error (so applied), then retried into overload refusals, was reported
    // without the label: the application saw "not committed" for a committed transaction.
    let overloaded = labels(&[Label::RetryableError, Label::SystemOverloadedError]);
    let refused = TransactionFailure::Command { code: 462 };
    let after_a_run = transaction_labels(TransactionCommand::Commit, refused, &overloaded, true);
    assert!(after_a_run.has(Label::UnknownTransactionCommitResult));
    let plain = ErrorLabels::new();
    let conflict = TransactionFailure::Command { code: 112 };
    assert!(
        transaction_labels(TransactionCommand::Commit, conflict, &plain, true)
            .has(Label::UnknownTransactionCommitResult)
    );
    assert!(
        !transaction_labels(TransactionCommand::Commit, conflict, &plain, false)
            .has(Label::UnknownTransactionCommitResult),
        "a first attempt refused outright is a plain failure"
    );
    // Shed as overloaded, the transaction is still open: committing again is safe.
    assert!(
        transaction_labels(TransactionCommand::Commit, refused, &overloaded, false)
            .has(Label::UnknownTransactionCommitResult)
    );
    // The server's word that the transaction is gone settles it, whatever came before
    // (transactions suite: a commit retried on another mongos answered NoSuchTransaction).
    let aborted = labels(&[Label::TransientTransactionError]);
    let gone = TransactionFailure::Command { code: 251 };
    assert!(
        !transaction_labels(TransactionCommand::Commit, gone, &aborted, true)
            .has(Label::UnknownTransactionCommitResult)
    );
    // A statement is never labelled by its commit's history.
    assert!(
        !transaction_labels(TransactionCommand::Statement, refused, &overloaded, true)
            .has(Label::UnknownTransactionCommitResult)
    );
}

#[test]
fn commit_outcome_is_unknown_for_retryable_maxtime_and_most_write_concern_errors() {
    let none = ErrorLabels::new();
    let retryable = labels(&[Label::RetryableWriteError]);
    let unknown = |failure, labels: &ErrorLabels| {
        transaction_labels(TransactionCommand::Commit, failure, labels, false)
            .has(Label::UnknownTransactionCommitResult)
    };
    assert!(unknown(
        TransactionFailure::Command { code: 10107 },
        &retryable
    ));
    assert!(!unknown(TransactionFailure::Command { code: 10107 }, &none));
    assert!(unknown(TransactionFailure::Command { code: 50 }, &none));
    assert!(unknown(
        TransactionFailure::WriteConcern { code: 64 },
        &none
    ));
    assert!(unknown(TransactionFailure::DeadlineExpired, &none));
    assert!(!unknown(
        TransactionFailure::WriteConcern { code: 100 },
        &none
    ));
    assert!(!unknown(
        TransactionFailure::WriteConcern { code: 79 },
        &none
    ));
    assert!(!unknown(TransactionFailure::Command { code: 251 }, &none));
}

#[test]
fn transient_errors_and_unknown_commits_unpin() {
    let transient = labels(&[Label::TransientTransactionError]);
    let unknown = labels(&[Label::UnknownTransactionCommitResult]);
    assert!(unpins_session(TransactionCommand::Statement, &transient));
    assert!(unpins_session(TransactionCommand::Commit, &unknown));
    assert!(!unpins_session(TransactionCommand::Statement, &unknown));
    assert!(!unpins_session(
        TransactionCommand::Commit,
        &ErrorLabels::new()
    ));
}

#[test]
fn a_retried_commit_waits_for_a_majority_and_keeps_its_own_wtimeout() {
    let retried = commit_retry_write_concern(None);
    assert_eq!(retried.w, Some(Acknowledgment::Majority));
    assert_eq!(retried.w_timeout, Some(COMMIT_RETRY_WTIMEOUT));
    let own = WriteConcern {
        w: Some(Acknowledgment::Nodes(2)),
        w_timeout: Some(Duration::from_millis(5)),
        journal: Some(true),
        ..WriteConcern::default()
    };
    let retried = commit_retry_write_concern(Some(&own));
    assert_eq!(retried.w, Some(Acknowledgment::Majority));
    assert_eq!(retried.w_timeout, Some(Duration::from_millis(5)));
    assert_eq!(retried.journal, Some(true));
}

#[test]
fn convenient_backoff_grows_by_half_and_caps_at_500ms() {
    assert_eq!(convenient_backoff(1, 1.0), Duration::from_secs_f64(0.0075));
    assert_eq!(convenient_backoff(2, 1.0), Duration::from_secs_f64(0.01125));
    assert_eq!(convenient_backoff(30, 1.0), Duration::from_millis(500));
    assert_eq!(convenient_backoff(30, 0.5), Duration::from_millis(250));
    assert_eq!(convenient_backoff(3, 0.0), Duration::ZERO);
    assert_eq!(convenient_backoff(u32::MAX, f64::NAN), Duration::ZERO);
    assert_eq!(
        convenient_backoff(u32::MAX, 1.0),
        Duration::from_millis(500)
    );
}

#[test]
fn the_convenient_api_backs_off_between_attempts_until_its_limit() {
    let mut retries = ConvenientRetries::new(Duration::from_millis(100));
    assert_eq!(
        retries.next_attempt(Duration::ZERO, 1.0),
        NextAttempt::After(Duration::ZERO)
    );
    assert_eq!(
        retries.next_attempt(Duration::from_millis(10), 1.0),
        NextAttempt::After(convenient_backoff(1, 1.0))
    );
    // 98 ms elapsed + 11.25 ms of backoff passes the 100 ms limit.
    assert_eq!(
        retries.next_attempt(Duration::from_millis(98), 1.0),
        NextAttempt::GiveUp
    );
    assert_eq!(
        retries.next_attempt(Duration::from_millis(98), 0.0),
        NextAttempt::After(Duration::ZERO)
    );
}

#[test]
fn the_convenient_api_retries_transient_callbacks_and_unknown_commits_only() {
    let retries = ConvenientRetries::new(CONVENIENT_RETRY_LIMIT);
    let transient = labels(&[Label::TransientTransactionError]);
    let unknown = labels(&[Label::UnknownTransactionCommitResult]);
    let second = Duration::from_secs(1);
    assert!(retries.run_again_after_callback(&transient, second));
    assert!(!retries.run_again_after_callback(&unknown, second));
    assert!(!retries.run_again_after_callback(&transient, CONVENIENT_RETRY_LIMIT));
    assert_eq!(
        retries.after_commit_failure(&unknown, false, second),
        AfterCommitFailure::CommitAgain
    );
    assert_eq!(
        retries.after_commit_failure(&unknown, true, second),
        AfterCommitFailure::Fail,
        "MaxTimeMSExpired is not retried"
    );
    assert_eq!(
        retries.after_commit_failure(&transient, false, second),
        AfterCommitFailure::RunAgain
    );
    assert_eq!(
        retries.after_commit_failure(&ErrorLabels::new(), false, second),
        AfterCommitFailure::Fail
    );
    assert_eq!(
        retries.after_commit_failure(&unknown, false, CONVENIENT_RETRY_LIMIT),
        AfterCommitFailure::TimedOut,
        "an unknown outcome past the limit is reported as a timeout"
    );
    assert_eq!(
        retries.after_commit_failure(&transient, false, CONVENIENT_RETRY_LIMIT),
        AfterCommitFailure::RunAgain,
        "the backoff before the next attempt is where the limit stops a transient error"
    );
    assert_eq!(
        retries.after_commit_failure(&transient, true, second),
        AfterCommitFailure::RunAgain,
        "MaxTimeMSExpired stops only the commit retries"
    );
    assert_eq!(
        retries.after_commit_failure(&unknown, true, CONVENIENT_RETRY_LIMIT),
        AfterCommitFailure::Fail
    );
}
