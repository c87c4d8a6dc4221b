//! The `granularity` of `$bucketAuto`: rounding bucket boundaries up and down to a series of
//! preferred numbers (Renard R5..R80, 1-2-5, E6..E192) or to powers of two, as mongod's
//! granularity rounders do (types included: a double rounds to a double in a series, to an
//! integer for powers of two; a decimal rounds in decimal arithmetic).

use bson::{Bson, doc};

use crate::code;
use crate::decimal::{self, DecimalOp};
use crate::errors::{CommandError, StoreResult};
use crate::expr::Expr;
use crate::value_order::Number;

const R5: &[u16] = &[10, 16, 25, 40, 63];
const R10: &[u16] = &[100, 125, 160, 200, 250, 315, 400, 500, 630, 800];
const R20: &[u16] = &[
    100, 112, 125, 140, 160, 180, 200, 224, 250, 280, 315, 355, 400, 450, 500, 560, 630, 710, 800,
    900,
];
const R40: &[u16] = &[
    100, 106, 112, 118, 125, 132, 140, 150, 160, 170, 180, 190, 200, 212, 224, 236, 250, 265, 280,
    300, 315, 355, 375, 400, 425, 450, 475, 500, 530, 560, 600, 630, 670, 710, 750, 800, 850, 900,
    950,
];
const R80: &[u16] = &[
    103, 109, 115, 122, 128, 136, 145, 155, 165, 175, 185, 195, 206, 218, 230, 243, 258, 272, 290,
    307, 325, 345, 365, 387, 412, 437, 462, 487, 515, 545, 575, 615, 650, 690, 730, 775, 825, 875,
    925, 975,
];
const SERIES_125: &[u16] = &[10, 20, 50];
const E6: &[u16] = &[10, 15, 22, 33, 47, 68];
const E12: &[u16] = &[10, 12, 15, 18, 22, 27, 33, 39, 47, 56, 68, 82];
const E24: &[u16] = &[
    10, 11, 12, 13, 15, 16, 18, 20, 22, 24, 27, 30, 33, 36, 39, 43, 47, 51, 56, 62, 68, 75, 82, 91,
];
const E48: &[u16] = &[
    100, 105, 110, 115, 121, 127, 133, 140, 147, 154, 162, 169, 178, 187, 196, 205, 215, 226, 237,
    249, 261, 274, 287, 301, 316, 332, 348, 365, 383, 402, 422, 442, 464, 487, 511, 536, 562, 590,
    619, 649, 681, 715, 750, 787, 825, 866, 909, 953,
];
const E96: &[u16] = &[
    100, 102, 105, 107, 110, 113, 115, 118, 121, 124, 127, 130, 133, 137, 140, 143, 147, 150, 154,
    158, 162, 165, 169, 174, 178, 182, 187, 191, 196, 200, 205, 210, 215, 221, 226, 232, 237, 243,
    249, 255, 261, 267, 274, 280, 287, 294, 301, 309, 316, 324, 332, 340, 348, 357, 365, 374, 383,
    392, 402, 412, 422, 432, 442, 453, 464, 475, 487, 499, 511, 523, 536, 549, 562, 576, 590, 604,
    619, 634, 649, 665, 681, 698, 715, 732, 750, 768, 787, 806, 825, 845, 866, 887, 909, 931, 953,
    976,
];
const E192: &[u16] = &[
    100, 101, 102, 104, 105, 106, 107, 109, 110, 111, 113, 114, 115, 117, 118, 120, 121, 123, 124,
    126, 127, 129, 130, 132, 133, 135, 137, 138, 140, 142, 143, 145, 147, 149, 150, 152, 154, 156,
    158, 160, 162, 164, 165, 167, 169, 172, 174, 176, 178, 180, 182, 184, 187, 189, 191, 193, 196,
    198, 200, 203, 205, 208, 210, 213, 215, 218, 221, 223, 226, 229, 232, 234, 237, 240, 243, 246,
    249, 252, 255, 258, 261, 264, 267, 271, 274, 277, 280, 284, 287, 291, 294, 298, 301, 305, 309,
    312, 316, 320, 324, 328, 332, 336, 340, 344, 348, 352, 357, 361, 365, 370, 374, 379, 383, 388,
    392, 397, 402, 407, 412, 417, 422, 427, 432, 437, 442, 448, 453, 459, 464, 470, 475, 481, 487,
    493, 499, 505, 511, 517, 523, 530, 536, 542, 549, 556, 562, 569, 576, 583, 590, 597, 604, 612,
    619, 626, 634, 642, 649, 657, 665, 673, 681, 690, 698, 706, 715, 723, 732, 741, 750, 759, 768,
    777, 787, 796, 806, 816, 825, 835, 845, 856, 866, 876, 887, 898, 909, 920, 931, 942, 953, 965,
    976, 988,
];

/// Scaling steps a rounding may take: past the exponent range of a double or decimal, so that
/// an infinite value (where mongod would loop forever) ends instead.
const MAX_SCALING_STEPS: usize = 7000;

/// A `$bucketAuto` granularity.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Granularity {
    /// A series of preferred numbers, each scaled by powers of ten.
    Series(&'static [u16]),
    PowersOfTwo,
}

impl Granularity {
    /// The granularity named `name`.
    ///
    /// # Errors
    /// 40257 for a name mongod does not know.
    pub(crate) fn parse(name: &str) -> StoreResult<Granularity> {
        let series = match name {
            "R5" => R5,
            "R10" => R10,
            "R20" => R20,
            "R40" => R40,
            "R80" => R80,
            "1-2-5" => SERIES_125,
            "E6" => E6,
            "E12" => E12,
            "E24" => E24,
            "E48" => E48,
            "E96" => E96,
            "E192" => E192,
            "POWERSOF2" => return Ok(Granularity::PowersOfTwo),
            _ => {
                return Err(CommandError::new(
                    code::BUCKET_AUTO_UNKNOWN_GRANULARITY,
                    format!("Unknown rounding granularity '{name}'"),
                ));
            }
        };
        Ok(Granularity::Series(series))
    }

    /// The least value of the granularity above `value` (a non-negative number, checked by the
    /// caller); zero stays zero.
    pub(crate) fn round_up(self, value: &Bson) -> StoreResult<Bson> {
        self.round(value, true)
    }

    /// The greatest value of the granularity below `value`; zero stays zero.
    pub(crate) fn round_down(self, value: &Bson) -> StoreResult<Bson> {
        self.round(value, false)
    }

    fn round(self, value: &Bson, up: bool) -> StoreResult<Bson> {
        let Some(number) = Number::of(value) else {
            return Err(CommandError::new(
                code::BUCKET_AUTO_GRANULARITY_NOT_NUMBER,
                "A granularity rounder can only round numeric values",
            ));
        };
        if number.as_f64() == 0.0 || !number.as_f64().is_finite() {
            return Ok(value.clone());
        }
        match (self, number) {
            (Granularity::Series(series), Number::Decimal(decimal)) => {
                Ok(decimal::to_bson(round_decimal(series, decimal, up)))
            }
            (Granularity::Series(series), number) => {
                Ok(Bson::Double(round_double(series, number.as_f64(), up)))
            }
            (Granularity::PowersOfTwo, number) => powers_of_two(number, up),
        }
    }
}

fn round_double(series: &[u16], number: f64, up: bool) -> f64 {
    let first = f64::from(series[0]);
    let last = f64::from(series[series.len() - 1]);
    let mut multiplier = 1.0;
    let mut steps = 0;
    if up {
        while number >= last * multiplier && steps < MAX_SCALING_STEPS {
            multiplier *= 10.0;
            steps += 1;
        }
        while number < first * multiplier && steps < MAX_SCALING_STEPS {
            let previous_min = first * multiplier;
            multiplier /= 10.0;
            steps += 1;
            if number >= last * multiplier {
                // Between one decade's last value and the next one's first: rounds up to that.
                return previous_min;
            }
        }
        series
            .iter()
            .map(|step| f64::from(*step) * multiplier)
            .find(|candidate| number < *candidate)
            .unwrap_or(last * multiplier)
    } else {
        while number <= first * multiplier && steps < MAX_SCALING_STEPS {
            multiplier /= 10.0;
            steps += 1;
        }
        while number > last * multiplier && steps < MAX_SCALING_STEPS {
            let previous_max = last * multiplier;
            multiplier *= 10.0;
            steps += 1;
            if number <= first * multiplier {
                return previous_max;
            }
        }
        series
            .iter()
            .map(|step| f64::from(*step) * multiplier)
            .take_while(|candidate| *candidate < number)
            .last()
            .unwrap_or(first * multiplier)
    }
}

fn round_decimal(series: &[u16], number: dec::Decimal128, up: bool) -> dec::Decimal128 {
    use std::cmp::Ordering::{Greater, Less};
    let scaled = |step: u16, multiplier| {
        decimal::apply(
            DecimalOp::Multiply,
            decimal::from_i64(i64::from(step)),
            multiplier,
        )
    };
    let cmp = |left, right| decimal::compare(left, right);
    let (first, last) = (series[0], series[series.len() - 1]);
    let ten = decimal::from_i64(10);
    let mut multiplier = decimal::from_i64(1);
    let mut steps = 0;
    if up {
        while cmp(number, scaled(last, multiplier)) != Less && steps < MAX_SCALING_STEPS {
            multiplier = decimal::apply(DecimalOp::Multiply, multiplier, ten);
            steps += 1;
        }
        while cmp(number, scaled(first, multiplier)) == Less && steps < MAX_SCALING_STEPS {
            let previous_min = scaled(first, multiplier);
            multiplier = decimal::apply(DecimalOp::Divide, multiplier, ten);
            steps += 1;
            if cmp(number, scaled(last, multiplier)) != Less {
                return previous_min;
            }
        }
        series
            .iter()
            .map(|step| scaled(*step, multiplier))
            .find(|candidate| cmp(number, *candidate) == Less)
            .unwrap_or_else(|| scaled(last, multiplier))
    } else {
        while cmp(number, scaled(first, multiplier)) != Greater && steps < MAX_SCALING_STEPS {
            multiplier = decimal::apply(DecimalOp::Divide, multiplier, ten);
            steps += 1;
        }
        while cmp(number, scaled(last, multiplier)) == Greater && steps < MAX_SCALING_STEPS {
            let previous_max = scaled(last, multiplier);
            multiplier = decimal::apply(DecimalOp::Multiply, multiplier, ten);
            steps += 1;
            if cmp(number, scaled(first, multiplier)) != Greater {
                return previous_max;
            }
        }
        series
            .iter()
            .map(|step| scaled(*step, multiplier))
            .take_while(|candidate| cmp(*candidate, number) == Less)
            .last()
            .unwrap_or_else(|| scaled(first, multiplier))
    }
}

/// 2 to the power above (or below) `number`, computed as mongod does with `$pow` of 2 and an
/// integer exponent (a decimal exponent for a decimal), which picks the result's type.
fn powers_of_two(number: Number, up: bool) -> StoreResult<Bson> {
    let exponent = match number {
        Number::Int(integer) => {
            let bits = 64 - i64::from(integer.leading_zeros());
            let power_of_two = integer.count_ones() == 1;
            Bson::Int64(match (up, power_of_two) {
                (true, _) => bits,
                (false, true) => bits - 2,
                (false, false) => bits - 1,
            })
        }
        Number::Float(float) => Bson::Int32(log2_step(float, up)),
        Number::Decimal(value) => {
            let exponent = log2_step(decimal::to_f64(value), up);
            decimal::to_bson(decimal::from_i64(i64::from(exponent)))
        }
    };
    // An integer input keeps mongod's int exponent type for small exponents.
    let exponent = match exponent {
        Bson::Int64(small) if i32::try_from(small).is_ok() => {
            Bson::Int32(i32::try_from(small).unwrap_or(0))
        }
        other => other,
    };
    let power = Expr::parse(&Bson::Document(doc! { "$pow": [2, exponent] }))?;
    Ok(power
        .evaluate(&bson::Document::new())?
        .unwrap_or(Bson::Null))
}

/// `floor(log2(x)) + 1` (up) or `ceil(log2(x)) - 1` (down), as an int.
#[allow(clippy::cast_possible_truncation)]
fn log2_step(number: f64, up: bool) -> i32 {
    let log = number.log2();
    let step = if up {
        log.floor() + 1.0
    } else {
        log.ceil() - 1.0
    };
    // The log of a finite positive double lies within ±1075, so the conversion is exact.
    step as i32
}
