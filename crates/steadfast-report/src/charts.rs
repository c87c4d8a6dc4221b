//! The benchmark's charts: grouped bars (one group per cell, one bar per driver), curves (the
//! goodput against offered load), and ratios against a reference line.
//!
//! Every bar and point carries its exact value in a tooltip (`data-tip`).

use std::fmt::Write as _;

use crate::html::escape;
use crate::svg::{self, Linear, px};

/// Colours given to series in order (the first two: steadfast, then the official crate).
pub const PALETTE: [&str; 6] = [
    "#1565c0", "#ef6c00", "#2e7d32", "#6a1b9a", "#c62828", "#00838f",
];

/// One named series of values, one per category.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// The legend's name ("steadfast", "official").
    pub name: String,
    /// One value per category; `None` where it was not measured (no bar is drawn).
    pub values: Vec<Option<f64>>,
}

/// One named curve.
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    /// The legend's name.
    pub name: String,
    /// `(x, y)` points, in the order to join them.
    pub points: Vec<(f64, f64)>,
}

const WIDTH: f64 = 1100.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;

/// The value axis of a bar chart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    /// From zero, linear.
    Linear,
    /// Whole decades around the values (for figures that span orders of magnitude, such as
    /// throughput across workloads or latency across concurrencies).
    Log,
}

/// Bars grouped by category: one bar per series in each group, the value axis in `unit`.
pub fn grouped_bars(
    title: &str,
    unit: &str,
    categories: &[String],
    series: &[Series],
    axis: Axis,
) -> String {
    let height = 300.0;
    let (top, bottom) = (28.0, height - 84.0);
    let values = || {
        series
            .iter()
            .flat_map(|s| s.values.iter().flatten())
            .copied()
            .filter(|v| v.is_finite() && (axis == Axis::Linear || *v > 0.0))
    };
    let max = values().fold(0.0f64, f64::max);
    let scale = match axis {
        Axis::Linear => ValueScale::Linear(Linear::new((0.0, nice_max(max)), (bottom, top))),
        Axis::Log => {
            let min = values().fold(f64::INFINITY, f64::min);
            let (low, high) = decades(min, max);
            ValueScale::Log(svg::Log10::new((low, high), (bottom, top)), (low, high))
        }
    };
    let mut out = String::new();
    svg::open(&mut out, "chart bars", WIDTH, height);
    write_title(&mut out, title);
    match &scale {
        ValueScale::Linear(y) => y_axis(&mut out, y, (0.0, nice_max(max)), top, bottom, unit),
        ValueScale::Log(y, range) => log_y_axis(&mut out, y, *range, top, bottom, unit),
    }
    legend(&mut out, series.iter().map(|s| s.name.as_str()));
    let group = (WIDTH - LEFT - RIGHT) / categories.len().max(1) as f64;
    let bar = (group * 0.8 / series.len().max(1) as f64).min(36.0);
    for (index, category) in categories.iter().enumerate() {
        let start = LEFT + index as f64 * group + (group - bar * series.len() as f64) / 2.0;
        for (s, one) in series.iter().enumerate() {
            let Some(value) = one.values.get(index).copied().flatten() else {
                continue;
            };
            let x = start + s as f64 * bar;
            let top_y = scale.at(value);
            let _ = write!(
                out,
                "<rect class=\"bar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" data-tip=\"{}: {}: {} {}\"/>",
                px(x),
                px(top_y),
                px(bar - 2.0),
                px(bottom - top_y),
                PALETTE[s % PALETTE.len()],
                escape(category),
                escape(&one.name),
                svg::exact(value),
                escape(unit)
            );
        }
        let centre = LEFT + (index as f64 + 0.5) * group;
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" transform=\"rotate(-30 {} {})\">{}</text>",
            px(centre),
            px(bottom + 14.0),
            px(centre),
            px(bottom + 14.0),
            escape(category)
        );
    }
    out.push_str("</svg>");
    out
}

/// Curves on linear axes, each point with a tooltip.
pub fn curves(title: &str, x_caption: &str, y_caption: &str, curves: &[Curve]) -> String {
    let height = 320.0;
    let (top, bottom) = (28.0, height - 40.0);
    let points = || curves.iter().flat_map(|c| c.points.iter().copied());
    let x_max = nice_max(points().map(|p| p.0).fold(0.0, f64::max));
    let y_max = nice_max(points().map(|p| p.1).fold(0.0, f64::max));
    let x = Linear::new((0.0, x_max), (LEFT, WIDTH - RIGHT));
    let y = Linear::new((0.0, y_max), (bottom, top));
    let mut out = String::new();
    svg::open(&mut out, "chart curves", WIDTH, height);
    write_title(&mut out, title);
    y_axis(&mut out, &y, (0.0, y_max), top, bottom, y_caption);
    svg::x_axis(&mut out, &x, (0.0, x_max), bottom, top, x_caption);
    legend(&mut out, curves.iter().map(|c| c.name.as_str()));
    for (index, curve) in curves.iter().enumerate() {
        let colour = PALETTE[index % PALETTE.len()];
        let path: Vec<String> = curve
            .points
            .iter()
            .map(|&(a, b)| format!("{},{}", px(x.at(a)), px(y.at(b))))
            .collect();
        let _ = write!(
            out,
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>",
            path.join(" ")
        );
        for &(a, b) in &curve.points {
            let _ = write!(
                out,
                "<circle class=\"point\" cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{colour}\" data-tip=\"{}: {} = {}, {} = {}\"/>",
                px(x.at(a)),
                px(y.at(b)),
                escape(&curve.name),
                escape(x_caption),
                svg::exact(a),
                escape(y_caption),
                svg::exact(b)
            );
        }
    }
    out.push_str("</svg>");
    out
}

/// One horizontal bar per item (a ratio), with a vertical line at `reference` (1.0: parity)
/// and, when given, one at `target`.
pub fn ratios(title: &str, items: &[(String, f64)], reference: f64, target: Option<f64>) -> String {
    let row = 20.0;
    let top = 30.0;
    let height = top + row * items.len() as f64 + 44.0;
    let left = 260.0;
    let max = items
        .iter()
        .map(|item| item.1)
        .chain([reference, target.unwrap_or(0.0)])
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let x = Linear::new((0.0, nice_max(max)), (left, WIDTH - RIGHT));
    let mut out = String::new();
    svg::open(&mut out, "chart ratios", WIDTH, height);
    write_title(&mut out, title);
    let bottom = top + row * items.len() as f64;
    svg::x_axis(&mut out, &x, (0.0, nice_max(max)), bottom, top, "ratio");
    for (index, (name, value)) in items.iter().enumerate() {
        let y = top + index as f64 * row;
        let colour = if *value >= target.unwrap_or(reference) {
            PALETTE[2]
        } else {
            PALETTE[4]
        };
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text><rect class=\"bar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{colour}\" data-tip=\"{}: {:.2}x\"/>",
            px(left - 6.0),
            px(y + row * 0.7),
            escape(name),
            px(left),
            px(y + 3.0),
            px(x.at(*value) - left),
            px(row - 6.0),
            escape(name),
            value
        );
    }
    // The parity label above the bars, the target's below them, so that close lines'
    // labels do not overlap.
    for (line, caption, label_y) in [
        (Some(reference), "parity", top - 8.0),
        (target, "target", bottom + 26.0),
    ] {
        if let Some(line) = line {
            let at = px(x.at(line));
            let _ = write!(
                out,
                "<line x1=\"{at}\" x2=\"{at}\" y1=\"{}\" y2=\"{}\" stroke=\"#333\" stroke-dasharray=\"4 3\"/><text x=\"{at}\" y=\"{}\" text-anchor=\"start\" dx=\"3\">{caption} {}</text>",
                px(top - 4.0),
                px(bottom),
                px(label_y),
                svg::label(line)
            );
        }
    }
    out.push_str("</svg>");
    out
}

/// The smallest round number at or above `max` (1, 2 or 5 times a power of ten); 1 for an
/// empty chart.
pub(crate) fn nice_max(max: f64) -> f64 {
    if !(max.is_finite() && max > 0.0) {
        return 1.0;
    }
    let magnitude = 10f64.powf(max.log10().floor());
    [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|candidate| *candidate >= max)
        .unwrap_or(10.0 * magnitude)
}

/// Whole decades from `min`'s to `max`'s (at least one); one decade for no values.
pub(crate) fn decades(min: f64, max: f64) -> (f64, f64) {
    if !(min.is_finite() && max.is_finite() && min > 0.0) {
        return (1.0, 10.0);
    }
    let low = 10f64.powf(min.log10().floor());
    let high = 10f64.powf(max.log10().ceil()).max(low * 10.0);
    (low, high)
}

/// A bar chart's value axis.
enum ValueScale {
    Linear(Linear),
    Log(svg::Log10, (f64, f64)),
}

impl ValueScale {
    fn at(&self, value: f64) -> f64 {
        match self {
            ValueScale::Linear(y) => y.at(value),
            ValueScale::Log(y, _) => y.at(value),
        }
    }
}

/// A logarithmic value axis: a line and a label per decade.
fn log_y_axis(
    out: &mut String,
    y: &svg::Log10,
    (low, high): (f64, f64),
    top: f64,
    bottom: f64,
    caption: &str,
) {
    for decade in svg::decade_ticks(low, high) {
        svg::grid_line(
            out,
            y.at(decade),
            (LEFT, WIDTH - RIGHT),
            &svg::label(decade),
        );
    }
    axis_caption(out, top, bottom, &format!("{caption} (log)"));
}

fn write_title(out: &mut String, title: &str) {
    let _ = write!(
        out,
        "<text x=\"{}\" y=\"16\" font-weight=\"600\" font-size=\"13\">{}</text>",
        px(LEFT),
        escape(title)
    );
}

pub(crate) fn y_axis(
    out: &mut String,
    y: &Linear,
    domain: (f64, f64),
    top: f64,
    bottom: f64,
    caption: &str,
) {
    for tick in svg::ticks(domain.0, domain.1, 5) {
        svg::grid_line(out, y.at(tick), (LEFT, WIDTH - RIGHT), &svg::label(tick));
    }
    axis_caption(out, top, bottom, caption);
}

/// The value axis's line and its caption, turned along it.
fn axis_caption(out: &mut String, top: f64, bottom: f64, caption: &str) {
    let _ = write!(
        out,
        "<line x1=\"{l}\" x2=\"{l}\" y1=\"{}\" y2=\"{}\" stroke=\"#999\"/><text x=\"12\" y=\"{}\" transform=\"rotate(-90 12 {})\" text-anchor=\"middle\">{}</text>",
        px(top),
        px(bottom),
        px((top + bottom) / 2.0),
        px((top + bottom) / 2.0),
        escape(caption),
        l = px(LEFT)
    );
}

/// Roughly how wide a legend entry is drawn (11 px font).
fn entry_width(name: &str) -> f64 {
    20.0 + 6.5 * name.chars().count() as f64
}

/// The legend, right-aligned on the title's line.
fn legend<'a>(out: &mut String, names: impl Iterator<Item = &'a str> + Clone) {
    let total: f64 = names.clone().map(entry_width).sum();
    let mut x = (WIDTH - RIGHT - total).max(LEFT + 320.0);
    for (index, name) in names.enumerate() {
        let _ = write!(
            out,
            "<rect x=\"{}\" y=\"6\" width=\"11\" height=\"11\" fill=\"{}\"/><text x=\"{}\" y=\"16\">{}</text>",
            px(x),
            PALETTE[index % PALETTE.len()],
            px(x + 15.0),
            escape(name)
        );
        x += entry_width(name);
    }
}
