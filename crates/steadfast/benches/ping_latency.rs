//! Round-trip latency of `ping` through steadfast's `run_command` versus a raw, pre-encoded
//! OP_MSG written and read on one plain `TcpStream`, both against the same blackpipe scripted
//! server on 127.0.0.1. The difference is the driver's own cost per command: building and
//! encoding the command, the connection mutex, framing, decoding and reply parsing.
//!
//! Run: `cargo bench -p steadfast --bench ping_latency`. N=20,000 per side, interleaved in
//! blocks so that drift (CPU frequency, other load) hits both sides alike.
#![allow(
    clippy::disallowed_methods,
    reason = "benchmarks drive the clock, tasks and randomness themselves"
)]

use std::time::{Duration, Instant};

use blackpipe::scripted::ScriptedServer;
use bson::{doc, rawdoc};
use steadfast_wire::{DEFAULT_MAX_MESSAGE_SIZE, Message, OpMsg};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const N: usize = 20_000;
const BLOCK: usize = 1_000;
const WARMUP: usize = 1_000;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run());
}

async fn run() {
    let server = ScriptedServer::start().await.expect("scripted server");
    let client =
        steadfast::Client::with_uri_str(&format!("mongodb://127.0.0.1:{}/", server.port()))
            .await
            .expect("client");
    let db = client.database("admin");

    let mut raw = TcpStream::connect(("127.0.0.1", server.port()))
        .await
        .expect("raw connection");
    raw.set_nodelay(true).expect("nodelay");
    let request = Message::new(1, 0, OpMsg::new(rawdoc! { "ping": 1, "$db": "admin" }))
        .to_bytes(None, DEFAULT_MAX_MESSAGE_SIZE)
        .expect("encodable ping");
    let mut reply = vec![0u8; 1024];

    let mut driver_samples = Vec::with_capacity(N);
    let mut raw_samples = Vec::with_capacity(N);
    for _ in 0..WARMUP {
        db.run_command(doc! { "ping": 1 }).await.expect("ping");
        raw_ping(&mut raw, &request, &mut reply).await;
    }
    while driver_samples.len() < N {
        for _ in 0..BLOCK {
            let start = Instant::now();
            db.run_command(doc! { "ping": 1 }).await.expect("ping");
            driver_samples.push(start.elapsed());
        }
        for _ in 0..BLOCK {
            let start = Instant::now();
            raw_ping(&mut raw, &request, &mut reply).await;
            raw_samples.push(start.elapsed());
        }
    }

    let driver = Summary::of(&mut driver_samples);
    let baseline = Summary::of(&mut raw_samples);
    println!("ping round trip against blackpipe on 127.0.0.1, N={N} each, blocks of {BLOCK}");
    driver.print("steadfast run_command");
    baseline.print("raw OP_MSG on TcpStream");
    println!(
        "ratio steadfast/raw: mean {:.2}x, p50 {:.2}x, p99 {:.2}x",
        ratio(driver.mean, baseline.mean),
        ratio(driver.p50, baseline.p50),
        ratio(driver.p99, baseline.p99)
    );
}

/// Writes the pre-encoded ping and reads one whole reply frame (length-prefixed).
async fn raw_ping(stream: &mut TcpStream, request: &[u8], buffer: &mut Vec<u8>) {
    stream.write_all(request).await.expect("write");
    stream
        .read_exact(&mut buffer[..4])
        .await
        .expect("read length");
    let length = i32::from_le_bytes([buffer[0], buffer[1], buffer[2], buffer[3]]) as usize;
    if buffer.len() < length {
        buffer.resize(length, 0);
    }
    stream
        .read_exact(&mut buffer[4..length])
        .await
        .expect("read frame");
}

struct Summary {
    mean: Duration,
    p50: Duration,
    p99: Duration,
}

impl Summary {
    fn of(samples: &mut [Duration]) -> Self {
        samples.sort_unstable();
        let total: Duration = samples.iter().sum();
        let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
        Summary {
            mean: total / samples.len() as u32,
            p50: at(0.50),
            p99: at(0.99),
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

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}
