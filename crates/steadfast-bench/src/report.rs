//! The report: what was measured, as Markdown for people and JSON for tools, and how the
//! figures compare with the targets (measured and reported, never asserted).

use std::fmt::Write as _;
use std::time::Duration;

use serde::{Serialize, Serializer};

use super::failover::{FailoverOp, FailoverReport, FailoverSchedule};
use super::machine::Machine;
use super::memory::MemoryReport;
use super::stats::{Summary, ratio};
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

fn percent(share: Option<f64>) -> String {
    share.map_or_else(
        || "not measured".to_owned(),
        |share| format!("{:.1}%", share * 100.0),
    )
}

/// `driver`'s p50 latency over the raw baseline's, in `cell`.
fn raw_overhead(cell: &CellReport, driver: ContenderKind) -> Option<f64> {
    ratio(
        cell.summary(driver).map(|s| s.p50_us),
        cell.summary(ContenderKind::Raw).map(|s| s.p50_us),
    )
}

fn figures(summary: Option<&Summary>) -> String {
    summary.map_or_else(
        || "n/a | n/a | n/a".to_owned(),
        |s| format!("{:.0} | {:.1} | {:.1}", s.ops_per_sec, s.p50_us, s.p99_us),
    )
}

fn times(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".to_owned(), |r| format!("{r:.2}x"))
}

fn kib(bytes: i64) -> String {
    // KiB with one decimal; sizes here are far below f64's exact range.
    #[allow(clippy::cast_precision_loss)]
    let kib = bytes as f64 / 1024.0;
    format!("{kib:.1}")
}

impl Report {
    /// The report as Markdown.
    pub(crate) fn to_markdown(&self) -> String {
        let mut out = String::new();
        self.write_header(&mut out);
        self.write_throughput(&mut out);
        self.write_raw(&mut out);
        self.write_failover(&mut out);
        self.write_memory(&mut out);
        self.write_timeout(&mut out);
        if let Some(overload) = &self.overload {
            out.push_str(&overload.to_markdown());
        }
        self.driverbench
            .iter()
            .for_each(|d| d.write_markdown(&mut out));
        self.write_targets(&mut out);
        out
    }

    fn write_header(&self, out: &mut String) {
        let machine = &self.machine;
        let _ = writeln!(out, "# steadfast-bench\n");
        let _ = writeln!(out, "- command: `{}`", self.command_line);
        let _ = writeln!(
            out,
            "- machine: {} cores, {}, {}, {} build",
            machine.cores,
            machine.cpu_model.as_deref().unwrap_or("unknown CPU"),
            machine.rustc.as_deref().unwrap_or("rustc unknown"),
            if machine.optimized {
                "optimized"
            } else {
                "debug"
            }
        );
        let _ = writeln!(
            out,
            "- schedule: per cell, a {:?} warm-up then {} interleaved rounds of {:?} per contender \
             (the first contender rotates), all against one embedded blackpipe standalone on \
             127.0.0.1 sharing the client's tokio runtime; drivers use default options (note \
             the default maxPoolSize: 10 for the official driver, 100 for steadfast)\n",
            self.schedule.warmup, self.schedule.rounds, self.schedule.round
        );
    }

    fn write_throughput(&self, out: &mut String) {
        let _ = writeln!(out, "## Throughput and latency (ops/s, p50 µs, p99 µs)\n");
        let _ = writeln!(
            out,
            "| workload | tasks | steadfast ops/s | p50 | p99 | official ops/s | p50 | p99 | steadfast / official |"
        );
        let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        let mut notes: Vec<(ContenderKind, String, Vec<String>)> = Vec::new();
        for cell in &self.throughput {
            let steadfast = cell.summary(ContenderKind::Steadfast);
            let official = cell.summary(ContenderKind::Official);
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                cell.workload.label(),
                cell.concurrency,
                figures(steadfast),
                figures(official),
                times(ratio(
                    steadfast.map(|s| s.ops_per_sec),
                    official.map(|s| s.ops_per_sec)
                ))
            );
            for result in &cell.results {
                if let Some(note) = &result.note {
                    let where_ = format!("{}×{}", cell.workload.label(), cell.concurrency);
                    match notes
                        .iter_mut()
                        .find(|(who, what, _)| *who == result.contender && what == note)
                    {
                        Some((_, _, cells)) => cells.push(where_),
                        None => notes.push((result.contender, note.clone(), vec![where_])),
                    }
                }
            }
        }
        for (who, what, cells) in notes {
            let _ = writeln!(
                out,
                "- {} ({}): {}",
                who.label(),
                cells.join(", "),
                cell_text(&what)
            );
        }
        let _ = writeln!(out);
    }

    fn write_raw(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "## Raw floor (pre-encoded OP_MSG, one socket per task)\n\n\
             Overhead is the driver's p50 over the raw p50 in the same cell.\n"
        );
        let _ = writeln!(
            out,
            "| workload | sockets | raw ops/s | p50 | p99 | steadfast overhead | official overhead |"
        );
        let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|");
        for cell in &self.throughput {
            let Some(raw) = cell.summary(ContenderKind::Raw) else {
                continue;
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                cell.workload.label(),
                cell.concurrency,
                figures(Some(raw)),
                times(raw_overhead(cell, ContenderKind::Steadfast)),
                times(raw_overhead(cell, ContenderKind::Official))
            );
        }
        let _ = writeln!(out);
    }

    fn write_failover(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "## Failover (replica set of 3, one writer loop of insert_one or of transfers through \
             the convenient transaction API, election delay {:?})\n\n\
             Recovery runs from the new primary's election (or the fail point being armed) to \
             the end of the first successful write (committed transfer); errors are those the \
             writer saw from the fault until then.\n",
            self.failover_schedule.election_delay
        );
        let _ = writeln!(
            out,
            "| driver | writer | fault | recovery ms | errors surfaced | first error |"
        );
        let _ = writeln!(out, "|---|---|---|---:|---:|---|");
        for run in &self.failover {
            for fault in &run.faults {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {} |",
                    run.driver.label(),
                    run.operation.label(),
                    fault.fault,
                    fault
                        .recovery_ms
                        .map_or_else(|| "none".to_owned(), |ms| format!("{ms:.1}")),
                    fault.errors,
                    fault
                        .first_error
                        .as_deref()
                        .map_or_else(String::new, cell_text)
                );
            }
        }
        let _ = writeln!(out);
        for run in &self.failover {
            let _ = writeln!(
                out,
                "- {}, {}: {} writes acknowledged, {} documents stored{}, {} errors in all{}",
                run.driver.label(),
                run.operation.label(),
                run.writes_acknowledged,
                run.documents_stored,
                run.balance_total
                    .map_or_else(String::new, |total| format!(", balances sum to {total}")),
                run.errors_total,
                run.note
                    .as_deref()
                    .map_or_else(String::new, |note| format!("; {note}"))
            );
        }
        let _ = writeln!(out);
    }

    fn write_memory(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "## Memory (RSS from /proc/self/statm, each driver in a fresh child process)\n\n\
             Both clients get `maxPoolSize=64`. Idle client: creating one client and \
             completing one ping. Per connection: growth while 64 tasks share the client (the server holding each ping {} ms, so that the \
             tasks overlap) until it holds 64 pooled connections (or 10 s pass), over the sockets it \
             opened meanwhile; the growth includes whatever else the driver allocated for that \
             load, among it each task's operation in flight. \"Of which anonymous\": the part \
             that is heap and stacks (`Anonymous:` in /proc/self/smaps_rollup); the rest is pages \
             of the executable touched for the first time.\n",
            super::memory::PING_BLOCK_MS
        );
        let _ = writeln!(
            out,
            "| driver | idle client KiB | of which anonymous | sockets idle | sockets after 64 tasks | tasks ran ms | growth KiB | of which anonymous | per connection KiB |"
        );
        let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        for memory in &self.memory {
            if memory.note.is_some() {
                let _ = writeln!(
                    out,
                    "| {} | n/a | n/a | n/a | n/a | n/a | n/a | n/a | n/a (see below) |",
                    memory.driver
                );
                continue;
            }
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {:.0} | {} | {} | {} |",
                memory.driver,
                kib(memory.idle_client_bytes),
                kib(memory.idle_client_anon_bytes),
                memory.idle_sockets,
                memory.busy_sockets,
                memory.busy_ms,
                kib(memory.busy_growth_bytes),
                kib(memory.busy_growth_anon_bytes),
                memory
                    .per_connection_bytes
                    .map_or_else(|| "n/a (no socket opened)".to_owned(), kib)
            );
        }
        for memory in &self.memory {
            if let Some(note) = &memory.note {
                let _ = writeln!(out, "- {}: {}", memory.driver, cell_text(note));
            }
        }
        let _ = writeln!(out);
    }

    fn write_timeout(&self, out: &mut String) {
        let Some(schedule) = &self.timeout_schedule else {
            return;
        };
        let _ = writeln!(
            out,
            "## Timeout cell ({} find_one operations over {} tasks, client timeoutMS {:?}, each \
             find taking the standalone {:?}: blackpipe's slowCommands)\n\n\
             On time means returned within {:?} (timeoutMS + max(10 ms, 2%)); connections are \
             the pool's ConnectionCreated/ConnectionClosed events during the measured operations, \
             after a warm-up of the same operations.\n",
            schedule.operations,
            schedule.tasks,
            schedule.timeout,
            schedule.command_time,
            schedule.on_time_limit()
        );
        let _ = writeln!(
            out,
            "| driver | operations | on time | p50 ms | p99 ms | max ms | timeout errors | new connections | closed |"
        );
        let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        for run in &self.timeout {
            if run.note.is_some() {
                let _ = writeln!(
                    out,
                    "| {} | n/a | n/a | n/a | n/a | n/a | n/a | n/a | n/a |",
                    run.driver
                );
                continue;
            }
            let _ = writeln!(
                out,
                "| {} | {} | {} | {:.1} | {:.1} | {:.1} | {} | {} ({}) | {} |",
                run.driver,
                run.operations,
                percent(run.on_time_share()),
                run.p50_ms,
                run.p99_ms,
                run.max_ms,
                run.timed_out,
                run.connections_created,
                percent(run.new_connection_share()),
                run.connections_closed
            );
        }
        for run in &self.timeout {
            if let Some(note) = &run.note {
                let _ = writeln!(out, "- {}: {}", run.driver, cell_text(note));
            }
            if let Some(other) = &run.first_other {
                let _ = writeln!(
                    out,
                    "- {}: {} operations ended otherwise than with a timeout error; the first: {}",
                    run.driver,
                    run.other,
                    cell_text(other)
                );
            }
        }
        let _ = writeln!(out);
    }

    fn write_targets(&self, out: &mut String) {
        let _ = writeln!(out, "## Targets (measured, not asserted)\n");
        let _ = writeln!(out, "| target | measured | met |");
        let _ = writeln!(out, "|---|---|---|");
        for target in &self.targets {
            let met = match target.met {
                Some(true) => "yes",
                Some(false) => "no",
                None => "n/a",
            };
            let _ = writeln!(
                out,
                "| {} | {} | {met} |",
                target.target,
                cell_text(&target.measured)
            );
        }
    }
}

/// Text safe inside a Markdown table cell.
fn cell_text(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}
