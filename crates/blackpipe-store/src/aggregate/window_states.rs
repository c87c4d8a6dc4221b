//! The states of the window functions that accumulate over a frame but have no `$group`
//! form: `$covariancePop`/`$covarianceSamp`, `$expMovingAvg`, `$integral` and the rank
//! functions (`$locf` is a one-value state in `acc_state.rs`).

use std::cmp::Ordering;

use bson::{Bson, doc};

use super::acc_state::Summation;
use super::accumulator::Kind;
use crate::arith::decimal_operand;
use crate::code;
use crate::decimal::{self, DecimalOp};
use crate::errors::{CommandError, StoreResult};
use crate::expr::accum_support;
use crate::sort::SortSpec;
use crate::value_order::{Number, compare_values, value_size};

/// `$covariancePop`/`$covarianceSamp` of `[x, y]` pairs (pairs that are not two numbers are
/// ignored): a running co-moment, as a double.
#[derive(Debug, Clone)]
pub(crate) struct Covariance {
    sample: bool,
    count: u64,
    mean_x: f64,
    mean_y: f64,
    comoment: f64,
}

impl Covariance {
    pub(super) fn new(sample: bool) -> Covariance {
        Covariance {
            sample,
            count: 0,
            mean_x: 0.0,
            mean_y: 0.0,
            comoment: 0.0,
        }
    }

    pub(super) fn add(&mut self, value: Option<&Bson>) {
        let Some(Bson::Array(pair)) = value else {
            return;
        };
        let [x, y] = pair.as_slice() else {
            return;
        };
        let (Some(x), Some(y)) = (Number::of(x), Number::of(y)) else {
            return;
        };
        let (x, y) = (x.as_f64(), y.as_f64());
        self.count += 1;
        #[allow(clippy::cast_precision_loss)]
        let n = self.count as f64;
        let delta_x = x - self.mean_x;
        self.mean_x += delta_x / n;
        self.mean_y += (y - self.mean_y) / n;
        self.comoment += delta_x * (y - self.mean_y);
    }

    pub(super) fn value(&self) -> Bson {
        let divisor = if self.sample {
            self.count.saturating_sub(1)
        } else {
            self.count
        };
        if divisor == 0 {
            return Bson::Null;
        }
        #[allow(clippy::cast_precision_loss)]
        let divisor = divisor as f64;
        Bson::Double(self.comoment / divisor)
    }
}

/// `$expMovingAvg`: `alpha * x + (1 - alpha) * previous` over the numbers seen, computed in
/// decimal as mongod does; a double unless a decimal was seen.
#[derive(Debug, Clone)]
pub(crate) struct ExpMovingAvg {
    alpha: dec::Decimal128,
    current: Option<dec::Decimal128>,
    decimal: bool,
}

impl ExpMovingAvg {
    pub(super) fn new(alpha: Option<dec::Decimal128>) -> ExpMovingAvg {
        ExpMovingAvg {
            alpha: alpha.unwrap_or_else(|| decimal::from_i64(1)),
            current: None,
            decimal: false,
        }
    }

    pub(super) fn add(&mut self, value: Option<&Bson>) {
        let Some(number) = value.and_then(Number::of) else {
            return;
        };
        self.decimal |= matches!(value, Some(Bson::Decimal128(_)));
        let x = decimal_operand(number);
        self.current = Some(match self.current {
            None => x,
            Some(previous) => {
                let weighted = decimal::apply(DecimalOp::Multiply, x, self.alpha);
                let rest = decimal::apply(DecimalOp::Subtract, decimal::from_i64(1), self.alpha);
                let kept = decimal::apply(DecimalOp::Multiply, previous, rest);
                decimal::apply(DecimalOp::Add, weighted, kept)
            }
        });
    }

    pub(super) fn value(&self) -> Bson {
        match self.current {
            None => Bson::Null,
            Some(current) if self.decimal => decimal::to_bson(current),
            Some(current) => Bson::Double(decimal::to_f64(current)),
        }
    }
}

/// `$integral`: the trapezoidal rule over `[sortBy value, input]` points.
#[derive(Debug, Clone)]
pub(crate) struct Integral {
    unit_ms: Option<i64>,
    last: Option<(Bson, Bson)>,
    total: Summation,
    points: u64,
    nans: u64,
}

fn is_nan(value: &Bson) -> bool {
    match value {
        Bson::Double(number) => number.is_nan(),
        Bson::Decimal128(number) => decimal::from_bson(number).is_nan(),
        _ => false,
    }
}

impl Integral {
    pub(super) fn new(unit_ms: Option<i64>) -> Integral {
        Integral {
            unit_ms,
            last: None,
            total: Summation::default(),
            points: 0,
            nans: 0,
        }
    }

    pub(super) fn add(&mut self, value: Option<Bson>) -> StoreResult<()> {
        let (x, y) = self.checked_point(value)?;
        if is_nan(&x) || is_nan(&y) {
            self.nans += 1;
        }
        if let Some((last_x, last_y)) = &self.last {
            let area = trapezoid(last_x, last_y, &x, &y)?;
            self.total.add(&area);
        }
        self.points += 1;
        self.last = Some((x, y));
        Ok(())
    }

    fn checked_point(&self, value: Option<Bson>) -> StoreResult<(Bson, Bson)> {
        let point = match value {
            Some(Bson::Array(pair)) => match <[Bson; 2]>::try_from(pair) {
                Ok([x, y])
                    if Number::of(&y).is_some()
                        && (Number::of(&x).is_some() || matches!(x, Bson::DateTime(_))) =>
                {
                    Some((x, y))
                }
                _ => None,
            },
            _ => None,
        };
        let Some((x, y)) = point else {
            return Err(CommandError::new(
                code::INTEGRAL_BAD_INPUT,
                "The input value of $integral window function must be a vector of 2 value, the \
                 first value must be numeric or date type and the second must be numeric.",
            ));
        };
        if self.unit_ms.is_some() && !matches!(x, Bson::DateTime(_)) {
            return Err(CommandError::new(
                code::INTEGRAL_UNIT_NOT_DATE,
                "$integral with 'outputUnit' expects the sortBy field to be a Date",
            ));
        }
        if self.unit_ms.is_none() && Number::of(&x).is_none() {
            return Err(CommandError::new(
                code::INTEGRAL_NOT_NUMBER,
                "$integral (with no 'outputUnit') expects the sortBy field to be numeric",
            ));
        }
        Ok((x, y))
    }

    pub(super) fn value(&self) -> Bson {
        if self.points == 0 {
            return Bson::Null;
        }
        if self.nans > 0 {
            return Bson::Double(f64::NAN);
        }
        let total = self.total.sum();
        match self.unit_ms {
            Some(unit) => accum_support::divide(&total, &Bson::Int64(unit))
                .ok()
                .flatten()
                .unwrap_or(Bson::Null),
            None => total,
        }
    }

    pub(super) fn bytes(&self) -> usize {
        self.last
            .as_ref()
            .map_or(0, |(x, y)| value_size(x) + value_size(y))
    }
}

/// The area under the segment from `(x1, y1)` to `(x2, y2)`, with `$subtract`, `$add`,
/// `$multiply` and `$divide` (NaN points add nothing; the NaN count answers instead).
fn trapezoid(x1: &Bson, y1: &Bson, x2: &Bson, y2: &Bson) -> StoreResult<Bson> {
    if [x1, y1, x2, y2].into_iter().any(is_nan) {
        return Ok(Bson::Int32(0));
    }
    let width = accum_support::subtract(x2, x1)?.unwrap_or(Bson::Null);
    let heights = accum_support::add(y2, y1)?.unwrap_or(Bson::Null);
    let doubled = accum_support::multiply(&heights, &width)?.unwrap_or(Bson::Null);
    Ok(accum_support::divide(&doubled, &Bson::Double(2.0))?.unwrap_or(Bson::Null))
}

/// `$rank`, `$denseRank` and `$documentNumber` over the `sortBy` field's values, in order.
#[derive(Debug, Clone)]
pub(crate) struct Rank {
    kind: Kind,
    key: SortSpec,
    last: Option<Option<Bson>>,
    rank: i64,
    same: i64,
}

impl Rank {
    pub(super) fn new(kind: Kind, ascending: bool) -> Rank {
        let direction = if ascending { 1 } else { -1 };
        Rank {
            kind,
            key: SortSpec::parse(&doc! { "k": direction })
                .unwrap_or_else(|_| unreachable!("a one-key sort pattern parses")),
            last: None,
            rank: 0,
            same: 1,
        }
    }

    /// Whether two `sortBy` values rank the same: null and missing do, arrays compare by their
    /// sort keys, anything else by value.
    fn same_value(&self, left: Option<&Bson>, right: Option<&Bson>) -> bool {
        let nullish =
            |value: Option<&Bson>| matches!(value, None | Some(Bson::Null | Bson::Undefined));
        if nullish(left) && nullish(right) {
            return true;
        }
        let (Some(left), Some(right)) = (left, right) else {
            return false;
        };
        if matches!(left, Bson::Array(_)) || matches!(right, Bson::Array(_)) {
            let left = self.key.sort_key(&doc! { "k": left.clone() });
            let right = self.key.sort_key(&doc! { "k": right.clone() });
            return self.key.compare_keys(&left, &right) == Ordering::Equal;
        }
        compare_values(left, right) == Ordering::Equal
    }

    pub(super) fn add(&mut self, value: Option<Bson>) {
        if self.kind == Kind::DocumentNumber {
            self.rank += 1;
            return;
        }
        let new = match &self.last {
            None => true,
            Some(last) => !self.same_value(last.as_ref(), value.as_ref()),
        };
        if new {
            if self.kind == Kind::Rank {
                self.rank += self.same;
                self.same = 1;
            } else {
                self.rank += 1;
            }
            self.last = Some(value);
        } else {
            self.same += 1;
        }
    }

    pub(super) fn value(&self) -> Bson {
        i32::try_from(self.rank).map_or(Bson::Int64(self.rank), Bson::Int32)
    }
}
