//! The report a run ends with: as text for people, or as JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::burst::BurstFigures;
use super::durability::{ConvergenceCheck, Durability};
use super::events::DriverWatch;
use super::inject::FaultRecord;
use super::ledger::{FailureClass, Ledger};
use super::run::RunOutcome;
use super::stats::{LatencySummary, human, human_micros, summarize_latencies, time_to_first_write};
use super::stream_check::StreamCheck;
use super::transfers::TransferCheck;
use super::verify::{CounterCheck, InsertCheck};

/// A fault as reported: what it was and how long the application waited for its next write.
#[derive(Debug, Serialize)]
pub(crate) struct FaultReport {
    #[serde(flatten)]
    pub(crate) record: FaultRecord,
    /// From the fault to the acknowledgement of the first write sent after it.
    pub(crate) first_write_after_ms: Option<f64>,
}

/// A failure message the application saw.
#[derive(Debug, Serialize)]
pub(crate) struct SampleReport {
    pub(crate) operation: &'static str,
    pub(crate) class: &'static str,
    pub(crate) message: String,
}

/// What became of one invariant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Verdict {
    /// Measured, and it held.
    Held,
    /// Measured, and it did not hold.
    Violated,
    /// Could not be measured (or the run gave it nothing to check): it neither held nor failed.
    NotChecked,
}

impl Verdict {
    /// `Held` if `held`, else `Violated`.
    pub(crate) fn of(held: bool) -> Verdict {
        if held {
            Verdict::Held
        } else {
            Verdict::Violated
        }
    }

    /// Whether this verdict fails the run: a violation always, an unchecked invariant under
    /// `strict`.
    pub(crate) fn fails_run(self, strict: bool) -> bool {
        match self {
            Verdict::Held => false,
            Verdict::Violated => true,
            Verdict::NotChecked => strict,
        }
    }

    /// The mark a text report puts before the invariant's name.
    fn mark(self) -> &'static str {
        match self {
            Verdict::Held => "held",
            Verdict::Violated => "VIOLATED",
            Verdict::NotChecked => "NOT CHECKED",
        }
    }
}

/// One invariant and its verdict.
#[derive(Debug, Serialize)]
pub(crate) struct Check {
    pub(crate) name: &'static str,
    pub(crate) verdict: Verdict,
    pub(crate) detail: String,
}

/// Everything a run reports.
#[derive(Debug, Serialize)]
pub(crate) struct Report {
    pub(crate) command: &'static str,
    pub(crate) deployment: String,
    pub(crate) seed: Option<u64>,
    pub(crate) seconds: f64,
    pub(crate) workers: usize,
    pub(crate) retries_enabled: bool,
    pub(crate) operations: u64,
    pub(crate) operations_per_second: f64,
    pub(crate) succeeded: BTreeMap<&'static str, u64>,
    /// Failures the application saw, by class (transient / outage / command / other).
    pub(crate) failures: BTreeMap<&'static str, u64>,
    /// Failures by operation kind.
    pub(crate) failures_by_operation: BTreeMap<&'static str, u64>,
    pub(crate) failure_samples: Vec<SampleReport>,
    pub(crate) retries: u64,
    pub(crate) retries_by_reason: BTreeMap<String, u64>,
    pub(crate) retries_by_operation: BTreeMap<String, u64>,
    pub(crate) faults: Vec<FaultReport>,
    pub(crate) latency: Option<LatencySummary>,
    pub(crate) counters: CounterCheck,
    pub(crate) inserts: Option<InsertCheck>,
    pub(crate) stale_reads: Vec<String>,
    pub(crate) anomalies: Vec<String>,
    pub(crate) panics: Vec<String>,
    /// The transfer workload's check, when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) transfers: Option<TransferCheck>,
    /// The change stream consumer's check, when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) stream: Option<StreamCheck>,
    /// Invariants checked after the run (torture).
    pub(crate) checks: Vec<Check>,
    /// Problems putting the deployment back in order after the faults.
    pub(crate) cleanup_problems: Vec<String>,
    /// The overload bursts played against blackpipe's capacity model.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) overload_bursts: Vec<BurstFigures>,
    /// The write concern of the workers' increments and inserts (torture).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) write_concern: Option<Durability>,
    /// Whether the members hold the same data once caught up (torture).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) convergence: Option<ConvergenceCheck>,
}

/// The parts of a report every run has.
pub(crate) struct ReportInputs<'a> {
    pub(crate) command: &'static str,
    pub(crate) deployment: String,
    pub(crate) seed: Option<u64>,
    pub(crate) workers: usize,
    pub(crate) retries_enabled: bool,
    pub(crate) driver: &'a DriverWatch,
    pub(crate) counters: CounterCheck,
    pub(crate) inserts: Option<InsertCheck>,
}

impl Report {
    /// Builds the report of `outcome` (its latencies are sorted in place).
    pub(crate) fn new(inputs: ReportInputs<'_>, outcome: &mut RunOutcome) -> Report {
        let ledger: &mut Ledger = &mut outcome.ledger;
        let seconds = outcome.elapsed.as_secs_f64();
        let operations = ledger.total_operations();
        let mut failures = BTreeMap::new();
        for class in FailureClass::ALL {
            failures.insert(class.name(), ledger.failures_of(class));
        }
        let mut failures_by_operation: BTreeMap<&'static str, u64> = BTreeMap::new();
        for ((op, _), count) in &ledger.failures {
            *failures_by_operation.entry(op.name()).or_default() += count;
        }
        let faults = outcome
            .faults
            .iter()
            .map(|record| FaultReport {
                record: record.clone(),
                first_write_after_ms: record
                    .skipped
                    .is_none()
                    .then(|| time_to_first_write(record.injected, &ledger.acknowledged_writes))
                    .flatten()
                    .map(|d| d.as_secs_f64() * 1000.0),
            })
            .collect();
        Report {
            command: inputs.command,
            deployment: inputs.deployment,
            seed: inputs.seed,
            seconds,
            workers: inputs.workers,
            retries_enabled: inputs.retries_enabled,
            operations,
            operations_per_second: if seconds > 0.0 {
                operations as f64 / seconds
            } else {
                0.0
            },
            succeeded: ledger
                .successes
                .iter()
                .map(|(op, count)| (op.name(), *count))
                .collect(),
            failures,
            failures_by_operation,
            failure_samples: ledger
                .failure_samples
                .iter()
                .map(|sample| SampleReport {
                    operation: sample.op.name(),
                    class: sample.class.name(),
                    message: sample.message.clone(),
                })
                .collect(),
            retries: inputs.driver.retries(),
            retries_by_reason: inputs.driver.retries_by_reason(),
            retries_by_operation: inputs.driver.retries_by_operation(),
            faults,
            latency: summarize_latencies(&mut ledger.latencies),
            counters: inputs.counters,
            inserts: inputs.inserts,
            stale_reads: ledger
                .stale_reads
                .iter()
                .map(|stale| {
                    format!(
                        "counter {}: read {} after {} increments were acknowledged",
                        stale.key, stale.seen, stale.acknowledged_before
                    )
                })
                .collect(),
            anomalies: ledger.anomalies.clone(),
            panics: outcome.panics.clone(),
            transfers: None,
            stream: None,
            checks: Vec::new(),
            cleanup_problems: Vec::new(),
            overload_bursts: Vec::new(),
            write_concern: None,
            convergence: None,
        }
    }

    /// The checks that make the run fail: every violated one, and under `strict` (CI) also
    /// every one that could not be checked, so that a run cannot pass on checks it skipped.
    pub(crate) fn failing_checks(&self, strict: bool) -> Vec<&Check> {
        self.checks
            .iter()
            .filter(|check| check.verdict.fails_run(strict))
            .collect()
    }

    /// The "counters exact" line: the one line a reader (and the CLI test) looks for.
    pub(crate) fn counters_line(&self) -> String {
        let counters = &self.counters;
        let verdict = if counters.exact() {
            "yes"
        } else if counters.within_bounds() && counters.lost_to_rollback > 0 {
            "no, but every difference is an increment a rollback discarded (w: 1) or reported with an unknown outcome"
        } else if counters.within_bounds() {
            "no, but every difference is an increment reported with an unknown outcome"
        } else {
            "NO"
        };
        let mut line = format!(
            "counters exact: {verdict} ({} increments acknowledged, {} counted over {} counters",
            counters.acknowledged + counters.applied_despite_error,
            counters.final_total,
            counters.counters
        );
        if counters.ambiguous > 0 {
            let _ = write!(line, "; {} with an unknown outcome", counters.ambiguous);
        }
        if counters.rolled_back > 0 {
            let _ = write!(
                line,
                "; rollbacks discarded {}, {} of them known to be applied",
                counters.rolled_back, counters.lost_to_rollback
            );
        }
        line.push(')');
        line
    }

    /// What became of the events the application tried to count.
    fn increments_line(&self) -> String {
        let c = &self.counters;
        let failed = c.applied_despite_error + c.not_applied + c.ambiguous;
        format!(
            "  increments      {} attempted: {} acknowledged, {failed} failed ({} not applied, {} unknown outcome, {} applied anyway)",
            c.acknowledged + failed,
            c.acknowledged,
            c.not_applied,
            c.ambiguous,
            c.applied_despite_error
        )
    }

    /// The report as text.
    pub(crate) fn to_text(&self) -> String {
        let mut out = String::new();
        let retries = if self.retries_enabled {
            "on"
        } else {
            "OFF (FailFast)"
        };
        let _ = writeln!(
            out,
            "\nsteadfast {}: {:.1} s, {} workers, retries {retries}, {}",
            self.command, self.seconds, self.workers, self.deployment
        );
        if let Some(seed) = self.seed {
            let _ = writeln!(out, "  seed            {seed}");
        }
        let by_kind: Vec<String> = self
            .succeeded
            .iter()
            .map(|(op, n)| format!("{op} {n}"))
            .collect();
        let _ = writeln!(
            out,
            "  operations      {} ({:.0}/s): {} succeeded",
            self.operations,
            self.operations_per_second,
            by_kind.join(", ")
        );
        self.write_faults(&mut out);
        for burst in &self.overload_bursts {
            let _ = writeln!(out, "  overload burst  {}", burst.text_line());
        }
        let reasons: Vec<String> = self
            .retries_by_reason
            .iter()
            .map(|(reason, n)| format!("{reason} {n}"))
            .collect();
        let _ = writeln!(
            out,
            "  retries         {}{}{}",
            self.retries,
            if reasons.is_empty() { "" } else { ": " },
            reasons.join(", ")
        );
        let classes: Vec<String> = self
            .failures
            .iter()
            .map(|(class, n)| format!("{class} {n}"))
            .collect();
        let _ = writeln!(
            out,
            "  errors seen by the application: {}",
            classes.join(", ")
        );
        for sample in &self.failure_samples {
            let _ = writeln!(
                out,
                "    e.g. {} ({}): {}",
                sample.operation, sample.class, sample.message
            );
        }
        if let Some(latency) = &self.latency {
            let _ = writeln!(
                out,
                "  latency         p50 {}, p99 {}, max {}",
                human_micros(latency.p50_us),
                human_micros(latency.p99_us),
                human_micros(latency.max_us)
            );
        }
        let _ = writeln!(out, "{}", self.increments_line());
        if let Some(inserts) = &self.inserts {
            let _ = writeln!(
                out,
                "  inserts         {} attempted, {} acknowledged, {} not applied, {} ambiguous ({} of them applied), {} stored",
                inserts.attempted,
                inserts.acknowledged,
                inserts.not_applied,
                inserts.ambiguous,
                inserts.ambiguous_present,
                inserts.stored
            );
        }
        for mismatch in &self.counters.mismatches {
            let _ = writeln!(out, "  {}", mismatch.describe());
        }
        for (title, lines) in [
            ("cleanup", &self.cleanup_problems),
            ("stale read", &self.stale_reads),
            ("anomaly", &self.anomalies),
            ("panic", &self.panics),
        ] {
            for line in lines.iter().take(10) {
                let _ = writeln!(out, "  {title}: {line}");
            }
        }
        for check in &self.checks {
            let _ = writeln!(
                out,
                "  [{}] {}: {}",
                check.verdict.mark(),
                check.name,
                check.detail
            );
        }
        let _ = writeln!(out, "{}", self.counters_line());
        out
    }

    fn write_faults(&self, out: &mut String) {
        if self.faults.is_empty() {
            let _ = writeln!(out, "  faults          none");
            return;
        }
        let _ = writeln!(
            out,
            "  faults (time from each to the first write acknowledged after it):"
        );
        for fault in &self.faults {
            let record = &fault.record;
            let at = human_micros(record.at_ms.saturating_mul(1000));
            let member = record
                .member
                .as_deref()
                .map(|m| format!(" [{m}]"))
                .unwrap_or_default();
            let recovery = match (&record.skipped, fault.first_write_after_ms) {
                (Some(reason), _) => format!("skipped: {reason}"),
                (None, Some(ms)) => {
                    format!(
                        "first write after {}",
                        human(std::time::Duration::from_secs_f64(ms / 1000.0))
                    )
                }
                (None, None) => "no write succeeded after it".to_owned(),
            };
            let _ = writeln!(
                out,
                "    +{at:<9} {:<21} {}{member}: {recovery}",
                record.kind, record.description
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Verdict;

    #[test]
    fn an_unchecked_invariant_fails_only_a_strict_run() {
        assert!(!Verdict::Held.fails_run(true));
        assert!(Verdict::Violated.fails_run(false));
        assert!(Verdict::NotChecked.fails_run(true));
        assert!(!Verdict::NotChecked.fails_run(false));
    }

    #[test]
    fn verdicts_serialize_as_the_cli_test_reads_them() {
        let names: Vec<String> = [Verdict::Held, Verdict::Violated, Verdict::NotChecked]
            .iter()
            .map(|verdict| serde_json::to_string(verdict).expect("serializes"))
            .collect();
        assert_eq!(names, ["\"held\"", "\"violated\"", "\"not_checked\""]);
    }
}
