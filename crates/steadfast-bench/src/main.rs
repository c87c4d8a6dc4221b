//! `steadfast-bench`: steadfast and the official `mongodb` crate side by side on the same
//! embedded blackpipe server, interleaved round by round, against a raw-socket floor; then the
//! same failover schedule for both, each driver's memory in a fresh child process, and the
//! timeout cell (timeoutMS against a member slower than it), and the open-loop overload cell
//! (offered load from 0.5x to 3x a blackpipe capacity, goodput and its SVG plot).
//!
//! A crate of its own (formerly `steadfast bench`), so that only this binary compiles the
//! official crate: `cargo run --release -p steadfast-bench -- [--quick] [--only PART,..]`.

mod contender;
mod driverbench;
mod failover;
#[cfg(test)]
mod fixture;
mod html_report;
mod machine;
mod memory;
mod official;
mod overload;
mod raw;
mod report;
mod sections;
mod stats;
mod steadfast_side;
mod tables;
#[cfg(test)]
mod tests;
mod throughput;
mod timeout;
mod workload;

use std::alloc::System;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use blackpipe::deployment::{Deployment, DeploymentConfig};
use clap::Parser;
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

use self::failover::{FailoverOp, FailoverSchedule};
use self::official::OfficialSide;
use self::report::Report;
use self::steadfast_side::SteadfastSide;
use self::throughput::{Contender, RawSide, Schedule};
use self::timeout::{TimeoutReport, TimeoutSchedule};
use self::workload::{ContenderKind, Workload};

/// Any failure of the bench itself (as opposed to a driver error it reports).
pub(crate) type BenchError = Box<dyn std::error::Error + Send + Sync>;

/// The system allocator with byte counters, as in the `steadfast` binary where the bench used
/// to live: the same allocation cost for every contender, and figures comparable with the
/// earlier reports.
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Options of `steadfast-bench`.
#[derive(Debug, Parser)]
#[command(
    name = "steadfast-bench",
    version,
    about = "Benchmark steadfast against the official driver on an embedded blackpipe server"
)]
pub(crate) struct BenchArgs {
    /// Shrink every duration for a smoke run (a few seconds in all).
    #[arg(long)]
    quick: bool,
    /// Also write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Also write the Markdown report to FILE.
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// Also write the report as one self-contained HTML page (tables and inline-SVG charts,
    /// no network) to FILE.html.
    #[arg(long, value_name = "FILE.html")]
    report: Option<PathBuf>,
    /// Measured seconds per (workload, concurrency, contender), split into rounds
    /// [default: 5, or 0.1 with --quick].
    #[arg(long, value_name = "N")]
    seconds: Option<f64>,
    /// Run only these parts [default: all].
    #[arg(long, value_enum, value_delimiter = ',', value_name = "PART")]
    only: Vec<Part>,
    /// DriverBench and client-CPU options.
    #[command(flatten)]
    driverbench: driverbench::DriverBenchArgs,
    /// Internal: measure one driver's memory in this (child) process.
    #[arg(long, hide = true, value_name = "DRIVER")]
    memory_child: Option<String>,
    /// Internal: the server the memory child connects to.
    #[arg(long, hide = true, value_name = "URI", requires = "memory_child")]
    memory_uri: Option<String>,
}

/// The parts of the bench.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Part {
    /// Throughput and latency, with the raw floor.
    Throughput,
    /// The failover schedule.
    Failover,
    /// Memory in child processes.
    Memory,
    /// Operations with timeoutMS against a member slower than the timeout.
    Timeout,
    /// Goodput against an offered load from 0.5x to 3x a blackpipe capacity (open loop).
    Overload,
    /// DriverBench, both drivers, against blackpipe in a separate process.
    Driverbench,
    /// Each driver's client CPU per operation (run command, find one, small insert).
    Cpu,
}

/// Concurrency levels of the driver workloads.
const CONCURRENCIES: [usize; 3] = [1, 16, 64];
/// Concurrency levels (sockets) of the raw baseline.
const RAW_CONCURRENCIES: [usize; 2] = [1, 64];

fn main() -> ExitCode {
    let args = BenchArgs::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("steadfast-bench: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("steadfast-bench: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the bench (or, with the hidden child options, one memory measurement).
async fn run(args: BenchArgs) -> Result<(), BenchError> {
    if let Some(driver) = &args.memory_child {
        let uri = args
            .memory_uri
            .as_deref()
            .ok_or("--memory-child needs --memory-uri")?;
        return memory::child(driver, uri).await;
    }
    let (schedule, failover_schedule) = schedules(&args)?;
    if let Some(path) = &args.report {
        check_report_path(path)?;
    }
    let mut report = Report::new(
        std::env::args().collect::<Vec<_>>().join(" "),
        schedule,
        failover_schedule,
    );
    eprintln!(
        "steadfast-bench: {} rounds of {:?} per contender and cell",
        schedule.rounds, schedule.round
    );

    let wanted = |part: Part| args.only.is_empty() || args.only.contains(&part);
    if wanted(Part::Throughput) {
        report.throughput = throughput_cells(schedule).await?;
    }
    if wanted(Part::Failover) {
        for operation in [FailoverOp::Insert, FailoverOp::Transfer] {
            for driver in [ContenderKind::Steadfast, ContenderKind::Official] {
                eprintln!(
                    "failover schedule with {}, writer: {}",
                    driver.label(),
                    operation.label()
                );
                report
                    .failover
                    .push(failover::run(driver, failover_schedule, operation).await);
            }
        }
    }
    if wanted(Part::Memory) {
        report.memory = memory_reports().await?;
    }
    if wanted(Part::Timeout) {
        let schedule = if args.quick {
            TimeoutSchedule::QUICK
        } else {
            TimeoutSchedule::FULL
        };
        report.timeout_schedule = Some(schedule);
        report.timeout = timeout_reports(schedule).await?;
    }
    if wanted(Part::Overload) {
        report.overload = Some(overload_report(&args).await?);
    }
    if wanted(Part::Driverbench) || wanted(Part::Cpu) {
        let (tasks, cells) = (wanted(Part::Driverbench), wanted(Part::Cpu));
        report.driverbench =
            Some(driverbench::run(&args.driverbench, args.quick, tasks, cells).await?);
    }
    report.evaluate_targets();

    let markdown = report.to_markdown();
    println!("{markdown}");
    if let Some(path) = &args.markdown {
        std::fs::write(path, &markdown)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, json + "\n")
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    if let Some(path) = &args.report {
        let generated = bson::DateTime::now()
            .try_to_rfc3339_string()
            .unwrap_or_else(|_| "unknown date".to_owned());
        html_report::write(&report, &generated, path)?;
        eprintln!("HTML report written to {}", path.display());
    }
    Ok(())
}

/// Fails before measuring anything if `path`'s folder does not exist, rather than losing
/// the run's report at the end (the file itself is written after the run).
fn check_report_path(path: &std::path::Path) -> Result<(), BenchError> {
    let folder = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| std::path::Path::new("."));
    if !folder.is_dir() {
        return Err(format!(
            "cannot write the HTML report {}: {} is not a directory",
            path.display(),
            folder.display()
        )
        .into());
    }
    if path.is_dir() {
        return Err(format!(
            "cannot write the HTML report {}: it is a directory",
            path.display()
        )
        .into());
    }
    Ok(())
}

/// The overload cell, its plot beside the Markdown report (or in `target/`).
async fn overload_report(args: &BenchArgs) -> Result<overload::OverloadReport, BenchError> {
    let schedule = if args.quick {
        overload::OverloadSchedule::QUICK
    } else {
        overload::OverloadSchedule::FULL
    };
    let directory = args
        .markdown
        .as_deref()
        .and_then(std::path::Path::parent)
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("target"), PathBuf::from);
    overload::run(schedule, &directory.join("overload-goodput.svg")).await
}

fn schedules(args: &BenchArgs) -> Result<(Schedule, FailoverSchedule), BenchError> {
    let (rounds, default_seconds) = if args.quick { (2, 0.1) } else { (10, 5.0) };
    let seconds = args.seconds.unwrap_or(default_seconds);
    if !(seconds.is_finite() && seconds > 0.0 && seconds <= 3_600.0) {
        return Err("--seconds must be a positive number of seconds, at most 3600".into());
    }
    let round = Duration::from_secs_f64(seconds / f64::from(rounds));
    let schedule = Schedule {
        rounds,
        round,
        warmup: (round / 2).max(Duration::from_millis(20)),
    };
    let failover = if args.quick {
        FailoverSchedule {
            election_delay: Duration::from_millis(200),
            patience: Duration::from_secs(10),
            settle_writes: 10,
        }
    } else {
        FailoverSchedule {
            election_delay: Duration::from_secs(1),
            patience: Duration::from_secs(30),
            settle_writes: 50,
        }
    };
    Ok((schedule, failover))
}

async fn standalone() -> Result<(Deployment, String, SocketAddr), BenchError> {
    let deployment = Deployment::start(DeploymentConfig::standalone().with_port(0)).await?;
    let host = deployment
        .hosts()
        .into_iter()
        .next()
        .ok_or("blackpipe started no node")?;
    let address: SocketAddr = host.parse()?;
    let uri = deployment.uri();
    Ok((deployment, uri, address))
}

async fn throughput_cells(schedule: Schedule) -> Result<Vec<throughput::CellReport>, BenchError> {
    let (deployment, uri, address) = standalone().await?;
    for command in workload::seed_commands() {
        raw::one_command(address, &command).await?;
    }
    let mut steadfast = Contender::Steadfast(SteadfastSide::connect(&uri).await?);
    let mut official = Contender::Official(OfficialSide::connect(&uri).await?);
    let mut raw = Contender::Raw(RawSide::new(address)?);
    let mut cells = Vec::new();
    for workload in Workload::ALL {
        for concurrency in CONCURRENCIES {
            eprintln!("  {} at concurrency {concurrency}", workload.label());
            let with_raw =
                raw.unsupported(workload).is_none() && RAW_CONCURRENCIES.contains(&concurrency);
            let mut contenders: Vec<&mut Contender> = vec![&mut steadfast, &mut official];
            if with_raw {
                contenders.push(&mut raw);
            }
            cells.push(
                throughput::run_cell(&mut contenders, workload, concurrency, schedule, address)
                    .await?,
            );
        }
    }
    for contender in [steadfast, official] {
        match contender {
            Contender::Steadfast(side) => side.shutdown().await,
            Contender::Official(side) => side.shutdown().await,
            Contender::Raw(_) => {}
        }
    }
    drop(raw);
    deployment.stop().await;
    Ok(cells)
}

async fn memory_reports() -> Result<Vec<memory::MemoryReport>, BenchError> {
    let (deployment, uri, address) = standalone().await?;
    raw::one_command(address, &memory::slow_ping_fail_point()).await?;
    let mut reports = Vec::new();
    for driver in [ContenderKind::Steadfast, ContenderKind::Official] {
        eprintln!("memory of {} in a child process", driver.label());
        let report = memory::measure_in_child(driver, &uri)
            .await
            .unwrap_or_else(|error| memory::failed(driver, &error));
        reports.push(report);
    }
    deployment.stop().await;
    Ok(reports)
}

/// The timeout cell: steadfast against a standalone whose commands take longer than timeoutMS;
/// the official crate, which has no timeoutMS, is listed as not measured.
async fn timeout_reports(schedule: TimeoutSchedule) -> Result<Vec<TimeoutReport>, BenchError> {
    let (deployment, uri, _) = standalone().await?;
    deployment.slow_commands(0, schedule.command_time)?;
    eprintln!(
        "timeout cell: {} operations with timeoutMS {:?} against {:?} commands",
        schedule.operations, schedule.timeout, schedule.command_time
    );
    let steadfast = timeout::run_steadfast(&uri, schedule).await;
    deployment.stop().await;
    Ok(vec![steadfast?, TimeoutReport::official_unsupported()])
}
