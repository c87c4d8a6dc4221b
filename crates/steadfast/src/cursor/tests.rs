//! Unit tests of the cursor bookkeeping.

use std::collections::VecDeque;
use std::time::Duration;

use bson::{Bson, RawDocumentBuf, rawdoc};
use steadfast_core::ServerAddress;

use super::reply::CursorReply;
use super::state::{CursorSettings, CursorState};
use crate::namespace::Namespace;
use crate::operation::Operation;
use crate::operation::crud_tests::default_description;

fn reply(id: i64, docs: usize) -> CursorReply {
    CursorReply {
        id,
        ns: Namespace::new("shop", "orders"),
        first_batch: (0..docs)
            .map(|i| rawdoc! { "i": i as i32 })
            .collect::<VecDeque<RawDocumentBuf>>(),
        post_batch_resume_token: None,
        raw: None,
    }
}

fn address() -> ServerAddress {
    ServerAddress::tcp("127.0.0.1", 27017)
}

fn get_more_batch_size(state: &CursorState) -> Option<i64> {
    let mut op = state.get_more().expect("a getMore is due");
    let body = op
        .build(&default_description())
        .expect("builds")
        .body
        .to_document();
    body.get_i64("batchSize").ok()
}

#[test]
fn a_closed_cursor_is_exhausted_once_its_buffer_is_empty() {
    let mut state = CursorState::new(reply(0, 2), address(), CursorSettings::default());
    assert!(!state.is_exhausted());
    assert!(state.get_more().is_none());
    assert!(state.pop().is_some() && state.pop().is_some());
    assert!(state.pop().is_none());
    assert!(state.is_exhausted());
    assert!(state.kill_op().is_none());
}

#[test]
fn get_mores_use_the_batch_size_and_never_ask_past_the_limit() {
    let settings = CursorSettings {
        batch_size: Some(3),
        limit: Some(7),
        comment: Some(Bson::String("why".into())),
        ..CursorSettings::default()
    };
    let mut state = CursorState::new(reply(5, 3), address(), settings);
    assert_eq!(get_more_batch_size(&state), Some(3));
    state.absorb(reply(5, 3));
    assert_eq!(state.buffered(), 6);
    assert_eq!(
        get_more_batch_size(&state),
        Some(1),
        "only one left before the limit"
    );
    state.absorb(reply(5, 1));
    assert!(state.get_more().is_none(), "the limit is reached");
    assert!(state.kill_op().is_some(), "the server left the cursor open");
    while state.pop().is_some() {}
    assert!(state.is_exhausted());
    let kill = state.take_kill();
    assert!(kill.is_some());
    assert!(state.take_kill().is_none(), "killed once");
}

#[test]
fn without_a_batch_size_the_limit_bounds_the_get_more() {
    let settings = CursorSettings {
        limit: Some(10),
        ..CursorSettings::default()
    };
    let state = CursorState::new(reply(9, 4), address(), settings);
    assert_eq!(get_more_batch_size(&state), Some(6));
    let unlimited = CursorState::new(reply(9, 4), address(), CursorSettings::default());
    assert_eq!(get_more_batch_size(&unlimited), None);
}

#[test]
fn get_more_carries_the_comment_and_the_await_time_of_tailable_cursors() {
    let settings = CursorSettings {
        max_await_time: Some(Duration::from_millis(300)),
        comment: Some(Bson::String("c".into())),
        tailable: true,
        ..CursorSettings::default()
    };
    let state = CursorState::new(reply(9, 0), address(), settings.clone());
    assert!(
        !state.is_exhausted(),
        "an empty batch of an open cursor is not the end"
    );
    let mut op = state.get_more().expect("due");
    assert_eq!(op.target(), Some(&address()));
    let body = op
        .build(&default_description())
        .expect("builds")
        .body
        .to_document();
    assert_eq!(body.get_i64("maxTimeMS").ok(), Some(300));
    assert_eq!(body.get_str("comment").ok(), Some("c"));

    let not_tailable = CursorSettings {
        tailable: false,
        ..settings
    };
    let mut op = CursorState::new(reply(9, 0), address(), not_tailable)
        .get_more()
        .expect("due");
    let body = op
        .build(&default_description())
        .expect("builds")
        .body
        .to_document();
    assert!(
        body.get("maxTimeMS").is_none(),
        "maxTimeMS only on tailable-await getMores"
    );
}

#[test]
fn get_more_carries_run_cursor_commands_max_time_on_any_cursor() {
    let settings = CursorSettings {
        get_more_max_time: Some(Duration::from_millis(300)),
        ..CursorSettings::default()
    };
    let mut op = CursorState::new(reply(9, 0), address(), settings)
        .get_more()
        .expect("due");
    let body = op
        .build(&default_description())
        .expect("builds")
        .body
        .to_document();
    assert_eq!(body.get_i64("maxTimeMS").ok(), Some(300));
}

#[test]
fn a_get_more_reply_updates_the_id() {
    let mut state = CursorState::new(reply(9, 1), address(), CursorSettings::default());
    state.absorb(reply(0, 2));
    assert_eq!(state.id(), 0);
    assert_eq!(state.buffered(), 3);
    state.forget_server_cursor();
    assert!(state.take_kill().is_none());
}

/// `reply(id, docs)` carrying a whole server reply, as the operations keep it.
fn raw_reply(id: i64, docs: usize, batch: &str) -> CursorReply {
    let mut reply = reply(id, docs);
    let documents: Vec<Bson> = (0..docs)
        .map(|i| Bson::Document(bson::doc! { "i": i as i32 }))
        .collect();
    let whole =
        bson::doc! { "cursor": { "id": id, "ns": "shop.orders", batch: documents }, "ok": 1.0 };
    reply.raw = Some(RawDocumentBuf::try_from(&whole).expect("encodes"));
    reply
}

#[test]
fn a_raw_batch_state_buffers_one_whole_reply_per_batch_empty_ones_included() {
    let settings = CursorSettings {
        limit: Some(3),
        ..CursorSettings::default()
    };
    let mut state =
        CursorState::new_raw_batches(raw_reply(5, 0, "firstBatch"), address(), settings);
    assert_eq!(state.buffered(), 1);
    let first = state.pop().expect("the empty first batch");
    assert!(
        first
            .get_document("cursor")
            .unwrap()
            .get_array("firstBatch")
            .is_ok()
    );
    assert!(!state.is_exhausted());
    state.absorb(raw_reply(5, 2, "nextBatch"));
    state.absorb(raw_reply(5, 1, "nextBatch"));
    // Two batches buffered, not three documents; the limit still counts documents.
    assert_eq!(state.buffered(), 2);
    assert!(state.get_more().is_none());
    let second = state.pop().expect("the second batch");
    let batch = second
        .get_document("cursor")
        .unwrap()
        .get_array("nextBatch")
        .unwrap();
    assert_eq!(batch.into_iter().count(), 2);
    assert!(state.pop().is_some() && state.pop().is_none());
    assert!(state.is_exhausted());
}

#[test]
fn a_document_state_drops_the_whole_reply() {
    let mut state = CursorState::new(
        raw_reply(0, 2, "firstBatch"),
        address(),
        CursorSettings::default(),
    );
    let first = state.pop().expect("a document");
    assert_eq!(first, rawdoc! { "i": 0 });
    assert_eq!(state.buffered(), 1);
}
