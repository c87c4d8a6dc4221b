//! The retry scenarios of the simulated replica set: stepdowns, connections lost before and
//! after a write, state-change errors, and what is never retried. Every write is checked in
//! the store: applied exactly once.

use std::time::Duration;

use bson::{Document, doc};
use futures_util::TryStreamExt as _;
use steadfast::error::{ErrorClass, Outcome};
use steadfast::event::RetryReason;
use steadfast::options::{Acknowledgment, FindOptions, WriteConcern};

use crate::retry_support::{
    fail_command, failed, harness, lsid, primary_host, replica_set, retries, started, succeeded,
    txn_number, within,
};

#[tokio::test]
async fn a_stepdown_during_an_insert_is_retried_on_the_new_primary() {
    let deployment = replica_set().await;
    // Polling with a long heartbeat: the client cannot learn of the stepdown before its
    // insert does.
    let h = harness(
        &deployment.uri(),
        "&serverMonitoringMode=poll&heartbeatFrequencyMS=60000",
    )
    .await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    within(orders.insert_one(doc! { "_id": 0 })).await.unwrap();
    let old_primary = primary_host(&deployment).await;

    deployment.step_down(Duration::from_secs(60)).unwrap();
    within(orders.insert_one(doc! { "_id": 1 })).await.unwrap();

    let inserts = started(&h.events, "insert");
    assert_eq!(
        inserts.len(),
        3,
        "warm-up, the failed attempt and its retry"
    );
    assert_eq!(inserts[1].connection.address.to_string(), old_primary);
    let new_primary = primary_host(&deployment).await;
    assert_ne!(new_primary, old_primary);
    assert_eq!(inserts[2].connection.address.to_string(), new_primary);
    assert_eq!(txn_number(&inserts[1]), txn_number(&inserts[2]));
    assert!(txn_number(&inserts[1]).is_some());
    assert_eq!(lsid(&inserts[1]), lsid(&inserts[2]));
    assert_eq!(inserts[1].operation_id, inserts[2].operation_id);
    let failure = &failed(&h.events, "insert")[0].failure;
    assert!(
        failure.is_not_writable_primary() || failure.is_network_error(),
        "{failure}"
    );
    assert_eq!(retries(&h.events).len(), 1);
    assert_eq!(deployment.store().writes_applied("shop.orders"), 2);
    h.client.shutdown().await;
}

#[tokio::test]
async fn a_connection_lost_after_the_write_replays_the_stored_reply() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let counters = h.client.database("bank").collection::<Document>("counters");
    within(counters.insert_one(doc! { "_id": "n", "n": 0 }))
        .await
        .unwrap();
    // The primary commits the next transactional write, then closes the connection before
    // replying: the driver cannot know whether the write happened.
    crate::retry_support::admin_command(
        &primary_host(&deployment).await,
        doc! { "configureFailPoint": "onPrimaryTransactionalWrite", "mode": { "times": 1 } },
    )
    .await;
    within(counters.update_one(doc! { "_id": "n" }, doc! { "$inc": { "n": 1 } }))
        .await
        .unwrap();

    let updates = started(&h.events, "update");
    assert_eq!(updates.len(), 2, "the first attempt lost its reply");
    assert_eq!(txn_number(&updates[0]), txn_number(&updates[1]));
    assert!(failed(&h.events, "update")[0].failure.is_network_error());
    // The retry was answered from the transaction table: incremented exactly once.
    let document = within(counters.find_one(doc! { "_id": "n" }))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(document.get_i32("n").ok(), Some(1));
    assert_eq!(deployment.store().writes_applied("bank.counters"), 2);
    h.client.shutdown().await;
}

#[tokio::test]
async fn a_connection_lost_before_the_write_is_retried_and_applied_once() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    fail_command(
        &primary_host(&deployment).await,
        doc! { "times": 1 }.into(),
        doc! { "failCommands": ["insert"], "closeConnection": true },
    )
    .await;
    within(orders.insert_one(doc! { "_id": 1 })).await.unwrap();
    let inserts = started(&h.events, "insert");
    assert_eq!(inserts.len(), 2);
    assert_eq!(txn_number(&inserts[0]), txn_number(&inserts[1]));
    let events = retries(&h.events);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].reason, RetryReason::NetworkError);
    assert_eq!(deployment.store().writes_applied("shop.orders"), 1);
    h.client.shutdown().await;
}

#[tokio::test]
async fn state_change_and_network_codes_are_retried_once() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    // NotWritablePrimary, ShutdownInProgress, HostUnreachable.
    for (round, code) in [10107, 91, 6].into_iter().enumerate() {
        fail_command(
            &primary_host(&deployment).await,
            doc! { "times": 1 }.into(),
            doc! { "failCommands": ["insert"], "errorCode": code },
        )
        .await;
        within(orders.insert_one(doc! { "_id": round as i32 }))
            .await
            .unwrap_or_else(|e| panic!("code {code}: {e}"));
        let failure = failed(&h.events, "insert")
            .last()
            .map(|e| e.failure.clone())
            .unwrap();
        assert_eq!(failure.code(), Some(code));
        assert!(failure.has_label("RetryableWriteError"), "{failure}");
    }
    assert_eq!(started(&h.events, "insert").len(), 6);
    assert_eq!(retries(&h.events).len(), 3);
    assert_eq!(deployment.store().writes_applied("shop.orders"), 3);
    h.client.shutdown().await;
}

#[tokio::test]
async fn a_retryable_write_concern_error_is_retried_and_the_write_applied_once() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    let primary = primary_host(&deployment).await;
    fail_command(
        &primary,
        doc! { "times": 1 }.into(),
        doc! {
            "failCommands": ["insert"],
            "writeConcernError": { "code": 91, "errmsg": "shutting down" },
        },
    )
    .await;
    within(orders.insert_one(doc! { "_id": 1 })).await.unwrap();
    let inserts = started(&h.events, "insert");
    assert_eq!(inserts.len(), 2, "the write concern error was retried");
    assert_eq!(txn_number(&inserts[0]), txn_number(&inserts[1]));
    assert_eq!(
        retries(&h.events)[0].reason,
        RetryReason::WriteConcernError { code: 91 }
    );
    // The first attempt applied the write; the retry was answered from the transaction table.
    assert_eq!(deployment.store().writes_applied("shop.orders"), 1);

    // A write concern error no rule retries reaches the application, which learns that the
    // write was applied.
    fail_command(
        &primary,
        doc! { "times": 1 }.into(),
        doc! {
            "failCommands": ["insert"],
            "writeConcernError": { "code": 64, "errmsg": "waiting for replication timed out" },
        },
    )
    .await;
    let error = within(orders.insert_one(doc! { "_id": 2 }))
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(64), "{error}");
    assert_eq!(error.outcome(), Outcome::Applied);
    assert_eq!(started(&h.events, "insert").len(), 3);
    assert_eq!(deployment.store().writes_applied("shop.orders"), 2);
    h.client.shutdown().await;
}

#[tokio::test]
async fn a_non_retryable_error_is_reported_after_one_attempt() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    fail_command(
        &primary_host(&deployment).await,
        doc! { "times": 1 }.into(),
        doc! { "failCommands": ["insert"], "errorCode": 11000 },
    )
    .await;
    let error = within(orders.insert_one(doc! { "_id": 1 }))
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(11000));
    assert_eq!(error.class(), ErrorClass::Command);
    assert_eq!(error.retry_history().len(), 1);
    assert_eq!(started(&h.events, "insert").len(), 1);
    assert!(retries(&h.events).is_empty());
    assert_eq!(deployment.store().writes_applied("shop.orders"), 0);
    h.client.shutdown().await;
}

#[tokio::test]
async fn unacknowledged_writes_and_update_many_carry_no_txn_number_and_are_not_retried() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    within(orders.insert_many([doc! { "_id": 1 }, doc! { "_id": 2 }]))
        .await
        .unwrap();

    let mut w0 = WriteConcern::default();
    w0.w = Some(Acknowledgment::Nodes(0));
    within(orders.insert_one(doc! { "_id": 3 }).write_concern(w0))
        .await
        .unwrap();
    let unacknowledged = started(&h.events, "insert").pop().unwrap();
    assert!(
        unacknowledged.command.get("lsid").is_none(),
        "no session for w:0"
    );
    assert_eq!(txn_number(&unacknowledged), None);

    fail_command(
        &primary_host(&deployment).await,
        doc! { "times": 1 }.into(),
        doc! { "failCommands": ["update"], "closeConnection": true },
    )
    .await;
    let error = within(orders.update_many(doc! {}, doc! { "$set": { "seen": true } }))
        .await
        .unwrap_err();
    assert!(error.is_network_error(), "{error}");
    assert_eq!(error.class(), ErrorClass::Transient);
    assert_eq!(error.outcome(), Outcome::Ambiguous);
    let updates = started(&h.events, "update");
    assert_eq!(updates.len(), 1, "updateMany is never retried");
    assert_eq!(txn_number(&updates[0]), None);
    assert!(
        lsid(&updates[0]).is_some(),
        "it still runs in an implicit session"
    );
    assert!(!error.has_label("RetryableWriteError"));
    h.client.shutdown().await;
}

#[tokio::test]
async fn a_get_more_is_never_retried() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let items = h.client.database("shop").collection::<Document>("items");
    within(items.insert_many((0..3).map(|i| doc! { "_id": i })))
        .await
        .unwrap();
    fail_command(
        &primary_host(&deployment).await,
        doc! { "times": 1 }.into(),
        doc! { "failCommands": ["getMore"], "closeConnection": true },
    )
    .await;
    let mut cursor = within(
        items
            .find(doc! {})
            .with_options(FindOptions::default().batch_size(1)),
    )
    .await
    .unwrap();
    let first = within(cursor.try_next()).await.unwrap();
    assert_eq!(first.and_then(|d| d.get_i32("_id").ok()), Some(0));
    let error = within(cursor.try_next()).await.unwrap_err();
    assert!(error.is_network_error(), "{error}");
    assert_eq!(started(&h.events, "getMore").len(), 1);
    assert!(retries(&h.events).is_empty());
    h.client.shutdown().await;
}

#[tokio::test]
async fn a_read_is_retried_on_another_mongos() {
    let deployment = blackpipe::deployment::Deployment::start(
        blackpipe::deployment::DeploymentConfig::sharded(2).with_seed(3),
    )
    .await
    .unwrap();
    // Router 1 answers slowly, so it is outside the latency window: first attempts go to
    // router 0, and only the deprioritization of router 0 sends the retry to router 1.
    deployment.slow(1, Duration::from_millis(80)).unwrap();
    let router0 = deployment.host(0).unwrap();
    let router1 = deployment.host(1).unwrap();
    let h = harness(&deployment.uri(), "").await;
    let items = h.client.database("shop").collection::<Document>("items");
    within(items.insert_one(doc! { "_id": 1 })).await.unwrap();
    fail_command(
        &router0,
        doc! { "times": 1 }.into(),
        doc! { "failCommands": ["find"], "closeConnection": true },
    )
    .await;
    let found = within(items.find_one(doc! { "_id": 1 })).await.unwrap();
    assert!(found.is_some());
    let finds = started(&h.events, "find");
    assert_eq!(finds.len(), 2);
    assert_eq!(finds[0].connection.address.to_string(), router0);
    assert_eq!(finds[1].connection.address.to_string(), router1);
    assert_eq!(succeeded(&h.events, "find").len(), 1);
    let events = retries(&h.events);
    assert_eq!(
        events[0].server.as_ref().map(ToString::to_string),
        Some(router0)
    );
    h.client.shutdown().await;
}

#[tokio::test]
async fn events_of_a_retried_write_come_in_order() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    within(orders.insert_one(doc! { "_id": 0 })).await.unwrap();
    fail_command(
        &primary_host(&deployment).await,
        doc! { "times": 1 }.into(),
        doc! { "failCommands": ["insert"], "errorCode": 10107 },
    )
    .await;
    let from = h.events.len();
    within(orders.insert_one(doc! { "_id": 1 })).await.unwrap();
    let sequence: Vec<String> = h.events.events()[from..]
        .iter()
        .filter_map(|event| match event {
            steadfast::event::Event::Command(c) if c.command_name() == "insert" => Some(match c {
                steadfast::event::CommandEvent::Started(_) => "started".to_string(),
                steadfast::event::CommandEvent::Succeeded(_) => "succeeded".to_string(),
                steadfast::event::CommandEvent::Failed(_) => "failed".to_string(),
                _ => "other".to_string(),
            }),
            steadfast::event::Event::Retry(r) => Some(format!("retry {}", r.attempt)),
            _ => None,
        })
        .collect();
    assert_eq!(
        sequence,
        ["started", "failed", "retry 0", "started", "succeeded"]
    );
    let inserts = started(&h.events, "insert");
    let (first, second) = (&inserts[1], &inserts[2]);
    assert_eq!(first.operation_id, second.operation_id);
    assert_ne!(first.request_id, second.request_id);
    let failure = &failed(&h.events, "insert")[0];
    assert_eq!(failure.request_id, first.request_id);
    assert_eq!(failure.operation_id, first.operation_id);
    assert_eq!(
        succeeded(&h.events, "insert")[1].request_id,
        second.request_id
    );
    assert_eq!(
        retries(&h.events)[0].reason,
        RetryReason::StateChange { code: 10107 }
    );
    h.client.shutdown().await;
}
