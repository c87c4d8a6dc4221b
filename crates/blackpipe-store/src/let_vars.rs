//! `let` variables of `find`, `aggregate`, `update`, `delete` and `findAndModify` (5.0+):
//! `$$name` in an expression reads a constant the command defines.
//!
//! Modelled by binding before parsing: each variable's value is evaluated once per command
//! (an expression with no document), then every `$$name` / `$$name.path` reference in an
//! expression context (a filter's `$expr`, a pipeline stage other than `$match`'s query part,
//! a pipeline update) is replaced with `{$literal: value}` (or `$$REMOVE` when the path is
//! missing). References in query operators outside `$expr` stay plain strings, as in mongod.
//! A reference inside a `$let`, `$map`, `$filter` or `$reduce` that binds the same name is the
//! inner variable and is left alone. The bound result is bounded: it may not exceed the BSON
//! size limit in total.
//!
//! The same binding serves a `$lookup`'s `let`, bound for each input document into the
//! lookup's sub-pipeline. Sub-pipelines (`$lookup`, `$unionWith`, `$facet`, and `$graphLookup`'s
//! `startWith` and `restrictSearchWithMatch`) are bound stage by stage like the top-level one;
//! a `$lookup` that defines a name in its own `let` shadows it inside its pipeline. A variable
//! bound to a missing value is `$$REMOVE`.

use std::borrow::Cow;

use bson::{Bson, Document, doc};

use super::errors::{CommandError, StoreResult, check_bson_size};
use super::expr::vars::check_name_for_write;
use super::expr::{Expr, field_path_in_document};
use super::path::split_path;
use super::value_order::value_size;
use crate::code;

/// The evaluated variables of one command (empty without `let`), or of one `$lookup`'s `let`
/// for one input document.
#[derive(Debug, Default)]
pub(crate) struct LetVars {
    values: Document,
    /// The variables bound to a missing value: a reference to one is `$$REMOVE`.
    missing: Vec<String>,
}

impl LetVars {
    /// Reads and evaluates the command's `let` document.
    ///
    /// # Errors
    /// TypeMismatch when `let` is not a document, FailedToParse for a name that is not a user
    /// variable name, 4738901 for a system variable, and any error of evaluating a value.
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
        let mut bound = Vec::with_capacity(spec.len());
        for (name, value) in spec {
            check_name(name)?;
            bound.push((name.clone(), Expr::parse(value)?.evaluate(&empty)?));
        }
        Ok(LetVars::bound(bound))
    }

    /// Variables with their values already evaluated (`None`: bound to a missing value).
    pub(crate) fn bound(variables: Vec<(String, Option<Bson>)>) -> LetVars {
        let mut vars = LetVars::default();
        for (name, value) in variables {
            match value {
                Some(value) => {
                    vars.values.insert(name, value);
                }
                None => vars.missing.push(name),
            }
        }
        vars
    }

    fn is_empty(&self) -> bool {
        self.values.is_empty() && self.missing.is_empty()
    }

    /// `filter` with the variables bound inside its `$expr` clauses.
    ///
    /// # Errors
    /// BSONObjectTooLarge when the bound filter would exceed the size limit.
    pub(crate) fn filter<'a>(&self, filter: &'a Document) -> StoreResult<Cow<'a, Document>> {
        if self.is_empty() {
            return Ok(Cow::Borrowed(filter));
        }
        let mut budget = Budget::default();
        Ok(Cow::Owned(self.bind_filter(filter, &mut budget, &[])?))
    }

    /// An update (`u`): a pipeline gets its variables bound; modifiers take no expressions.
    ///
    /// # Errors
    /// BSONObjectTooLarge when the bound update would exceed the size limit.
    pub(crate) fn update<'a>(&self, update: &'a Bson) -> StoreResult<Cow<'a, Bson>> {
        match update {
            Bson::Array(stages) if !self.is_empty() => {
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
        if self.is_empty() {
            return Ok(Cow::Borrowed(stages));
        }
        let mut budget = Budget::default();
        Ok(Cow::Owned(self.bind_pipeline(stages, &mut budget, &[])?))
    }

    fn bind_pipeline(
        &self,
        stages: &[Bson],
        budget: &mut Budget,
        shadowed: &[String],
    ) -> StoreResult<Vec<Bson>> {
        let mut out = Vec::with_capacity(stages.len());
        for stage in stages {
            let bound = match stage {
                Bson::Document(spec) => {
                    let mut bound = Document::new();
                    for (name, value) in spec {
                        let value = match (name.as_str(), value) {
                            ("$match", Bson::Document(query)) => {
                                Bson::Document(self.bind_filter(query, budget, shadowed)?)
                            }
                            _ => match self.bind_nested(name, value, budget, shadowed)? {
                                Some(bound) => bound,
                                None => self.bind_expression(value, budget, shadowed)?,
                            },
                        };
                        bound.insert(name.clone(), value);
                    }
                    Bson::Document(bound)
                }
                other => other.clone(),
            };
            out.push(bound);
        }
        Ok(out)
    }

    fn bind_filter(
        &self,
        filter: &Document,
        budget: &mut Budget,
        shadowed: &[String],
    ) -> StoreResult<Document> {
        let mut out = Document::new();
        for (key, value) in filter {
            let bound = match (key.as_str(), value) {
                ("$expr", _) => self.bind_expression(value, budget, shadowed)?,
                ("$and" | "$or" | "$nor", Bson::Array(clauses)) => Bson::Array(
                    clauses
                        .iter()
                        .map(|clause| match clause {
                            Bson::Document(clause) => self
                                .bind_filter(clause, budget, shadowed)
                                .map(Bson::Document),
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

    /// `value` with the references to bound variables replaced, except those to a name in
    /// `shadowed` (which an enclosing `$let`, `$map`, `$filter` or `$reduce` rebinds).
    fn bind_expression(
        &self,
        value: &Bson,
        budget: &mut Budget,
        shadowed: &[String],
    ) -> StoreResult<Bson> {
        match value {
            Bson::String(text) => Ok(self
                .reference(text, budget, shadowed)?
                .unwrap_or_else(|| value.clone())),
            // A literal is never evaluated, so nothing inside it is a reference.
            Bson::Document(d) if d.len() == 1 && d.contains_key("$literal") => Ok(value.clone()),
            Bson::Document(d) => {
                let binder = match d.iter().next() {
                    Some((name, Bson::Document(spec))) if d.len() == 1 => {
                        binder_names(name, spec).map(|names| (name, spec, names))
                    }
                    _ => None,
                };
                if let Some((name, spec, names)) = binder {
                    let bound = self.bind_binder(spec, &names, budget, shadowed)?;
                    let mut out = Document::new();
                    out.insert(name.clone(), bound);
                    return Ok(Bson::Document(out));
                }
                let mut out = Document::new();
                for (key, item) in d {
                    out.insert(key.clone(), self.bind_expression(item, budget, shadowed)?);
                }
                Ok(Bson::Document(out))
            }
            Bson::Array(items) => items
                .iter()
                .map(|item| self.bind_expression(item, budget, shadowed))
                .collect::<StoreResult<Vec<_>>>()
                .map(Bson::Array),
            other => Ok(other.clone()),
        }
    }

    /// The argument of a binding operator: the arguments `names` says are evaluated with the
    /// new variables get them added to `shadowed`.
    fn bind_binder(
        &self,
        spec: &Document,
        names: &BinderNames,
        budget: &mut Budget,
        shadowed: &[String],
    ) -> StoreResult<Bson> {
        let inner: Vec<String> = shadowed.iter().chain(&names.bound).cloned().collect();
        let mut out = Document::new();
        for (key, item) in spec {
            let scope = if key == names.body { &inner } else { shadowed };
            out.insert(key.clone(), self.bind_expression(item, budget, scope)?);
        }
        Ok(Bson::Document(out))
    }

    // Stages with sub-pipelines (stages-multi): the variables reach into `$lookup`,
    // `$unionWith` and `$facet` pipelines and `$graphLookup`'s expression and filter, as in
    // mongod; a `$lookup`'s own `let` shadows the names it defines inside its pipeline.

    /// `value`, the specification of stage `name`, bound if the stage holds sub-pipelines;
    /// `None` for the other stages. A malformed specification is left for the stage's parser.
    fn bind_nested(
        &self,
        name: &str,
        value: &Bson,
        budget: &mut Budget,
        shadowed: &[String],
    ) -> StoreResult<Option<Bson>> {
        if !matches!(name, "$lookup" | "$unionWith" | "$facet" | "$graphLookup") {
            return Ok(None);
        }
        let Bson::Document(spec) = value else {
            return Ok(Some(value.clone()));
        };
        let inner: Vec<String> = match (name, spec.get("let")) {
            ("$lookup", Some(Bson::Document(own))) => {
                shadowed.iter().chain(own.keys()).cloned().collect()
            }
            _ => shadowed.to_vec(),
        };
        let mut out = Document::new();
        for (key, item) in spec {
            let bound = match (name, key.as_str(), item) {
                ("$lookup" | "$unionWith", "pipeline", Bson::Array(stages)) => {
                    Bson::Array(self.bind_pipeline(stages, budget, &inner)?)
                }
                ("$lookup", "let", Bson::Document(_)) | ("$graphLookup", "startWith", _) => {
                    self.bind_expression(item, budget, shadowed)?
                }
                ("$graphLookup", "restrictSearchWithMatch", Bson::Document(filter)) => {
                    Bson::Document(self.bind_filter(filter, budget, shadowed)?)
                }
                ("$facet", _, Bson::Array(stages)) => {
                    Bson::Array(self.bind_pipeline(stages, budget, shadowed)?)
                }
                _ => item.clone(),
            };
            out.insert(key.clone(), bound);
        }
        Ok(Some(Bson::Document(out)))
    }

    /// The replacement of `text` when it references a bound variable.
    fn reference(
        &self,
        text: &str,
        budget: &mut Budget,
        shadowed: &[String],
    ) -> StoreResult<Option<Bson>> {
        let Some(variable) = text.strip_prefix("$$") else {
            return Ok(None);
        };
        let (name, rest) = variable.split_once('.').unwrap_or((variable, ""));
        if shadowed.iter().any(|inner| inner == name) {
            return Ok(None);
        }
        if self.missing.iter().any(|missing| missing == name) {
            return Ok(Some(Bson::String("$$REMOVE".to_owned())));
        }
        let Some(value) = self.values.get(name) else {
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

/// The variables a binding operator's argument defines, and the argument they are visible in.
struct BinderNames {
    bound: Vec<String>,
    body: &'static str,
}

/// What `name` (an operator) binds, if it binds variables.
fn binder_names(name: &str, spec: &Document) -> Option<BinderNames> {
    let as_name = || match spec.get("as") {
        Some(Bson::String(name)) => name.clone(),
        Some(_) => String::new(),
        None => "this".to_owned(),
    };
    let (bound, body) = match name {
        "$let" => match spec.get("vars") {
            Some(Bson::Document(vars)) => (vars.keys().cloned().collect(), "in"),
            _ => (Vec::new(), "in"),
        },
        "$map" => (vec![as_name()], "in"),
        "$filter" => (vec![as_name()], "cond"),
        "$reduce" => (vec!["this".to_owned(), "value".to_owned()], "in"),
        _ => return None,
    };
    Some(BinderNames { bound, body })
}

/// The system variables a command's `let` may set only from inside the server.
const SYSTEM_VARIABLES: [&str; 5] = ["NOW", "CLUSTER_TIME", "IS_MR", "JS_SCOPE", "USER_ROLES"];

/// mongod's rule for a command's `let` names: a user variable name (see
/// [`check_name_for_write`]), worded with mongod's context.
fn check_name(name: &str) -> StoreResult<()> {
    if SYSTEM_VARIABLES.contains(&name) {
        return Err(CommandError::new(
            code::SET_INTERNAL_CONSTANT,
            format!("Attempt to set internal constant: {name}"),
        ));
    }
    if name == "CURRENT" {
        // mongod rebinds `$$CURRENT` (and so every field path) to the value; blackpipe binds
        // a command's variables by substitution, which cannot reach field paths.
        return Err(CommandError::failed_to_parse(
            "Invalid 'let' parameter :: caused by :: blackpipe does not support binding \
             'CURRENT' in a command's let",
        ));
    }
    check_name_for_write(name).map_err(|error| {
        CommandError::new(
            error.code,
            format!("Invalid 'let' parameter :: caused by :: {}", error.message),
        )
    })
}
