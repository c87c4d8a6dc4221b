//! What the workers saw, kept per worker while they run and merged afterwards.
//!
//! The ledger knows nothing about the driver: a worker translates each result into a
//! [`WriteFate`] or a [`FailureClass`] before recording it, so the bookkeeping and the checks
//! built on it are plain values that unit tests can build by hand.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::transfers::TransferBook;

/// How a write the application issued ended, from the application's point of view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WriteFate {
    /// The server acknowledged it.
    Acknowledged,
    /// It failed, but the driver knows it was applied (only its write concern failed).
    AppliedDespiteError,
    /// It failed and the driver knows it was not applied.
    NotApplied,
    /// It failed and may or may not have been applied.
    Ambiguous,
}

/// The three kinds of failure of "How to write resilient MongoDB applications", plus the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum FailureClass {
    /// A transient error the driver did not hide (a blip, an election, overload).
    Transient,
    /// An outage that outlasted every retry the driver was allowed.
    Outage,
    /// The server refused the command itself; retrying would fail again.
    Command,
    /// Anything else (invalid arguments, protocol errors): a bug somewhere.
    Other,
}

impl FailureClass {
    /// Every class, in report order.
    pub(crate) const ALL: [FailureClass; 4] = [
        FailureClass::Transient,
        FailureClass::Outage,
        FailureClass::Command,
        FailureClass::Other,
    ];

    /// The name used in reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            FailureClass::Transient => "transient",
            FailureClass::Outage => "outage",
            FailureClass::Command => "command",
            FailureClass::Other => "other",
        }
    }
}

/// The kinds of operation the workers run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum OpKind {
    /// `updateOne({_id: day}, {$inc: {counter: 1}}, upsert)`.
    Increment,
    /// `findOne({_id: day})`.
    Read,
    /// `insertOne` with a client-generated `_id`.
    Insert,
    /// A transfer between two accounts, in a transaction.
    Transfer,
}

impl OpKind {
    /// The name used in reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            OpKind::Increment => "increment",
            OpKind::Read => "read",
            OpKind::Insert => "insert",
            OpKind::Transfer => "transfer",
        }
    }
}

/// Per counter: how its increments ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct IncrementTally {
    /// Acknowledged increments.
    pub(crate) acknowledged: u64,
    /// Failed increments the driver knows were applied.
    pub(crate) applied_despite_error: u64,
    /// Failed increments the driver knows were not applied.
    pub(crate) not_applied: u64,
    /// Failed increments that may or may not have been applied.
    pub(crate) ambiguous: u64,
}

impl IncrementTally {
    pub(crate) fn record(&mut self, fate: WriteFate) {
        match fate {
            WriteFate::Acknowledged => self.acknowledged += 1,
            WriteFate::AppliedDespiteError => self.applied_despite_error += 1,
            WriteFate::NotApplied => self.not_applied += 1,
            WriteFate::Ambiguous => self.ambiguous += 1,
        }
    }

    fn merge(&mut self, other: &IncrementTally) {
        self.acknowledged += other.acknowledged;
        self.applied_despite_error += other.applied_despite_error;
        self.not_applied += other.not_applied;
        self.ambiguous += other.ambiguous;
    }

    /// The least the counter must hold: every increment known to be applied.
    pub(crate) fn certainly_applied(&self) -> u64 {
        self.acknowledged + self.applied_despite_error
    }
}

/// Inserted `_id`s by how their insert ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct InsertBook {
    /// `_id`s whose insert was acknowledged.
    pub(crate) acknowledged: Vec<String>,
    /// `_id`s whose insert failed but was applied.
    pub(crate) applied_despite_error: Vec<String>,
    /// `_id`s whose insert the driver reported as not applied.
    pub(crate) not_applied: Vec<String>,
    /// `_id`s whose insert may or may not have been applied.
    pub(crate) ambiguous: Vec<String>,
    /// `_id`s the server called duplicates: each is used once, so the server must have seen
    /// the insert twice.
    pub(crate) duplicate_key: Vec<String>,
}

impl InsertBook {
    pub(crate) fn record(&mut self, id: String, fate: WriteFate) {
        match fate {
            WriteFate::Acknowledged => self.acknowledged.push(id),
            WriteFate::AppliedDespiteError => self.applied_despite_error.push(id),
            WriteFate::NotApplied => self.not_applied.push(id),
            WriteFate::Ambiguous => self.ambiguous.push(id),
        }
    }

    fn merge(&mut self, other: InsertBook) {
        self.acknowledged.extend(other.acknowledged);
        self.applied_despite_error
            .extend(other.applied_despite_error);
        self.not_applied.extend(other.not_applied);
        self.ambiguous.extend(other.ambiguous);
        self.duplicate_key.extend(other.duplicate_key);
    }

    /// How many inserts were attempted.
    pub(crate) fn attempted(&self) -> usize {
        self.acknowledged.len()
            + self.applied_despite_error.len()
            + self.not_applied.len()
            + self.ambiguous.len()
            + self.duplicate_key.len()
    }
}

/// A read that returned less than what had been acknowledged before it started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StaleRead {
    /// The counter read.
    pub(crate) key: String,
    /// Increments acknowledged before the read was sent.
    pub(crate) acknowledged_before: u64,
    /// The value the read returned.
    pub(crate) seen: i64,
}

/// One acknowledged write: when it was sent and when its acknowledgement arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WriteSpan {
    pub(crate) sent: Instant,
    pub(crate) acknowledged: Instant,
}

/// One operation as the HTML report draws it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct OpSample {
    pub(crate) sent: Instant,
    pub(crate) latency: Duration,
    pub(crate) kind: OpKind,
    pub(crate) outcome: steadfast_report::timeline::Outcome,
    /// How many times the driver retried it.
    pub(crate) retries: u32,
}

/// One failure the application saw, kept (a few per class) to show in reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FailureSample {
    pub(crate) op: OpKind,
    pub(crate) class: FailureClass,
    pub(crate) message: String,
}

/// How many failure messages a worker keeps per class.
const SAMPLES_PER_CLASS: usize = 3;

/// Everything one worker saw. Owned by the worker while it runs: no locks on the hot path.
#[derive(Debug, Default)]
pub(crate) struct WorkerLog {
    /// Per counter key.
    pub(crate) increments: BTreeMap<String, IncrementTally>,
    pub(crate) inserts: InsertBook,
    pub(crate) transfers: TransferBook,
    /// Failures by operation kind and class.
    pub(crate) failures: BTreeMap<(OpKind, FailureClass), u64>,
    pub(crate) failure_samples: Vec<FailureSample>,
    /// Successful operations by kind.
    pub(crate) successes: BTreeMap<OpKind, u64>,
    /// Latency of every operation (successful or not).
    pub(crate) latencies: Vec<Duration>,
    pub(crate) acknowledged_writes: Vec<WriteSpan>,
    pub(crate) stale_reads: Vec<StaleRead>,
    /// Acknowledgements that contradict the request (an upsert that changed nothing...).
    pub(crate) anomalies: Vec<String>,
    /// Every operation, when the run writes an HTML report (`None` otherwise: a long run
    /// would keep millions).
    pub(crate) samples: Option<Vec<OpSample>>,
}

impl WorkerLog {
    /// Records a successful operation.
    pub(crate) fn success(&mut self, op: OpKind, latency: Duration) {
        *self.successes.entry(op).or_default() += 1;
        self.latencies.push(latency);
    }

    /// Records a failed operation.
    pub(crate) fn failure(
        &mut self,
        op: OpKind,
        class: FailureClass,
        latency: Duration,
        message: impl FnOnce() -> String,
    ) {
        *self.failures.entry((op, class)).or_default() += 1;
        self.latencies.push(latency);
        let kept = self
            .failure_samples
            .iter()
            .filter(|sample| sample.class == class)
            .count();
        if kept < SAMPLES_PER_CLASS {
            self.failure_samples.push(FailureSample {
                op,
                class,
                message: message(),
            });
        }
    }

    /// Records how an increment of `key` ended.
    pub(crate) fn increment(&mut self, key: &str, fate: WriteFate) {
        match self.increments.get_mut(key) {
            Some(tally) => tally.record(fate),
            None => {
                let mut tally = IncrementTally::default();
                tally.record(fate);
                self.increments.insert(key.to_owned(), tally);
            }
        }
    }
}

/// Every worker's log, merged.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    pub(crate) increments: BTreeMap<String, IncrementTally>,
    pub(crate) inserts: InsertBook,
    pub(crate) transfers: TransferBook,
    pub(crate) failures: BTreeMap<(OpKind, FailureClass), u64>,
    pub(crate) failure_samples: Vec<FailureSample>,
    pub(crate) successes: BTreeMap<OpKind, u64>,
    pub(crate) latencies: Vec<Duration>,
    pub(crate) acknowledged_writes: Vec<WriteSpan>,
    pub(crate) stale_reads: Vec<StaleRead>,
    pub(crate) anomalies: Vec<String>,
    /// Every worker's operations, when recorded.
    pub(crate) samples: Vec<OpSample>,
}

impl Ledger {
    /// Adds one worker's log.
    pub(crate) fn absorb(&mut self, log: WorkerLog) {
        for (key, tally) in &log.increments {
            self.increments.entry(key.clone()).or_default().merge(tally);
        }
        self.inserts.merge(log.inserts);
        self.transfers.absorb(log.transfers);
        for (key, count) in log.failures {
            *self.failures.entry(key).or_default() += count;
        }
        for sample in log.failure_samples {
            let kept = self
                .failure_samples
                .iter()
                .filter(|kept| kept.class == sample.class)
                .count();
            if kept < SAMPLES_PER_CLASS {
                self.failure_samples.push(sample);
            }
        }
        for (op, count) in log.successes {
            *self.successes.entry(op).or_default() += count;
        }
        self.latencies.extend(log.latencies);
        self.acknowledged_writes.extend(log.acknowledged_writes);
        self.stale_reads.extend(log.stale_reads);
        self.anomalies.extend(log.anomalies);
        self.samples.extend(log.samples.unwrap_or_default());
    }

    /// Failures of class `class`, all operation kinds together.
    pub(crate) fn failures_of(&self, class: FailureClass) -> u64 {
        self.failures
            .iter()
            .filter(|((_, c), _)| *c == class)
            .map(|(_, count)| count)
            .sum()
    }

    /// Every failure the application saw.
    pub(crate) fn total_failures(&self) -> u64 {
        self.failures.values().sum()
    }

    /// Every operation that completed, successfully or not.
    pub(crate) fn total_operations(&self) -> u64 {
        self.successes.values().sum::<u64>() + self.total_failures()
    }
}

/// Acknowledged increments per counter, shared by every worker while they run: a read
/// compares what it sees with what was acknowledged before it was sent.
#[derive(Debug)]
pub(crate) struct CounterBook {
    keys: Vec<String>,
    acknowledged: Vec<AtomicU64>,
}

impl CounterBook {
    /// A book for these counter keys.
    pub(crate) fn new(keys: Vec<String>) -> Self {
        let acknowledged = keys.iter().map(|_| AtomicU64::new(0)).collect();
        CounterBook { keys, acknowledged }
    }

    /// How many counters there are.
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    /// The key of counter `index`.
    pub(crate) fn key(&self, index: usize) -> &str {
        self.keys.get(index).map_or("", String::as_str)
    }

    /// Every key.
    pub(crate) fn keys(&self) -> &[String] {
        &self.keys
    }

    /// Called once an increment of counter `index` is acknowledged.
    pub(crate) fn acknowledge(&self, index: usize) {
        if let Some(count) = self.acknowledged.get(index) {
            count.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Increments of counter `index` acknowledged so far.
    pub(crate) fn acknowledged(&self, index: usize) -> u64 {
        self.acknowledged
            .get(index)
            .map_or(0, |count| count.load(Ordering::SeqCst))
    }
}

/// The counter keys: one per day, in the article's format.
pub(crate) fn day_keys(count: usize) -> Vec<String> {
    (0..count)
        .map(|offset| {
            // Days from June 2016, the article's month: fixed keys make runs comparable.
            let day = 1 + offset % 30;
            let month = 6 + offset / 30;
            format!("2016-{month:02}-{day:02}")
        })
        .collect()
}

/// The latest send time of any acknowledged write, shared by the workers: the fault player
/// waits on it for the application to recover before the next fault.
#[derive(Debug)]
pub(crate) struct WriteProgress {
    origin: Instant,
    /// Nanoseconds from `origin` to the send time of the latest-sent acknowledged write, plus
    /// one (zero: none yet).
    latest_sent: AtomicU64,
}

impl WriteProgress {
    /// Progress counted from now.
    pub(crate) fn new() -> Self {
        WriteProgress {
            origin: Instant::now(),
            latest_sent: AtomicU64::new(0),
        }
    }

    fn offset(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.origin).as_nanos()).unwrap_or(u64::MAX - 1)
            + 1
    }

    /// Records that a write sent at `sent` was acknowledged.
    pub(crate) fn acknowledged(&self, sent: Instant) {
        self.latest_sent
            .fetch_max(self.offset(sent), Ordering::SeqCst);
    }

    /// Whether a write sent at or after `at` has been acknowledged.
    pub(crate) fn acknowledged_since(&self, at: Instant) -> bool {
        self.latest_sent.load(Ordering::SeqCst) >= self.offset(at)
    }
}
