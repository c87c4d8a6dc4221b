//! The report: what was measured, as Markdown for people and JSON for tools, and how the
//! figures compare with the targets (measured and reported, never asserted).

use std::fmt::Write as _;
use std::time::Duration;

use serde::{Serialize, Serializer};

use super::failover::{FailoverOp, FailoverReport, FailoverSchedule};
use super::machine::Machine;
use super::memory::MemoryReport;
use super::stats::ratio;
use super::tables::TextSection;
use super::throughput::{CellReport, Schedule};
use super::timeout::{TimeoutReport, TimeoutSchedule};
use super::workload::{ContenderKind, Workload};

/// Serialises a duration as fractional milliseconds.
pub(crate) fn as_millis<S: Serializer>(
    duration: &Duration,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(duration.as_secs_f64() * 1_000.0)
}

/// One target of the issue and where the run stands against it.
#[derive(Debug, Serialize)]
pub(crate) struct TargetCheck {
    /// What the issue asks for.
    pub(crate) target: String,
    /// What this run measured.
    pub(crate) measured: String,
    /// Whether the measurement meets the target; `None` when there is nothing to compare.
    pub(crate) met: Option<bool>,
}

/// Everything one `steadfast-bench` run measured.
#[derive(Debug, Serialize)]
pub(crate) struct Report {
    /// The command line that produced the report.
    pub(crate) command_line: String,
    /// The machine.
    pub(crate) machine: Machine,
    /// Rounds and durations of the throughput cells.
    pub(crate) schedule: Schedule,
    /// Timing of the failover schedule.
    pub(crate) failover_schedule: FailoverSchedule,
    /// One entry per (workload, concurrency).
    pub(crate) throughput: Vec<CellReport>,
    /// One entry per driver.
    pub(crate) failover: Vec<FailoverReport>,
    /// One entry per driver.
    pub(crate) memory: Vec<MemoryReport>,
    /// The timeout cell's parameters, when it ran.
    pub(crate) timeout_schedule: Option<TimeoutSchedule>,
    /// One entry per driver.
    pub(crate) timeout: Vec<TimeoutReport>,
    /// The open-loop overload cell, when it ran.
    pub(crate) overload: Option<super::overload::OverloadReport>,
    /// The targets against this run.
    pub(crate) targets: Vec<TargetCheck>,
    /// DriverBench and the client CPU cells, when they ran.
    pub(crate) driverbench: Option<super::driverbench::DriverBenchReport>,
}

/// The cells whose throughput ratio the issue targets.
const RATIO_TARGETS: [(Workload, usize); 4] = [
    (Workload::FindOne, 1),
    (Workload::FindOne, 64),
    (Workload::InsertOne, 1),
    (Workload::InsertOne, 64),
];
const MIN_THROUGHPUT_RATIO: f64 = 1.5;
const MAX_RAW_OVERHEAD: f64 = 1.3;
const MAX_RECOVERY_MS: f64 = 100.0;
const MIN_ON_TIME_SHARE: f64 = 0.99;
const MAX_NEW_CONNECTION_SHARE: f64 = 0.05;

impl Report {
    /// An empty report for this machine.
    pub(crate) fn new(
        command_line: String,
        schedule: Schedule,
        failover_schedule: FailoverSchedule,
    ) -> Self {
        Self {
            command_line,
            machine: Machine::current(),
            schedule,
            failover_schedule,
            throughput: Vec::new(),
            failover: Vec::new(),
            memory: Vec::new(),
            timeout_schedule: None,
            timeout: Vec::new(),
            overload: None,
            targets: Vec::new(),
            driverbench: None,
        }
    }

    fn cell(&self, workload: Workload, concurrency: usize) -> Option<&CellReport> {
        self.throughput
            .iter()
            .find(|cell| cell.workload == workload && cell.concurrency == concurrency)
    }

    /// Compares the measurements with the targets.
    pub(crate) fn evaluate_targets(&mut self) {
        let mut targets = Vec::new();
        for (workload, concurrency) in RATIO_TARGETS {
            let cell = self.cell(workload, concurrency);
            let speedup = cell.and_then(|cell| {
                ratio(
                    cell.summary(ContenderKind::Steadfast)
                        .map(|s| s.ops_per_sec),
                    cell.summary(ContenderKind::Official).map(|s| s.ops_per_sec),
                )
            });
            targets.push(TargetCheck {
                target: format!(
                    "{} at concurrency {concurrency}: steadfast >= {MIN_THROUGHPUT_RATIO}x the official ops/s",
                    workload.label()
                ),
                measured: speedup.map_or_else(
                    || "not measured for both drivers".to_owned(),
                    |r| format!("{r:.2}x"),
                ),
                met: speedup.map(|r| r >= MIN_THROUGHPUT_RATIO),
            });
        }
        for workload in [Workload::Ping, Workload::FindOne] {
            let overhead = self
                .cell(workload, 1)
                .and_then(|cell| raw_overhead(cell, ContenderKind::Steadfast));
            targets.push(TargetCheck {
                target: format!(
                    "{} at concurrency 1: steadfast p50 <= {MAX_RAW_OVERHEAD}x the raw round trip",
                    workload.label()
                ),
                measured: overhead.map_or_else(
                    || "not measured for steadfast and raw".to_owned(),
                    |r| format!("{r:.2}x"),
                ),
                met: overhead.map(|r| r <= MAX_RAW_OVERHEAD),
            });
        }
        if let Some(run) = self.failover.iter().find(|run| {
            run.driver == ContenderKind::Steadfast && run.operation == FailoverOp::Insert
        }) {
            if run.faults.is_empty() {
                targets.push(TargetCheck {
                    target: format!(
                        "failover: first successful write <= {MAX_RECOVERY_MS} ms after the fault clears, zero errors"
                    ),
                    measured: run.note.clone().unwrap_or_else(|| "no fault ran".into()),
                    met: None,
                });
            }
            for fault in &run.faults {
                targets.push(TargetCheck {
                    target: format!(
                        "{}: first successful write <= {MAX_RECOVERY_MS} ms, zero errors",
                        fault.fault
                    ),
                    measured: format!(
                        "{}, {} errors",
                        fault
                            .recovery_ms
                            .map_or_else(|| "no success".to_owned(), |ms| format!("{ms:.1} ms")),
                        fault.errors
                    ),
                    met: Some(
                        fault.recovery_ms.is_some_and(|ms| ms <= MAX_RECOVERY_MS)
                            && fault.errors == 0,
                    ),
                });
            }
        }
        self.timeout_targets(&mut targets);
        targets.extend(self.driverbench.iter().flat_map(|d| d.targets()));
        self.targets = targets;
    }

    fn timeout_targets(&self, targets: &mut Vec<TargetCheck>) {
        let Some(run) = self
            .timeout
            .iter()
            .find(|run| run.driver == ContenderKind::Steadfast.label())
        else {
            return;
        };
        let on_time = run.on_time_share();
        targets.push(TargetCheck {
            target: format!(
                "timeout cell: >= {:.0}% of operations return within timeoutMS + max(10 ms, 2%)",
                MIN_ON_TIME_SHARE * 100.0
            ),
            measured: percent(on_time),
            met: on_time.map(|share| share >= MIN_ON_TIME_SHARE),
        });
        let churn = run.new_connection_share();
        targets.push(TargetCheck {
            target: format!(
                "timeout cell: < {:.0}% of operations cost a new connection",
                MAX_NEW_CONNECTION_SHARE * 100.0
            ),
            measured: percent(churn),
            met: churn.map(|share| share < MAX_NEW_CONNECTION_SHARE),
        });
    }
}

pub(crate) fn percent(share: Option<f64>) -> String {
    share.map_or_else(
        || "not measured".to_owned(),
        |share| format!("{:.1}%", share * 100.0),
    )
}

/// `driver`'s p50 latency over the raw baseline's, in `cell`.
pub(crate) fn raw_overhead(cell: &CellReport, driver: ContenderKind) -> Option<f64> {
    ratio(
        cell.summary(driver).map(|s| s.p50_us),
        cell.summary(ContenderKind::Raw).map(|s| s.p50_us),
    )
}

impl Report {
    /// The report as Markdown.
    pub(crate) fn to_markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# steadfast-bench\n");
        let _ = writeln!(out, "- command: `{}`", self.command_line);
        let _ = writeln!(out, "- machine: {}", self.machine_text());
        let _ = writeln!(out, "- schedule: {}\n", self.schedule_text());
        for section in self.sections() {
            section.write_markdown(&mut out);
        }
        out
    }

    /// Every section, in report order (those of parts that did not run left out).
    pub(crate) fn sections(&self) -> Vec<TextSection> {
        let mut sections = vec![
            self.throughput_section(),
            self.raw_section(),
            self.failover_section(),
            self.memory_section(),
        ];
        sections.extend(self.timeout_section());
        sections.extend(
            self.overload
                .iter()
                .map(super::overload::OverloadReport::section),
        );
        sections.extend(self.driverbench.iter().flat_map(|d| d.sections()));
        sections.push(self.targets_section());
        sections
    }

    /// The machine in one line: cores, CPU, toolchain, build.
    pub(crate) fn machine_text(&self) -> String {
        let machine = &self.machine;
        format!(
            "{} cores, {}, {}, {} build",
            machine.cores,
            machine.cpu_model.as_deref().unwrap_or("unknown CPU"),
            machine.rustc.as_deref().unwrap_or("rustc unknown"),
            if machine.optimized {
                "optimized"
            } else {
                "debug"
            }
        )
    }

    /// How the throughput cells ran.
    pub(crate) fn schedule_text(&self) -> String {
        format!(
            "per cell, a {:?} warm-up then {} interleaved rounds of {:?} per contender \
             (the first contender rotates), all against one embedded blackpipe standalone on \
             127.0.0.1 sharing the client's tokio runtime; drivers use default options (note \
             the default maxPoolSize: 10 for the official driver, 100 for steadfast)",
            self.schedule.warmup, self.schedule.rounds, self.schedule.round
        )
    }
}
