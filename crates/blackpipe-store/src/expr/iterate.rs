//! `$map`, `$filter` and `$reduce`: the operators that evaluate an expression once per array
//! element with the element bound to a variable (`as`, `$$this` by default; `$reduce` binds
//! `$$this` and `$$value`).

use bson::{Bson, Document};

use super::vars::{Defined, Scope, check_name_for_write};
use super::{EMPTY_DOCUMENT_BYTES, Expr, grown_size, is_nullish, is_truthy, type_of};
use crate::code;
use crate::errors::{CommandError, StoreResult, format_value, type_name};
use crate::value_order::{Number, decimal_digits};

/// mongod's maximum BSON nesting depth (`BSONDepth::kDefaultMaxAllowableDepth`); a `$reduce`
/// accumulator may nest twice as deep before it is refused, as in mongod.
const MAX_BSON_DEPTH: usize = 200;

/// A parsed `$map`, `$filter` or `$reduce`.
#[derive(Debug, Clone)]
pub(crate) enum Iterate {
    Map {
        input: Expr,
        name: [String; 1],
        body: Expr,
    },
    Filter {
        input: Expr,
        name: [String; 1],
        cond: Expr,
        limit: Option<Expr>,
    },
    Reduce {
        input: Expr,
        initial: Expr,
        body: Expr,
    },
}

/// The names `$reduce` binds, in frame order.
fn reduce_names() -> [String; 2] {
    ["this".to_owned(), "value".to_owned()]
}

/// The arguments of `spec` by name, refusing unknown ones with `unknown`'s code and message.
fn arguments<'a, const N: usize>(
    spec: &'a Document,
    names: [&str; N],
    unknown: impl Fn(&str) -> CommandError,
) -> StoreResult<[Option<&'a Bson>; N]> {
    let mut found = [None; N];
    for (key, value) in spec {
        let slot = names
            .iter()
            .position(|name| name == key)
            .ok_or_else(|| unknown(key))?;
        found[slot] = Some(value);
    }
    Ok(found)
}

/// `as`: a string naming the variable (a non-string reads as an empty name, as in mongod).
fn variable_name(value: Option<&Bson>) -> StoreResult<[String; 1]> {
    let name = match value {
        None => "this".to_owned(),
        Some(Bson::String(name)) => name.clone(),
        Some(_) => String::new(),
    };
    check_name_for_write(&name)?;
    Ok([name])
}

impl Iterate {
    pub(super) fn parse_map(argument: &Bson, defined: &Defined) -> StoreResult<Iterate> {
        let Bson::Document(spec) = argument else {
            return Err(CommandError::new(
                code::MAP_NOT_OBJECT,
                "$map only supports an object as its argument",
            ));
        };
        let [input, name, body] = arguments(spec, ["input", "as", "in"], |key| {
            CommandError::new(
                code::MAP_UNKNOWN_PARAMETER,
                format!("Unrecognized parameter to $map: {key}"),
            )
        })?;
        let input = input.ok_or_else(|| {
            CommandError::new(code::MAP_WITHOUT_INPUT, "Missing 'input' parameter to $map")
        })?;
        let body = body.ok_or_else(|| {
            CommandError::new(code::MAP_WITHOUT_IN, "Missing 'in' parameter to $map")
        })?;
        let input = Expr::parse_in(input, defined)?;
        let name = variable_name(name)?;
        let body = Expr::parse_in(body, &defined.with(&name))?;
        Ok(Iterate::Map { input, name, body })
    }

    pub(super) fn parse_filter(argument: &Bson, defined: &Defined) -> StoreResult<Iterate> {
        let Bson::Document(spec) = argument else {
            return Err(CommandError::new(
                code::FILTER_NOT_OBJECT,
                "$filter only supports an object as its argument",
            ));
        };
        let [input, name, cond, limit] =
            arguments(spec, ["input", "as", "cond", "limit"], |key| {
                CommandError::new(
                    code::FILTER_UNKNOWN_PARAMETER,
                    format!("Unrecognized parameter to $filter: {key}"),
                )
            })?;
        let input = input.ok_or_else(|| {
            CommandError::new(
                code::FILTER_WITHOUT_INPUT,
                "Missing 'input' parameter to $filter",
            )
        })?;
        let cond = cond.ok_or_else(|| {
            CommandError::new(
                code::FILTER_WITHOUT_COND,
                "Missing 'cond' parameter to $filter",
            )
        })?;
        let input = Expr::parse_in(input, defined)?;
        let name = variable_name(name)?;
        let cond = Expr::parse_in(cond, &defined.with(&name))?;
        let limit = limit
            .map(|limit| Expr::parse_in(limit, defined))
            .transpose()?;
        Ok(Iterate::Filter {
            input,
            name,
            cond,
            limit,
        })
    }

    pub(super) fn parse_reduce(argument: &Bson, defined: &Defined) -> StoreResult<Iterate> {
        let Bson::Document(spec) = argument else {
            return Err(CommandError::new(
                code::REDUCE_NOT_OBJECT,
                format!(
                    "$reduce requires an object as an argument, found: {}",
                    type_name(argument)
                ),
            ));
        };
        let names = reduce_names();
        let inner = defined.with(&names);
        let (mut input, mut initial, mut body) = (None, None, None);
        // mongod parses each argument as it meets it, so an unknown one after a bad expression
        // is not what it reports.
        for (key, value) in spec {
            match key.as_str() {
                "input" => input = Some(Expr::parse_in(value, defined)?),
                "initialValue" => initial = Some(Expr::parse_in(value, defined)?),
                "in" => body = Some(Expr::parse_in(value, &inner)?),
                _ => {
                    return Err(CommandError::new(
                        code::REDUCE_UNKNOWN_ARGUMENT,
                        format!("$reduce found an unknown argument: {key}"),
                    ));
                }
            }
        }
        let missing = |code, what: &str| {
            CommandError::new(code, format!("$reduce requires '{what}' to be specified"))
        };
        Ok(Iterate::Reduce {
            input: input.ok_or_else(|| missing(code::REDUCE_WITHOUT_INPUT, "input"))?,
            initial: initial
                .ok_or_else(|| missing(code::REDUCE_WITHOUT_INITIAL_VALUE, "initialValue"))?,
            body: body.ok_or_else(|| missing(code::REDUCE_WITHOUT_IN, "in"))?,
        })
    }

    pub(super) fn evaluate(&self, scope: &Scope) -> StoreResult<Option<Bson>> {
        match self {
            Iterate::Map { input, name, body } => {
                let Some(items) = input_array(input, scope, "$map")? else {
                    return Ok(Some(Bson::Null));
                };
                map(items, name, body, scope)
            }
            Iterate::Filter {
                input,
                name,
                cond,
                limit,
            } => {
                let Some(items) = input_array(input, scope, "$filter")? else {
                    return Ok(Some(Bson::Null));
                };
                filter(items, name, cond, limit.as_ref(), scope)
            }
            Iterate::Reduce {
                input,
                initial,
                body,
            } => reduce(input, initial, body, scope),
        }
    }
}

/// The input array of `$map` or `$filter`; `None` for null or missing.
fn input_array(input: &Expr, scope: &Scope, operator: &str) -> StoreResult<Option<Vec<Bson>>> {
    match input.eval(scope)? {
        value if is_nullish(value.as_ref()) => Ok(None),
        Some(Bson::Array(items)) => Ok(Some(items)),
        other => {
            let code = if operator == "$map" {
                code::MAP_INPUT_NOT_ARRAY
            } else {
                code::FILTER_INPUT_NOT_ARRAY
            };
            Err(CommandError::new(
                code,
                format!(
                    "input to {operator} must be an array not {}",
                    type_of(other.as_ref())
                ),
            ))
        }
    }
}

fn map(items: Vec<Bson>, name: &[String], body: &Expr, scope: &Scope) -> StoreResult<Option<Bson>> {
    let mut out = Vec::with_capacity(items.len());
    let mut size = EMPTY_DOCUMENT_BYTES;
    for item in items {
        scope.charge(1)?;
        let values = [Some(item)];
        let frame = scope.frame(name, &values);
        // A missing result cannot be stored in an array: it becomes null, as in mongod.
        let value = body.eval(&scope.enter(&frame))?.unwrap_or(Bson::Null);
        size = grown_size(size, decimal_digits(out.len()), &value)?;
        out.push(value);
    }
    Ok(Some(Bson::Array(out)))
}

fn filter(
    items: Vec<Bson>,
    name: &[String],
    cond: &Expr,
    limit: Option<&Expr>,
    scope: &Scope,
) -> StoreResult<Option<Bson>> {
    if items.is_empty() {
        return Ok(Some(Bson::Array(items)));
    }
    let mut remaining = match limit {
        Some(limit) => filter_limit(limit.eval(scope)?)?,
        None => None,
    };
    let mut out = Vec::new();
    let mut values = [None];
    for item in items {
        scope.charge(1)?;
        values[0] = Some(item);
        let keep = {
            let frame = scope.frame(name, &values);
            cond.eval(&scope.enter(&frame))?
                .as_ref()
                .is_some_and(is_truthy)
        };
        if keep {
            out.extend(values[0].take());
            if let Some(left) = remaining.as_mut() {
                *left -= 1;
                if *left == 0 {
                    break;
                }
            }
        }
    }
    Ok(Some(Bson::Array(out)))
}

/// `$filter`'s `limit`: null or missing for no limit, otherwise a positive 32-bit integer.
fn filter_limit(limit: Option<Bson>) -> StoreResult<Option<i64>> {
    let Some(limit) = limit.filter(|value| !is_nullish(Some(value))) else {
        return Ok(None);
    };
    let Some(count) = int32_of(&limit) else {
        return Err(CommandError::new(
            code::FILTER_LIMIT_NOT_INT32,
            format!(
                "$filter: limit must be represented as a 32-bit integral value: {}",
                format_value(&limit)
            ),
        ));
    };
    if count <= 0 {
        return Err(CommandError::new(
            code::FILTER_LIMIT_NOT_POSITIVE,
            format!(
                "$filter: limit must be greater than 0: {}",
                format_value(&limit)
            ),
        ));
    }
    Ok(Some(i64::from(count)))
}

/// A number with an exact 32-bit integer value (mongod's `Value::integral()`).
pub(super) fn int32_of(value: &Bson) -> Option<i32> {
    Number::of(value)?;
    crate::integer::integral(value).and_then(|number| i32::try_from(number).ok())
}

fn reduce(input: &Expr, initial: &Expr, body: &Expr, scope: &Scope) -> StoreResult<Option<Bson>> {
    let items = match input.eval(scope)? {
        value if is_nullish(value.as_ref()) => return Ok(Some(Bson::Null)),
        Some(Bson::Array(items)) => items,
        other => {
            return Err(CommandError::new(
                code::REDUCE_INPUT_NOT_ARRAY,
                format!(
                    "$reduce requires that 'input' be an array, found: {}",
                    other
                        .as_ref()
                        .map_or_else(|| "MISSING".to_owned(), format_value)
                ),
            ));
        }
    };
    let names = reduce_names();
    let mut values = [None, initial.eval(scope)?];
    for item in items {
        values[0] = Some(item);
        let next = {
            let frame = scope.frame(&names, &values);
            body.eval(&scope.enter(&frame))?
        };
        // Charged by the accumulator's size, so that an accumulator copied and grown in every
        // step (`$concatArrays: ["$$value", [...]]`) counts as the quadratic work it is.
        scope.charge(measure(next.as_ref())?)?;
        values[1] = next;
    }
    let [_, value] = values;
    Ok(value)
}

/// The number of values in an accumulator, refusing one nested deeper than mongod allows
/// (`in: ["$$value"]` nests one level per element) before later steps walk it recursively.
fn measure(value: Option<&Bson>) -> StoreResult<usize> {
    fn count(value: &Bson, depth_left: usize) -> Option<usize> {
        let children: Box<dyn Iterator<Item = &Bson>> = match value {
            Bson::Array(items) => Box::new(items.iter()),
            Bson::Document(document) => Box::new(document.values()),
            _ => return Some(1),
        };
        let mut total = 1usize;
        for child in children {
            let left = depth_left.checked_sub(1)?;
            total = total.saturating_add(count(child, left)?);
        }
        Some(total)
    }
    let Some(value) = value else {
        return Ok(1);
    };
    count(value, 2 * MAX_BSON_DEPTH).ok_or_else(|| {
        CommandError::new(
            code::OVERFLOW,
            "$reduce accumulated value exceeded max allowable BSON depth",
        )
    })
}
