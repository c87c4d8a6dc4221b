//! The query operators that read numbers as 64-bit integers: `$mod` and the four bit tests
//! (`$bitsAllSet`, `$bitsAnySet`, `$bitsAllClear`, `$bitsAnyClear`), with mongod's parse errors.

use bson::{Binary, Bson};

use crate::errors::{CommandError, StoreResult, format_value};
use crate::value_order::Number;

/// `$mod: [divisor, remainder]`, both truncated to 64-bit integers.
#[derive(Debug, Clone, Copy)]
pub(super) struct Modulo {
    divisor: i64,
    remainder: i64,
}

impl Modulo {
    /// Parses the argument of `$mod`.
    ///
    /// # Errors
    /// BadValue, with mongod's "malformed mod" messages, for anything but an array of two
    /// finite numbers whose divisor is not zero.
    pub(super) fn parse(argument: &Bson) -> StoreResult<Modulo> {
        let Bson::Array(items) = argument else {
            return Err(CommandError::bad_value(
                "malformed mod, needs to be an array",
            ));
        };
        let not_enough = || CommandError::bad_value("malformed mod, not enough elements");
        let divisor = items.first().ok_or_else(not_enough)?;
        if number_of(divisor).is_none() {
            return Err(CommandError::bad_value(
                "malformed mod, divisor not a number",
            ));
        }
        let remainder = items.get(1).ok_or_else(not_enough)?;
        if number_of(remainder).is_none() {
            return Err(CommandError::bad_value(
                "malformed mod, remainder not a number",
            ));
        }
        if items.len() > 2 {
            return Err(CommandError::bad_value("malformed mod, too many elements"));
        }
        let divisor = coerce(divisor, "divisor")?;
        let remainder = coerce(remainder, "remainder")?;
        if divisor == 0 {
            return Err(CommandError::bad_value("divisor cannot be 0"));
        }
        Ok(Modulo { divisor, remainder })
    }

    /// Whether a value is a number whose truncation leaves the remainder; NaN, infinities and
    /// numbers past 64 bits never match.
    pub(super) fn matches(self, value: &Bson) -> bool {
        let dividend = match number_of(value) {
            Some(Reading::Int(number)) => number,
            Some(Reading::Float(number)) => match truncated(number) {
                Some(number) => number,
                None => return false,
            },
            None => return false,
        };
        // Wrapping: i64::MIN % -1 is 0, not an overflow.
        dividend.wrapping_rem(self.divisor) == self.remainder
    }
}

/// mongod truncates a `$mod` argument toward zero and refuses what has no 64-bit value.
fn coerce(value: &Bson, role: &str) -> StoreResult<i64> {
    match number_of(value) {
        Some(Reading::Int(number)) => Ok(number),
        Some(Reading::Float(number)) if !number.is_finite() => Err(CommandError::bad_value(
            format!("malformed mod, {role} value is invalid :: caused by :: Unable to coerce NaN/Inf to integral type"),
        )),
        Some(Reading::Float(number)) => truncated(number).ok_or_else(|| {
            CommandError::bad_value(format!(
                "malformed mod, {role} value is invalid :: caused by :: Out of bounds coercing to integral value"
            ))
        }),
        None => Err(CommandError::bad_value(format!(
            "malformed mod, {role} not a number"
        ))),
    }
}

/// A finite double truncated toward zero, if a 64-bit integer holds it.
fn truncated(number: f64) -> Option<i64> {
    const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
    let whole = number.trunc();
    // In range by the check; the cast only changes representation.
    #[allow(clippy::cast_possible_truncation)]
    (whole.is_finite() && (-TWO_POW_63..TWO_POW_63).contains(&whole)).then_some(whole as i64)
}

/// Which of the four bit tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BitOperator {
    AllSet,
    AnySet,
    AllClear,
    AnyClear,
}

impl BitOperator {
    /// The operator for its name without the `$`.
    pub(super) fn from_name(name: &str) -> Option<BitOperator> {
        Some(match name {
            "bitsAllSet" => BitOperator::AllSet,
            "bitsAnySet" => BitOperator::AnySet,
            "bitsAllClear" => BitOperator::AllClear,
            "bitsAnyClear" => BitOperator::AnyClear,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            BitOperator::AllSet => "$bitsAllSet",
            BitOperator::AnySet => "$bitsAnySet",
            BitOperator::AllClear => "$bitsAllClear",
            BitOperator::AnyClear => "$bitsAnyClear",
        }
    }
}

/// A bit test: the operator and the bit positions its mask names.
#[derive(Debug, Clone)]
pub(super) struct BitTest {
    operator: BitOperator,
    positions: Vec<u64>,
}

impl BitTest {
    /// Parses a bit test's mask: a non-negative 64-bit integer, BinData, or an array of bit
    /// positions.
    ///
    /// # Errors
    /// mongod's BadValue or FailedToParse for any other mask.
    pub(super) fn parse(operator: BitOperator, argument: &Bson) -> StoreResult<BitTest> {
        let name = operator.name();
        let positions = match argument {
            Bson::Array(items) => items
                .iter()
                .map(bit_position)
                .collect::<StoreResult<Vec<_>>>()?,
            Bson::Binary(Binary { bytes, .. }) => set_bits_of_bytes(bytes),
            other if number_of(other).is_some() => {
                let mask = integral_mask(other, name)?;
                (0..64).filter(|bit| mask >> bit & 1 == 1).collect()
            }
            other => {
                return Err(CommandError::bad_value(format!(
                    "{name} takes an Array, a number, or a BinData but received: {name}: {}",
                    format_value(other)
                )));
            }
        };
        Ok(BitTest {
            operator,
            positions,
        })
    }

    /// Whether a number (read as a two's complement 64-bit integer, sign-extended past bit 63)
    /// or BinData (little-endian bits) passes the test; other values never do.
    pub(super) fn matches(&self, value: &Bson) -> bool {
        let bit: Box<dyn Fn(u64) -> bool + '_> = match value {
            Bson::Binary(Binary { bytes, .. }) => {
                Box::new(|position| bit_of_bytes(bytes, position))
            }
            other => match integral_value(other) {
                Some(number) => Box::new(move |position| {
                    if position < 64 {
                        number >> position & 1 == 1
                    } else {
                        number < 0
                    }
                }),
                None => return false,
            },
        };
        let mut positions = self.positions.iter().map(|position| bit(*position));
        match self.operator {
            BitOperator::AllSet => positions.all(|set| set),
            BitOperator::AnySet => positions.any(|set| set),
            BitOperator::AllClear => positions.all(|set| !set),
            BitOperator::AnyClear => positions.any(|set| !set),
        }
    }
}

fn bit_position(item: &Bson) -> StoreResult<u64> {
    let position = match number_of(item) {
        Some(Reading::Int(number)) => number,
        Some(Reading::Float(number)) if number.fract() == 0.0 => match truncated(number) {
            Some(number) => number,
            None => {
                return Err(CommandError::bad_value(format!(
                    "bit positions cannot be represented as a 32-bit signed integer: {}",
                    format_value(item)
                )));
            }
        },
        _ => {
            return Err(CommandError::bad_value(format!(
                "bit positions must be an integer but got: {}",
                format_value(item)
            )));
        }
    };
    if position < 0 {
        return Err(CommandError::bad_value(format!(
            "bit positions must be >= 0 but got: {}",
            format_value(item)
        )));
    }
    if position > i64::from(i32::MAX) {
        return Err(CommandError::bad_value(format!(
            "bit positions cannot be represented as a 32-bit signed integer: {}",
            format_value(item)
        )));
    }
    Ok(position.unsigned_abs())
}

fn integral_mask(value: &Bson, name: &str) -> StoreResult<i64> {
    let shown = format!("{name}: {}", format_value(value));
    let number = match number_of(value) {
        Some(Reading::Int(number)) => number,
        Some(Reading::Float(number)) if number.is_nan() => {
            return Err(CommandError::failed_to_parse(format!(
                "Expected an integer, but found NaN in: {shown}"
            )));
        }
        Some(Reading::Float(number)) => {
            let whole = truncated(number).ok_or_else(|| {
                CommandError::failed_to_parse(format!(
                    "Cannot represent as a 64-bit integer: {shown}"
                ))
            })?;
            if number.fract() != 0.0 {
                return Err(CommandError::failed_to_parse(format!(
                    "Expected an integer: {shown}"
                )));
            }
            whole
        }
        None => {
            return Err(CommandError::failed_to_parse(format!(
                "Expected a number in: {shown}"
            )));
        }
    };
    if number < 0 {
        return Err(CommandError::failed_to_parse(format!(
            "Expected a positive number in: {shown}"
        )));
    }
    Ok(number)
}

/// A stored number as a bit test reads it: integral and within 64 bits, or no match.
fn integral_value(value: &Bson) -> Option<i64> {
    match number_of(value)? {
        Reading::Int(number) => Some(number),
        Reading::Float(number) if number.fract() == 0.0 => truncated(number),
        Reading::Float(_) => None,
    }
}

fn set_bits_of_bytes(bytes: &[u8]) -> Vec<u64> {
    let mut positions = Vec::new();
    for (index, byte) in bytes.iter().enumerate() {
        for bit in 0..8 {
            if byte >> bit & 1 == 1 {
                positions.push(index as u64 * 8 + bit);
            }
        }
    }
    positions
}

fn bit_of_bytes(bytes: &[u8], position: u64) -> bool {
    usize::try_from(position / 8)
        .ok()
        .and_then(|index| bytes.get(index))
        .is_some_and(|byte| byte >> (position % 8) & 1 == 1)
}

/// A number as `$mod` and the bit tests read it.
#[derive(Clone, Copy)]
enum Reading {
    Int(i64),
    Float(f64),
}

/// A value's number as `$mod` and the bit tests read it: a Decimal128 through its nearest
/// double (FIDELITY.md lists the difference; mongod truncates the decimal exactly).
fn number_of(value: &Bson) -> Option<Reading> {
    Some(match Number::of(value)? {
        Number::Int(number) => Reading::Int(number),
        Number::Float(number) => Reading::Float(number),
        Number::Decimal(decimal) => Reading::Float(crate::decimal::to_f64(decimal)),
    })
}
