//! Parsing update documents, with mongod's validation errors.

use bson::{Bson, Document};

use super::{Action, Modifier, PullCondition, PushSort, PushSpec, Update};
use crate::arith::is_number;
use crate::code;
use crate::errors::{CommandError, StoreResult, format_document, type_name};
use crate::integer::integral;
use crate::path::split_path;
use crate::query::Filter;
use crate::sort::{SortSpec, sort_direction};

pub(super) fn parse_document(update: &Document) -> StoreResult<Update> {
    let is_modifier_update = update.keys().next().is_some_and(|key| key.starts_with('$'));
    if !is_modifier_update {
        for key in update.keys() {
            if key.starts_with('$') {
                return Err(CommandError::new(
                    code::DOLLAR_PREFIXED_FIELD_NAME,
                    format!(
                        "The dollar ($) prefixed field '{key}' in '{key}' is not allowed in the context of an update's \
                         replacement document. Consider using an aggregation pipeline with $replaceWith."
                    ),
                ));
            }
        }
        return Ok(Update::Replacement(update.clone()));
    }
    let mut modifiers = Vec::new();
    for (operator, argument) in update {
        let Bson::Document(fields) = argument else {
            return Err(CommandError::failed_to_parse(format!(
                "Modifiers operate on fields but we found type {} instead. For example: {{$mod: {{<field>: ...}}}} not \
                 {{{operator}: {}}}",
                type_name(argument),
                crate::errors::format_value(argument)
            )));
        };
        for (path, value) in fields {
            validate_path(path)?;
            let action = parse_action(operator, path, value)?;
            if let Action::Rename { to, .. } = &action {
                validate_path(to)?;
            }
            modifiers.push(Modifier {
                path: path.clone(),
                parts: split_path(path),
                action,
            });
        }
    }
    check_conflicts(&modifiers)?;
    // mongod applies modifiers in field-name order, which decides where new fields appear.
    modifiers.sort_by(|left, right| left.parts.cmp(&right.parts));
    Ok(Update::Modifiers(modifiers, super::ArrayFilters::default()))
}

fn validate_path(path: &str) -> StoreResult<()> {
    if path.is_empty() {
        return Err(CommandError::new(
            code::EMPTY_FIELD_NAME,
            "An empty update path is not valid.",
        ));
    }
    if path.split('.').any(str::is_empty) {
        return Err(CommandError::new(
            code::EMPTY_FIELD_NAME,
            format!("The update path '{path}' contains an empty field name, which is not allowed."),
        ));
    }
    let first = path.split('.').next().unwrap_or_default();
    if first == "$" {
        return Err(CommandError::bad_value(format!(
            "Cannot have positional (i.e. '$') element in the first component in path '{path}'"
        )));
    }
    if super::positional::identifier(first).is_some() {
        return Err(CommandError::bad_value(format!(
            "Cannot have array filter identifier (i.e. '$[<id>]') element in the first component in path '{path}'"
        )));
    }
    if path.split('.').filter(|part| *part == "$").count() > 1 {
        return Err(CommandError::bad_value(format!(
            "Too many positional (i.e. '$') elements found in path '{path}'"
        )));
    }
    let unsupported = |part: &str| {
        part.starts_with('$') && part != "$" && !super::positional::is_valid_positional(part)
    };
    if path.split('.').any(unsupported) {
        return Err(CommandError::bad_value(format!(
            "blackpipe does not support the '$'-prefixed component in the update path '{path}'"
        )));
    }
    Ok(())
}

fn single_field(path: &str, value: &Bson) -> String {
    let mut document = Document::new();
    document.insert(path, value.clone());
    format_document(&document)
}

fn parse_action(operator: &str, path: &str, value: &Bson) -> StoreResult<Action> {
    let action = match operator {
        "$set" => Action::Set(value.clone()),
        "$setOnInsert" => Action::SetOnInsert(value.clone()),
        "$unset" => Action::Unset,
        "$inc" | "$mul" => {
            if !is_number(value) {
                let verb = if operator == "$inc" {
                    "increment"
                } else {
                    "multiply"
                };
                return Err(CommandError::type_mismatch(format!(
                    "Cannot {verb} with non-numeric argument: {}",
                    single_field(path, value)
                )));
            }
            if operator == "$inc" {
                Action::Inc(value.clone())
            } else {
                Action::Mul(value.clone())
            }
        }
        "$min" => Action::Min(value.clone()),
        "$max" => Action::Max(value.clone()),
        "$push" => Action::Push(parse_push(value)?),
        "$addToSet" => Action::AddToSet(parse_add_to_set(value)?),
        "$pull" => Action::Pull(parse_pull(value)?),
        "$pullAll" => {
            let Bson::Array(values) = value else {
                return Err(CommandError::bad_value(format!(
                    "$pullAll requires an array argument but was given a {}",
                    type_name(value)
                )));
            };
            Action::PullAll(values.clone())
        }
        "$pop" => {
            let first = match sort_direction(value) {
                Some(last) => !last,
                None => {
                    return Err(CommandError::failed_to_parse(format!(
                        "$pop expects 1 or -1, found: {}",
                        crate::errors::format_value(value)
                    )));
                }
            };
            Action::Pop { first }
        }
        "$rename" => {
            let Bson::String(to) = value else {
                return Err(CommandError::bad_value(format!(
                    "The 'to' field for $rename must be a string: {}",
                    single_field(path, value)
                )));
            };
            if to == path {
                return Err(CommandError::bad_value(format!(
                    "The source and target field for $rename must differ: {}",
                    single_field(path, value)
                )));
            }
            // mongod renames fixed paths only: no positional component on either side.
            let dynamic = |path: &str| path.split('.').any(|part| part.starts_with('$'));
            if dynamic(path) {
                return Err(CommandError::bad_value(format!(
                    "The source field for $rename may not be dynamic: {path}"
                )));
            }
            if dynamic(to) {
                return Err(CommandError::bad_value(format!(
                    "The destination field for $rename may not be dynamic: {to}"
                )));
            }
            Action::Rename {
                to: to.clone(),
                to_parts: split_path(to),
            }
        }
        "$currentDate" => Action::CurrentDate {
            timestamp: parse_current_date(value)?,
        },
        _ => {
            return Err(CommandError::failed_to_parse(format!(
                "Unknown modifier: {operator}. Expected a valid update modifier or pipeline-style update specified as an array"
            )));
        }
    };
    Ok(action)
}

fn parse_current_date(value: &Bson) -> StoreResult<bool> {
    match value {
        Bson::Boolean(true) => Ok(false),
        Bson::Document(spec) if spec.len() == 1 => match spec.get("$type") {
            Some(Bson::String(kind)) if kind == "date" => Ok(false),
            Some(Bson::String(kind)) if kind == "timestamp" => Ok(true),
            _ => Err(CommandError::bad_value(
                "The '$type' string field is required to be 'date' or 'timestamp'",
            )),
        },
        _ => Err(CommandError::bad_value(format!(
            "{} is not valid type for $currentDate. Please use a boolean ('true') or a $type expression ({{$type: \
             'timestamp/date'}}).",
            type_name(value)
        ))),
    }
}

fn each_values(spec: &Document, operator: &str) -> StoreResult<Vec<Bson>> {
    match spec.get("$each") {
        Some(Bson::Array(values)) => Ok(values.clone()),
        Some(other) => Err(CommandError::bad_value(format!(
            "The argument to $each in {operator} must be an array but it was of type: {}",
            type_name(other)
        ))),
        None => Ok(Vec::new()),
    }
}

fn parse_push(value: &Bson) -> StoreResult<PushSpec> {
    let Bson::Document(spec) = value else {
        return Ok(PushSpec {
            values: vec![value.clone()],
            position: None,
            slice: None,
            sort: None,
        });
    };
    if !spec.contains_key("$each") {
        return Ok(PushSpec {
            values: vec![value.clone()],
            position: None,
            slice: None,
            sort: None,
        });
    }
    let mut push = PushSpec {
        values: each_values(spec, "$push")?,
        position: None,
        slice: None,
        sort: None,
    };
    for (key, argument) in spec {
        match key.as_str() {
            "$each" => {}
            "$position" => {
                push.position = Some(integral(argument).ok_or_else(|| {
                    CommandError::bad_value("The value for $position must be an integer value")
                })?);
            }
            "$slice" => {
                push.slice = Some(integral(argument).ok_or_else(|| {
                    CommandError::bad_value("The value for $slice must be an integer value")
                })?);
            }
            "$sort" => {
                push.sort = Some(match argument {
                    Bson::Document(fields) => PushSort::Fields(SortSpec::parse(fields)?),
                    other => match sort_direction(other) {
                        Some(ascending) => PushSort::Values { ascending },
                        None => {
                            return Err(CommandError::bad_value(
                                "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort embedded fields",
                            ));
                        }
                    },
                });
            }
            other => {
                return Err(CommandError::bad_value(format!(
                    "Unrecognized clause in $push: {other}"
                )));
            }
        }
    }
    Ok(push)
}

fn parse_add_to_set(value: &Bson) -> StoreResult<Vec<Bson>> {
    match value {
        Bson::Document(spec) if spec.contains_key("$each") => {
            if let Some(other) = spec.keys().find(|key| *key != "$each") {
                return Err(CommandError::bad_value(format!(
                    "Found unexpected fields after $each in $addToSet: {other}"
                )));
            }
            each_values(spec, "$addToSet")
        }
        other => Ok(vec![other.clone()]),
    }
}

fn parse_pull(value: &Bson) -> StoreResult<PullCondition> {
    match value {
        Bson::Document(spec) if spec.keys().next().is_some_and(|key| key.starts_with('$')) => {
            let is_logical = spec
                .keys()
                .next()
                .is_some_and(|key| matches!(key.as_str(), "$and" | "$or" | "$nor"));
            if is_logical {
                return Ok(PullCondition::DocumentFilter(Box::new(Filter::parse(
                    spec,
                )?)));
            }
            // Operators apply to the element itself: match it as the field "v" of a wrapper.
            let mut wrapper = Document::new();
            wrapper.insert("v", Bson::Document(spec.clone()));
            Ok(PullCondition::ValuePredicate(Box::new(Filter::parse(
                &wrapper,
            )?)))
        }
        Bson::Document(spec) => Ok(PullCondition::DocumentFilter(Box::new(Filter::parse(
            spec,
        )?))),
        // A regular expression removes the strings it matches (and equal regexes).
        Bson::RegularExpression(_) => {
            let mut wrapper = Document::new();
            wrapper.insert("v", value.clone());
            Ok(PullCondition::ValuePredicate(Box::new(Filter::parse(
                &wrapper,
            )?)))
        }
        other => Ok(PullCondition::Equals(other.clone())),
    }
}

/// Two modifiers may not touch the same path or a path and its prefix.
fn check_conflicts(modifiers: &[Modifier]) -> StoreResult<()> {
    let mut paths: Vec<(&[String], &str)> = Vec::with_capacity(modifiers.len() + 1);
    for modifier in modifiers {
        paths.push((&modifier.parts, &modifier.path));
        if let Action::Rename { to, to_parts } = &modifier.action {
            paths.push((to_parts, to));
        }
    }
    for (position, (parts, path)) in paths.iter().enumerate() {
        for (other_parts, _) in &paths[..position] {
            let shared = parts.len().min(other_parts.len());
            if parts[..shared] == other_parts[..shared] {
                return Err(CommandError::new(
                    code::CONFLICTING_UPDATE_OPERATORS,
                    format!(
                        "Updating the path '{path}' would create a conflict at '{}'",
                        parts[..shared].join(".")
                    ),
                ));
            }
        }
    }
    Ok(())
}
