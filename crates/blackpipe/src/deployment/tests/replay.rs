//! When a retryable write is a pure replay (the members skip `onPrimaryTransactionalWrite`).

use bson::spec::BinarySubtype;
use bson::{Binary, Bson, DateTime, Document, doc};

use blackpipe_store::{CommandContext, Store};

fn session() -> Document {
    doc! { "id": Bson::Binary(Binary { subtype: BinarySubtype::Uuid, bytes: vec![7; 16] }) }
}

fn insert(ids: &[i32], txn_number: i64) -> Document {
    let documents: Vec<Bson> = ids
        .iter()
        .map(|id| Bson::from(doc! { "_id": *id }))
        .collect();
    doc! {
        "insert": "c",
        "documents": documents,
        "lsid": session(),
        "txnNumber": txn_number,
    }
}

fn run(store: &Store, command: &Document) {
    let outcome = store.execute("db", command, &CommandContext::new(DateTime::now()));
    assert!(outcome.is_ok(), "{}", outcome.reply);
}

#[test]
fn only_a_retry_of_fully_applied_statements_replays_entirely() {
    let store = Store::default();
    assert!(
        !store.replays_entirely(&insert(&[1], 1)),
        "nothing recorded yet"
    );
    assert_eq!(
        store.session_count(),
        0,
        "looking creates no session record"
    );
    run(&store, &insert(&[1], 1));
    assert!(store.replays_entirely(&insert(&[1], 1)));
    assert!(
        !store.replays_entirely(&insert(&[1, 2], 1)),
        "statement 1 is new and would be applied"
    );
    assert!(!store.replays_entirely(&insert(&[1], 2)), "a new txnNumber");
    let mut without_txn = insert(&[1], 1);
    without_txn.remove("txnNumber");
    assert!(
        !store.replays_entirely(&without_txn),
        "not a retryable write"
    );
}

#[test]
fn a_find_and_modify_retry_replays_entirely() {
    let store = Store::default();
    let command = doc! {
        "findAndModify": "c",
        "query": { "_id": 1 },
        "update": { "$set": { "x": 1 } },
        "upsert": true,
        "lsid": session(),
        "txnNumber": 3_i64,
    };
    assert!(!store.replays_entirely(&command));
    run(&store, &command);
    assert!(store.replays_entirely(&command));
}
