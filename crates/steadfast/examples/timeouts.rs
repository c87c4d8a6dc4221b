//! Timeouts: one `timeoutMS` deadline per operation, set on the client (connection string),
//! a collection or one operation, against a replica set whose primary has become slow.
//!
//! Run with `cargo run -p steadfast --example timeouts`.
#![allow(
    clippy::disallowed_methods,
    reason = "the example reads the clock to show how long each operation took"
)]

use std::time::{Duration, Instant};

use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{Document, doc};
use steadfast::options::CollectionOptions;

/// How long each command takes on the slow primary.
const SLOW: Duration = Duration::from_millis(800);

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let deployment = Deployment::start(DeploymentConfig::replica_set(3).with_port(0)).await?;
    // Client level: every operation gets at most 2 s, retries and server selection included.
    let client =
        steadfast::Client::with_uri_str(&format!("{}&timeoutMS=2000", deployment.uri())).await?;
    let items = client.database("shop").collection::<Document>("items");
    // Collection level: overrides the client's timeout for operations on this handle.
    let quick_items = client.database("shop").collection_with_options::<Document>(
        "items",
        CollectionOptions::default().timeout(Duration::from_millis(300)),
    );
    items
        .insert_one(doc! { "_id": 1, "name": "kettle" })
        .await?;

    // From now on every command on the primary runs for 800 ms. The driver sends each command
    // with maxTimeMS set to what is left of its deadline, so the server stops it in time too.
    let primary = deployment.wait_for_primary().await;
    deployment.slow_commands(primary, SLOW)?;

    timed(
        "client timeoutMS 2000 ms",
        items.find_one(doc! { "_id": 1 }),
    )
    .await;
    timed(
        "collection timeout 300 ms",
        quick_items.find_one(doc! { "_id": 1 }),
    )
    .await;
    // Operation level: overrides both.
    timed(
        "operation timeout 100 ms",
        items
            .find_one(doc! { "_id": 1 })
            .timeout(Duration::from_millis(100)),
    )
    .await;
    // Zero means no limit for this operation, whatever the client and collection say.
    timed(
        "operation timeout 0 (no limit)",
        quick_items
            .find_one(doc! { "_id": 1 })
            .timeout(Duration::ZERO),
    )
    .await;
    // A write that runs out of time: the error's outcome tells the application what it may
    // assume about the document (the server stopped the command at its maxTimeMS, but a reply
    // that never came cannot say whether the insert happened before that).
    match quick_items.insert_one(doc! { "_id": 2 }).await {
        Ok(_) => println!("insert: acknowledged"),
        Err(error) => println!(
            "insert with a 300 ms timeout: timeout error {}, outcome {:?}",
            error.is_timeout(),
            error.outcome()
        ),
    }

    deployment.slow_commands(primary, Duration::ZERO)?;
    client.shutdown().await;
    deployment.stop().await;
    Ok(())
}

/// Awaits `operation` and prints how long it took and how it ended.
async fn timed<T: std::fmt::Debug>(
    what: &str,
    operation: impl std::future::IntoFuture<Output = steadfast::Result<T>>,
) {
    let started = Instant::now();
    let result = operation.await;
    let took = started.elapsed().as_millis();
    match result {
        Ok(value) => println!("{what}: succeeded after {took} ms: {value:?}"),
        Err(error) => println!(
            "{what}: failed after {took} ms (timeout error: {}): {error}",
            error.is_timeout()
        ),
    }
}
