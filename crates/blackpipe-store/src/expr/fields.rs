//! `$setField` and `$getField`: reading and writing a field whose name is not a valid field
//! path (it starts with `$` or contains a dot), which the dots-and-dollars tests rely on.
//!
//! Both take named arguments, parsed here into positional ones: `$setField` as
//! `[field, input, value]`, `$getField` as `[field, input]`. The field name must be a constant
//! string, as in mongod (a string literal or `{$literal: "..."}`).

use bson::{Bson, Document};

use super::vars::Defined;
use super::{Expr, Operator, is_nullish, type_of};
use crate::code;
use crate::errors::{CommandError, StoreResult};
use crate::value_order::value_size;

fn input_value(document: &Document) -> Bson {
    Bson::Document(document.clone())
}

/// Parses the argument document of `$setField` or `$getField`.
pub(super) fn parse(
    operator: Operator,
    argument: &Bson,
    defined: &Defined,
) -> StoreResult<Vec<Expr>> {
    let name = if operator == Operator::SetField {
        "$setField"
    } else {
        "$getField"
    };
    let Bson::Document(spec) = argument else {
        if operator == Operator::GetField {
            // `{$getField: "name"}` is short for `{field: "name", input: "$$CURRENT"}`.
            return Ok(vec![
                constant_name(argument, name)?,
                Expr::Field(Vec::new()),
            ]);
        }
        return Err(CommandError::new(
            code::FIELD_OPERATOR_NOT_OBJECT,
            format!("{name} only supports an object as its argument"),
        ));
    };
    let (mut field, mut input, mut value) = (None, None, None);
    for (key, item) in spec {
        match key.as_str() {
            "field" => field = Some(constant_name(item, name)?),
            "input" => input = Some(Expr::parse_in(item, defined)?),
            "value" if operator == Operator::SetField => {
                value = Some(Expr::parse_in(item, defined)?)
            }
            other => {
                return Err(CommandError::new(
                    code::FIELD_OPERATOR_UNKNOWN_ARGUMENT,
                    format!("{name} found an unknown argument: {other}"),
                ));
            }
        }
    }
    let field = field.ok_or_else(|| {
        CommandError::new(
            code::FIELD_OPERATOR_WITHOUT_FIELD,
            format!("{name} requires 'field' to be specified"),
        )
    })?;
    let input = match (operator, input) {
        (_, Some(input)) => input,
        (Operator::GetField, None) => Expr::Field(Vec::new()),
        (_, None) => {
            return Err(CommandError::new(
                code::FIELD_OPERATOR_WITHOUT_INPUT,
                format!("{name} requires 'input' to be specified"),
            ));
        }
    };
    if operator == Operator::GetField {
        return Ok(vec![field, input]);
    }
    let value = value.ok_or_else(|| {
        CommandError::new(
            code::SET_FIELD_WITHOUT_VALUE,
            format!("{name} requires 'value' to be specified"),
        )
    })?;
    Ok(vec![field, input, value])
}

/// The field name: a string literal, directly or under `$literal`.
fn constant_name(item: &Bson, name: &str) -> StoreResult<Expr> {
    let literal = match item {
        Bson::Document(d) if d.len() == 1 => d.get("$literal"),
        Bson::String(text) if !text.starts_with('$') => Some(item),
        _ => None,
    };
    match literal {
        Some(Bson::String(text)) => Ok(Expr::Literal(Bson::String(text.clone()))),
        _ => Err(CommandError::new(
            code::FIELD_OPERATOR_FIELD_NOT_STRING,
            format!("{name} requires 'field' to evaluate to a constant string"),
        )),
    }
}

/// Evaluates `$setField` (`[field, input, value]`) or `$getField` (`[field, input]`) from
/// their evaluated arguments.
pub(super) fn evaluate(operator: Operator, values: &[Option<Bson>]) -> StoreResult<Option<Bson>> {
    let Some(Some(Bson::String(field))) = values.first() else {
        return Ok(None);
    };
    let input = values.get(1).and_then(Option::as_ref);
    let document: &Document = match input {
        Some(Bson::Document(document)) => document,
        other if is_nullish(other) => {
            return Ok(if operator == Operator::SetField {
                Some(Bson::Null)
            } else {
                None
            });
        }
        _ if operator == Operator::GetField => return Ok(None),
        other => {
            return Err(CommandError::new(
                code::SET_FIELD_INPUT_NOT_OBJECT,
                format!(
                    "$setField requires 'input' to evaluate to type Object, found {}",
                    type_of(other)
                ),
            ));
        }
    };
    if operator == Operator::GetField {
        return Ok(document.get(field).cloned());
    }
    let mut out = document.clone();
    match values.get(2).cloned().flatten() {
        // `$$REMOVE` (a missing value) removes the field.
        None => {
            out.remove(field);
        }
        Some(value) => {
            // The grown document stays within mongod's size limit.
            super::grown_size(value_size(&input_value(document)), field.len(), &value)?;
            out.insert(field.clone(), value);
        }
    }
    Ok(Some(Bson::Document(out)))
}
