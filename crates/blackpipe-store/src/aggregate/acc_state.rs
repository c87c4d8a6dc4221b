//! The running state of one accumulator over one group (or one window frame): what it adds,
//! the value it gives, and the memory it holds. The states with more machinery live beside
//! this file (`acc_n.rs`, `acc_percentile.rs`, `window_states.rs`).

use std::collections::VecDeque;

use bson::{Bson, Document};

use super::acc_n::{MinMaxN, TopBottom};
use super::acc_percentile::Quantiles;
use super::accumulator::Item;
use super::window_states::{Covariance, ExpMovingAvg, Integral, Rank};
use crate::code;
use crate::decimal::{self, DecimalOp};
use crate::errors::{CommandError, StoreResult, type_name};
use crate::expr::accum_support::value_text;
use crate::value_order::{Number, compare_values, value_size, values_equal};

/// What a state counts for a value it holds beyond its fixed size (mongod's approximate sizes
/// are of the same order: the value's encoded size plus bookkeeping).
pub(super) const FIXED_STATE_BYTES: usize = 64;

/// mongod's `internalQueryMaxPushBytes`, `internalQueryMaxAddToSetBytes` and
/// `internalQueryTopNAccumulatorBytes` (100 MiB each): how much one `$push`, `$addToSet` or
/// `n` accumulator may hold for one group.
pub(super) const MAX_ACCUMULATOR_BYTES: usize = 100 * 1024 * 1024;

/// The state of one accumulator.
#[derive(Debug, Clone)]
pub(crate) enum State {
    Sum(Summation),
    Avg(Summation),
    Extreme {
        max: bool,
        best: Option<Bson>,
    },
    /// `$push` and `$addToSet` (`set`).
    List {
        set: bool,
        items: Vec<Bson>,
        bytes: usize,
    },
    /// `$first`: `None` until the first value, which may be missing (then null).
    First(Option<Bson>),
    Last(Option<Bson>),
    MergeObjects {
        merged: Document,
        bytes: usize,
    },
    StdDev {
        sample: bool,
        count: u64,
        mean: f64,
        m2: f64,
    },
    /// `$firstN` (`last: false`) and `$lastN`.
    FirstLastN {
        last: bool,
        n: usize,
        items: VecDeque<Bson>,
        bytes: usize,
    },
    MinMaxN(Box<MinMaxN>),
    TopBottom(Box<TopBottom>),
    Quantiles(Box<Quantiles>),
    // Window-only functions that accumulate over a frame (`window_states.rs`).
    Covariance(Covariance),
    ExpMovingAvg(ExpMovingAvg),
    Locf(Option<Bson>),
    Integral(Box<Integral>),
    Rank(Box<Rank>),
}

impl State {
    /// Adds one document's item.
    pub(crate) fn add(&mut self, item: Item) -> StoreResult<()> {
        let Item { value, key } = item;
        match self {
            State::Sum(total) => {
                if let Some(value) = &value {
                    total.add(value);
                }
            }
            State::Avg(total) => {
                if let Some(value) = &value {
                    total.add(value);
                }
            }
            State::Extreme { max, best } => add_extreme(*max, best, value),
            State::List { set, items, bytes } => {
                if let Some(value) = value {
                    if !*set || !items.iter().any(|item| values_equal(item, &value)) {
                        let name = if *set { "$addToSet" } else { "$push" };
                        *bytes = charge(*bytes, value_size(&value), name)?;
                        items.push(value);
                    }
                }
            }
            State::First(first) => {
                if first.is_none() {
                    *first = Some(value.unwrap_or(Bson::Null));
                }
            }
            State::Last(last) => *last = Some(value.unwrap_or(Bson::Null)),
            State::MergeObjects { merged, bytes } => merge_object(merged, bytes, value)?,
            State::StdDev {
                count, mean, m2, ..
            } => {
                if let Some(number) = value.as_ref().and_then(Number::of) {
                    // Welford's update, as mongod computes it.
                    let x = number.as_f64();
                    *count += 1;
                    let delta = x - *mean;
                    if delta != 0.0 {
                        #[allow(clippy::cast_precision_loss)]
                        let n = *count as f64;
                        *mean += delta / n;
                        *m2 += delta * (x - *mean);
                    }
                }
            }
            State::FirstLastN {
                last,
                n,
                items,
                bytes,
            } => {
                let value = value.unwrap_or(Bson::Null);
                if items.len() == *n {
                    if !*last {
                        return Ok(());
                    }
                    if let Some(dropped) = items.pop_front() {
                        *bytes = bytes.saturating_sub(value_size(&dropped));
                    }
                }
                let name = if *last { "$lastN" } else { "$firstN" };
                *bytes = charge(*bytes, value_size(&value), name)?;
                items.push_back(value);
            }
            State::MinMaxN(state) => state.add(value)?,
            State::TopBottom(state) => state.add(key, value)?,
            State::Quantiles(state) => state.add(value.as_ref()),
            State::Covariance(state) => state.add(value.as_ref()),
            State::ExpMovingAvg(state) => state.add(value.as_ref()),
            State::Locf(last) => {
                if !matches!(value, None | Some(Bson::Null | Bson::Undefined)) {
                    *last = value;
                }
            }
            State::Integral(state) => state.add(value)?,
            State::Rank(state) => state.add(value),
        }
        Ok(())
    }

    /// The accumulated value (`None`: missing).
    pub(crate) fn value(&self) -> Bson {
        match self {
            State::Sum(total) => total.sum(),
            State::Avg(total) => total.average(),
            State::Extreme { best, .. } => best.clone().unwrap_or(Bson::Null),
            State::List { items, .. } => Bson::Array(items.clone()),
            State::First(value) | State::Last(value) => value.clone().unwrap_or(Bson::Null),
            State::MergeObjects { merged, .. } => Bson::Document(merged.clone()),
            State::StdDev {
                sample, count, m2, ..
            } => {
                let divisor = if *sample {
                    count.saturating_sub(1)
                } else {
                    *count
                };
                if divisor == 0 {
                    return Bson::Null;
                }
                #[allow(clippy::cast_precision_loss)]
                let divisor = divisor as f64;
                Bson::Double((m2 / divisor).sqrt())
            }
            State::FirstLastN { items, .. } => Bson::Array(items.iter().cloned().collect()),
            State::MinMaxN(state) => state.value(),
            State::TopBottom(state) => state.value(),
            State::Quantiles(state) => state.value(),
            State::Covariance(state) => state.value(),
            State::ExpMovingAvg(state) => state.value(),
            State::Locf(last) => last.clone().unwrap_or(Bson::Null),
            State::Integral(state) => state.value(),
            State::Rank(state) => state.value(),
        }
    }

    /// The memory the state holds, for the stage's memory limit.
    pub(crate) fn bytes(&self) -> usize {
        FIXED_STATE_BYTES
            + match self {
                State::List { bytes, .. }
                | State::MergeObjects { bytes, .. }
                | State::FirstLastN { bytes, .. } => *bytes,
                State::Extreme { best: Some(v), .. } | State::First(Some(v)) => value_size(v),
                State::Last(Some(v)) | State::Locf(Some(v)) => value_size(v),
                State::MinMaxN(state) => state.bytes(),
                State::TopBottom(state) => state.bytes(),
                State::Quantiles(state) => state.bytes(),
                State::Integral(state) => state.bytes(),
                _ => 0,
            }
    }
}

fn add_extreme(max: bool, best: &mut Option<Bson>, value: Option<Bson>) {
    // Null, undefined and missing are not values for `$min`/`$max`.
    let Some(value) = value.filter(|value| !matches!(value, Bson::Null | Bson::Undefined)) else {
        return;
    };
    let wanted = if max {
        std::cmp::Ordering::Greater
    } else {
        std::cmp::Ordering::Less
    };
    if best
        .as_ref()
        .is_none_or(|current| compare_values(&value, current) == wanted)
    {
        *best = Some(value);
    }
}

/// `$mergeObjects` as an accumulator: nullish inputs are skipped, later fields replace earlier
/// ones in place.
fn merge_object(merged: &mut Document, bytes: &mut usize, value: Option<Bson>) -> StoreResult<()> {
    let document = match value {
        None | Some(Bson::Null | Bson::Undefined) => return Ok(()),
        Some(Bson::Document(document)) => document,
        Some(other) => {
            return Err(CommandError::new(
                code::MERGE_OBJECTS_NOT_OBJECT,
                format!(
                    "$mergeObjects requires object inputs, but input {} is of type {}",
                    value_text(Some(&other)),
                    type_name(&other)
                ),
            ));
        }
    };
    for (key, value) in document {
        *bytes = charge(*bytes, key.len() + 2 + value_size(&value), "$mergeObjects")?;
        merged.insert(key, value);
    }
    Ok(())
}

/// Adds `more` bytes to an accumulator's `held`, failing with ExceededMemoryLimit (146) as
/// mongod does past [`MAX_ACCUMULATOR_BYTES`].
pub(super) fn charge(held: usize, more: usize, name: &str) -> StoreResult<usize> {
    let grown = held.saturating_add(more);
    if grown > MAX_ACCUMULATOR_BYTES {
        return Err(CommandError::new(
            code::EXCEEDED_MEMORY_LIMIT,
            format!(
                "{name} used too much memory and cannot spill to disk. Memory limit: \
                 {MAX_ACCUMULATOR_BYTES} bytes"
            ),
        ));
    }
    Ok(grown)
}

/// The widest numeric type a sum has seen (mongod's result type for `$sum`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Width {
    Int,
    Long,
    Double,
    Decimal,
}

/// mongod's `$sum`/`$avg` state: integers and doubles in a compensated double-double sum
/// (integers also exactly, to answer an integer when the total fits), decimals apart in
/// decimal arithmetic; non-numbers are ignored.
#[derive(Debug, Clone)]
pub(crate) struct Summation {
    width: Width,
    exact: i128,
    doubles: DoubleDouble,
    decimal: Option<dec::Decimal128>,
    /// Whether a double was added (the non-decimal part is then no exact integer).
    doubles_seen: bool,
    count: u64,
}

impl Default for Summation {
    fn default() -> Self {
        Summation {
            width: Width::Int,
            exact: 0,
            doubles: DoubleDouble::default(),
            decimal: None,
            doubles_seen: false,
            count: 0,
        }
    }
}

impl Summation {
    /// Adds a value; `false` when it is not a number (and was ignored).
    pub(crate) fn add(&mut self, value: &Bson) -> bool {
        match value {
            Bson::Int32(number) => self.add_integer(i64::from(*number), Width::Int),
            Bson::Int64(number) => self.add_integer(*number, Width::Long),
            Bson::Double(number) => {
                self.width = self.width.max(Width::Double);
                self.doubles_seen = true;
                self.doubles.add(*number);
            }
            Bson::Decimal128(number) => {
                self.width = Width::Decimal;
                let number = decimal::from_bson(number);
                self.decimal = Some(match self.decimal {
                    Some(total) => decimal::apply(DecimalOp::Add, total, number),
                    None => number,
                });
            }
            _ => return false,
        }
        self.count += 1;
        true
    }

    fn add_integer(&mut self, number: i64, width: Width) {
        self.width = self.width.max(width);
        self.exact = self.exact.saturating_add(i128::from(number));
        // Split so the double-double sum stays exact for any i64.
        #[allow(clippy::cast_precision_loss)]
        let high = number as f64;
        #[allow(clippy::cast_possible_truncation)]
        let low = number.wrapping_sub(high as i64);
        self.doubles.add(high);
        #[allow(clippy::cast_precision_loss)]
        self.doubles.add(low as f64);
    }

    /// Whether the non-decimal part holds integers only.
    fn integral(&self) -> bool {
        !self.doubles_seen
    }

    /// The non-decimal part as a decimal.
    fn non_decimal_as_decimal(&self) -> dec::Decimal128 {
        if self.integral() {
            if let Ok(exact) = i64::try_from(self.exact) {
                return decimal::from_i64(exact);
            }
        }
        decimal::apply(
            DecimalOp::Add,
            decimal::from_f64_for_arithmetic(self.doubles.sum),
            decimal::from_f64_for_arithmetic(self.doubles.addend + self.doubles.special),
        )
    }

    fn decimal_total(&self) -> dec::Decimal128 {
        let non_decimal = self.non_decimal_as_decimal();
        match self.decimal {
            Some(total) => decimal::apply(DecimalOp::Add, total, non_decimal),
            None => non_decimal,
        }
    }

    /// `$sum`'s answer: the narrowest type holding the total (int, then long, then double).
    pub(crate) fn sum(&self) -> Bson {
        match self.width {
            Width::Int | Width::Long => match i64::try_from(self.exact) {
                Ok(total) if self.width == Width::Int => {
                    i32::try_from(total).map_or(Bson::Int64(total), Bson::Int32)
                }
                Ok(total) => Bson::Int64(total),
                Err(_) => Bson::Double(self.doubles.value()),
            },
            Width::Double => Bson::Double(self.doubles.value()),
            Width::Decimal => decimal::to_bson(self.decimal_total()),
        }
    }

    /// `$avg`'s answer: null without numbers, a decimal once a decimal was added, else a
    /// double.
    pub(crate) fn average(&self) -> Bson {
        if self.count == 0 {
            return Bson::Null;
        }
        if self.width == Width::Decimal {
            let count = decimal::from_i64(i64::try_from(self.count).unwrap_or(i64::MAX));
            return decimal::to_bson(decimal::apply(
                DecimalOp::Divide,
                self.decimal_total(),
                count,
            ));
        }
        #[allow(clippy::cast_precision_loss)]
        let count = self.count as f64;
        Bson::Double(self.doubles.value() / count)
    }
}

/// A compensated sum of doubles (mongod's `DoubleDoubleSummation`): the rounded sum and the
/// error it lost; infinities and NaN are kept apart.
#[derive(Debug, Clone, Copy, Default)]
struct DoubleDouble {
    sum: f64,
    addend: f64,
    special: f64,
}

impl DoubleDouble {
    fn add(&mut self, x: f64) {
        if !x.is_finite() {
            self.special += x;
            return;
        }
        // Knuth's two-sum: `sum + error` is exactly `self.sum + x`.
        let sum = self.sum + x;
        let virtual_x = sum - self.sum;
        let error = (self.sum - (sum - virtual_x)) + (x - virtual_x);
        self.sum = sum;
        self.addend += error;
    }

    fn value(&self) -> f64 {
        if self.special != 0.0 || self.special.is_nan() {
            return self.special;
        }
        self.sum + self.addend
    }
}
