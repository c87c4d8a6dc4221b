//! The prose tests of the retryable-writes, retryable-reads and client-backpressure READMEs,
//! one test per prose test or case, named after it, run against blackpipe.
//!
//! Where the README sets a second fail point "via the CommandFailedEvent" of the first, the
//! scripted server answers the first attempt with one error and every later one with another:
//! the same sequence of replies, without a race between an event handler and the retry.
//!
//! Not here, because they need what blackpipe does not simulate:
//! - retryable-writes 1 (MMAPv1 rejects retryable writes): a storage engine removed from
//!   MongoDB; blackpipe has no storage engines.
//! - client-backpressure 1 and 5 (backoff measured by comparing run times with the jitter
//!   pinned to 0 and to 1, and `externalClientBaseBackoffMS` set through `setParameter`): the
//!   client's jitter source cannot be pinned from outside, and comparing durations is a
//!   wall-clock threshold. The backoff formula is unit-tested in steadfast-core
//!   (`overload_backoff_follows_the_formula`), and the recorded delays against blackpipe in
//!   `retry_policy::overload_errors_are_retried_with_the_prescribed_backoff` and
//!   `retry_policy::base_backoff_ms_replaces_the_default_base`.

use std::time::Duration;

use blackpipe::deployment::{Deployment, DeploymentConfig};
use blackpipe::scripted::{Matcher, ScriptedServer};
use blackpipe::server::{CommandError, Reaction};
use bson::{Document, doc};
use steadfast::event::{CheckOutFailedReason, CmapEvent, Event, EventRecorder, SdamEvent};

use crate::retry_support::{
    HANG_GUARD, Harness, fail_command, failed, harness, primary_host, replica_set, started,
    succeeded, within,
};
use crate::server;

const RETRYABLE_ERROR: &str = "RetryableError";
const SYSTEM_OVERLOADED_ERROR: &str = "SystemOverloadedError";
const RETRYABLE_WRITE_ERROR: &str = "RetryableWriteError";
const NO_WRITES_PERFORMED: &str = "NoWritesPerformed";

/// A scripted replica-set primary reached directly, so that writes carry a txnNumber and are
/// retryable.
pub(crate) async fn scripted_primary() -> ScriptedServer {
    let server = server().await;
    server.patch_hello(doc! {
        "setName": "rs0",
        "hosts": [format!("127.0.0.1:{}", server.port())],
        "isWritablePrimary": true,
        "secondary": false,
    });
    server
}

fn error(code: i32, name: &str, labels: &[&str]) -> CommandError {
    CommandError::new(code, name, "scripted by the prose test").with_labels(labels.iter().copied())
}

fn shutdown_in_progress(labels: &[&str]) -> CommandError {
    error(91, "ShutdownInProgress", labels)
}

fn not_writable_primary(labels: &[&str]) -> CommandError {
    error(10107, "NotWritablePrimary", labels)
}

/// Answers the first `command` with `first` and every later one with `then`, runs `operation`
/// on a client of `server`, and returns the client's harness with the operation's error.
async fn fail_then<T: std::fmt::Debug>(
    server: &ScriptedServer,
    command: &str,
    first: impl Into<blackpipe::scripted::Responder>,
    then: impl Into<blackpipe::scripted::Responder>,
    operation: impl AsyncFnOnce(&Harness) -> steadfast::Result<T>,
) -> (Harness, steadfast::Error) {
    let h = harness(&crate::uri(server, "directConnection=true"), "").await;
    server.rule(Matcher::command(command), first).once();
    server.rule(Matcher::command(command), then).always();
    let error = within(operation(&h))
        .await
        .expect_err("every attempt fails");
    (h, error)
}

async fn insert_one(h: &Harness) -> steadfast::Result<()> {
    let items = h.client.database("db").collection::<Document>("items");
    items.insert_one(doc! { "_id": 1 }).await.map(|_| ())
}

async fn find_one(h: &Harness) -> steadfast::Result<Option<Document>> {
    let items = h.client.database("db").collection::<Document>("items");
    items.find_one(doc! { "_id": 1 }).await
}

/// The CMAP events recorded, in order.
fn cmap(events: &EventRecorder) -> Vec<CmapEvent> {
    events
        .events()
        .into_iter()
        .filter_map(|event| match event {
            Event::Cmap(event) => Some(event),
            _ => None,
        })
        .collect()
}

/// Retryable writes 2 and retryable reads 1: with maxPoolSize=1, the operation holding the
/// only connection fails after a second with a retryable 91 that clears the pool; the other,
/// waiting for the connection, fails its check-out with PoolClearedError and is retried too.
///
/// On a scripted primary: blackpipe's deployments attach the node's current topologyVersion
/// to a fail point's state-change error, which makes the error stale for SDAM (equal
/// topologyVersions), so it would never clear the pool.
async fn pool_cleared_error_is_retried(command: &str, labels: &[&str], success: Document) {
    let server = scripted_primary().await;
    let h = harness(
        &crate::uri(&server, "directConnection=true"),
        "&maxPoolSize=1",
    )
    .await;
    let blocked_then_shutting_down = Reaction::Delay(
        Duration::from_millis(1000),
        Box::new(Reaction::Error(shutdown_in_progress(labels))),
    );
    server
        .rule(Matcher::command(command), blocked_then_shutting_down)
        .once();
    server.rule(Matcher::command(command), success).always();
    let items = h.client.database("db").collection::<Document>("items");
    let run = |id: i32| {
        let items = items.clone();
        let is_insert = command == "insert";
        tokio::spawn(async move {
            if is_insert {
                items.insert_one(doc! { "_id": id }).await.map(|_| ())
            } else {
                items.find_one(doc! { "_id": id }).await.map(|_| ())
            }
        })
    };
    let (first, second) = (run(1), run(2));
    within(first)
        .await
        .unwrap()
        .expect("the first operation succeeds");
    within(second)
        .await
        .unwrap()
        .expect("the second operation succeeds");

    let sequence: Vec<String> = cmap(&h.events)
        .iter()
        .filter_map(|event| match event {
            CmapEvent::ConnectionCheckedOut { .. } | CmapEvent::PoolCleared { .. } => {
                Some(event.name().to_string())
            }
            CmapEvent::ConnectionCheckOutFailed { reason, .. } => {
                Some(format!("failed {}", reason.as_str()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        sequence.get(..3),
        Some(
            &[
                "ConnectionCheckedOut".to_string(),
                "ConnectionPoolCleared".to_string(),
                format!("failed {}", CheckOutFailedReason::ConnectionError.as_str()),
            ][..]
        ),
        "{sequence:?}"
    );
    assert_eq!(started(&h.events, command).len(), 3);
    h.client.shutdown().await;
}

#[tokio::test]
async fn retryable_writes_prose_2_pool_cleared_error_is_retried() {
    pool_cleared_error_is_retried("insert", &[RETRYABLE_WRITE_ERROR], doc! { "n": 1, "ok": 1 })
        .await;
}

#[tokio::test]
async fn retryable_reads_prose_1_pool_cleared_error_is_retried() {
    let empty = doc! { "cursor": { "id": 0_i64, "ns": "db.items", "firstBatch": [] }, "ok": 1 };
    pool_cleared_error_is_retried("find", &[], empty).await;
}

#[tokio::test]
async fn retryable_writes_prose_3_original_error_after_write_concern_error() {
    let server = scripted_primary().await;
    let write_concern_failed = doc! {
        "n": 1,
        "ok": 1,
        "writeConcernError": { "code": 91, "codeName": "ShutdownInProgress", "errmsg": "shutting down" },
        "errorLabels": [RETRYABLE_WRITE_ERROR],
    };
    let (h, error) = fail_then(
        &server,
        "insert",
        write_concern_failed,
        not_writable_primary(&[RETRYABLE_WRITE_ERROR, NO_WRITES_PERFORMED]),
        insert_one,
    )
    .await;
    assert_eq!(started(&h.events, "insert").len(), 2);
    assert_eq!(error.code(), Some(91), "{error}");
    h.client.shutdown().await;
}

/// A sharded deployment of two routers where router 1 answers slowly: first attempts go to
/// router 0 (the only one in the latency window), so only deprioritization sends a retry to
/// router 1.
async fn two_routers() -> (Deployment, String, String) {
    let deployment = Deployment::start(DeploymentConfig::sharded(2).with_seed(3))
        .await
        .unwrap();
    deployment.slow(1, Duration::from_millis(80)).unwrap();
    let router0 = deployment.host(0).unwrap();
    let router1 = deployment.host(1).unwrap();
    (deployment, router0, router1)
}

/// Retryable writes 4 and retryable reads 2.1: both routers fail once; the retry goes to the
/// other router, so the operation fails with one failure on each.
async fn retried_on_a_different_mongos(command: &str, labels: &[&str]) {
    let (deployment, router0, router1) = two_routers().await;
    let mut data = doc! { "failCommands": [command], "errorCode": 6 };
    if !labels.is_empty() {
        data.insert("errorLabels", labels.to_vec());
    }
    for router in [&router0, &router1] {
        fail_command(router, doc! { "times": 1 }.into(), data.clone()).await;
    }
    let h = harness(&deployment.uri(), "").await;
    // The slow router must be known before the first attempt, or the retry would have no
    // other router to go to.
    let known = h
        .events
        .wait_for(0, HANG_GUARD, |event| match event {
            Event::Sdam(SdamEvent::ServerDescriptionChanged { address, new, .. }) => {
                address.to_string() == router1 && format!("{:?}", new.server_type) == "Mongos"
            }
            _ => false,
        })
        .await;
    assert!(known.is_some(), "the client discovers router 1");
    let result = if command == "insert" {
        within(insert_one(&h)).await.map(|_| ())
    } else {
        within(find_one(&h)).await.map(|_| ())
    };
    assert!(result.is_err(), "both routers fail once");
    let failures: Vec<String> = failed(&h.events, command)
        .iter()
        .map(|event| event.connection.address.to_string())
        .collect();
    assert_eq!(failures, vec![router0, router1]);
    h.client.shutdown().await;
}

#[tokio::test]
async fn retryable_writes_prose_4_sharded_retry_on_a_different_mongos() {
    retried_on_a_different_mongos("insert", &[RETRYABLE_WRITE_ERROR]).await;
}

#[tokio::test]
async fn retryable_reads_prose_2_1_sharded_retry_on_a_different_mongos() {
    retried_on_a_different_mongos("find", &[]).await;
}

/// Retryable writes 5 and retryable reads 2.2: with a single router, the retry goes back to it.
async fn retried_on_the_same_mongos(command: &str, data: Document) {
    let (_deployment, router0, _) = two_routers().await;
    fail_command(&router0, doc! { "times": 1 }.into(), data).await;
    let h = harness(&format!("mongodb://{router0}/?directConnection=false"), "").await;
    let result = if command == "insert" {
        within(insert_one(&h)).await.map(|_| ())
    } else {
        within(find_one(&h)).await.map(|_| ())
    };
    result.expect("the retry succeeds");
    let failures = failed(&h.events, command);
    let successes = succeeded(&h.events, command);
    assert_eq!((failures.len(), successes.len()), (1, 1));
    assert_eq!(failures[0].connection.address.to_string(), router0);
    assert_eq!(successes[0].connection.address.to_string(), router0);
    h.client.shutdown().await;
}

#[tokio::test]
async fn retryable_writes_prose_5_sharded_retry_on_the_same_mongos() {
    retried_on_the_same_mongos(
        "insert",
        doc! {
            "failCommands": ["insert"],
            "errorCode": 6,
            "errorLabels": [RETRYABLE_WRITE_ERROR],
            "closeConnection": true,
        },
    )
    .await;
}

#[tokio::test]
async fn retryable_reads_prose_2_2_sharded_retry_on_the_same_mongos() {
    retried_on_the_same_mongos("find", doc! { "failCommands": ["find"], "errorCode": 6 }).await;
}

#[tokio::test]
async fn retryable_writes_prose_6_case_1_only_errors_without_no_writes_performed() {
    let server = scripted_primary().await;
    let overload = [RETRYABLE_ERROR, SYSTEM_OVERLOADED_ERROR];
    let (h, error) = fail_then(
        &server,
        "insert",
        shutdown_in_progress(&overload),
        not_writable_primary(&overload),
        insert_one,
    )
    .await;
    assert_eq!(error.code(), Some(10107), "the latest error: {error}");
    h.client.shutdown().await;
}

#[tokio::test]
async fn retryable_writes_prose_6_case_2_only_errors_with_no_writes_performed() {
    let server = scripted_primary().await;
    let labels = [
        RETRYABLE_ERROR,
        SYSTEM_OVERLOADED_ERROR,
        NO_WRITES_PERFORMED,
    ];
    let (h, error) = fail_then(
        &server,
        "insert",
        shutdown_in_progress(&labels),
        not_writable_primary(&labels),
        insert_one,
    )
    .await;
    assert_eq!(error.code(), Some(91), "the first error: {error}");
    h.client.shutdown().await;
}

#[tokio::test]
async fn retryable_writes_prose_6_case_3_some_errors_with_no_writes_performed() {
    let server = scripted_primary().await;
    let (h, error) = fail_then(
        &server,
        "insert",
        shutdown_in_progress(&[RETRYABLE_ERROR, SYSTEM_OVERLOADED_ERROR]),
        shutdown_in_progress(&[
            RETRYABLE_ERROR,
            SYSTEM_OVERLOADED_ERROR,
            NO_WRITES_PERFORMED,
        ]),
        insert_one,
    )
    .await;
    assert_eq!(error.code(), Some(91), "{error}");
    assert!(
        !error.has_label(NO_WRITES_PERFORMED),
        "the attempt that may have written: {error}"
    );
    assert_eq!(started(&h.events, "insert").len(), 3);
    h.client.shutdown().await;
}

/// MAX_RETRIES, the default maxAdaptiveRetries.
const MAX_RETRIES: usize = 2;

#[tokio::test]
async fn retryable_writes_prose_6_case_4_overload_sets_the_retry_limit() {
    let server = scripted_primary().await;
    let (h, error) = fail_then(
        &server,
        "insert",
        shutdown_in_progress(&[RETRYABLE_ERROR, SYSTEM_OVERLOADED_ERROR]),
        shutdown_in_progress(&[RETRYABLE_ERROR, RETRYABLE_WRITE_ERROR]),
        insert_one,
    )
    .await;
    assert_eq!(error.code(), Some(91), "{error}");
    assert_eq!(started(&h.events, "insert").len(), MAX_RETRIES + 1);
    h.client.shutdown().await;
}

#[tokio::test]
async fn retryable_writes_prose_6_case_5_no_backoff_for_non_overload_errors() {
    let server = scripted_primary().await;
    let (h, _) = fail_then(
        &server,
        "insert",
        shutdown_in_progress(&[RETRYABLE_ERROR, SYSTEM_OVERLOADED_ERROR]),
        shutdown_in_progress(&[RETRYABLE_ERROR, RETRYABLE_WRITE_ERROR]),
        insert_one,
    )
    .await;
    let delays: Vec<Duration> = crate::retry_support::retries(&h.events)
        .iter()
        .map(|retry| retry.delay)
        .collect();
    assert_eq!(delays.len(), MAX_RETRIES);
    assert_eq!(
        delays[1],
        Duration::ZERO,
        "no backoff after a non-overload error"
    );
    h.client.shutdown().await;
}

/// Retryable reads 3.x: a find with primaryPreferred fails once on the primary with `labels`;
/// returns the hosts of its failed and its successful attempt.
async fn replica_set_read_retry(query: &str, labels: &[&str]) -> (String, String, String) {
    let deployment = replica_set().await;
    let primary = primary_host(&deployment).await;
    let h = harness(
        &deployment.uri(),
        &format!("&readPreference=primaryPreferred{query}"),
    )
    .await;
    fail_command(
        &primary,
        doc! { "times": 1 }.into(),
        doc! { "failCommands": ["find"], "errorCode": 6, "errorLabels": labels.to_vec() },
    )
    .await;
    within(find_one(&h)).await.expect("the retry succeeds");
    let failures = failed(&h.events, "find");
    let successes = succeeded(&h.events, "find");
    assert_eq!((failures.len(), successes.len()), (1, 1));
    let hosts = (
        primary,
        failures[0].connection.address.to_string(),
        successes[0].connection.address.to_string(),
    );
    h.client.shutdown().await;
    hosts
}

#[tokio::test]
async fn retryable_reads_prose_3_1_overload_retried_elsewhere_with_retargeting() {
    let (primary, failed_on, succeeded_on) = replica_set_read_retry(
        "&enableOverloadRetargeting=true",
        &[RETRYABLE_ERROR, SYSTEM_OVERLOADED_ERROR],
    )
    .await;
    assert_eq!(failed_on, primary);
    assert_ne!(succeeded_on, primary);
}

#[tokio::test]
async fn retryable_reads_prose_3_2_non_overload_retried_on_the_same_server() {
    let (primary, failed_on, succeeded_on) =
        replica_set_read_retry("&enableOverloadRetargeting=true", &[RETRYABLE_ERROR]).await;
    assert_eq!(failed_on, primary);
    assert_eq!(succeeded_on, primary);
}

#[tokio::test]
async fn retryable_reads_prose_3_3_overload_retried_on_the_same_server_without_retargeting() {
    let (primary, failed_on, succeeded_on) =
        replica_set_read_retry("", &[RETRYABLE_ERROR, SYSTEM_OVERLOADED_ERROR]).await;
    assert_eq!(failed_on, primary);
    assert_eq!(succeeded_on, primary);
}

#[tokio::test]
async fn retryable_reads_prose_4_overload_sets_the_retry_limit() {
    let server = scripted_primary().await;
    let (h, error) = fail_then(
        &server,
        "find",
        shutdown_in_progress(&[RETRYABLE_ERROR, SYSTEM_OVERLOADED_ERROR]),
        shutdown_in_progress(&[RETRYABLE_ERROR]),
        find_one,
    )
    .await;
    assert_eq!(error.code(), Some(91), "{error}");
    assert_eq!(started(&h.events, "find").len(), MAX_RETRIES + 1);
    h.client.shutdown().await;
}

/// Client backpressure 3 and 4: a find always refused with 462 is tried `attempts` times and
/// its error keeps both overload labels.
async fn overload_retried_at_most(query: &str, attempts: usize) {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), query).await;
    fail_command(
        &primary_host(&deployment).await,
        "alwaysOn".into(),
        doc! {
            "failCommands": ["find"],
            "errorCode": 462,
            "errorLabels": [SYSTEM_OVERLOADED_ERROR, RETRYABLE_ERROR],
        },
    )
    .await;
    let error = within(find_one(&h)).await.expect_err("always refused");
    assert!(error.has_label(RETRYABLE_ERROR), "{error}");
    assert!(error.has_label(SYSTEM_OVERLOADED_ERROR), "{error}");
    assert_eq!(started(&h.events, "find").len(), attempts);
    h.client.shutdown().await;
}

#[tokio::test]
async fn client_backpressure_prose_3_overload_retried_at_most_max_retries() {
    overload_retried_at_most("", MAX_RETRIES + 1).await;
}

#[tokio::test]
async fn client_backpressure_prose_4_overload_retried_at_most_max_adaptive_retries() {
    overload_retried_at_most("&maxAdaptiveRetries=1", 2).await;
}
