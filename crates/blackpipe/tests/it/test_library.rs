//! blackpipe as a library for users' tests: the README's `#[tokio::test]` example, run (the
//! README's own copy is only compiled, since a doctest cannot run a `#[tokio::test]`).

use std::time::Duration;

use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{Document, doc};

use crate::support::within;

#[tokio::test]
async fn the_readme_failover_and_fail_point_example_runs() {
    let deployment = Deployment::start(DeploymentConfig::replica_set(3))
        .await
        .unwrap();
    let client = mongodb::Client::with_uri_str(deployment.uri())
        .await
        .unwrap();
    let orders = client.database("shop").collection::<Document>("orders");
    within(orders.insert_one(doc! { "_id": 1, "item": "pen" }))
        .await
        .unwrap();
    deployment.step_down(Duration::from_secs(10)).unwrap();
    within(deployment.wait_for_primary()).await;
    within(client.database("admin").run_command(doc! {
        "configureFailPoint": "failCommand",
        "mode": { "times": 1 },
        "data": { "failCommands": ["insert"], "errorCode": 6,
                  "errorLabels": ["RetryableWriteError"] },
    }))
    .await
    .unwrap();
    within(orders.insert_one(doc! { "_id": 2, "item": "ink" }))
        .await
        .unwrap();
    assert_eq!(within(orders.count_documents(doc! {})).await.unwrap(), 2);
}
