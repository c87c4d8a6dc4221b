//! The report's sections as plain text: the rows every writer (Markdown, HTML) shows.

use super::report::{Report, percent, raw_overhead};
use super::stats::{Summary, ratio};
use super::tables::{TextSection, TextTable};
use super::workload::ContenderKind;

/// ops/s, p50 and p99 of one contender, or `n/a` three times.
fn figures(summary: Option<&Summary>) -> [String; 3] {
    summary.map_or_else(
        || ["n/a".to_owned(), "n/a".to_owned(), "n/a".to_owned()],
        |s| {
            [
                format!("{:.0}", s.ops_per_sec),
                format!("{:.1}", s.p50_us),
                format!("{:.1}", s.p99_us),
            ]
        },
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

const THROUGHPUT_HEADER: &[&str] = &[
    "workload",
    "tasks",
    "steadfast ops/s",
    "p50",
    "p99",
    "official ops/s",
    "p50",
    "p99",
    "steadfast / official",
];
const RAW_HEADER: &[&str] = &[
    "workload",
    "sockets",
    "raw ops/s",
    "p50",
    "p99",
    "steadfast overhead",
    "official overhead",
];
const FAILOVER_HEADER: &[&str] = &[
    "driver",
    "writer",
    "fault",
    "recovery ms",
    "errors surfaced",
    "first error",
];
const MEMORY_HEADER: &[&str] = &[
    "driver",
    "idle client KiB",
    "of which anonymous",
    "sockets idle",
    "sockets after 64 tasks",
    "tasks ran ms",
    "growth KiB",
    "of which anonymous",
    "per connection KiB",
];
const TIMEOUT_HEADER: &[&str] = &[
    "driver",
    "operations",
    "on time",
    "p50 ms",
    "p99 ms",
    "max ms",
    "timeout errors",
    "new connections",
    "closed",
];

impl Report {
    /// Throughput and latency per cell, both drivers, and the notes of contenders that did not
    /// measure.
    pub(crate) fn throughput_section(&self) -> TextSection {
        let rows = self
            .throughput
            .iter()
            .map(|cell| {
                let steadfast = cell.summary(ContenderKind::Steadfast);
                let official = cell.summary(ContenderKind::Official);
                let mut row = vec![
                    cell.workload.label().to_owned(),
                    cell.concurrency.to_string(),
                ];
                row.extend(figures(steadfast));
                row.extend(figures(official));
                row.push(times(ratio(
                    steadfast.map(|s| s.ops_per_sec),
                    official.map(|s| s.ops_per_sec),
                )));
                row
            })
            .collect();
        TextSection {
            heading: "Throughput and latency (ops/s, p50 µs, p99 µs)".into(),
            tables: vec![TextTable {
                header: THROUGHPUT_HEADER,
                align: "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
                rows,
            }],
            notes: self.throughput_notes(),
            ..TextSection::default()
        }
    }

    /// One note per (contender, note), listing the cells it applies to.
    fn throughput_notes(&self) -> Vec<String> {
        let mut notes: Vec<(ContenderKind, &str, Vec<String>)> = Vec::new();
        for cell in &self.throughput {
            for result in &cell.results {
                let Some(note) = &result.note else {
                    continue;
                };
                let where_ = format!("{}×{}", cell.workload.label(), cell.concurrency);
                match notes
                    .iter_mut()
                    .find(|(who, what, _)| *who == result.contender && what == note)
                {
                    Some((_, _, cells)) => cells.push(where_),
                    None => notes.push((result.contender, note, vec![where_])),
                }
            }
        }
        notes
            .into_iter()
            .map(|(who, what, cells)| format!("{} ({}): {what}", who.label(), cells.join(", ")))
            .collect()
    }

    /// The raw floor of the cells that have one, and each driver's overhead over it.
    pub(crate) fn raw_section(&self) -> TextSection {
        let rows = self
            .throughput
            .iter()
            .filter_map(|cell| {
                let raw = cell.summary(ContenderKind::Raw)?;
                let mut row = vec![
                    cell.workload.label().to_owned(),
                    cell.concurrency.to_string(),
                ];
                row.extend(figures(Some(raw)));
                row.push(times(raw_overhead(cell, ContenderKind::Steadfast)));
                row.push(times(raw_overhead(cell, ContenderKind::Official)));
                Some(row)
            })
            .collect();
        TextSection {
            heading: "Raw floor (pre-encoded OP_MSG, one socket per task)".into(),
            intro: vec!["Overhead is the driver's p50 over the raw p50 in the same cell.".into()],
            tables: vec![TextTable {
                header: RAW_HEADER,
                align: "|---|---:|---:|---:|---:|---:|---:|",
                rows,
            }],
            ..TextSection::default()
        }
    }

    /// Recovery per fault and driver, and each writer's totals.
    pub(crate) fn failover_section(&self) -> TextSection {
        let rows = self
            .failover
            .iter()
            .flat_map(|run| {
                run.faults.iter().map(move |fault| {
                    vec![
                        run.driver.label().to_owned(),
                        run.operation.label().to_owned(),
                        fault.fault.to_owned(),
                        fault
                            .recovery_ms
                            .map_or_else(|| "none".to_owned(), |ms| format!("{ms:.1}")),
                        fault.errors.to_string(),
                        fault.first_error.clone().unwrap_or_default(),
                    ]
                })
            })
            .collect();
        let notes = self
            .failover
            .iter()
            .map(|run| {
                format!(
                    "{}, {}: {} writes acknowledged, {} documents stored{}, {} errors in all{}",
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
                )
            })
            .collect();
        TextSection {
            heading: format!(
                "Failover (replica set of 3, one writer loop of insert_one or of transfers through \
                 the convenient transaction API, election delay {:?})",
                self.failover_schedule.election_delay
            ),
            intro: vec![
                "Recovery runs from the new primary's election (or the fail point being armed) to \
                 the end of the first successful write (committed transfer); errors are those the \
                 writer saw from the fault until then."
                    .into(),
            ],
            tables: vec![TextTable {
                header: FAILOVER_HEADER,
                align: "|---|---|---|---:|---:|---|",
                rows,
            }],
            notes,
            ..TextSection::default()
        }
    }

    /// Each driver's memory, measured in a child process.
    pub(crate) fn memory_section(&self) -> TextSection {
        let rows = self
            .memory
            .iter()
            .map(|memory| {
                if memory.note.is_some() {
                    let mut row = vec![memory.driver.clone()];
                    row.extend(std::iter::repeat_n("n/a".to_owned(), 7));
                    row.push("n/a (see below)".to_owned());
                    return row;
                }
                vec![
                    memory.driver.clone(),
                    kib(memory.idle_client_bytes),
                    kib(memory.idle_client_anon_bytes),
                    memory.idle_sockets.to_string(),
                    memory.busy_sockets.to_string(),
                    format!("{:.0}", memory.busy_ms),
                    kib(memory.busy_growth_bytes),
                    kib(memory.busy_growth_anon_bytes),
                    memory
                        .per_connection_bytes
                        .map_or_else(|| "n/a (no socket opened)".to_owned(), kib),
                ]
            })
            .collect();
        let notes = self
            .memory
            .iter()
            .filter_map(|memory| {
                let note = memory.note.as_ref()?;
                Some(format!("{}: {note}", memory.driver))
            })
            .collect();
        TextSection {
            heading: "Memory (RSS from /proc/self/statm, each driver in a fresh child process)"
                .into(),
            intro: vec![format!(
                "Both clients get `maxPoolSize=64`. Idle client: creating one client and \
                 completing one ping. Per connection: growth while 64 tasks share the client (the \
                 server holding each ping {} ms, so that the tasks overlap) until it holds 64 \
                 pooled connections (or 10 s pass), over the sockets it opened meanwhile; the \
                 growth includes whatever else the driver allocated for that load, among it each \
                 task's operation in flight. \"Of which anonymous\": the part that is heap and \
                 stacks (`Anonymous:` in /proc/self/smaps_rollup); the rest is pages of the \
                 executable touched for the first time.",
                super::memory::PING_BLOCK_MS
            )],
            tables: vec![TextTable {
                header: MEMORY_HEADER,
                align: "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
                rows,
            }],
            notes,
            ..TextSection::default()
        }
    }

    /// The timeout cell, when it ran.
    pub(crate) fn timeout_section(&self) -> Option<TextSection> {
        let schedule = self.timeout_schedule.as_ref()?;
        let rows = self
            .timeout
            .iter()
            .map(|run| {
                if run.note.is_some() {
                    let mut row = vec![run.driver.to_owned()];
                    row.extend(std::iter::repeat_n("n/a".to_owned(), 8));
                    return row;
                }
                vec![
                    run.driver.to_owned(),
                    run.operations.to_string(),
                    percent(run.on_time_share()),
                    format!("{:.1}", run.p50_ms),
                    format!("{:.1}", run.p99_ms),
                    format!("{:.1}", run.max_ms),
                    run.timed_out.to_string(),
                    format!(
                        "{} ({})",
                        run.connections_created,
                        percent(run.new_connection_share())
                    ),
                    run.connections_closed.to_string(),
                ]
            })
            .collect();
        Some(TextSection {
            heading: format!(
                "Timeout cell ({} find_one operations over {} tasks, client timeoutMS {:?}, each \
                 find taking the standalone {:?}: blackpipe's slowCommands)",
                schedule.operations, schedule.tasks, schedule.timeout, schedule.command_time
            ),
            intro: vec![format!(
                "On time means returned within {:?} (timeoutMS + max(10 ms, 2%)); connections \
                 are the pool's ConnectionCreated/ConnectionClosed events during the measured \
                 operations, after a warm-up of the same operations.",
                schedule.on_time_limit()
            )],
            tables: vec![TextTable {
                header: TIMEOUT_HEADER,
                align: "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
                rows,
            }],
            notes: self.timeout_notes(),
            ..TextSection::default()
        })
    }

    fn timeout_notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        for run in &self.timeout {
            if let Some(note) = &run.note {
                notes.push(format!("{}: {note}", run.driver));
            }
            if let Some(other) = &run.first_other {
                notes.push(format!(
                    "{}: {} operations ended otherwise than with a timeout error; the first: {other}",
                    run.driver, run.other
                ));
            }
        }
        notes
    }

    /// The targets: what each asks, what the run measured, whether it is met.
    pub(crate) fn targets_section(&self) -> TextSection {
        let rows = self
            .targets
            .iter()
            .map(|target| {
                let met = match target.met {
                    Some(true) => "yes",
                    Some(false) => "no",
                    None => "n/a",
                };
                vec![
                    target.target.clone(),
                    target.measured.clone(),
                    met.to_owned(),
                ]
            })
            .collect();
        TextSection {
            heading: "Targets (measured, not asserted)".into(),
            tables: vec![TextTable {
                header: &["target", "measured", "met"],
                align: "|---|---|---|",
                rows,
            }],
            ..TextSection::default()
        }
    }
}
