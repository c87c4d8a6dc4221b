//! Drawing a [`RunTimeline`]: the deployment and the driver's view (one SVG), the operations
//! (a second SVG on the same time axis), the legend and the checks.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{Marker, OpPoint, Outcome, RunTimeline, State, StateChange, Verdict, spans};
use crate::html::{self, Cell, escape};
use crate::sample::{downsample, sum_per_bin};
use crate::svg::{self, Linear, Log10, px};

/// The most points the latency scatter draws (a file of about 1 MiB of points at most).
pub const MAX_SCATTER_POINTS: usize = 12_000;
/// Throughput is counted per this many milliseconds.
pub const THROUGHPUT_BIN_MS: f64 = 100.0;
/// Retries are counted per this many milliseconds.
pub const RETRY_BIN_MS: f64 = 1_000.0;

const WIDTH: f64 = 1100.0;
const LEFT: f64 = 170.0;
const RIGHT: f64 = 16.0;
const ROW: f64 = 22.0;

/// The whole page of a run.
pub fn render(timeline: &RunTimeline) -> String {
    let seconds = (timeline.duration_ms / 1000.0).max(0.001);
    let x = Linear::new((0.0, seconds), (LEFT, WIDTH - RIGHT));
    let sections = [
        html::section(
            "Deployment and the driver's view",
            &format!("{}{}", state_legend(), timeline_svg(timeline, &x, seconds)),
        ),
        html::section(
            "Operations",
            &format!(
                "{}{}",
                outcome_legend(&timeline.operations),
                operations_svg(timeline, &x, seconds)
            ),
        ),
        html::section("Invariants", &checks_table(timeline)),
    ];
    html::page(&timeline.title, &timeline.subtitle, &sections)
}

fn timeline_svg(timeline: &RunTimeline, x: &Linear, seconds: f64) -> String {
    let top = 40.0;
    let members_top = top;
    let servers_top = members_top + ROW * timeline.members.len() as f64 + 30.0;
    let bottom = servers_top + ROW * timeline.servers.len() as f64;
    let height = bottom + 34.0;
    let mut out = String::new();
    svg::open(&mut out, "timeline", WIDTH, height);
    svg::x_axis(&mut out, x, (0.0, seconds), bottom, top, "seconds");
    band_title(&mut out, members_top - 8.0, "deployment (blackpipe)");
    for (index, member) in timeline.members.iter().enumerate() {
        let y = members_top + index as f64 * ROW;
        let markers = markers_of(&timeline.rollbacks, member);
        row(
            &mut out,
            "member-row",
            member,
            y,
            x,
            &changes_of(&timeline.member_changes, member),
            &markers,
            timeline.duration_ms,
        );
    }
    band_title(&mut out, servers_top - 8.0, "driver's view (SDAM)");
    for (index, server) in timeline.servers.iter().enumerate() {
        let y = servers_top + index as f64 * ROW;
        let markers = markers_of(&timeline.pool_clears, server);
        row(
            &mut out,
            "server-row",
            server,
            y,
            x,
            &changes_of(&timeline.server_changes, server),
            &markers,
            timeline.duration_ms,
        );
    }
    for fault in &timeline.faults {
        fault_marker(&mut out, x, fault, top - 14.0, bottom);
    }
    out.push_str("</svg>");
    out
}

fn band_title(out: &mut String, y: f64, text: &str) {
    let _ = write!(
        out,
        "<text x=\"4\" y=\"{}\" font-weight=\"600\">{}</text>",
        px(y),
        escape(text)
    );
}

fn changes_of<'a>(changes: &'a [StateChange], row: &str) -> Vec<&'a StateChange> {
    changes.iter().filter(|change| change.row == row).collect()
}

fn markers_of<'a>(markers: &'a [Marker], row: &str) -> Vec<&'a Marker> {
    markers.iter().filter(|marker| marker.row == row).collect()
}

/// One row: its name, a bar per state span, and its markers (red ticks with a tooltip).
#[allow(
    clippy::too_many_arguments,
    reason = "a private drawing helper; a struct would only rename them"
)]
fn row(
    out: &mut String,
    class: &str,
    name: &str,
    y: f64,
    x: &Linear,
    changes: &[&StateChange],
    markers: &[&Marker],
    end_ms: f64,
) {
    let _ = write!(
        out,
        "<g class=\"{class}\" data-row=\"{}\"><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
        escape(name),
        px(LEFT - 6.0),
        px(y + ROW * 0.65),
        escape(name)
    );
    for (start, end, state) in spans(changes, end_ms) {
        let (x0, x1) = (x.at(start / 1000.0), x.at(end / 1000.0));
        let _ = write!(
            out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" data-tip=\"{}: {} from {:.3} s to {:.3} s\"/>",
            px(x0),
            px(y + 2.0),
            px((x1 - x0).max(0.5)),
            px(ROW - 4.0),
            state.colour(),
            escape(name),
            state.name(),
            start / 1000.0,
            end / 1000.0
        );
    }
    for marker in markers {
        let at = px(x.at(marker.at_ms / 1000.0));
        let _ = write!(
            out,
            "<path class=\"row-marker\" d=\"M{at} {} l-5 -7 h10 z\" fill=\"#c62828\" stroke=\"#fff\" data-tip=\"{:.3} s: {}\"/>",
            px(y + ROW - 2.0),
            marker.at_ms / 1000.0,
            escape(&marker.label)
        );
    }
    out.push_str("</g>");
}

fn fault_marker(out: &mut String, x: &Linear, fault: &super::FaultMark, top: f64, bottom: f64) {
    let x0 = x.at(fault.at_ms / 1000.0);
    let x1 = x.at((fault.at_ms + fault.duration_ms) / 1000.0);
    let tip = format!(
        "+{:.3} s {}: {}",
        fault.at_ms / 1000.0,
        fault.kind,
        fault.description
    );
    let _ = write!(
        out,
        "<g class=\"fault-marker\" data-kind=\"{}\" data-tip=\"{}\">",
        escape(&fault.kind),
        escape(&tip)
    );
    if x1 - x0 >= 1.0 {
        let _ = write!(
            out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#d32f2f\" fill-opacity=\"0.08\"/>",
            px(x0),
            px(top),
            px(x1 - x0),
            px(bottom - top)
        );
    }
    let _ = write!(
        out,
        "<line x1=\"{x}\" x2=\"{x}\" y1=\"{}\" y2=\"{}\" stroke=\"#d32f2f\" stroke-dasharray=\"3 2\"/><path d=\"M{x} {} l-5 -8 h10 z\" fill=\"#d32f2f\"/><text x=\"{x}\" y=\"{}\" text-anchor=\"middle\" fill=\"#b71c1c\" font-size=\"10\">{}</text></g>",
        px(top),
        px(bottom),
        px(top),
        px(top - 10.0),
        escape(&fault.kind),
        x = px(x0)
    );
}

fn state_legend() -> String {
    let mut out = String::from("<div class=\"legend\">");
    for state in [
        State::Primary,
        State::Secondary,
        State::Down,
        State::Partitioned,
        State::ShuttingDown,
        State::Other,
        State::Unknown,
    ] {
        let _ = write!(
            out,
            "<span><span class=\"swatch\" style=\"background:{}\"></span> {}</span>",
            state.colour(),
            state.name()
        );
    }
    out.push_str("<span><span class=\"swatch\" style=\"background:#d32f2f\"></span> fault</span>");
    out.push_str("<span><span class=\"swatch\" style=\"background:#c62828\"></span> rollback / pool cleared</span></div>");
    out
}

/// The outcome legend with a check box per outcome (showing and hiding its points) and the
/// exact counts.
fn outcome_legend(operations: &[OpPoint]) -> String {
    let mut counts: BTreeMap<Outcome, u64> = BTreeMap::new();
    for op in operations {
        *counts.entry(op.outcome).or_default() += 1;
    }
    let mut out = String::from("<div class=\"legend\">");
    for outcome in Outcome::ALL {
        let _ = write!(
            out,
            "<label><input type=\"checkbox\" checked data-toggle=\"{}\"><span class=\"swatch\" style=\"background:{}\"></span> {}: {}</label>",
            outcome.class(),
            outcome.colour(),
            outcome.name(),
            counts.get(&outcome).copied().unwrap_or(0)
        );
    }
    out.push_str("</div>");
    out
}

fn operations_svg(timeline: &RunTimeline, x: &Linear, seconds: f64) -> String {
    let scatter = (30.0, 260.0);
    let throughput = (300.0, 400.0);
    let retries = (440.0, 520.0);
    let height = retries.1 + 34.0;
    let mut out = String::new();
    svg::open(&mut out, "operations", WIDTH, height);
    for fault in &timeline.faults {
        let at = px(x.at(fault.at_ms / 1000.0));
        let _ = write!(
            out,
            "<line class=\"fault-line\" x1=\"{at}\" x2=\"{at}\" y1=\"{}\" y2=\"{}\" stroke=\"#d32f2f\" stroke-opacity=\"0.35\" stroke-dasharray=\"3 2\"/>",
            px(scatter.0),
            px(retries.1)
        );
    }
    latency_scatter(&mut out, &timeline.operations, x, scatter);
    let completions = timeline
        .operations
        .iter()
        .map(|op| (op.at_ms + op.latency_ms, 1));
    let per_bin = sum_per_bin(completions, THROUGHPUT_BIN_MS, timeline.duration_ms);
    let rates: Vec<f64> = per_bin
        .iter()
        .map(|n| *n as f64 * 1000.0 / THROUGHPUT_BIN_MS)
        .collect();
    bars(
        &mut out,
        x,
        throughput,
        &rates,
        THROUGHPUT_BIN_MS,
        "operations/s (per 100 ms)",
        "#43a047",
    );
    let retried = timeline
        .operations
        .iter()
        .map(|op| (op.at_ms, u64::from(op.retries)));
    let per_second: Vec<f64> = sum_per_bin(retried, RETRY_BIN_MS, timeline.duration_ms)
        .into_iter()
        .map(|n| n as f64 * 1000.0 / RETRY_BIN_MS)
        .collect();
    bars(
        &mut out,
        x,
        retries,
        &per_second,
        RETRY_BIN_MS,
        "retries/s",
        "#1e88e5",
    );
    svg::x_axis(&mut out, x, (0.0, seconds), retries.1, scatter.0, "seconds");
    out.push_str("</svg>");
    out
}

fn latency_scatter(
    out: &mut String,
    operations: &[OpPoint],
    x: &Linear,
    (top, bottom): (f64, f64),
) {
    let (low, high) = latency_decades(operations);
    let y = Log10::new((low, high), (bottom, top));
    for decade in svg::decade_ticks(low, high) {
        let label = format!("{} ms", svg::label(decade));
        svg::grid_line(out, y.at(decade), (LEFT, WIDTH - RIGHT), &label);
    }
    caption(out, (top + bottom) / 2.0, "latency (log)");
    let drawn = downsample(operations, MAX_SCATTER_POINTS);
    if drawn.len() < operations.len() {
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"note\">{} of {} operations drawn (every failure and retry kept first, then each interval's slowest and last)</text>",
            px(WIDTH - RIGHT),
            px(top - 8.0),
            drawn.len(),
            operations.len()
        );
    }
    for op in &drawn {
        let _ = write!(
            out,
            "<circle class=\"{}\" cx=\"{}\" cy=\"{}\" r=\"2.2\" fill=\"{}\" data-tip=\"{} at {:.3} s: {:.2} ms, {}{}\"/>",
            op.outcome.class(),
            px(x.at(op.at_ms / 1000.0)),
            px(y.at(op.latency_ms)),
            op.outcome.colour(),
            op.kind,
            op.at_ms / 1000.0,
            op.latency_ms,
            op.outcome.name(),
            retries_text(op.retries)
        );
    }
}

/// The latency axis: whole decades (in milliseconds) from the fastest operation's to the
/// slowest's, at least one, never below a microsecond.
pub(crate) fn latency_decades(operations: &[OpPoint]) -> (f64, f64) {
    let positive = operations
        .iter()
        .map(|op| op.latency_ms)
        .filter(|ms| *ms > 0.0);
    let fastest = positive.clone().fold(f64::INFINITY, f64::min);
    let slowest = positive.fold(0.0, f64::max);
    if !fastest.is_finite() {
        return (0.1, 10.0);
    }
    crate::charts::decades(fastest.max(0.001), slowest)
}

fn retries_text(retries: u32) -> String {
    match retries {
        0 => String::new(),
        1 => ", 1 retry".to_owned(),
        n => format!(", {n} retries"),
    }
}

fn caption(out: &mut String, middle: f64, text: &str) {
    let _ = write!(
        out,
        "<text x=\"14\" y=\"{m}\" transform=\"rotate(-90 14 {m})\" text-anchor=\"middle\">{}</text>",
        escape(text),
        m = px(middle)
    );
}

/// One bar per bin of `bin_ms`, on a linear axis from 0 to the largest value.
fn bars(
    out: &mut String,
    x: &Linear,
    (top, bottom): (f64, f64),
    values: &[f64],
    bin_ms: f64,
    unit: &str,
    colour: &str,
) {
    let max = crate::charts::nice_max(values.iter().copied().fold(0.0, f64::max));
    let y = Linear::new((0.0, max), (bottom, top));
    for tick in svg::ticks(0.0, max, 3) {
        svg::grid_line(out, y.at(tick), (LEFT, WIDTH - RIGHT), &svg::label(tick));
    }
    caption(out, (top + bottom) / 2.0, unit);
    for (index, value) in values.iter().enumerate() {
        if *value <= 0.0 {
            continue;
        }
        let start = index as f64 * bin_ms / 1000.0;
        let (x0, x1) = (x.at(start), x.at(start + bin_ms / 1000.0));
        let _ = write!(
            out,
            "<rect class=\"bin\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{colour}\" data-tip=\"{:.1} s to {:.1} s: {} {}\"/>",
            px(x0),
            px(y.at(*value)),
            px((x1 - x0 - 0.3).max(0.5)),
            px(bottom - y.at(*value)),
            start,
            start + bin_ms / 1000.0,
            svg::label(*value),
            escape(unit)
        );
    }
}

fn checks_table(timeline: &RunTimeline) -> String {
    if timeline.checks.is_empty() {
        return "<p class=\"note\">This run checked no invariants.</p>".to_owned();
    }
    let rows: Vec<Vec<Cell>> = timeline
        .checks
        .iter()
        .map(|check| {
            vec![
                Cell::text(check.name.clone()),
                match check.verdict {
                    Verdict::Held => Cell::verdict(true),
                    Verdict::Violated => Cell::verdict(false),
                    Verdict::NotChecked => Cell::text("not checked"),
                },
                Cell::text(check.detail.clone()),
            ]
        })
        .collect();
    html::table(&["invariant", "result", "counts"], &rows)
}
