use bson::{RawBson, Timestamp, rawdoc};

use super::*;
use crate::labels::ErrorLabels;

fn token(n: i32) -> RawBson {
    RawBson::Document(rawdoc! { "_data": n })
}

fn time(t: u32) -> Timestamp {
    Timestamp {
        time: t,
        increment: 1,
    }
}

fn labelled(name: &str) -> ErrorLabels {
    let mut labels = ErrorLabels::new();
    labels.insert_name(name);
    labels
}

#[test]
fn the_label_decides_from_4_4_on() {
    let none = ErrorLabels::new();
    let label = labelled(RESUMABLE_LABEL);
    let server = |code, labels| ErrorSource::Server { code, labels };
    // A code of the old allowlist is not enough once the server labels errors itself.
    assert!(!is_resumable(server(Some(189), &none), 9));
    assert!(is_resumable(server(Some(280), &label), 9));
    assert!(is_resumable(server(None, &label), 17));
    // Before 4.4 the label means nothing and the allowlist decides.
    assert!(!is_resumable(server(Some(280), &label), 8));
    for code in RESUMABLE_CODES_BEFORE_LABELS {
        assert!(is_resumable(server(Some(code), &none), 8), "{code}");
    }
    // Interrupted, CappedPositionLost, CursorKilled, an unknown code: never before 4.4.
    for code in [11601, 136, 237, 280, 2] {
        assert!(!is_resumable(server(Some(code), &none), 8), "{code}");
    }
}

#[test]
fn cursor_not_found_and_connection_errors_always_resume_driver_errors_never() {
    let none = ErrorLabels::new();
    for wire in [6, 8, 9, 25] {
        assert!(is_resumable(
            ErrorSource::Server {
                code: Some(CURSOR_NOT_FOUND),
                labels: &none
            },
            wire
        ));
        assert!(is_resumable(ErrorSource::Connection, wire));
        assert!(!is_resumable(ErrorSource::Driver, wire));
    }
}

#[test]
fn the_non_resumable_label_alone_does_not_resume() {
    let labels = labelled("NonResumableChangeStreamError");
    let source = ErrorSource::Server {
        code: Some(280),
        labels: &labels,
    };
    assert!(!is_resumable(source, 25));
}

#[test]
fn start_after_is_cached_and_resent_until_an_event_is_returned() {
    let mut state = ResumeState::new(Some(token(1)), None, None);
    assert_eq!(state.token(), Some(&token(1)));
    assert_eq!(state.resume_start(), ResumeStart::StartAfter(token(1)));
    // An empty batch's post-batch token replaces it, still as startAfter.
    state.opened(true, Some(token(2)), Some(time(5)), 25);
    assert_eq!(state.resume_start(), ResumeStart::StartAfter(token(2)));
    state
        .returned(Some(token(3)), Position::InBatch, Some(token(4)))
        .expect("has an _id");
    assert_eq!(state.resume_start(), ResumeStart::ResumeAfter(token(3)));
}

#[test]
fn resume_after_is_cached() {
    let state = ResumeState::new(None, Some(token(7)), Some(time(3)));
    assert_eq!(state.token(), Some(&token(7)));
    assert_eq!(state.resume_start(), ResumeStart::ResumeAfter(token(7)));
}

#[test]
fn the_last_event_of_a_batch_caches_the_post_batch_token() {
    let mut state = ResumeState::new(None, None, None);
    state.opened(false, Some(token(9)), Some(time(1)), 25);
    // A non-empty batch's post-batch token is not cached on arrival.
    assert_eq!(state.token(), None);
    state
        .returned(Some(token(1)), Position::InBatch, Some(token(9)))
        .expect("has an _id");
    assert_eq!(state.token(), Some(&token(1)));
    state
        .returned(Some(token(2)), Position::LastInBatch, Some(token(9)))
        .expect("has an _id");
    assert_eq!(state.token(), Some(&token(9)));
    // Without a post-batch token the last event's _id is cached.
    state
        .returned(Some(token(3)), Position::LastInBatch, None)
        .expect("has an _id");
    assert_eq!(state.token(), Some(&token(3)));
}

#[test]
fn an_event_without_id_is_an_error_and_changes_nothing() {
    let mut state = ResumeState::new(None, Some(token(1)), None);
    let before = state.clone();
    assert_eq!(
        state.returned(None, Position::LastInBatch, Some(token(2))),
        Err(MissingResumeToken)
    );
    assert_eq!(state, before);
}

#[test]
fn the_operation_time_is_saved_only_when_nothing_else_can_start_the_resume() {
    let saved = |state: &ResumeState| state.resume_start();
    let mut plain = ResumeState::new(None, None, None);
    plain.opened(true, None, Some(time(4)), 25);
    assert_eq!(saved(&plain), ResumeStart::StartAtOperationTime(time(4)));

    // A non-empty first batch, a post-batch token, or a pre-4.0 server: not saved.
    let mut non_empty = ResumeState::new(None, None, None);
    non_empty.opened(false, None, Some(time(4)), 25);
    assert_eq!(saved(&non_empty), ResumeStart::Original);
    let mut with_token = ResumeState::new(None, None, None);
    with_token.opened(true, Some(token(5)), Some(time(4)), 25);
    assert_eq!(saved(&with_token), ResumeStart::ResumeAfter(token(5)));
    let mut old = ResumeState::new(None, None, None);
    old.opened(true, None, Some(time(4)), 6);
    assert_eq!(saved(&old), ResumeStart::Original);

    // A user-given startAtOperationTime is resent as it was, not replaced.
    let mut given = ResumeState::new(None, None, Some(time(2)));
    given.opened(true, None, Some(time(4)), 25);
    assert_eq!(saved(&given), ResumeStart::StartAtOperationTime(time(2)));
}
