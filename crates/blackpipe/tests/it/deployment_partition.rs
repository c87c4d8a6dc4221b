//! Partitions as a real network makes them: requests sent while a node is partitioned are
//! delivered late (TCP retransmits) and answered, in order, once it heals; and the
//! `onPrimaryTransactionalWrite` fail point seen through the official driver's retries.

use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{Bson, Document, doc};

use crate::deployment::{client, start};
use crate::fidelity::{CommandLog, logged_client};
use crate::support::{reply_document, within};

const NAMESPACE: &str = "partition.held";

fn insert(id: i32) -> Document {
    doc! { "insert": "held", "documents": [{ "_id": id }], "$db": "partition" }
}

/// Resolves once node `index` has received more than `seen` requests.
async fn received_more_than(deployment: &Deployment, index: usize, seen: u64) {
    let counters = deployment.counters(index).expect("node exists");
    within(async {
        while counters.commands() <= seen {
            tokio::task::yield_now().await;
        }
    })
    .await;
}

#[tokio::test]
async fn a_request_sent_during_a_partition_is_answered_once_after_heal() {
    let deployment = start(DeploymentConfig::standalone()).await;
    let mut connection = client(&deployment, 0).await;
    deployment.partition(0).unwrap();
    let held_insert = connection.send_command(insert(1)).await;
    received_more_than(&deployment, 0, 0).await;
    // Pipelined behind the held insert on the same connection.
    let held_ping = connection
        .send_command(doc! { "ping": 1, "$db": "admin" })
        .await;
    assert_eq!(
        deployment.store().writes_applied(NAMESPACE),
        0,
        "received while partitioned, so not processed yet"
    );
    assert!(
        !connection.has_pending_bytes(),
        "no reply while partitioned"
    );

    deployment.heal(0).unwrap();
    let first = connection.expect_message().await;
    assert_eq!(
        first.response_to, held_insert,
        "replies come in request order"
    );
    let reply = reply_document(&first);
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0, "{reply}");
    assert_eq!(reply.get_i32("n").unwrap(), 1, "{reply}");
    let second = connection.expect_message().await;
    assert_eq!(second.response_to, held_ping);
    assert_eq!(deployment.store().writes_applied(NAMESPACE), 1);
    assert_eq!(deployment.store().documents("partition", "held").len(), 1);
}

#[tokio::test]
async fn a_connection_closed_during_a_partition_drops_its_held_requests() {
    let deployment = start(DeploymentConfig::standalone()).await;
    let mut connection = client(&deployment, 0).await;
    deployment.partition(0).unwrap();
    connection.send_command(insert(1)).await;
    received_more_than(&deployment, 0, 0).await;
    drop(connection);
    within(async {
        while deployment.open_connections() > 0 {
            tokio::task::yield_now().await;
        }
    })
    .await;

    deployment.heal(0).unwrap();
    let mut other = client(&deployment, 0).await;
    let reply = other.round_trip(doc! { "ping": 1, "$db": "admin" }).await;
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0);
    assert_eq!(deployment.store().writes_applied(NAMESPACE), 0);
    assert!(deployment.store().documents("partition", "held").is_empty());
}

#[tokio::test]
async fn an_awaitable_hello_held_across_a_partition_describes_the_healed_node() {
    let deployment = start(DeploymentConfig::replica_set(3)).await;
    let mut node = client(&deployment, 1).await;
    let first = node.round_trip(doc! { "hello": 1, "$db": "admin" }).await;
    let hellos = deployment.counters(1).unwrap();
    let mut awaitable = doc! { "hello": 1, "$db": "admin" };
    awaitable.insert(
        "topologyVersion",
        first.get_document("topologyVersion").unwrap().clone(),
    );
    awaitable.insert("maxAwaitTimeMS", 600_000_i64);
    let waiting = node.send_command(awaitable).await;
    within(async {
        while hellos.hellos() < 2 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    // The partition moves the topologyVersion, which wakes the hello: its reply is held.
    deployment.partition(1).unwrap();
    let ping = node.send_command(doc! { "ping": 1, "$db": "admin" }).await;
    assert!(!node.has_pending_bytes(), "no reply while partitioned");

    deployment.heal(1).unwrap();
    let healed = deployment
        .topology()
        .node(1)
        .unwrap()
        .topology_version()
        .counter;
    let message = node.expect_message().await;
    assert_eq!(message.response_to, waiting);
    let reply = reply_document(&message);
    let counter = reply
        .get_document("topologyVersion")
        .unwrap()
        .get_i64("counter")
        .unwrap();
    assert_eq!(counter, healed, "the reply describes the node once healed");
    assert!(reply.get_bool("secondary").unwrap(), "{reply}");
    assert_eq!(node.expect_message().await.response_to, ping);
}

fn count_of(reply: &Document) -> i64 {
    match reply.get("count") {
        Some(Bson::Int32(count)) => i64::from(*count),
        Some(Bson::Int64(count)) => *count,
        other => panic!("no integral count in {reply}: {other:?}"),
    }
}

#[tokio::test]
async fn a_deduplicated_retry_does_not_trigger_on_primary_transactional_write() {
    let deployment = start(DeploymentConfig::replica_set(3)).await;
    let log = CommandLog::default();
    let client = logged_client(&deployment.uri(), "dedup-retry", &log).await;
    let admin = client.database("admin");
    admin
        .run_command(doc! {
            "configureFailPoint": "onPrimaryTransactionalWrite",
            "mode": "alwaysOn",
            "data": { "closeConnection": true },
        })
        .await
        .expect("configureFailPoint succeeds");
    let collection = client.database("dedup").collection::<Document>("retried");
    within(collection.insert_one(doc! { "_id": 1 }))
        .await
        .expect("the retry gets the stored reply");
    assert_eq!(log.started("insert"), 2, "the first attempt lost its reply");
    assert_eq!(log.failures("insert").len(), 1);
    assert_eq!(deployment.store().documents("dedup", "retried").len(), 1);
    assert_eq!(deployment.store().writes_applied("dedup.retried"), 1);
    let off = admin
        .run_command(doc! { "configureFailPoint": "onPrimaryTransactionalWrite", "mode": "off" })
        .await
        .expect("configureFailPoint succeeds");
    assert_eq!(count_of(&off), 1, "only the applied attempt triggered it");
    client.shutdown().await;
}
