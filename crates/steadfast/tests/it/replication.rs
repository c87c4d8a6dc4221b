//! The driver on a replica set that replicates for real (blackpipe's members own their data):
//! a lagging secondary serves stale reads, a causally consistent session reads its own writes
//! there anyway, and a `w: 1` write acknowledged by an isolated primary is lost to a rollback
//! while a majority write survives.

use std::time::Duration;

use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{Document, doc};
use steadfast::Client;
use steadfast::options::{
    Acknowledgment, ReadPreference, ReadPreferenceMode, SessionOptions, WriteConcern,
};

use crate::retry_support::within;

async fn set_and_client(config: DeploymentConfig) -> (Deployment, Client) {
    let deployment = Deployment::start(config.with_seed(5))
        .await
        .expect("the replica set starts");
    let uri = format!("{}&heartbeatFrequencyMS=500", deployment.uri());
    let client = Client::with_uri_str(&uri).await.expect("the client starts");
    (deployment, client)
}

fn w1() -> WriteConcern {
    let mut concern = WriteConcern::default();
    concern.w = Some(Acknowledgment::Nodes(1));
    concern
}

fn secondary() -> ReadPreference {
    ReadPreference::with_mode(ReadPreferenceMode::Secondary)
}

#[tokio::test]
async fn a_lagging_secondary_is_stale_unless_the_session_is_causally_consistent() {
    let (deployment, client) = set_and_client(DeploymentConfig::replica_set(3)).await;
    let orders = client.database("shop").collection::<Document>("orders");
    // Secondaries apply nothing until resumed: as stale as a secondary can be.
    deployment.pause_replication(None).unwrap();
    within(orders.insert_one(doc! { "_id": 1 }).write_concern(w1()))
        .await
        .unwrap();
    let stale = within(
        orders
            .find_one(doc! { "_id": 1 })
            .selection_criteria(secondary()),
    )
    .await
    .unwrap();
    assert_eq!(stale, None, "a plain read on a secondary does not wait");

    let mut session = within(
        client.start_session_with_options(SessionOptions::default().causal_consistency(true)),
    )
    .await
    .unwrap();
    within(
        orders
            .insert_one(doc! { "_id": 2 })
            .write_concern(w1())
            .session(&mut session),
    )
    .await
    .unwrap();
    let reading = {
        let orders = orders.clone();
        tokio::spawn(async move {
            orders
                .find_one(doc! { "_id": 2 })
                .selection_criteria(secondary())
                .session(&mut session)
                .await
        })
    };
    // The causal read waits on the secondary for the write's operationTime.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !reading.is_finished(),
        "it waits for the secondary to catch up"
    );
    deployment.resume_replication(None).unwrap();
    let own_write = within(reading).await.unwrap().unwrap();
    assert_eq!(own_write, Some(doc! { "_id": 2 }));
    client.shutdown().await;
}

#[tokio::test]
async fn a_w1_write_on_an_isolated_primary_is_rolled_back_and_a_majority_write_is_not() {
    let config = DeploymentConfig::replica_set(3).with_auto_failover(false);
    let (deployment, client) = set_and_client(config).await;
    let orders = client.database("shop").collection::<Document>("orders");
    within(orders.insert_one(doc! { "_id": "before" }))
        .await
        .unwrap();
    deployment.partition_from(0, &[1, 2]).unwrap();
    within(
        orders
            .insert_one(doc! { "_id": "lost" })
            .write_concern(w1()),
    )
    .await
    .expect("the isolated primary acknowledges w:1");
    deployment.elect(1).unwrap();
    deployment.heal(0).unwrap();
    // The driver follows the new primary; the default (majority) write survives.
    within(orders.insert_one(doc! { "_id": "kept" }))
        .await
        .unwrap();
    for member in 0..3 {
        let store = deployment.member_store(member).unwrap();
        let ids: Vec<_> = store
            .documents("shop", "orders")
            .into_iter()
            .filter_map(|document| document.get_str("_id").ok().map(str::to_owned))
            .collect();
        assert_eq!(ids, ["before", "kept"], "member {member}");
    }
    let rolled_back: Vec<_> = deployment
        .rollbacks()
        .into_iter()
        .filter_map(|write| write.id)
        .collect();
    assert_eq!(rolled_back, [bson::Bson::String("lost".into())]);
    client.shutdown().await;
}
