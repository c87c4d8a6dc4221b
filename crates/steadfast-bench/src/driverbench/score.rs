//! Scoring as the specification defines it: nearest-rank percentiles of the iteration times,
//! MB/s (10^6 bytes) from the median, and the composites as plain averages.

use std::time::Duration;

use serde::Serialize;

use super::super::workload::ContenderKind;
use super::cpu::Sample;
use super::task::{Direction, Group, Task};

/// The percentiles the specification records.
pub(crate) const PERCENTILES: [u32; 8] = [10, 25, 50, 75, 90, 95, 98, 99];

/// The nearest-rank percentile `p` (1..=100) of `sorted`: index `int(N * p / 100) - 1`,
/// clamped to the first element when that is negative.
pub(crate) fn nearest_rank(sorted: &[Duration], p: u32) -> Option<Duration> {
    let n = sorted.len();
    let rank = n.checked_mul(usize::try_from(p).ok()?)? / 100;
    sorted.get(rank.saturating_sub(1)).copied()
}

/// One driver's outcome on one task.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub(crate) enum Outcome {
    /// Measured.
    Measured(Measured),
    /// The driver has no API for the task.
    NotAvailable {
        /// Why.
        reason: String,
    },
    /// The task failed; no figure.
    Failed {
        /// The error.
        error: String,
    },
}

/// The figures of a measured task.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Measured {
    /// Timed iterations.
    pub(crate) iterations: usize,
    /// Cumulative timed seconds.
    pub(crate) seconds: f64,
    /// MB/s from the median iteration time.
    pub(crate) mb_per_s: f64,
    /// (percentile, milliseconds) for every percentile of [`PERCENTILES`].
    pub(crate) percentiles_ms: Vec<(u32, f64)>,
    /// Median client-process CPU milliseconds per iteration.
    pub(crate) cpu_ms_median: f64,
    /// Client CPU microseconds per operation over all iterations (single-document tasks).
    pub(crate) cpu_us_per_op: Option<f64>,
}

impl Measured {
    /// Scores `samples` of a task whose iteration processes `bytes` in `units` operations.
    pub(crate) fn score(samples: &[Sample], bytes: u64, units: Option<u64>) -> Option<Self> {
        let mut walls: Vec<Duration> = samples.iter().map(|s| s.wall).collect();
        walls.sort();
        let median = nearest_rank(&walls, 50).filter(|m| !m.is_zero())?;
        let mut cpus: Vec<Duration> = samples.iter().map(|s| s.cpu).collect();
        cpus.sort();
        let total_cpu: Duration = cpus.iter().sum();
        let ms = |d: Duration| d.as_secs_f64() * 1_000.0;
        Some(Self {
            iterations: samples.len(),
            seconds: walls.iter().sum::<Duration>().as_secs_f64(),
            mb_per_s: bytes as f64 / 1e6 / median.as_secs_f64(),
            percentiles_ms: PERCENTILES
                .iter()
                .filter_map(|&p| nearest_rank(&walls, p).map(|d| (p, ms(d))))
                .collect(),
            cpu_ms_median: nearest_rank(&cpus, 50).map_or(0.0, ms),
            cpu_us_per_op: units
                .map(|units| total_cpu.as_secs_f64() * 1e6 / (units as f64 * samples.len() as f64)),
        })
    }
}

/// Both drivers on one task.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TaskScore {
    /// The task.
    pub(crate) task: Task,
    /// Bytes one iteration counts.
    pub(crate) bytes: u64,
    /// steadfast's outcome.
    pub(crate) steadfast: Outcome,
    /// The official crate's outcome.
    pub(crate) official: Outcome,
}

impl TaskScore {
    /// The MB/s of `driver`, when measured.
    pub(crate) fn mb_per_s(&self, driver: ContenderKind) -> Option<f64> {
        match self.outcome(driver) {
            Outcome::Measured(measured) => Some(measured.mb_per_s),
            _ => None,
        }
    }

    /// The outcome of `driver`.
    pub(crate) fn outcome(&self, driver: ContenderKind) -> &Outcome {
        match driver {
            ContenderKind::Official => &self.official,
            _ => &self.steadfast,
        }
    }

    /// steadfast's MB/s over the official crate's, when both were measured.
    pub(crate) fn ratio(&self) -> Option<f64> {
        super::super::stats::ratio(
            self.mb_per_s(ContenderKind::Steadfast),
            self.mb_per_s(ContenderKind::Official),
        )
    }
}

/// A composite of the specification.
#[allow(
    clippy::enum_variant_names,
    reason = "the specification's names, suffix included"
)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) enum Composite {
    /// Single-document tasks but run command.
    SingleBench,
    /// Multi-document tasks.
    MultiBench,
    /// Parallel tasks.
    ParallelBench,
    /// The read tasks.
    ReadBench,
    /// The write tasks.
    WriteBench,
    /// The average of ReadBench and WriteBench.
    DriverBench,
}

impl Composite {
    /// Every composite, in report order.
    pub(crate) const ALL: [Composite; 6] = [
        Composite::SingleBench,
        Composite::MultiBench,
        Composite::ParallelBench,
        Composite::ReadBench,
        Composite::WriteBench,
        Composite::DriverBench,
    ];

    fn counts(self, task: Task) -> bool {
        match self {
            Composite::SingleBench => task.group() == Group::Single && task != Task::RunCommand,
            Composite::MultiBench => task.group() == Group::Multi,
            Composite::ParallelBench => task.group() == Group::Parallel,
            Composite::ReadBench => task.direction() == Direction::Read,
            Composite::WriteBench => task.direction() == Direction::Write,
            Composite::DriverBench => false,
        }
    }
}

/// A composite's value for both drivers.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CompositeScore {
    /// The composite.
    pub(crate) composite: Composite,
    /// Over the tasks both drivers measured: steadfast's value.
    pub(crate) steadfast: Option<f64>,
    /// Over the same tasks: the official crate's value.
    pub(crate) official: Option<f64>,
    /// How many tasks both measured (the composite's members for this run).
    pub(crate) tasks: usize,
    /// steadfast's value over every member task it measured (including those the official
    /// crate could not run).
    pub(crate) steadfast_all_tasks: Option<f64>,
}

impl CompositeScore {
    /// steadfast over the official crate.
    pub(crate) fn ratio(&self) -> Option<f64> {
        super::super::stats::ratio(self.steadfast, self.official)
    }
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The composites of `scores`: each over the tasks both drivers measured, so that the ratio
/// compares like with like.
pub(crate) fn composites(scores: &[TaskScore]) -> Vec<CompositeScore> {
    let mut out: Vec<CompositeScore> = Vec::new();
    for composite in Composite::ALL {
        if composite == Composite::DriverBench {
            let find = |c: Composite| out.iter().find(|s| s.composite == c).cloned();
            let (read, write) = (find(Composite::ReadBench), find(Composite::WriteBench));
            let both = |f: fn(&CompositeScore) -> Option<f64>| {
                let values: Option<Vec<f64>> = [read.as_ref(), write.as_ref()]
                    .iter()
                    .map(|c| c.and_then(f))
                    .collect();
                values.and_then(|v| mean(&v))
            };
            out.push(CompositeScore {
                composite,
                steadfast: both(|c| c.steadfast),
                official: both(|c| c.official),
                tasks: read.as_ref().map_or(0, |c| c.tasks) + write.as_ref().map_or(0, |c| c.tasks),
                steadfast_all_tasks: both(|c| c.steadfast_all_tasks),
            });
            continue;
        }
        let members: Vec<&TaskScore> = scores.iter().filter(|s| composite.counts(s.task)).collect();
        let common: Vec<&&TaskScore> = members.iter().filter(|s| s.ratio().is_some()).collect();
        let values = |driver: ContenderKind| {
            mean(
                &common
                    .iter()
                    .filter_map(|s| s.mb_per_s(driver))
                    .collect::<Vec<_>>(),
            )
        };
        out.push(CompositeScore {
            composite,
            steadfast: values(ContenderKind::Steadfast),
            official: values(ContenderKind::Official),
            tasks: common.len(),
            steadfast_all_tasks: mean(
                &members
                    .iter()
                    .filter_map(|s| s.mb_per_s(ContenderKind::Steadfast))
                    .collect::<Vec<_>>(),
            ),
        });
    }
    out
}
