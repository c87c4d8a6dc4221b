//! `$setWindowFields` window functions: each `output` field's `{<function>: <args>, window}`,
//! parsed with mongod's checks (FailedToParse for most, mongod's numbered codes where it has
//! them).

use bson::{Bson, Document};

use super::accumulator::{Accumulator, Kind, constant_of};
use super::window_bounds::{self, Bounds, TimeUnit};
use crate::code;
use crate::decimal::{self, DecimalOp};
use crate::errors::{CommandError, StoreResult, format_value, type_name};
use crate::expr::{Defined, Expr};
use crate::path::split_path;
use crate::sort::SortSpec;
use crate::value_order::Number;

/// A parsed window function.
#[derive(Debug, Clone)]
pub(crate) enum WindowFn {
    /// An accumulator over each document's frame.
    Accumulate(Accumulator, Bounds),
    /// The input at the frame's first (`last: false`) or last document.
    Endpoint {
        last: bool,
        input: Expr,
        bounds: Bounds,
    },
    /// `$shift`: `output` at the document `by` positions away, else `default`.
    Shift {
        output: Expr,
        by: i64,
        default: Bson,
    },
    /// `$derivative` between the frame's ends.
    Derivative {
        input: Expr,
        unit_ms: Option<i64>,
        bounds: Bounds,
    },
    /// `$linearFill`.
    LinearFill(Expr),
}

/// The window functions mongod 8.0 has.
const FUNCTIONS: &[&str] = &[
    "$addToSet",
    "$avg",
    "$bottom",
    "$bottomN",
    "$count",
    "$covariancePop",
    "$covarianceSamp",
    "$denseRank",
    "$derivative",
    "$documentNumber",
    "$expMovingAvg",
    "$first",
    "$firstN",
    "$integral",
    "$last",
    "$lastN",
    "$linearFill",
    "$locf",
    "$max",
    "$maxN",
    "$median",
    "$min",
    "$minN",
    "$percentile",
    "$push",
    "$rank",
    "$shift",
    "$stdDevPop",
    "$stdDevSamp",
    "$sum",
    "$top",
    "$topN",
];

fn failed(message: impl Into<String>) -> CommandError {
    CommandError::failed_to_parse(message)
}

/// Parses one output field's value. `sort_by` is the stage's `sortBy`.
pub(crate) fn parse(spec: &Document, sort_by: Option<&SortSpec>) -> StoreResult<WindowFn> {
    let Some(name) = spec.keys().find(|key| key.starts_with('$')) else {
        return Err(failed(match spec.keys().next() {
            Some(first) => format!("Expected a $-prefixed window function, {first}"),
            None => "Expected a $-prefixed window function".to_owned(),
        }));
    };
    if !FUNCTIONS.contains(&name.as_str()) {
        return Err(failed(format!("Unrecognized window function, {name}")));
    }
    let single_key = sort_by.and_then(|sort| match sort.keys() {
        [(path, ascending)] => Some((path.clone(), *ascending)),
        _ => None,
    });
    match name.as_str() {
        "$count" => parse_count(spec, sort_by),
        "$first" | "$last" => parse_endpoint(name, spec, sort_by),
        "$firstN" | "$lastN" | "$minN" | "$maxN" | "$top" | "$bottom" | "$topN" | "$bottomN"
        | "$median" | "$percentile" => parse_n(name, spec, sort_by),
        "$rank" | "$denseRank" | "$documentNumber" => parse_rank(name, spec, single_key),
        "$locf" | "$linearFill" => parse_fill(name, spec, single_key),
        "$expMovingAvg" => parse_exp_moving_avg(spec, sort_by),
        "$shift" => parse_shift(spec, sort_by),
        "$derivative" | "$integral" => parse_with_unit(name, spec, sort_by),
        _ => parse_removable(spec, sort_by),
    }
}

/// The accumulator-style functions: `{$sum: <expr>, window}`.
fn parse_removable(spec: &Document, sort_by: Option<&SortSpec>) -> StoreResult<WindowFn> {
    let mut bounds = Bounds::WHOLE;
    let mut function = None;
    for (key, value) in spec {
        if key == "window" {
            bounds = window_bounds::parse(value, sort_by)?;
        } else if FUNCTIONS.contains(&key.as_str()) {
            if function.is_some() {
                return Err(failed(
                    "Cannot specify two functions in window function spec",
                ));
            }
            function = Some((key.as_str(), Expr::parse(value)?));
        } else {
            return Err(failed(format!(
                "Window function found an unknown argument: {key}"
            )));
        }
    }
    let Some((name, input)) = function else {
        return Err(failed("Must specify a window function in output field"));
    };
    let kind = match name {
        "$sum" => Kind::Sum,
        "$avg" => Kind::Avg,
        "$min" => Kind::Min,
        "$max" => Kind::Max,
        "$push" => Kind::Push,
        "$addToSet" => Kind::AddToSet,
        "$stdDevPop" => Kind::StdDevPop,
        "$stdDevSamp" => Kind::StdDevSamp,
        "$covariancePop" => Kind::CovariancePop,
        "$covarianceSamp" => Kind::CovarianceSamp,
        other => return Err(failed(format!("Unrecognized window function, {other}"))),
    };
    Ok(WindowFn::Accumulate(
        Accumulator::simple(kind, input),
        bounds,
    ))
}

fn parse_count(spec: &Document, sort_by: Option<&SortSpec>) -> StoreResult<WindowFn> {
    let mut bounds = Bounds::WHOLE;
    for (key, value) in spec {
        if key == "window" {
            bounds = window_bounds::parse(value, sort_by)?;
        } else if key == "$count" {
            if !matches!(value, Bson::Document(empty) if empty.is_empty()) {
                return Err(failed("$count only accepts an empty object as input"));
            }
        } else if FUNCTIONS.contains(&key.as_str()) {
            return Err(failed(
                "Cannot specify multiple functions in window function spec",
            ));
        } else {
            return Err(failed(format!(
                "Window function found an unknown argument: {key}"
            )));
        }
    }
    let one = Expr::Literal(Bson::Int32(1));
    Ok(WindowFn::Accumulate(
        Accumulator::simple(Kind::Sum, one),
        bounds,
    ))
}

fn parse_endpoint(
    name: &str,
    spec: &Document,
    sort_by: Option<&SortSpec>,
) -> StoreResult<WindowFn> {
    let mut bounds = Bounds::WHOLE;
    let mut input = None;
    for (key, value) in spec {
        if key == "window" {
            bounds = window_bounds::parse(value, sort_by)?;
        } else if key == name {
            input = Some(Expr::parse(value)?);
        } else {
            return Err(failed(format!("{name} got unexpected argument: {key}")));
        }
    }
    Ok(WindowFn::Endpoint {
        last: name == "$last",
        input: input.unwrap_or(Expr::Absent),
        bounds,
    })
}

/// The `n` functions and the quantiles: the accumulator's own specification beside `window`.
fn parse_n(name: &str, spec: &Document, sort_by: Option<&SortSpec>) -> StoreResult<WindowFn> {
    let defined = Defined::TOP;
    let mut bounds = Bounds::WHOLE;
    let mut accumulator = None;
    for (key, value) in spec {
        if key == name {
            accumulator = Some(match name {
                "$median" | "$percentile" => super::acc_percentile::parse(name, value, &defined)?,
                "$firstN" | "$lastN" | "$minN" | "$maxN" => {
                    super::acc_n::parse_pick(name, value, &defined)?
                }
                _ => super::acc_n::parse_top(name, value, &defined)?,
            });
        } else if key == "window" {
            bounds = window_bounds::parse(value, sort_by)?;
        } else {
            return Err(failed(format!("{name} got unexpected argument: {key}")));
        }
    }
    let accumulator = accumulator.ok_or_else(|| {
        CommandError::new(
            code::QUANTILE_WINDOW_INCOMPLETE,
            format!("Missing or incomplete accumulator specification for {name}"),
        )
    })?;
    Ok(WindowFn::Accumulate(accumulator, bounds))
}

fn parse_rank(
    name: &str,
    spec: &Document,
    single_key: Option<(Vec<String>, bool)>,
) -> StoreResult<WindowFn> {
    if spec.len() != 1 {
        return Err(CommandError::new(
            code::RANK_EXTRA_ARGUMENTS,
            "Rank style window functions take no other arguments",
        ));
    }
    if !matches!(spec.get(name), Some(Bson::Document(empty)) if empty.is_empty()) {
        return Err(CommandError::new(
            code::RANK_NOT_EMPTY_OBJECT,
            format!("{name} must be specified with '{{}}' as the value"),
        ));
    }
    let Some((path, ascending)) = single_key else {
        return Err(CommandError::new(
            code::RANK_SORT_BY,
            format!(
                "{name} must be specified with a top level sortBy expression with exactly one \
                 element"
            ),
        ));
    };
    let kind = match name {
        "$rank" => Kind::Rank,
        "$denseRank" => Kind::DenseRank,
        _ => Kind::DocumentNumber,
    };
    let mut accumulator = Accumulator::simple(kind, Expr::Field(path));
    accumulator.ascending = ascending;
    Ok(WindowFn::Accumulate(accumulator, Bounds::RUNNING))
}

/// `$locf` and `$linearFill`: an input expression, no window.
fn parse_fill(
    name: &str,
    spec: &Document,
    single_key: Option<(Vec<String>, bool)>,
) -> StoreResult<WindowFn> {
    let mut input = None;
    let mut window = false;
    for (key, value) in spec {
        if key == "window" {
            window = true;
        } else if FUNCTIONS.contains(&key.as_str()) {
            if input.is_some() {
                return Err(failed(
                    "Cannot specify two functions in window function spec",
                ));
            }
            input = Some(Expr::parse(value)?);
        } else {
            return Err(failed(format!(
                "Window function found an unknown argument: {key}"
            )));
        }
    }
    let input = input.ok_or_else(|| failed("Must specify a window function in output field"))?;
    if window {
        return Err(failed(format!("'window' field is not allowed in {name}")));
    }
    if name == "$locf" {
        return Ok(WindowFn::Accumulate(
            Accumulator::simple(Kind::Locf, input),
            Bounds::RUNNING,
        ));
    }
    if single_key.is_none() {
        return Err(CommandError::new(
            code::LINEAR_FILL_SORT_BY,
            "$linearFill must be specified with a top level sortBy expression with exactly one \
             element",
        ));
    }
    Ok(WindowFn::LinearFill(input))
}

fn parse_exp_moving_avg(spec: &Document, sort_by: Option<&SortSpec>) -> StoreResult<WindowFn> {
    let (Some(Bson::Document(arguments)), 1) = (spec.get("$expMovingAvg"), spec.len()) else {
        return Err(failed(
            "$expMovingAvg must have exactly one argument that is an object",
        ));
    };
    let shape = "$expMovingAvg sub object must have exactly two fields: An 'input' field, and \
                 either an 'N' field or an 'alpha' field";
    let Some(input) = arguments.get("input").filter(|_| arguments.len() == 2) else {
        return Err(failed(shape));
    };
    if sort_by.is_none() {
        return Err(failed("$expMovingAvg requires an explicit 'sortBy'"));
    }
    let input = Expr::parse(input)?;
    let alpha = if let Some(n) = arguments.get("N") {
        let Some(number) = Number::of(n) else {
            return Err(failed(format!(
                "'N' field must be an integer, but found type {}",
                type_name(n)
            )));
        };
        let float = number.as_f64();
        if float.fract() != 0.0 {
            return Err(failed(format!(
                "'N' field must be an integer, but found  N: {}. To use a non-integer, use the \
                 'alpha' argument instead",
                format_value(n)
            )));
        }
        #[allow(clippy::cast_possible_truncation)]
        let n = float as i64;
        if n <= 0 {
            return Err(failed(format!("'N' must be greater than zero. Got {n}")));
        }
        let denominator = decimal::from_i64(n.saturating_add(1));
        decimal::apply(DecimalOp::Divide, decimal::from_i64(2), denominator)
    } else if let Some(alpha) = arguments.get("alpha") {
        let Some(number) = Number::of(alpha) else {
            return Err(failed("'alpha' must be a number"));
        };
        let value = crate::arith::decimal_operand(number);
        let zero = decimal::from_i64(0);
        let one = decimal::from_i64(1);
        let inside = decimal::compare(value, zero).is_gt() && decimal::compare(value, one).is_lt();
        if !inside {
            return Err(failed(format!(
                "'alpha' must be between 0 and 1 (exclusive), found alpha: {}",
                format_value(alpha)
            )));
        }
        value
    } else {
        return Err(failed(format!(
            "Got unrecognized field in $expMovingAvg{shape}"
        )));
    };
    let mut accumulator = Accumulator::simple(Kind::ExpMovingAvg, input);
    accumulator.alpha = Some(alpha);
    Ok(WindowFn::Accumulate(accumulator, Bounds::RUNNING))
}

fn parse_shift(spec: &Document, sort_by: Option<&SortSpec>) -> StoreResult<WindowFn> {
    let mut shift = None;
    for (key, value) in spec {
        if key == "window" {
            return Err(failed("$shift does not accept a 'window' field"));
        } else if FUNCTIONS.contains(&key.as_str()) {
            if shift.is_some() {
                return Err(failed(
                    "Cannot specify multiple functions in window function spec",
                ));
            }
            let Bson::Document(arguments) = value else {
                return Err(failed("Argument to $shift must be an object"));
            };
            shift = Some(parse_shift_arguments(key, arguments)?);
        } else {
            return Err(failed(format!(
                "Window function found an unknown argument: {key}"
            )));
        }
    }
    let shift = shift.ok_or_else(|| failed("Must specify a window function in output field"))?;
    if sort_by.is_none() {
        return Err(failed("'$shift' requires a sortBy"));
    }
    Ok(shift)
}

fn parse_shift_arguments(name: &str, arguments: &Document) -> StoreResult<WindowFn> {
    let (mut output, mut by, mut default) = (None, None, Bson::Null);
    for (key, value) in arguments {
        match key.as_str() {
            "output" => output = Some(Expr::parse(value)?),
            "default" => {
                default = constant_of(&Expr::parse(value)?).ok_or_else(|| {
                    failed("'$shift:default' expression must yield a constant value.")
                })?;
            }
            "by" => {
                let whole = Number::of(value).map(|n| n.as_f64()).filter(|n| {
                    n.fract() == 0.0 && *n >= f64::from(i32::MIN) && *n <= f64::from(i32::MAX)
                });
                let Some(whole) = whole else {
                    return Err(failed(format!(
                        "'$shift:by' field must be an integer, but found  by: {}",
                        format_value(value)
                    )));
                };
                #[allow(clippy::cast_possible_truncation)]
                let whole = whole as i64;
                by = Some(whole);
            }
            _ => return Err(failed(format!("Unknown argument in {name}"))),
        }
    }
    let output =
        output.ok_or_else(|| failed(format!("{name} requires an 'output' expression.")))?;
    let by = by.ok_or_else(|| failed(format!("{name} requires 'by' as an integer value.")))?;
    Ok(WindowFn::Shift {
        output,
        by,
        default,
    })
}

/// `$derivative` and `$integral`: `{<name>: {input, unit?}, window}` over a one-field sortBy.
fn parse_with_unit(
    name: &str,
    spec: &Document,
    sort_by: Option<&SortSpec>,
) -> StoreResult<WindowFn> {
    let Some(sort) = sort_by else {
        return Err(failed(format!("{name} requires a sortBy")));
    };
    let [(sort_path, _)] = sort.keys() else {
        return Err(failed(format!("{name} requires a non-compound sortBy")));
    };
    let mut bounds = None;
    let mut arguments = None;
    for (key, value) in spec {
        if key == "window" {
            if bounds.is_some() && name == "$integral" {
                return Err(failed("There can be only one 'window' field for $integral"));
            }
            bounds = Some(window_bounds::parse(value, sort_by)?);
        } else if key == name {
            arguments = Some(value);
        } else {
            return Err(failed(format!("{name} got unexpected argument: {key}")));
        }
    }
    let arguments = match arguments {
        Some(Bson::Document(arguments)) => arguments,
        other => {
            let shown = other.map_or_else(String::new, format_value);
            let kind = other.map_or("missing", type_name);
            return Err(failed(format!(
                "{name} expects an object, but got a {kind}: {name}: {shown}"
            )));
        }
    };
    let (mut input, mut unit) = (None, None);
    for (key, value) in arguments {
        match key.as_str() {
            "input" => input = Some(Expr::parse(value)?),
            "unit" => unit = Some(parse_unit(value)?),
            _ => return Err(failed(format!("{name} got unexpected argument: {key}"))),
        }
    }
    let input = input.ok_or_else(|| failed(format!("{name} requires an 'input' expression")))?;
    let unit_ms = unit.and_then(TimeUnit::millis);
    if name == "$derivative" {
        let bounds = bounds.ok_or_else(|| failed("$derivative requires explicit window bounds"))?;
        return Ok(WindowFn::Derivative {
            input,
            unit_ms,
            bounds,
        });
    }
    // `$integral` adds up `[sortBy value, input]` points.
    let point = Expr::Array(vec![Expr::Field(split_path(&sort_path.join("."))), input]);
    let mut accumulator = Accumulator::simple(Kind::Integral, point);
    accumulator.unit_ms = unit_ms;
    Ok(WindowFn::Accumulate(
        accumulator,
        bounds.unwrap_or(Bounds::WHOLE),
    ))
}

/// A `unit` of `$derivative`/`$integral`: a week or less.
fn parse_unit(value: &Bson) -> StoreResult<TimeUnit> {
    let Bson::String(text) = value else {
        return Err(failed(format!(
            "unit' must be a string, but got {}",
            type_name(value)
        )));
    };
    let unit = TimeUnit::parse(text)?;
    if unit.millis().is_none() {
        return Err(CommandError::new(
            code::WINDOW_UNIT_TOO_LARGE,
            "unit must be 'week' or smaller",
        ));
    }
    Ok(unit)
}
