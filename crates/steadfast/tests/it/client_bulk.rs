//! `Client::bulk_write` against blackpipe: the crud specification's client bulk write prose
//! tests (batch splitting by `maxMessageSizeBytes`, the results cursor's `getMore` and its
//! failure), and a batch whose reply is lost, retried once with the same `txnNumber` and
//! applied once. The prose tests that need `maxWriteBatchSize + 1` models (splitting, write
//! concern errors and write errors across batches) run against a scripted server announcing
//! `maxWriteBatchSize: 3`: the splitting is the same, and 100 001 writes take a debug build of
//! blackpipe minutes (long enough for its monitors to time out).

use bson::{Bson, Document, doc};
use steadfast::error::{ErrorKind, Outcome, PartialBulkWriteResult};
use steadfast::options::{InsertOneModel, UpdateOneModel, WriteModel};
use steadfast::{Client, Namespace};

use blackpipe::scripted::{Matcher, ScriptedServer};

use crate::retry_support::{
    Harness, admin_command, fail_command, harness, primary_host, replica_set, started, txn_number,
    within,
};

/// mongod 8.0's limits, as blackpipe's hello announces them.
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

// The deployment runs in this process: a second worker keeps its monitors answering while
// one applies the large batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
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

/// A scripted standalone announcing `maxWriteBatchSize: 3`.
async fn small_batch_server() -> ScriptedServer {
    let server = crate::server().await;
    server.patch_hello(doc! { "maxWriteBatchSize": 3 });
    server
}

/// A `bulkWrite` reply for `count` inserts of which those at `failed` (batch indexes) were
/// refused, with an optional write concern error.
fn insert_reply(count: i32, failed: &[i32], write_concern_error: bool) -> Document {
    let results: Vec<Document> = failed
        .iter()
        .map(|idx| doc! { "ok": 0, "idx": idx, "code": 11000, "errmsg": "E11000 duplicate key" })
        .collect();
    let n_errors = i32::try_from(failed.len()).unwrap();
    let mut reply = doc! {
        "ok": 1,
        "cursor": { "id": 0_i64, "firstBatch": results, "ns": "admin.$cmd.bulkWrite" },
        "nErrors": n_errors,
        "nInserted": count - n_errors,
        "nMatched": 0, "nModified": 0, "nUpserted": 0, "nDeleted": 0,
    };
    if write_concern_error {
        reply.insert(
            "writeConcernError",
            doc! { "code": 91, "errmsg": "Replication is being shut down" },
        );
    }
    reply
}

/// Runs a bulk write of four inserts against `server`, answering each `bulkWrite` with the
/// next of `replies`; returns the outcome and the number of ops each command carried.
async fn four_inserts(
    ordered: bool,
    replies: Vec<Document>,
) -> (
    steadfast::Result<steadfast::results::SummaryBulkWriteResult>,
    Vec<usize>,
) {
    let server = small_batch_server().await;
    let client = crate::client(&server, "retryWrites=false").await;
    let models: Vec<WriteModel> = (0..4).map(|i| insert(doc! { "_id": i })).collect();
    let run = tokio::spawn(async move { client.bulk_write(models).ordered(ordered).await });
    let mut sizes = Vec::new();
    for reply in replies {
        let pending = within(server.next_request(Matcher::command("bulkWrite")))
            .await
            .expect("a bulkWrite command");
        sizes.push(pending.command().get_array("ops").map_or(0, Vec::len));
        pending.reply(reply).expect("the reply is sent");
    }
    let outcome = within(run).await.expect("no panic");
    (outcome, sizes)
}

#[tokio::test]
async fn more_models_than_max_write_batch_size_are_split_in_two_commands() {
    let replies = vec![insert_reply(3, &[], false), insert_reply(1, &[], false)];
    let (outcome, sizes) = four_inserts(true, replies).await;
    assert_eq!(outcome.expect("the bulk write").inserted_count, 4);
    assert_eq!(sizes, vec![3, 1]);
}

#[tokio::test]
async fn write_concern_errors_of_every_batch_are_collected() {
    let replies = vec![insert_reply(3, &[], true), insert_reply(1, &[], true)];
    let (outcome, sizes) = four_inserts(true, replies).await;
    let error = outcome.expect_err("write concern errors");
    let ErrorKind::BulkWrite(failure) = error.kind() else {
        panic!("a bulk write failure, got {error}");
    };
    assert_eq!(failure.write_concern_errors.len(), 2);
    let Some(PartialBulkWriteResult::Summary(partial)) = &failure.partial_result else {
        panic!("a summary partial result: {:?}", failure.partial_result);
    };
    assert_eq!(partial.inserted_count, 4);
    assert_eq!(sizes.len(), 2);
    assert_eq!(error.outcome(), Outcome::Applied);
}

#[tokio::test]
async fn unordered_write_errors_of_every_batch_are_reported_at_their_model_index() {
    let replies = vec![
        insert_reply(3, &[0, 1, 2], false),
        insert_reply(1, &[0], false),
    ];
    let (outcome, sizes) = four_inserts(false, replies).await;
    let error = outcome.expect_err("duplicates");
    let ErrorKind::BulkWrite(failure) = error.kind() else {
        panic!("a bulk write failure, got {error}");
    };
    let mut indexes: Vec<usize> = failure.write_errors.keys().copied().collect();
    indexes.sort_unstable();
    assert_eq!(
        indexes,
        vec![0, 1, 2, 3],
        "the second batch's idx 0 is model 3"
    );
    assert_eq!(sizes, vec![3, 1]);
    assert!(failure.partial_result.is_none(), "nothing was applied");
    assert_eq!(error.outcome(), Outcome::NotApplied);
}

#[tokio::test]
async fn an_ordered_write_error_stops_before_the_next_batch() {
    let replies = vec![insert_reply(3, &[0], false)];
    let (outcome, sizes) = four_inserts(true, replies).await;
    let error = outcome.expect_err("a duplicate");
    let ErrorKind::BulkWrite(failure) = error.kind() else {
        panic!("a bulk write failure, got {error}");
    };
    assert_eq!(failure.write_errors.len(), 1);
    assert_eq!(sizes, vec![3], "no second command");
    let partial = error.partial_write().expect("the account");
    assert_eq!(partial.not_executed, vec![1, 2, 3]);
}

#[tokio::test]
async fn an_unacknowledged_bulk_write_says_so_in_its_result() {
    let (_deployment, h, _) = setup().await;
    let unacknowledged = steadfast::options::WriteConcern::builder()
        .w(steadfast::options::Acknowledgment::Nodes(0))
        .build();
    let models = vec![insert(doc! { "_id": 1 }), insert(doc! { "_id": 2 })];
    let result = within(
        h.client
            .bulk_write(models)
            .ordered(false)
            .write_concern(unacknowledged),
    )
    .await
    .expect("an unacknowledged bulk write");
    assert!(!result.acknowledged, "{result:?}");
    assert_eq!(result.inserted_count, 0, "nothing reported");
    let command = &started(&h.events, "bulkWrite")[0].command;
    let w = command
        .get_document("writeConcern")
        .ok()
        .and_then(|wc| wc.get("w"));
    assert!(
        matches!(w, Some(Bson::Int32(0) | Bson::Int64(0))),
        "{command}"
    );

    let acknowledged = within(h.client.bulk_write(vec![insert(doc! { "_id": 3 })]))
        .await
        .expect("an acknowledged bulk write");
    assert!(acknowledged.acknowledged);
    assert_eq!(acknowledged.inserted_count, 1);
}
