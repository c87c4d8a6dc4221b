//! What the retry machinery costs when nothing fails, and what it buys when the primary steps
//! down.
//!
//! 1. Latency of `insert_one` and `find_one` against blackpipe's simulated replica set on
//!    127.0.0.1, with retryable writes and reads on (the default: `txnNumber`, the retry
//!    state per operation) and off, in the same run, interleaved in blocks so that drift hits
//!    both sides alike.
//! 2. The time from a stepdown to the first successful write: a writer inserts in a loop; the
//!    primary steps down; the elapsed time until the first insert that started after the
//!    stepdown succeeds (the failed attempt, SDAM, the election, the retry on the new
//!    primary), repeated several times.
//!
//! Run: `cargo bench -p steadfast --bench retry_overhead`.
#![allow(
    clippy::disallowed_methods,
    reason = "benchmarks drive the clock, tasks and randomness themselves"
)]

use std::time::{Duration, Instant};

use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{Document, doc};
use steadfast::Client;

const N: usize = 4_000;
const BLOCK: usize = 500;
const WARMUP: usize = 500;
const STEPDOWNS: usize = 5;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        latency().await;
        stepdowns().await;
    });
}

async fn latency() {
    let deployment = Deployment::start(DeploymentConfig::replica_set(3).with_seed(11))
        .await
        .expect("replica set");
    let on = Client::with_uri_str(&deployment.uri())
        .await
        .expect("client");
    let off = Client::with_uri_str(&format!(
        "{}&retryWrites=false&retryReads=false",
        deployment.uri()
    ))
    .await
    .expect("client");
    let on_coll = on.database("bench").collection::<Document>("on");
    let off_coll = off.database("bench").collection::<Document>("off");
    for i in 0..WARMUP {
        on_coll
            .insert_one(doc! { "_id": i as i64 })
            .await
            .expect("insert");
        off_coll
            .insert_one(doc! { "_id": i as i64 })
            .await
            .expect("insert");
        on_coll.find_one(doc! { "_id": 0_i64 }).await.expect("find");
        off_coll
            .find_one(doc! { "_id": 0_i64 })
            .await
            .expect("find");
    }

    let mut samples = [
        Vec::with_capacity(N),
        Vec::with_capacity(N),
        Vec::with_capacity(N),
        Vec::with_capacity(N),
    ];
    let mut next = WARMUP as i64;
    while samples[0].len() < N {
        for (side, coll) in [(0, &on_coll), (1, &off_coll)] {
            for _ in 0..BLOCK {
                next += 1;
                let start = Instant::now();
                coll.insert_one(doc! { "_id": next }).await.expect("insert");
                samples[side].push(start.elapsed());
            }
        }
        for (side, coll) in [(2, &on_coll), (3, &off_coll)] {
            for _ in 0..BLOCK {
                let start = Instant::now();
                coll.find_one(doc! { "_id": 0_i64 }).await.expect("find");
                samples[side].push(start.elapsed());
            }
        }
    }
    println!("latency against blackpipe's replica set on 127.0.0.1, N={N} each, blocks of {BLOCK}");
    let [insert_on, insert_off, find_on, find_off] = samples.map(|mut s| Summary::of(&mut s));
    insert_on.print("insert_one, retries on");
    insert_off.print("insert_one, retries off");
    find_on.print("find_one, retries on");
    find_off.print("find_one, retries off");
    println!(
        "retries on/off: insert p50 {:.3}x mean {:.3}x; find p50 {:.3}x mean {:.3}x",
        ratio(insert_on.p50, insert_off.p50),
        ratio(insert_on.mean, insert_off.mean),
        ratio(find_on.p50, find_off.p50),
        ratio(find_on.mean, find_off.mean),
    );
    on.shutdown().await;
    off.shutdown().await;
    deployment.stop().await;
}

async fn stepdowns() {
    let deployment = Deployment::start(DeploymentConfig::replica_set(3).with_seed(12))
        .await
        .expect("replica set");
    let client = Client::with_uri_str(&format!("{}&heartbeatFrequencyMS=500", deployment.uri()))
        .await
        .expect("client");
    let coll = client.database("bench").collection::<Document>("failover");
    coll.insert_one(doc! { "warm": true })
        .await
        .expect("insert");
    let mut gaps = Vec::with_capacity(STEPDOWNS);
    let mut failed = 0;
    for round in 0..STEPDOWNS {
        // Writes are flowing when the primary steps down.
        for i in 0..20 {
            coll.insert_one(doc! { "round": round as i64, "i": i })
                .await
                .expect("insert before the stepdown");
        }
        let stepped_down = Instant::now();
        deployment
            .step_down(Duration::from_secs(1))
            .expect("stepdown");
        loop {
            match coll
                .insert_one(doc! { "round": round as i64, "after": true })
                .await
            {
                Ok(_) => break,
                Err(error) => {
                    failed += 1;
                    eprintln!("a write failed after the stepdown: {error}");
                }
            }
        }
        gaps.push(stepped_down.elapsed());
        // Let the deposed primary's freeze run out so every round can elect anew.
        tokio::time::sleep(Duration::from_millis(1_100)).await;
    }
    let summary = Summary::of(&mut gaps);
    println!(
        "stepdown to first successful write ({STEPDOWNS} stepdowns, election delay 100 ms, heartbeatFrequencyMS 500, streaming monitors): \
         min {:.1} ms, p50 {:.1} ms, max {:.1} ms; writes that failed: {failed}",
        millis(summary.min),
        millis(summary.p50),
        millis(summary.max)
    );
    client.shutdown().await;
    deployment.stop().await;
}

struct Summary {
    mean: Duration,
    min: Duration,
    p50: Duration,
    p99: Duration,
    max: Duration,
}

impl Summary {
    fn of(samples: &mut [Duration]) -> Self {
        samples.sort_unstable();
        let total: Duration = samples.iter().sum();
        let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
        Summary {
            mean: total / samples.len() as u32,
            min: samples[0],
            p50: at(0.50),
            p99: at(0.99),
            max: samples[samples.len() - 1],
        }
    }

    fn print(&self, label: &str) {
        println!(
            "{label:<26} mean {:>8.1} us   p50 {:>8.1} us   p99 {:>8.1} us",
            micros(self.mean),
            micros(self.p50),
            micros(self.p99)
        );
    }
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}
