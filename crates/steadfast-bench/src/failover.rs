//! The failover bench: one fault schedule replayed for each driver on its own fresh replica
//! set while a writer loop does `insert_one`s (or transfers between accounts through the
//! convenient transaction API), measuring how long after the deployment could
//! accept writes again the application's first write succeeded, and which errors it saw.
//!
//! Automatic elections are off: the schedule elects the new primary itself, so the moment it
//! becomes electable is a timestamp the bench takes through the control API rather than a
//! guess about an election timer.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use blackpipe::deployment::{Deployment, DeploymentConfig, Health, NodeIndex, Role};
use bson::{Document, doc};
use serde::Serialize;
use tokio::sync::watch;

use super::BenchError;
use super::official::OfficialSide;
use super::raw::one_command;
use super::steadfast_side::SteadfastSide;
use super::workload::{BANK, ContenderKind, DATABASE, FAILOVER};

/// Timing of the fault schedule.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct FailoverSchedule {
    /// Time between losing the primary and electing the next one.
    #[serde(
        rename = "election_delay_ms",
        serialize_with = "super::report::as_millis"
    )]
    pub(crate) election_delay: Duration,
    /// How long to wait for the first successful write after a fault before giving up.
    #[serde(rename = "patience_ms", serialize_with = "super::report::as_millis")]
    pub(crate) patience: Duration,
    /// Successful writes required before the first fault and after each recovery.
    pub(crate) settle_writes: u64,
}

/// What the writer loop does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FailoverOp {
    /// `insert_one` of a fresh document.
    Insert,
    /// A transfer in a transaction (`start_transaction().and_run(..)`): a record and two
    /// balance updates.
    Transfer,
}

impl FailoverOp {
    /// The name used in reports.
    pub(crate) fn label(self) -> &'static str {
        match self {
            FailoverOp::Insert => "insert_one",
            FailoverOp::Transfer => "transfer (convenient transaction API)",
        }
    }

    /// The fail points played after the stepdown and the kill: the connection closed before
    /// the write (the commit) runs, and the reply lost after it applied.
    fn fail_points(self) -> [(&'static str, Document); 2] {
        match self {
            FailoverOp::Insert => [
                (
                    "closeConnection before insert",
                    doc! { "configureFailPoint": "failCommand", "mode": { "times": 1 },
                    "data": { "failCommands": ["insert"], "closeConnection": true } },
                ),
                (
                    "closeConnection after insert commits",
                    doc! { "configureFailPoint": "onPrimaryTransactionalWrite", "mode": { "times": 1 },
                    "data": { "closeConnection": true } },
                ),
            ],
            FailoverOp::Transfer => [
                (
                    "closeConnection before commitTransaction",
                    doc! { "configureFailPoint": "failCommand", "mode": { "times": 1 },
                    "data": { "failCommands": ["commitTransaction"], "closeConnection": true } },
                ),
                (
                    "commit applied, reply a writeConcernError (91)",
                    doc! { "configureFailPoint": "failCommand", "mode": { "times": 1 },
                    "data": { "failCommands": ["commitTransaction"],
                        "writeConcernError": { "code": 91, "errmsg": "Replication is being shut down" } } },
                ),
            ],
        }
    }
}

/// What one fault did to one driver's writer.
#[derive(Debug, Serialize)]
pub(crate) struct FaultReport {
    /// The fault.
    pub(crate) fault: &'static str,
    /// From the moment the deployment could accept the write again (the new primary elected,
    /// or the fail point armed) to the end of the first successful write; `None` if no write
    /// succeeded within the patience.
    pub(crate) recovery_ms: Option<f64>,
    /// Errors the writer loop saw from the fault until that first success.
    pub(crate) errors: u64,
    /// The first of those errors.
    pub(crate) first_error: Option<String>,
}

/// One driver's run of the whole schedule.
#[derive(Debug, Serialize)]
pub(crate) struct FailoverReport {
    /// The driver.
    pub(crate) driver: ContenderKind,
    /// What the writer loop did.
    pub(crate) operation: FailoverOp,
    /// One entry per fault, in schedule order.
    pub(crate) faults: Vec<FaultReport>,
    /// Writes acknowledged over the whole run.
    pub(crate) writes_acknowledged: u64,
    /// Errors surfaced over the whole run.
    pub(crate) errors_total: u64,
    /// Documents the server holds at the end: a write applied twice cannot hide (each has its
    /// own `_id`, so a blind re-insert fails with a duplicate key error, counted above).
    pub(crate) documents_stored: usize,
    /// For transfers: the accounts' balances summed at the end (opened at
    /// `accounts * OPENING_BALANCE`; any other total is a transaction applied in part).
    pub(crate) balance_total: Option<i64>,
    /// Why the schedule could not run, if it could not.
    pub(crate) note: Option<String>,
}

#[derive(Clone)]
enum Writer {
    Steadfast(SteadfastSide),
    Official(OfficialSide),
}

impl Writer {
    async fn write(&self, op: FailoverOp, sequence: u64) -> Result<(), BenchError> {
        match (self, op) {
            (Writer::Steadfast(side), FailoverOp::Insert) => side.failover_insert(sequence).await,
            (Writer::Official(side), FailoverOp::Insert) => side.failover_insert(sequence).await,
            (Writer::Steadfast(side), FailoverOp::Transfer) => {
                side.failover_transfer(sequence).await
            }
            (Writer::Official(side), FailoverOp::Transfer) => {
                side.failover_transfer(sequence).await
            }
        }
    }

    async fn open_bank(&self) -> Result<(), BenchError> {
        match self {
            Writer::Steadfast(side) => side.open_bank().await,
            Writer::Official(side) => side.open_bank().await,
        }
    }
}

struct WriteRecord {
    started: Instant,
    finished: Instant,
    error: Option<String>,
}

/// The writer loop's shared log.
struct WriteLog {
    records: Mutex<Vec<WriteRecord>>,
    /// Bumped after every record, to wake whoever waits for a success.
    written: watch::Sender<u64>,
    /// Held by the writer around each write, and by the schedule to pause it.
    gate: tokio::sync::Mutex<()>,
    stop: AtomicBool,
    acknowledged: AtomicU64,
}

impl WriteLog {
    fn push(&self, record: WriteRecord) {
        if record.error.is_none() {
            self.acknowledged.fetch_add(1, Ordering::Relaxed);
        }
        self.records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(record);
        self.written.send_modify(|count| *count += 1);
    }

    /// The end of the first successful write that finished after `after` and started no
    /// earlier than `started_after`.
    fn first_success(&self, after: Instant, started_after: Option<Instant>) -> Option<Instant> {
        let records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        records
            .iter()
            .filter(|r| r.error.is_none() && r.finished > after)
            .filter(|r| started_after.is_none_or(|s| r.started >= s))
            .map(|r| r.finished)
            .min()
    }

    fn errors_between(&self, from: Instant, until: Instant) -> (u64, Option<String>) {
        let records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        let mut errors = records
            .iter()
            .filter(|r| r.finished >= from && r.finished <= until)
            .filter_map(|r| r.error.as_ref());
        let first = errors.next().cloned();
        (u64::from(first.is_some()) + errors.count() as u64, first)
    }

    fn errors_total(&self) -> u64 {
        let records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        records.iter().filter(|r| r.error.is_some()).count() as u64
    }

    /// Waits until `condition` holds, re-checking after every write; false on timeout.
    async fn wait(&self, patience: Duration, mut condition: impl FnMut(&Self) -> bool) -> bool {
        let mut written = self.written.subscribe();
        let deadline = tokio::time::Instant::now() + patience;
        loop {
            if condition(self) {
                return true;
            }
            match tokio::time::timeout_at(deadline, written.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) | Err(_) => return condition(self),
            }
        }
    }

    /// Waits for `count` more acknowledged writes.
    async fn settle(&self, count: u64, patience: Duration) -> bool {
        let target = self.acknowledged.load(Ordering::Relaxed) + count;
        self.wait(patience, |log| {
            log.acknowledged.load(Ordering::Relaxed) >= target
        })
        .await
    }
}

async fn writer_loop(writer: Writer, op: FailoverOp, log: Arc<WriteLog>) {
    let mut sequence = 0;
    while !log.stop.load(Ordering::Relaxed) {
        let _turn = log.gate.lock().await;
        let started = Instant::now();
        let result = writer.write(op, sequence).await;
        log.push(WriteRecord {
            started,
            finished: Instant::now(),
            error: result.err().map(|e| e.to_string()),
        });
        sequence += 1;
    }
}

/// Runs the schedule for `driver` on a fresh three-member replica set.
pub(crate) async fn run(
    driver: ContenderKind,
    schedule: FailoverSchedule,
    operation: FailoverOp,
) -> FailoverReport {
    let mut report = FailoverReport {
        driver,
        operation,
        faults: Vec::new(),
        writes_acknowledged: 0,
        errors_total: 0,
        documents_stored: 0,
        balance_total: None,
        note: None,
    };
    if let Err(error) = run_schedule(driver, schedule, &mut report).await {
        report.note = Some(error.to_string());
    }
    report
}

async fn run_schedule(
    driver: ContenderKind,
    schedule: FailoverSchedule,
    report: &mut FailoverReport,
) -> Result<(), BenchError> {
    let config = DeploymentConfig::replica_set(3).with_auto_failover(false);
    let deployment = Deployment::start(config).await?;
    deployment.wait_for_primary().await;
    let uri = deployment.uri();
    let writer = match driver {
        ContenderKind::Steadfast => Writer::Steadfast(SteadfastSide::connect(&uri).await?),
        ContenderKind::Official => Writer::Official(OfficialSide::connect(&uri).await?),
        ContenderKind::Raw => return Err("the raw baseline has no failover".into()),
    };
    let op = report.operation;
    if op == FailoverOp::Transfer {
        writer.open_bank().await?;
    }
    let (written, _) = watch::channel(0);
    let log = Arc::new(WriteLog {
        records: Mutex::new(Vec::new()),
        written,
        gate: tokio::sync::Mutex::new(()),
        stop: AtomicBool::new(false),
        acknowledged: AtomicU64::new(0),
    });
    let task = tokio::spawn(writer_loop(writer.clone(), op, Arc::clone(&log)));
    let outcome = faults(&deployment, op, &log, schedule, report).await;
    log.stop.store(true, Ordering::Relaxed);
    if tokio::time::timeout(schedule.patience, task).await.is_err() {
        report.note = Some("the writer did not stop in time".into());
    }
    report.writes_acknowledged = log.acknowledged.load(Ordering::Relaxed);
    report.errors_total = log.errors_total();
    match op {
        FailoverOp::Insert => {
            report.documents_stored = deployment.store().documents(DATABASE, FAILOVER).len();
        }
        FailoverOp::Transfer => {
            let bank = deployment.store().documents(DATABASE, BANK);
            report.documents_stored = bank.iter().filter(|d| d.contains_key("amount")).count();
            report.balance_total = Some(
                bank.iter()
                    .filter_map(|d| match d.get("balance") {
                        Some(bson::Bson::Int32(n)) => Some(i64::from(*n)),
                        Some(bson::Bson::Int64(n)) => Some(*n),
                        _ => None,
                    })
                    .sum(),
            );
        }
    }
    match writer {
        Writer::Steadfast(side) => side.shutdown().await,
        Writer::Official(side) => side.shutdown().await,
    }
    deployment.stop().await;
    outcome
}

async fn faults(
    deployment: &Deployment,
    op: FailoverOp,
    log: &WriteLog,
    schedule: FailoverSchedule,
    report: &mut FailoverReport,
) -> Result<(), BenchError> {
    if !log.settle(schedule.settle_writes, schedule.patience).await {
        return Err("the writer made no progress before the first fault".into());
    }

    // A stepdown, then the election of another member after the delay.
    let old = current_primary(deployment)?;
    let fault_at = Instant::now();
    deployment.step_down(Duration::from_secs(60))?;
    tokio::time::sleep(schedule.election_delay).await;
    let electable_at = elect_successor(deployment, old)?;
    report
        .faults
        .push(measure("stepdown", log, fault_at, electable_at, None, schedule).await);

    // The primary killed, another member elected after the delay, the old one restarted.
    let old = current_primary(deployment)?;
    let fault_at = Instant::now();
    deployment.kill(old).await?;
    tokio::time::sleep(schedule.election_delay).await;
    let electable_at = elect_successor(deployment, old)?;
    report.faults.push(
        measure(
            "primary killed",
            log,
            fault_at,
            electable_at,
            None,
            schedule,
        )
        .await,
    );
    deployment.restart(old).await?;
    log.settle(schedule.settle_writes, schedule.patience).await;

    // Fail points: the connection closed before the write runs, the reply lost after it
    // applied.
    for (fault, command) in op.fail_points() {
        let primary = primary_address(deployment)?;
        let armed_at = {
            // The writer is paused while the fail point is armed, so its next write is the
            // first one the fail point sees.
            let _paused = log.gate.lock().await;
            one_command(primary, &with_admin(command)).await?;
            Instant::now()
        };
        report
            .faults
            .push(measure(fault, log, armed_at, armed_at, Some(armed_at), schedule).await);
    }
    Ok(())
}

fn with_admin(mut command: Document) -> Document {
    command.insert("$db", "admin");
    command
}

/// Waits for the first write that succeeded after `ready_at` (and, if given, started after
/// `started_after`), then counts the errors since `fault_at`.
async fn measure(
    fault: &'static str,
    log: &WriteLog,
    fault_at: Instant,
    ready_at: Instant,
    started_after: Option<Instant>,
    schedule: FailoverSchedule,
) -> FaultReport {
    let recovered = log
        .wait(schedule.patience, |log| {
            log.first_success(ready_at, started_after).is_some()
        })
        .await;
    let success = recovered
        .then(|| log.first_success(ready_at, started_after))
        .flatten();
    let (errors, first_error) = log.errors_between(fault_at, success.unwrap_or_else(Instant::now));
    if success.is_some() {
        log.settle(schedule.settle_writes, schedule.patience).await;
    }
    FaultReport {
        fault,
        recovery_ms: success.map(|at| at.duration_since(ready_at).as_secs_f64() * 1_000.0),
        errors,
        first_error,
    }
}

fn current_primary(deployment: &Deployment) -> Result<NodeIndex, BenchError> {
    deployment
        .primary()
        .ok_or_else(|| "the replica set has no primary".into())
}

fn primary_address(deployment: &Deployment) -> Result<SocketAddr, BenchError> {
    let primary = current_primary(deployment)?;
    let host = deployment.host(primary).ok_or("the primary has no host")?;
    Ok(host.parse()?)
}

/// Elects the first healthy secondary other than `old`; returns the instant just before the
/// election, from which the driver's recovery is measured.
fn elect_successor(deployment: &Deployment, old: NodeIndex) -> Result<Instant, BenchError> {
    let topology = deployment.topology();
    let successor = topology
        .nodes()
        .iter()
        .enumerate()
        .position(|(index, node)| {
            index != old && node.role() == Role::Secondary && node.health() == Health::Up
        })
        .ok_or("no secondary can take over")?;
    let electable_at = Instant::now();
    deployment.elect(successor)?;
    Ok(electable_at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_of(records: Vec<WriteRecord>) -> WriteLog {
        let (written, _) = watch::channel(0);
        WriteLog {
            records: Mutex::new(records),
            written,
            gate: tokio::sync::Mutex::new(()),
            stop: AtomicBool::new(false),
            acknowledged: AtomicU64::new(0),
        }
    }

    fn record(
        base: Instant,
        started_ms: u64,
        finished_ms: u64,
        error: Option<&str>,
    ) -> WriteRecord {
        WriteRecord {
            started: base + Duration::from_millis(started_ms),
            finished: base + Duration::from_millis(finished_ms),
            error: error.map(str::to_owned),
        }
    }

    #[test]
    fn the_first_success_is_the_earliest_to_finish_after_the_reference() {
        let base = Instant::now();
        let log = log_of(vec![
            record(base, 0, 5, None),
            record(base, 5, 40, Some("NotWritablePrimary")),
            record(base, 40, 90, None),
            record(base, 41, 70, None),
        ]);
        let at = |ms| base + Duration::from_millis(ms);
        assert_eq!(log.first_success(at(10), None), Some(at(70)));
        // With a start bound, earlier-started writes no longer count, however late they end.
        assert_eq!(log.first_success(at(10), Some(at(41))), Some(at(70)));
        assert_eq!(log.first_success(at(75), Some(at(40))), Some(at(90)));
        assert_eq!(log.first_success(at(10), Some(at(42))), None);
        assert_eq!(log.first_success(at(90), None), None);
    }

    #[test]
    fn errors_are_counted_by_when_they_surfaced() {
        let base = Instant::now();
        let log = log_of(vec![
            record(base, 0, 5, Some("before the fault")),
            record(base, 10, 20, Some("first")),
            record(base, 20, 30, Some("second")),
            record(base, 30, 50, None),
            record(base, 50, 60, Some("after recovery")),
        ]);
        let at = |ms| base + Duration::from_millis(ms);
        assert_eq!(
            log.errors_between(at(10), at(50)),
            (2, Some("first".to_owned()))
        );
        assert_eq!(log.errors_between(at(51), at(55)), (0, None));
        assert_eq!(log.errors_total(), 4);
    }
}
