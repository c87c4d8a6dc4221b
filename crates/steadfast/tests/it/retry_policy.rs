//! Overload retries (client backpressure), maxAdaptiveRetries, the retry budget, and the
//! policies on every level: SpecPolicy, BestEffort, FailFast.

use std::sync::Arc;
use std::time::Duration;

use blackpipe::deployment::{Deployment, NodeIndex};
use blackpipe::failpoint::{FailPointMode, Overload};
use bson::{Document, doc};
use steadfast::Collection;
use steadfast::error::{ErrorClass, Outcome, StopReason};
use steadfast::event::RetryReason;
use steadfast::options::{CollectionOptions, DatabaseOptions};
use steadfast::retries::{BestEffort, FailFast, RetryBudgetConfig, SpecPolicy};

use crate::retry_support::{
    fail_command, harness, harness_with, primary_host, replica_set, retries, started, within,
};

/// Inserts `_id: 0` through `orders` (so that the client knows the primary), then overloads
/// the primary as `overload` says; returns the primary.
async fn overload_primary(
    deployment: &Deployment,
    orders: &Collection<Document>,
    overload: Overload,
) -> NodeIndex {
    within(orders.insert_one(doc! { "_id": 0 })).await.unwrap();
    let primary = within(deployment.wait_for_primary()).await;
    deployment.overload(primary, Some(overload)).unwrap();
    primary
}

/// Makes `host` refuse the next `times` inserts with NotWritablePrimary (10107), an error
/// every policy may retry.
async fn refuse_inserts(host: &str, times: i32) {
    fail_command(
        host,
        doc! { "times": times }.into(),
        doc! { "failCommands": ["insert"], "errorCode": 10107 },
    )
    .await;
}

#[tokio::test]
async fn overload_errors_are_retried_with_the_prescribed_backoff() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    overload_primary(
        &deployment,
        &orders,
        Overload::new(FailPointMode::Times(2), None),
    )
    .await;
    within(orders.insert_one(doc! { "_id": 1 })).await.unwrap();

    let events = retries(&h.events);
    assert_eq!(events.len(), 2);
    for (retry, event) in events.iter().enumerate() {
        assert_eq!(event.reason, RetryReason::Overloaded { code: 462 });
        // jitter * min(10 s, 100 ms * 2^retry), retry counting from 1.
        let ceiling = Duration::from_millis(100 * (1 << (retry + 1)));
        assert!(event.delay <= ceiling, "{:?} > {ceiling:?}", event.delay);
    }
    assert_eq!(started(&h.events, "insert").len(), 4);
    assert_eq!(deployment.store().writes_applied("shop.orders"), 2);
    h.client.shutdown().await;
}

#[tokio::test]
async fn base_backoff_ms_replaces_the_default_base() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    overload_primary(
        &deployment,
        &orders,
        Overload::new(FailPointMode::Times(2), Some(3)),
    )
    .await;
    within(orders.insert_one(doc! { "_id": 1 })).await.unwrap();
    let events = retries(&h.events);
    assert_eq!(events.len(), 2);
    // 3 ms * 2^1 and 3 ms * 2^2 at most.
    assert!(
        events[0].delay <= Duration::from_millis(6),
        "{:?}",
        events[0].delay
    );
    assert!(
        events[1].delay <= Duration::from_millis(12),
        "{:?}",
        events[1].delay
    );
    h.client.shutdown().await;
}

#[tokio::test]
async fn max_adaptive_retries_caps_the_attempts_under_overload() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "&maxAdaptiveRetries=1").await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    let primary = overload_primary(
        &deployment,
        &orders,
        Overload::new(FailPointMode::AlwaysOn, Some(1)),
    )
    .await;
    let error = within(orders.insert_one(doc! { "_id": 1 }))
        .await
        .unwrap_err();
    deployment.overload(primary, None).unwrap();
    assert_eq!(error.code(), Some(462));
    assert!(error.is_overload_error());
    assert_eq!(error.stop_reason(), Some(StopReason::AttemptsExhausted));
    assert_eq!(error.retry_history().len(), 2);
    assert_eq!(error.class(), ErrorClass::Outage);
    assert_eq!(
        error.outcome(),
        Outcome::NotApplied,
        "overloaded nodes refuse before running"
    );
    assert_eq!(started(&h.events, "insert").len(), 3);
    assert_eq!(deployment.store().writes_applied("shop.orders"), 1);
    h.client.shutdown().await;
}

#[tokio::test]
async fn the_default_client_has_no_retry_budget() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    let primary = overload_primary(
        &deployment,
        &orders,
        Overload::new(FailPointMode::AlwaysOn, Some(1)),
    )
    .await;
    // 120 operations, each allowed maxAdaptiveRetries (2) overload retries: 240 retries, more
    // than a budget of 10% of the traffic plus 10 a second over 10 s (about 112) would grant.
    for id in 1..=120 {
        let error = within(orders.insert_one(doc! { "_id": id }))
            .await
            .unwrap_err();
        assert_eq!(
            error.stop_reason(),
            Some(StopReason::AttemptsExhausted),
            "operation {id}"
        );
    }
    deployment.overload(primary, None).unwrap();
    assert_eq!(retries(&h.events).len(), 240);
    h.client.shutdown().await;
}

#[tokio::test]
async fn an_exhausted_budget_stops_overload_retries() {
    let deployment = replica_set().await;
    let no_room = RetryBudgetConfig {
        retry_ratio: 0.0,
        min_retries_per_second: 0,
        window: Duration::from_secs(10),
    };
    let h = harness_with(&deployment.uri(), "", |b| b.retry_budget(no_room)).await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    overload_primary(
        &deployment,
        &orders,
        Overload::new(FailPointMode::Times(1), Some(1)),
    )
    .await;
    let error = within(orders.insert_one(doc! { "_id": 1 }))
        .await
        .unwrap_err();
    assert_eq!(error.stop_reason(), Some(StopReason::BudgetExhausted));
    assert_eq!(error.retry_history().len(), 1);
    assert!(retries(&h.events).is_empty());
    // The budget only limits what it is charged for: a state-change retry still happens.
    refuse_inserts(&primary_host(&deployment).await, 1).await;
    within(orders.insert_one(doc! { "_id": 2 })).await.unwrap();
    assert_eq!(retries(&h.events).len(), 1);
    h.client.shutdown().await;
}

#[tokio::test]
async fn fail_fast_reports_the_first_error() {
    let deployment = replica_set().await;
    let h = harness_with(&deployment.uri(), "", |b| {
        b.retry_policy(Arc::new(FailFast))
    })
    .await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    refuse_inserts(&primary_host(&deployment).await, 1).await;
    let error = within(orders.insert_one(doc! { "_id": 1 }))
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(10107));
    assert_eq!(error.stop_reason(), Some(StopReason::PolicyDeclined));
    assert_eq!(error.class(), ErrorClass::Transient);
    assert_eq!(error.outcome(), Outcome::NotApplied);
    assert_eq!(started(&h.events, "insert").len(), 1);
    h.client.shutdown().await;
}

#[tokio::test]
async fn best_effort_retries_safe_failures_beyond_the_specification() {
    let deployment = replica_set().await;
    let spec = harness(&deployment.uri(), "").await;
    let best = harness_with(&deployment.uri(), "", |b| {
        b.retry_policy(Arc::new(BestEffort::default()))
    })
    .await;
    let primary = primary_host(&deployment).await;

    refuse_inserts(&primary, 3).await;
    let error = within(
        spec.client
            .database("shop")
            .collection::<Document>("orders")
            .insert_one(doc! { "_id": 1 }),
    )
    .await
    .unwrap_err();
    assert_eq!(
        error.retry_history().len(),
        2,
        "the specification retries once"
    );
    assert_eq!(error.stop_reason(), Some(StopReason::AttemptsExhausted));
    assert_eq!(error.class(), ErrorClass::Outage);
    // Turn off what is left of the fail point, so the second client starts afresh.
    fail_point_off(&primary).await;

    refuse_inserts(&primary, 3).await;
    within(
        best.client
            .database("shop")
            .collection::<Document>("orders")
            .insert_one(doc! { "_id": 1 }),
    )
    .await
    .unwrap();
    assert_eq!(started(&best.events, "insert").len(), 4);
    assert_eq!(deployment.store().writes_applied("shop.orders"), 1);
    spec.client.shutdown().await;
    best.client.shutdown().await;
}

/// Turns the failCommand fail point off.
async fn fail_point_off(host: &str) {
    crate::retry_support::admin_command(
        host,
        doc! { "configureFailPoint": "failCommand", "mode": "off" },
    )
    .await;
}

#[tokio::test]
async fn best_effort_never_resends_a_write_that_may_have_run() {
    let deployment = replica_set().await;
    let h = harness_with(&deployment.uri(), "", |b| {
        b.retry_policy(Arc::new(BestEffort::default()))
    })
    .await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    within(orders.insert_one(doc! { "_id": 1 })).await.unwrap();
    fail_command(
        &primary_host(&deployment).await,
        doc! { "times": 1 }.into(),
        doc! { "failCommands": ["update"], "closeConnection": true },
    )
    .await;
    let error = within(orders.update_many(doc! {}, doc! { "$inc": { "n": 1 } }))
        .await
        .unwrap_err();
    assert_eq!(error.stop_reason(), Some(StopReason::Unsafe));
    assert_eq!(error.outcome(), Outcome::Ambiguous);
    assert_eq!(started(&h.events, "update").len(), 1);
    h.client.shutdown().await;
}

#[tokio::test]
async fn policies_are_inherited_and_overridden_level_by_level() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let primary = primary_host(&deployment).await;
    // The database fails fast; one of its collections goes back to the specification.
    let db = h.client.database_with_options(
        "shop",
        DatabaseOptions::default().retry_policy(Arc::new(FailFast)),
    );
    let inherits = db.collection::<Document>("fast");
    let overrides = db.collection_with_options::<Document>(
        "spec",
        CollectionOptions::default().retry_policy(Arc::new(SpecPolicy)),
    );
    refuse_inserts(&primary, 1).await;
    let error = within(inherits.insert_one(doc! { "_id": 1 }))
        .await
        .unwrap_err();
    assert_eq!(error.stop_reason(), Some(StopReason::PolicyDeclined));
    refuse_inserts(&primary, 1).await;
    within(overrides.insert_one(doc! { "_id": 1 }))
        .await
        .unwrap();
    assert_eq!(retries(&h.events).len(), 1);
    h.client.shutdown().await;
}
