//! Byte bounds of the retryable-write table and the op log.

use bson::{Binary, Bson, DateTime, Document, doc, spec::BinarySubtype};

use super::at;
use crate::catalog::lock;
use crate::oplog::{MAX_OPLOG_BYTES, Oplog, OplogWrite};
use crate::retryable_writes::{
    HistoryLimits, RetryableWriteTable, SessionKey, StatementOutcome, retryable_write_of,
};
use crate::{Change, OpTime};

/// mongod's IncompleteTransactionHistory.
const INCOMPLETE_TRANSACTION_HISTORY: i32 = 217;

fn key(session: u8) -> SessionKey {
    let command: Document = doc! {
        "insert": "c",
        "lsid": { "id": Binary { subtype: BinarySubtype::Uuid, bytes: vec![session; 16] } },
        "txnNumber": Bson::Int64(1),
    };
    match retryable_write_of(&command) {
        Ok(Some(retryable)) => retryable.session,
        other => panic!("not a retryable write: {other:?}"),
    }
}

/// Checks out `session` at `now`, starts txnNumber 1 and records `count` inserts.
fn record_inserts(table: &RetryableWriteTable, session: u8, now: DateTime, count: i32) {
    let key = key(session);
    let record = table.session(&key, now).expect("session");
    let mut record = lock(&record);
    record.begin(1, &key).expect("txnNumber 1 starts");
    for statement in 0..count {
        record.record(statement, StatementOutcome::Inserted);
    }
}

fn begin_error(table: &RetryableWriteTable, session: u8, txn_number: i64) -> Option<i32> {
    let key = key(session);
    let record = table.session(&key, at(100)).expect("session");
    let mut record = lock(&record);
    record.begin(txn_number, &key).err().map(|error| error.code)
}

#[test]
fn a_session_history_past_its_bound_is_dropped_and_a_retry_is_refused_not_reapplied() {
    let table = RetryableWriteTable::with_limits(HistoryLimits {
        per_session: 1000,
        total: 1 << 30,
    });
    record_inserts(&table, 1, at(0), 10);
    let held = table.history_bytes();
    assert!(held > 0 && held <= 1000, "{held}");
    record_inserts(&table, 1, at(0), 100);
    assert!(table.history_bytes() <= 1000, "{}", table.history_bytes());
    assert_eq!(
        begin_error(&table, 1, 1),
        Some(INCOMPLETE_TRANSACTION_HISTORY)
    );
    // A newer txnNumber starts afresh, an older one is still too old.
    assert_eq!(begin_error(&table, 1, 2), None);
    assert_eq!(begin_error(&table, 1, 1), Some(225));
}

#[test]
fn past_the_table_bound_the_least_recently_used_histories_are_dropped() {
    let table = RetryableWriteTable::with_limits(HistoryLimits {
        per_session: 1000,
        total: 2000,
    });
    for session in 1..=3 {
        record_inserts(&table, session, at(i64::from(session)), 12);
    }
    assert!(table.history_bytes() > 2000);
    // The next checkout frees the oldest histories until three quarters of the bound remain.
    record_inserts(&table, 4, at(4), 1);
    assert!(table.history_bytes() <= 1500, "{}", table.history_bytes());
    assert_eq!(
        begin_error(&table, 1, 1),
        Some(INCOMPLETE_TRANSACTION_HISTORY)
    );
    assert_eq!(
        begin_error(&table, 3, 1),
        None,
        "the newest history is kept"
    );
    let key = key(3);
    let record = table.session(&key, at(5)).expect("session");
    assert!(lock(&record).executed(0).is_some());
}

#[test]
fn the_op_log_holds_a_bounded_number_of_bytes_whatever_its_capacity() {
    let mut oplog = Oplog::new(1_000, crate::OpClock::default());
    let large_id = "i".repeat(4 * 1024 * 1024);
    for _ in 0..20 {
        let document = std::sync::Arc::new(doc! { "_id": large_id.clone() });
        oplog.record(
            at(0),
            OplogWrite {
                ns: "db.c".to_owned(),
                uuid: None,
                id: Some(Bson::String(large_id.clone())),
                change: Change::Insert(document),
                pre_image: None,
                previous: None,
                apply: crate::replication::entry::ApplyInfo::default(),
            },
            None,
        );
    }
    let retained = oplog.len();
    assert!(retained < 20, "{retained}");
    // Each entry holds the `_id` twice: as its document key and inside its document.
    assert!(retained * 2 * large_id.len() <= MAX_OPLOG_BYTES);
    let newest = oplog.since(OpTime::ZERO);
    assert_eq!(newest.last().map(|entry| entry.op_time), Some(oplog.last()));
}

#[test]
fn past_the_cursor_byte_bound_the_least_recently_used_cursors_are_closed() {
    use std::collections::VecDeque;
    use std::sync::Arc;

    use crate::cursor::{CursorRegistry, OpenCursor};

    let cursor = |seconds: i64, shared: Option<&Arc<Document>>| OpenCursor {
        ns: "db.c".to_owned(),
        remaining: VecDeque::from(vec![
            shared
                .cloned()
                .unwrap_or_else(|| Arc::new(doc! { "s": "x".repeat(400) })),
        ]),
        last_used: at(seconds),
        no_timeout: true,
        tail: None,
        stream: None,
        time_limited: false,
    };
    let mut registry = CursorRegistry::with_max_bytes(1_000);
    registry.insert(1, cursor(0, None));
    registry.insert(2, cursor(1, None));
    assert_eq!(registry.len(), 2);
    // A third owned result passes 1,000 bytes: the least recently used cursor goes.
    registry.insert(3, cursor(2, None));
    assert!(!registry.contains(1));
    assert!(registry.contains(2) && registry.contains(3));
    // A document shared with a collection costs the cursor nothing.
    let stored = Arc::new(doc! { "s": "y".repeat(4000) });
    registry.insert(4, cursor(3, Some(&stored)));
    assert!(registry.contains(2) && registry.contains(3) && registry.contains(4));
}

#[test]
fn results_appended_to_a_tailable_cursor_count_against_the_byte_bound() {
    use std::collections::VecDeque;
    use std::sync::Arc;

    use crate::cursor::{CursorRegistry, OpenCursor};

    let owned = || Arc::new(doc! { "s": "x".repeat(400) });
    let cursor = |seconds: i64| OpenCursor {
        ns: "db.c".to_owned(),
        remaining: VecDeque::from(vec![owned()]),
        last_used: at(seconds),
        no_timeout: true,
        tail: None,
        stream: None,
        time_limited: false,
    };
    let mut registry = CursorRegistry::with_max_bytes(1_000);
    registry.insert(1, cursor(0));
    // Projected documents a tailable getMore found: owned by the cursor alone.
    assert!(registry.append(1, vec![owned()]));
    registry.insert(2, cursor(1));
    // Three owned results pass 1,000 bytes: the older cursor goes.
    assert!(!registry.contains(1));
    assert!(registry.contains(2));
    assert!(!registry.append(1, vec![owned()]));
}
