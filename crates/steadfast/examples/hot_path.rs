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
//! Arguments: the workload (`ping`, `find_one` or `insert_one`, default `find_one`) and the
//! number of operations (default 20,000). Driver functions live under `steadfast::`; blackpipe's
//! under `blackpipe::`, so the two sides of the process are separated by name in the profile.
//!
//! # Profile notes (issue 15)
//!
//! Figures are instructions per operation (callgrind `Ir`), taken as the difference between a
//! run of 5,500 and a run of 500 operations divided by 5,000, so that start-up and seeding
//! cancel out. "Driver" is the inclusive cost of `hot_path::run` (the client task: everything
//! the driver does, its syscalls included); "blackpipe" is the inclusive cost of the server's
//! connection tasks (`blackpipe::server::accept_loop`); the rest is the runtime's scheduler and
//! I/O driver.
//!
//! | operation  | total before | total after | driver before | driver after |
//! |------------|-------------:|------------:|--------------:|-------------:|
//! | ping       |       58,879 |      58,166 |        28,395 |       27,791 |
//! | find_one   |      118,968 |     104,206 |        58,965 |       43,963 |
//! | insert_one |      106,034 |     104,241 |        48,318 |       45,408 |
//!
//! "Before" is the previous round's "after"; on this round's machine and toolchain the code
//! before these changes measured 59,501 / 28,754 (ping), 120,564 / 59,469 (find_one) and
//! 107,258 / 48,238 (insert_one).
//!
//! The previous round's bench raw-floor cells (`cargo run --release -p steadfast-bench --
//! --only throughput --seconds 2`, on two cores shared with seven other builds, so wall time
//! is noisy): p50 at concurrency 1 over the raw pre-encoded round trip went from 2.32x to
//! 2.13x (ping) and 2.23x to 2.13x (find_one), against a target of 1.3x; throughput at
//! concurrency 64 over the raw client's went from 0.36x to 0.45x (ping) and 0.41x to 0.47x
//! (find_one), against 0.8x.
//!
//! Done:
//! - Check-out takes an idle connection at once when nobody is queued
//!   (`steadfast_core::pool::PoolState::check_out_idle` decides: only with an empty wait queue,
//!   so no earlier request is passed over, which is CMAP's fairness rule), with no one-shot
//!   channel, waiter slot or timer; the waiting path is boxed.
//! - The `lsid` is encoded once per server session (`ServerSession::encoded_lsid`) and
//!   appended as bytes; the common fields (`$db`, `lsid`, `txnNumber`, `$clusterTime`,
//!   concerns, `$readPreference`, `maxTimeMS`, Stable API) are appended to the encoded body
//!   instead of being cloned into a `Document` that was then encoded; command events decode
//!   the sent bytes only when someone listens. The session's `lsid` document is built only
//!   when asked for.
//! - Selection tries the current snapshot first, without the waiting loop, whose timer and
//!   channel state are boxed (as are the check-out wait and the retry path's sleep).
//! - The operation is boxed before the executor makes its future (`Executor::execute`, and
//!   the callers of `execute_cursor` and `open_cursor` pass a `Box`): an async function
//!   stores its arguments for its whole life, so an operation passed by value was stored at
//!   every level (the `Find` of find_one is 1,072 bytes, four copies). `find_one` builds its
//!   operation before making its future. Measured with `size_of_val` on each stage's future
//!   (release, probes built in): find_one's whole future went from 12,464 to 5,464 bytes, and the
//!   process's `memcpy` from 20,479 to 7,892 `Ir` per find_one (the copy into the
//!   action's box: from about 10,900 to about 630).
//! - find, insert/update/delete and runCommand write their bodies as BSON
//!   (`CommandBody::Raw`): no map is built to be encoded, the application's command is
//!   encoded without being cloned, and the insert body is encoded once instead of twice (its
//!   length is read from the bytes). The executor drops the keys it sets from the encoded body
//!   (copying it only when one is present). Command events show the same document as before.
//! - Selection reuses the latency window computed for the same snapshot (`Arc` identity,
//!   kept alive by the memo, so a newer snapshot never meets an older window) and equal
//!   criteria (`sdam::selection_cache`); the two random choices among the window's servers
//!   are still made on every selection. Predicates and retries (deprioritized servers) are
//!   never memoized.
//!
//! What remains, largest first (find_one driver side):
//! - The attempt's stage futures are still about 2.8 KB (`run_stages`: check-out ~0.9 KB,
//!   the exchange ~1.4 KB with the connection's send and its deadline), and `run_operation`
//!   keeps the plan and retry session (~1.2 KB) inline: about 5 KB copied once per call.
//! - Commands other than find, the writes and runCommand still build a `Document`.
//!
//! The bench after this round (idle machine, commit 9232c1d; README "DriverBench and client CPU
//! per operation"): p50 over the raw round trip 2.16x (ping) and 2.10x (find_one) at concurrency
//! 1; throughput at 64 over the raw client's 0.50x and 0.49x; client CPU per operation 0.54x
//! (run command), 0.61x (find one), 0.62x (small insert) of the official crate's.
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
