//! The page's charts, each drawn from the measurements or, when the run did not measure its
//! data, replaced by a one-line note saying why (never an empty chart).

use steadfast_report::charts::{Axis, Curve, Series, curves, grouped_bars, ratios};

use super::note;
use crate::driverbench::DriverBenchReport;
use crate::driverbench::render::MIN_TASK_RATIO;
use crate::overload::{OverloadReport, Policy};
use crate::stats::Summary;
use crate::throughput::CellReport;
use crate::workload::ContenderKind;

/// Throughput (with the raw floor where it ran), then p50 and p99 latency, per cell.
pub(super) fn throughput(cells: &[CellReport]) -> Vec<String> {
    if cells.is_empty() {
        return vec![note(
            "No throughput or latency chart: the throughput part did not run.",
        )];
    }
    let categories: Vec<String> = cells
        .iter()
        .map(|cell| format!("{} @ {}", cell.workload.label(), cell.concurrency))
        .collect();
    let drivers = [ContenderKind::Steadfast, ContenderKind::Official];
    let mut ops = series(cells, &drivers, |s| s.ops_per_sec);
    ops.extend(series(cells, &[ContenderKind::Raw], |s| s.ops_per_sec));
    let p50 = series(cells, &drivers, |s| s.p50_us);
    let p99 = series(cells, &drivers, |s| s.p99_us);
    vec![
        bars("Throughput per cell", "ops/s", &categories, &ops),
        bars("p50 latency per cell", "µs", &categories, &p50),
        bars("p99 latency per cell", "µs", &categories, &p99),
    ]
}

/// One series per contender in `kinds` that has at least one figure in `cells`.
fn series(
    cells: &[CellReport],
    kinds: &[ContenderKind],
    figure: fn(&Summary) -> f64,
) -> Vec<Series> {
    kinds
        .iter()
        .map(|&kind| Series {
            name: kind.label().to_owned(),
            values: cells
                .iter()
                .map(|cell| cell.summary(kind).map(figure))
                .collect(),
        })
        .filter(|series| series.values.iter().any(Option::is_some))
        .collect()
}

fn bars(title: &str, unit: &str, categories: &[String], series: &[Series]) -> String {
    if series.is_empty() {
        return note(&format!(
            "No {title} chart: no contender completed an operation in any cell."
        ));
    }
    // Cells span orders of magnitude (a bulk insert against a ping): a log axis keeps every
    // bar visible.
    grouped_bars(title, unit, categories, series, Axis::Log)
}

/// The name of a policy in the goodput chart's legend.
fn short_name(policy: Policy) -> &'static str {
    match policy {
        Policy::SteadfastDefault => "steadfast default",
        Policy::SteadfastAdaptive => "steadfast adaptive",
        Policy::Official => "official",
    }
}

/// Goodput against offered load (multiples of the capacity), one curve per policy.
pub(super) fn goodput(overload: Option<&OverloadReport>) -> String {
    let Some(overload) = overload else {
        return note("No goodput curve: the overload part did not run.");
    };
    let lines: Vec<Curve> = Policy::ALL
        .into_iter()
        .map(|policy| Curve {
            name: short_name(policy).to_owned(),
            points: overload
                .cells
                .iter()
                .filter(|cell| cell.driver == policy.label())
                .map(|cell| (cell.load, cell.goodput))
                .collect(),
        })
        .filter(|curve| !curve.points.is_empty())
        .collect();
    if lines.is_empty() {
        return note("No goodput curve: the overload part measured no cell.");
    }
    let title = format!(
        "Goodput against offered load (capacity C = {:.0} ops/s)",
        overload.schedule.capacity
    );
    curves(&title, "offered load (x C)", "goodput (ops/s)", &lines)
}

/// steadfast's MB/s over the official crate's per DriverBench task, against parity and the
/// per-task target.
pub(super) fn task_ratios(driverbench: Option<&DriverBenchReport>) -> String {
    let Some(driverbench) = driverbench else {
        return note("No DriverBench ratio chart: the driverbench part did not run.");
    };
    if driverbench.tasks.is_empty() {
        return note("No DriverBench ratio chart: no DriverBench task ran (CPU cells only).");
    }
    let items: Vec<(String, f64)> = driverbench
        .tasks
        .iter()
        .filter_map(|score| score.ratio().map(|r| (score.task.label().to_owned(), r)))
        .collect();
    if items.is_empty() {
        return note("No DriverBench ratio chart: no task was measured for both drivers.");
    }
    ratios(
        "DriverBench: steadfast MB/s over the official crate's, per task",
        &items,
        1.0,
        Some(MIN_TASK_RATIO),
    )
}
