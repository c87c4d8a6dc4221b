//! Filter documents to [`Node`] trees, with mongod's error codes and messages.

use bson::{Bson, Document};

use super::integral::{BitOperator, BitTest, Modulo};
use super::{Comparison, Filter, InSet, Node, PathPredicate, Predicate, TypeSelector};
use crate::code;
use crate::errors::{CommandError, StoreResult};
use crate::expr::Expr;
use crate::path::split_path;
use crate::regex::{MongoRegex, RegexBudget, RegexError};
use crate::value_order::Number;

pub(super) fn parse_document(filter: &Document, budget: &mut RegexBudget) -> StoreResult<Node> {
    let mut clauses = Vec::with_capacity(filter.len());
    for (key, value) in filter {
        if let Some(operator) = key.strip_prefix('$') {
            if let Some(node) = parse_top_level(operator, value, budget)? {
                clauses.push(node);
            }
        } else {
            clauses.push(Node::Path(PathPredicate {
                parts: split_path(key),
                predicate: parse_field(key, value, budget)?,
            }));
        }
    }
    Ok(if clauses.len() == 1 {
        clauses.remove(0)
    } else {
        Node::And(clauses)
    })
}

fn parse_top_level(
    operator: &str,
    value: &Bson,
    budget: &mut RegexBudget,
) -> StoreResult<Option<Node>> {
    let node = match operator {
        "and" => Node::And(parse_branches(operator, value, budget)?),
        "or" => Node::Or(parse_branches(operator, value, budget)?),
        "nor" => Node::Nor(parse_branches(operator, value, budget)?),
        "comment" => return Ok(None),
        "expr" => Node::Expr(Expr::parse(value)?),
        "jsonSchema" => Node::Schema(std::sync::Arc::new(crate::json_schema::Schema::parse(
            value,
        )?)),
        // blackpipe has no text search: the answer mongod gives a collection without a text
        // index, said so (FIDELITY.md lists it).
        "text" => {
            return Err(CommandError::new(
                code::INDEX_NOT_FOUND,
                "text index required for $text query (blackpipe does not model text search)",
            ));
        }
        // No JavaScript engine: mongod's answer when it runs without one (`--noscripting`).
        "where" => {
            return Err(CommandError::bad_value(
                "no globalScriptEngine in $where parsing",
            ));
        }
        _ => {
            return Err(CommandError::bad_value(format!(
                "unknown top level operator: ${operator}. If you have a field name that starts with a '$' symbol, \
                 consider using $getField or $setField."
            )));
        }
    };
    Ok(Some(node))
}

fn parse_branches(
    operator: &str,
    value: &Bson,
    budget: &mut RegexBudget,
) -> StoreResult<Vec<Node>> {
    let Bson::Array(items) = value else {
        return Err(CommandError::bad_value(format!(
            "${operator} must be an array"
        )));
    };
    if items.is_empty() {
        return Err(CommandError::bad_value(
            "$and/$or/$nor must be a nonempty array",
        ));
    }
    items
        .iter()
        .map(|item| match item {
            Bson::Document(document) => parse_document(document, budget),
            _ => Err(CommandError::bad_value(
                "$or/$and/$nor entries need to be full objects",
            )),
        })
        .collect()
}

/// Whether a value is an operator object (`{$gt: 1}`) rather than a document to compare with.
fn is_operator_object(value: &Bson) -> bool {
    matches!(value, Bson::Document(document) if document.keys().next().is_some_and(|key| key.starts_with('$')))
}

fn parse_field(path: &str, value: &Bson, budget: &mut RegexBudget) -> StoreResult<Predicate> {
    match value {
        Bson::Document(operators) if is_operator_object(value) => {
            parse_operators(path, operators, budget)
        }
        Bson::RegularExpression(regex) => Ok(Predicate::Regex(compile_bson_regex(regex, budget)?)),
        other => Ok(Predicate::Eq(other.clone())),
    }
}

/// Compiles a regular expression of a filter, with mongod's errors for one it refuses.
pub(crate) fn compile_regex(
    pattern: &str,
    options: &str,
    budget: &mut RegexBudget,
) -> StoreResult<MongoRegex> {
    MongoRegex::compile_within(pattern, options, budget).map_err(|error| match error {
        RegexError::NullInPattern => {
            CommandError::bad_value("Regular expression cannot contain an embedded null byte")
        }
        // mongod formats "<operator> invalid flag ..." with no operator name for a filter,
        // hence the leading space.
        RegexError::InvalidFlag(flag) => CommandError::new(
            code::REGEX_INVALID_FLAG,
            format!(" invalid flag in regex options: {flag}"),
        ),
        RegexError::Invalid(reason) => CommandError::new(
            code::REGEX_INVALID,
            format!("Regular expression is invalid: {reason}"),
        ),
    })
}

fn compile_bson_regex(regex: &bson::Regex, budget: &mut RegexBudget) -> StoreResult<MongoRegex> {
    compile_regex(regex.pattern.as_str(), regex.options.as_str(), budget)
}

fn parse_operators(
    path: &str,
    operators: &Document,
    budget: &mut RegexBudget,
) -> StoreResult<Predicate> {
    let mut predicates = parse_operator_list(path, operators, budget)?;
    Ok(if predicates.len() == 1 {
        predicates.remove(0)
    } else {
        Predicate::All(predicates)
    })
}

/// Each operator of an operator object, `$regex` and `$options` read together as one.
fn parse_operator_list(
    path: &str,
    operators: &Document,
    budget: &mut RegexBudget,
) -> StoreResult<Vec<Predicate>> {
    let mut predicates = Vec::with_capacity(operators.len());
    for (key, argument) in operators {
        let Some(operator) = key.strip_prefix('$') else {
            return Err(CommandError::bad_value(format!("unknown operator: {key}")));
        };
        match operator {
            "regex" => predicates.push(Predicate::Regex(regex_document(operators, budget)?)),
            "options" if !operators.contains_key("$regex") => {
                return Err(CommandError::bad_value("$options needs a $regex"));
            }
            "options" => {}
            _ => predicates.push(parse_operator(path, operator, argument, budget)?),
        }
    }
    Ok(predicates)
}

/// `{$regex: "re" | /re/flags, $options: "flags"}`: options may be given once.
fn regex_document(operators: &Document, budget: &mut RegexBudget) -> StoreResult<MongoRegex> {
    let mut pattern = "";
    let mut options = "";
    for (key, value) in operators {
        match (key.as_str(), value) {
            ("$regex", Bson::String(text)) => pattern = text,
            ("$regex", Bson::RegularExpression(regex)) => {
                pattern = regex.pattern.as_str();
                if !regex.options.as_str().is_empty() {
                    if !options.is_empty() {
                        return Err(options_twice());
                    }
                    options = regex.options.as_str();
                }
            }
            ("$regex", _) => return Err(CommandError::bad_value("$regex has to be a string")),
            ("$options", Bson::String(text)) => {
                if !options.is_empty() {
                    return Err(options_twice());
                }
                options = text;
            }
            ("$options", _) => {
                return Err(CommandError::bad_value("$options has to be a string"));
            }
            _ => {}
        }
    }
    compile_regex(pattern, options, budget)
}

fn options_twice() -> CommandError {
    CommandError::bad_value("options set in both $regex and $options")
}

fn parse_operator(
    path: &str,
    operator: &str,
    argument: &Bson,
    budget: &mut RegexBudget,
) -> StoreResult<Predicate> {
    let predicate = match operator {
        "eq" => Predicate::Eq(argument.clone()),
        "ne" => {
            if matches!(argument, Bson::RegularExpression(_)) {
                return Err(CommandError::bad_value("Can't have regex as arg to $ne."));
            }
            Predicate::Not(Box::new(Predicate::Eq(argument.clone())))
        }
        "gt" => Predicate::Compare(Comparison::Gt, comparable(path, argument)?),
        "gte" => Predicate::Compare(Comparison::Gte, comparable(path, argument)?),
        "lt" => Predicate::Compare(Comparison::Lt, comparable(path, argument)?),
        "lte" => Predicate::Compare(Comparison::Lte, comparable(path, argument)?),
        "in" => in_list(argument, "$in", budget)?,
        "nin" => Predicate::Not(Box::new(in_list(argument, "$nin", budget)?)),
        "exists" => Predicate::Exists(truthy(argument)),
        "type" => Predicate::Type(type_selectors(argument)?),
        "size" => Predicate::Size(size_argument(argument)?),
        "all" => all_list(path, argument, budget)?,
        "not" => not_argument(path, argument, budget)?,
        "elemMatch" => elem_match(argument, budget)?,
        "mod" => Predicate::Mod(Modulo::parse(argument)?),
        _ => match BitOperator::from_name(operator) {
            Some(bits) => Predicate::Bits(BitTest::parse(bits, argument)?),
            None => {
                return Err(CommandError::bad_value(format!(
                    "unknown operator: ${operator}"
                )));
            }
        },
    };
    Ok(predicate)
}

fn comparable(path: &str, argument: &Bson) -> StoreResult<Bson> {
    match argument {
        Bson::RegularExpression(_) => Err(CommandError::bad_value(format!(
            "Can't have RegEx as arg to predicate over field '{path}'."
        ))),
        other => Ok(other.clone()),
    }
}

/// Truthiness of an argument as mongod reads `$exists` (numbers are true unless zero).
pub(crate) fn truthy(argument: &Bson) -> bool {
    match argument {
        Bson::Boolean(flag) => *flag,
        Bson::Null | Bson::Undefined => false,
        other => match Number::of(other) {
            Some(number) => number.as_f64() != 0.0,
            None => true,
        },
    }
}

fn in_list(argument: &Bson, operator: &str, budget: &mut RegexBudget) -> StoreResult<Predicate> {
    let Bson::Array(items) = argument else {
        return Err(CommandError::bad_value(format!(
            "{operator} needs an array"
        )));
    };
    let mut values = Vec::with_capacity(items.len());
    let mut regexes = Vec::new();
    for item in items {
        if is_operator_object(item) {
            return Err(CommandError::bad_value(format!(
                "cannot nest $ under {operator}"
            )));
        }
        match item {
            Bson::RegularExpression(regex) => regexes.push(compile_bson_regex(regex, budget)?),
            other => values.push(other.clone()),
        }
    }
    if items.is_empty() {
        return Ok(Predicate::Never);
    }
    Ok(Predicate::In(InSet::new(values).with_regexes(regexes)))
}

fn all_list(path: &str, argument: &Bson, budget: &mut RegexBudget) -> StoreResult<Predicate> {
    let Bson::Array(items) = argument else {
        return Err(CommandError::bad_value("$all needs an array"));
    };
    if items.is_empty() {
        return Ok(Predicate::Never);
    }
    let is_elem_match = |item: &Bson| {
        matches!(item, Bson::Document(document)
            if document.keys().next().is_some_and(|key| key == "$elemMatch"))
    };
    // `$all: [{$elemMatch: ...}, ...]` holds only `$elemMatch` objects, as mongod requires.
    if is_elem_match(&items[0]) {
        return items
            .iter()
            .map(|item| match item {
                Bson::Document(document) if is_elem_match(item) => {
                    parse_operators(path, document, budget)
                }
                _ => Err(CommandError::bad_value(
                    "$all/$elemMatch has to be consistent",
                )),
            })
            .collect::<StoreResult<Vec<_>>>()
            .map(Predicate::All);
    }
    let mut predicates = Vec::with_capacity(items.len());
    for item in items {
        match item {
            _ if is_operator_object(item) => {
                return Err(CommandError::bad_value("no $ expressions in $all"));
            }
            Bson::RegularExpression(regex) => {
                predicates.push(Predicate::Regex(compile_bson_regex(regex, budget)?));
            }
            other => predicates.push(Predicate::Eq(other.clone())),
        }
    }
    Ok(Predicate::All(predicates))
}

fn not_argument(path: &str, argument: &Bson, budget: &mut RegexBudget) -> StoreResult<Predicate> {
    match argument {
        Bson::Document(operators) => {
            if operators.is_empty() {
                return Err(CommandError::bad_value("$not cannot be empty"));
            }
            if !is_operator_object(argument) {
                return Err(CommandError::bad_value("$not needs a regex or a document"));
            }
            Ok(Predicate::Not(Box::new(parse_operators(
                path, operators, budget,
            )?)))
        }
        Bson::RegularExpression(regex) => Ok(Predicate::Not(Box::new(Predicate::Regex(
            compile_bson_regex(regex, budget)?,
        )))),
        _ => Err(CommandError::bad_value("$not needs a regex or a document")),
    }
}

fn elem_match(argument: &Bson, budget: &mut RegexBudget) -> StoreResult<Predicate> {
    let Bson::Document(spec) = argument else {
        return Err(CommandError::bad_value("$elemMatch needs an Object"));
    };
    let first_is_value_operator = spec.keys().next().is_some_and(|key| {
        key.starts_with('$') && !matches!(key.as_str(), "$and" | "$or" | "$nor" | "$expr")
    });
    if first_is_value_operator {
        Ok(Predicate::ElemMatchValue(parse_operator_list(
            "", spec, budget,
        )?))
    } else {
        Ok(Predicate::ElemMatchObject(Box::new(Filter {
            root: parse_document(spec, budget)?,
        })))
    }
}

fn size_argument(argument: &Bson) -> StoreResult<usize> {
    let Some(number) = Number::of(argument) else {
        return Err(CommandError::bad_value("$size needs a number"));
    };
    let value = number.as_f64();
    if value.fract() != 0.0 || value.is_nan() {
        return Err(CommandError::bad_value(format!(
            "Failed to parse $size. Expected an integer, but found {value}"
        )));
    }
    if value < 0.0 {
        return Err(CommandError::bad_value(format!(
            "Failed to parse $size. Expected a non-negative number in: $size: {value}"
        )));
    }
    // Non-negative and integral; sizes beyond usize cannot match any array anyway.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok(value as usize)
}

fn type_selectors(argument: &Bson) -> StoreResult<Vec<TypeSelector>> {
    match argument {
        Bson::Array(items) => {
            if items.is_empty() {
                return Err(CommandError::failed_to_parse(
                    "$type must match at least one type",
                ));
            }
            items.iter().map(type_selector).collect()
        }
        other => Ok(vec![type_selector(other)?]),
    }
}

fn type_selector(value: &Bson) -> StoreResult<TypeSelector> {
    if let Bson::String(alias) = value {
        return match alias.as_str() {
            "number" => Ok(TypeSelector::Number),
            _ => type_code_from_alias(alias)
                .map(TypeSelector::Code)
                .ok_or_else(|| {
                    CommandError::bad_value(format!("Unknown type name alias: {alias}"))
                }),
        };
    }
    let Some(number) = Number::of(value) else {
        return Err(CommandError::type_mismatch(
            "type must be represented as a number or a string",
        ));
    };
    let code = number.as_f64();
    let valid =
        code.fract() == 0.0 && (code == -1.0 || code == 127.0 || (1.0..=19.0).contains(&code));
    if !valid {
        return Err(CommandError::bad_value(format!(
            "Invalid numerical type code: {code}"
        )));
    }
    // Checked above to be a small integer.
    #[allow(clippy::cast_possible_truncation)]
    Ok(TypeSelector::Code(code as i32))
}

/// The numeric BSON type code for a `$type` alias.
pub(crate) fn type_code_from_alias(alias: &str) -> Option<i32> {
    let code = match alias {
        "double" => 1,
        "string" => 2,
        "object" => 3,
        "array" => 4,
        "binData" => 5,
        "undefined" => 6,
        "objectId" => 7,
        "bool" => 8,
        "date" => 9,
        "null" => 10,
        "regex" => 11,
        "dbPointer" => 12,
        "javascript" => 13,
        "symbol" => 14,
        "javascriptWithScope" => 15,
        "int" => 16,
        "timestamp" => 17,
        "long" => 18,
        "decimal" => 19,
        "minKey" => -1,
        "maxKey" => 127,
        _ => return None,
    };
    Some(code)
}
