//! Simple commands per second against a blackpipe replica set primary on loopback, at
//! concurrency 1 and 64, with raw steadfast-wire frames and with the official driver.
//!
//! ```text
//! cargo run --release -p blackpipe --example deployment_throughput [seconds-per-run]
//! ```

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{Document, RawDocumentBuf, doc};
use steadfast_wire::{Body, DEFAULT_MAX_MESSAGE_SIZE, FrameDecoder, Message, OpMsg};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

type Failure = Box<dyn std::error::Error + Send + Sync>;

/// One connection sending `command` in a loop, one round trip at a time.
async fn raw_loop(
    address: SocketAddr,
    command: Document,
    stop: Arc<AtomicBool>,
    done: Arc<AtomicU64>,
) -> Result<(), Failure> {
    let mut stream = TcpStream::connect(address).await?;
    stream.set_nodelay(true)?;
    let body = RawDocumentBuf::try_from(&command)?;
    let mut decoder = FrameDecoder::new(DEFAULT_MAX_MESSAGE_SIZE);
    let mut chunk = vec![0u8; 64 * 1024];
    let mut request_id = 0;
    while !stop.load(Ordering::Relaxed) {
        request_id += 1;
        let bytes = Message::new(request_id, 0, Body::Msg(OpMsg::new(body.clone())))
            .to_bytes(None, DEFAULT_MAX_MESSAGE_SIZE)?;
        stream.write_all(&bytes).await?;
        loop {
            if let Some(reply) = decoder.next_message()? {
                if reply.response_to != request_id {
                    return Err("reply to another request".into());
                }
                break;
            }
            let read = stream.read(&mut chunk).await?;
            if read == 0 {
                return Err("server closed the connection".into());
            }
            decoder.extend(&chunk[..read]);
        }
        done.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

async fn measure_raw(
    address: SocketAddr,
    command: &Document,
    concurrency: usize,
    duration: Duration,
) -> Result<f64, Failure> {
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..concurrency)
        .map(|_| {
            tokio::spawn(raw_loop(
                address,
                command.clone(),
                Arc::clone(&stop),
                Arc::clone(&done),
            ))
        })
        .collect();
    let started = Instant::now();
    tokio::time::sleep(duration).await;
    stop.store(true, Ordering::Relaxed);
    let elapsed = started.elapsed();
    for task in tasks {
        task.await??;
    }
    Ok(rate(done.load(Ordering::Relaxed), elapsed))
}

async fn measure_driver(
    client: &mongodb::Client,
    concurrency: usize,
    duration: Duration,
) -> Result<f64, Failure> {
    let collection = client.database("bench").collection::<Document>("items");
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..concurrency)
        .map(|_| {
            let collection = collection.clone();
            let stop = Arc::clone(&stop);
            let done = Arc::clone(&done);
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    collection.find_one(doc! { "_id": 1 }).await?;
                    done.fetch_add(1, Ordering::Relaxed);
                }
                Ok::<(), mongodb::error::Error>(())
            })
        })
        .collect();
    let started = Instant::now();
    tokio::time::sleep(duration).await;
    stop.store(true, Ordering::Relaxed);
    let elapsed = started.elapsed();
    for task in tasks {
        task.await??;
    }
    Ok(rate(done.load(Ordering::Relaxed), elapsed))
}

fn rate(operations: u64, elapsed: Duration) -> f64 {
    // Precision loss is irrelevant for a rate printed with no decimals.
    #[allow(clippy::cast_precision_loss)]
    let operations = operations as f64;
    operations / elapsed.as_secs_f64()
}

#[tokio::main]
async fn main() -> Result<(), Failure> {
    let seconds: u64 = std::env::args()
        .nth(1)
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(3);
    let duration = Duration::from_secs(seconds);
    let deployment = Deployment::start(DeploymentConfig::replica_set(3)).await?;
    let primary = deployment.wait_for_primary().await;
    let address: SocketAddr = deployment.host(primary).ok_or("no primary host")?.parse()?;
    println!("blackpipe replica set of 3, primary {address}, {seconds} s per run");

    let client = mongodb::Client::with_uri_str(deployment.uri()).await?;
    client
        .database("bench")
        .collection::<Document>("items")
        .insert_one(doc! { "_id": 1, "name": "widget", "qty": 5 })
        .await?;

    let ping = doc! { "ping": 1, "$db": "admin" };
    let find = doc! { "find": "items", "filter": {"_id": 1}, "limit": 1, "singleBatch": true, "$db": "bench" };
    for (label, command) in [("raw ping", &ping), ("raw find by _id", &find)] {
        for concurrency in [1, 64] {
            let per_second = measure_raw(address, command, concurrency, duration).await?;
            println!("{label:<28} concurrency {concurrency:>2}: {per_second:>9.0} commands/s");
        }
    }
    for concurrency in [1, 64] {
        let per_second = measure_driver(&client, concurrency, duration).await?;
        println!(
            "{:<28} concurrency {concurrency:>2}: {per_second:>9.0} commands/s",
            "driver find_one by _id"
        );
    }
    client.shutdown().await;
    deployment.stop().await;
    Ok(())
}
