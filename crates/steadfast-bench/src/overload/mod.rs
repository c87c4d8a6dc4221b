//! The open-loop overload cell: blackpipe with a capacity of `C` operations per second, and
//! requests that *arrive* at a fixed rate from 0.5× to 3× `C` (a ticker spawns each one as its
//! own task: a fixed number of workers would slow down with the server and hide the overload).
//! For each load level, steadfast's default policy, its adaptive policy and the official crate
//! run one after the other (the order rotates) against the same server, each with a fresh
//! client: goodput, attempts per success (the server's admitted plus rejected commands over the
//! successes), errors the application saw, local refusals, and the latency of successes.

mod driver;
mod plot;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use blackpipe::deployment::{Capacity, CapacityStats, Deployment, DeploymentConfig};
use serde::Serialize;
use tokio::sync::{Mutex, Semaphore};

pub(crate) use self::driver::Policy;
use self::driver::{COLLECTION, Driver, Outcome};
use super::BenchError;
use super::report::as_millis;
use super::tables::{TextSection, TextTable};
use super::workload::DATABASE;

/// The offered loads, as multiples of the capacity.
pub(crate) const LOADS: [f64; 6] = [0.5, 0.8, 1.0, 1.5, 2.0, 3.0];

/// How the cell runs.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct OverloadSchedule {
    /// The server's capacity, operations per second.
    pub(crate) capacity: f64,
    /// Arrivals before measuring (the adaptive policy learns; pools fill).
    #[serde(serialize_with = "as_millis")]
    pub(crate) warmup: Duration,
    /// The measured part of each cell.
    #[serde(serialize_with = "as_millis")]
    pub(crate) measure: Duration,
    /// Requests in flight at most; arrivals beyond it are dropped and counted.
    pub(crate) max_in_flight: usize,
}

impl OverloadSchedule {
    /// The full run: C = 1,000 ops/s (3× is 3,000 arrivals a second, which a shared 2-core
    /// machine offers with room to spare), 1 s warm-up, 4 s measured.
    pub(crate) const FULL: Self = Self {
        capacity: 1_000.0,
        warmup: Duration::from_secs(1),
        measure: Duration::from_secs(4),
        max_in_flight: 20_000,
    };
    /// A smoke run.
    pub(crate) const QUICK: Self = Self {
        warmup: Duration::from_millis(300),
        measure: Duration::from_millis(700),
        ..Self::FULL
    };
}

/// One (contender, load) cell.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct OverloadCell {
    /// The contender.
    pub(crate) driver: &'static str,
    /// Offered load over capacity.
    pub(crate) load: f64,
    /// Arrivals per second.
    pub(crate) offered: f64,
    /// Successful operations per second.
    pub(crate) goodput: f64,
    /// Commands the server admitted or rejected, per success.
    pub(crate) attempts_per_success: Option<f64>,
    /// Errors the application saw (local refusals apart).
    pub(crate) errors: u64,
    /// Requests the adaptive policy refused before sending.
    pub(crate) refusals: u64,
    /// Latency of successes, milliseconds.
    pub(crate) p50_ms: f64,
    /// Latency of successes, milliseconds.
    pub(crate) p99_ms: f64,
    /// Arrivals dropped because `max_in_flight` requests were in flight.
    pub(crate) dropped_at_cap: u64,
}

/// The whole cell's results.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct OverloadReport {
    /// How it ran.
    pub(crate) schedule: OverloadSchedule,
    /// One entry per (load, contender).
    pub(crate) cells: Vec<OverloadCell>,
    /// Where the plot was written, if it was.
    pub(crate) plot: Option<String>,
}

/// Runs every load level for every contender and writes the plot to `plot_path`.
///
/// # Errors
/// The server or a client could not start.
pub(crate) async fn run(
    schedule: OverloadSchedule,
    plot_path: &std::path::Path,
) -> Result<OverloadReport, BenchError> {
    let deployment = Deployment::start(DeploymentConfig::standalone().with_port(0)).await?;
    let uri = deployment.uri();
    seed(&uri).await?;
    let mut cells = Vec::new();
    for (level, load) in LOADS.into_iter().enumerate() {
        for turn in 0..Policy::ALL.len() {
            let policy = Policy::ALL[(level + turn) % Policy::ALL.len()];
            eprintln!("  overload: {} at {load}x capacity", policy.label());
            cells.push(run_cell(&deployment, &uri, policy, load, schedule).await?);
        }
    }
    let plot = match plot::write(&cells, schedule.capacity, plot_path) {
        Ok(()) => {
            eprintln!("overload plot written to {}", plot_path.display());
            Some(plot_path.display().to_string())
        }
        Err(error) => {
            eprintln!("overload plot not written: {error}");
            None
        }
    };
    drop(deployment);
    Ok(OverloadReport {
        schedule,
        cells,
        plot,
    })
}

async fn seed(uri: &str) -> Result<(), BenchError> {
    let client = steadfast::Client::with_uri_str(uri).await?;
    client
        .database(DATABASE)
        .collection::<bson::Document>(COLLECTION)
        .insert_one(bson::doc! { "_id": 1, "payload": "x".repeat(64) })
        .await?;
    client.shutdown().await;
    Ok(())
}

/// What a cell's requests recorded.
#[derive(Default)]
struct Tally {
    latencies_ns: Mutex<Vec<u64>>,
    successes: AtomicU64,
    errors: AtomicU64,
    refusals: AtomicU64,
}

async fn run_cell(
    deployment: &Deployment,
    uri: &str,
    policy: Policy,
    load: f64,
    schedule: OverloadSchedule,
) -> Result<OverloadCell, BenchError> {
    // A fresh capacity (full bucket) per cell, so that no cell inherits another's debt.
    let capacity = Capacity::unlimited().with_ops_per_sec(schedule.capacity)?;
    deployment.set_capacity(0, Some(capacity))?;
    let (driver, closer) = Driver::connect(policy, uri).await?;
    let rate = schedule.capacity * load;
    let permits = Arc::new(Semaphore::new(schedule.max_in_flight));
    let tally = Arc::new(Tally::default());
    let dropped = AtomicU64::new(0);
    let start = Instant::now();
    let measure_from = start + schedule.warmup;
    let end = measure_from + schedule.measure;
    let mut before: Option<CapacityStats> = None;
    let mut spawned: u64 = 0;
    let mut ticker = tokio::time::interval(Duration::from_millis(1));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        ticker.tick().await;
        let now = Instant::now();
        if now >= end {
            break;
        }
        if before.is_none() && now >= measure_from {
            before = Some(deployment.capacity_stats(0)?);
        }
        // Arrivals due by now at `rate`: spawned in the batch of this tick.
        let due = (now.duration_since(start).as_secs_f64() * rate) as u64;
        while spawned < due {
            spawned += 1;
            let Ok(permit) = permits.clone().try_acquire_owned() else {
                dropped.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            let (driver, tally) = (driver.clone(), tally.clone());
            tokio::spawn(async move {
                let arrived = Instant::now();
                let outcome = driver.request().await;
                let done = Instant::now();
                drop(permit);
                if done < measure_from || done >= end {
                    return;
                }
                record(&tally, outcome, done.duration_since(arrived)).await;
            });
        }
    }
    let after = deployment.capacity_stats(0)?;
    let before = before.unwrap_or_default();
    // Let the requests in flight finish before the next cell (bounded).
    let _ = tokio::time::timeout(
        Duration::from_secs(30),
        permits.acquire_many(u32::try_from(schedule.max_in_flight).unwrap_or(u32::MAX)),
    )
    .await;
    closer.close().await;
    deployment.set_capacity(0, None)?;
    let attempts =
        (after.admitted + after.rejected).saturating_sub(before.admitted + before.rejected);
    Ok(summarize(
        policy,
        load,
        rate,
        schedule,
        &tally,
        attempts,
        dropped.into_inner(),
    )
    .await)
}

async fn record(tally: &Tally, outcome: Outcome, latency: Duration) {
    match outcome {
        Outcome::Success => {
            tally.successes.fetch_add(1, Ordering::Relaxed);
            let nanos = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX);
            tally.latencies_ns.lock().await.push(nanos);
        }
        Outcome::Refused => {
            tally.refusals.fetch_add(1, Ordering::Relaxed);
        }
        Outcome::Error => {
            tally.errors.fetch_add(1, Ordering::Relaxed);
        }
    }
}

async fn summarize(
    policy: Policy,
    load: f64,
    rate: f64,
    schedule: OverloadSchedule,
    tally: &Tally,
    attempts: u64,
    dropped_at_cap: u64,
) -> OverloadCell {
    let successes = tally.successes.load(Ordering::Relaxed);
    let mut latencies = tally.latencies_ns.lock().await.clone();
    latencies.sort_unstable();
    let percentile_ms = |q: f64| -> f64 {
        if latencies.is_empty() {
            return 0.0;
        }
        let rank = ((latencies.len() as f64 * q).ceil() as usize).clamp(1, latencies.len());
        latencies[rank - 1] as f64 / 1e6
    };
    OverloadCell {
        driver: policy.label(),
        load,
        offered: rate,
        goodput: successes as f64 / schedule.measure.as_secs_f64(),
        attempts_per_success: (successes > 0).then(|| attempts as f64 / successes as f64),
        errors: tally.errors.load(Ordering::Relaxed),
        refusals: tally.refusals.load(Ordering::Relaxed),
        p50_ms: percentile_ms(0.5),
        p99_ms: percentile_ms(0.99),
        dropped_at_cap,
    }
}

/// The overload table's columns.
const HEADER: &[&str] = &[
    "load",
    "driver",
    "goodput (ops/s)",
    "% of C",
    "attempts/success",
    "errors",
    "local refusals",
    "p50 ms",
    "p99 ms",
    "dropped at cap",
];

impl OverloadReport {
    /// The cell as a report section (shared by the Markdown and HTML writers).
    pub(crate) fn section(&self) -> TextSection {
        let s = &self.schedule;
        let rows = self
            .cells
            .iter()
            .map(|c| {
                vec![
                    format!("{}×", c.load),
                    c.driver.to_owned(),
                    format!("{:.0}", c.goodput),
                    format!("{:.0}%", 100.0 * c.goodput / s.capacity),
                    c.attempts_per_success
                        .map_or_else(|| "n/a".to_string(), |a| format!("{a:.2}")),
                    c.errors.to_string(),
                    c.refusals.to_string(),
                    format!("{:.2}", c.p50_ms),
                    format!("{:.2}", c.p99_ms),
                    c.dropped_at_cap.to_string(),
                ]
            })
            .collect();
        TextSection {
            heading: "Overload (open loop)".into(),
            intro: vec![format!(
                "Capacity C = {} ops/s (blackpipe `opsPerSec`, rejections cost 0.05); requests \
                 arrive at a fixed rate; {} ms warm-up, {} ms measured per cell; point reads by \
                 `_id`.",
                s.capacity,
                s.warmup.as_millis(),
                s.measure.as_millis()
            )],
            tables: vec![TextTable {
                header: HEADER,
                align: "|---|---|---|---|---|---|---|---|---|---|",
                rows,
            }],
            notes: self
                .plot
                .iter()
                .map(|plot| format!("Plot of goodput against offered load: `{plot}`"))
                .collect(),
            ..TextSection::default()
        }
    }
}
