//! The truth about partly applied writes: an error never says "not applied" when something may
//! have been written, and it carries what the earlier batches applied.
//!
//! The scripted server announces `maxWriteBatchSize: 2`, so `insert_many` of five documents is
//! sent as three insert commands ([0, 1], [2, 3], [4]) whose replies each test scripts. The
//! server is a standalone, where writes are not retryable: every batch has one attempt.

use blackpipe::scripted::{Matcher, PendingRequest, ScriptedServer};
use bson::{Bson, Document, doc};
use steadfast::error::{Error, ErrorKind, Outcome};

use crate::{client, server};

/// A standalone scripted server that cuts inserts into batches of two.
async fn small_batch_server() -> ScriptedServer {
    let server = server().await;
    server.patch_hello(doc! { "maxWriteBatchSize": 2 });
    server
}

/// Starts `insert_many` of documents `_id` 0..5, answers each insert command in turn with
/// `answers`, and returns the operation's error.
async fn insert_five(ordered: bool, answers: Vec<Box<dyn FnOnce(PendingRequest) + Send>>) -> Error {
    let server = small_batch_server().await;
    let client = client(&server, "").await;
    let items = client.database("db").collection::<Document>("items");
    let run = tokio::spawn(async move {
        items
            .insert_many((0..5).map(|i| doc! { "_id": i }))
            .ordered(ordered)
            .await
    });
    for answer in answers {
        let pending = server
            .next_request(Matcher::command("insert"))
            .await
            .expect("an insert command");
        answer(pending);
    }
    let error = run
        .await
        .expect("no panic")
        .expect_err("the insert must fail");
    client.shutdown().await;
    error
}

/// `ok: 0` with `NoWritesPerformed`: the server says the command wrote nothing.
fn refused_unwritten(pending: PendingRequest) {
    pending
        .reply(doc! {
            "ok": 0, "code": 2, "codeName": "BadValue", "errmsg": "no",
            "errorLabels": ["NoWritesPerformed"],
        })
        .unwrap()
}

fn inserted(n: i32) -> Box<dyn FnOnce(PendingRequest) + Send> {
    Box::new(move |pending| pending.reply(doc! { "n": n, "ok": 1 }).unwrap())
}

#[tokio::test]
async fn a_later_batch_lost_after_sending_is_ambiguous_and_keeps_the_first_batch() {
    let error = insert_five(
        true,
        vec![inserted(2), Box::new(|pending| pending.hang_up().unwrap())],
    )
    .await;
    assert!(error.is_network_error(), "{error}");
    assert_eq!(error.outcome(), Outcome::Ambiguous);
    let partial = error
        .partial_write()
        .expect("the partial result travels with the error");
    assert_eq!(partial.executed, vec![0, 1]);
    assert_eq!(partial.applied.inserted_count, 2);
    assert_eq!(partial.applied.inserted_ids.get(&1), Some(&Bson::Int32(1)));
    assert_eq!(partial.unknown, vec![2, 3], "the lost batch");
    assert_eq!(partial.not_executed, vec![4], "the batch never sent");
}

#[tokio::test]
async fn a_later_batch_refused_as_a_whole_is_partly_applied_not_not_applied() {
    let error = insert_five(true, vec![inserted(2), Box::new(refused_unwritten)]).await;
    assert_eq!(error.code(), Some(2), "{error}");
    assert_eq!(error.outcome(), Outcome::PartlyApplied);
    let partial = error.partial_write().expect("a partial result");
    assert_eq!(partial.executed, vec![0, 1]);
    assert!(partial.unknown.is_empty());
    assert_eq!(partial.not_executed, vec![2, 3, 4]);
}

#[tokio::test]
async fn an_unordered_insert_with_a_duplicate_key_reports_what_went_in() {
    let duplicate = |pending: PendingRequest| {
        pending
            .reply(doc! {
                "n": 1,
                "writeErrors": [ { "index": 1, "code": 11000, "errmsg": "E11000 duplicate key" } ],
                "ok": 1,
            })
            .unwrap()
    };
    let error = insert_five(false, vec![Box::new(duplicate), inserted(2), inserted(1)]).await;
    let ErrorKind::InsertMany(failure) = error.kind() else {
        panic!("an insert_many failure, got {error}");
    };
    assert_eq!(
        failure.write_errors.as_deref().unwrap_or_default()[0].index,
        1
    );
    assert_eq!(error.outcome(), Outcome::PartlyApplied);
    let partial = error.partial_write().expect("a partial result");
    assert_eq!(partial.executed, vec![0, 2, 3, 4]);
    assert_eq!(partial.applied.inserted_count, 4);
    let mut ids: Vec<usize> = partial.applied.inserted_ids.keys().copied().collect();
    ids.sort_unstable();
    assert_eq!(ids, vec![0, 2, 3, 4], "every id but the duplicate's");
    assert!(partial.not_executed.is_empty() && partial.unknown.is_empty());
}

#[tokio::test]
async fn an_acknowledged_reply_that_cannot_be_read_is_ambiguous() {
    // `ok: 1` with a write error outside the batch: the server ran the command, the driver
    // cannot tell which statements it applied.
    let unreadable = |pending: PendingRequest| {
        pending
            .reply(doc! {
                "n": 2,
                "writeErrors": [ { "index": 7, "code": 11000, "errmsg": "dup" } ],
                "ok": 1,
            })
            .unwrap()
    };
    let error = insert_five(true, vec![Box::new(unreadable)]).await;
    assert!(error.is_protocol_error(), "{error}");
    assert_eq!(error.outcome(), Outcome::Ambiguous);
    let partial = error.partial_write().expect("a partial result");
    assert_eq!(partial.unknown, vec![0, 1]);
    assert_eq!(partial.not_executed, vec![2, 3, 4]);
}

#[tokio::test]
async fn a_single_insert_refused_before_anything_ran_is_not_applied() {
    let error = insert_five(true, vec![Box::new(refused_unwritten)]).await;
    assert_eq!(error.outcome(), Outcome::NotApplied);
    let partial = error.partial_write().expect("a partial result");
    assert!(partial.executed.is_empty());
    assert_eq!(partial.not_executed, vec![0, 1, 2, 3, 4]);
}

#[tokio::test]
async fn a_later_batch_failing_with_a_plain_command_error_may_have_run() {
    // Without `NoWritesPerformed` an `ok: 0` does not promise that nothing of the batch ran.
    let error = insert_five(
        true,
        vec![
            inserted(2),
            Box::new(|pending| {
                pending
                    .reply(doc! { "ok": 0, "code": 2, "codeName": "BadValue", "errmsg": "no" })
                    .unwrap()
            }),
        ],
    )
    .await;
    assert_eq!(error.outcome(), Outcome::Ambiguous);
    let partial = error.partial_write().expect("a partial result");
    assert_eq!(partial.executed, vec![0, 1]);
    assert_eq!(partial.unknown, vec![2, 3]);
    assert_eq!(partial.not_executed, vec![4]);
}
