//! One worker: the article's counter workload (plus reads and inserts) in a loop, recording how
//! every operation ended.
//!
//! A worker does what the article's application does *without* a retry loop of its own: it
//! sends the operation once and records the result. Whatever resilience the run shows is the
//! driver's.

use std::cell::Cell;
use std::future::IntoFuture;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bson::{Bson, Document, doc};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use steadfast::error::{ErrorClass, Outcome};
use steadfast::{Collection, ErrorKind};
use steadfast_report::timeline::Outcome as SampleOutcome;

use super::ledger::{
    CounterBook, FailureClass, OpKind, OpSample, StaleRead, WorkerLog, WriteFate, WriteProgress,
    WriteSpan,
};
use super::progress::LiveCounters;
use super::transfer_worker::{self, Bank};

/// The server's code for a duplicate key.
const DUPLICATE_KEY: i32 = 11000;
/// An operation still pending after this long is abandoned and recorded as hung: without this
/// guard a driver bug would hang the run instead of failing it. Far above any wait the run's
/// client options allow (server selection gives up after seconds).
pub(crate) const HANG_LIMIT: Duration = Duration::from_secs(45);

/// How often each kind of operation is chosen, as relative weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OpMix {
    pub(crate) increments: u32,
    pub(crate) reads: u32,
    pub(crate) inserts: u32,
    /// Only drawn when the workload has a bank.
    pub(crate) transfers: u32,
}

impl OpMix {
    fn pick(&self, rng: &mut impl Rng) -> OpKind {
        let total = self.increments + self.reads + self.inserts + self.transfers;
        let roll = rng.random_range(0..total.max(1));
        if roll < self.increments {
            OpKind::Increment
        } else if roll < self.increments + self.reads {
            OpKind::Read
        } else if roll < self.increments + self.reads + self.inserts {
            OpKind::Insert
        } else {
            OpKind::Transfer
        }
    }
}

/// What every worker shares.
pub(crate) struct Workload {
    /// The counters (`{_id: day, counter: n}`).
    pub(crate) counters: Collection<Document>,
    /// Where inserts go.
    pub(crate) inserts: Collection<Document>,
    pub(crate) book: Arc<CounterBook>,
    /// Acknowledged writes, for the fault player's pacing.
    pub(crate) writes: Arc<WriteProgress>,
    pub(crate) live: Arc<LiveCounters>,
    pub(crate) mix: OpMix,
    /// Whether a read that returns less than was acknowledged before it started counts as a
    /// stale read (true when every member serves the same data, as in blackpipe).
    pub(crate) check_reads: bool,
    /// The accounts transfers move money between; `None` for the counter workload.
    pub(crate) bank: Option<Arc<Bank>>,
    /// Whether workers keep every operation for the HTML report.
    pub(crate) record_samples: bool,
}

/// Runs operations until `deadline`, then returns what it saw. The operation in flight at the
/// deadline is completed, not abandoned, so that its outcome is known.
pub(crate) async fn run(
    worker: usize,
    workload: Arc<Workload>,
    seed: u64,
    deadline: Instant,
) -> WorkerLog {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut log = WorkerLog {
        samples: workload.record_samples.then(Vec::new),
        ..WorkerLog::default()
    };
    let mut inserted = 0u64;
    let mut transferred = 0u64;
    while Instant::now() < deadline {
        match workload.mix.pick(&mut rng) {
            OpKind::Increment => {
                let counter = rng.random_range(0..workload.book.len().max(1));
                increment(&workload, counter, &mut log).await;
            }
            OpKind::Read => {
                let counter = rng.random_range(0..workload.book.len().max(1));
                read(&workload, counter, &mut log).await;
            }
            OpKind::Insert => {
                inserted += 1;
                insert(&workload, format!("w{worker}-{inserted}"), &mut log).await;
            }
            OpKind::Transfer => {
                if let Some(bank) = &workload.bank {
                    transferred += 1;
                    let id = format!("t{worker}-{transferred}");
                    transfer_worker::transfer(&workload, bank, id, &mut rng, &mut log).await;
                }
            }
        }
    }
    log
}

async fn increment(workload: &Workload, counter: usize, log: &mut WorkerLog) {
    let key = workload.book.key(counter).to_owned();
    let sent = Instant::now();
    let update = workload
        .counters
        .update_one(doc! { "_id": &key }, doc! { "$inc": { "counter": 1 } })
        .upsert(true);
    let Some(result) = guard(update.into_future(), OpKind::Increment, log).await else {
        log.increment(&key, WriteFate::Ambiguous);
        return;
    };
    let acknowledged = Instant::now();
    let latency = acknowledged - sent;
    workload.live.completed(result.is_err());
    match result {
        Ok(update) => {
            workload.book.acknowledge(counter);
            workload.writes.acknowledged(sent);
            log.increment(&key, WriteFate::Acknowledged);
            log.acknowledged_writes
                .push(WriteSpan { sent, acknowledged });
            log.success(OpKind::Increment, latency);
            let changed = update.modified_count + u64::from(update.upserted_id.is_some());
            if changed != 1 {
                log.anomalies.push(format!(
                    "an acknowledged upsert $inc of {key} changed {changed} documents (matched {})",
                    update.matched_count
                ));
            }
        }
        Err(error) => {
            log.increment(&key, fate_of(&error));
            log.failure(OpKind::Increment, class_of(&error), latency, || {
                describe(&error)
            });
        }
    }
}

async fn read(workload: &Workload, counter: usize, log: &mut WorkerLog) {
    let key = workload.book.key(counter).to_owned();
    let acknowledged_before = workload.book.acknowledged(counter);
    let sent = Instant::now();
    let find = workload.counters.find_one(doc! { "_id": &key });
    let Some(result) = guard(find.into_future(), OpKind::Read, log).await else {
        return;
    };
    let latency = sent.elapsed();
    workload.live.completed(result.is_err());
    match result {
        Ok(found) => {
            log.success(OpKind::Read, latency);
            let seen = found.as_ref().map_or(Some(0), counter_value);
            match seen {
                Some(seen)
                    if workload.check_reads
                        && i128::from(seen) < i128::from(acknowledged_before) =>
                {
                    log.stale_reads.push(StaleRead {
                        key,
                        acknowledged_before,
                        seen,
                    });
                }
                Some(_) => {}
                None => log
                    .anomalies
                    .push(format!("counter {key} holds no integer: {found:?}")),
            }
        }
        Err(error) => log.failure(OpKind::Read, class_of(&error), latency, || describe(&error)),
    }
}

async fn insert(workload: &Workload, id: String, log: &mut WorkerLog) {
    let sent = Instant::now();
    let insert = workload
        .inserts
        .insert_one(doc! { "_id": &id, "at": bson::DateTime::now() });
    let Some(result) = guard(insert.into_future(), OpKind::Insert, log).await else {
        log.inserts.record(id, WriteFate::Ambiguous);
        return;
    };
    let acknowledged = Instant::now();
    let latency = acknowledged - sent;
    workload.live.completed(result.is_err());
    match result {
        Ok(_) => {
            workload.writes.acknowledged(sent);
            log.inserts.record(id, WriteFate::Acknowledged);
            log.acknowledged_writes
                .push(WriteSpan { sent, acknowledged });
            log.success(OpKind::Insert, latency);
        }
        Err(error) => {
            if is_duplicate_key(&error) {
                log.inserts.duplicate_key.push(id);
            } else {
                log.inserts.record(id, fate_of(&error));
            }
            log.failure(OpKind::Insert, class_of(&error), latency, || {
                describe(&error)
            });
        }
    }
}

tokio::task_local! {
    /// How many times the driver retried the operation a worker is awaiting: the retry
    /// layer emits its retry events on the operation's own task, so the listener can count
    /// them here ([`note_retry`]).
    static RETRIES: Cell<u32>;
}

/// Counts one retry of the operation the current task awaits in [`guard`] (nothing outside one).
pub(crate) fn note_retry() {
    let _ = RETRIES.try_with(|retries| retries.set(retries.get() + 1));
}

/// Awaits `operation` for at most [`HANG_LIMIT`]; `None` (recorded as a hung operation) if it
/// did not complete. When the log keeps samples, the operation is recorded with its outcome
/// and retries.
pub(crate) async fn guard<T>(
    operation: impl Future<Output = steadfast::error::Result<T>>,
    op: OpKind,
    log: &mut WorkerLog,
) -> Option<steadfast::error::Result<T>> {
    let sent = Instant::now();
    let (result, retries) = RETRIES
        .scope(Cell::new(0), async {
            let result = tokio::time::timeout(HANG_LIMIT, operation).await;
            (result, RETRIES.with(Cell::get))
        })
        .await;
    if let Some(samples) = &mut log.samples {
        samples.push(OpSample {
            sent,
            latency: sent.elapsed(),
            kind: op,
            outcome: sample_outcome(result.as_ref().ok(), op, retries),
            retries,
        });
    }
    match result {
        Ok(result) => Some(result),
        Err(_) => {
            log.failure(op, FailureClass::Other, HANG_LIMIT, || {
                format!("no outcome after {} s", HANG_LIMIT.as_secs())
            });
            log.anomalies.push(format!(
                "a {} operation hung for {} s and was abandoned",
                op.name(),
                HANG_LIMIT.as_secs()
            ));
            None
        }
    }
}

/// How the report shows an operation that ended with `result` (`None`: it hung).
fn sample_outcome<T>(
    result: Option<&steadfast::error::Result<T>>,
    op: OpKind,
    retries: u32,
) -> SampleOutcome {
    match result {
        Some(Ok(_)) if retries > 0 => SampleOutcome::RetriedOk,
        Some(Ok(_)) => SampleOutcome::Ok,
        _ if op == OpKind::Read => SampleOutcome::Failed,
        Some(Err(error)) => match error.outcome() {
            Outcome::NotApplied => SampleOutcome::NotApplied,
            Outcome::Applied => SampleOutcome::AppliedDespiteError,
            _ => SampleOutcome::Ambiguous,
        },
        None => SampleOutcome::Ambiguous,
    }
}

/// The error with what the retry layer knows: its outcome and every attempt.
pub(crate) fn describe(error: &steadfast::Error) -> String {
    let attempts: Vec<String> = error
        .retry_history()
        .iter()
        .map(|attempt| format!("{} ({:?})", attempt.reason, attempt.execution))
        .collect();
    format!(
        "{error} [outcome {:?}; attempts: {}]",
        error.outcome(),
        attempts.join(" -> ")
    )
}

/// The counter field of a counter document, whatever integer type the server chose.
pub(crate) fn counter_value(document: &Document) -> Option<i64> {
    match document.get("counter") {
        Some(Bson::Int32(n)) => Some(i64::from(*n)),
        Some(Bson::Int64(n)) => Some(*n),
        Some(Bson::Double(n)) if n.fract() == 0.0 => Some(*n as i64),
        None => Some(0),
        Some(_) => None,
    }
}

pub(crate) fn is_duplicate_key(error: &steadfast::Error) -> bool {
    match error.kind() {
        ErrorKind::Command(command) => command.code_if_present() == Some(DUPLICATE_KEY),
        _ => error
            .partial_write()
            .is_some_and(|partial| partial.write_errors.iter().any(|w| w.code == DUPLICATE_KEY)),
    }
}

/// What the driver says a failed write did.
pub(crate) fn fate_of(error: &steadfast::Error) -> WriteFate {
    match error.outcome() {
        Outcome::NotApplied => WriteFate::NotApplied,
        Outcome::Applied => WriteFate::AppliedDespiteError,
        // The workload writes one statement at a time, so "partly" cannot arise; should it,
        // the checker must not assume either fate.
        _ => WriteFate::Ambiguous,
    }
}

/// The article's class of a failure.
pub(crate) fn class_of(error: &steadfast::Error) -> FailureClass {
    match error.class() {
        ErrorClass::Transient => FailureClass::Transient,
        ErrorClass::Outage => FailureClass::Outage,
        ErrorClass::Command => FailureClass::Command,
        _ => FailureClass::Other,
    }
}

/// Derives worker `worker`'s seed from the run's, so that each worker makes its own choices
/// and a run replays from one number.
pub(crate) fn worker_seed(run_seed: u64, worker: usize) -> u64 {
    // SplitMix64's increment spreads consecutive workers over the seed space.
    run_seed ^ (worker as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}
