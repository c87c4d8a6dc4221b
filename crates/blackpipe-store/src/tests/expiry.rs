//! Idle cursors and idle logical sessions expire, with the callers' clock as the only time.

use std::time::Duration;

use bson::{Binary, Bson, Document, doc, spec::BinarySubtype};

use super::{at, batch, cursor_id, error_code, insert, new_store};
use crate::{CommandContext, Store, StoreOptions};

/// mongod's CursorNotFound.
const CURSOR_NOT_FOUND: i32 = 43;

fn run_at(store: &Store, seconds: i64, command: Document) -> Document {
    store
        .execute("db", &command, &CommandContext::new(at(seconds)))
        .reply
}

/// Opens a find cursor at `seconds` over three documents, one per batch.
fn open_cursor_at(store: &Store, seconds: i64, no_timeout: bool) -> i64 {
    let reply = run_at(
        store,
        seconds,
        doc! { "find": "c", "batchSize": 1, "noCursorTimeout": no_timeout },
    );
    assert_eq!(batch(&reply).len(), 1, "{reply}");
    cursor_id(&reply)
}

fn get_more_at(store: &Store, seconds: i64, id: i64) -> Document {
    run_at(
        store,
        seconds,
        doc! { "getMore": id, "collection": "c", "batchSize": 1 },
    )
}

fn store_with_documents() -> Store {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![doc! { "_id": 1 }, doc! { "_id": 2 }, doc! { "_id": 3 }],
    );
    store
}

#[test]
fn a_cursor_idle_for_ten_minutes_is_closed_and_get_more_reports_cursor_not_found() {
    let store = store_with_documents();
    let id = open_cursor_at(&store, 0, false);
    // A getMore just before the timeout succeeds and restarts the idle period.
    let reply = get_more_at(&store, 599, id);
    assert_eq!(batch(&reply).len(), 1, "{reply}");
    assert_eq!(store.reap_idle_cursors(at(599 + 599)), 0);
    assert_eq!(store.reap_idle_cursors(at(599 + 600)), 1);
    assert_eq!(store.open_cursor_count(), 0);
    let reply = get_more_at(&store, 599 + 601, id);
    assert_eq!(error_code(&reply), CURSOR_NOT_FOUND);
}

#[test]
fn commands_reap_idle_cursors_without_an_explicit_call() {
    let store = store_with_documents();
    let id = open_cursor_at(&store, 0, false);
    let reply = get_more_at(&store, 600, id);
    assert_eq!(error_code(&reply), CURSOR_NOT_FOUND);
}

#[test]
fn a_no_cursor_timeout_cursor_is_never_reaped() {
    let store = store_with_documents();
    let id = open_cursor_at(&store, 0, true);
    assert_eq!(store.reap_idle_cursors(at(24 * 3600)), 0);
    let reply = get_more_at(&store, 24 * 3600, id);
    assert_eq!(batch(&reply).len(), 1, "{reply}");
}

#[test]
fn the_cursor_timeout_is_configurable() {
    let store = Store::new(StoreOptions::default().with_cursor_timeout(Duration::from_secs(5)));
    insert(&store, "c", vec![doc! { "_id": 1 }, doc! { "_id": 2 }]);
    let id = open_cursor_at(&store, 0, false);
    assert_eq!(store.reap_idle_cursors(at(4)), 0);
    assert_eq!(store.reap_idle_cursors(at(5)), 1);
    assert_eq!(error_code(&get_more_at(&store, 6, id)), CURSOR_NOT_FOUND);
}

fn retryable_insert(session: u8, txn_number: i64, id: i32) -> Document {
    doc! {
        "insert": "c",
        "documents": [{ "_id": id }],
        "lsid": { "id": Binary { subtype: BinarySubtype::Uuid, bytes: vec![session; 16] } },
        "txnNumber": Bson::Int64(txn_number),
    }
}

#[test]
fn a_session_idle_for_thirty_minutes_expires_with_its_retryable_history() {
    let store = new_store();
    let command = retryable_insert(1, 1, 1);
    let first = run_at(&store, 0, command.clone());
    assert_eq!(first.get_i32("n").ok(), Some(1));
    // A retry within the timeout replays and restarts the idle period.
    let retry = run_at(&store, 29 * 60, command.clone());
    assert!(retry.contains_key("retriedStmtIds"), "{retry}");
    assert_eq!(store.expire_idle_sessions(at(29 * 60 + 30 * 60 - 1)), 0);
    assert_eq!(store.session_count(), 1);
    assert_eq!(store.expire_idle_sessions(at(29 * 60 + 30 * 60)), 1);
    assert_eq!(store.session_count(), 0);
    // Like mongod after expiry, the forgotten write is executed again (here: duplicate key).
    let late = run_at(&store, 60 * 60 + 30 * 60, command);
    assert!(late.contains_key("writeErrors"), "{late}");
    assert_eq!(store.writes_applied("db.c"), 1);
}

#[test]
fn the_session_timeout_is_configurable_and_applied_by_commands() {
    let store = Store::new(StoreOptions::default().with_session_timeout(Duration::from_secs(60)));
    run_at(&store, 0, retryable_insert(1, 1, 1));
    run_at(&store, 0, retryable_insert(2, 1, 2));
    assert_eq!(store.session_count(), 2);
    run_at(&store, 30, retryable_insert(2, 2, 3));
    // Any command at 61 s reaps session 1 (idle 61 s) but not session 2 (idle 31 s).
    run_at(&store, 61, doc! { "find": "c" });
    assert_eq!(store.session_count(), 1);
}
