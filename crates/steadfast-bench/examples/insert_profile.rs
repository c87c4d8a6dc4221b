//! The insert path for large and many documents under a profiler, client side only: both
//! drivers against a blackpipe started separately, so that callgrind or perf sees the client
//! process alone.
//!
//! ```text
//! cargo build --release -p blackpipe -p steadfast-bench --example insert_profile
//! target/release/blackpipe --standalone --port 27999 &
//! tar xzf ../shared/benchmark-data/single_and_multi_document.tgz -C /tmp
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/ins.out \
//!     target/release/examples/insert_profile mongodb://127.0.0.1:27999 steadfast many \
//!     /tmp/single_and_multi_document/large_doc.json 5
//! callgrind_annotate --inclusive=yes /tmp/ins.out | head -60
//! ```
//!
//! Arguments: the URI, the driver (`steadfast` or `official`), the workload (`many`: one
//! ordered insertMany of `copies` documents; `one`: `copies` insertOnes; `bulk`: a
//! Collection::bulkWrite of `copies` inserts, steadfast only; `client`: a Client::bulkWrite of
//! `copies` inserts; `ldjson`: an unordered insertMany of every line of an LDJSON file), the
//! JSON or LDJSON file, the number of iterations (default 5) and `copies` (default 1, the bench's
//! `--scale 20`). Each iteration drops the collection first, as the bench does; the figure
//! printed is the process's user+sys CPU over the timed phases, per iteration. Compare two
//! runs with different iteration counts to cancel start-up in instruction counts.
//!
//! # Profile notes
//!
//! Instructions per iteration (callgrind `Ir`, the difference between runs of 6 and 1
//! iterations divided by 5; for `ldjson`, of 3 and 1 divided by 2, on `ldjson001.txt`):
//!
//! | workload              | official   | steadfast before | steadfast after |
//! |-----------------------|-----------:|-----------------:|----------------:|
//! | `many`, 1 LARGE_DOC   | 68,248,000 |       67,684,000 |      37,826,000 |
//! | `ldjson`, 5,000 docs  |140,380,000 |                – |     ~100,000,000 |
//!
//! (The `ldjson` figure moves by ±5% between runs: the runtime's idle workers.)
//!
//! LARGE_DOC has 94,355 top-level fields and no `_id`: finding that out with bson's
//! `RawDocument::get` (the official crate does the same) cost about 39 M instructions, more
//! than encoding the document (about 24 M, bson's serializer, the same in both drivers). The
//! insert now reads only element headers (`steadfast_wire::find_top_level`, about 7.6 M).
//! What remains is almost all bson's serializer; the insert path's own copies (the `_id`
//! prepended, the document sequence, the message) are a few memcpy of the document.

use std::time::Duration;

use bson::Document;

type Failure = Box<dyn std::error::Error + Send + Sync>;

/// One workload's inputs.
struct Work {
    kind: String,
    documents: Vec<Document>,
    copies: usize,
}

impl Work {
    /// The documents one iteration inserts.
    fn batch(&self) -> Vec<&Document> {
        if self.kind == "ldjson" {
            return self.documents.iter().collect();
        }
        let first = &self.documents[0];
        std::iter::repeat_n(first, self.copies).collect()
    }
}

fn cpu_now() -> Duration {
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF)
        .expect("getrusage on this process");
    let time = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(u64::try_from(t.tv_sec()).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec()).unwrap_or(0))
    };
    time(usage.user_time()) + time(usage.system_time())
}

/// The same statements for either crate (they share their names).
macro_rules! driver {
    ($name:ident, $krate:ident, $bulk:ident) => {
        mod $name {
            use super::{Failure, Work};
            use std::time::Duration;

            pub(super) async fn run(
                uri: &str,
                work: &Work,
                iterations: u32,
            ) -> Result<Duration, Failure> {
                let client = $krate::Client::with_uri_str(uri).await?;
                let coll = client
                    .database("perftest")
                    .collection::<bson::Document>("corpus");
                let mut spent = Duration::ZERO;
                for _ in 0..iterations {
                    coll.drop().await?;
                    let batch = work.batch();
                    let start = super::cpu_now();
                    match work.kind.as_str() {
                        "many" => {
                            coll.insert_many(batch).await?;
                        }
                        "ldjson" => {
                            coll.insert_many(batch).ordered(false).await?;
                        }
                        "one" => {
                            for document in batch {
                                coll.insert_one(document).await?;
                            }
                        }
                        "client" => {
                            let ns = coll.namespace();
                            let models: Vec<_> = batch
                                .into_iter()
                                .map(|d| -> $krate::options::WriteModel {
                                    $krate::options::InsertOneModel::builder()
                                        .namespace(ns.clone())
                                        .document(d.clone())
                                        .build()
                                        .into()
                                })
                                .collect();
                            client.bulk_write(models).await?;
                        }
                        other => super::$bulk(&coll, batch, other).await?,
                    }
                    spent += super::cpu_now().saturating_sub(start);
                }
                client.shutdown().await;
                Ok(spent)
            }
        }
    };
}

driver!(with_steadfast, steadfast, collection_bulk_steadfast);
driver!(with_official, mongodb, collection_bulk_official);

/// Collection::bulkWrite of `batch` as inserts (steadfast only).
async fn collection_bulk_steadfast(
    coll: &steadfast::Collection<Document>,
    batch: Vec<&Document>,
    kind: &str,
) -> Result<(), Failure> {
    if kind != "bulk" {
        return Err(format!("unknown workload {kind}").into());
    }
    let models: Vec<steadfast::WriteModel<Document>> = batch
        .into_iter()
        .map(|d| steadfast::WriteModel::InsertOne(steadfast::InsertOneModel::new(d.clone())))
        .collect();
    coll.bulk_write(models).await?;
    Ok(())
}

/// The official crate has no Collection::bulkWrite.
async fn collection_bulk_official(
    _: &mongodb::Collection<Document>,
    _: Vec<&Document>,
    kind: &str,
) -> Result<(), Failure> {
    Err(format!("{kind}: not in this driver").into())
}

fn load(path: &str, kind: &str) -> Result<Vec<Document>, Failure> {
    let bytes = std::fs::read(path)?;
    if kind == "ldjson" {
        return bytes
            .split(|&b| b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| Ok(serde_json::from_slice::<Document>(line)?))
            .collect();
    }
    Ok(vec![serde_json::from_slice::<Document>(&bytes)?])
}

fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize| args.get(i).map(String::as_str);
    let (Some(uri), Some(driver), Some(kind), Some(path)) = (arg(1), arg(2), arg(3), arg(4)) else {
        return Err("usage: insert_profile URI steadfast|official many|one|bulk|client|ldjson FILE [ITERATIONS] [COPIES]".into());
    };
    let iterations: u32 = arg(5).unwrap_or("5").parse()?;
    let copies: usize = arg(6).unwrap_or("1").parse()?;
    let work = Work {
        kind: kind.to_owned(),
        documents: load(path, kind)?,
        copies,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let spent = runtime.block_on(async {
        match driver {
            "steadfast" => with_steadfast::run(uri, &work, iterations).await,
            "official" => with_official::run(uri, &work, iterations).await,
            other => Err(format!("unknown driver {other}").into()),
        }
    })?;
    let per = spent.as_secs_f64() * 1000.0 / f64::from(iterations.max(1));
    println!("{driver} {kind}: {iterations} iterations, client CPU {per:.2} ms/iteration");
    Ok(())
}
