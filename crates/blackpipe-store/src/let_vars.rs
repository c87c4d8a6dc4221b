//! `let` variables of `find`, `aggregate`, `update`, `delete` and `findAndModify` (5.0+):
//! `$$name` in an expression reads a constant the command defines.
//!
//! Modelled by binding before parsing: each variable's value is evaluated once per command
//! (an expression with no document), then every `$$name` / `$$name.path` reference in an
//! expression context (a filter's `$expr`, a pipeline stage other than `$match`'s query part,
//! a pipeline update) is replaced with `{$literal: value}` (or `$$REMOVE` when the path is
//! missing). References in query operators outside `$expr` stay plain strings, as in mongod.
//! The bound result is bounded: it may not exceed the BSON size limit in total.

use std::borrow::Cow;

use bson::{Bson, Document, doc};

use super::errors::{CommandError, StoreResult, check_bson_size};
use super::expr::{Expr, field_path_in_document};
use super::path::split_path;
use super::value_order::value_size;
use crate::code;

/// The evaluated variables of one command (empty without `let`).
#[derive(Debug, Default)]
pub(crate) struct LetVars(Document);

impl LetVars {
    /// Reads and evaluates the command's `let` document.
    ///
    /// # Errors
    /// TypeMismatch when `let` is not a document, 16870 for a name that is not a user
    /// variable name, and any error of evaluating a value.
    pub(crate) fn read(command: &Document) -> StoreResult<LetVars> {
        let spec = match command.get("let") {
            None => return Ok(LetVars::default()),
            Some(Bson::Document(spec)) => spec,
            Some(other) => {
                return Err(CommandError::type_mismatch(format!(
                    "BSON field 'let' is the wrong type '{}', expected type 'object'",
                    super::errors::type_name(other)
                )));
            }
        };
        let empty = Document::new();
        let mut values = Document::new();
        for (name, value) in spec {
            check_name(name)?;
            if let Some(value) = Expr::parse(value)?.evaluate(&empty)? {
                values.insert(name.clone(), value);
            }
        }
        Ok(LetVars(values))
    }

    /// `filter` with the variables bound inside its `$expr` clauses.
    ///
    /// # Errors
    /// BSONObjectTooLarge when the bound filter would exceed the size limit.
    pub(crate) fn filter<'a>(&self, filter: &'a Document) -> StoreResult<Cow<'a, Document>> {
        if self.0.is_empty() {
            return Ok(Cow::Borrowed(filter));
        }
        let mut budget = Budget::default();
        Ok(Cow::Owned(self.bind_filter(filter, &mut budget)?))
    }

    /// An update (`u`): a pipeline gets its variables bound; modifiers take no expressions.
    ///
    /// # Errors
    /// BSONObjectTooLarge when the bound update would exceed the size limit.
    pub(crate) fn update<'a>(&self, update: &'a Bson) -> StoreResult<Cow<'a, Bson>> {
        match update {
            Bson::Array(stages) if !self.0.is_empty() => {
                Ok(Cow::Owned(Bson::Array(self.pipeline(stages)?.into_owned())))
            }
            other => Ok(Cow::Borrowed(other)),
        }
    }

    /// A pipeline with the variables bound in every stage.
    ///
    /// # Errors
    /// BSONObjectTooLarge when the bound pipeline would exceed the size limit.
    pub(crate) fn pipeline<'a>(&self, stages: &'a [Bson]) -> StoreResult<Cow<'a, [Bson]>> {
        if self.0.is_empty() {
            return Ok(Cow::Borrowed(stages));
        }
        let mut budget = Budget::default();
        let mut out = Vec::with_capacity(stages.len());
        for stage in stages {
            let bound = match stage {
                Bson::Document(spec) => {
                    let mut bound = Document::new();
                    for (name, value) in spec {
                        let value = match (name.as_str(), value) {
                            ("$match", Bson::Document(query)) => {
                                Bson::Document(self.bind_filter(query, &mut budget)?)
                            }
                            _ => self.bind_expression(value, &mut budget)?,
                        };
                        bound.insert(name.clone(), value);
                    }
                    Bson::Document(bound)
                }
                other => other.clone(),
            };
            out.push(bound);
        }
        Ok(Cow::Owned(out))
    }

    fn bind_filter(&self, filter: &Document, budget: &mut Budget) -> StoreResult<Document> {
        let mut out = Document::new();
        for (key, value) in filter {
            let bound = match (key.as_str(), value) {
                ("$expr", _) => self.bind_expression(value, budget)?,
                ("$and" | "$or" | "$nor", Bson::Array(clauses)) => Bson::Array(
                    clauses
                        .iter()
                        .map(|clause| match clause {
                            Bson::Document(clause) => {
                                self.bind_filter(clause, budget).map(Bson::Document)
                            }
                            other => Ok(other.clone()),
                        })
                        .collect::<StoreResult<_>>()?,
                ),
                _ => value.clone(),
            };
            out.insert(key.clone(), bound);
        }
        Ok(out)
    }

    fn bind_expression(&self, value: &Bson, budget: &mut Budget) -> StoreResult<Bson> {
        match value {
            Bson::String(text) => Ok(self
                .reference(text, budget)?
                .unwrap_or_else(|| value.clone())),
            // A literal is never evaluated, so nothing inside it is a reference.
            Bson::Document(d) if d.len() == 1 && d.contains_key("$literal") => Ok(value.clone()),
            Bson::Document(d) => {
                let mut out = Document::new();
                for (key, item) in d {
                    out.insert(key.clone(), self.bind_expression(item, budget)?);
                }
                Ok(Bson::Document(out))
            }
            Bson::Array(items) => items
                .iter()
                .map(|item| self.bind_expression(item, budget))
                .collect::<StoreResult<Vec<_>>>()
                .map(Bson::Array),
            other => Ok(other.clone()),
        }
    }

    /// The replacement of `text` when it references a bound variable.
    fn reference(&self, text: &str, budget: &mut Budget) -> StoreResult<Option<Bson>> {
        let Some(variable) = text.strip_prefix("$$") else {
            return Ok(None);
        };
        let (name, rest) = variable.split_once('.').unwrap_or((variable, ""));
        let Some(value) = self.0.get(name) else {
            return Ok(None);
        };
        let found = if rest.is_empty() {
            Some(value.clone())
        } else {
            match value {
                Bson::Document(d) => field_path_in_document(d, &split_path(rest)),
                _ => None,
            }
        };
        Ok(Some(match found {
            Some(found) => {
                budget.spend(value_size(&found))?;
                Bson::Document(doc! { "$literal": found })
            }
            None => Bson::String("$$REMOVE".to_owned()),
        }))
    }
}

/// The bytes substituted so far: `["$$big", "$$big", ...]` may not grow past the size limit.
#[derive(Default)]
struct Budget(usize);

impl Budget {
    fn spend(&mut self, bytes: usize) -> StoreResult<()> {
        self.0 = self.0.saturating_add(bytes);
        check_bson_size(self.0)
    }
}

/// mongod's rule for user variable names: a lowercase ASCII letter or a non-ASCII character
/// first, then letters, digits and `_`.
fn check_name(name: &str) -> StoreResult<()> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || !c.is_ascii());
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || !c.is_ascii());
    if first_ok && rest_ok {
        Ok(())
    } else {
        Err(CommandError::new(
            code::INVALID_VARIABLE_NAME,
            format!("'{name}' starts with an invalid character for a user variable name"),
        ))
    }
}
