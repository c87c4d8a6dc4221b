//! Binning and downsampling: a ten-minute torture run has millions of operations; its report
//! must stay a few MiB and open in a browser at once, without hiding what matters.

use crate::timeline::{OpPoint, Outcome};

/// How many of `times_ms` fall in each `bin_ms`-wide bin of `[0, duration_ms)`; times outside
/// are dropped (the last bin takes the end itself).
pub fn count_per_bin(
    times_ms: impl IntoIterator<Item = f64>,
    bin_ms: f64,
    duration_ms: f64,
) -> Vec<u64> {
    sum_per_bin(times_ms.into_iter().map(|at| (at, 1)), bin_ms, duration_ms)
}

/// The sum of the weights whose time falls in each `bin_ms`-wide bin of `[0, duration_ms)`.
pub fn sum_per_bin(
    weighted: impl IntoIterator<Item = (f64, u64)>,
    bin_ms: f64,
    duration_ms: f64,
) -> Vec<u64> {
    if !(bin_ms > 0.0 && duration_ms > 0.0 && duration_ms.is_finite()) {
        return Vec::new();
    }
    let bins = (duration_ms / bin_ms).ceil().max(1.0) as usize;
    let mut counts = vec![0u64; bins];
    for (at, weight) in weighted {
        if !(at >= 0.0 && at <= duration_ms) {
            continue;
        }
        let index = ((at / bin_ms) as usize).min(bins - 1);
        counts[index] += weight;
    }
    counts
}

/// At most `max_points` of `operations` for the latency scatter, in time order.
///
/// Every operation that did not simply succeed (retried, failed, ambiguous...) is what a
/// reader looks for, so they get up to half of the budget (evenly thinned if there are more);
/// the plain successes share the rest by time bin, each bin keeping its slowest operation and
/// its last one, so that a latency spike survives however thin the sample.
pub fn downsample(operations: &[OpPoint], max_points: usize) -> Vec<OpPoint> {
    if operations.len() <= max_points {
        let mut all = operations.to_vec();
        all.sort_by(|a, b| a.at_ms.total_cmp(&b.at_ms));
        return all;
    }
    let (plain, notable): (Vec<&OpPoint>, Vec<&OpPoint>) =
        operations.iter().partition(|op| op.outcome == Outcome::Ok);
    let notable_kept = thin(&notable, notable.len().min(max_points / 2));
    let budget = max_points - notable_kept.len();
    let mut kept: Vec<OpPoint> = notable_kept.into_iter().cloned().collect();
    kept.extend(spikes_and_lasts(&plain, budget).into_iter().cloned());
    kept.sort_by(|a, b| a.at_ms.total_cmp(&b.at_ms));
    kept
}

/// `keep` of `items`, evenly spaced.
fn thin<'a>(items: &[&'a OpPoint], keep: usize) -> Vec<&'a OpPoint> {
    if keep == 0 {
        return Vec::new();
    }
    if items.len() <= keep {
        return items.to_vec();
    }
    (0..keep).map(|i| items[i * items.len() / keep]).collect()
}

/// Up to `budget` of `plain`: per time bin, its slowest and its last operation.
fn spikes_and_lasts<'a>(plain: &[&'a OpPoint], budget: usize) -> Vec<&'a OpPoint> {
    if plain.len() <= budget {
        return plain.to_vec();
    }
    let bins = (budget / 2).max(1);
    let end = plain.iter().map(|op| op.at_ms).fold(0.0, f64::max) + 1e-9;
    let mut slowest: Vec<Option<&OpPoint>> = vec![None; bins];
    let mut last: Vec<Option<&OpPoint>> = vec![None; bins];
    for &op in plain {
        let index = ((op.at_ms.max(0.0) / end * bins as f64) as usize).min(bins - 1);
        if slowest[index].is_none_or(|kept| op.latency_ms > kept.latency_ms) {
            slowest[index] = Some(op);
        }
        if last[index].is_none_or(|kept| op.at_ms >= kept.at_ms) {
            last[index] = Some(op);
        }
    }
    let mut kept = Vec::with_capacity(budget);
    for (slow, late) in slowest.into_iter().zip(last) {
        kept.extend(slow);
        if let Some(late) = late {
            if !slow.is_some_and(|slow| std::ptr::eq(slow, late)) {
                kept.push(late);
            }
        }
    }
    kept.truncate(budget);
    kept
}
