//! `$cond`'s argument forms, `$switch` and `$mergeObjects`.

use bson::{Bson, Document};

use super::arrays::value_text;
use super::vars::{Defined, Scope};
use super::{Expr, is_nullish, is_truthy, type_of};
use crate::code;
use crate::errors::{CommandError, StoreResult, check_bson_size, type_name};
use crate::value_order::{document_size, value_size};

/// Parses `$cond`'s argument into `[if, then, else]`: a document `{if, then, else}`, or an
/// array (any other value is one argument, which the arity check then refuses).
pub(super) fn parse_cond(argument: &Bson, defined: &Defined) -> StoreResult<Vec<Expr>> {
    let Bson::Document(spec) = argument else {
        return match argument {
            Bson::Array(items) => items
                .iter()
                .map(|item| Expr::parse_in(item, defined))
                .collect(),
            other => Ok(vec![Expr::parse_in(other, defined)?]),
        };
    };
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
        parts[slot] = Some(Expr::parse_in(value, defined)?);
    }
    let [condition, then, otherwise] = parts;
    let missing =
        |code, name: &str| CommandError::new(code, format!("Missing '{name}' parameter to $cond"));
    Ok(vec![
        condition.ok_or_else(|| missing(code::COND_MISSING_PARAMETER, "if"))?,
        then.ok_or_else(|| missing(code::COND_WITHOUT_THEN, "then"))?,
        otherwise.ok_or_else(|| missing(code::COND_WITHOUT_ELSE, "else"))?,
    ])
}

/// A parsed `$switch`.
#[derive(Debug, Clone)]
pub(crate) struct Switch {
    branches: Vec<(Expr, Expr)>,
    default: Option<Expr>,
}

impl Switch {
    /// Parses `{branches: [{case, then}, ...], default?}`.
    pub(super) fn parse(argument: &Bson, defined: &Defined) -> StoreResult<Switch> {
        let Bson::Document(spec) = argument else {
            return Err(CommandError::new(
                code::SWITCH_NOT_OBJECT,
                format!(
                    "$switch requires an object as an argument, found: {}",
                    type_name(argument)
                ),
            ));
        };
        let mut switch = Switch {
            branches: Vec::new(),
            default: None,
        };
        for (key, value) in spec {
            match key.as_str() {
                "branches" => {
                    let Bson::Array(branches) = value else {
                        return Err(CommandError::new(
                            code::SWITCH_BRANCHES_NOT_ARRAY,
                            format!(
                                "$switch expected an array for 'branches', found: {}",
                                type_name(value)
                            ),
                        ));
                    };
                    for branch in branches {
                        switch.branches.push(parse_branch(branch, defined)?);
                    }
                }
                "default" => switch.default = Some(Expr::parse_in(value, defined)?),
                _ => {
                    return Err(CommandError::new(
                        code::SWITCH_UNKNOWN_ARGUMENT,
                        format!("$switch found an unknown argument: {key}"),
                    ));
                }
            }
        }
        if switch.branches.is_empty() {
            return Err(CommandError::new(
                code::SWITCH_WITHOUT_BRANCHES,
                "$switch requires at least one branch.",
            ));
        }
        Ok(switch)
    }

    /// The first branch whose `case` is true, else the default; with neither, 40066.
    pub(super) fn evaluate(&self, scope: &Scope) -> StoreResult<Option<Bson>> {
        for (case, then) in &self.branches {
            if case.eval(scope)?.as_ref().is_some_and(is_truthy) {
                return then.eval(scope);
            }
        }
        match &self.default {
            Some(default) => default.eval(scope),
            None => Err(CommandError::new(
                code::SWITCH_NO_MATCH,
                "$switch could not find a matching branch for an input, and no default was \
                 specified.",
            )),
        }
    }
}

fn parse_branch(branch: &Bson, defined: &Defined) -> StoreResult<(Expr, Expr)> {
    let Bson::Document(branch) = branch else {
        return Err(CommandError::new(
            code::SWITCH_BRANCH_NOT_OBJECT,
            format!(
                "$switch expected each branch to be an object, found: {}",
                type_name(branch)
            ),
        ));
    };
    let (mut case, mut then) = (None, None);
    for (key, value) in branch {
        match key.as_str() {
            "case" => case = Some(Expr::parse_in(value, defined)?),
            "then" => then = Some(Expr::parse_in(value, defined)?),
            _ => {
                return Err(CommandError::new(
                    code::SWITCH_BRANCH_UNKNOWN_ARGUMENT,
                    format!("$switch found an unknown argument to a branch: {key}"),
                ));
            }
        }
    }
    let case = case.ok_or_else(|| {
        CommandError::new(
            code::SWITCH_BRANCH_WITHOUT_CASE,
            "$switch requires each branch have a 'case' expression",
        )
    })?;
    let then = then.ok_or_else(|| {
        CommandError::new(
            code::SWITCH_BRANCH_WITHOUT_THEN,
            "$switch requires each branch have a 'then' expression.",
        )
    })?;
    Ok((case, then))
}

/// `$mergeObjects`: later documents' fields win (a field keeps its first position); null and
/// missing arguments are skipped.
pub(super) fn merge_objects(arguments: &[Expr], scope: &Scope) -> StoreResult<Option<Bson>> {
    let mut out = Document::new();
    // An upper bound of the result's size, measured exactly only when it passes the limit.
    let mut size_bound = 0usize;
    for argument in arguments {
        let document = match argument.eval(scope)? {
            value if is_nullish(value.as_ref()) => continue,
            Some(Bson::Document(document)) => document,
            other => {
                return Err(CommandError::new(
                    code::MERGE_OBJECTS_NOT_OBJECT,
                    format!(
                        "$mergeObjects requires object inputs, but input {} is of type {}",
                        value_text(other.as_ref()),
                        type_of(other.as_ref())
                    ),
                ));
            }
        };
        scope.charge(document.len())?;
        for (key, value) in document {
            size_bound = size_bound
                .saturating_add(key.len() + 2)
                .saturating_add(value_size(&value));
            out.insert(key, value);
        }
        if check_bson_size(size_bound).is_err() {
            size_bound = document_size(&out);
            check_bson_size(size_bound)?;
        }
    }
    Ok(Some(Bson::Document(out)))
}
