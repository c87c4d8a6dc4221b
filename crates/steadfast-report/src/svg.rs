//! Scales, ticks and number formatting for the hand-written SVG.

use std::fmt::Write as _;

/// A linear map from data values to pixels.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Linear {
    domain: (f64, f64),
    range: (f64, f64),
}

impl Linear {
    /// Maps `domain` onto `range`; an empty domain maps everything to the range's start.
    pub(crate) fn new(domain: (f64, f64), range: (f64, f64)) -> Self {
        Self { domain, range }
    }

    pub(crate) fn at(&self, value: f64) -> f64 {
        let span = self.domain.1 - self.domain.0;
        if span.abs() < f64::EPSILON || !value.is_finite() {
            return self.range.0;
        }
        let t = ((value - self.domain.0) / span).clamp(0.0, 1.0);
        self.range.0 + t * (self.range.1 - self.range.0)
    }
}

/// A base-10 logarithmic map (latencies span microseconds to seconds).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Log10 {
    linear: Linear,
}

impl Log10 {
    /// `domain` must be positive; values at or below its start map to the range's start.
    pub(crate) fn new(domain: (f64, f64), range: (f64, f64)) -> Self {
        Self {
            linear: Linear::new((domain.0.log10(), domain.1.log10()), range),
        }
    }

    pub(crate) fn at(&self, value: f64) -> f64 {
        self.linear.at(value.max(f64::MIN_POSITIVE).log10())
    }
}

/// About `count` round tick values covering `[low, high]` (steps of 1, 2 or 5 times a power
/// of ten).
pub(crate) fn ticks(low: f64, high: f64, count: usize) -> Vec<f64> {
    let span = high - low;
    if !(span.is_finite() && span > 0.0) || count == 0 {
        return vec![low];
    }
    let rough = span / count as f64;
    let magnitude = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|step| span / step <= count as f64)
        .unwrap_or(10.0 * magnitude);
    let first = (low / step).ceil() * step;
    let mut out = Vec::new();
    let mut value = first;
    while value <= high + step * 1e-9 && out.len() <= 2 * count + 2 {
        out.push(value);
        value += step;
    }
    out
}

/// A pixel coordinate with one decimal (enough for a screen, and small files).
pub(crate) fn px(value: f64) -> String {
    let rounded = (value * 10.0).round() / 10.0;
    if rounded.fract() == 0.0 {
        format!("{}", rounded as i64)
    } else {
        format!("{rounded:.1}")
    }
}

/// A value for a label: up to three significant figures, thousands as `k`, millions as `M`.
pub(crate) fn label(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude >= 1e6 {
        format!("{}M", trim(value / 1e6))
    } else if magnitude >= 1e4 {
        format!("{}k", trim(value / 1e3))
    } else {
        trim(value)
    }
}

/// A value for a tooltip, exact: integers whole, others with up to six significant figures.
pub(crate) fn exact(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        return format!("{}", value as i64);
    }
    let digits = 5 - value.abs().log10().floor().clamp(-6.0, 5.0) as i32;
    let text = format!("{value:.*}", usize::try_from(digits.max(0)).unwrap_or(0));
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

fn trim(value: f64) -> String {
    let text = if value.abs() >= 100.0 {
        format!("{value:.0}")
    } else if value.abs() >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    };
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

/// Opens an `<svg>` of `width` by `height` with a class.
pub(crate) fn open(out: &mut String, class: &str, width: f64, height: f64) {
    let _ = write!(
        out,
        "<svg class=\"{class}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\">",
        px(width),
        px(height),
        px(width),
        px(height)
    );
}

/// A horizontal axis at `y` from `scale`'s ticks, with grid lines up to `top` and a caption.
pub(crate) fn x_axis(
    out: &mut String,
    scale: &Linear,
    domain: (f64, f64),
    y: f64,
    top: f64,
    caption: &str,
) {
    for tick in ticks(domain.0, domain.1, 10) {
        let x = px(scale.at(tick));
        let _ = write!(
            out,
            "<line x1=\"{x}\" x2=\"{x}\" y1=\"{}\" y2=\"{}\" stroke=\"#eee\"/><text x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            px(top),
            px(y),
            px(y + 13.0),
            label(tick)
        );
    }
    let _ = write!(
        out,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
        px(scale.at(domain.1)),
        px(y + 26.0),
        crate::html::escape(caption)
    );
}

/// A horizontal grid line across `[left, right]` at `y`, labelled at its left end.
pub(crate) fn grid_line(out: &mut String, y: f64, (left, right): (f64, f64), label: &str) {
    let at = px(y);
    let _ = write!(
        out,
        "<line x1=\"{}\" x2=\"{}\" y1=\"{at}\" y2=\"{at}\" stroke=\"#eee\"/><text x=\"{}\" y=\"{at}\" dy=\"4\" text-anchor=\"end\">{}</text>",
        px(left),
        px(right),
        px(left - 6.0),
        crate::html::escape(label)
    );
}

/// The powers of ten from `low` to `high` (both powers of ten themselves).
pub(crate) fn decade_ticks(low: f64, high: f64) -> impl Iterator<Item = f64> {
    std::iter::successors(Some(low), |decade| Some(decade * 10.0))
        .take_while(move |decade| *decade <= high * 1.0001)
        .take(64)
}
