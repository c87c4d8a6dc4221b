//! What an idle client holds: background tasks and sockets, against an embedded blackpipe
//! replica set and standalone, after discovery and one operation.
//!
//! Run with `cargo run --release -p steadfast --example idle_footprint`.
#![allow(
    clippy::disallowed_methods,
    reason = "tests and examples drive the clock, tasks and randomness themselves"
)]

use std::time::Duration;

use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::doc;

async fn measure(name: &str, deployment: &Deployment) -> Result<(), Box<dyn std::error::Error>> {
    let before = deployment.open_connections();
    let client = steadfast::Client::with_uri_str(&deployment.uri()).await?;
    // One operation: discovery done, one pooled connection to the primary.
    client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await?;
    // Let monitors settle into their steady state (streaming hello + RTT connection each).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let tasks = client.background_tasks();
    println!(
        "{name}: {} members, {} background tasks, {} sockets open on the server side (one pooled connection after one ping)",
        deployment.hosts().len(),
        tasks.live(),
        deployment.open_connections() - before,
    );
    client.shutdown().await;
    tasks.wait_until_idle().await;
    // The server notices closed sockets asynchronously; give it a moment (bounded).
    for _ in 0..100 {
        if deployment.open_connections() == before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!(
        "{name}: after shutdown: {} tasks, {} sockets",
        tasks.live(),
        deployment.open_connections() - before
    );
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let standalone = Deployment::start(DeploymentConfig::standalone()).await?;
    measure("standalone", &standalone).await?;
    standalone.stop().await;
    let replica_set = Deployment::start(DeploymentConfig::replica_set(3)).await?;
    replica_set.wait_for_primary().await;
    measure("replica set", &replica_set).await?;
    replica_set.stop().await;
    Ok(())
}
