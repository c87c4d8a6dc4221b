//! Discovery, monitoring and failover as the official `mongodb` driver experiences them on a
//! blackpipe deployment: what its SDAM events say, and whether its writes survive.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use blackpipe::deployment::{Deployment, DeploymentConfig, MemberOptions};
use bson::{Document, doc};
use mongodb::ServerType;
use mongodb::event::sdam::SdamEvent;
use mongodb::options::{ReadPreference, SelectionCriteria};
use tokio::sync::mpsc;

use crate::fidelity::{CommandLog, logged_client, monitored_client};
use crate::support::within;

async fn start(config: DeploymentConfig) -> Deployment {
    Deployment::start(config.with_seed(17))
        .await
        .expect("the deployment starts")
}

/// The latest server type the driver reported for each address, updated from SDAM events.
#[derive(Default)]
struct ServerTypes {
    latest: HashMap<String, ServerType>,
    heartbeats_awaited: HashMap<String, usize>,
}

impl ServerTypes {
    fn apply(&mut self, event: &SdamEvent) {
        match event {
            SdamEvent::ServerDescriptionChanged(change) => {
                self.latest.insert(
                    change.address.to_string(),
                    change.new_description.server_type(),
                );
            }
            SdamEvent::ServerHeartbeatSucceeded(beat) if beat.awaited => {
                *self
                    .heartbeats_awaited
                    .entry(beat.server_address.to_string())
                    .or_default() += 1;
            }
            _ => {}
        }
    }

    /// Consumes events until `done` holds.
    async fn until(
        &mut self,
        events: &mut mpsc::UnboundedReceiver<SdamEvent>,
        mut done: impl FnMut(&Self) -> bool,
    ) {
        within(async {
            while !done(self) {
                let event = events.recv().await.expect("the client is alive");
                self.apply(&event);
            }
        })
        .await;
    }

    fn is(&self, host: &str, server_type: ServerType) -> bool {
        self.latest.get(host) == Some(&server_type)
    }
}

#[tokio::test]
async fn the_driver_discovers_the_whole_set_from_one_seed() {
    let deployment = start(DeploymentConfig::replica_set_with(vec![
        MemberOptions::electable(),
        MemberOptions::electable(),
        MemberOptions::passive(),
        MemberOptions::arbiter(),
    ]))
    .await;
    let hosts = deployment.hosts();
    // Seed with the passive member only.
    let seed = format!("mongodb://{}/?replicaSet=rs0", hosts[2]);
    let (client, mut events) = monitored_client(&seed, "discovery").await;
    let mut types = ServerTypes::default();
    types
        .until(&mut events, |types| {
            types.is(&hosts[0], ServerType::RsPrimary)
                && types.is(&hosts[1], ServerType::RsSecondary)
                && types.is(&hosts[2], ServerType::RsSecondary)
                && types.is(&hosts[3], ServerType::RsArbiter)
        })
        .await;
    client.shutdown().await;
}

#[tokio::test]
async fn the_driver_reads_and_writes() {
    let deployment = start(DeploymentConfig::replica_set(3)).await;
    let client = logged_client(&deployment.uri(), "crud", &CommandLog::default()).await;
    let collection = client.database("shop").collection::<Document>("orders");
    collection
        .insert_many((0..10).map(|i| doc! { "_id": i, "qty": i * 10 }))
        .await
        .unwrap();
    collection
        .update_one(doc! { "_id": 3 }, doc! { "$set": {"qty": 1} })
        .await
        .unwrap();
    collection.delete_one(doc! { "_id": 9 }).await.unwrap();
    assert_eq!(
        collection
            .count_documents(doc! { "qty": {"$gte": 50} })
            .await
            .unwrap(),
        4
    );
    let from_secondary = collection
        .find_one(doc! { "_id": 3 })
        .selection_criteria(SelectionCriteria::ReadPreference(
            ReadPreference::Secondary { options: None },
        ))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(from_secondary.get_i32("qty").unwrap(), 1);
    assert_eq!(deployment.store().writes_applied("shop.orders"), 12);
    client.shutdown().await;
}

#[tokio::test]
async fn retryable_writes_survive_a_stepdown_and_apply_exactly_once() {
    let deployment = Arc::new(start(DeploymentConfig::replica_set(3)).await);
    // Slow the primary so that writes are in flight when it steps down.
    deployment.slow(0, Duration::from_millis(20)).unwrap();
    let log = CommandLog::default();
    let client = logged_client(&deployment.uri(), "stepdown", &log).await;
    let collection = client.database("bank").collection::<Document>("ledger");
    let writers: Vec<_> = (0..8)
        .map(|writer| {
            let collection = collection.clone();
            tokio::spawn(async move {
                for sequence in 0..10 {
                    collection
                        .insert_one(doc! { "writer": writer, "sequence": sequence })
                        .await
                        .expect("retryable writes survive the stepdown");
                }
            })
        })
        .collect();
    // Step down once some writes have landed, while the others are in flight.
    within(async {
        while deployment.store().writes_applied("bank.ledger") < 10 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    deployment.step_down(Duration::from_secs(60)).unwrap();
    for writer in writers {
        within(writer).await.unwrap();
    }
    assert_eq!(collection.count_documents(doc! {}).await.unwrap(), 80);
    assert_eq!(deployment.store().writes_applied("bank.ledger"), 80);
    assert!(
        log.failures("insert")
            .iter()
            .any(|error| { error.contains_label("RetryableWriteError") }),
        "some writes were interrupted and retried"
    );
    assert_ne!(deployment.primary(), Some(0));
    eprintln!(
        "80 inserts, {} attempts, {} failed attempts retried",
        log.started("insert"),
        log.failures("insert").len()
    );
    client.shutdown().await;
}

#[tokio::test]
async fn streaming_monitors_neither_spin_nor_stall() {
    let deployment = start(DeploymentConfig::replica_set(3)).await;
    let hosts = deployment.hosts();
    let (client, mut events) = monitored_client(&deployment.uri(), "monitors").await;
    let mut types = ServerTypes::default();
    // Wait until every monitor has switched to streaming (its first awaited heartbeat).
    types
        .until(&mut events, |types| {
            hosts
                .iter()
                .all(|host| types.heartbeats_awaited.get(host).copied().unwrap_or(0) >= 1)
        })
        .await;
    let before: Vec<u64> = (0..3)
        .map(|index| deployment.counters(index).unwrap().hellos())
        .collect();
    let awaited_before = types.heartbeats_awaited.clone();
    // The measurement window: four heartbeat periods of 500 ms.
    let window = Duration::from_secs(2);
    tokio::time::sleep(window).await;
    while let Ok(event) = events.try_recv() {
        types.apply(&event);
    }
    for (index, host) in hosts.iter().enumerate() {
        let hellos = deployment.counters(index).unwrap().hellos() - before[index];
        let streamed = types.heartbeats_awaited.get(host).copied().unwrap_or(0)
            - awaited_before.get(host).copied().unwrap_or(0);
        eprintln!("{host}: {hellos} hello requests, {streamed} streamed heartbeats in {window:?}");
        // A spinning monitor would send thousands of hellos; a streaming one sends only its
        // RTT pings (about one per heartbeat) and receives one streamed reply per period.
        assert!(
            hellos <= 20,
            "{host}: {hellos} hello requests in {window:?}"
        );
        assert!(
            (1..=20).contains(&streamed),
            "{host}: {streamed} streamed heartbeats in {window:?}"
        );
    }
    client.shutdown().await;
}

#[tokio::test]
async fn a_killed_member_goes_unknown_and_returns_after_restart() {
    let deployment = start(DeploymentConfig::replica_set(3)).await;
    let hosts = deployment.hosts();
    let (client, mut events) = monitored_client(&deployment.uri(), "kill").await;
    let mut types = ServerTypes::default();
    types
        .until(&mut events, |types| {
            types.is(&hosts[2], ServerType::RsSecondary)
        })
        .await;
    deployment.kill(2).await.unwrap();
    types
        .until(&mut events, |types| {
            types.is(&hosts[2], ServerType::Unknown)
        })
        .await;
    deployment.restart(2).await.unwrap();
    types
        .until(&mut events, |types| {
            types.is(&hosts[2], ServerType::RsSecondary)
        })
        .await;
    client.shutdown().await;
}

#[tokio::test]
async fn the_driver_follows_a_new_primary_after_the_old_one_is_killed() {
    let deployment = start(DeploymentConfig::replica_set(3)).await;
    let hosts = deployment.hosts();
    let (client, mut events) = monitored_client(&deployment.uri(), "failover").await;
    let collection = client.database("db").collection::<Document>("c");
    collection.insert_one(doc! { "_id": 1 }).await.unwrap();
    deployment.kill(0).await.unwrap();
    let new_primary = within(deployment.wait_for_primary()).await;
    let mut types = ServerTypes::default();
    types
        .until(&mut events, |types| {
            types.is(&hosts[new_primary], ServerType::RsPrimary)
                && types.is(&hosts[0], ServerType::Unknown)
        })
        .await;
    collection.insert_one(doc! { "_id": 2 }).await.unwrap();
    assert_eq!(deployment.store().writes_applied("db.c"), 2);
    client.shutdown().await;
}

#[tokio::test]
async fn the_driver_uses_every_router_of_a_sharded_front_end() {
    let deployment = start(DeploymentConfig::sharded(2)).await;
    let hosts = deployment.hosts();
    let (client, mut events) = monitored_client(&deployment.uri(), "mongos").await;
    let mut types = ServerTypes::default();
    types
        .until(&mut events, |types| {
            hosts.iter().all(|host| types.is(host, ServerType::Mongos))
        })
        .await;
    let collection = client.database("db").collection::<Document>("c");
    for i in 0..20 {
        collection.insert_one(doc! { "_id": i }).await.unwrap();
    }
    assert_eq!(collection.count_documents(doc! {}).await.unwrap(), 20);
    // A killed router goes Unknown; the other keeps serving.
    deployment.kill(1).await.unwrap();
    types
        .until(&mut events, |types| {
            types.is(&hosts[1], ServerType::Unknown)
        })
        .await;
    collection.insert_one(doc! { "_id": 20 }).await.unwrap();
    assert_eq!(deployment.store().writes_applied("db.c"), 21);
    client.shutdown().await;
}

#[tokio::test]
async fn the_driver_talks_to_a_standalone() {
    let deployment = start(DeploymentConfig::standalone()).await;
    let (client, mut events) = monitored_client(&deployment.uri(), "standalone").await;
    let mut types = ServerTypes::default();
    let host = deployment.hosts().remove(0);
    types
        .until(&mut events, |types| types.is(&host, ServerType::Standalone))
        .await;
    let collection = client.database("db").collection::<Document>("c");
    collection
        .insert_one(doc! { "_id": 1, "x": 1 })
        .await
        .unwrap();
    let found = collection.find_one(doc! { "x": 1 }).await.unwrap().unwrap();
    assert_eq!(found.get_i32("_id").unwrap(), 1);
    client.shutdown().await;
}
