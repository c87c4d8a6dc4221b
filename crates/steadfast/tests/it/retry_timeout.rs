//! timeoutMS (client-side operations timeout): one deadline through selection, check-out, the
//! socket and the retry delays; `maxTimeMS` derived from it; the timeout error keeping the
//! underlying error as its source.

use std::error::Error as _;
use std::sync::Arc;
use std::time::Duration;

use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{Document, doc};
use steadfast::error::StopReason;
use steadfast::event::{CommandEvent, Event};
use steadfast::options::CollectionOptions;
use steadfast::retries::{AttemptContext, RetryDecision, RetryPolicy, RetryTarget};
use steadfast::{Error, ErrorKind};

use crate::retry_support::{
    HANG_GUARD, fail_command, harness, harness_with, primary_host, replica_set, retries, started,
    within,
};

/// The error behind a timeout error.
fn underlying(error: &Error) -> &Error {
    error
        .source()
        .and_then(|s| s.downcast_ref::<Error>())
        .unwrap_or_else(|| panic!("a timeout keeps the underlying error: {error:?}"))
}

fn with_timeout(millis: u64) -> CollectionOptions {
    CollectionOptions::default().timeout(Duration::from_millis(millis))
}

#[tokio::test]
async fn the_deadline_expires_during_server_selection() {
    let deployment = Deployment::start(
        DeploymentConfig::replica_set(3)
            .with_seed(7)
            .with_auto_failover(false),
    )
    .await
    .unwrap();
    deployment.force_step_down(Duration::from_secs(60)).unwrap();
    let h = harness(&deployment.uri(), "").await;
    let orders = h
        .client
        .database("shop")
        .collection_with_options::<Document>("orders", with_timeout(300));
    let error = within(orders.insert_one(doc! { "_id": 1 }))
        .await
        .unwrap_err();
    assert!(error.is_timeout(), "{error}");
    let cause = underlying(&error);
    assert!(
        matches!(cause.kind(), ErrorKind::ServerSelection { .. }),
        "{cause}"
    );
    assert!(error.to_string().contains(&cause.to_string()), "{error}");
    assert!(started(&h.events, "insert").is_empty(), "nothing was sent");
    h.client.shutdown().await;
}

#[tokio::test]
async fn the_deadline_expires_during_check_out() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "&maxPoolSize=1").await;
    let db = h.client.database("shop");
    let patient = db.collection::<Document>("orders");
    let hurried = db.collection_with_options::<Document>("orders", with_timeout(200));
    within(patient.insert_one(doc! { "_id": 0 })).await.unwrap();
    fail_command(
        &primary_host(&deployment).await,
        doc! { "times": 1 }.into(),
        doc! { "failCommands": ["insert"], "blockConnection": true, "blockTimeMS": 1000 },
    )
    .await;
    let from = h.events.len();
    // The only connection is held by a blocked insert...
    let holder = tokio::spawn(async move { patient.insert_one(doc! { "_id": 1 }).await });
    h.events
        .wait_for(
            from,
            HANG_GUARD,
            |e| matches!(e, Event::Command(CommandEvent::Started(s)) if s.command_name == "insert"),
        )
        .await
        .expect("the blocked insert was sent");
    // ...so this one waits for a connection until its deadline.
    let error = within(hurried.insert_one(doc! { "_id": 2 }))
        .await
        .unwrap_err();
    assert!(error.is_timeout(), "{error}");
    assert!(underlying(&error).is_timeout());
    assert!(
        error.to_string().contains("checking out a connection"),
        "{error}"
    );
    within(holder).await.unwrap().unwrap();
    assert_eq!(
        started(&h.events, "insert").len(),
        2,
        "the hurried insert was never sent"
    );
    h.client.shutdown().await;
}

#[tokio::test]
async fn the_deadline_expires_during_a_blocked_command() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let orders = h
        .client
        .database("shop")
        .collection_with_options::<Document>("orders", with_timeout(250));
    within(orders.insert_one(doc! { "_id": 0 })).await.unwrap();
    fail_command(
        &primary_host(&deployment).await,
        doc! { "times": 1 }.into(),
        doc! { "failCommands": ["insert"], "blockConnection": true, "blockTimeMS": 1000 },
    )
    .await;
    let error = within(orders.insert_one(doc! { "_id": 1 }))
        .await
        .unwrap_err();
    assert!(error.is_timeout(), "{error}");
    assert!(underlying(&error).is_timeout());
    let inserts = started(&h.events, "insert");
    let max_time = inserts[1].command.get_i64("maxTimeMS").unwrap();
    assert!((1..=250).contains(&max_time), "maxTimeMS {max_time}");
    // Without timeoutMS no maxTimeMS is sent.
    let plain = h.client.database("shop").collection::<Document>("plain");
    within(plain.insert_one(doc! { "_id": 1 })).await.unwrap();
    let last = started(&h.events, "insert").pop().unwrap();
    assert!(!last.command.contains_key("maxTimeMS"));
    h.client.shutdown().await;
}

/// Asks for a retry after ten seconds, whatever happened.
#[derive(Debug)]
struct TenSecondsLater;

impl RetryPolicy for TenSecondsLater {
    fn decide(&self, context: &AttemptContext<'_>, _rng: &mut dyn rand::RngCore) -> RetryDecision {
        let _ = context;
        RetryDecision::Retry {
            after: Duration::from_secs(10),
            target: RetryTarget::AnyServer,
        }
    }
}

#[tokio::test]
async fn a_backoff_never_outlives_the_deadline() {
    let deployment = replica_set().await;
    let h = harness_with(&deployment.uri(), "", |b| {
        b.retry_policy(Arc::new(TenSecondsLater))
    })
    .await;
    let orders = h
        .client
        .database("shop")
        .collection_with_options::<Document>("orders", with_timeout(500));
    fail_command(
        &primary_host(&deployment).await,
        doc! { "times": 1 }.into(),
        doc! { "failCommands": ["insert"], "errorCode": 10107 },
    )
    .await;
    let error = within(orders.insert_one(doc! { "_id": 1 }))
        .await
        .unwrap_err();
    // The delay would pass the deadline: the driver stops at once with the real error
    // instead of sleeping into a timeout.
    assert_eq!(error.stop_reason(), Some(StopReason::DeadlineWouldPass));
    assert_eq!(error.code(), Some(10107));
    assert!(retries(&h.events).is_empty());
    h.client.shutdown().await;
}

#[tokio::test]
async fn under_timeout_ms_retries_continue_while_time_remains() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let orders = h
        .client
        .database("shop")
        .collection_with_options::<Document>("orders", with_timeout(20_000));
    fail_command(
        &primary_host(&deployment).await,
        doc! { "times": 3 }.into(),
        doc! { "failCommands": ["insert"], "errorCode": 10107 },
    )
    .await;
    within(orders.insert_one(doc! { "_id": 1 })).await.unwrap();
    assert_eq!(started(&h.events, "insert").len(), 4);
    assert_eq!(deployment.store().writes_applied("shop.orders"), 1);
    h.client.shutdown().await;
}

#[tokio::test]
async fn timeout_ms_replaces_socket_timeout_ms() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "&socketTimeoutMS=100&retryWrites=false").await;
    let db = h.client.database("shop");
    let legacy = db.collection::<Document>("orders");
    let bounded = db.collection_with_options::<Document>("orders", with_timeout(20_000));
    within(legacy.insert_one(doc! { "_id": 0 })).await.unwrap();
    let primary = primary_host(&deployment).await;
    let block = || {
        fail_command(
            &primary,
            doc! { "times": 1 }.into(),
            doc! { "failCommands": ["insert"], "blockConnection": true, "blockTimeMS": 300 },
        )
    };
    // Without timeoutMS, socketTimeoutMS cuts the slow reply short...
    block().await;
    let error = within(legacy.insert_one(doc! { "_id": 1 }))
        .await
        .unwrap_err();
    assert!(error.is_timeout(), "{error}");
    // ...with it, only the operation's deadline counts.
    block().await;
    within(bounded.insert_one(doc! { "_id": 2 })).await.unwrap();
    h.client.shutdown().await;
}
