//! Multi-document transactions: isolation, atomic commit, conflicts, commit/abort answers.

use std::time::Duration;

use bson::{Binary, Bson, Document, doc, spec::BinarySubtype};

use super::{at, batch, error_code, find, ids, insert, new_store, run, run_ok};
use crate::{Change, CommandContext, OplogOp, Store};

fn lsid(session: u8) -> Document {
    doc! { "id": Binary { subtype: BinarySubtype::Uuid, bytes: vec![session; 16] } }
}

/// `command` as the first statement of transaction `txn_number` of `session`.
fn first(mut command: Document, session: u8, txn_number: i64) -> Document {
    command.insert("startTransaction", true);
    next(command, session, txn_number)
}

/// `command` as a later statement (or the commit/abort) of the transaction.
fn next(mut command: Document, session: u8, txn_number: i64) -> Document {
    command.insert("lsid", lsid(session));
    command.insert("txnNumber", Bson::Int64(txn_number));
    command.insert("autocommit", false);
    command
}

fn commit(store: &Store, session: u8, txn_number: i64) -> Document {
    run(
        store,
        "admin",
        next(doc! { "commitTransaction": 1 }, session, txn_number),
    )
}

fn abort(store: &Store, session: u8, txn_number: i64) -> Document {
    run(
        store,
        "admin",
        next(doc! { "abortTransaction": 1 }, session, txn_number),
    )
}

fn labels(reply: &Document) -> Vec<String> {
    reply
        .get_array("errorLabels")
        .map(|labels| {
            labels
                .iter()
                .filter_map(|label| label.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn assert_transient(reply: &Document, code: i32) {
    assert_eq!(error_code(reply), code, "{reply}");
    assert_eq!(labels(reply), vec!["TransientTransactionError"], "{reply}");
}

fn value_of(store: &Store, id: i32) -> Option<i32> {
    find(store, "c", doc! { "_id": id })
        .first()
        .and_then(|document| document.get_i32("v").ok())
}

#[test]
fn a_transaction_sees_its_writes_and_others_see_them_only_after_commit() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1, "v": 1 }]);
    run_ok(
        &store,
        "db",
        first(
            doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "$set": { "v": 2 } } }] },
            1,
            1,
        ),
    );
    run_ok(
        &store,
        "db",
        next(
            doc! { "insert": "c", "documents": [{ "_id": 2, "v": 2 }] },
            1,
            1,
        ),
    );
    let inside = batch(&run_ok(
        &store,
        "db",
        next(doc! { "find": "c", "filter": {} }, 1, 1),
    ));
    assert_eq!(
        inside,
        vec![doc! { "_id": 1, "v": 2 }, doc! { "_id": 2, "v": 2 }]
    );
    assert_eq!(value_of(&store, 1), Some(1));
    assert_eq!(ids(&store, "c", doc! {}), vec![1]);
    let before = store.op_time();
    run_ok(&store, "admin", next(doc! { "commitTransaction": 1 }, 1, 1));
    assert_eq!(value_of(&store, 1), Some(2));
    assert_eq!(ids(&store, "c", doc! {}), vec![1, 2]);
    let entries = store.oplog_since(before);
    let ops: Vec<OplogOp> = entries.iter().map(|entry| entry.op).collect();
    assert_eq!(ops, vec![OplogOp::Update, OplogOp::Insert]);
    for entry in &entries {
        let session = entry
            .session
            .as_ref()
            .expect("stamped with the transaction");
        assert_eq!(*session.lsid, lsid(1));
        assert_eq!((session.txn_number, session.in_transaction), (1, true));
    }
    // The update is described field by field, as change events show it.
    assert!(matches!(entries[0].change, Change::Update { .. }));
}

#[test]
fn reads_inside_stay_at_the_snapshot() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1, "v": 1 }]);
    run_ok(
        &store,
        "db",
        first(doc! { "find": "c", "filter": {} }, 1, 1),
    );
    run_ok(
        &store,
        "db",
        doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "$set": { "v": 9 } } }] },
    );
    let inside = batch(&run_ok(
        &store,
        "db",
        next(doc! { "find": "c", "filter": {} }, 1, 1),
    ));
    assert_eq!(inside, vec![doc! { "_id": 1, "v": 1 }]);
    run_ok(&store, "admin", next(doc! { "commitTransaction": 1 }, 1, 1));
    assert_eq!(value_of(&store, 1), Some(9));
}

#[test]
fn an_aborted_transaction_leaves_nothing() {
    let store = new_store();
    run_ok(
        &store,
        "db",
        first(doc! { "insert": "c", "documents": [{ "_id": 1 }] }, 1, 1),
    );
    run_ok(&store, "admin", next(doc! { "abortTransaction": 1 }, 1, 1));
    assert!(ids(&store, "c", doc! {}).is_empty());
    assert_eq!(store.writes_applied("db.c"), 0);
    assert_eq!(store.open_transaction_count(), 0);
}

#[test]
fn the_second_writer_of_a_document_gets_a_transient_write_conflict() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1, "v": 1 }]);
    let set = |v: i32| {
        doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "$set": { "v": v } } }] }
    };
    run_ok(&store, "db", first(set(2), 1, 1));
    let second = run(&store, "db", first(set(3), 2, 1));
    assert_transient(&second, 112);
    // The loser is aborted; the winner commits.
    assert_transient(&commit(&store, 2, 1), 251);
    run_ok(&store, "admin", next(doc! { "commitTransaction": 1 }, 1, 1));
    assert_eq!(value_of(&store, 1), Some(2));
}

#[test]
fn writing_a_document_committed_after_the_snapshot_conflicts() {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![doc! { "_id": 1, "v": 1 }, doc! { "_id": 2, "v": 1 }],
    );
    run_ok(
        &store,
        "db",
        first(doc! { "find": "c", "filter": {} }, 1, 1),
    );
    run_ok(
        &store,
        "db",
        doc! { "update": "c", "updates": [{ "q": { "_id": 2 }, "u": { "$set": { "v": 5 } } }] },
    );
    let late = run(
        &store,
        "db",
        next(
            doc! { "update": "c", "updates": [{ "q": { "_id": 2 }, "u": { "$inc": { "v": 1 } } }] },
            1,
            1,
        ),
    );
    assert_transient(&late, 112);
    assert_eq!(value_of(&store, 2), Some(5));
}

#[test]
fn a_write_outside_to_a_held_document_aborts_the_transaction() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1, "v": 1 }]);
    run_ok(
        &store,
        "db",
        first(
            doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "$set": { "v": 2 } } }] },
            1,
            1,
        ),
    );
    run_ok(
        &store,
        "db",
        doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "$set": { "v": 7 } } }] },
    );
    assert_transient(&commit(&store, 1, 1), 251);
    assert_eq!(value_of(&store, 1), Some(7));
}

#[test]
fn commit_and_abort_answer_as_mongod_after_each_outcome() {
    let store = new_store();
    run_ok(
        &store,
        "db",
        first(doc! { "insert": "c", "documents": [{ "_id": 1 }] }, 1, 1),
    );
    run_ok(&store, "admin", next(doc! { "commitTransaction": 1 }, 1, 1));
    // A retried commit answers ok and applies nothing again.
    run_ok(&store, "admin", next(doc! { "commitTransaction": 1 }, 1, 1));
    assert_eq!(store.writes_applied("db.c"), 1);
    assert_eq!(error_code(&abort(&store, 1, 1)), 256);

    run_ok(
        &store,
        "db",
        first(doc! { "insert": "c", "documents": [{ "_id": 2 }] }, 1, 2),
    );
    run_ok(&store, "admin", next(doc! { "abortTransaction": 1 }, 1, 2));
    assert_transient(&commit(&store, 1, 2), 251);
    assert_eq!(error_code(&abort(&store, 1, 2)), 251);
    assert_eq!(error_code(&commit(&store, 1, 1)), 225);

    // A transaction that only read commits fine.
    run_ok(
        &store,
        "db",
        first(doc! { "find": "c", "filter": {} }, 1, 3),
    );
    run_ok(&store, "admin", next(doc! { "commitTransaction": 1 }, 1, 3));
    assert_eq!(ids(&store, "c", doc! {}), vec![1]);
}

#[test]
fn continuing_a_missing_transaction_is_transient_and_older_numbers_are_too_old() {
    let store = new_store();
    let missing = run(&store, "db", next(doc! { "find": "c", "filter": {} }, 1, 1));
    assert_transient(&missing, 251);
    run_ok(
        &store,
        "db",
        first(doc! { "insert": "c", "documents": [{ "_id": 1 }] }, 1, 5),
    );
    let old = run(
        &store,
        "db",
        first(doc! { "find": "c", "filter": {} }, 1, 4),
    );
    assert_eq!(error_code(&old), 225);
    // A newer txnNumber aborts the open transaction implicitly.
    run_ok(
        &store,
        "db",
        first(doc! { "find": "c", "filter": {} }, 1, 6),
    );
    assert_eq!(error_code(&commit(&store, 1, 5)), 225);
    run_ok(&store, "admin", next(doc! { "commitTransaction": 1 }, 1, 6));
    assert!(ids(&store, "c", doc! {}).is_empty());
}

#[test]
fn options_and_commands_mongod_refuses_in_a_transaction() {
    let store = new_store();
    let linearizable = first(
        doc! { "find": "c", "filter": {}, "readConcern": { "level": "linearizable" } },
        1,
        1,
    );
    assert_eq!(error_code(&run(&store, "db", linearizable)), 72);
    let count = first(doc! { "count": "c" }, 1, 2);
    assert_eq!(error_code(&run(&store, "db", count)), 263);
    run_ok(
        &store,
        "db",
        first(doc! { "find": "c", "filter": {} }, 1, 3),
    );
    let write_concern = next(
        doc! { "insert": "c", "documents": [{ "_id": 1 }], "writeConcern": { "w": 1 } },
        1,
        3,
    );
    assert_eq!(error_code(&run(&store, "db", write_concern)), 72);
    let read_concern = next(
        doc! { "find": "c", "filter": {}, "readConcern": { "level": "local" } },
        1,
        3,
    );
    assert_eq!(error_code(&run(&store, "db", read_concern)), 72);
    let autocommit_true = doc! {
        "find": "c", "lsid": lsid(2), "txnNumber": 1_i64, "autocommit": true,
    };
    assert_eq!(error_code(&run(&store, "db", autocommit_true)), 72);
}

#[test]
fn a_transaction_past_its_lifetime_is_aborted() {
    let store = new_store();
    store.set_transaction_lifetime(Duration::from_secs(5));
    run_ok(
        &store,
        "db",
        first(doc! { "insert": "c", "documents": [{ "_id": 1 }] }, 1, 1),
    );
    let later = store.execute(
        "admin",
        &next(doc! { "commitTransaction": 1 }, 1, 1),
        &CommandContext::new(at(6)),
    );
    assert_transient(&later.reply, 251);
    assert!(ids(&store, "c", doc! {}).is_empty());
}

#[test]
fn a_stepdown_aborts_open_transactions_but_a_retried_commit_still_succeeds() {
    let store = new_store();
    run_ok(
        &store,
        "db",
        first(doc! { "insert": "c", "documents": [{ "_id": 1 }] }, 1, 1),
    );
    run_ok(&store, "admin", next(doc! { "commitTransaction": 1 }, 1, 1));
    run_ok(
        &store,
        "db",
        first(doc! { "insert": "c", "documents": [{ "_id": 2 }] }, 2, 1),
    );
    assert_eq!(store.abort_open_transactions(), 1);
    run_ok(&store, "admin", next(doc! { "commitTransaction": 1 }, 1, 1));
    assert_transient(&commit(&store, 2, 1), 251);
    assert_eq!(ids(&store, "c", doc! {}), vec![1]);
}

#[test]
fn a_commit_refused_by_a_unique_index_is_undone_whole() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 0, "v": 0 }]);
    run_ok(
        &store,
        "db",
        doc! { "createIndexes": "c", "indexes": [{ "key": { "u": 1 }, "name": "u_1", "unique": true }] },
    );
    run_ok(
        &store,
        "db",
        first(
            doc! { "update": "c", "updates": [{ "q": { "_id": 0 }, "u": { "$set": { "v": 1 } } }] },
            1,
            1,
        ),
    );
    run_ok(
        &store,
        "db",
        next(
            doc! { "insert": "c", "documents": [{ "_id": 1, "u": 1 }] },
            1,
            1,
        ),
    );
    insert(&store, "c", vec![doc! { "_id": 2, "u": 1 }]);
    assert_transient(&commit(&store, 1, 1), 112);
    assert_eq!(value_of(&store, 0), Some(0));
    assert_eq!(ids(&store, "c", doc! {}), vec![0, 2]);
}

#[test]
fn a_failed_statement_aborts_the_transaction() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1 }]);
    let duplicate = run_ok(
        &store,
        "db",
        first(doc! { "insert": "c", "documents": [{ "_id": 1 }] }, 1, 1),
    );
    assert!(duplicate.contains_key("writeErrors"));
    assert_transient(&commit(&store, 1, 1), 251);
}

#[test]
fn a_collection_created_in_a_transaction_appears_at_commit() {
    let store = new_store();
    run_ok(
        &store,
        "db",
        first(
            doc! { "insert": "fresh", "documents": [{ "_id": 1 }] },
            1,
            1,
        ),
    );
    assert!(store.documents("db", "fresh").is_empty());
    run_ok(&store, "admin", next(doc! { "commitTransaction": 1 }, 1, 1));
    assert_eq!(store.documents("db", "fresh"), vec![doc! { "_id": 1 }]);
}

#[test]
fn a_collection_touched_late_is_read_as_of_the_snapshot() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1, "v": 1 }]);
    insert(&store, "d", vec![doc! { "_id": 1, "v": 1 }]);
    run_ok(
        &store,
        "db",
        first(doc! { "find": "c", "filter": {} }, 1, 1),
    );
    run_ok(
        &store,
        "db",
        doc! { "update": "d", "updates": [{ "q": { "_id": 1 }, "u": { "$set": { "v": 2 } } }] },
    );
    insert(&store, "d", vec![doc! { "_id": 2, "v": 2 }]);
    let late = batch(&run_ok(
        &store,
        "db",
        next(doc! { "find": "d", "filter": {} }, 1, 1),
    ));
    assert_eq!(late, vec![doc! { "_id": 1, "v": 1 }]);
}

#[test]
fn a_transaction_with_at_cluster_time_reads_at_that_time() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1, "v": 1 }]);
    let then = store.op_time().ts;
    run_ok(
        &store,
        "db",
        doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "$set": { "v": 2 } } }] },
    );
    let read = first(
        doc! { "find": "c", "filter": {}, "readConcern": { "level": "snapshot", "atClusterTime": then } },
        1,
        1,
    );
    assert_eq!(
        batch(&run_ok(&store, "db", read)),
        vec![doc! { "_id": 1, "v": 1 }]
    );
    // Writing what changed after the snapshot conflicts.
    let write = next(
        doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "$set": { "v": 3 } } }] },
        1,
        1,
    );
    assert_transient(&run(&store, "db", write), 112);
}

#[test]
fn create_and_create_indexes_run_only_on_collections_the_transaction_creates() {
    let store = new_store();
    insert(&store, "existing", vec![doc! { "_id": 1 }]);
    run_ok(&store, "db", first(doc! { "create": "fresh" }, 1, 1));
    let index =
        doc! { "createIndexes": "fresh", "indexes": [{ "key": { "x": 1 }, "name": "x_1" }] };
    run_ok(&store, "db", next(index, 1, 1));
    let implicit =
        doc! { "createIndexes": "implicit", "indexes": [{ "key": { "y": 1 }, "name": "y_1" }] };
    let reply = run_ok(&store, "db", next(implicit, 1, 1));
    assert_eq!(
        reply.get_bool("createdCollectionAutomatically").ok(),
        Some(true)
    );
    assert!(store.documents("db", "fresh").is_empty());
    let names = |collection: &str| -> Vec<String> {
        batch(&run_ok(&store, "db", doc! { "listIndexes": collection }))
            .iter()
            .filter_map(|spec| spec.get_str("name").ok().map(str::to_owned))
            .collect()
    };
    let listed = run_ok(&store, "db", doc! { "listCollections": 1 });
    assert_eq!(batch(&listed).len(), 1, "only 'existing' before the commit");
    run_ok(&store, "admin", next(doc! { "commitTransaction": 1 }, 1, 1));
    assert_eq!(names("fresh"), vec!["_id_", "x_1"]);
    assert_eq!(names("implicit"), vec!["_id_", "y_1"]);

    let on_existing =
        doc! { "createIndexes": "existing", "indexes": [{ "key": { "z": 1 }, "name": "z_1" }] };
    assert_eq!(
        error_code(&run(&store, "db", first(on_existing, 1, 2))),
        263
    );
    let again = first(doc! { "create": "existing" }, 1, 3);
    assert_eq!(error_code(&run(&store, "db", again)), 48);
}

#[test]
fn a_transaction_past_its_byte_bound_is_too_large_and_aborted() {
    let store = new_store();
    let big = "x".repeat(15 * 1024 * 1024);
    run_ok(
        &store,
        "db",
        first(doc! { "find": "c", "filter": {} }, 1, 1),
    );
    let mut last = Document::new();
    for id in 0..5 {
        last = run(
            &store,
            "db",
            next(
                doc! { "insert": "c", "documents": [{ "_id": id, "pad": big.clone() }] },
                1,
                1,
            ),
        );
        if last.get_f64("ok").ok() != Some(1.0) {
            break;
        }
    }
    assert_eq!(error_code(&last), 334, "{last}");
    assert_transient(&commit(&store, 1, 1), 251);
    assert!(ids(&store, "c", doc! {}).is_empty());
}

#[test]
fn open_transactions_are_bounded() {
    let store = new_store();
    let bound = crate::transaction::registry::MAX_OPEN_TRANSACTIONS;
    for session in 0..bound {
        let id = u32::try_from(session).unwrap_or(u32::MAX).to_be_bytes();
        let mut bytes = vec![0u8; 12];
        bytes.extend_from_slice(&id);
        let mut command = doc! { "find": "c", "filter": {} };
        command.insert(
            "lsid",
            doc! { "id": Binary { subtype: BinarySubtype::Uuid, bytes } },
        );
        command.insert("txnNumber", Bson::Int64(1));
        command.insert("startTransaction", true);
        command.insert("autocommit", false);
        run_ok(&store, "db", command);
    }
    assert_eq!(store.open_transaction_count(), bound);
    let refused = run(
        &store,
        "db",
        first(doc! { "find": "c", "filter": {} }, 0xff, 1),
    );
    assert_eq!(error_code(&refused), 146);
}

#[test]
fn the_reaper_drops_the_state_of_transactions_aborted_from_outside() {
    let store = new_store();
    store.set_transaction_lifetime(Duration::from_secs(5));
    insert(&store, "c", vec![doc! { "_id": 1 }]);
    run_ok(
        &store,
        "db",
        first(doc! { "find": "c", "filter": {} }, 1, 1),
    );
    assert_eq!(store.transaction_registry.held_count(), 1);
    // Any command 10 s later runs the reaper: the transaction expired, its state goes.
    let later = store.execute(
        "db",
        &doc! { "find": "c", "filter": {} },
        &CommandContext::new(at(10)),
    );
    assert!(later.is_ok());
    assert_eq!(store.open_transaction_count(), 0);
    assert_eq!(store.transaction_registry.held_count(), 0);
    assert_transient(&commit(&store, 1, 1), 251);
}

#[test]
fn private_copies_are_bounded_across_transactions_and_released_with_them() {
    let mut store = new_store();
    store.transaction_registry =
        std::sync::Arc::new(crate::transaction::TransactionRegistry::with_copy_limit(3));
    insert(&store, "c", vec![doc! { "_id": 1 }, doc! { "_id": 2 }]);
    run_ok(
        &store,
        "db",
        first(doc! { "find": "c", "filter": {} }, 1, 1),
    );
    let second = run(
        &store,
        "db",
        first(doc! { "find": "c", "filter": {} }, 2, 1),
    );
    assert_eq!(error_code(&second), 146);
    run_ok(&store, "admin", next(doc! { "abortTransaction": 1 }, 1, 1));
    run_ok(
        &store,
        "db",
        first(doc! { "find": "c", "filter": {} }, 2, 2),
    );
}

#[test]
fn transactions_are_counted_as_started_committed_and_aborted() {
    use crate::TransactionCounts;
    let store = new_store();
    let counts = |started, committed, aborted| TransactionCounts {
        started,
        committed,
        aborted,
    };
    assert_eq!(store.transaction_counts(), counts(0, 0, 0));
    let write = |id: i32| doc! { "insert": "c", "documents": [{ "_id": id }] };
    run_ok(&store, "db", first(write(1), 1, 1));
    assert_eq!(store.transaction_counts(), counts(1, 0, 0));
    assert_eq!(commit(&store, 1, 1).get_f64("ok").ok(), Some(1.0));
    assert_eq!(store.transaction_counts(), counts(1, 1, 0));
    // A retried commit answers as the first and counts nothing more.
    assert_eq!(commit(&store, 1, 1).get_f64("ok").ok(), Some(1.0));
    assert_eq!(store.transaction_counts(), counts(1, 1, 0));
    run_ok(&store, "db", first(write(2), 1, 2));
    assert_eq!(abort(&store, 1, 2).get_f64("ok").ok(), Some(1.0));
    assert_eq!(store.transaction_counts(), counts(2, 1, 1));
    // A newer transaction on the session ends the open one: aborted.
    run_ok(&store, "db", first(write(3), 2, 1));
    run_ok(&store, "db", first(write(4), 2, 2));
    assert_eq!(store.transaction_counts(), counts(4, 1, 2));
    assert_eq!(store.open_transaction_count(), 1);
}
