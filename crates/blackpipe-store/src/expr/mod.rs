//! Aggregation expressions: field paths (`"$a.b"`), `$$ROOT`, literals, object and array
//! literals, and a subset of operators.

mod args;
mod calendar;
mod convert;
mod date_arith;
mod date_format;
mod date_parse;
mod dates;
mod fields;
mod math;
mod ops;
pub(crate) mod rand;
mod regex;
mod strings;
mod tz;

use std::cmp::Ordering;

use bson::{Bson, Document};

use self::ops::{add, array_elem_at, concat, divide_or_mod, extreme, multiply, subtract};
use super::arith::is_number;
use super::errors::{CommandError, StoreResult, check_bson_size, type_name};
use super::path::split_path;
use super::value_order::{Number, compare_values, decimal_digits, value_size};
use crate::code;

/// A parsed expression.
#[derive(Debug, Clone)]
pub(crate) enum Expr {
    Literal(Bson),
    /// A field path from the current document (`"$a.b"`, `"$$ROOT.a"`, `"$$ROOT"` when empty).
    Field(Vec<String>),
    /// `$$REMOVE`: evaluates to a missing value.
    Remove,
    Object(Vec<(String, Expr)>),
    Array(Vec<Expr>),
    Operator(Operator, Vec<Expr>),
    /// `$regexMatch`, `$regexFind` or `$regexFindAll`, with its pattern compiled once when it
    /// is a constant.
    Regex(Box<regex::RegexCall>),
    /// An optional named argument that was not given (`onNull`, `timezone`...): evaluates to
    /// missing, and operators tell it apart from an argument that evaluates to missing, as
    /// mongod does (an absent `onNull` gives null, `onNull: "$nothing"` gives missing).
    Absent,
}

/// The supported expression operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operator {
    Add,
    Subtract,
    Multiply,
    Divide,
    Mod,
    Abs,
    Size,
    Concat,
    ToUpper,
    ToLower,
    IfNull,
    Cond,
    Eq,
    Ne,
    Gt,
    Gte,
    Lt,
    Lte,
    Cmp,
    And,
    Or,
    Not,
    In,
    ArrayElemAt,
    IsArray,
    Type,
    Min,
    Max,
    SetField,
    GetField,
    Rand,
    // Scalar operator families, each parsed and evaluated in its own file.
    /// Dates (`$year`..., `$dateToString`, `$dateAdd`...): `dates.rs` and the `date_*` files.
    Date(dates::DateOp),
    /// Strings (`$substrCP`, `$split`, `$trim`...): `strings.rs`.
    Text(strings::StringOp),
    /// Arithmetic and trigonometry (`$round`, `$pow`, `$sin`...): `math.rs`.
    Math(math::MathOp),
    /// Type conversions (`$convert`, `$toInt`, `$isNumber`...): `convert.rs`.
    Convert(convert::ConvertOp),
}

impl Operator {
    fn from_name(name: &str) -> Option<Operator> {
        let operator = match name {
            "$add" => Operator::Add,
            "$subtract" => Operator::Subtract,
            "$multiply" => Operator::Multiply,
            "$divide" => Operator::Divide,
            "$mod" => Operator::Mod,
            "$abs" => Operator::Abs,
            "$size" => Operator::Size,
            "$concat" => Operator::Concat,
            "$toUpper" => Operator::ToUpper,
            "$toLower" => Operator::ToLower,
            "$ifNull" => Operator::IfNull,
            "$cond" => Operator::Cond,
            "$eq" => Operator::Eq,
            "$ne" => Operator::Ne,
            "$gt" => Operator::Gt,
            "$gte" => Operator::Gte,
            "$lt" => Operator::Lt,
            "$lte" => Operator::Lte,
            "$cmp" => Operator::Cmp,
            "$and" => Operator::And,
            "$or" => Operator::Or,
            "$not" => Operator::Not,
            "$in" => Operator::In,
            "$arrayElemAt" => Operator::ArrayElemAt,
            "$isArray" => Operator::IsArray,
            "$type" => Operator::Type,
            "$min" => Operator::Min,
            "$max" => Operator::Max,
            "$setField" => Operator::SetField,
            "$getField" => Operator::GetField,
            "$rand" => Operator::Rand,
            // Scalar operator families.
            _ => {
                return dates::DateOp::from_name(name)
                    .map(Operator::Date)
                    .or_else(|| strings::StringOp::from_name(name).map(Operator::Text))
                    .or_else(|| math::MathOp::from_name(name).map(Operator::Math))
                    .or_else(|| convert::ConvertOp::from_name(name).map(Operator::Convert));
            }
        };
        Some(operator)
    }

    /// The exact number of arguments, for operators that take a fixed count.
    fn arity(self) -> Option<usize> {
        match self {
            Operator::Abs
            | Operator::Size
            | Operator::ToUpper
            | Operator::ToLower
            | Operator::Not => Some(1),
            Operator::IsArray | Operator::Type => Some(1),
            Operator::Subtract | Operator::Divide | Operator::Mod | Operator::Eq | Operator::Ne => {
                Some(2)
            }
            Operator::Gt | Operator::Gte | Operator::Lt | Operator::Lte | Operator::Cmp => Some(2),
            Operator::In | Operator::ArrayElemAt => Some(2),
            Operator::Cond => Some(3),
            _ => None,
        }
    }
}

impl Expr {
    /// Parses an expression.
    pub(crate) fn parse(value: &Bson) -> StoreResult<Expr> {
        match value {
            Bson::String(text) if text.starts_with('$') => parse_path(text),
            Bson::Document(document) => parse_object(document),
            Bson::Array(items) => Ok(Expr::Array(
                items.iter().map(Expr::parse).collect::<StoreResult<_>>()?,
            )),
            other => Ok(Expr::Literal(other.clone())),
        }
    }

    /// Evaluates against a document; `None` means "missing".
    pub(crate) fn evaluate(&self, root: &Document) -> StoreResult<Option<Bson>> {
        match self {
            Expr::Literal(value) => Ok(Some(value.clone())),
            Expr::Field(parts) => Ok(if parts.is_empty() {
                Some(Bson::Document(root.clone()))
            } else {
                field_path_in_document(root, parts)
            }),
            Expr::Remove => Ok(None),
            Expr::Object(fields) => {
                let mut out = Document::new();
                let mut size = EMPTY_DOCUMENT_BYTES;
                for (name, expr) in fields {
                    if let Some(value) = expr.evaluate(root)? {
                        size = grown_size(size, name.len(), &value)?;
                        out.insert(name.clone(), value);
                    }
                }
                Ok(Some(Bson::Document(out)))
            }
            Expr::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                let mut size = EMPTY_DOCUMENT_BYTES;
                for item in items {
                    // Missing values inside array literals become null, as in mongod.
                    let value = item.evaluate(root)?.unwrap_or(Bson::Null);
                    size = grown_size(size, decimal_digits(out.len()), &value)?;
                    out.push(value);
                }
                Ok(Some(Bson::Array(out)))
            }
            Expr::Operator(operator, arguments) => evaluate_operator(*operator, arguments, root),
            Expr::Regex(call) => call.evaluate(root),
            Expr::Absent => Ok(None),
        }
    }

    /// Evaluates as a condition (`$expr`, `$cond`): errors count as false.
    pub(crate) fn evaluate_truthy(&self, root: &Document) -> bool {
        matches!(self.evaluate(root), Ok(Some(value)) if is_truthy(&value))
    }
}

/// Length prefix and terminator of an encoded document or array.
const EMPTY_DOCUMENT_BYTES: usize = 5;

/// The size of a document or array of `size` bytes once an element named by `name_len` bytes
/// holding `value` is added; an error past mongod's internal limit, so that literals repeating a
/// large field (`["$big", "$big", ...]`) stop at the limit.
fn grown_size(size: usize, name_len: usize, value: &Bson) -> StoreResult<usize> {
    let grown = size
        .saturating_add(name_len + 2)
        .saturating_add(value_size(value));
    check_bson_size(grown)?;
    Ok(grown)
}

fn parse_path(text: &str) -> StoreResult<Expr> {
    if let Some(variable) = text.strip_prefix("$$") {
        let (name, rest) = variable.split_once('.').unwrap_or((variable, ""));
        return match name {
            "ROOT" | "CURRENT" => Ok(Expr::Field(if rest.is_empty() {
                Vec::new()
            } else {
                split_path(rest)
            })),
            "REMOVE" => Ok(Expr::Remove),
            _ => Err(CommandError::new(
                code::UNDEFINED_VARIABLE,
                format!("Use of undefined variable: {name}"),
            )),
        };
    }
    let path = &text[1..];
    if path.is_empty() {
        return Err(CommandError::new(
            code::DOLLAR_ALONE_FIELD_PATH,
            "'$' by itself is not a valid FieldPath",
        ));
    }
    Ok(Expr::Field(split_path(path)))
}

fn parse_object(document: &Document) -> StoreResult<Expr> {
    let Some(first) = document.keys().next() else {
        return Ok(Expr::Object(Vec::new()));
    };
    if !first.starts_with('$') {
        let mut fields = Vec::with_capacity(document.len());
        for (key, value) in document {
            if key.starts_with('$') {
                return Err(CommandError::new(
                    code::FIELD_PATH_DOLLAR_PREFIXED,
                    format!(
                        "FieldPath field names may not start with '$'. Consider using $getField or $setField.: {key}"
                    ),
                ));
            }
            fields.push((key.clone(), Expr::parse(value)?));
        }
        return Ok(Expr::Object(fields));
    }
    if document.len() > 1 {
        return Err(CommandError::new(
            code::EXPRESSION_NOT_ONE_FIELD,
            format!(
                "an expression specification must contain exactly one field, the name of the expression. Found {} fields in {}",
                document.len(),
                super::errors::format_document(document)
            ),
        ));
    }
    let (name, argument) = document
        .iter()
        .next()
        .ok_or_else(|| CommandError::bad_value("empty expression"))?;
    if name == "$literal" {
        return Ok(Expr::Literal(argument.clone()));
    }
    if let Some(call) = regex::RegexCall::parse(name, argument)? {
        return Ok(Expr::Regex(Box::new(call)));
    }
    let Some(operator) = Operator::from_name(name) else {
        return Err(CommandError::new(
            code::INVALID_PIPELINE_OPERATOR,
            format!("Unrecognized expression '{name}'"),
        ));
    };
    // The scalar families parse their own arguments (named ones, arity and all).
    let family = match operator {
        Operator::Date(op) => Some(dates::parse(op, name, argument)?),
        Operator::Text(op) => Some(strings::parse(op, name, argument)?),
        Operator::Math(op) => Some(math::parse(op, name, argument)?),
        Operator::Convert(op) => Some(convert::parse(op, name, argument)?),
        _ => None,
    };
    if let Some(arguments) = family {
        return Ok(Expr::Operator(operator, arguments));
    }
    let arguments = if operator == Operator::Cond {
        parse_cond(argument)?
    } else if matches!(operator, Operator::SetField | Operator::GetField) {
        fields::parse(operator, argument)?
    } else if operator == Operator::Rand {
        rand::check_argument(argument)?;
        Vec::new()
    } else {
        match argument {
            Bson::Array(items) => items
                .iter()
                .map(Expr::parse)
                .collect::<StoreResult<Vec<_>>>()?,
            other => vec![Expr::parse(other)?],
        }
    };
    if let Some(arity) = operator.arity() {
        if arguments.len() != arity {
            return Err(CommandError::new(
                code::EXPRESSION_ARITY,
                format!(
                    "Expression {name} takes exactly {arity} arguments. {} were passed in.",
                    arguments.len()
                ),
            ));
        }
    }
    Ok(Expr::Operator(operator, arguments))
}

fn parse_cond(argument: &Bson) -> StoreResult<Vec<Expr>> {
    match argument {
        Bson::Document(spec) => {
            let mut parts = [None, None, None];
            for (key, value) in spec {
                let slot = match key.as_str() {
                    "if" => 0,
                    "then" => 1,
                    "else" => 2,
                    _ => {
                        return Err(CommandError::new(
                            code::COND_UNKNOWN_PARAMETER,
                            format!("Unrecognized parameter to $cond: {key}"),
                        ));
                    }
                };
                parts[slot] = Some(Expr::parse(value)?);
            }
            let [Some(condition), Some(then), Some(otherwise)] = parts else {
                return Err(CommandError::new(
                    code::COND_MISSING_PARAMETER,
                    "Missing 'if', 'then' or 'else' parameter to $cond",
                ));
            };
            Ok(vec![condition, then, otherwise])
        }
        Bson::Array(items) => items.iter().map(Expr::parse).collect(),
        other => Ok(vec![Expr::parse(other)?]),
    }
}

/// Aggregation field-path semantics: arrays met along the way are mapped element by element.
pub(crate) fn field_path_in_document(document: &Document, parts: &[String]) -> Option<Bson> {
    let (first, rest) = parts.split_first()?;
    field_path_in_value(document.get(first)?, rest)
}

fn field_path_in_value(value: &Bson, parts: &[String]) -> Option<Bson> {
    if parts.is_empty() {
        return Some(value.clone());
    }
    match value {
        Bson::Document(document) => field_path_in_document(document, parts),
        Bson::Array(items) => Some(Bson::Array(
            items
                .iter()
                .filter(|item| matches!(item, Bson::Document(_) | Bson::Array(_)))
                .filter_map(|item| field_path_in_value(item, parts))
                .collect(),
        )),
        _ => None,
    }
}

/// Aggregation truthiness: false, null, missing, undefined and zero are false.
pub(crate) fn is_truthy(value: &Bson) -> bool {
    match value {
        Bson::Boolean(flag) => *flag,
        Bson::Null | Bson::Undefined => false,
        other => Number::of(other).is_none_or(|number| number.as_f64() != 0.0),
    }
}

pub(super) fn is_nullish(value: Option<&Bson>) -> bool {
    matches!(value, None | Some(Bson::Null | Bson::Undefined))
}

pub(super) fn type_of(value: Option<&Bson>) -> &'static str {
    value.map_or("missing", type_name)
}

pub(super) fn evaluate_all(arguments: &[Expr], root: &Document) -> StoreResult<Vec<Option<Bson>>> {
    arguments
        .iter()
        .map(|argument| argument.evaluate(root))
        .collect()
}

fn evaluate_operator(
    operator: Operator,
    arguments: &[Expr],
    root: &Document,
) -> StoreResult<Option<Bson>> {
    // Short-circuiting operators evaluate their arguments lazily.
    match operator {
        // The scalar families evaluate their own arguments (lazily where mongod does).
        Operator::Date(op) => return dates::evaluate(op, arguments, root),
        Operator::Text(op) => return strings::evaluate(op, arguments, root),
        Operator::Math(op) => return math::evaluate(op, arguments, root),
        Operator::Convert(op) => return convert::evaluate(op, arguments, root),
        Operator::Cond => {
            let condition = arguments[0].evaluate(root)?;
            let branch = if condition.as_ref().is_some_and(is_truthy) {
                &arguments[1]
            } else {
                &arguments[2]
            };
            return branch.evaluate(root);
        }
        Operator::And => {
            for argument in arguments {
                if !argument.evaluate(root)?.as_ref().is_some_and(is_truthy) {
                    return Ok(Some(Bson::Boolean(false)));
                }
            }
            return Ok(Some(Bson::Boolean(true)));
        }
        Operator::Or => {
            for argument in arguments {
                if argument.evaluate(root)?.as_ref().is_some_and(is_truthy) {
                    return Ok(Some(Bson::Boolean(true)));
                }
            }
            return Ok(Some(Bson::Boolean(false)));
        }
        Operator::IfNull => {
            let Some((replacement, candidates)) = arguments.split_last() else {
                return Err(CommandError::new(
                    code::IF_NULL_TOO_FEW_ARGUMENTS,
                    "$ifNull needs at least two arguments",
                ));
            };
            if candidates.is_empty() {
                return Err(CommandError::new(
                    code::IF_NULL_TOO_FEW_ARGUMENTS,
                    "$ifNull needs at least two arguments",
                ));
            }
            for candidate in candidates {
                let value = candidate.evaluate(root)?;
                if !is_nullish(value.as_ref()) {
                    return Ok(value);
                }
            }
            return replacement.evaluate(root);
        }
        _ => {}
    }
    let values = evaluate_all(arguments, root)?;
    match operator {
        Operator::Add => add(&values),
        Operator::Multiply => multiply(&values),
        Operator::Subtract => subtract(values[0].as_ref(), values[1].as_ref()),
        Operator::Divide | Operator::Mod => {
            divide_or_mod(operator, values[0].as_ref(), values[1].as_ref())
        }
        Operator::Abs => match values[0].as_ref() {
            value if is_nullish(value) => Ok(Some(Bson::Null)),
            Some(Bson::Int32(number)) => Ok(Some(
                number
                    .checked_abs()
                    .map_or(Bson::Int64(i64::from(*number).abs()), Bson::Int32),
            )),
            Some(Bson::Int64(number)) => Ok(Some(Bson::Int64(number.saturating_abs()))),
            Some(Bson::Decimal128(number)) => Ok(Some(crate::decimal::to_bson(
                crate::decimal::abs(crate::decimal::from_bson(number)),
            ))),
            Some(value) if is_number(value) => {
                Ok(Number::of(value).map(|number| Bson::Double(number.as_f64().abs())))
            }
            other => Err(CommandError::new(
                code::ABS_NOT_NUMBER,
                format!("$abs only supports numeric types, not {}", type_of(other)),
            )),
        },
        Operator::Size => match values[0].as_ref() {
            Some(Bson::Array(items)) => Ok(Some(Bson::Int32(
                i32::try_from(items.len()).unwrap_or(i32::MAX),
            ))),
            other => Err(CommandError::new(
                code::SIZE_NOT_ARRAY,
                format!(
                    "The argument to $size must be an array. Type of argument: {}",
                    type_of(other)
                ),
            )),
        },
        Operator::Concat => concat(&values),
        Operator::Rand => Ok(Some(Bson::Double(rand::draw()))),
        Operator::ToUpper | Operator::ToLower => {
            let text = match values[0].as_ref() {
                value if is_nullish(value) => String::new(),
                Some(Bson::String(text)) => text.clone(),
                Some(other) => super::errors::format_value(other),
                None => String::new(),
            };
            Ok(Some(Bson::String(if operator == Operator::ToUpper {
                text.to_uppercase()
            } else {
                text.to_lowercase()
            })))
        }
        Operator::Eq
        | Operator::Ne
        | Operator::Gt
        | Operator::Gte
        | Operator::Lt
        | Operator::Lte
        | Operator::Cmp => {
            let left = values[0].clone().unwrap_or(Bson::Undefined);
            let right = values[1].clone().unwrap_or(Bson::Undefined);
            let order = compare_values(&left, &right);
            let result = match operator {
                Operator::Eq => order == Ordering::Equal,
                Operator::Ne => order != Ordering::Equal,
                Operator::Gt => order == Ordering::Greater,
                Operator::Gte => order != Ordering::Less,
                Operator::Lt => order == Ordering::Less,
                Operator::Lte => order != Ordering::Greater,
                _ => {
                    let number = match order {
                        Ordering::Less => -1,
                        Ordering::Equal => 0,
                        Ordering::Greater => 1,
                    };
                    return Ok(Some(Bson::Int32(number)));
                }
            };
            Ok(Some(Bson::Boolean(result)))
        }
        Operator::Not => Ok(Some(Bson::Boolean(
            !values[0].as_ref().is_some_and(is_truthy),
        ))),
        Operator::In => match values[1].as_ref() {
            Some(Bson::Array(items)) => {
                let needle = values[0].clone().unwrap_or(Bson::Undefined);
                Ok(Some(Bson::Boolean(items.iter().any(|item| {
                    compare_values(item, &needle) == Ordering::Equal
                }))))
            }
            other => Err(CommandError::new(
                code::IN_NOT_ARRAY,
                format!(
                    "$in requires an array as a second argument, found: {}",
                    type_of(other)
                ),
            )),
        },
        Operator::ArrayElemAt => array_elem_at(values[0].as_ref(), values[1].as_ref()),
        Operator::IsArray => Ok(Some(Bson::Boolean(matches!(
            values[0],
            Some(Bson::Array(_))
        )))),
        Operator::Type => Ok(Some(Bson::String(type_of(values[0].as_ref()).to_owned()))),
        Operator::Min | Operator::Max => Ok(extreme(operator == Operator::Max, values)),
        Operator::SetField | Operator::GetField => fields::evaluate(operator, &values),
        Operator::Cond | Operator::And | Operator::Or | Operator::IfNull => Ok(None),
        Operator::Date(_) | Operator::Text(_) | Operator::Math(_) | Operator::Convert(_) => {
            Ok(None)
        }
    }
}
