//! The retryable-write table: replays, TransactionTooOld, per-statement records.

use bson::{Binary, Bson, Document, doc, spec::BinarySubtype};

use super::{error_code, find, ids, insert, new_store, run, run_ok};

fn lsid(byte: u8) -> Document {
    doc! { "id": Binary { subtype: BinarySubtype::Uuid, bytes: vec![byte; 16] } }
}

fn retryable(mut command: Document, session: u8, txn_number: i64) -> Document {
    command.insert("lsid", lsid(session));
    command.insert("txnNumber", Bson::Int64(txn_number));
    command
}

#[test]
fn a_retried_insert_replays_without_applying_twice() {
    let store = new_store();
    let command = retryable(
        doc! { "insert": "c", "documents": [{ "_id": 1 }, { "_id": 2 }] },
        1,
        1,
    );
    let first = run_ok(&store, "db", command.clone());
    assert_eq!(first, doc! { "n": 2, "ok": 1.0 });
    let retry = run_ok(&store, "db", command);
    assert_eq!(retry, doc! { "n": 2, "retriedStmtIds": [0, 1], "ok": 1.0 });
    assert_eq!(store.writes_applied("db.c"), 2);
    assert_eq!(ids(&store, "c", doc! {}), vec![1, 2]);
    assert_eq!(store.session_count(), 1);
}

#[test]
fn without_a_txn_number_the_same_insert_is_a_duplicate() {
    let store = new_store();
    let command = doc! { "insert": "c", "documents": [{ "_id": 1 }], "lsid": lsid(1) };
    run_ok(&store, "db", command.clone());
    let again = run_ok(&store, "db", command);
    assert!(again.contains_key("writeErrors"));
}

#[test]
fn a_newer_txn_number_executes_and_an_older_one_is_too_old() {
    let store = new_store();
    run_ok(
        &store,
        "db",
        retryable(doc! { "insert": "c", "documents": [{ "_id": 1 }] }, 1, 5),
    );
    run_ok(
        &store,
        "db",
        retryable(doc! { "insert": "c", "documents": [{ "_id": 2 }] }, 1, 6),
    );
    let stale = run(
        &store,
        "db",
        retryable(doc! { "insert": "c", "documents": [{ "_id": 3 }] }, 1, 5),
    );
    assert_eq!(error_code(&stale), 225);
    assert_eq!(stale.get_str("codeName").unwrap(), "TransactionTooOld");
    // Another session has its own numbering.
    run_ok(
        &store,
        "db",
        retryable(doc! { "insert": "c", "documents": [{ "_id": 3 }] }, 2, 1),
    );
    assert_eq!(ids(&store, "c", doc! {}), vec![1, 2, 3]);
}

#[test]
fn failed_statements_are_executed_again_on_retry() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 2 }]);
    let command = retryable(
        doc! { "insert": "c", "documents": [{ "_id": 1 }, { "_id": 2 }, { "_id": 3 }] },
        1,
        1,
    );
    let first = run_ok(&store, "db", command.clone());
    assert_eq!(first.get_i32("n").unwrap(), 1);
    // The conflicting document goes away; the retry replays statement 0 and runs 1 and 2.
    run_ok(
        &store,
        "db",
        doc! { "delete": "c", "deletes": [{ "q": { "_id": 2 }, "limit": 1 }] },
    );
    let retry = run_ok(&store, "db", command);
    assert_eq!(retry, doc! { "n": 3, "retriedStmtIds": [0], "ok": 1.0 });
    assert_eq!(ids(&store, "c", doc! {}), vec![1, 2, 3]);
}

#[test]
fn updates_and_upserts_replay_their_results() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1, "n": 0 }]);
    let command = retryable(
        doc! { "update": "c", "updates": [
            { "q": { "_id": 1 }, "u": { "$inc": { "n": 1 } } },
            { "q": { "_id": 2 }, "u": { "$inc": { "n": 1 } }, "upsert": true },
        ] },
        1,
        1,
    );
    let first = run_ok(&store, "db", command.clone());
    let retry = run_ok(&store, "db", command);
    for field in ["n", "nModified", "upserted"] {
        assert_eq!(first.get(field), retry.get(field), "{field}");
    }
    assert_eq!(first.get_i32("n").unwrap(), 2);
    assert_eq!(
        find(&store, "c", doc! {}),
        vec![doc! { "_id": 1, "n": 1 }, doc! { "_id": 2, "n": 1 }]
    );
    assert_eq!(retry.get_array("retriedStmtIds").unwrap().len(), 2);
}

#[test]
fn deletes_replay_their_count() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1 }, doc! { "_id": 2 }]);
    let command = retryable(
        doc! { "delete": "c", "deletes": [{ "q": {}, "limit": 1 }] },
        3,
        9,
    );
    assert_eq!(
        run_ok(&store, "db", command.clone()).get_i32("n").unwrap(),
        1
    );
    assert_eq!(run_ok(&store, "db", command).get_i32("n").unwrap(), 1);
    assert_eq!(
        ids(&store, "c", doc! {}),
        vec![2],
        "the retry deleted nothing more"
    );
}

#[test]
fn find_and_modify_replays_the_stored_reply() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1, "n": 0 }]);
    let command = retryable(
        doc! { "findAndModify": "c", "query": { "_id": 1 }, "update": { "$inc": { "n": 1 } }, "new": true },
        4,
        1,
    );
    let first = run_ok(&store, "db", command.clone());
    let retry = run_ok(&store, "db", command);
    assert_eq!(
        first.get_document("value").unwrap(),
        &doc! { "_id": 1, "n": 1 }
    );
    assert_eq!(
        retry.get_document("value").unwrap(),
        &doc! { "_id": 1, "n": 1 }
    );
    assert_eq!(retry.get_i32("retriedStmtId").unwrap(), 0);
    assert_eq!(find(&store, "c", doc! {}), vec![doc! { "_id": 1, "n": 1 }]);
}

#[test]
fn session_fields_are_validated() {
    let store = new_store();
    let no_lsid = doc! { "insert": "c", "documents": [{}], "txnNumber": 1_i64 };
    assert_eq!(error_code(&run(&store, "db", no_lsid)), 72);
    let int_txn = doc! { "insert": "c", "documents": [{}], "lsid": lsid(1), "txnNumber": 1 };
    assert_eq!(error_code(&run(&store, "db", int_txn)), 14);
    let transaction = retryable(
        doc! { "insert": "c", "documents": [{}], "autocommit": false },
        1,
        1,
    );
    // A transaction statement without a started transaction.
    assert_eq!(error_code(&run(&store, "db", transaction)), 251);
    assert!(store.documents("db", "c").is_empty());
}

#[test]
fn concurrent_retries_apply_a_statement_once() {
    let store = std::sync::Arc::new(new_store());
    let command = retryable(
        doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "$inc": { "n": 1 } }, "upsert": true }] },
        8,
        1,
    );
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let store = store.clone();
            let command = command.clone();
            std::thread::spawn(move || run_ok(&store, "db", command))
        })
        .collect();
    for thread in threads {
        let reply = thread.join().expect("thread finished");
        assert_eq!(reply.get_i32("n").unwrap(), 1);
    }
    assert_eq!(find(&store, "c", doc! {}), vec![doc! { "_id": 1, "n": 1 }]);
    assert_eq!(store.writes_applied("db.c"), 1);
}

#[test]
fn reusing_a_statement_id_for_another_kind_of_write_is_rejected() {
    let store = new_store();
    run_ok(
        &store,
        "db",
        retryable(doc! { "insert": "c", "documents": [{ "_id": 1 }] }, 5, 1),
    );
    let update = retryable(
        doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "$set": { "a": 1 } } }] },
        5,
        1,
    );
    let reply = run_ok(&store, "db", update);
    let error = reply.get_array("writeErrors").unwrap()[0]
        .as_document()
        .unwrap()
        .clone();
    assert_eq!(error.get_i32("code").unwrap(), 40638);
    let find_and_modify = retryable(
        doc! { "findAndModify": "c", "query": {}, "remove": true },
        5,
        1,
    );
    assert_eq!(error_code(&run(&store, "db", find_and_modify)), 40606);
    let delete = retryable(
        doc! { "delete": "c", "deletes": [{ "q": {}, "limit": 1 }] },
        5,
        1,
    );
    assert_eq!(run_ok(&store, "db", delete).get_i32("n").unwrap(), 0);
    assert_eq!(find(&store, "c", doc! {}), vec![doc! { "_id": 1 }]);
}
