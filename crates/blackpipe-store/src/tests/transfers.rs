//! Concurrent transfers in transactions: every reader sees the total balance unchanged, and
//! every committed transfer is applied exactly once.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use bson::{Binary, Bson, Document, doc, spec::BinarySubtype};

use super::{batch, new_store, run};
use crate::Store;

const ACCOUNTS: i32 = 5;
const INITIAL: i64 = 1_000;
const WORKERS: u8 = 4;
const TRANSFERS_PER_WORKER: i64 = 150;

fn in_transaction(mut command: Document, worker: u8, txn_number: i64, first: bool) -> Document {
    command.insert(
        "lsid",
        doc! { "id": Binary { subtype: BinarySubtype::Uuid, bytes: vec![worker; 16] } },
    );
    command.insert("txnNumber", Bson::Int64(txn_number));
    if first {
        command.insert("startTransaction", true);
    }
    command.insert("autocommit", false);
    command
}

fn ok(reply: &Document) -> bool {
    reply.get_f64("ok").ok() == Some(1.0) && !reply.contains_key("writeErrors")
}

fn move_amount(from: i32, to: i32, amount: i64) -> [Document; 2] {
    [
        doc! { "update": "accounts", "updates": [{ "q": { "_id": from }, "u": { "$inc": { "balance": -amount } } }] },
        doc! { "update": "accounts", "updates": [{ "q": { "_id": to }, "u": { "$inc": { "balance": amount } } }] },
    ]
}

/// Runs one transfer as transaction `txn_number`; true if it committed.
fn transfer(store: &Store, worker: u8, txn_number: i64, from: i32, to: i32) -> bool {
    let [debit, credit] = move_amount(from, to, 1);
    let statements = [
        in_transaction(
            doc! { "find": "accounts", "filter": { "_id": from } },
            worker,
            txn_number,
            true,
        ),
        in_transaction(debit, worker, txn_number, false),
        in_transaction(credit, worker, txn_number, false),
    ];
    for statement in statements {
        if !ok(&run(store, "db", statement)) {
            return false;
        }
    }
    let commit = in_transaction(doc! { "commitTransaction": 1 }, worker, txn_number, false);
    ok(&run(store, "admin", commit))
}

fn total(store: &Store) -> i64 {
    batch(&run(
        store,
        "db",
        doc! { "find": "accounts", "filter": {}, "batchSize": 100 },
    ))
    .iter()
    .map(|account| account.get_i64("balance").unwrap_or(i64::MIN / 8))
    .sum()
}

#[test]
fn concurrent_transfers_keep_the_total_and_apply_each_commit_once() {
    let store = Arc::new(new_store());
    let accounts: Vec<Document> = (0..ACCOUNTS)
        .map(|id| doc! { "_id": id, "balance": INITIAL })
        .collect();
    assert!(ok(&run(
        &store,
        "db",
        doc! { "insert": "accounts", "documents": accounts }
    )));
    let expected_total = INITIAL * i64::from(ACCOUNTS);
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (store, done) = (store.clone(), done.clone());
        thread::spawn(move || {
            let mut reads = 0_u64;
            while !done.load(Ordering::SeqCst) || reads == 0 {
                assert_eq!(
                    total(&store),
                    expected_total,
                    "a reader saw part of a transfer"
                );
                reads += 1;
            }
        })
    };
    let workers: Vec<_> = (1..=WORKERS)
        .map(|worker| {
            let store = store.clone();
            thread::spawn(move || {
                let mut committed = 0_i64;
                let mut txn_number = 0;
                while committed < TRANSFERS_PER_WORKER {
                    txn_number += 1;
                    let from = i32::from(worker) % ACCOUNTS;
                    let to = (from + 1 + (txn_number % 3) as i32) % ACCOUNTS;
                    if transfer(&store, worker, txn_number, from, to) {
                        committed += 1;
                    }
                }
                committed
            })
        })
        .collect();
    let committed: i64 = workers
        .into_iter()
        .map(|worker| worker.join().expect("a worker panicked"))
        .sum();
    done.store(true, Ordering::SeqCst);
    reader.join().expect("the reader saw a broken total");
    assert_eq!(total(&store), expected_total);
    assert_eq!(committed, i64::from(WORKERS) * TRANSFERS_PER_WORKER);
    // Each committed transfer is exactly two updates in the op log, nothing else was applied.
    assert_eq!(
        store.writes_applied("db.accounts"),
        u64::try_from(i64::from(ACCOUNTS) + 2 * committed).unwrap_or(0)
    );
}
