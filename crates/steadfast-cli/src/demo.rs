//! `steadfast demo`: an embedded blackpipe server and real round trips through steadfast.

use std::time::{Duration, Instant};

use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::doc;
use clap::Args;

/// Options of `steadfast demo`.
#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// How many `ping` round trips to time.
    #[arg(long, default_value_t = 2000)]
    pings: u32,
}

type DemoResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

pub(crate) async fn run(args: DemoArgs) -> DemoResult {
    let deployment = Deployment::start(DeploymentConfig::standalone().with_port(0)).await?;
    let host = deployment
        .hosts()
        .into_iter()
        .next()
        .ok_or("blackpipe started no node")?;
    let uri = format!("mongodb://{host}/?directConnection=true&appName=steadfast-demo");
    println!("blackpipe standalone listening on {host}");
    println!("connecting with steadfast: {uri}");

    let client = steadfast::Client::with_uri_str(&uri).await?;
    let admin = client.database("admin");
    let db = client.database("demo");

    let hello = admin.run_command(doc! { "hello": 1 }).await?;
    println!(
        "hello: isWritablePrimary={} maxWireVersion={}",
        hello.get_bool("isWritablePrimary").unwrap_or(false),
        hello.get_i32("maxWireVersion").unwrap_or_default()
    );

    let inserted = db
        .run_command(doc! { "insert": "counters", "documents": [ { "_id": "today", "n": 0 } ] })
        .await?;
    println!("insert: n={}", inserted.get_i32("n").unwrap_or_default());
    for _ in 0..3 {
        db.run_command(doc! {
            "update": "counters",
            "updates": [ { "q": { "_id": "today" }, "u": { "$inc": { "n": 1 } } } ],
        })
        .await?;
    }
    let found = db
        .run_command(doc! { "find": "counters", "filter": { "_id": "today" } })
        .await?;
    let first = found
        .get_document("cursor")
        .and_then(|c| c.get_array("firstBatch"))
        .ok()
        .and_then(|batch| batch.first())
        .and_then(|d| d.as_document())
        .cloned()
        .ok_or("find returned no document")?;
    println!("find after three $inc: {first}");

    let error = db.run_command(doc! { "noSuchCommand": 1 }).await.err();
    if let Some(error) = error {
        println!("an unknown command is a typed error: {error}");
    }

    let mut samples = Vec::with_capacity(args.pings as usize);
    for _ in 0..args.pings {
        let started = Instant::now();
        admin.run_command(doc! { "ping": 1 }).await?;
        samples.push(started.elapsed());
    }
    samples.sort_unstable();
    if !samples.is_empty() {
        let total: Duration = samples.iter().sum();
        let pick = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
        println!(
            "{} ping round trips: mean {:?}, p50 {:?}, p99 {:?}",
            samples.len(),
            total / samples.len() as u32,
            pick(0.5),
            pick(0.99)
        );
    }
    deployment.stop().await;
    Ok(())
}
