//! The driver's hot path under a profiler: `ping` and `find_one` by `_id` against an embedded
//! blackpipe standalone, on a current-thread runtime so that one thread runs both sides.
//!
//! Run it plain for a rough figure, or under callgrind for repeatable instruction counts:
//!
//! ```text
//! cargo build --release -p steadfast --example hot_path
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/hot.out \
//!     target/release/examples/hot_path find_one 20000
//! callgrind_annotate --inclusive=yes /tmp/hot.out | head -80
//! ```
//!
//! Arguments: the workload (`ping`, `find_one` or `insert_one`, default `find_one`) and the number of
//! operations (default 20,000). Driver functions live under `steadfast::`; blackpipe's under
//! `blackpipe::`, so the two sides of the process are separated by name in the profile.
#![allow(
    clippy::disallowed_methods,
    reason = "tests and examples drive the clock, tasks and randomness themselves"
)]

use std::time::Instant;

use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{Document, doc};

const DOCUMENTS: i32 = 1_000;

fn main() {
    let mut args = std::env::args().skip(1);
    let workload = args.next().unwrap_or_else(|| "find_one".to_owned());
    let count: usize = args
        .next()
        .map(|n| n.parse().expect("the operation count is a number"))
        .unwrap_or(20_000);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run(&workload, count));
}

async fn run(workload: &str, count: usize) {
    let deployment = Deployment::start(DeploymentConfig::standalone().with_port(0))
        .await
        .expect("blackpipe standalone");
    let client = steadfast::Client::with_uri_str(&deployment.uri())
        .await
        .expect("client");
    let admin = client.database("admin");
    let items = client.database("bench").collection::<Document>("items");
    let seed: Vec<Document> = (0..DOCUMENTS)
        .map(|i| doc! { "_id": i, "name": format!("item {i}"), "qty": i * 3 })
        .collect();
    items.insert_many(seed).await.expect("seed documents");
    admin.run_command(doc! { "ping": 1 }).await.expect("ping");

    let started = Instant::now();
    match workload {
        "ping" => {
            for _ in 0..count {
                admin.run_command(doc! { "ping": 1 }).await.expect("ping");
            }
        }
        "find_one" => {
            for i in 0..count {
                let id = (i as i32) % DOCUMENTS;
                let found = items.find_one(doc! { "_id": id }).await.expect("find_one");
                assert!(found.is_some(), "document {id} is missing");
            }
        }
        "insert_one" => {
            for i in 0..count {
                let id = DOCUMENTS + i as i32;
                items
                    .insert_one(doc! { "_id": id, "name": "small", "qty": id })
                    .await
                    .expect("insert_one");
            }
        }
        other => panic!("unknown workload {other:?}: use ping, find_one or insert_one"),
    }
    let elapsed = started.elapsed();
    println!(
        "{workload}: {count} operations, {:.1} µs each",
        elapsed.as_secs_f64() * 1e6 / count as f64
    );
    client.shutdown().await;
    deployment.stop().await;
}
