//! DriverBench and the CPU cells as Markdown, and where they stand against the issue's
//! targets (measured and reported, never asserted).

use super::super::report::TargetCheck;
use super::super::tables::{TextSection, TextTable};
use super::super::workload::ContenderKind;
use super::DriverBenchReport;
use super::cpu::{CpuCell, CpuResult};
use super::score::{Composite, CompositeScore, Outcome, TaskScore};

const MIN_COMPOSITE_RATIO: f64 = 1.5;
/// The per-task target: no DriverBench task below this ratio (steadfast over official).
pub(crate) const MIN_TASK_RATIO: f64 = 1.1;
const MAX_CPU_RATIO: f64 = 0.5;

fn cell(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Measured(m) => format!("{:.2}", m.mb_per_s),
        Outcome::NotAvailable { .. } => "not available".to_owned(),
        Outcome::Failed { .. } => "failed".to_owned(),
    }
}

/// An error's first line, at most 200 characters (the JSON keeps it whole).
fn first_line(error: &str) -> String {
    let line = error.lines().next().unwrap_or_default();
    match line.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

fn optional(value: Option<f64>, digits: usize, suffix: &str) -> String {
    value.map_or_else(|| "–".to_owned(), |v| format!("{v:.digits$}{suffix}"))
}

fn cpu_cell(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Measured(m) => format!("{:.1}", m.cpu_ms_median),
        _ => "–".to_owned(),
    }
}

const TASK_HEADER: &[&str] = &[
    "task",
    "MB",
    "steadfast MB/s",
    "official MB/s",
    "steadfast/official",
    "iterations (s/o)",
    "p10–p90 ms steadfast",
    "p10–p90 ms official",
    "client CPU ms/iteration (s/o)",
];
const COMPOSITE_HEADER: &[&str] = &[
    "composite",
    "tasks both measured",
    "steadfast MB/s",
    "official MB/s",
    "steadfast/official",
    "steadfast over all its tasks",
];
const CPU_HEADER: &[&str] = &[
    "operation",
    "workers",
    "maxPoolSize",
    "steadfast ops/s",
    "official ops/s",
    "steadfast CPU µs/op",
    "official CPU µs/op",
    "CPU steadfast/official",
];

fn iterations(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Measured(m) => m.iterations.to_string(),
        _ => "–".to_owned(),
    }
}

fn spread(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Measured(m) => {
            let at = |p: u32| m.percentiles_ms.iter().find(|(q, _)| *q == p).map(|x| x.1);
            format!("{}–{}", optional(at(10), 1, ""), optional(at(90), 1, ""))
        }
        _ => "–".to_owned(),
    }
}

fn task_row(score: &TaskScore) -> Vec<String> {
    vec![
        score.task.label().to_owned(),
        format!("{:.3}", score.bytes as f64 / 1e6),
        cell(&score.steadfast),
        cell(&score.official),
        optional(score.ratio(), 2, "×"),
        format!(
            "{}/{}",
            iterations(&score.steadfast),
            iterations(&score.official)
        ),
        spread(&score.steadfast),
        spread(&score.official),
        format!(
            "{} / {}",
            cpu_cell(&score.steadfast),
            cpu_cell(&score.official)
        ),
    ]
}

/// Why a driver has no figure for a task, for each such (task, driver).
fn task_notes(tasks: &[TaskScore]) -> Vec<String> {
    tasks
        .iter()
        .flat_map(|score| {
            [
                ("steadfast", &score.steadfast),
                ("official", &score.official),
            ]
            .into_iter()
            .filter_map(move |(who, outcome)| match outcome {
                Outcome::NotAvailable { reason } => Some(format!(
                    "{} ({who}): not available: {reason}",
                    score.task.label()
                )),
                Outcome::Failed { error } => Some(format!(
                    "{} ({who}): failed: {}",
                    score.task.label(),
                    first_line(error)
                )),
                Outcome::Measured(_) => None,
            })
        })
        .collect()
}

impl DriverBenchReport {
    /// The report sections (shared by the Markdown and HTML writers): DriverBench, then the
    /// CPU cells when they ran.
    pub(crate) fn sections(&self) -> Vec<TextSection> {
        let mut sections = vec![self.tasks_section()];
        if !self.cpu.is_empty() {
            sections.push(cpu_section(&self.cpu));
        }
        sections
    }

    fn tasks_section(&self) -> TextSection {
        let mut tables = Vec::new();
        if !self.tasks.is_empty() {
            tables.push(TextTable {
                header: TASK_HEADER,
                align: "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
                rows: self.tasks.iter().map(task_row).collect(),
            });
            tables.push(TextTable {
                header: COMPOSITE_HEADER,
                align: "|---|---:|---:|---:|---:|---:|",
                rows: self.composites.iter().map(composite_row).collect(),
            });
        }
        TextSection {
            heading: "DriverBench (MB/s from the median iteration)".into(),
            facts: vec![
                format!(
                    "server: blackpipe standalone, {}; {}",
                    self.server.mode, self.server.pinning
                ),
                format!(
                    "scale: {}; iterations per task and driver: one untimed warm-up iteration \
                     each, then at least {} s, then until {} iterations or {} s, interleaved \
                     iteration by iteration (first driver alternating)",
                    if self.scale.divisor == 1 {
                        "the specification's sizes".to_owned()
                    } else {
                        format!("1/{} of the specification's sizes", self.scale.divisor)
                    },
                    self.policy.min_seconds,
                    self.policy.max_iterations,
                    self.policy.max_seconds,
                ),
                self.bsonbench.to_owned(),
            ],
            tables,
            notes: task_notes(&self.tasks),
            ..TextSection::default()
        }
    }

    /// The DriverBench and CPU targets against this run.
    pub(crate) fn targets(&self) -> Vec<TargetCheck> {
        let mut targets = Vec::new();
        if let Some(c) = self
            .composites
            .iter()
            .find(|c| c.composite == Composite::DriverBench)
        {
            let r = c.ratio();
            targets.push(TargetCheck {
                target: format!("DriverBench composite: steadfast >= {MIN_COMPOSITE_RATIO}x the official crate's"),
                measured: optional(r, 2, "x"),
                met: r.map(|r| r >= MIN_COMPOSITE_RATIO),
            });
        }
        if !self.tasks.is_empty() {
            let ratios: Vec<(&TaskScore, f64)> = self
                .tasks
                .iter()
                .filter_map(|s| s.ratio().map(|r| (s, r)))
                .collect();
            let worst = ratios.iter().min_by(|a, b| a.1.total_cmp(&b.1));
            targets.push(TargetCheck {
                target: format!("no DriverBench task below {MIN_TASK_RATIO}x"),
                measured: worst.map_or_else(
                    || "no task measured for both".to_owned(),
                    |(s, r)| {
                        format!(
                            "lowest {r:.2}x ({}) over {} tasks",
                            s.task.label(),
                            ratios.len()
                        )
                    },
                ),
                met: worst.map(|(_, r)| *r >= MIN_TASK_RATIO),
            });
        }
        for cell in self.cpu.iter().filter(|c| c.workers == 1) {
            let r = cpu_ratio(cell);
            targets.push(TargetCheck {
                target: format!(
                    "{}: steadfast client CPU per op <= {MAX_CPU_RATIO}x the official crate's",
                    cell.label()
                ),
                measured: optional(r, 2, "x"),
                met: r.map(|r| r <= MAX_CPU_RATIO),
            });
        }
        targets
    }
}

fn cpu_ratio(cell: &CpuCell) -> Option<f64> {
    let cpu = |d| cell.result(d).and_then(|r: &CpuResult| r.cpu_us_per_op);
    super::super::stats::ratio(cpu(ContenderKind::Steadfast), cpu(ContenderKind::Official))
}

fn composite_row(c: &CompositeScore) -> Vec<String> {
    vec![
        format!("{:?}", c.composite),
        c.tasks.to_string(),
        optional(c.steadfast, 2, ""),
        optional(c.official, 2, ""),
        optional(c.ratio(), 2, "×"),
        optional(c.steadfast_all_tasks, 2, ""),
    ]
}

fn cpu_row(cell: &CpuCell) -> Vec<String> {
    let figure =
        |d: ContenderKind, f: fn(&CpuResult) -> Option<f64>, digits: usize| match cell.result(d) {
            Some(r) if r.error.is_some() => "failed".to_owned(),
            Some(r) => optional(f(r), digits, ""),
            None => "–".to_owned(),
        };
    vec![
        cell.label().to_owned(),
        cell.workers.to_string(),
        cell.max_pool_size
            .map_or_else(|| "defaults (100 / 10)".to_owned(), |n| format!("{n} both")),
        figure(ContenderKind::Steadfast, |r| r.ops_per_sec, 0),
        figure(ContenderKind::Official, |r| r.ops_per_sec, 0),
        figure(ContenderKind::Steadfast, |r| r.cpu_us_per_op, 1),
        figure(ContenderKind::Official, |r| r.cpu_us_per_op, 1),
        optional(cpu_ratio(cell), 2, "×"),
    ]
}

fn cpu_section(cells: &[CpuCell]) -> TextSection {
    let notes = cells
        .iter()
        .flat_map(|cell| {
            cell.results.iter().filter_map(move |r| {
                let error = r.error.as_ref()?;
                Some(format!(
                    "{} x{} ({}): failed: {}",
                    cell.label(),
                    cell.workers,
                    r.driver.label(),
                    first_line(error)
                ))
            })
        })
        .collect();
    TextSection {
        heading: "Client CPU per operation (getrusage user+sys of the client process, server in \
                  another process)"
            .into(),
        tables: vec![TextTable {
            header: CPU_HEADER,
            align: "|---|---:|---|---:|---:|---:|---:|---:|",
            rows: cells.iter().map(cpu_row).collect(),
        }],
        notes,
        ..TextSection::default()
    }
}
