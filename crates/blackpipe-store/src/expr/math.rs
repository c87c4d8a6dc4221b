//! Arithmetic and trigonometry: `$ceil`, `$floor`, `$round`, `$trunc`, `$sqrt`, `$pow`,
//! `$exp`, `$ln`, `$log`, `$log10`, the trigonometric and hyperbolic functions, `$atan2`,
//! `$degreesToRadians` and `$radiansToDegrees`.
//!
//! Integers give doubles (except `$ceil`/`$floor`/`$round`/`$trunc`, which keep them, and an
//! exact integer `$pow`); a decimal input gives a decimal. Decimal square roots, exponentials,
//! logarithms and powers are computed with libdecNumber at 34 digits, correctly rounded (mongod
//! uses Intel's decimal library, which can differ in the last digit). libdecNumber has no
//! trigonometry: decimal `$sin`...`$atanh` and `$atan2` are computed in double precision and
//! returned as decimals (about 16 significant digits where mongod gives 34).

use bson::Bson;
use dec::{Context, Decimal128 as Dec, Rounding};

use super::args;
use super::vars::{Defined, Scope};
use super::{Expr, is_nullish, type_of};
use crate::decimal;
use crate::errors::{CommandError, StoreResult, type_name};
use crate::value_order::Number;

/// `Location28765`: a one-argument numeric operator given a non-number.
const NOT_NUMERIC: i32 = 28765;
/// `Location50989`: a trigonometric argument outside the function's domain.
const OUT_OF_DOMAIN: i32 = 50989;

/// The arithmetic and trigonometric operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MathOp {
    Ceil,
    Floor,
    Sqrt,
    Exp,
    Ln,
    Log,
    Log10,
    Pow,
    Round,
    Trunc,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Atan2,
    Sinh,
    Cosh,
    Tanh,
    Asinh,
    Acosh,
    Atanh,
    DegreesToRadians,
    RadiansToDegrees,
}

impl MathOp {
    pub(super) fn from_name(name: &str) -> Option<MathOp> {
        Some(match name {
            "$ceil" => MathOp::Ceil,
            "$floor" => MathOp::Floor,
            "$sqrt" => MathOp::Sqrt,
            "$exp" => MathOp::Exp,
            "$ln" => MathOp::Ln,
            "$log" => MathOp::Log,
            "$log10" => MathOp::Log10,
            "$pow" => MathOp::Pow,
            "$round" => MathOp::Round,
            "$trunc" => MathOp::Trunc,
            "$sin" => MathOp::Sin,
            "$cos" => MathOp::Cos,
            "$tan" => MathOp::Tan,
            "$asin" => MathOp::Asin,
            "$acos" => MathOp::Acos,
            "$atan" => MathOp::Atan,
            "$atan2" => MathOp::Atan2,
            "$sinh" => MathOp::Sinh,
            "$cosh" => MathOp::Cosh,
            "$tanh" => MathOp::Tanh,
            "$asinh" => MathOp::Asinh,
            "$acosh" => MathOp::Acosh,
            "$atanh" => MathOp::Atanh,
            "$degreesToRadians" => MathOp::DegreesToRadians,
            "$radiansToDegrees" => MathOp::RadiansToDegrees,
            _ => return None,
        })
    }
}

/// Parses the operands of a math operator.
pub(super) fn parse(
    op: MathOp,
    name: &str,
    argument: &Bson,
    defined: &Defined,
) -> StoreResult<Vec<Expr>> {
    match op {
        MathOp::Log | MathOp::Pow | MathOp::Atan2 => args::exactly(name, argument, 2, defined),
        MathOp::Round | MathOp::Trunc => args::between(name, argument, 1, 2, defined),
        _ => args::exactly(name, argument, 1, defined),
    }
}

/// Evaluates a math operator.
pub(super) fn evaluate(op: MathOp, arguments: &[Expr], scope: &Scope) -> StoreResult<Option<Bson>> {
    let name = operator_name(op);
    let values = super::evaluate_all(arguments, scope)?;
    let first = values[0].as_ref();
    match op {
        MathOp::Log => log(first, values[1].as_ref()),
        MathOp::Pow => pow(first, values[1].as_ref()),
        MathOp::Atan2 => atan2(first, values[1].as_ref()),
        MathOp::Round | MathOp::Trunc => {
            round(op, name, first, values.get(1).and_then(Option::as_ref))
        }
        _ => {
            if is_nullish(first) {
                return Ok(Some(Bson::Null));
            }
            let Some(number) = first.and_then(Number::of) else {
                return Err(CommandError::new(
                    NOT_NUMERIC,
                    format!("{name} only supports numeric types, not {}", type_of(first)),
                ));
            };
            unary(op, name, number, first).map(Some)
        }
    }
}

fn operator_name(op: MathOp) -> &'static str {
    match op {
        MathOp::Ceil => "$ceil",
        MathOp::Floor => "$floor",
        MathOp::Sqrt => "$sqrt",
        MathOp::Exp => "$exp",
        MathOp::Ln => "$ln",
        MathOp::Log => "$log",
        MathOp::Log10 => "$log10",
        MathOp::Pow => "$pow",
        MathOp::Round => "$round",
        MathOp::Trunc => "$trunc",
        MathOp::Sin => "$sin",
        MathOp::Cos => "$cos",
        MathOp::Tan => "$tan",
        MathOp::Asin => "$asin",
        MathOp::Acos => "$acos",
        MathOp::Atan => "$atan",
        MathOp::Atan2 => "$atan2",
        MathOp::Sinh => "$sinh",
        MathOp::Cosh => "$cosh",
        MathOp::Tanh => "$tanh",
        MathOp::Asinh => "$asinh",
        MathOp::Acosh => "$acosh",
        MathOp::Atanh => "$atanh",
        MathOp::DegreesToRadians => "$degreesToRadians",
        MathOp::RadiansToDegrees => "$radiansToDegrees",
    }
}

fn unary(op: MathOp, name: &str, number: Number, original: Option<&Bson>) -> StoreResult<Bson> {
    match op {
        MathOp::Ceil | MathOp::Floor => Ok(ceil_or_floor(op == MathOp::Ceil, number, original)),
        MathOp::Sqrt => sqrt(number),
        MathOp::Exp => Ok(match number {
            Number::Decimal(value) => decimal::to_bson(wide(value, |context, x| context.exp(x))),
            other => Bson::Double(other.as_f64().exp()),
        }),
        MathOp::Ln | MathOp::Log10 => logarithm(op, number),
        MathOp::DegreesToRadians | MathOp::RadiansToDegrees => Ok(angle(op, number)),
        _ => trigonometric(op, name, number),
    }
}

fn ceil_or_floor(ceil: bool, number: Number, original: Option<&Bson>) -> Bson {
    match number {
        Number::Float(value) => Bson::Double(if ceil { value.ceil() } else { value.floor() }),
        Number::Decimal(value) => {
            let rounding = if ceil {
                Rounding::Ceiling
            } else {
                Rounding::Floor
            };
            decimal::to_bson(quantize(value, Dec::from(1), rounding))
        }
        // Integers are their own ceiling and floor.
        Number::Int(_) => original.cloned().unwrap_or(Bson::Null),
    }
}

/// `value` rounded to the exponent of `quantum` (NaN when that needs more than 34 digits).
fn quantize(value: Dec, quantum: Dec, rounding: Rounding) -> Dec {
    let mut context = Context::<Dec>::default();
    context.set_rounding(rounding);
    context.quantize(value, quantum)
}

/// Decimal arithmetic at 36 digits, rounded once to decimal128's 34.
type Wide = dec::Decimal<12>;

/// A context of `digits` digits with decimal128's exponent range (libdecNumber's exp, ln and
/// log10 refuse the unbounded default range).
fn wide_context(digits: usize) -> Context<Wide> {
    let mut context = Context::<Wide>::default();
    let _ = context.set_precision(digits);
    let _ = context.set_max_exponent(6144);
    let _ = context.set_min_exponent(-6143);
    context
}

fn wide(value: Dec, operation: impl FnOnce(&mut Context<Wide>, &mut Wide)) -> Dec {
    let mut context = wide_context(34);
    let mut wide = context
        .parse(value.to_string())
        .unwrap_or_else(|_| Wide::nan());
    operation(&mut context, &mut wide);
    Context::<Dec>::default().from_decimal(&wide)
}

fn sqrt(number: Number) -> StoreResult<Bson> {
    let negative = match number {
        Number::Decimal(value) => value.is_negative() && !value.is_zero() && !value.is_nan(),
        other => other.as_f64() < 0.0,
    };
    if negative {
        return Err(CommandError::new(
            28714,
            "$sqrt's argument must be greater than or equal to 0",
        ));
    }
    Ok(match number {
        Number::Decimal(value) => decimal::to_bson(wide(value, |context, x| {
            let mut copy = *x;
            context.sqrt(&mut copy);
            *x = copy;
        })),
        other => Bson::Double(other.as_f64().sqrt()),
    })
}

fn is_positive_decimal(value: Dec) -> bool {
    !value.is_nan() && !value.is_negative() && !value.is_zero()
}

fn logarithm(op: MathOp, number: Number) -> StoreResult<Bson> {
    if let Number::Decimal(value) = number {
        if is_positive_decimal(value) {
            return Ok(decimal::to_bson(wide(value, |context, x| {
                if op == MathOp::Ln {
                    context.ln(x);
                } else {
                    context.log10(x);
                }
            })));
        }
    }
    let value = number.as_f64();
    if !(value > 0.0 || value.is_nan()) {
        let (code, name) = if op == MathOp::Ln {
            (28766, "$ln")
        } else {
            (28761, "$log10")
        };
        return Err(CommandError::new(
            code,
            format!(
                "{name}'s argument must be a positive number, but is {}",
                args::format_g(value)
            ),
        ));
    }
    Ok(Bson::Double(if op == MathOp::Ln {
        value.ln()
    } else {
        value.log10()
    }))
}

fn log(argument: Option<&Bson>, base: Option<&Bson>) -> StoreResult<Option<Bson>> {
    if is_nullish(argument) || is_nullish(base) {
        return Ok(Some(Bson::Null));
    }
    let Some(value) = argument.and_then(Number::of) else {
        return Err(CommandError::new(
            28756,
            format!("$log's argument must be numeric, not {}", type_of(argument)),
        ));
    };
    let Some(base_value) = base.and_then(Number::of) else {
        return Err(CommandError::new(
            28757,
            format!("$log's base must be numeric, not {}", type_of(base)),
        ));
    };
    if matches!(value, Number::Decimal(_)) || matches!(base_value, Number::Decimal(_)) {
        let (x, b) = (
            crate::arith::decimal_operand(value),
            crate::arith::decimal_operand(base_value),
        );
        if is_positive_decimal(x) && is_positive_decimal(b) && b != Dec::from(1) {
            return Ok(Some(decimal::to_bson(decimal_log(x, b))));
        }
    }
    let (x, b) = (value.as_f64(), base_value.as_f64());
    if !(x > 0.0 || x.is_nan()) {
        return Err(CommandError::new(
            28758,
            format!(
                "$log's argument must be a positive number, but is {}",
                args::format_g(x)
            ),
        ));
    }
    if !((b > 0.0 && b != 1.0) || b.is_nan()) {
        return Err(CommandError::new(
            28759,
            format!(
                "$log's base must be a positive number not equal to 1, but is {}",
                args::format_g(b)
            ),
        ));
    }
    Ok(Some(Bson::Double(x.ln() / b.ln())))
}

/// `ln(x) / ln(base)`, each logarithm rounded to 34 digits and then divided, as mongod's
/// `Decimal128::logarithm(base)` computes it.
fn decimal_log(x: Dec, base: Dec) -> Dec {
    let ln = |value: Dec| wide(value, |context, wide| context.ln(wide));
    Context::<Dec>::default().div(ln(x), ln(base))
}

fn pow(base: Option<&Bson>, exponent: Option<&Bson>) -> StoreResult<Option<Bson>> {
    if is_nullish(base) || is_nullish(exponent) {
        return Ok(Some(Bson::Null));
    }
    let Some(b) = base.and_then(Number::of) else {
        return Err(CommandError::new(
            28762,
            format!("$pow's base must be numeric, not {}", type_of(base)),
        ));
    };
    let Some(e) = exponent.and_then(Number::of) else {
        return Err(CommandError::new(
            28763,
            format!("$pow's exponent must be numeric, not {}", type_of(exponent)),
        ));
    };
    let zero_to_negative = || {
        CommandError::new(
            28764,
            "$pow cannot take a base of 0 and a negative exponent",
        )
    };
    if matches!(b, Number::Decimal(_)) || matches!(e, Number::Decimal(_)) {
        let (b, e) = (
            crate::arith::decimal_operand(b),
            crate::arith::decimal_operand(e),
        );
        if b.is_zero() && e.is_negative() && !e.is_zero() {
            return Err(zero_to_negative());
        }
        return Ok(Some(decimal::to_bson(wide(b, |context, x| {
            context.pow(x, &{
                let mut exponent_context = Context::<Wide>::default();
                exponent_context
                    .parse(e.to_string())
                    .unwrap_or_else(|_| Wide::nan())
            })
        }))));
    }
    if b.as_f64() == 0.0 && e.as_f64() < 0.0 {
        return Err(zero_to_negative());
    }
    let (Number::Int(base_int), Number::Int(exponent_int)) = (b, e) else {
        return Ok(Some(Bson::Double(b.as_f64().powf(e.as_f64()))));
    };
    let long = matches!(base, Some(Bson::Int64(_))) || matches!(exponent, Some(Bson::Int64(_)));
    Ok(Some(match integer_pow(base_int, exponent_int) {
        Some(result) if long => Bson::Int64(result),
        Some(result) => i32::try_from(result).map_or(Bson::Int64(result), Bson::Int32),
        // Negative exponents and results past a long are doubles.
        #[allow(clippy::cast_precision_loss)]
        None => Bson::Double((base_int as f64).powf(exponent_int as f64)),
    }))
}

/// An exact integer power, when it is an integer that fits a long.
fn integer_pow(base: i64, exponent: i64) -> Option<i64> {
    match base {
        0 => (exponent >= 0).then_some(i64::from(exponent == 0)),
        1 => Some(1),
        -1 => Some(if exponent % 2 == 0 { 1 } else { -1 }),
        _ => base.checked_pow(u32::try_from(exponent).ok()?),
    }
}

/// `$round` and `$trunc`: to `place` decimal digits (-20 to 100), half to even or toward zero.
fn round(
    op: MathOp,
    name: &str,
    value: Option<&Bson>,
    place: Option<&Bson>,
) -> StoreResult<Option<Bson>> {
    if is_nullish(value) {
        return Ok(Some(Bson::Null));
    }
    let Some(number) = value.and_then(Number::of) else {
        return Err(CommandError::new(
            51081,
            format!("{name} only supports numeric types, not {}", type_of(value)),
        ));
    };
    let mut digits = 0i64;
    if let Some(place) = place {
        if is_nullish(Some(place)) {
            return Ok(Some(Bson::Null));
        }
        if !crate::arith::is_number(place) {
            return Err(CommandError::new(
                16003,
                format!("can't convert from BSON type {} to long", type_name(place)),
            ));
        }
        let Some(integral) = super::strings::integral32(Some(place)) else {
            return Err(CommandError::new(
                51082,
                format!("precision argument to  {name} must be a integral value"),
            ));
        };
        digits = i64::from(integral);
        if !(-20..=100).contains(&digits) {
            return Err(CommandError::new(
                51083,
                format!(
                    "cannot apply {name} with precision value {digits} value must be in [-20, 100]"
                ),
            ));
        }
    }
    let rounding = if op == MathOp::Round {
        Rounding::HalfEven
    } else {
        Rounding::Down
    };
    let quantum = Context::<Dec>::default()
        .parse(format!("1E{}", -digits))
        .unwrap_or(Dec::NAN);
    round_number(name, number, value, digits, quantum, rounding).map(Some)
}

fn round_number(
    name: &str,
    number: Number,
    original: Option<&Bson>,
    digits: i64,
    quantum: Dec,
    rounding: Rounding,
) -> StoreResult<Bson> {
    match number {
        Number::Decimal(value) if value.is_infinite() => Ok(decimal::to_bson(value)),
        Number::Decimal(value) => Ok(decimal::to_bson(quantize(value, quantum, rounding))),
        Number::Float(value) => {
            // mongod rounds through the double's 34-digit decimal expansion.
            let exact = Context::<Dec>::default()
                .parse(format!("{value:.33e}"))
                .unwrap_or(Dec::NAN);
            if value.is_infinite() {
                return Ok(Bson::Double(value));
            }
            Ok(Bson::Double(decimal::to_f64(quantize(
                exact, quantum, rounding,
            ))))
        }
        Number::Int(value) => {
            if digits >= 0 {
                return Ok(original.cloned().unwrap_or(Bson::Null));
            }
            let rounded = quantize(decimal::from_i64(value), quantum, rounding);
            let Some(result) = decimal::exact_i64(rounded) else {
                return Err(CommandError::new(
                    51080,
                    format!(
                        "invalid conversion from Decimal128 result in {name} resulting from \
                         arguments: [{value}, {digits}]"
                    ),
                ));
            };
            Ok(match original {
                Some(Bson::Int32(_)) => {
                    i32::try_from(result).map_or(Bson::Int64(result), Bson::Int32)
                }
                _ => Bson::Int64(result),
            })
        }
    }
}

/// π/180 and 180/π at decimal128's 34 digits, as mongod multiplies decimals by them.
const PI_OVER_180: &str = "0.01745329251994329576923690768488613";
const ONE_EIGHTY_OVER_PI: &str = "57.29577951308232087679815481410517";

fn angle(op: MathOp, number: Number) -> Bson {
    let to_radians = op == MathOp::DegreesToRadians;
    match number {
        Number::Decimal(value) => {
            let mut context = Context::<Dec>::default();
            let factor = context
                .parse(if to_radians {
                    PI_OVER_180
                } else {
                    ONE_EIGHTY_OVER_PI
                })
                .unwrap_or(Dec::NAN);
            decimal::to_bson(context.mul(value, factor))
        }
        other => Bson::Double(if to_radians {
            other.as_f64().to_radians()
        } else {
            other.as_f64().to_degrees()
        }),
    }
}

/// A trigonometric function's domain: bounds and whether they are included.
fn domain(op: MathOp) -> Option<(f64, f64, bool)> {
    match op {
        MathOp::Sin | MathOp::Cos | MathOp::Tan => Some((f64::NEG_INFINITY, f64::INFINITY, false)),
        MathOp::Asin | MathOp::Acos | MathOp::Atanh => Some((-1.0, 1.0, true)),
        MathOp::Acosh => Some((1.0, f64::INFINITY, true)),
        _ => None,
    }
}

fn apply_trig(op: MathOp, x: f64) -> f64 {
    match op {
        MathOp::Sin => x.sin(),
        MathOp::Cos => x.cos(),
        MathOp::Tan => x.tan(),
        MathOp::Asin => x.asin(),
        MathOp::Acos => x.acos(),
        MathOp::Atan => x.atan(),
        MathOp::Sinh => x.sinh(),
        MathOp::Cosh => x.cosh(),
        MathOp::Tanh => x.tanh(),
        MathOp::Asinh => x.asinh(),
        MathOp::Acosh => x.acosh(),
        _ => x.atanh(),
    }
}

/// A double result as a decimal, by its shortest exact-round-trip digits.
fn decimal_of(value: f64) -> Bson {
    if value.is_nan() {
        return decimal::to_bson(Dec::NAN);
    }
    let text = if value.is_infinite() {
        if value > 0.0 {
            "Infinity".to_owned()
        } else {
            "-Infinity".to_owned()
        }
    } else {
        format!("{value:e}")
    };
    decimal::to_bson(Context::<Dec>::default().parse(text).unwrap_or(Dec::NAN))
}

fn trigonometric(op: MathOp, name: &str, number: Number) -> StoreResult<Bson> {
    let is_decimal = matches!(number, Number::Decimal(_));
    let x = number.as_f64();
    if x.is_nan() {
        return Ok(match number {
            Number::Decimal(value) => decimal::to_bson(value),
            _ => Bson::Double(x),
        });
    }
    if let Some((low, high, inclusive)) = domain(op) {
        let inside = if inclusive {
            x >= low && x <= high
        } else {
            x > low && x < high
        };
        if !inside {
            let shown = match number {
                Number::Decimal(value) => value.to_string(),
                _ => args::format_g(x),
            };
            let (left, right) = if inclusive { ('[', ']') } else { ('(', ')') };
            return Err(CommandError::new(
                OUT_OF_DOMAIN,
                format!(
                    "cannot apply {name} to {shown}, value must in {left}{},{}{right}",
                    args::format_g(low),
                    args::format_g(high)
                ),
            ));
        }
    }
    let result = apply_trig(op, x);
    Ok(if is_decimal {
        decimal_of(result)
    } else {
        Bson::Double(result)
    })
}

fn atan2(y: Option<&Bson>, x: Option<&Bson>) -> StoreResult<Option<Bson>> {
    if is_nullish(y) {
        return Ok(Some(Bson::Null));
    }
    let Some(y_number) = y.and_then(Number::of) else {
        return Err(CommandError::new(
            51044,
            format!("$atan2 only supports numeric types, not {}", type_of(y)),
        ));
    };
    if is_nullish(x) {
        return Ok(Some(Bson::Null));
    }
    let Some(x_number) = x.and_then(Number::of) else {
        return Err(CommandError::new(
            51045,
            format!("$atan2 only supports numeric types, not {}", type_of(x)),
        ));
    };
    let result = y_number.as_f64().atan2(x_number.as_f64());
    let is_decimal =
        matches!(y_number, Number::Decimal(_)) || matches!(x_number, Number::Decimal(_));
    Ok(Some(if is_decimal {
        decimal_of(result)
    } else {
        Bson::Double(result)
    }))
}
