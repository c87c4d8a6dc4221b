//! Change streams: resume tokens, where a stream starts, and the op log's bound.

use bson::{Bson, Document, doc};

use super::change_stream::{next, resume_token};
use super::{batch, cursor_id, error_code, insert, new_store, run, run_ok};
use crate::{Store, StoreOptions};

fn open_c(store: &Store, options: Document) -> Document {
    run(
        store,
        "db",
        doc! { "aggregate": "c", "pipeline": [{ "$changeStream": options }], "cursor": {} },
    )
}

fn keys(events: &[Document]) -> Vec<i32> {
    events
        .iter()
        .filter_map(|event| {
            let key = event.get_document("documentKey").ok()?;
            key.get_i32("_id").ok()
        })
        .collect()
}

#[test]
fn resume_after_an_events_token_returns_exactly_the_events_after_it() {
    let store = new_store();
    let id = cursor_id(&open_c(&store, doc! {}));
    insert(&store, "c", (1..=4).map(|n| doc! { "_id": n }).collect());
    let events = batch(&next(&store, "db", "c", id));
    let second = events[1].get_document("_id").cloned().expect("a token");
    // A new stream, as a driver opens to resume (possibly on another member: the op log is
    // the deployment's).
    let resumed = open_c(&store, doc! { "resumeAfter": second.clone() });
    assert_eq!(keys(&batch(&resumed)), [3, 4]);
    let started = open_c(&store, doc! { "startAfter": second });
    assert_eq!(keys(&batch(&started)), [3, 4]);
}

#[test]
fn resuming_from_a_post_batch_resume_token_neither_loses_nor_repeats() {
    let store = new_store();
    let first = open_c(&store, doc! {});
    let token = resume_token(&first);
    // Writes after the stream opened but before it read anything.
    insert(&store, "c", vec![doc! { "_id": 1 }, doc! { "_id": 2 }]);
    let resumed = open_c(&store, doc! { "resumeAfter": token });
    assert_eq!(keys(&batch(&resumed)), [1, 2]);
    let high_water = resume_token(&resumed);
    insert(&store, "c", vec![doc! { "_id": 3 }]);
    let again = open_c(&store, doc! { "resumeAfter": high_water });
    assert_eq!(keys(&batch(&again)), [3]);
}

#[test]
fn start_at_operation_time_includes_the_write_at_that_time() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1 }]);
    let before = store.op_time();
    insert(&store, "c", vec![doc! { "_id": 2 }]);
    let at_second = store
        .oplog_since(before)
        .first()
        .map(|entry| entry.op_time.ts)
        .expect("the second insert");
    let reply = open_c(
        &store,
        doc! { "startAtOperationTime": Bson::Timestamp(at_second) },
    );
    assert_eq!(keys(&batch(&reply)), [2]);
}

#[test]
fn start_after_an_invalidate_continues_but_resume_after_one_is_refused() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1 }]);
    let id = cursor_id(&open_c(&store, doc! {}));
    run_ok(&store, "db", doc! { "drop": "c" });
    insert(&store, "c", vec![doc! { "_id": 2 }]);
    let events = batch(&next(&store, "db", "c", id));
    let invalidate = events
        .iter()
        .find(|event| event.get_str("operationType").ok() == Some("invalidate"))
        .and_then(|event| event.get_document("_id").ok())
        .cloned()
        .expect("an invalidate");
    assert_eq!(
        error_code(&open_c(&store, doc! { "resumeAfter": invalidate.clone() })),
        260
    );
    let started = open_c(&store, doc! { "startAfter": invalidate });
    assert!(cursor_id(&started) > 0);
    let events = batch(&started);
    assert_eq!(keys(&events), [2], "{events:?}");
}

#[test]
fn a_position_older_than_the_op_log_holds_is_history_lost() {
    let store = Store::new(StoreOptions::default().with_seed(7).with_oplog_capacity(3));
    insert(&store, "c", vec![doc! { "_id": 0 }]);
    let reply = open_c(&store, doc! {});
    let (id, token) = (cursor_id(&reply), resume_token(&reply));
    insert(&store, "c", (1..=5).map(|n| doc! { "_id": n }).collect());
    assert_eq!(
        error_code(&open_c(&store, doc! { "resumeAfter": token })),
        286
    );
    let fell_behind = run(&store, "db", doc! { "getMore": id, "collection": "c" });
    assert_eq!(error_code(&fell_behind), 286);
    let ancient = Bson::Timestamp(bson::Timestamp {
        time: 1,
        increment: 1,
    });
    assert_eq!(
        error_code(&open_c(&store, doc! { "startAtOperationTime": ancient })),
        286
    );
}

#[test]
fn malformed_resume_tokens_are_typed_errors() {
    let store = new_store();
    let valid = resume_token(&open_c(&store, doc! {}));
    let valid_hex = valid.get_str("_data").expect("hex").to_owned();
    let mut longer = valid.clone();
    longer.insert("extra", 1);
    let cases: Vec<(Bson, i32)> = vec![
        (Bson::String("token".into()), 14),
        (Bson::Document(doc! {}), 2),
        (Bson::Document(doc! { "_data": 1 }), 2),
        (Bson::Document(doc! { "_data": "zz" }), 2),
        (Bson::Document(doc! { "_data": "0" }), 2),
        (Bson::Document(doc! { "_data": "+1+1" }), 2),
        (
            Bson::Document(doc! { "_data": valid_hex[..valid_hex.len() - 2].to_owned() }),
            2,
        ),
        (
            Bson::Document(doc! { "_data": format!("01{}", &valid_hex[2..]) }),
            2,
        ),
        (Bson::Document(doc! { "_data": "0".repeat(1 << 20) }), 2),
        (Bson::Document(longer), 2),
    ];
    for (token, code) in cases {
        let reply = open_c(&store, doc! { "resumeAfter": token.clone() });
        assert_eq!(error_code(&reply), code, "token {token}");
    }
}

#[test]
fn retryable_writes_carry_their_session_in_the_op_log_but_not_in_events() {
    let store = new_store();
    let id = cursor_id(&open_c(&store, doc! {}));
    let lsid = doc! { "id": Bson::Binary(bson::Binary {
        subtype: bson::spec::BinarySubtype::Uuid, bytes: vec![7; 16],
    }) };
    run_ok(
        &store,
        "db",
        doc! {
            "insert": "c", "documents": [{ "_id": 1 }], "lsid": lsid.clone(), "txnNumber": 3_i64,
        },
    );
    let entry = store
        .oplog_since(crate::OpTime::ZERO)
        .pop()
        .expect("an entry");
    let session = entry.session.expect("the write's session");
    assert_eq!(
        (&*session.lsid, session.txn_number, session.in_transaction),
        (&lsid, 3, false)
    );
    let events = batch(&next(&store, "db", "c", id));
    assert!(
        !events[0].contains_key("lsid"),
        "only transactions show their session"
    );
}

/// `command` as a statement of transaction 1 of session `lsid` (`start` for the first).
fn in_transaction(mut command: Document, lsid: &Document, start: bool) -> Document {
    if start {
        command.insert("startTransaction", true);
    }
    command.insert("lsid", lsid.clone());
    command.insert("txnNumber", 1_i64);
    command.insert("autocommit", false);
    command
}

#[test]
fn a_committed_transaction_shows_its_writes_at_commit_with_its_session() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1, "v": 1 }]);
    let id = cursor_id(&open_c(&store, doc! {}));
    let lsid = doc! { "id": Bson::Binary(bson::Binary {
        subtype: bson::spec::BinarySubtype::Uuid, bytes: vec![9; 16],
    }) };
    let update =
        doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "$set": { "v": 2 } } }] };
    run_ok(&store, "db", in_transaction(update, &lsid, true));
    let add = doc! { "insert": "c", "documents": [{ "_id": 2 }] };
    run_ok(&store, "db", in_transaction(add, &lsid, false));
    assert!(
        batch(&next(&store, "db", "c", id)).is_empty(),
        "nothing before the commit"
    );
    run_ok(
        &store,
        "admin",
        in_transaction(doc! { "commitTransaction": 1 }, &lsid, false),
    );
    let events = batch(&next(&store, "db", "c", id));
    assert_eq!(keys(&events), [1, 2]);
    assert_eq!(
        events[0]
            .get_document("updateDescription")
            .and_then(|d| d.get_document("updatedFields"))
            .ok(),
        Some(&doc! { "v": 2 })
    );
    for event in &events {
        assert_eq!(event.get_document("lsid").ok(), Some(&lsid), "{event}");
        assert_eq!(event.get_i64("txnNumber").ok(), Some(1), "{event}");
    }
}

#[test]
fn a_change_stream_cannot_open_inside_a_transaction() {
    let store = new_store();
    let lsid = doc! { "id": Bson::Binary(bson::Binary {
        subtype: bson::spec::BinarySubtype::Uuid, bytes: vec![8; 16],
    }) };
    let command = doc! { "aggregate": "c", "pipeline": [{ "$changeStream": {} }], "cursor": {} };
    assert_eq!(
        error_code(&run(&store, "db", in_transaction(command, &lsid, true))),
        263
    );
}

proptest::proptest! {
    /// Whatever a client sends as a resume token or stage option, the store answers with a
    /// reply (an error or a stream), never a panic.
    #[test]
    fn arbitrary_tokens_and_options_get_a_reply(
        data in proptest::collection::vec(proptest::num::u8::ANY, 0..40),
        step in proptest::num::u8::ANY,
        option in 0usize..6,
        as_hex in proptest::bool::ANY,
    ) {
        let store = new_store();
        insert(&store, "c", vec![doc! { "_id": 1 }]);
        let mut bytes = vec![1u8];
        bytes.extend_from_slice(&data);
        if let Some(byte) = bytes.get_mut(9) {
            *byte = step;
        }
        let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
        let token = if as_hex {
            Bson::Document(doc! { "_data": hex })
        } else {
            Bson::Binary(bson::Binary { subtype: bson::spec::BinarySubtype::Generic, bytes })
        };
        let name = ["resumeAfter", "startAfter", "startAtOperationTime", "fullDocument",
            "fullDocumentBeforeChange", "showExpandedEvents"][option];
        let mut options = Document::new();
        options.insert(name, token);
        let reply = open_c(&store, options);
        proptest::prop_assert!(reply.contains_key("ok"));
        let id = cursor_id(&reply);
        if id > 0 {
            let more = run(&store, "db", doc! { "getMore": id, "collection": "c" });
            proptest::prop_assert!(more.contains_key("ok"));
        }
    }
}

#[test]
fn an_expanded_rename_event_describes_its_target_and_the_collection_it_replaced() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1 }]);
    insert(&store, "d", vec![doc! { "_id": 2 }]);
    let id = cursor_id(&open_c(&store, doc! { "showExpandedEvents": true }));
    let rename = doc! { "renameCollection": "db.c", "to": "db.d", "dropTarget": true };
    run_ok(&store, "admin", rename);
    let events = batch(&next(&store, "db", "c", id));
    let description = events[0]
        .get_document("operationDescription")
        .expect("described");
    assert_eq!(
        description.get_document("to").ok(),
        Some(&doc! { "db": "db", "coll": "d" })
    );
    assert!(
        matches!(description.get("dropTarget"), Some(Bson::Binary(_))),
        "{description}"
    );
    assert_eq!(events[1].get_str("operationType").ok(), Some("invalidate"));
}

#[test]
fn kill_cursors_closes_a_database_stream_by_its_aggregate_namespace() {
    let store = new_store();
    let open = doc! { "aggregate": 1, "pipeline": [{ "$changeStream": {} }], "cursor": {} };
    let id = cursor_id(&run_ok(&store, "db", open));
    let killed = run_ok(
        &store,
        "db",
        doc! { "killCursors": "$cmd.aggregate", "cursors": [id] },
    );
    assert_eq!(
        killed.get_array("cursorsKilled").ok(),
        Some(&vec![Bson::Int64(id)])
    );
    assert_eq!(store.open_cursor_count(), 0);
}
