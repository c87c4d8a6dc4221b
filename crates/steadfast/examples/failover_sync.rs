//! Failover with the blocking API (`steadfast::sync`, feature `sync`): the primary of a
//! 3-member replica set steps down while four writer threads insert. The driver retries the
//! writes that hit the old primary on the new one, each exactly once, as in the async
//! `failover` example; the program itself has no async runtime (the embedded deployment runs
//! on one of its own, which the writers never enter).
//!
//! Run with `cargo run -p steadfast --example failover_sync`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{Document, doc};
use steadfast::event::{Event, EventRecorder};
use steadfast::options::ClientOptions;
use steadfast::sync::{Client, Collection};
use tokio::runtime::Runtime;

const WRITERS: i32 = 4;
const WRITES_EACH: i32 = 25;
/// The stepdown happens once this many inserts were acknowledged.
const STEP_DOWN_AFTER: usize = 30;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The simulated deployment is async; it runs on this runtime's threads.
    let server_runtime = Runtime::new()?;
    let deployment = server_runtime.block_on(Deployment::start(
        DeploymentConfig::replica_set(3).with_port(0),
    ))?;
    let events = Arc::new(EventRecorder::new());
    let mut options = ClientOptions::parse(deployment.uri()).run()?;
    options.event_listeners.push(events.clone());
    let client = Client::with_options(options)?;
    let orders = client.database("shop").collection::<Document>("orders");
    orders.insert_one(doc! { "_id": "warm-up" }).run()?;

    events.clear();
    let acknowledged = AtomicUsize::new(0);
    let failed: usize = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (orders, acknowledged) = (&orders, &acknowledged);
                let (deployment, server_runtime) = (&deployment, &server_runtime);
                scope.spawn(move || {
                    write(orders, w, acknowledged, || {
                        step_down(deployment, server_runtime)
                    })
                })
            })
            .collect();
        writers
            .into_iter()
            .map(|writer| writer.join().expect("a writer thread"))
            .sum()
    });
    println!(
        "primary now: member {}",
        server_runtime.block_on(deployment.wait_for_primary())
    );

    let retries = events.count(|event| matches!(event, Event::Retry(_)));
    let stored = orders
        .count_documents(doc! { "writer": { "$exists": true } })
        .run()?;
    println!(
        "inserts: {} acknowledged, {failed} failed, {retries} retried by the driver; \
         {stored} in the collection",
        acknowledged.load(Ordering::SeqCst)
    );

    client.shutdown().run();
    server_runtime.block_on(deployment.stop());
    Ok(())
}

/// Inserts this writer's documents one by one, blocking on each, and returns how many failed;
/// the writer whose insert is the STEP_DOWN_AFTER-th to be acknowledged calls `step_down`.
fn write(
    orders: &Collection<Document>,
    writer: i32,
    acknowledged: &AtomicUsize,
    step_down: impl Fn(),
) -> usize {
    let mut failed = 0;
    for i in 0..WRITES_EACH {
        match orders
            .insert_one(doc! { "_id": writer * 1_000 + i, "writer": writer })
            .run()
        {
            Ok(_) => {
                if acknowledged.fetch_add(1, Ordering::SeqCst) + 1 == STEP_DOWN_AFTER {
                    step_down();
                }
            }
            Err(error) => {
                // Only possible if the retry also failed; the outcome says whether the insert
                // happened.
                println!("writer {writer}: {error} (outcome {:?})", error.outcome());
                failed += 1;
            }
        }
    }
    failed
}

/// Steps the primary down, frozen for 30 s so that another member wins the election (in the
/// deployment's runtime, which schedules the election).
fn step_down(deployment: &Deployment, server_runtime: &Runtime) {
    let old = deployment.primary();
    match server_runtime.block_on(async { deployment.step_down(Duration::from_secs(30)) }) {
        Ok(()) => println!(
            "stepdown after {STEP_DOWN_AFTER} acknowledged inserts: member {} is no longer primary",
            old.map_or_else(|| "?".to_owned(), |index| index.to_string())
        ),
        Err(error) => println!("stepdown refused: {error}"),
    }
}
