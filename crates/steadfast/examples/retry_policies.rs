//! Retry policies: the same failures under the default `SpecPolicy`, `FailFast` and
//! `BestEffort`, set per collection and per operation (a client-wide policy is
//! `ClientBuilder::retry_policy`), against an embedded blackpipe replica set.
//!
//! Run with `cargo run -p steadfast --example retry_policies`.

use std::sync::Arc;

use blackpipe::deployment::{Deployment, DeploymentConfig};
use blackpipe::failpoint::{FailPointMode, Overload};
use bson::{Document, doc};
use steadfast::event::{Event, EventRecorder};
use steadfast::options::CollectionOptions;
use steadfast::retries::{BestEffort, FailFast};
use steadfast::{Client, ClientBuilder, Error};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let deployment = Deployment::start(DeploymentConfig::replica_set(3).with_port(0)).await?;
    let events = Arc::new(EventRecorder::new());
    let client = ClientBuilder::from_uri_str(&deployment.uri())
        .await?
        .event_listener(events.clone())
        .build()?;
    let shop = client.database("shop");
    let orders = shop.collection::<Document>("orders");
    // The same collection, with a policy that never retries.
    let fail_fast = shop.collection_with_options::<Document>(
        "orders",
        CollectionOptions::default().retry_policy(Arc::new(FailFast)),
    );
    orders.insert_one(doc! { "_id": 0 }).await?;
    let primary = deployment.wait_for_primary().await;
    let retries = || events.count(|event| matches!(event, Event::Retry(_)));

    // 1. Overload (code 462, SystemOverloadedError + RetryableError): the default policy backs
    //    off and retries, up to maxAdaptiveRetries (2) times.
    deployment.overload(primary, Some(Overload::new(FailPointMode::Times(2), None)))?;
    let before = retries();
    orders.insert_one(doc! { "_id": 1 }).await?;
    println!(
        "spec policy, overloaded twice: inserted after {} retries",
        retries() - before
    );

    // 2. FailFast: the first error reaches the application, unretried.
    deployment.overload(primary, Some(Overload::new(FailPointMode::Times(1), None)))?;
    let error = fail_fast.insert_one(doc! { "_id": 2 }).await.unwrap_err();
    report("fail fast, overloaded once", &error);
    deployment.overload(primary, None)?;

    // 3. A primary that answers NotWritablePrimary three times in a row. The specification
    //    retries a write once, so the default policy gives up; `BestEffort` keeps retrying
    //    safe failures (this one ran nowhere) until its deadline, so the insert succeeds.
    refuse_inserts(&client, 3).await?;
    let error = orders.insert_one(doc! { "_id": 3 }).await.unwrap_err();
    report("spec policy, refused three times", &error);
    refuse_inserts(&client, 0).await?;

    refuse_inserts(&client, 3).await?;
    let before = retries();
    orders
        .insert_one(doc! { "_id": 3 })
        .retry_policy(Arc::new(BestEffort::default()))
        .await?;
    println!(
        "best effort, refused three times: inserted after {} retries",
        retries() - before
    );

    let stored = orders.count_documents(doc! {}).await?;
    println!("{stored} documents stored (ids 0, 1 and 3): no write was applied twice");
    client.shutdown().await;
    deployment.stop().await;
    Ok(())
}

/// Makes the primary answer the next `times` inserts with NotWritablePrimary (0 turns it off).
async fn refuse_inserts(client: &Client, times: i32) -> steadfast::Result<()> {
    let mode = if times == 0 {
        "off".into()
    } else {
        bson::Bson::from(doc! { "times": times })
    };
    client
        .database("admin")
        .run_command(doc! {
            "configureFailPoint": "failCommand",
            "mode": mode,
            "data": { "failCommands": ["insert"], "errorCode": 10107 },
        })
        .await?;
    Ok(())
}

/// Prints what a failed operation tells the application.
fn report(what: &str, error: &Error) {
    println!(
        "{what}: failed with code {:?} after {} attempt(s); stopped because {:?}, \
         outcome {:?}, class {:?}",
        error.code(),
        error.retry_history().len(),
        error.stop_reason(),
        error.outcome(),
        error.class(),
    );
}
