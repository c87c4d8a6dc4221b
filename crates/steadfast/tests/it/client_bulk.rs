//! `Client::bulk_write` against blackpipe: the crud specification's client bulk write prose
//! tests (batch splitting by `maxWriteBatchSize` and `maxMessageSizeBytes`, write concern
//! errors and write errors across batches, the results cursor's `getMore` and its failure),
//! and a batch whose reply is lost, retried once with the same `txnNumber` and applied once.

use bson::{Bson, Document, doc};
use steadfast::error::{ErrorKind, Outcome, PartialBulkWriteResult};
use steadfast::options::{InsertOneModel, UpdateOneModel, WriteModel};
use steadfast::{Client, Namespace};

use crate::retry_support::{
    Harness, admin_command, fail_command, harness, primary_host, replica_set, started, txn_number,
    within,
};

/// mongod 8.0's limits, as blackpipe's hello announces them.
const MAX_WRITE_BATCH_SIZE: usize = 100_000;
const MAX_BSON_OBJECT_SIZE: usize = 16 * 1024 * 1024;
const MAX_MESSAGE_SIZE_BYTES: usize = 48_000_000;

fn namespace() -> Namespace {
    Namespace::new("db", "coll")
}

fn insert(document: Document) -> WriteModel {
    InsertOneModel::builder()
        .namespace(namespace())
        .document(document)
        .build()
        .into()
}

/// The number of ops each `bulkWrite` command sent, in order.
fn ops_per_batch(harness: &Harness) -> Vec<usize> {
    started(&harness.events, "bulkWrite")
        .iter()
        .map(|e| e.command.get_array("ops").map_or(0, Vec::len))
        .collect()
}

async fn setup() -> (blackpipe::deployment::Deployment, Harness, String) {
    let deployment = replica_set().await;
    let host = primary_host(&deployment).await;
    let harness = harness(&deployment.uri(), "").await;
    (deployment, harness, host)
}

async fn count(client: &Client) -> u64 {
    within(
        client
            .database("db")
            .collection::<Document>("coll")
            .count_documents(doc! {}),
    )
    .await
    .expect("count")
}

#[tokio::test]
async fn more_models_than_max_write_batch_size_are_split_in_two_commands() {
    let (_deployment, harness, _) = setup().await;
    let models = vec![insert(doc! { "a": "b" }); MAX_WRITE_BATCH_SIZE + 1];
    let result = within(harness.client.bulk_write(models))
        .await
        .expect("the bulk write");
    assert_eq!(
        result.inserted_count,
        i64::try_from(MAX_WRITE_BATCH_SIZE + 1).unwrap()
    );
    assert_eq!(ops_per_batch(&harness), vec![MAX_WRITE_BATCH_SIZE, 1]);
}

#[tokio::test]
async fn ops_over_max_message_size_bytes_are_split_in_two_commands() {
    let (_deployment, harness, _) = setup().await;
    let document = doc! { "a": "b".repeat(MAX_BSON_OBJECT_SIZE - 500) };
    let models_count = MAX_MESSAGE_SIZE_BYTES / MAX_BSON_OBJECT_SIZE + 1;
    let models = vec![insert(document); models_count];
    let result = within(harness.client.bulk_write(models))
        .await
        .expect("the bulk write");
    assert_eq!(result.inserted_count, i64::try_from(models_count).unwrap());
    assert_eq!(ops_per_batch(&harness), vec![models_count - 1, 1]);
}

#[tokio::test]
async fn write_concern_errors_of_every_batch_are_collected() {
    let deployment = replica_set().await;
    let host = primary_host(&deployment).await;
    let harness = harness(&deployment.uri(), "&retryWrites=false").await;
    fail_command(
        &host,
        Bson::Document(doc! { "times": 2 }),
        doc! {
            "failCommands": ["bulkWrite"],
            "writeConcernError": { "code": 91, "errmsg": "Replication is being shut down" },
        },
    )
    .await;
    let models = vec![insert(doc! { "a": "b" }); MAX_WRITE_BATCH_SIZE + 1];
    let error = within(harness.client.bulk_write(models))
        .await
        .expect_err("write concern errors");
    let ErrorKind::BulkWrite(failure) = error.kind() else {
        panic!("a bulk write failure, got {error}");
    };
    assert_eq!(failure.write_concern_errors.len(), 2);
    let Some(PartialBulkWriteResult::Summary(partial)) = &failure.partial_result else {
        panic!("a summary partial result: {:?}", failure.partial_result);
    };
    assert_eq!(
        partial.inserted_count,
        i64::try_from(MAX_WRITE_BATCH_SIZE + 1).unwrap()
    );
    assert_eq!(ops_per_batch(&harness).len(), 2);
    assert_eq!(error.outcome(), Outcome::Applied);
}

#[tokio::test]
async fn write_errors_across_batches_unordered_all_reported_ordered_stops() {
    let (_deployment, harness, _) = setup().await;
    let coll = harness.client.database("db").collection::<Document>("coll");
    within(coll.insert_one(doc! { "_id": 1 }))
        .await
        .expect("seed");
    let models = vec![insert(doc! { "_id": 1 }); MAX_WRITE_BATCH_SIZE + 1];

    let unordered = within(harness.client.bulk_write(models.clone()).ordered(false))
        .await
        .expect_err("duplicates");
    let ErrorKind::BulkWrite(failure) = unordered.kind() else {
        panic!("a bulk write failure, got {unordered}");
    };
    assert_eq!(failure.write_errors.len(), MAX_WRITE_BATCH_SIZE + 1);
    assert_eq!(ops_per_batch(&harness).len(), 2);
    assert_eq!(unordered.outcome(), Outcome::NotApplied);

    harness.events.clear();
    let ordered = within(harness.client.bulk_write(models))
        .await
        .expect_err("a duplicate");
    let ErrorKind::BulkWrite(failure) = ordered.kind() else {
        panic!("a bulk write failure, got {ordered}");
    };
    assert_eq!(failure.write_errors.len(), 1);
    assert_eq!(ops_per_batch(&harness).len(), 1);
    let partial = ordered.partial_write().expect("the account");
    assert_eq!(partial.not_executed.len(), MAX_WRITE_BATCH_SIZE);
}

/// Two upserts whose `_id`s are half the document limit each: their results overflow one
/// reply batch.
fn large_upserts() -> Vec<WriteModel> {
    ["a", "b"]
        .into_iter()
        .map(|letter| {
            UpdateOneModel::builder()
                .namespace(namespace())
                .filter(doc! { "_id": letter.repeat(MAX_BSON_OBJECT_SIZE / 2) })
                .update(doc! { "$set": { "x": 1 } })
                .upsert(true)
                .build()
                .into()
        })
        .collect()
}

#[tokio::test]
async fn a_results_cursor_needing_get_more_is_read_to_its_end() {
    let (_deployment, harness, _) = setup().await;
    let result = within(harness.client.bulk_write(large_upserts()).verbose_results())
        .await
        .expect("the bulk write");
    assert_eq!(result.summary.upserted_count, 2);
    assert_eq!(result.update_results.len(), 2);
    assert!(!started(&harness.events, "getMore").is_empty());
}

#[tokio::test]
async fn a_failed_get_more_kills_the_cursor_and_keeps_the_partial_result() {
    let (_deployment, harness, host) = setup().await;
    fail_command(
        &host,
        Bson::Document(doc! { "times": 1 }),
        doc! { "failCommands": ["getMore"], "errorCode": 8 },
    )
    .await;
    let error = within(harness.client.bulk_write(large_upserts()).verbose_results())
        .await
        .expect_err("the getMore fails");
    let ErrorKind::BulkWrite(failure) = error.kind() else {
        panic!("a bulk write failure, got {error}");
    };
    let source = std::error::Error::source(&error)
        .and_then(|s| s.downcast_ref::<steadfast::Error>())
        .expect("the top-level error is the source");
    assert_eq!(source.code(), Some(8));
    let Some(PartialBulkWriteResult::Verbose(partial)) = &failure.partial_result else {
        panic!("a verbose partial result: {:?}", failure.partial_result);
    };
    assert_eq!(partial.summary.upserted_count, 2);
    assert_eq!(partial.update_results.len(), 1);
    assert!(!started(&harness.events, "getMore").is_empty());
    assert!(!started(&harness.events, "killCursors").is_empty());
}

#[tokio::test]
async fn a_batch_whose_reply_is_lost_is_retried_once_with_its_txn_number_and_applied_once() {
    let (_deployment, harness, host) = setup().await;
    fail_command(
        &host,
        Bson::Document(doc! { "times": 1 }),
        doc! { "failCommands": ["bulkWrite"], "closeConnection": true },
    )
    .await;
    let models: Vec<WriteModel> = (0..3).map(|i| insert(doc! { "_id": i })).collect();
    let result = within(harness.client.bulk_write(models))
        .await
        .expect("the retry succeeds");
    assert_eq!(result.inserted_count, 3);
    let attempts = started(&harness.events, "bulkWrite");
    assert_eq!(attempts.len(), 2, "one attempt and one retry");
    assert!(txn_number(&attempts[0]).is_some());
    assert_eq!(txn_number(&attempts[0]), txn_number(&attempts[1]));
    assert_eq!(count(&harness.client).await, 3, "applied exactly once");
}

#[tokio::test]
async fn a_batch_applied_but_whose_reply_is_lost_is_replayed_not_reapplied() {
    let (_deployment, harness, host) = setup().await;
    // Closes the connection after the write commits: the driver never sees the reply.
    admin_command(
        &host,
        doc! {
            "configureFailPoint": "onPrimaryTransactionalWrite",
            "mode": { "times": 1 },
            "data": { "closeConnection": true },
        },
    )
    .await;
    let models: Vec<WriteModel> = (0..3).map(|i| insert(doc! { "_id": i })).collect();
    let result = within(harness.client.bulk_write(models))
        .await
        .expect("the retry is answered from the transaction table");
    assert_eq!(result.inserted_count, 3);
    let attempts = started(&harness.events, "bulkWrite");
    assert_eq!(attempts.len(), 2, "one attempt and one retry");
    assert_eq!(txn_number(&attempts[0]), txn_number(&attempts[1]));
    assert_eq!(count(&harness.client).await, 3, "applied exactly once");
}
