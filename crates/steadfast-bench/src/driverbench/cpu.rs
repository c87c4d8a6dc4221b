//! The driver's own cost: this process's CPU time (getrusage `RUSAGE_SELF`, user + system)
//! over one driver's timed phases only, beside wall-clock throughput, with the server in
//! another process. The CPU cells repeat the three cheapest operations at concurrency 1 and 16,
//! at each driver's default pool size and at an equal maxPoolSize.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bson::Document;
use nix::sys::resource::{UsageWho, getrusage};
use serde::Serialize;

use super::super::BenchError;
use super::super::workload::ContenderKind;
use super::{Context, official, steadfast};

/// This process's CPU time so far (user + system); zero if getrusage fails, which it does
/// not for `RUSAGE_SELF` on Linux.
pub(crate) fn process_cpu() -> Duration {
    getrusage(UsageWho::RUSAGE_SELF).map_or(Duration::ZERO, |usage| {
        let micros = |time: nix::sys::time::TimeVal| {
            let seconds = u64::try_from(time.tv_sec()).unwrap_or(0);
            let micros = u64::try_from(time.tv_usec()).unwrap_or(0);
            Duration::from_secs(seconds) + Duration::from_micros(micros)
        };
        micros(usage.user_time()) + micros(usage.system_time())
    })
}

/// The wall-clock and CPU time of one timed phase.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Sample {
    /// Wall-clock time.
    #[serde(serialize_with = "super::super::report::as_millis")]
    pub(crate) wall: Duration,
    /// This process's CPU time (user + system) over the same phase.
    #[serde(serialize_with = "super::super::report::as_millis")]
    pub(crate) cpu: Duration,
}

/// Times one phase: started right before the phase's first driver call.
pub(crate) struct Timer {
    started: Instant,
    cpu: Duration,
}

impl Timer {
    /// Starts the clocks.
    pub(crate) fn start() -> Self {
        let cpu = process_cpu();
        Self {
            started: Instant::now(),
            cpu,
        }
    }

    /// Stops them.
    pub(crate) fn stop(self) -> Sample {
        let wall = self.started.elapsed();
        Sample {
            wall,
            cpu: process_cpu().saturating_sub(self.cpu),
        }
    }
}

/// The operations of the single-document tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SingleOp {
    /// `{hello: true}` through run_command.
    RunCommand,
    /// find one by `_id`.
    FindOne,
    /// insertOne of SMALL_DOC.
    InsertOne,
}

impl SingleOp {
    fn label(self) -> &'static str {
        match self {
            SingleOp::RunCommand => "run command",
            SingleOp::FindOne => "find one by _id",
            SingleOp::InsertOne => "small insertOne",
        }
    }
}

/// The maxPoolSize both drivers get in the equal-pool cells (the official crate's default).
pub(crate) const EQUAL_POOL: u32 = 10;
/// Concurrent workers of the concurrent cells.
pub(crate) const WORKERS: u64 = 16;

/// One driver in one CPU cell.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CpuResult {
    /// The driver.
    pub(crate) driver: ContenderKind,
    /// Timed iterations.
    pub(crate) iterations: usize,
    /// Operations per second from the median iteration.
    pub(crate) ops_per_sec: Option<f64>,
    /// Client-process CPU microseconds per operation, over all iterations.
    pub(crate) cpu_us_per_op: Option<f64>,
    /// Why there is no figure.
    pub(crate) error: Option<String>,
}

/// One CPU cell: an operation at a concurrency and pool configuration, both drivers.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CpuCell {
    /// The operation.
    pub(crate) op: SingleOp,
    /// Concurrent workers.
    pub(crate) workers: u64,
    /// `None`: each driver's default maxPoolSize; else the maxPoolSize both got.
    pub(crate) max_pool_size: Option<u32>,
    /// Operations per iteration.
    pub(crate) operations: u64,
    /// steadfast, then the official crate.
    pub(crate) results: Vec<CpuResult>,
}

impl CpuCell {
    /// The operation's name.
    pub(crate) fn label(&self) -> &'static str {
        self.op.label()
    }

    /// The result of `driver`.
    pub(crate) fn result(&self, driver: ContenderKind) -> Option<&CpuResult> {
        self.results.iter().find(|result| result.driver == driver)
    }
}

/// Adds `maxPoolSize` to a connection string.
pub(crate) fn with_pool(uri: &str, pool: Option<u32>) -> String {
    match pool {
        None => uri.to_owned(),
        Some(size) if uri.contains('?') => format!("{uri}&maxPoolSize={size}"),
        Some(size) if uri.ends_with('/') => format!("{uri}?maxPoolSize={size}"),
        Some(size) => format!("{uri}/?maxPoolSize={size}"),
    }
}

/// Runs every CPU cell, `iterations` interleaved iterations per driver and cell.
pub(crate) async fn run_cells(
    uri: &str,
    ctx: &Context,
    iterations: usize,
) -> Result<Vec<CpuCell>, BenchError> {
    let operations = super::task::Task::RunCommand.units(ctx.scale);
    let mut cells = Vec::new();
    for pool in [None, Some(EQUAL_POOL)] {
        let uri = with_pool(uri, pool);
        let steadfast = steadfast::Side::connect(&uri).await?;
        let official = official::Side::connect(&uri).await?;
        let worker_counts: &[u64] = if pool.is_none() {
            &[1, WORKERS]
        } else {
            &[WORKERS]
        };
        for op in [SingleOp::RunCommand, SingleOp::FindOne, SingleOp::InsertOne] {
            if op == SingleOp::FindOne {
                official.drop_database().await?;
                official.seed(&ctx.single.tweet, operations, true).await?;
            }
            for &workers in worker_counts {
                eprintln!("  cpu cell: {} x{workers}, pool {pool:?}", op.label());
                let mut samples: [Vec<Sample>; 2] = [Vec::new(), Vec::new()];
                let mut errors: [Option<String>; 2] = [None, None];
                for iteration in 0..iterations {
                    for index in super::order(iteration) {
                        if errors[index].is_some() {
                            continue;
                        }
                        let outcome = match index {
                            0 => {
                                cell_iteration(&steadfast, op, &ctx.small, operations, workers)
                                    .await
                            }
                            _ => {
                                official_iteration(&official, op, &ctx.small, operations, workers)
                                    .await
                            }
                        };
                        match outcome {
                            Ok(sample) => samples[index].push(sample),
                            Err(error) => errors[index] = Some(error.to_string()),
                        }
                    }
                }
                let [steadfast_samples, official_samples] = samples;
                let [steadfast_error, official_error] = errors;
                cells.push(CpuCell {
                    op,
                    workers,
                    max_pool_size: pool,
                    operations,
                    results: vec![
                        summarize(
                            ContenderKind::Steadfast,
                            steadfast_samples,
                            operations,
                            steadfast_error,
                        ),
                        summarize(
                            ContenderKind::Official,
                            official_samples,
                            operations,
                            official_error,
                        ),
                    ],
                });
            }
        }
        steadfast.shutdown().await;
        official.shutdown().await;
    }
    Ok(cells)
}

async fn cell_iteration(
    side: &steadfast::Side,
    op: SingleOp,
    document: &Arc<Document>,
    operations: u64,
    workers: u64,
) -> Result<Sample, BenchError> {
    if op == SingleOp::InsertOne {
        side.fresh_corpus().await?;
    }
    let timer = Timer::start();
    side.single_doc(op, Arc::clone(document), operations, workers)
        .await?;
    Ok(timer.stop())
}

async fn official_iteration(
    side: &official::Side,
    op: SingleOp,
    document: &Arc<Document>,
    operations: u64,
    workers: u64,
) -> Result<Sample, BenchError> {
    if op == SingleOp::InsertOne {
        side.fresh_corpus().await?;
    }
    let timer = Timer::start();
    side.single_doc(op, Arc::clone(document), operations, workers)
        .await?;
    Ok(timer.stop())
}

fn summarize(
    driver: ContenderKind,
    samples: Vec<Sample>,
    operations: u64,
    error: Option<String>,
) -> CpuResult {
    let mut walls: Vec<Duration> = samples.iter().map(|s| s.wall).collect();
    walls.sort();
    let median = super::score::nearest_rank(&walls, 50);
    let cpu: Duration = samples.iter().map(|s| s.cpu).sum();
    let total_ops = operations as f64 * samples.len() as f64;
    CpuResult {
        driver,
        iterations: samples.len(),
        ops_per_sec: median
            .filter(|m| !m.is_zero())
            .map(|m| operations as f64 / m.as_secs_f64()),
        cpu_us_per_op: (total_ops > 0.0).then(|| cpu.as_secs_f64() * 1e6 / total_ops),
        error,
    }
}
