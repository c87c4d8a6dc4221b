//! `$median` and `$percentile` (`method: "approximate"`, the only method mongod 8.0 accepts).
//!
//! As an accumulator mongod computes them with a t-digest (delta 1000, the k2 scaling
//! function, a buffer of 5000 values); this file follows that algorithm, so answers match
//! mongod's for any input: while every centroid holds one value (small inputs) the answer is
//! the exact discrete percentile, the value of rank `ceil(p * n) - 1` in sorted order. Over a
//! sliding window (a removable frame) mongod keeps every value and answers that discrete
//! percentile exactly; so does blackpipe.

use std::cell::RefCell;
use std::sync::Arc;

use bson::Bson;

use super::accumulator::{Accumulator, Kind};
use crate::code;
use crate::errors::{CommandError, StoreResult, format_value, type_name};
use crate::expr::accum_support::{cpp_double, value_text};
use crate::expr::{Defined, Expr};
use crate::value_order::Number;

/// Parses `$percentile`'s `{input, p, method}` or `$median`'s `{input, method}`.
pub(crate) fn parse(name: &str, argument: &Bson, defined: &Defined) -> StoreResult<Accumulator> {
    let median = name == "$median";
    let Bson::Document(spec) = argument else {
        let code = if median {
            code::MEDIAN_NOT_OBJECT
        } else {
            code::PERCENTILE_NOT_OBJECT
        };
        return Err(CommandError::new(
            code,
            format!(
                "specification must be an object; found {name}: {}",
                format_value(argument)
            ),
        ));
    };
    let (mut input, mut p, mut method) = (None, None, None);
    for (key, value) in spec {
        match key.as_str() {
            "input" => input = Some(value),
            "p" if !median => p = Some(value),
            "method" => {
                let Bson::String(text) = value else {
                    return Err(CommandError::type_mismatch(format!(
                        "BSON field '{name}.method' is the wrong type '{}', expected type 'string'",
                        type_name(value)
                    )));
                };
                if text != "approximate" {
                    return Err(CommandError::bad_value(
                        "Currently only 'approximate' can be used as percentile 'method'.",
                    ));
                }
                method = Some(text);
            }
            _ => {
                return Err(CommandError::new(
                    code::IDL_UNKNOWN_FIELD,
                    format!("BSON field '{name}.{key}' is an unknown field."),
                ));
            }
        }
    }
    let missing = |field: &str| {
        CommandError::new(
            code::IDL_MISSING_FIELD,
            format!("BSON field '{name}.{field}' is missing but a required field"),
        )
    };
    let input = input.ok_or_else(|| missing("input"))?;
    let ps = if median {
        vec![0.5]
    } else {
        parse_p(p.ok_or_else(|| missing("p"))?, defined)?
    };
    method.ok_or_else(|| missing("method"))?;
    let kind = if median {
        Kind::Median
    } else {
        Kind::Percentile
    };
    let mut accumulator = Accumulator::simple(kind, Expr::parse_in(input, defined)?);
    accumulator.ps = Arc::new(ps);
    Ok(accumulator)
}

/// `p`: a constant, non-empty array of numbers in [0, 1].
fn parse_p(value: &Bson, defined: &Defined) -> StoreResult<Vec<f64>> {
    let message =
        "The $percentile 'p' field must be an array of numbers from [0.0, 1.0], but found: ";
    let Some(constant) = super::accumulator::constant_of(&Expr::parse_in(value, defined)?) else {
        return Err(CommandError::new(
            code::PERCENTILE_P_NOT_CONSTANT,
            format!(
                "The $percentile 'p' field must be an array of constant values, but found value: {}.",
                format_value(value)
            ),
        ));
    };
    let items = match &constant {
        Bson::Array(items) if !items.is_empty() => items,
        other => {
            return Err(CommandError::new(
                code::PERCENTILE_P_NOT_ARRAY,
                format!("{message}{}", value_text(Some(other))),
            ));
        }
    };
    items
        .iter()
        .map(|item| {
            let Some(number) = Number::of(item) else {
                return Err(CommandError::new(
                    code::PERCENTILE_P_NOT_NUMBER,
                    format!("{message}{}", value_text(Some(item))),
                ));
            };
            let p = number.as_f64();
            if !(0.0..=1.0).contains(&p) {
                return Err(CommandError::new(
                    code::PERCENTILE_P_OUT_OF_RANGE,
                    format!("{message}{}", cpp_double(p)),
                ));
            }
            Ok(p)
        })
        .collect()
}

/// The state of a `$median`/`$percentile`.
#[derive(Debug, Clone)]
pub(crate) struct Quantiles {
    median: bool,
    ps: Arc<Vec<f64>>,
    algorithm: Algorithm,
}

#[derive(Debug, Clone)]
enum Algorithm {
    Digest(RefCell<TDigest>),
    /// Every value, for the exact discrete percentile.
    Exact(Vec<f64>),
}

impl Quantiles {
    pub(super) fn new(median: bool, ps: Arc<Vec<f64>>, removable: bool) -> Quantiles {
        let algorithm = if removable {
            Algorithm::Exact(Vec::new())
        } else {
            Algorithm::Digest(RefCell::new(TDigest::default()))
        };
        Quantiles {
            median,
            ps,
            algorithm,
        }
    }

    /// Adds a value; non-numbers are ignored.
    pub(super) fn add(&mut self, value: Option<&Bson>) {
        let Some(number) = value.and_then(Number::of) else {
            return;
        };
        let x = number.as_f64();
        match &mut self.algorithm {
            Algorithm::Digest(digest) => digest.get_mut().incorporate(x),
            Algorithm::Exact(values) => {
                if !x.is_nan() {
                    values.push(x);
                }
            }
        }
    }

    pub(super) fn value(&self) -> Bson {
        let answers: Option<Vec<f64>> = match &self.algorithm {
            Algorithm::Digest(digest) => {
                let mut digest = digest.borrow_mut();
                self.ps.iter().map(|p| digest.percentile(*p)).collect()
            }
            Algorithm::Exact(values) => {
                let mut sorted = values.clone();
                sorted.sort_by(f64::total_cmp);
                self.ps
                    .iter()
                    .map(|p| sorted.get(true_rank(sorted.len(), *p)).copied())
                    .collect()
            }
        };
        match (answers, self.median) {
            (Some(answers), true) => answers.first().map_or(Bson::Null, |x| Bson::Double(*x)),
            (None, true) => Bson::Null,
            (Some(answers), false) => Bson::Array(answers.into_iter().map(Bson::Double).collect()),
            (None, false) => Bson::Array(vec![Bson::Null; self.ps.len()]),
        }
    }

    pub(super) fn bytes(&self) -> usize {
        match &self.algorithm {
            Algorithm::Digest(digest) => digest.borrow().bytes(),
            Algorithm::Exact(values) => values.len() * 8,
        }
    }
}

/// mongod's 0-based rank of percentile `p` among `n` values (ties resolved to the lower rank).
fn true_rank(n: usize, p: f64) -> usize {
    if p >= 1.0 {
        return n.saturating_sub(1);
    }
    #[allow(clippy::cast_precision_loss)]
    let scaled = (n as f64 * p).ceil();
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let rank = scaled as usize;
    rank.saturating_sub(1)
}

/// The t-digest's compaction parameter (mongod's `internalQueryTdigestDelta`).
const DELTA: f64 = 1000.0;
/// Values buffered before they are merged into the centroids (mongod's 5 * delta).
const BUFFER: usize = 5000;

/// mongod's t-digest: centroids (weight, mean) in order of their means.
#[derive(Debug, Clone)]
struct TDigest {
    buffer: Vec<f64>,
    centroids: Vec<(f64, f64)>,
    n: f64,
    negative_infinities: usize,
    positive_infinities: usize,
    min: f64,
    max: f64,
}

impl Default for TDigest {
    fn default() -> Self {
        TDigest {
            buffer: Vec::new(),
            centroids: Vec::new(),
            n: 0.0,
            negative_infinities: 0,
            positive_infinities: 0,
            min: f64::MAX,
            max: f64::MIN,
        }
    }
}

/// The k2 scaling function and its inverse (mongod's, from Meta's Folly library).
fn k2(q: f64) -> f64 {
    if q <= 0.5 {
        DELTA * std::f64::consts::FRAC_1_SQRT_2 * q.sqrt()
    } else {
        DELTA - DELTA * std::f64::consts::FRAC_1_SQRT_2 * (1.0 - q).sqrt()
    }
}

fn k2_inverse(s: f64) -> f64 {
    let r = s / DELTA;
    if r <= 0.5 {
        2.0 * r * r
    } else {
        let b = 1.0 - r;
        1.0 - 2.0 * b * b
    }
}

fn k2_limit(q: f64) -> f64 {
    k2_inverse(1.0 + k2(q))
}

/// Adds a centroid to another as mongod does (flipping the computation on the heavier side).
fn combine(into: &mut (f64, f64), other: (f64, f64)) {
    let (weight, mean) = *into;
    if other.0 < weight {
        let total = weight + other.0;
        *into = (total, mean + (other.1 - mean) * (other.0 / total));
    } else {
        let total = weight + other.0;
        *into = (total, other.1 + (mean - other.1) * (weight / total));
    }
}

/// Adds one value to a centroid (mongod's `Centroid::add(double)`).
fn add_value(centroid: &mut (f64, f64), value: f64) {
    centroid.0 += 1.0;
    centroid.1 += (value - centroid.1) / centroid.0;
}

impl TDigest {
    fn incorporate(&mut self, x: f64) {
        if x.is_nan() {
            return;
        }
        if x.is_infinite() {
            if x < 0.0 {
                self.negative_infinities += 1;
            } else {
                self.positive_infinities += 1;
            }
            return;
        }
        self.buffer.push(x);
        if self.buffer.len() >= BUFFER {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.buffer.is_empty() {
            return;
        }
        let mut sorted = std::mem::take(&mut self.buffer);
        sorted.sort_by(f64::total_cmp);
        self.merge(&sorted);
    }

    /// Merges sorted values into the centroids in one pass, as mongod does: the two sorted
    /// streams are interleaved by mean and adjacent centroids compacted as far as the scaling
    /// function allows; once either stream runs out, the other's tail is compacted alone.
    fn merge(&mut self, sorted: &[f64]) {
        #[allow(clippy::cast_precision_loss)]
        let added = sorted.len() as f64;
        self.n += added;
        self.min = self.min.min(sorted[0]);
        self.max = self.max.max(sorted[sorted.len() - 1]);
        let n = self.n;
        let old = std::mem::take(&mut self.centroids);
        let mut merged: Vec<(f64, f64)> = Vec::with_capacity((old.len() + sorted.len()).min(2000));
        let (mut i, mut j) = (0, 0);
        let mut w = 0.0;
        while i < old.len() && j < sorted.len() {
            let mut current = if old[i].1 > sorted[j] {
                j += 1;
                (1.0, sorted[j - 1])
            } else {
                i += 1;
                old[i - 1]
            };
            let limit = n * k2_limit(w / n);
            while i < old.len() && j < sorted.len() {
                if old[i].1 > sorted[j] {
                    if w + current.0 + 1.0 > limit {
                        break;
                    }
                    add_value(&mut current, sorted[j]);
                    j += 1;
                } else {
                    if w + current.0 + old[i].0 > limit {
                        break;
                    }
                    combine(&mut current, old[i]);
                    i += 1;
                }
            }
            w += current.0;
            merged.push(current);
        }
        while i < old.len() {
            let mut current = old[i];
            i += 1;
            let limit = n * k2_limit(w / n);
            while i < old.len() && w + current.0 + old[i].0 <= limit {
                combine(&mut current, old[i]);
                i += 1;
            }
            w += current.0;
            merged.push(current);
        }
        while j < sorted.len() {
            let mut current = (1.0, sorted[j]);
            j += 1;
            let limit = n * k2_limit(w / n);
            while j < sorted.len() && w + current.0 + 1.0 <= limit {
                add_value(&mut current, sorted[j]);
                j += 1;
            }
            w += current.0;
            merged.push(current);
        }
        self.centroids = merged;
    }

    /// The percentile `p`, `None` without values.
    fn percentile(&mut self, p: f64) -> Option<f64> {
        self.flush();
        if self.centroids.is_empty()
            && self.negative_infinities == 0
            && self.positive_infinities == 0
        {
            return None;
        }
        if p >= 1.0 {
            return Some(if self.positive_infinities > 0 {
                f64::INFINITY
            } else {
                self.max
            });
        }
        if p <= 0.0 {
            return Some(if self.negative_infinities > 0 {
                f64::NEG_INFINITY
            } else {
                self.min
            });
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let finite = self.n as usize;
        let total = finite + self.negative_infinities + self.positive_infinities;
        let rank = true_rank(total, p);
        if rank < self.negative_infinities {
            return Some(f64::NEG_INFINITY);
        }
        if self.positive_infinities > 0 && rank >= finite + self.negative_infinities {
            return Some(f64::INFINITY);
        }
        #[allow(clippy::cast_precision_loss)]
        let rank = (rank - self.negative_infinities) as f64;
        Some(self.interpolate(rank))
    }

    /// The value of `rank` among the centroids, interpolating between centroid means.
    fn interpolate(&self, rank: f64) -> f64 {
        let mut i = 0;
        let mut r = 0.0;
        while i < self.centroids.len() {
            r += self.centroids[i].0;
            if r > rank {
                break;
            }
            i += 1;
        }
        let i = i.min(self.centroids.len() - 1);
        let (current_weight, current_mean) = self.centroids[i];
        if current_weight == 1.0 {
            return current_mean;
        }
        let last = self.centroids.len() - 1;
        let (left, right, weight_left, weight_right, doubled) = if r - rank >= current_weight / 2.0
        {
            let (weight_left, left) = if i == 0 {
                (0.0, self.min)
            } else {
                self.centroids[i - 1]
            };
            let doubled = weight_left + 2.0 * current_weight - 2.0 * (r - 1.0 - rank);
            (left, current_mean, weight_left, current_weight, doubled)
        } else {
            let (weight_right, right) = if i == last {
                (0.0, self.max)
            } else {
                self.centroids[i + 1]
            };
            let doubled = current_weight - 2.0 * (r - 1.0 - rank);
            (current_mean, right, current_weight, weight_right, doubled)
        };
        let inner = doubled / (weight_left + weight_right);
        let result = left + (right - left) * inner;
        result.min(right)
    }

    fn bytes(&self) -> usize {
        (self.buffer.len() + 2 * self.centroids.len()) * 8 + 64
    }
}
