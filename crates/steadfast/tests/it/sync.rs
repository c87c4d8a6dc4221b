//! The blocking API (`steadfast::sync`) against blackpipe, from plain `#[test]`s: the program
//! has no runtime of its own; the deployment runs on a runtime the test keeps for it, which
//! the test thread never enters. Also the refusal from inside an async runtime.

use std::sync::Arc;
use std::time::Duration;

use blackpipe::deployment::Deployment;
use bson::{Document, doc};
use steadfast::ErrorKind;
use steadfast::change_stream::event::OperationType;
use steadfast::event::EventRecorder;
use steadfast::options::ClientOptions;
use steadfast::sync::{Client, Collection};
use tokio::runtime::Runtime;

use crate::retry_support::{self, APP, started};

/// A replica set served by a runtime of its own, and a blocking client for it that records
/// its events.
struct BlockingSet {
    client: Client,
    events: Arc<EventRecorder>,
    deployment: Option<Deployment>,
    server_runtime: Runtime,
}

impl BlockingSet {
    /// Starts the set; `query` is appended to the client's connection string.
    fn start(query: &str) -> Self {
        let server_runtime = Runtime::new().expect("the deployment's runtime starts");
        let deployment = server_runtime.block_on(retry_support::replica_set());
        let uri = format!(
            "{}&appName={APP}&heartbeatFrequencyMS=500{query}",
            deployment.uri()
        );
        let events = Arc::new(EventRecorder::new());
        let mut options = ClientOptions::parse(uri)
            .run()
            .expect("valid connection string");
        options.event_listeners.push(events.clone());
        let client = Client::with_options(options).expect("the client starts");
        BlockingSet {
            client,
            events,
            deployment: Some(deployment),
            server_runtime,
        }
    }

    fn deployment(&self) -> &Deployment {
        self.deployment.as_ref().expect("running until dropped")
    }

    fn collection(&self, name: &str) -> Collection<Document> {
        self.client.database("sync").collection(name)
    }

    /// The primary's host, once there is one.
    fn primary_host(&self) -> String {
        self.server_runtime
            .block_on(retry_support::primary_host(self.deployment()))
    }
}

impl Drop for BlockingSet {
    fn drop(&mut self) {
        self.client.clone().shutdown().run();
        // The servers stop in their runtime's context.
        let deployment = self.deployment.take();
        self.server_runtime
            .block_on(async move { drop(deployment) });
    }
}

#[test]
fn a_crud_round_trip_blocks_until_each_operation_is_done() {
    let set = BlockingSet::start("");
    let orders = set.collection("orders");
    let inserted = orders
        .insert_one(doc! { "_id": 1, "sku": "pen", "qty": 2 })
        .run()
        .expect("the insert");
    assert_eq!(inserted.inserted_id, bson::Bson::Int32(1));
    let updated = orders
        .update_one(doc! { "_id": 1 }, doc! { "$inc": { "qty": 3 } })
        .run()
        .expect("the update");
    assert_eq!(updated.modified_count, 1);
    let found = orders
        .find_one(doc! { "sku": "pen" })
        .run()
        .expect("the query")
        .expect("the document");
    assert_eq!(found.get_i32("qty").ok(), Some(5));
    assert_eq!(orders.count_documents(doc! {}).run().expect("the count"), 1);
    let deleted = orders
        .delete_one(doc! { "_id": 1 })
        .run()
        .expect("the delete");
    assert_eq!(deleted.deleted_count, 1);
    assert_eq!(
        orders.find_one(doc! {}).run().expect("the query"),
        None,
        "the collection is empty again"
    );
}

#[test]
fn a_cursor_iterates_over_several_batches() {
    let set = BlockingSet::start("");
    let items = set.collection("items");
    items
        .insert_many((0..23).map(|i| doc! { "_id": i }))
        .run()
        .expect("the inserts");
    let cursor = items
        .find(doc! {})
        .sort(doc! { "_id": 1 })
        .batch_size(5)
        .run()
        .expect("the cursor opens");
    let ids: Vec<i32> = cursor
        .map(|document| {
            document
                .expect("each document")
                .get_i32("_id")
                .expect("an id")
        })
        .collect();
    assert_eq!(ids, (0..23).collect::<Vec<_>>());
    // 23 documents in batches of 5: the find's first batch, then four getMores.
    assert_eq!(started(&set.events, "getMore").len(), 4);
}

#[test]
fn a_transaction_run_by_and_run_commits_its_writes() {
    let set = BlockingSet::start("");
    let accounts = set.collection("accounts");
    accounts
        .insert_many([
            doc! { "_id": 1, "balance": 100 },
            doc! { "_id": 2, "balance": 0 },
        ])
        .run()
        .expect("the accounts exist");
    let mut session = set.client.start_session().run().expect("a session");
    let calls = session
        .start_transaction()
        .and_run((&accounts, 0), |session, (accounts, calls)| {
            *calls += 1;
            accounts
                .update_one(doc! { "_id": 1 }, doc! { "$inc": { "balance": -10 } })
                .session(&mut *session)
                .run()?;
            accounts
                .update_one(doc! { "_id": 2 }, doc! { "$inc": { "balance": 10 } })
                .session(&mut *session)
                .run()?;
            Ok(*calls)
        })
        .expect("the transaction commits");
    assert_eq!(calls, 1);
    assert!(!session.in_transaction());
    assert_eq!(started(&set.events, "commitTransaction").len(), 1);
    let mut balances: Vec<(i32, i32)> = accounts
        .find(doc! {})
        .run()
        .expect("the cursor opens")
        .map(|d| {
            let d = d.expect("each account");
            (d.get_i32("_id").unwrap(), d.get_i32("balance").unwrap())
        })
        .collect();
    balances.sort_unstable();
    assert_eq!(balances, vec![(1, 90), (2, 10)]);
}

#[test]
fn a_transaction_started_and_committed_by_hand_through_a_session_cursor() {
    let set = BlockingSet::start("");
    let items = set.collection("session_items");
    items
        .insert_many((0..7).map(|i| doc! { "_id": i }))
        .run()
        .expect("the inserts");
    let mut session = set.client.start_session().run().expect("a session");
    session.start_transaction().run().expect("started");
    let mut cursor = items
        .find(doc! {})
        .batch_size(3)
        .session(&mut session)
        .run()
        .expect("the cursor opens");
    let mut ids: Vec<i32> = cursor
        .stream(&mut session)
        .map(|d| d.expect("each document").get_i32("_id").expect("an id"))
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..7).collect::<Vec<_>>());
    session.commit_transaction().run().expect("the commit");
    let lsids: Vec<_> = started(&set.events, "getMore")
        .iter()
        .map(retry_support::lsid)
        .collect();
    assert_eq!(lsids.len(), 2);
    assert!(lsids.iter().all(|lsid| *lsid == Some(session.id().clone())));
}

#[test]
fn a_duplicate_key_is_reported_as_the_servers_error() {
    let set = BlockingSet::start("");
    let orders = set.collection("unique");
    orders
        .insert_one(doc! { "_id": 7 })
        .run()
        .expect("the first insert");
    let error = orders
        .insert_one(doc! { "_id": 7 })
        .run()
        .expect_err("the second insert of _id 7");
    assert_eq!(error.code(), Some(11000), "{error}");
}

#[test]
fn a_change_stream_yields_the_insert_made_after_it_opened() {
    let set = BlockingSet::start("");
    let orders = set.collection("watched");
    let mut stream = orders
        .watch()
        .max_await_time(Duration::from_millis(10))
        .run()
        .expect("the change stream opens");
    orders
        .insert_one(doc! { "_id": 42 })
        .run()
        .expect("the insert");
    let event = stream
        .next()
        .expect("the stream is alive")
        .expect("the event");
    assert_eq!(event.operation_type, OperationType::Insert);
    assert_eq!(
        event
            .document_key
            .expect("a document key")
            .get_i32("_id")
            .ok(),
        Some(42)
    );
    assert!(stream.resume_token().is_some());
}

#[test]
fn a_stepdown_between_writes_is_retried_on_the_new_primary() {
    // Polling with a long heartbeat: the client cannot learn of the stepdown before its
    // insert does, so the insert's first attempt meets it.
    let set = BlockingSet::start("&serverMonitoringMode=poll&heartbeatFrequencyMS=60000");
    let orders = set.collection("failover");
    orders
        .insert_one(doc! { "_id": 0 })
        .run()
        .expect("the warm-up");
    let old_primary = set.primary_host();

    // The deployment schedules the election on its own runtime.
    set.server_runtime
        .block_on(async { set.deployment().step_down(Duration::from_secs(60)) })
        .expect("the primary steps down");
    orders
        .insert_one(doc! { "_id": 1 })
        .run()
        .expect("the insert, retried on the new primary");

    let inserts = started(&set.events, "insert");
    assert_eq!(
        inserts.len(),
        3,
        "warm-up, the failed attempt and its retry"
    );
    assert_eq!(inserts[1].connection.address.to_string(), old_primary);
    assert_ne!(set.primary_host(), old_primary);
    assert_eq!(
        inserts[2].connection.address.to_string(),
        set.primary_host()
    );
    assert_eq!(
        retry_support::txn_number(&inserts[1]),
        retry_support::txn_number(&inserts[2])
    );
    assert_eq!(set.deployment().store().writes_applied("sync.failover"), 2);
}

#[tokio::test]
async fn inside_an_async_runtime_the_blocking_api_refuses_instead_of_blocking() {
    let refused = Client::with_uri_str("mongodb://127.0.0.1:9/").expect_err("refused");
    assert!(
        matches!(refused.kind(), ErrorKind::InvalidArgument { .. }),
        "{refused}"
    );
    assert!(refused.to_string().contains("async runtime"), "{refused}");

    // Creating a client does not block, so it is allowed; running an action is not.
    let options = ClientOptions::parse("mongodb://127.0.0.1:9/")
        .await
        .expect("valid connection string");
    let client = Client::with_options(options).expect("the client is created");
    let error = client
        .database("db")
        .collection::<Document>("c")
        .insert_one(doc! {})
        .run()
        .expect_err("refused");
    assert!(
        matches!(error.kind(), ErrorKind::InvalidArgument { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("use the async API"), "{error}");
}

#[test]
fn a_gridfs_file_written_and_read_through_std_io_round_trips() {
    use std::io::{Read as _, Write as _};

    use steadfast::options::GridFsBucketOptions;

    let set = BlockingSet::start("");
    let bucket = set.client.database("sync").gridfs_bucket(
        GridFsBucketOptions::builder()
            .chunk_size_bytes(Some(1000))
            .build(),
    );
    let bytes: Vec<u8> = (0..3500_u32).map(|i| (i % 251) as u8).collect();
    let mut upload = bucket
        .open_upload_stream("numbers.bin")
        .run()
        .expect("the upload opens");
    for piece in bytes.chunks(700) {
        upload.write_all(piece).expect("each piece");
    }
    upload.close().expect("the upload completes");
    let id = upload.id().clone();

    let file = bucket
        .find_one(doc! { "filename": "numbers.bin" })
        .run()
        .expect("the query")
        .expect("the files document");
    assert_eq!(file.length, 3500);
    let mut download = bucket
        .open_download_stream(id)
        .run()
        .expect("the download opens");
    let mut read = Vec::new();
    download.read_to_end(&mut read).expect("the whole file");
    assert_eq!(read, bytes);
    // 3500 bytes in chunks of 1000: four chunks.
    assert_eq!(
        set.deployment()
            .store()
            .documents("sync", "fs.chunks")
            .len(),
        4
    );
}

#[test]
fn and_run_runs_the_callback_again_after_a_transient_error_and_commits_once() {
    let set = BlockingSet::start("");
    let accounts = set.collection("retried");
    accounts
        .insert_one(doc! { "_id": 1, "balance": 100 })
        .run()
        .expect("the account exists");
    // The transaction's first update fails once with a write conflict, which the server
    // labels TransientTransactionError: the convenient API runs the whole callback again.
    let primary = set.primary_host();
    set.server_runtime.block_on(retry_support::fail_command(
        &primary,
        doc! { "times": 1 }.into(),
        doc! { "failCommands": ["update"], "errorCode": 112,
        "errorLabels": ["TransientTransactionError"] },
    ));
    let mut session = set.client.start_session().run().expect("a session");
    let calls = session
        .start_transaction()
        .and_run(0, |session, calls| {
            *calls += 1;
            accounts
                .update_one(doc! { "_id": 1 }, doc! { "$inc": { "balance": -10 } })
                .session(&mut *session)
                .run()?;
            Ok(*calls)
        })
        .expect("the second attempt commits");
    assert_eq!(calls, 2);
    assert_eq!(started(&set.events, "abortTransaction").len(), 1);
    assert_eq!(started(&set.events, "commitTransaction").len(), 1);
    let account = accounts
        .find_one(doc! { "_id": 1 })
        .run()
        .expect("the query")
        .expect("the account");
    assert_eq!(account.get_i32("balance").ok(), Some(90), "debited once");
}

#[test]
fn an_operations_timeout_applies_in_blocking_form() {
    let set = BlockingSet::start("");
    let orders = set.collection("timed");
    orders
        .insert_one(doc! { "_id": 1 })
        .timeout(Duration::from_secs(2))
        .run()
        .expect("the insert");
    // The server is given what is left of the 2 s as maxTimeMS: the timeout was in force,
    // shown without measuring time.
    let sent = started(&set.events, "insert");
    let max_time = sent
        .last()
        .and_then(|insert| insert.command.get("maxTimeMS"))
        .and_then(|value| match value {
            bson::Bson::Int32(n) => Some(i64::from(*n)),
            bson::Bson::Int64(n) => Some(*n),
            _ => None,
        })
        .expect("maxTimeMS under timeoutMS");
    assert!((1..=2_000).contains(&max_time), "{max_time}");
}

#[test]
fn the_handles_own_methods_list_index_count_and_drop() {
    let set = BlockingSet::start("");
    let client = &set.client;
    let db = client.database("sync_handles");
    db.create_collection("made").run().expect("created");
    assert_eq!(
        db.list_collection_names().run().expect("the names"),
        vec!["made".to_string()]
    );
    assert!(
        client
            .list_database_names()
            .run()
            .expect("the names")
            .contains(&"sync_handles".to_string())
    );
    let made = db.collection::<Document>("made");
    made.insert_many((1..=3).map(|i| doc! { "_id": i, "sku": format!("s{}", i % 2) }))
        .run()
        .expect("the inserts");
    let index = made
        .create_index(steadfast::IndexModel::new(doc! { "sku": 1 }))
        .run()
        .expect("the index");
    assert_eq!(index.index_name, "sku_1");
    let mut names = made.list_index_names().run().expect("the index names");
    names.sort_unstable();
    assert_eq!(names, ["_id_", "sku_1"]);
    let mut skus = made.distinct("sku", doc! {}).run().expect("the values");
    skus.sort_by_key(|sku| sku.to_string());
    assert_eq!(skus, [bson::Bson::from("s0"), bson::Bson::from("s1")]);
    let after = made
        .find_one_and_update(doc! { "_id": 1 }, doc! { "$set": { "sku": "s9" } })
        .return_document(steadfast::options::ReturnDocument::After)
        .run()
        .expect("the update")
        .expect("the document");
    assert_eq!(after.get_str("sku").ok(), Some("s9"));
    assert_eq!(made.estimated_document_count().run().expect("the count"), 3);

    let mut session = client.start_session().run().expect("a session");
    assert!(session.id().contains_key("id"));
    let mut cursor = made
        .find(doc! {})
        .batch_size(1)
        .session(&mut session)
        .run()
        .expect("the cursor opens");
    assert_eq!(cursor.iter(&mut session).count(), 3);
    assert!(session.cluster_time().is_some());

    made.drop_index("sku_1").run().expect("dropped");
    assert_eq!(made.list_index_names().run().expect("the names"), ["_id_"]);
    db.drop().run().expect("the database dropped");
    assert!(
        !client
            .list_database_names()
            .run()
            .expect("the names")
            .contains(&"sync_handles".to_string())
    );
}
