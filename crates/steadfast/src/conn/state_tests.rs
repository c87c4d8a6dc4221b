//! The connection state's transitions, and the questions asked of each state.

use super::ConnState;

/// Every state, each with its answers to (is broken, is reusable, owes a late reply, is
/// streaming).
fn every_state() -> [(ConnState, [bool; 4]); 7] {
    [
        (ConnState::new(), [false, true, false, false]),
        (
            ConnState::Writing { request_id: 1 },
            [true, false, false, false],
        ),
        (
            ConnState::AwaitingReply { to: 1 },
            [true, false, false, false],
        ),
        (
            ConnState::Streaming { from: 1 },
            [false, false, false, true],
        ),
        (
            ConnState::OwesLateReply { to: 1 },
            [true, false, true, false],
        ),
        (
            ConnState::DrainingLateReply { to: 1 },
            [true, false, false, false],
        ),
        (ConnState::Broken, [true, false, false, false]),
    ]
}

#[test]
fn each_state_answers_the_reuse_late_reply_and_streaming_questions() {
    for (state, expected) in every_state() {
        let answers = [
            state.is_broken(),
            state.is_reusable(),
            state.owes_late_reply(),
            state.is_streaming(),
        ];
        assert_eq!(answers, expected, "{state:?}");
    }
}

#[test]
fn a_request_and_its_reply_return_to_idle() {
    let mut state = ConnState::new();
    let id = state.start_writing();
    assert_eq!(state, ConnState::Writing { request_id: id });
    state.written(true);
    assert_eq!(state, ConnState::AwaitingReply { to: id });
    state.replied(id + 100, false);
    assert_eq!(state, ConnState::new());
}

#[test]
fn a_request_without_a_reply_returns_to_idle_once_written() {
    let mut state = ConnState::new();
    state.start_writing();
    state.written(false);
    assert_eq!(state, ConnState::new());
}

#[test]
fn the_reserved_id_is_the_next_requests_and_is_spent_by_it() {
    let mut state = ConnState::new();
    state.reserve_request_id();
    let reserved = state.reserve_request_id();
    assert_eq!(
        state,
        ConnState::Idle {
            reserved: Some(reserved)
        },
        "a second reservation replaces the first"
    );
    assert_eq!(state.start_writing(), reserved);
    state.write_refused();
    assert_eq!(
        state,
        ConnState::new(),
        "nothing was written; the id is spent"
    );
    assert_ne!(state.start_writing(), reserved);
}

#[test]
fn only_an_idle_connection_records_a_reservation() {
    for (mut state, _) in every_state().into_iter().skip(1) {
        let before = state;
        state.reserve_request_id();
        assert_eq!(state, before);
    }
}

#[test]
fn more_to_come_replies_stream_until_one_does_not() {
    let mut state = ConnState::new();
    let id = state.start_writing();
    state.written(true);
    state.replied(500, true);
    assert_eq!(state, ConnState::Streaming { from: 500 });
    assert_eq!(
        state.read_streamed(),
        500,
        "the next reply answers the last"
    );
    assert_eq!(state, ConnState::AwaitingReply { to: 500 });
    state.replied(501, true);
    assert_eq!(state.read_streamed(), 501);
    state.replied(502, false);
    assert_eq!(state, ConnState::new());
    assert_ne!(id, 500);
}

#[test]
fn a_late_reply_is_owed_then_drained_back_to_idle() {
    let mut state = ConnState::new();
    let id = state.start_writing();
    state.written(true);
    state.deadline_passed();
    assert_eq!(state, ConnState::OwesLateReply { to: id });
    assert_eq!(state.drain(), id);
    assert_eq!(state, ConnState::DrainingLateReply { to: id });
    state.replied(id + 100, false);
    assert_eq!(state, ConnState::new());
}

#[test]
fn a_late_reply_that_streams_more_breaks_the_connection() {
    let mut state = ConnState::OwesLateReply { to: 7 };
    state.drain();
    state.replied(8, true);
    assert_eq!(state, ConnState::Broken);
}

#[test]
fn a_deadline_cutting_a_write_short_breaks_the_connection() {
    let mut state = ConnState::new();
    state.start_writing();
    state.deadline_passed();
    assert_eq!(state, ConnState::Broken);
}

#[test]
fn any_state_closes_to_broken() {
    for (mut state, _) in every_state() {
        state.close();
        assert_eq!(state, ConnState::Broken);
    }
}

#[test]
fn a_dropped_exchange_leaves_the_connection_not_reusable() {
    // A future dropped midway makes no further transition: the state stays where it was.
    let mut writing = ConnState::new();
    writing.start_writing();
    let mut awaiting = writing;
    awaiting.written(true);
    let mut streamed = ConnState::Streaming { from: 3 };
    streamed.read_streamed();
    let mut draining = ConnState::OwesLateReply { to: 4 };
    draining.drain();
    for abandoned in [writing, awaiting, streamed, draining] {
        assert!(!abandoned.is_reusable(), "{abandoned:?}");
        assert!(abandoned.is_broken(), "{abandoned:?}");
        assert!(
            !abandoned.owes_late_reply(),
            "{abandoned:?}: no drain would read it"
        );
    }
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "cannot write a request while Streaming")]
fn writing_while_streaming_is_caught() {
    ConnState::Streaming { from: 1 }.start_writing();
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "a reply arrived while Idle")]
fn a_reply_without_a_request_is_caught() {
    ConnState::new().replied(1, false);
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "no late reply to drain while Broken")]
fn draining_a_broken_connection_is_caught() {
    ConnState::Broken.drain();
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "no exchange under way for a deadline to cut short while Idle")]
fn a_deadline_without_an_exchange_is_caught() {
    ConnState::new().deadline_passed();
}

#[cfg(not(debug_assertions))]
#[test]
fn an_illegal_transition_breaks_the_connection_in_release_builds() {
    let mut state = ConnState::Streaming { from: 1 };
    state.start_writing();
    assert_eq!(state, ConnState::Broken);
}
