//! Integers written as any BSON number, read the way mongod's command parsers read them.

use bson::Bson;

use crate::value_order::Number;

/// The integer a BSON number holds: an int32 or int64 as it is, a double or decimal only
/// without a fractional part, cast with saturation at `i64`'s bounds (`1e300` reads as
/// `i64::MAX`, as mongod's `safeNumberLong` does). `None` for other types, fractions, NaN and
/// infinities.
pub fn integral(value: &Bson) -> Option<i64> {
    match Number::of(value)? {
        Number::Int(number) => Some(number),
        // Integral values only; `as` saturates past `i64`'s range.
        #[allow(clippy::cast_possible_truncation)]
        Number::Float(number) if number.fract() == 0.0 => Some(number as i64),
        Number::Float(_) => None,
        Number::Decimal(number) => {
            let number = crate::decimal::to_f64(number);
            #[allow(clippy::cast_possible_truncation)]
            (number.fract() == 0.0).then_some(number as i64)
        }
    }
}
