//! Argument parsing shared by the scalar operator families: positional arguments with mongod's
//! arity messages, named arguments into fixed slots, and the number formatting mongod's
//! messages and `$toString` use.
//!
//! Every operand is parsed with the variables `defined` around the operator (`Expr::parse_in`),
//! so that `$$this` and `$let` names work inside the families as anywhere else.

use bson::{Bson, Document};

use super::Expr;
use super::vars::Defined;
use crate::code;
use crate::errors::{CommandError, StoreResult};

/// The operands of a positional operator: the elements of an array, or the one value.
pub(super) fn positional(argument: &Bson, defined: &Defined) -> StoreResult<Vec<Expr>> {
    match argument {
        Bson::Array(items) => items
            .iter()
            .map(|item| Expr::parse_in(item, defined))
            .collect(),
        other => Ok(vec![Expr::parse_in(other, defined)?]),
    }
}

/// Exactly `count` positional operands (16020 otherwise).
pub(super) fn exactly(
    name: &str,
    argument: &Bson,
    count: usize,
    defined: &Defined,
) -> StoreResult<Vec<Expr>> {
    let operands = positional(argument, defined)?;
    if operands.len() != count {
        return Err(CommandError::new(
            code::EXPRESSION_ARITY,
            format!(
                "Expression {name} takes exactly {count} arguments. {} were passed in.",
                operands.len()
            ),
        ));
    }
    Ok(operands)
}

/// Between `min` and `max` positional operands (28667 otherwise).
pub(super) fn between(
    name: &str,
    argument: &Bson,
    min: usize,
    max: usize,
    defined: &Defined,
) -> StoreResult<Vec<Expr>> {
    let operands = positional(argument, defined)?;
    if operands.len() < min || operands.len() > max {
        return Err(CommandError::new(
            code::EXPRESSION_ARITY_RANGE,
            format!(
                "Expression {name} takes at least {min} arguments, and at most {max}, but {} were \
                 passed in.",
                operands.len()
            ),
        ));
    }
    Ok(operands)
}

/// Named arguments in the order of `names`, absent ones as [`Expr::Absent`]; `unknown` makes
/// the error for a name not in the list.
pub(super) fn named(
    spec: &Document,
    names: &[&str],
    defined: &Defined,
    unknown: impl Fn(&str) -> CommandError,
) -> StoreResult<Vec<Expr>> {
    let mut slots: Vec<Expr> = names.iter().map(|_| Expr::Absent).collect();
    for (key, value) in spec {
        let Some(position) = names.iter().position(|name| name == key) else {
            return Err(unknown(key));
        };
        slots[position] = Expr::parse_in(value, defined)?;
    }
    Ok(slots)
}

/// Whether a named argument was left out.
pub(super) fn is_absent(expr: &Expr) -> bool {
    matches!(expr, Expr::Absent)
}

/// A double as C's `printf("%g")` writes it (six significant digits), which is how mongod's
/// string streams, and so `$toString` and many messages, print doubles.
pub(super) fn format_g(value: f64) -> String {
    if value.is_nan() {
        return "nan".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    if value == 0.0 {
        return if value.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    // Rust rounds the mantissa correctly; its exponent tells fixed from scientific notation.
    let scientific = format!("{value:.5e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or_default();
    if (-4..6).contains(&exponent) {
        let decimals = usize::try_from(5 - exponent).unwrap_or_default();
        trim_zeros(&format!("{value:.decimals$}"))
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim_zeros(mantissa), exponent.abs())
    }
}

fn trim_zeros(text: &str) -> String {
    if !text.contains('.') {
        return text.to_owned();
    }
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}
