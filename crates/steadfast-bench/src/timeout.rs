//! The timeout cell: operations with a client-level timeoutMS against a member whose commands
//! run longer than it. Measures how late each operation returns past its timeout, and how many
//! of them cost the pool a new connection (a driver that closes the connection on every
//! client-side timeout churns one per operation).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bson::{Document, doc};
use serde::Serialize;
use steadfast::event::{CmapEvent, EventListener};
use steadfast::{ClientBuilder, Collection};

use super::BenchError;
use super::report::as_millis;
use super::workload::{ContenderKind, DATABASE, ITEMS};

/// How long the cell runs and against what.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct TimeoutSchedule {
    /// Measured operations, split evenly among the tasks.
    pub(crate) operations: usize,
    /// Concurrent tasks.
    pub(crate) tasks: usize,
    /// The client's timeoutMS.
    #[serde(serialize_with = "as_millis")]
    pub(crate) timeout: Duration,
    /// How long the member takes to run each command (blackpipe's `slowCommands`).
    #[serde(serialize_with = "as_millis")]
    pub(crate) command_time: Duration,
}

impl TimeoutSchedule {
    /// The cell: 1,000 operations of 50 ms against 200 ms commands.
    pub(crate) const FULL: Self = Self {
        operations: 1_000,
        tasks: 8,
        timeout: Duration::from_millis(50),
        command_time: Duration::from_millis(200),
    };
    /// A smoke run.
    pub(crate) const QUICK: Self = Self {
        operations: 80,
        ..Self::FULL
    };

    /// The latest an operation may return and still count as on time: timeoutMS plus the
    /// larger of 10 ms and 2% of it.
    pub(crate) fn on_time_limit(&self) -> Duration {
        self.timeout + (self.timeout / 50).max(Duration::from_millis(10))
    }
}

/// What one driver did in the timeout cell.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TimeoutReport {
    /// The driver.
    pub(crate) driver: &'static str,
    /// Operations measured (0 when the driver was not measured).
    pub(crate) operations: u64,
    /// Operations that returned within [`TimeoutSchedule::on_time_limit`].
    pub(crate) on_time: u64,
    /// Operations that failed with a timeout error, as they should.
    pub(crate) timed_out: u64,
    /// Operations that succeeded or failed otherwise (with the first such outcome).
    pub(crate) other: u64,
    /// The first outcome that was not a timeout error.
    pub(crate) first_other: Option<String>,
    /// Time to return, milliseconds.
    pub(crate) p50_ms: f64,
    /// Time to return, milliseconds.
    pub(crate) p99_ms: f64,
    /// Time to return, milliseconds.
    pub(crate) max_ms: f64,
    /// Connections the pool created during the measured operations.
    pub(crate) connections_created: u64,
    /// Connections the pool closed during the measured operations.
    pub(crate) connections_closed: u64,
    /// Why the driver was not measured, if it was not.
    pub(crate) note: Option<String>,
}

impl TimeoutReport {
    /// The share of operations that returned on time, if any ran.
    pub(crate) fn on_time_share(&self) -> Option<f64> {
        share(self.on_time, self.operations)
    }

    /// Connections created per operation, if any ran.
    pub(crate) fn new_connection_share(&self) -> Option<f64> {
        share(self.connections_created, self.operations)
    }

    /// The official crate has no timeoutMS: nothing to measure.
    pub(crate) fn official_unsupported() -> Self {
        Self {
            note: Some(
                "not measured: the official mongodb crate has no timeoutMS (its documentation \
                 suggests wrapping calls in tokio::time::timeout, which drops the connection)"
                    .into(),
            ),
            ..Self::empty(ContenderKind::Official.label())
        }
    }

    fn empty(driver: &'static str) -> Self {
        Self {
            driver,
            operations: 0,
            on_time: 0,
            timed_out: 0,
            other: 0,
            first_other: None,
            p50_ms: 0.0,
            p99_ms: 0.0,
            max_ms: 0.0,
            connections_created: 0,
            connections_closed: 0,
            note: None,
        }
    }
}

fn share(part: u64, whole: u64) -> Option<f64> {
    // Counts far below 2^52: exact in f64.
    #[allow(clippy::cast_precision_loss)]
    (whole > 0).then(|| part as f64 / whole as f64)
}

/// Counts the pool's connections as they are created and closed.
#[derive(Debug, Default)]
struct ConnectionCounter {
    created: AtomicU64,
    closed: AtomicU64,
}

impl EventListener for ConnectionCounter {
    fn on_cmap(&self, event: &CmapEvent) {
        match event {
            CmapEvent::ConnectionCreated { .. } => {
                self.created.fetch_add(1, Ordering::Relaxed);
            }
            CmapEvent::ConnectionClosed { .. } => {
                self.closed.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        }
    }
}

impl ConnectionCounter {
    fn totals(&self) -> (u64, u64) {
        (
            self.created.load(Ordering::Relaxed),
            self.closed.load(Ordering::Relaxed),
        )
    }
}

/// One operation's outcome: how long it took, and the error text unless it timed out.
pub(crate) type Outcome = (Duration, Result<(), String>);

/// Runs the cell for steadfast against `uri` (whose member is already slow).
///
/// # Errors
///
/// When the client cannot be created.
pub(crate) async fn run_steadfast(
    uri: &str,
    schedule: TimeoutSchedule,
) -> Result<TimeoutReport, BenchError> {
    let counter = Arc::new(ConnectionCounter::default());
    let separator = if uri.contains('?') { '&' } else { '?' };
    let millis = schedule.timeout.as_millis();
    let client = ClientBuilder::from_uri_str(&format!("{uri}{separator}timeoutMS={millis}"))
        .await?
        .event_listener(Arc::clone(&counter) as Arc<dyn EventListener>)
        .build()?;
    let items: Collection<Document> = client.database(DATABASE).collection(ITEMS);
    // Warm up with the same operations, so the pool holds its connections before counting.
    run_tasks(&items, schedule.tasks, schedule.tasks * 2).await;
    let (created_before, closed_before) = counter.totals();
    let outcomes = run_tasks(&items, schedule.tasks, schedule.operations).await;
    let (created_after, closed_after) = counter.totals();
    client.shutdown().await;
    let mut report = summarize(&outcomes, schedule.on_time_limit());
    report.connections_created = created_after.saturating_sub(created_before);
    report.connections_closed = closed_after.saturating_sub(closed_before);
    Ok(report)
}

/// Runs `operations` `find_one`s over `tasks` concurrent tasks.
async fn run_tasks(items: &Collection<Document>, tasks: usize, operations: usize) -> Vec<Outcome> {
    let tasks = tasks.max(1);
    let mut handles = Vec::with_capacity(tasks);
    for task in 0..tasks {
        // Spread the remainder over the first tasks so that exactly `operations` run.
        let count = operations / tasks + usize::from(task < operations % tasks);
        let items = items.clone();
        handles.push(tokio::spawn(async move {
            let mut outcomes = Vec::with_capacity(count);
            for _ in 0..count {
                let started = Instant::now();
                let result = items.find_one(doc! { "_id": 0 }).await;
                let elapsed = started.elapsed();
                let outcome = match result {
                    Err(error) if error.is_timeout() => Ok(()),
                    Err(error) => Err(format!("error: {error}")),
                    Ok(_) => Err("succeeded despite the slow server".to_owned()),
                };
                outcomes.push((elapsed, outcome));
            }
            outcomes
        }));
    }
    let mut outcomes = Vec::with_capacity(operations);
    for handle in handles {
        match handle.await {
            Ok(mut task) => outcomes.append(&mut task),
            Err(join) => outcomes.push((Duration::ZERO, Err(format!("task failed: {join}")))),
        }
    }
    outcomes
}

/// The report's figures for `outcomes` (connection counts left at zero).
pub(crate) fn summarize(outcomes: &[Outcome], on_time_limit: Duration) -> TimeoutReport {
    let mut report = TimeoutReport::empty(ContenderKind::Steadfast.label());
    let mut elapsed: Vec<Duration> = outcomes.iter().map(|(elapsed, _)| *elapsed).collect();
    elapsed.sort_unstable();
    report.operations = count(outcomes.len());
    report.on_time = count(elapsed.iter().filter(|e| **e <= on_time_limit).count());
    for (_, outcome) in outcomes {
        match outcome {
            Ok(()) => report.timed_out += 1,
            Err(text) => {
                report.other += 1;
                report.first_other.get_or_insert_with(|| text.clone());
            }
        }
    }
    report.p50_ms = percentile_ms(&elapsed, 0.50);
    report.p99_ms = percentile_ms(&elapsed, 0.99);
    report.max_ms = elapsed
        .last()
        .map_or(0.0, |max| max.as_secs_f64() * 1_000.0);
    report
}

fn count(items: usize) -> u64 {
    u64::try_from(items).unwrap_or(u64::MAX)
}

/// The nearest-rank percentile of sorted durations, in milliseconds (0 when empty).
fn percentile_ms(sorted: &[Duration], quantile: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    // Nearest rank on at most a few thousand samples: exact enough in f64.
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let rank = ((sorted.len() as f64 * quantile).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1].as_secs_f64() * 1_000.0
}
