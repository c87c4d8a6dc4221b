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
//! # Profile notes
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
//! | ping       |       58,166 |      55,789 |        27,791 |       25,606 |
//! | find_one   |      104,206 |     103,434 |        43,963 |       43,723 |
//! | insert_one |      104,241 |     102,910 |        45,408 |       44,313 |
//!
//! "Before" is the previous round's "after". On this round's machine and toolchain the code
//! before these changes (commit c95a934, which also holds the merges since that round)
//! measured 62,484 / 31,617 (ping), 108,680 / 48,038 (find_one) and 116,003 / 57,027
//! (insert_one; 115,176 / 56,267 on a second run), so the driver's share fell by 19% (ping),
//! 9% (find_one) and 22% (insert_one). Part of insert_one's drop is in frame decoding on both
//! sides (`OpMsg::decode`), which these changes do not touch: how the two tasks' reads
//! interleave differs from run to run, so take its figure as less certain than the others.
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
//! - This round (ping's driver side, per operation, measured one change at a time where the
//!   build time allowed): `run_command`'s action builds its operation before making its
//!   future, so the boxed future is the executor's alone (the memcpy of the action and its
//!   box fell from about 4,700 to 3,200 `Ir`; the box's allocation, about 2,000, did not
//!   change: it is still several KB); connections share their
//!   stream description (`Arc`) instead of cloning it (with its address) per attempt; the
//!   pooled exchange borrows the pool's address and interrupt token instead of cloning them;
//!   the clock is read only where something uses the reading (selection start and the
//!   check-out limit only under timeoutMS, `maxTimeMS` only with a deadline, the round trip
//!   only for command events, ConnectionCheckedOut's duration only when the event is built, an
//!   I/O deadline only with socketTimeoutMS, one reading for a check-in and the wait-queue
//!   service after it): the process's 21 `Instant::now` calls per ping (tokio's included)
//!   became 13; the executor reserves room
//!   for `$db`, `lsid` and the small fields before appending them (two buffer regrowths
//!   fewer); the pool's maps keyed by connection and waiter ids (core's `PoolState` and the
//!   driver's idle, in-use, establishing and waiter maps) hash with core's `IdMap`
//!   (one multiplication) instead of SipHash (about 140 `Ir` per lookup, nine lookups per
//!   operation); `runtime::rng` seeds its `SmallRng` from 64 bits of the thread's CSPRNG
//!   instead of filling the whole seed (three generators per operation, about 190 `Ir` each).
//!
//! - The OIDC exchange (reauthentication on 391 and the resend) is boxed and entered only by
//!   OIDC clients: inline, it made every operation's future 608 bytes larger. The boxed
//!   future per operation (release, `size_of_val` probe in `action_future!`) is now 4,952
//!   bytes for run_command (6,928 at the start of this round), 6,008 for find_one and 7,040
//!   for insert_one. It is also the memory an operation in flight holds, which the bench's
//!   memory cell counts in its per-connection column (64 tasks, one operation each).
//!
//! What remains, largest first (find_one driver side):
//! - The attempt's stage futures are still about 2.8 KB (`run_stages`: check-out ~0.9 KB,
//!   the exchange ~1.4 KB with the connection's send and its deadline), and `run_operation`
//!   keeps the plan and retry session (~1.2 KB) inline: about 5 KB copied once per call.
//! - Commands other than find, the writes and runCommand still build a `Document`.
//! - Large allocations: find_one allocates about 3.4 K`Ir` worth in `FindOne::run`'s future
//!   and 1.2 K in its box (glibc's slow path for blocks of several KB); smaller futures would
//!   shrink both.
//! - insert_one goes through the bulk path (`run_write_plan` -> `run_bulk`): its future moves
//!   about 3,800 `Ir` of memcpy per operation, and the namespace and settings are cloned per
//!   batch (that path is shared with insert_many and bulk_write).
//! - Per ping still: six `String` clones (the operation's name and database for `Command`,
//!   the plan's name and the retry profile's copy of it, the selected and the replying
//!   server's address); `Executor::start` moves its plan and progress (about 450 `Ir`);
//!   the reply is validated by `check_bson` and then read again by bson's iterators, which
//!   re-check UTF-8 (one pass could serve only if every reader of replies handled malformed
//!   elements itself; the deep check stays); the adaptive policy's `admit` and
//!   `observe_reply` read the clock and make a generator even when the policy ignores them
//!   (the `RetryPolicy` trait would need to say so).
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
