//! Aggregation expressions: field paths (`"$a.b"`, `$$ROOT`), literals, object and array
//! literals, variables, and a subset of operators.
//!
//! Variables (`$let`, `$map`, ...) are resolved through a [`Defined`] chain when parsing and a
//! [`Scope`] when evaluating (see `vars`): sub-expressions are parsed with
//! [`Expr::parse_in`] and evaluated with [`Expr::eval`], never with the top-level
//! [`Expr::parse`] / [`Expr::evaluate`], which start with no variables bound.

// Accumulators and window functions (accumulators): shared helpers and `$function`.
pub(crate) mod accum_support;
mod args;
mod arrays;
mod calendar;
mod control;
mod convert;
mod date_arith;
mod date_format;
mod date_parse;
mod dates;
mod fields;
mod iterate;
pub(crate) mod javascript;
mod math;
mod named;
mod ops;
mod pick;
pub(crate) use self::pick::checked_n;
pub(crate) mod rand;
mod regex;
mod sets;
mod strings;
// `$$NOW` and `$$CLUSTER_TIME` (stages-single).
pub(crate) mod system_vars;
mod tz;
pub(crate) mod vars;

use std::cmp::Ordering;

use bson::{Bson, Document};

use self::named::Named;
use self::ops::{add, array_elem_at, concat, divide_or_mod, extreme, multiply, subtract};
pub(crate) use self::vars::{Defined, Scope, Work};
use super::arith::is_number;
use super::errors::{CommandError, StoreResult, check_bson_size, type_name};
use super::path::split_path;
use super::value_order::{Number, compare_values, decimal_digits, value_size};
use crate::code;

/// A parsed expression.
#[derive(Debug, Clone)]
pub(crate) enum Expr {
    Literal(Bson),
    /// A field path from `$$CURRENT` (`"$a.b"`, `"$$CURRENT.a"`, `"$$CURRENT"` when empty),
    /// which is the document unless a `$let` rebinds it.
    Field(Vec<String>),
    /// `$$ROOT` (or `$$ROOT.a.b`): the document, even where `$$CURRENT` is rebound.
    Root(Vec<String>),
    /// `$$name` or `$$name.a.b`: a variable a `$let`, `$map`, `$filter` or `$reduce` binds.
    Variable(Box<vars::Reference>),
    /// An operator with named arguments that binds variables or needs more than a list of
    /// expressions (`$let`, `$map`, `$switch`, `$zip`, ...).
    Named(Box<Named>),
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
    // Variables, array, set, object and conditional operators (agg-vars).
    Let,
    Map,
    Filter,
    Reduce,
    ConcatArrays,
    Slice,
    ReverseArray,
    Range,
    Zip,
    IndexOfArray,
    First,
    Last,
    FirstN,
    LastN,
    MaxN,
    MinN,
    SortArray,
    ArrayToObject,
    ObjectToArray,
    SetUnion,
    SetIntersection,
    SetDifference,
    SetEquals,
    SetIsSubset,
    AnyElementTrue,
    AllElementsTrue,
    MergeObjects,
    Switch,
    // Accumulators and window functions (accumulators): server-side JavaScript, refused.
    Function,
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
            // Variables, array, set, object and conditional operators (agg-vars).
            "$let" => Operator::Let,
            "$map" => Operator::Map,
            "$filter" => Operator::Filter,
            "$reduce" => Operator::Reduce,
            "$concatArrays" => Operator::ConcatArrays,
            "$slice" => Operator::Slice,
            "$reverseArray" => Operator::ReverseArray,
            "$range" => Operator::Range,
            "$zip" => Operator::Zip,
            "$indexOfArray" => Operator::IndexOfArray,
            "$first" => Operator::First,
            "$last" => Operator::Last,
            "$firstN" => Operator::FirstN,
            "$lastN" => Operator::LastN,
            "$maxN" => Operator::MaxN,
            "$minN" => Operator::MinN,
            "$sortArray" => Operator::SortArray,
            "$arrayToObject" => Operator::ArrayToObject,
            "$objectToArray" => Operator::ObjectToArray,
            "$setUnion" => Operator::SetUnion,
            "$setIntersection" => Operator::SetIntersection,
            "$setDifference" => Operator::SetDifference,
            "$setEquals" => Operator::SetEquals,
            "$setIsSubset" => Operator::SetIsSubset,
            "$anyElementTrue" => Operator::AnyElementTrue,
            "$allElementsTrue" => Operator::AllElementsTrue,
            "$mergeObjects" => Operator::MergeObjects,
            "$switch" => Operator::Switch,
            // Accumulators and window functions (accumulators).
            "$function" => Operator::Function,
            // Scalar operator families (agg-scalar).
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
            // Variables, array, set, object and conditional operators (agg-vars).
            Operator::First | Operator::Last | Operator::ReverseArray => Some(1),
            Operator::ArrayToObject | Operator::ObjectToArray => Some(1),
            Operator::AnyElementTrue | Operator::AllElementsTrue => Some(1),
            Operator::SetDifference | Operator::SetIsSubset => Some(2),
            _ => None,
        }
    }

    /// The least and most arguments, for operators that take a range of counts.
    fn arity_range(self) -> Option<(usize, usize)> {
        match self {
            // Variables, array, set, object and conditional operators (agg-vars).
            Operator::Slice | Operator::Range => Some((2, 3)),
            Operator::IndexOfArray => Some((2, 4)),
            _ => None,
        }
    }
}

impl Expr {
    /// Parses a top-level expression (no variables defined but the built-in ones).
    pub(crate) fn parse(value: &Bson) -> StoreResult<Expr> {
        Expr::parse_in(value, &Defined::TOP)
    }

    /// Parses an expression where the variables `defined` names are in scope.
    pub(crate) fn parse_in(value: &Bson, defined: &Defined) -> StoreResult<Expr> {
        match value {
            Bson::String(text) if text.starts_with('$') => parse_path(text, defined),
            Bson::Document(document) => parse_object(document, defined),
            Bson::Array(items) => Ok(Expr::Array(
                items
                    .iter()
                    .map(|item| Expr::parse_in(item, defined))
                    .collect::<StoreResult<_>>()?,
            )),
            other => Ok(Expr::Literal(other.clone())),
        }
    }

    /// Evaluates a top-level expression against a document; `None` means "missing".
    pub(crate) fn evaluate(&self, root: &Document) -> StoreResult<Option<Bson>> {
        let work = Work::default();
        self.eval(&Scope::new(root, &work))
    }

    /// Evaluates in `scope` (the document and the variables bound around this expression).
    pub(crate) fn eval(&self, scope: &Scope) -> StoreResult<Option<Bson>> {
        match self {
            Expr::Literal(value) => {
                // Copying a large literal in every iteration of a loop is work too.
                scope.charge_copy(Some(value))?;
                Ok(Some(value.clone()))
            }
            Expr::Field(parts) => scope.current_path(parts),
            Expr::Root(parts) => {
                let root = scope.root();
                let value = if parts.is_empty() {
                    Some(Bson::Document(root.clone()))
                } else {
                    field_path_in_document(root, parts)
                };
                scope.charge_copy(value.as_ref())?;
                Ok(value)
            }
            Expr::Variable(reference) => reference.evaluate(scope),
            Expr::Named(named) => named.evaluate(scope),
            Expr::Remove => Ok(None),
            Expr::Object(fields) => {
                let mut out = Document::new();
                let mut size = EMPTY_DOCUMENT_BYTES;
                for (name, expr) in fields {
                    if let Some(value) = expr.eval(scope)? {
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
                    let value = item.eval(scope)?.unwrap_or(Bson::Null);
                    size = grown_size(size, decimal_digits(out.len()), &value)?;
                    out.push(value);
                }
                Ok(Some(Bson::Array(out)))
            }
            Expr::Operator(operator, arguments) => evaluate_operator(*operator, arguments, scope),
            Expr::Regex(call) => call.evaluate(scope),
            Expr::Absent => Ok(None),
        }
    }

    /// Evaluates as a condition (`$expr`, `$cond`): errors count as false.
    pub(crate) fn evaluate_truthy(&self, root: &Document) -> bool {
        matches!(self.evaluate(root), Ok(Some(value)) if is_truthy(&value))
    }
}

/// Length prefix and terminator of an encoded document or array.
pub(super) const EMPTY_DOCUMENT_BYTES: usize = 5;

/// The size of a document or array of `size` bytes once an element named by `name_len` bytes
/// holding `value` is added; an error past mongod's internal limit, so that literals repeating a
/// large field (`["$big", "$big", ...]`) stop at the limit.
pub(super) fn grown_size(size: usize, name_len: usize, value: &Bson) -> StoreResult<usize> {
    let grown = size
        .saturating_add(name_len + 2)
        .saturating_add(value_size(value));
    check_bson_size(grown)?;
    Ok(grown)
}

fn parse_path(text: &str, defined: &Defined) -> StoreResult<Expr> {
    if let Some(variable) = text.strip_prefix("$$") {
        return vars::parse_reference(variable, defined);
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

fn parse_object(document: &Document, defined: &Defined) -> StoreResult<Expr> {
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
            fields.push((key.clone(), Expr::parse_in(value, defined)?));
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
    if let Some(call) = regex::RegexCall::parse(name, argument, defined)? {
        return Ok(Expr::Regex(Box::new(call)));
    }
    let Some(operator) = Operator::from_name(name) else {
        return Err(CommandError::new(
            code::INVALID_PIPELINE_OPERATOR,
            format!("Unrecognized expression '{name}'"),
        ));
    };
    if let Some(named) = Named::parse(operator, argument, defined)? {
        return Ok(Expr::Named(Box::new(named)));
    }
    // The scalar families parse their own arguments (named ones, arity and all).
    let family = match operator {
        Operator::Date(op) => Some(dates::parse(op, name, argument, defined)?),
        Operator::Text(op) => Some(strings::parse(op, name, argument, defined)?),
        Operator::Math(op) => Some(math::parse(op, name, argument, defined)?),
        Operator::Convert(op) => Some(convert::parse(op, name, argument, defined)?),
        // Accumulators and window functions (accumulators).
        Operator::Function => Some(javascript::parse_function(argument, defined)?),
        _ => None,
    };
    if let Some(arguments) = family {
        return Ok(Expr::Operator(operator, arguments));
    }
    let arguments = if operator == Operator::Cond {
        control::parse_cond(argument, defined)?
    } else if matches!(operator, Operator::SetField | Operator::GetField) {
        fields::parse(operator, argument, defined)?
    } else if operator == Operator::Rand {
        rand::check_argument(argument)?;
        Vec::new()
    } else {
        match argument {
            Bson::Array(items) => items
                .iter()
                .map(|item| Expr::parse_in(item, defined))
                .collect::<StoreResult<Vec<_>>>()?,
            other => vec![Expr::parse_in(other, defined)?],
        }
    };
    check_arity(operator, name, arguments.len())?;
    Ok(Expr::Operator(operator, arguments))
}

/// The argument count checks mongod makes when it parses an operator.
fn check_arity(operator: Operator, name: &str, count: usize) -> StoreResult<()> {
    if let Some(arity) = operator.arity() {
        if count != arity {
            return Err(CommandError::new(
                code::EXPRESSION_ARITY,
                format!(
                    "Expression {name} takes exactly {arity} arguments. {count} were passed in."
                ),
            ));
        }
    }
    if let Some((least, most)) = operator.arity_range() {
        if !(least..=most).contains(&count) {
            return Err(CommandError::new(
                code::EXPRESSION_ARITY_RANGE,
                format!(
                    "Expression {name} takes at least {least} arguments, and at most {most}, but \
                     {count} were passed in."
                ),
            ));
        }
    }
    if operator == Operator::SetEquals && count < 2 {
        return Err(CommandError::new(
            code::SET_EQUALS_TOO_FEW_ARGUMENTS,
            format!("$setEquals needs at least two arguments had: {count}"),
        ));
    }
    Ok(())
}

/// Aggregation field-path semantics: arrays met along the way are mapped element by element.
pub(crate) fn field_path_in_document(document: &Document, parts: &[String]) -> Option<Bson> {
    let (first, rest) = parts.split_first()?;
    field_path_in_value(document.get(first)?, rest)
}

pub(super) fn field_path_in_value(value: &Bson, parts: &[String]) -> Option<Bson> {
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

pub(super) fn evaluate_all(arguments: &[Expr], scope: &Scope) -> StoreResult<Vec<Option<Bson>>> {
    arguments
        .iter()
        .map(|argument| argument.eval(scope))
        .collect()
}

fn evaluate_operator(
    operator: Operator,
    arguments: &[Expr],
    scope: &Scope,
) -> StoreResult<Option<Bson>> {
    // Short-circuiting operators evaluate their arguments lazily.
    match operator {
        // The scalar families evaluate their own arguments (lazily where mongod does).
        Operator::Date(op) => return dates::evaluate(op, arguments, scope),
        Operator::Text(op) => return strings::evaluate(op, arguments, scope),
        Operator::Math(op) => return math::evaluate(op, arguments, scope),
        Operator::Convert(op) => return convert::evaluate(op, arguments, scope),
        Operator::Cond => {
            let condition = arguments[0].eval(scope)?;
            let branch = if condition.as_ref().is_some_and(is_truthy) {
                &arguments[1]
            } else {
                &arguments[2]
            };
            return branch.eval(scope);
        }
        Operator::And => {
            for argument in arguments {
                if !argument.eval(scope)?.as_ref().is_some_and(is_truthy) {
                    return Ok(Some(Bson::Boolean(false)));
                }
            }
            return Ok(Some(Bson::Boolean(true)));
        }
        Operator::Or => {
            for argument in arguments {
                if argument.eval(scope)?.as_ref().is_some_and(is_truthy) {
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
                let value = candidate.eval(scope)?;
                if !is_nullish(value.as_ref()) {
                    return Ok(value);
                }
            }
            return replacement.eval(scope);
        }
        // Variables, array, set, object and conditional operators (agg-vars): each evaluates
        // its own arguments, in mongod's order.
        Operator::ConcatArrays => return arrays::concat_arrays(arguments, scope),
        Operator::Slice => return arrays::slice(arguments, scope),
        Operator::ReverseArray => return arrays::reverse_array(arguments, scope),
        Operator::Range => return arrays::range(arguments, scope),
        Operator::IndexOfArray => return arrays::index_of_array(arguments, scope),
        Operator::First | Operator::Last => {
            return arrays::first_or_last(operator == Operator::Last, arguments, scope);
        }
        Operator::ArrayToObject => return arrays::array_to_object(arguments, scope),
        Operator::ObjectToArray => return arrays::object_to_array(arguments, scope),
        Operator::SetUnion => return sets::union(arguments, scope),
        Operator::SetIntersection => return sets::intersection(arguments, scope),
        Operator::SetDifference => return sets::difference(arguments, scope),
        Operator::SetEquals => return sets::equals(arguments, scope),
        Operator::SetIsSubset => return sets::is_subset(arguments, scope),
        Operator::AnyElementTrue | Operator::AllElementsTrue => {
            return sets::elements_true(operator == Operator::AllElementsTrue, arguments, scope);
        }
        Operator::MergeObjects => return control::merge_objects(arguments, scope),
        // Accumulators and window functions (accumulators).
        Operator::Function => return javascript::evaluate_function(arguments, scope),
        _ => {}
    }
    let values = evaluate_all(arguments, scope)?;
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
        // Variables, array, set, object and conditional operators (agg-vars): handled above
        // (the positional ones) or parsed into `Expr::Named` (the named ones).
        Operator::ConcatArrays
        | Operator::Slice
        | Operator::ReverseArray
        | Operator::Range
        | Operator::IndexOfArray
        | Operator::First
        | Operator::Last
        | Operator::ArrayToObject
        | Operator::ObjectToArray
        | Operator::SetUnion
        | Operator::SetIntersection
        | Operator::SetDifference
        | Operator::SetEquals
        | Operator::SetIsSubset
        | Operator::AnyElementTrue
        | Operator::AllElementsTrue
        | Operator::MergeObjects
        | Operator::Let
        | Operator::Map
        | Operator::Filter
        | Operator::Reduce
        | Operator::Zip
        | Operator::FirstN
        | Operator::LastN
        | Operator::MaxN
        | Operator::MinN
        | Operator::SortArray
        | Operator::Switch
        // Accumulators and window functions (accumulators): evaluated above.
        | Operator::Function
        // Scalar operator families (agg-scalar): evaluated by their own files, above.
        | Operator::Date(_)
        | Operator::Text(_)
        | Operator::Math(_)
        | Operator::Convert(_) => Err(CommandError::new(
            code::INTERNAL_ERROR,
            format!("{operator:?} reached the positional evaluator"),
        )),
    }
}
