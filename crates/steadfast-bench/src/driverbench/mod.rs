//! DriverBench (the drivers' shared benchmark specification) for steadfast and the official
//! crate in the same run, against one blackpipe server in a process of its own, with each
//! driver's client CPU time beside its throughput. BSONBench is the bson crate's business and
//! is not run.
//!
//! Interleaving: after one untimed warm-up iteration per driver and task, iteration by
//! iteration, the driver that goes first alternating, so that both
//! drivers see the same machine (other jobs, thermal state, the server's heap) at the same
//! moments; alternating whole tasks would give a load change during one task to one driver
//! only. Every iteration's before-task phase resets what the previous one (of either driver)
//! left, so one driver's iteration never works on the other's data.

pub(crate) mod cpu;
mod data;
pub(crate) mod official;
pub(crate) mod render;
pub(crate) mod score;
pub(crate) mod server;
mod side;
pub(crate) mod steadfast;
pub(crate) mod task;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bson::{Bson, Document};
use serde::Serialize;

use self::cpu::{CpuCell, Sample};
use self::data::{ParallelData, SingleMultiData};
use self::score::{CompositeScore, Measured, Outcome, TaskScore};
use self::server::{BenchServer, ServerPlacement};
use self::task::{Group, Scale, Task};
use super::BenchError;

/// The database every task uses.
pub(crate) const DATABASE: &str = "perftest";
/// The collection every task uses.
pub(crate) const CORPUS: &str = "corpus";
/// Numbered collections of the client bulkWrite mixed task.
pub(crate) const MIXED_COLLECTIONS: usize = 10;
/// Documents per exported LDJSON file.
pub(crate) const LDJSON_DOCUMENTS_PER_FILE: usize = 5_000;

/// DriverBench's options.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct DriverBenchArgs {
    /// Folder holding the data sets' .tgz files [default: $STEADFAST_BENCH_DATA, else
    /// ../shared/benchmark-data].
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,
    /// Run only these DriverBench tasks [default: all].
    #[arg(long = "task", value_enum, value_delimiter = ',', value_name = "TASK")]
    tasks: Vec<Task>,
    /// Minimum cumulative timed seconds per task and driver [default: 60, or 0 with --quick].
    #[arg(long, value_name = "S")]
    min_seconds: Option<f64>,
    /// Maximum cumulative timed seconds per task and driver [default: 300, or 5 with --quick].
    #[arg(long, value_name = "S")]
    max_seconds: Option<f64>,
    /// Iterations after which a task stops once past --min-seconds [default: 100, or 2 with
    /// --quick].
    #[arg(long, value_name = "N")]
    max_iterations: Option<usize>,
    /// The blackpipe binary to run the server with [default: next to this executable; the
    /// embedded server if there is none].
    #[arg(long, value_name = "PATH")]
    blackpipe: Option<PathBuf>,
    /// Divide every task's operation, document, file and byte counts by N (MB/s stay
    /// comparable; fixed costs weigh more) [default: 1, the specification's sizes, or 50 with
    /// --quick].
    #[arg(long, value_name = "N")]
    scale: Option<u64>,
    /// Timed iterations per driver in each CPU cell [default: 10, or 2 with --quick].
    #[arg(long, value_name = "N")]
    cpu_iterations: Option<usize>,
}

/// When a driver's iterations of one task stop (the specification's rule: at least the
/// minimum time, then until the iteration count or the maximum time).
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct IterationPolicy {
    /// Minimum cumulative timed seconds.
    pub(crate) min_seconds: f64,
    /// Maximum cumulative timed seconds.
    pub(crate) max_seconds: f64,
    /// Iterations after which the loop stops once past the minimum.
    pub(crate) max_iterations: usize,
}

impl IterationPolicy {
    fn from_args(args: &DriverBenchArgs, quick: bool) -> Result<Self, BenchError> {
        let policy = Self {
            min_seconds: args.min_seconds.unwrap_or(if quick { 0.0 } else { 60.0 }),
            max_seconds: args.max_seconds.unwrap_or(if quick { 5.0 } else { 300.0 }),
            max_iterations: args.max_iterations.unwrap_or(if quick { 2 } else { 100 }),
        };
        let valid = |s: f64| s.is_finite() && (0.0..=86_400.0).contains(&s);
        if !valid(policy.min_seconds) || !valid(policy.max_seconds) || policy.max_iterations == 0 {
            return Err(
                "--min-seconds/--max-seconds must be 0..86400, --max-iterations > 0".into(),
            );
        }
        Ok(policy)
    }

    /// Whether a driver with `iterations` done in `timed` seconds should stop.
    pub(crate) fn done(&self, iterations: usize, timed: f64) -> bool {
        timed >= self.max_seconds
            || (iterations >= self.max_iterations && timed >= self.min_seconds)
    }
}

/// The order of the two drivers (0 steadfast, 1 official) in `iteration`.
pub(crate) fn order(iteration: usize) -> [usize; 2] {
    if iteration % 2 == 0 { [0, 1] } else { [1, 0] }
}

/// What every task reads: the data sets and what setup stored.
pub(crate) struct Context {
    /// The scale of every iteration.
    pub(crate) scale: Scale,
    /// The single- and multi-document data sets.
    pub(crate) single: SingleMultiData,
    /// SMALL_DOC, shared with worker tasks.
    pub(crate) small: Arc<Document>,
    /// LARGE_DOC, shared with worker tasks.
    pub(crate) large: Arc<Document>,
    data_dir: PathBuf,
    parallel: Option<ParallelData>,
    /// The GRIDFS_LARGE file setup stored for GridFS download.
    pub(crate) gridfs_large_id: Option<Bson>,
    /// The GRIDFS_MULTI files setup stored for GridFS multi-file download.
    pub(crate) gridfs_stored: Vec<(Bson, String)>,
}

impl Context {
    fn load(data_dir: &Path, scale: Scale) -> Result<Self, BenchError> {
        let single = SingleMultiData::load(data_dir)?;
        Ok(Self {
            scale,
            small: Arc::new(single.small.clone()),
            large: Arc::new(single.large.clone()),
            single,
            data_dir: data_dir.to_path_buf(),
            parallel: None,
            gridfs_large_id: None,
            gridfs_stored: Vec::new(),
        })
    }

    fn parallel(&mut self) -> Result<&ParallelData, BenchError> {
        if self.parallel.is_none() {
            self.parallel = Some(ParallelData::unpack(&self.data_dir)?);
        }
        self.parallel
            .as_ref()
            .ok_or_else(|| "parallel data not unpacked".into())
    }

    /// The GRIDFS_LARGE bytes at this scale.
    pub(crate) fn gridfs_bytes(&self) -> &[u8] {
        let data = &self.single.gridfs_large;
        let len = u64::try_from(data.len()).unwrap_or(u64::MAX) / self.scale.divisor;
        &data[..usize::try_from(len).unwrap_or(data.len()).min(data.len())]
    }

    /// The first `units` LDJSON files.
    pub(crate) fn ldjson_files(&self, units: u64) -> Result<&[PathBuf], BenchError> {
        let files = &self
            .parallel
            .as_ref()
            .ok_or("parallel data not unpacked")?
            .ldjson;
        Ok(&files[..usize::try_from(units)?.min(files.len())])
    }

    /// The first `units` GridFS files.
    pub(crate) fn gridfs_files(&self, units: u64) -> Result<&[PathBuf], BenchError> {
        let files = &self
            .parallel
            .as_ref()
            .ok_or("parallel data not unpacked")?
            .gridfs;
        Ok(&files[..usize::try_from(units)?.min(files.len())])
    }

    /// A fresh, empty output directory.
    pub(crate) fn output_dir(&self, name: &str) -> Result<PathBuf, BenchError> {
        self.parallel
            .as_ref()
            .ok_or("parallel data not unpacked")?
            .output_dir(name)
    }
}

/// What DriverBench and the CPU cells measured.
#[derive(Debug, Serialize)]
pub(crate) struct DriverBenchReport {
    /// Where the server ran.
    pub(crate) server: ServerPlacement,
    /// The scale divisor (1: the specification's sizes).
    pub(crate) scale: Scale,
    /// The iteration rule.
    pub(crate) policy: IterationPolicy,
    /// One entry per task run.
    pub(crate) tasks: Vec<TaskScore>,
    /// The composites.
    pub(crate) composites: Vec<CompositeScore>,
    /// The CPU cells.
    pub(crate) cpu: Vec<CpuCell>,
    /// Why BSONBench is not here.
    pub(crate) bsonbench: &'static str,
}

const BSONBENCH_NOTE: &str = "BSONBench not run: BSON encoding and decoding is the bson crate's \
                              business, shared by both drivers";

/// Runs the DriverBench tasks (when `tasks`) and the CPU cells (when `cells`).
///
/// # Errors
/// The data sets cannot be read, the server cannot start, or a driver cannot connect; a task
/// that fails is reported as failed and the run goes on.
pub(crate) async fn run(
    args: &DriverBenchArgs,
    quick: bool,
    tasks: bool,
    cells: bool,
) -> Result<DriverBenchReport, BenchError> {
    let scale = match args.scale {
        Some(0) => return Err("--scale must be at least 1".into()),
        Some(divisor) => Scale { divisor },
        None if quick => Scale::QUICK,
        None => Scale::FULL,
    };
    let policy = IterationPolicy::from_args(args, quick)?;
    let data_dir = data::data_dir(args.data.as_deref());
    let mut ctx = Context::load(&data_dir, scale)?;
    let server = BenchServer::start(args.blackpipe.as_deref()).await?;
    eprintln!(
        "driverbench: server {} ({}), data {}",
        server.placement().mode,
        server.placement().pinning,
        data_dir.display()
    );
    let mut report = DriverBenchReport {
        server: server.placement().clone(),
        scale,
        policy,
        tasks: Vec::new(),
        composites: Vec::new(),
        cpu: Vec::new(),
        bsonbench: BSONBENCH_NOTE,
    };
    let cpu_iterations = args.cpu_iterations.unwrap_or(if quick { 2 } else { 10 });
    let outcome = measure(
        &server,
        &mut ctx,
        args,
        cpu_iterations,
        tasks,
        cells,
        &mut report,
    )
    .await;
    server.stop().await;
    outcome?;
    report.composites = score::composites(&report.tasks);
    Ok(report)
}

async fn measure(
    server: &BenchServer,
    ctx: &mut Context,
    args: &DriverBenchArgs,
    cpu_iterations: usize,
    tasks: bool,
    cells: bool,
    report: &mut DriverBenchReport,
) -> Result<(), BenchError> {
    let policy = report.policy;
    if tasks {
        let steadfast = steadfast::Side::connect(server.uri()).await?;
        let official = official::Side::connect(server.uri()).await?;
        let selected: Vec<Task> = Task::ALL
            .into_iter()
            .filter(|task| args.tasks.is_empty() || args.tasks.contains(task))
            .collect();
        for task in selected {
            eprintln!("  driverbench: {}", task.label());
            report
                .tasks
                .push(run_task(task, ctx, &steadfast, &official, policy).await);
        }
        steadfast.shutdown().await;
        official.shutdown().await;
    }
    if cells {
        report.cpu = cpu::run_cells(server.uri(), ctx, cpu_iterations.max(1)).await?;
    }
    Ok(())
}

/// Sets `task` up, runs both drivers' iterations interleaved, tears it down and scores it.
async fn run_task(
    task: Task,
    ctx: &mut Context,
    steadfast: &steadfast::Side,
    official: &official::Side,
    policy: IterationPolicy,
) -> TaskScore {
    let bytes = task.bytes(ctx.scale);
    let failed = |error: BenchError| Outcome::Failed {
        error: error.to_string(),
    };
    if let Err(error) = setup(task, ctx, official).await {
        let _ = official.drop_database().await;
        return TaskScore {
            task,
            bytes,
            steadfast: failed(format!("setup: {error}").into()),
            official: failed(format!("setup: {error}").into()),
        };
    }
    let mut samples: [Vec<Sample>; 2] = [Vec::new(), Vec::new()];
    let mut errors: [Option<String>; 2] = [None, None];
    let reasons = [steadfast::unavailable(task), official::unavailable(task)];
    let mut timed = [Duration::ZERO; 2];
    let ctx: &Context = ctx;
    // One untimed iteration per driver first: a task's one-time costs (the pool connections of
    // a parallel task, the server's heap growing to the task's data) would otherwise land in
    // the first timed iteration of whichever driver goes first (steadfast, in iteration 0),
    // which the median of a task's two or three iterations cannot out-vote.
    for index in order(0) {
        if reasons[index].is_none()
            && let Err(error) = driver_iteration(index, task, ctx, steadfast, official).await
        {
            errors[index] = Some(format!("warm-up: {error}"));
        }
    }
    for iteration in 0.. {
        let mut progressed = false;
        for index in order(iteration) {
            if reasons[index].is_some()
                || errors[index].is_some()
                || policy.done(samples[index].len(), timed[index].as_secs_f64())
            {
                continue;
            }
            progressed = true;
            match driver_iteration(index, task, ctx, steadfast, official).await {
                Ok(sample) => {
                    timed[index] += sample.wall;
                    samples[index].push(sample);
                }
                Err(error) => errors[index] = Some(error.to_string()),
            }
        }
        if !progressed {
            break;
        }
    }
    let _ = official.drop_database().await;
    let units = task.per_operation().then(|| task.units(ctx.scale));
    let [steadfast_samples, official_samples] = samples;
    let [steadfast_error, official_error] = errors;
    let [steadfast_reason, official_reason] = reasons;
    let outcome = |samples: &[Sample], error: Option<String>, reason: Option<&str>| {
        if let Some(reason) = reason {
            return Outcome::NotAvailable {
                reason: reason.to_owned(),
            };
        }
        match (error, Measured::score(samples, bytes, units)) {
            (Some(error), _) => Outcome::Failed { error },
            (None, Some(measured)) => Outcome::Measured(measured),
            (None, None) => Outcome::Failed {
                error: "no iteration completed".to_owned(),
            },
        }
    };
    TaskScore {
        task,
        bytes,
        steadfast: outcome(&steadfast_samples, steadfast_error, steadfast_reason),
        official: outcome(&official_samples, official_error, official_reason),
    }
}

/// One iteration of `task` by driver `index` (0 steadfast, 1 official).
async fn driver_iteration(
    index: usize,
    task: Task,
    ctx: &Context,
    steadfast: &steadfast::Side,
    official: &official::Side,
) -> Result<Sample, BenchError> {
    match index {
        0 => steadfast.iteration(task, ctx).await,
        _ => official.iteration(task, ctx).await,
    }
}

/// The setup phase, shared by both drivers and done through the official crate (the
/// reference driver): drop `perftest`, then store what the read tasks read.
async fn setup(task: Task, ctx: &mut Context, official: &official::Side) -> Result<(), BenchError> {
    official.drop_database().await?;
    if task.group() == Group::Parallel {
        ctx.parallel()?;
    }
    let units = task.units(ctx.scale);
    match task {
        Task::FindOne => official.seed(&ctx.single.tweet, units, true).await,
        Task::FindMany => official.seed(&ctx.single.tweet, units, false).await,
        Task::LdjsonExport => {
            official.fresh_corpus().await?;
            official.ldjson_import(ctx.ldjson_files(units)?).await
        }
        Task::GridfsDownload => {
            let id = official.upload("gridfstest", ctx.gridfs_bytes()).await?;
            ctx.gridfs_large_id = Some(id);
            Ok(())
        }
        Task::GridfsMultiDownload => {
            official.fresh_bucket().await?;
            let files = ctx.gridfs_files(units)?.to_vec();
            ctx.gridfs_stored = official.upload_files(&files).await?;
            Ok(())
        }
        _ => Ok(()),
    }
}
