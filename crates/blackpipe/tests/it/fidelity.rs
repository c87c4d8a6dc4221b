//! Fail points as the official `mongodb` driver sees them.
//!
//! These tests talk to the deployment only through commands (`configureFailPoint`) and the
//! official driver, so they run unchanged against a real replica set started with
//! `--setParameter enableTestCommands=1`: set `BLACKPIPE_FIDELITY_URI` to its connection
//! string (e.g. `mongodb://127.0.0.1:27017/?replicaSet=rs0`). Without it they start a
//! blackpipe replica set. Checks that need blackpipe's Rust API are skipped against mongod.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{Document, doc};
use mongodb::error::{Error, ErrorKind, WriteFailure};
use mongodb::event::EventHandler;
use mongodb::event::command::CommandEvent;
use mongodb::event::sdam::SdamEvent;
use mongodb::options::ClientOptions;
use mongodb::{Client, Collection};
use tokio::sync::mpsc;

use crate::support::within;

/// What a fidelity test runs against.
pub(crate) struct Target {
    pub(crate) uri: String,
    /// `None` when running against an external mongod.
    pub(crate) deployment: Option<Deployment>,
}

impl Target {
    /// The external deployment named by `BLACKPIPE_FIDELITY_URI`, or a blackpipe replica set.
    pub(crate) async fn replica_set() -> Self {
        if let Ok(uri) = std::env::var("BLACKPIPE_FIDELITY_URI") {
            return Self {
                uri,
                deployment: None,
            };
        }
        let deployment = Deployment::start(DeploymentConfig::replica_set(3).with_seed(5))
            .await
            .expect("the deployment starts");
        Self {
            uri: deployment.uri(),
            deployment: Some(deployment),
        }
    }
}

/// Collected command events, for counting attempts.
#[derive(Clone, Default)]
pub(crate) struct CommandLog {
    events: Arc<Mutex<Vec<CommandEvent>>>,
}

impl CommandLog {
    fn handler(&self) -> EventHandler<CommandEvent> {
        let events = Arc::clone(&self.events);
        EventHandler::callback(move |event| {
            events.lock().unwrap().push(event);
        })
    }

    /// How many times `name` was sent.
    pub(crate) fn started(&self, name: &str) -> usize {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter(|event| matches!(event, CommandEvent::Started(e) if e.command_name == name))
            .count()
    }

    /// The failures of `name`, in order.
    pub(crate) fn failures(&self, name: &str) -> Vec<Error> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter_map(|event| match event {
                CommandEvent::Failed(e) if e.command_name == name => Some(e.failure.clone()),
                _ => None,
            })
            .collect()
    }
}

/// Options every test client shares: a short heartbeat, a bounded selection timeout.
pub(crate) async fn client_options(uri: &str, app_name: &str) -> ClientOptions {
    let mut options = ClientOptions::parse(uri).await.expect("valid uri");
    options.app_name = Some(app_name.to_owned());
    options.heartbeat_freq = Some(Duration::from_millis(500));
    options.server_selection_timeout = Some(Duration::from_secs(15));
    options
}

/// A client whose command events go to `log`.
pub(crate) async fn logged_client(uri: &str, app_name: &str, log: &CommandLog) -> Client {
    let mut options = client_options(uri, app_name).await;
    options.command_event_handler = Some(log.handler());
    Client::with_options(options).expect("client options are valid")
}

/// A client whose SDAM events are delivered through the returned receiver.
pub(crate) async fn monitored_client(
    uri: &str,
    app_name: &str,
) -> (Client, mpsc::UnboundedReceiver<SdamEvent>) {
    let (sender, receiver) = mpsc::unbounded_channel();
    let mut options = client_options(uri, app_name).await;
    options.sdam_event_handler = Some(EventHandler::callback(move |event| {
        let _ = sender.send(event);
    }));
    (
        Client::with_options(options).expect("client options are valid"),
        receiver,
    )
}

async fn configure(client: &Client, command: Document) -> Document {
    client
        .database("admin")
        .run_command(command)
        .await
        .expect("configureFailPoint succeeds")
}

async fn disable(client: &Client, name: &str) -> Document {
    configure(client, doc! { "configureFailPoint": name, "mode": "off" }).await
}

fn collection(client: &Client, name: &str) -> Collection<Document> {
    client.database("fidelity").collection(name)
}

/// A fresh, empty collection with a unique name (tests may share an external mongod).
async fn fresh_collection(client: &Client, prefix: &str) -> Collection<Document> {
    let name = format!("{prefix}_{}", bson::oid::ObjectId::new().to_hex());
    let collection = collection(client, &name);
    collection.drop().await.expect("drop succeeds");
    collection
}

/// `count` of a configureFailPoint reply, whatever integer type the server chose.
fn count_of(reply: &Document) -> i64 {
    match reply.get("count") {
        Some(bson::Bson::Int32(count)) => i64::from(*count),
        Some(bson::Bson::Int64(count)) => *count,
        other => panic!("no integral count in {reply}: {other:?}"),
    }
}

fn command_code(error: &Error) -> Option<i32> {
    match error.kind.as_ref() {
        ErrorKind::Command(command) => Some(command.code),
        _ => None,
    }
}

#[tokio::test]
async fn configure_fail_point_replies_with_the_trigger_count() {
    let target = Target::replica_set().await;
    let log = CommandLog::default();
    let client = logged_client(&target.uri, "fp-count", &log).await;
    let reply = configure(
        &client,
        doc! {
            "configureFailPoint": "failCommand",
            "mode": {"times": 2},
            "data": {"failCommands": ["ping"], "errorCode": 2, "appName": "fp-count"},
        },
    )
    .await;
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0, "{reply}");
    // `count` is the process's running total (mongod's timesEntered): compare differences.
    let entered_before = count_of(&reply);
    let admin = client.database("admin");
    for _ in 0..2 {
        let error = admin.run_command(doc! { "ping": 1 }).await.unwrap_err();
        assert_eq!(command_code(&error), Some(2), "{error}");
    }
    admin.run_command(doc! { "ping": 1 }).await.unwrap();
    let reply = disable(&client, "failCommand").await;
    assert_eq!(count_of(&reply) - entered_before, 2, "{reply}");
    client.shutdown().await;
}

#[tokio::test]
async fn retryable_error_code_is_retried_once_and_the_write_lands_once() {
    let target = Target::replica_set().await;
    let log = CommandLog::default();
    let client = logged_client(&target.uri, "fp-retry", &log).await;
    let collection = fresh_collection(&client, "retry").await;
    configure(
        &client,
        doc! {
            "configureFailPoint": "failCommand",
            "mode": {"times": 1},
            "data": {"failCommands": ["insert"], "errorCode": 91, "appName": "fp-retry"},
        },
    )
    .await;
    collection.insert_one(doc! { "_id": 1 }).await.unwrap();
    assert_eq!(log.started("insert"), 2);
    let failures = log.failures("insert");
    assert_eq!(failures.len(), 1);
    assert_eq!(command_code(&failures[0]), Some(91));
    assert!(failures[0].contains_label("RetryableWriteError"));
    assert_eq!(collection.count_documents(doc! {}).await.unwrap(), 1);
    disable(&client, "failCommand").await;
    client.shutdown().await;
}

#[tokio::test]
async fn error_labels_replace_the_server_defaults() {
    let target = Target::replica_set().await;
    let log = CommandLog::default();
    let client = logged_client(&target.uri, "fp-labels", &log).await;
    let collection = fresh_collection(&client, "labels").await;
    // An empty list removes the label mongod would add: the driver does not retry.
    configure(
        &client,
        doc! {
            "configureFailPoint": "failCommand",
            "mode": {"times": 1},
            "data": {"failCommands": ["insert"], "errorCode": 91, "errorLabels": [], "appName": "fp-labels"},
        },
    )
    .await;
    let error = collection.insert_one(doc! { "_id": 1 }).await.unwrap_err();
    assert_eq!(command_code(&error), Some(91));
    assert!(!error.contains_label("RetryableWriteError"));
    assert_eq!(log.started("insert"), 1);
    // A label on a non-retryable code makes the driver retry.
    configure(
        &client,
        doc! {
            "configureFailPoint": "failCommand",
            "mode": {"times": 1},
            "data": {"failCommands": ["insert"], "errorCode": 2, "errorLabels": ["RetryableWriteError"], "appName": "fp-labels"},
        },
    )
    .await;
    collection.insert_one(doc! { "_id": 2 }).await.unwrap();
    assert_eq!(log.started("insert"), 3);
    assert_eq!(collection.count_documents(doc! {}).await.unwrap(), 1);
    disable(&client, "failCommand").await;
    client.shutdown().await;
}

#[tokio::test]
async fn close_connection_is_a_network_error_the_driver_retries() {
    let target = Target::replica_set().await;
    let log = CommandLog::default();
    let client = logged_client(&target.uri, "fp-close", &log).await;
    let collection = fresh_collection(&client, "close").await;
    configure(
        &client,
        doc! {
            "configureFailPoint": "failCommand",
            "mode": {"times": 1},
            "data": {"failCommands": ["insert"], "closeConnection": true, "appName": "fp-close"},
        },
    )
    .await;
    collection.insert_one(doc! { "_id": 1 }).await.unwrap();
    let failures = log.failures("insert");
    assert_eq!(failures.len(), 1);
    assert!(
        matches!(failures[0].kind.as_ref(), ErrorKind::Io(_)),
        "a network error: {}",
        failures[0]
    );
    assert_eq!(collection.count_documents(doc! {}).await.unwrap(), 1);
    disable(&client, "failCommand").await;
    client.shutdown().await;
}

#[tokio::test]
async fn write_concern_error_comes_after_the_write_is_applied() {
    let target = Target::replica_set().await;
    let log = CommandLog::default();
    let client = logged_client(&target.uri, "fp-wce", &log).await;
    let collection = fresh_collection(&client, "wce").await;
    // A retryable code: the driver retries and the server replays the recorded result.
    configure(
        &client,
        doc! {
            "configureFailPoint": "failCommand",
            "mode": {"times": 1},
            "data": {
                "failCommands": ["insert"], "appName": "fp-wce",
                "writeConcernError": {"code": 91, "errmsg": "Replication is being shut down"},
            },
        },
    )
    .await;
    collection.insert_one(doc! { "_id": 1 }).await.unwrap();
    assert_eq!(log.started("insert"), 2);
    assert_eq!(collection.count_documents(doc! {}).await.unwrap(), 1);
    if let Some(deployment) = &target.deployment {
        let namespace = collection.namespace().to_string();
        assert_eq!(deployment.store().writes_applied(&namespace), 1);
    }
    // A non-retryable code: the error reaches the application, yet the write happened.
    configure(
        &client,
        doc! {
            "configureFailPoint": "failCommand",
            "mode": {"times": 1},
            "data": {
                "failCommands": ["insert"], "appName": "fp-wce",
                "writeConcernError": {"code": 100, "codeName": "UnsatisfiableWriteConcern", "errmsg": "Not enough data-bearing nodes"},
            },
        },
    )
    .await;
    let error = collection.insert_one(doc! { "_id": 2 }).await.unwrap_err();
    match error.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteConcernError(wce)) => assert_eq!(wce.code, 100),
        other => panic!("expected a write concern error, got {other:?}"),
    }
    assert_eq!(collection.count_documents(doc! {}).await.unwrap(), 2);
    disable(&client, "failCommand").await;
    client.shutdown().await;
}

#[tokio::test]
async fn skip_and_app_name_select_which_commands_fail() {
    let target = Target::replica_set().await;
    let log = CommandLog::default();
    let client = logged_client(&target.uri, "fp-skip", &log).await;
    let other = logged_client(&target.uri, "fp-bystander", &CommandLog::default()).await;
    configure(
        &client,
        doc! {
            "configureFailPoint": "failCommand",
            "mode": {"skip": 1},
            "data": {"failCommands": ["ping"], "errorCode": 8, "appName": "fp-skip"},
        },
    )
    .await;
    let admin = client.database("admin");
    admin.run_command(doc! { "ping": 1 }).await.unwrap();
    for _ in 0..2 {
        let error = admin.run_command(doc! { "ping": 1 }).await.unwrap_err();
        assert_eq!(command_code(&error), Some(8));
    }
    // Another application's commands never match.
    other
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .unwrap();
    disable(&client, "failCommand").await;
    admin.run_command(doc! { "ping": 1 }).await.unwrap();
    client.shutdown().await;
    other.shutdown().await;
}

#[tokio::test]
async fn block_connection_holds_only_the_matching_command() {
    let target = Target::replica_set().await;
    let client = logged_client(&target.uri, "fp-block", &CommandLog::default()).await;
    let bystander = logged_client(&target.uri, "fp-free", &CommandLog::default()).await;
    let block = Duration::from_millis(300);
    configure(
        &client,
        doc! {
            "configureFailPoint": "failCommand",
            "mode": {"times": 1},
            "data": {"failCommands": ["ping"], "blockConnection": true, "blockTimeMS": 300, "appName": "fp-block"},
        },
    )
    .await;
    let started = Instant::now();
    let blocked = tokio::spawn({
        let admin = client.database("admin");
        async move { admin.run_command(doc! { "ping": 1 }).await }
    });
    bystander
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .unwrap();
    within(blocked).await.unwrap().unwrap();
    // A lower bound only: the server sleeps at least blockTimeMS, whatever the machine load.
    assert!(started.elapsed() >= block);
    disable(&client, "failCommand").await;
    client.shutdown().await;
    bystander.shutdown().await;
}

#[tokio::test]
async fn on_primary_transactional_write_closes_after_the_write_commits() {
    let target = Target::replica_set().await;
    let log = CommandLog::default();
    let client = logged_client(&target.uri, "fp-txn", &log).await;
    let collection = fresh_collection(&client, "txn").await;
    configure(
        &client,
        doc! { "configureFailPoint": "onPrimaryTransactionalWrite", "mode": {"times": 1} },
    )
    .await;
    collection
        .update_one(doc! { "_id": 1 }, doc! { "$inc": {"n": 1} })
        .upsert(true)
        .await
        .unwrap();
    assert_eq!(log.started("update"), 2, "the first attempt lost its reply");
    // The retry was answered from the transaction table: the increment happened once.
    let document = collection
        .find_one(doc! { "_id": 1 })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(document.get_i32("n").unwrap(), 1);
    disable(&client, "onPrimaryTransactionalWrite").await;
    client.shutdown().await;
}

#[tokio::test]
async fn fail_before_commit_closes_the_connection_and_applies_nothing() {
    let target = Target::replica_set().await;
    let log = CommandLog::default();
    let client = logged_client(&target.uri, "fp-txn-before", &log).await;
    let collection = fresh_collection(&client, "txn_before").await;
    configure(
        &client,
        doc! { "configureFailPoint": "onPrimaryTransactionalWrite", "mode": {"times": 2},
        "data": {"failBeforeCommitExceptionCode": 1} },
    )
    .await;
    collection
        .insert_one(doc! { "_id": 1 })
        .await
        .expect_err("both attempts lose their connection");
    // closeConnection defaults to true: the driver sees network errors, never code 1, and
    // retries the first once.
    let failures = log.failures("insert");
    assert_eq!(failures.len(), 2);
    for failure in &failures {
        assert!(
            matches!(failure.kind.as_ref(), ErrorKind::Io(_)),
            "a network error: {failure}"
        );
    }
    assert_eq!(collection.count_documents(doc! {}).await.unwrap(), 0);

    configure(
        &client,
        doc! { "configureFailPoint": "onPrimaryTransactionalWrite", "mode": {"times": 1},
        "data": {"failBeforeCommitExceptionCode": 1, "closeConnection": false} },
    )
    .await;
    let error = collection.insert_one(doc! { "_id": 2 }).await.unwrap_err();
    assert_eq!(command_code(&error), Some(1), "{error}");
    assert_eq!(collection.count_documents(doc! {}).await.unwrap(), 0);
    disable(&client, "onPrimaryTransactionalWrite").await;
    client.shutdown().await;
}
