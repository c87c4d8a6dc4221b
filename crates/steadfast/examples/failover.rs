//! Failover: the primary of a 3-member replica set steps down while four writers insert. The
//! driver retries the writes that hit the old primary on the new one, each exactly once; a
//! write it may not resend reports what happened to it through `Error::outcome()`.
//!
//! Run with `cargo run -p steadfast --example failover`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{Document, doc};
use futures_util::future::join_all;
use steadfast::event::{Event, EventRecorder};
use steadfast::{ClientBuilder, Collection};

const WRITERS: i32 = 4;
const WRITES_EACH: i32 = 25;
/// The stepdown happens once this many inserts were acknowledged.
const STEP_DOWN_AFTER: usize = 30;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // blackpipe elects a new primary 100 ms after a stepdown, as mongod's election handoff does.
    let deployment = Deployment::start(DeploymentConfig::replica_set(3).with_port(0)).await?;
    // The recorder keeps every event, retries included, so we can count them afterwards.
    let events = Arc::new(EventRecorder::new());
    let client = ClientBuilder::from_uri_str(&deployment.uri())
        .await?
        .event_listener(events.clone())
        .build()?;
    let orders = client.database("shop").collection::<Document>("orders");

    // 1. What a failed write says. The next `update` command loses its connection before the
    //    reply: `update_one` is a retryable write (the retry carries the same transaction
    //    number, so the server runs it once); `update_many` is not retryable, so the driver
    //    cannot know whether it ran, and says so.
    orders.insert_one(doc! { "_id": "total", "n": 0 }).await?;
    for multi in [false, true] {
        client
            .database("admin")
            .run_command(doc! {
                "configureFailPoint": "failCommand",
                "mode": { "times": 1 },
                "data": { "failCommands": ["update"], "closeConnection": true },
            })
            .await?;
        let bump = doc! { "$inc": { "n": 1 } };
        let result = if multi {
            orders.update_many(doc! {}, bump).await
        } else {
            orders.update_one(doc! { "_id": "total" }, bump).await
        };
        let name = if multi { "update_many" } else { "update_one" };
        match result {
            Ok(update) => println!("{name}: modified {} after a retry", update.modified_count),
            Err(error) => println!(
                "{name}: {error}\n  outcome {:?}, class {:?}, {} attempt(s)",
                error.outcome(),
                error.class(),
                error.retry_history().len()
            ),
        }
    }

    // 2. A stepdown in the middle of concurrent inserts (the writer whose insert is the
    //    STEP_DOWN_AFTER-th to be acknowledged steps the primary down).
    events.clear();
    let acknowledged = AtomicUsize::new(0);
    let writers = (0..WRITERS).map(|w| write(&orders, w, &acknowledged, &deployment));
    let failed: usize = join_all(writers).await.into_iter().sum();
    println!(
        "primary now: member {}",
        deployment.wait_for_primary().await
    );

    let retries = events.count(|event| matches!(event, Event::Retry(_)));
    let stored = orders
        .count_documents(doc! { "writer": { "$exists": true } })
        .await?;
    println!(
        "inserts: {} acknowledged, {failed} failed, {retries} retried by the driver; \
         {stored} in the collection",
        acknowledged.load(Ordering::SeqCst)
    );

    client.shutdown().await;
    deployment.stop().await;
    Ok(())
}

/// Inserts this writer's documents one by one and returns how many failed.
async fn write(
    orders: &Collection<Document>,
    writer: i32,
    acknowledged: &AtomicUsize,
    deployment: &Deployment,
) -> usize {
    let mut failed = 0;
    for i in 0..WRITES_EACH {
        match orders
            .insert_one(doc! { "_id": writer * 1_000 + i, "writer": writer })
            .await
        {
            Ok(_) => {
                if acknowledged.fetch_add(1, Ordering::SeqCst) + 1 == STEP_DOWN_AFTER {
                    step_down(deployment);
                }
            }
            Err(error) => {
                // Only possible if the retry also failed (e.g. no primary within
                // serverSelectionTimeoutMS); the outcome says whether the insert happened.
                println!("writer {writer}: {error} (outcome {:?})", error.outcome());
                failed += 1;
            }
        }
    }
    failed
}

/// Steps the primary down, frozen for 30 s so that another member wins the election.
fn step_down(deployment: &Deployment) {
    let old = deployment.primary();
    match deployment.step_down(Duration::from_secs(30)) {
        Ok(()) => println!(
            "stepdown after {STEP_DOWN_AFTER} acknowledged inserts: member {} is no longer primary",
            old.map_or_else(|| "?".to_owned(), |index| index.to_string())
        ),
        Err(error) => println!("stepdown refused: {error}"),
    }
}
