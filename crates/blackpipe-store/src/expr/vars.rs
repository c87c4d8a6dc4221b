//! Variables: `$$name` references, `$let`, and the scopes they are resolved in.
//!
//! Parsing resolves each `$$name` against the names that the enclosing `$let`, `$map`,
//! `$filter` and `$reduce` define ([`Defined`]) and refuses an undefined one (17276) when the
//! pipeline is parsed, as mongod does. Evaluation carries a [`Scope`]: the document, the work
//! spent so far, and a chain of frames, one per binding construct being evaluated, holding the
//! bound values. A reference looks its name up innermost frame first, so an inner binding
//! shadows an outer one; nothing is substituted into expressions. A `$let` may rebind `CURRENT`,
//! which field paths (`"$a"`) then read instead of the document.
//!
//! Operators that evaluate sub-expressions must pass the scope on (`Expr::eval(scope)`), and
//! named-argument parsers must parse with the enclosing names (`Expr::parse_in(value, defined)`),
//! or the variables of an enclosing `$map` are invisible inside them.

use std::cell::Cell;

use bson::{Bson, Document};

use super::system_vars::{self, SystemVars};
use super::{Expr, field_path_in_value};
use crate::code;
use crate::errors::{CommandError, StoreResult};
use crate::path::split_path;
use crate::value_order::value_size;

/// The variable names defined where an expression is parsed (a parse-time chain of frames).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Defined<'a> {
    names: &'a [String],
    parent: Option<&'a Defined<'a>>,
}

impl<'a> Defined<'a> {
    /// Outside any binding construct: only the built-in variables.
    pub(crate) const TOP: Defined<'static> = Defined {
        names: &[],
        parent: None,
    };

    /// `self` with `names` defined on top.
    pub(crate) fn with<'b>(&'b self, names: &'b [String]) -> Defined<'b> {
        Defined {
            names,
            parent: Some(self),
        }
    }

    fn contains(&self, name: &str) -> bool {
        self.names.iter().any(|defined| defined == name)
            || self.parent.is_some_and(|parent| parent.contains(name))
    }
}

/// The most work one evaluation may do (values visited or copied), so that nested iteration
/// over large arrays (`$map` inside `$map`, a `$reduce` concatenating its accumulator) ends in
/// an error instead of running for hours. Generous: a single pass over the largest array a
/// document can hold costs about two million.
pub(crate) const WORK_LIMIT: u64 = 1 << 28;

/// The work an evaluation has spent (see [`WORK_LIMIT`]).
#[derive(Debug, Default)]
pub(crate) struct Work(Cell<u64>);

/// One binding construct's variables while its body is evaluated.
#[derive(Debug)]
pub(crate) struct Frame<'a> {
    names: &'a [String],
    values: &'a [Option<Bson>],
    parent: Option<&'a Frame<'a>>,
}

/// What an expression is evaluated against: the document and the variables in scope.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scope<'a> {
    root: &'a Document,
    frame: Option<&'a Frame<'a>>,
    work: &'a Work,
    /// `$$NOW` and `$$CLUSTER_TIME`, fixed for the command (`system_vars.rs`).
    system: SystemVars,
}

impl<'a> Scope<'a> {
    /// The scope of a top-level evaluation of `root`.
    pub(crate) fn new(root: &'a Document, work: &'a Work) -> Scope<'a> {
        Scope {
            root,
            frame: None,
            work,
            system: system_vars::current(),
        }
    }

    pub(crate) fn root(&self) -> &'a Document {
        self.root
    }

    /// A frame binding `names[i]` to `values[i]` (a `None` value is missing), to be entered
    /// with [`Scope::enter`].
    pub(crate) fn frame<'b>(&'b self, names: &'b [String], values: &'b [Option<Bson>]) -> Frame<'b>
    where
        'a: 'b,
    {
        Frame {
            names,
            values,
            parent: self.frame,
        }
    }

    /// This scope with `frame`'s variables on top.
    pub(crate) fn enter<'b>(&'b self, frame: &'b Frame<'b>) -> Scope<'b>
    where
        'a: 'b,
    {
        Scope {
            root: self.root,
            frame: Some(frame),
            work: self.work,
            system: self.system,
        }
    }

    /// The value bound to `name`, innermost first: `None` when nothing binds it, `Some(None)`
    /// when it is bound to a missing value.
    fn lookup(&self, name: &str) -> Option<Option<&'a Bson>> {
        let mut frame = self.frame;
        while let Some(current) = frame {
            if let Some(position) = current.names.iter().position(|bound| bound == name) {
                return Some(current.values.get(position).and_then(Option::as_ref));
            }
            frame = current.parent;
        }
        None
    }

    /// A field path (`"$a.b"`, `"$$CURRENT.a.b"`): read from `$$CURRENT`, which is the
    /// document unless a `$let` rebinds it.
    pub(super) fn current_path(&self, parts: &[String]) -> StoreResult<Option<Bson>> {
        let value = match self.lookup("CURRENT") {
            None if parts.is_empty() => Some(Bson::Document(self.root.clone())),
            None => super::field_path_in_document(self.root, parts),
            Some(current) => path_in(current, parts),
        };
        self.charge_copy(value.as_ref())?;
        Ok(value)
    }

    /// Charges `units` of work, failing once the evaluation has done more than mongod would
    /// finish in reasonable time (a limit mongod does not have; it relies on `maxTimeMS`).
    pub(crate) fn charge(&self, units: usize) -> StoreResult<()> {
        let spent = self
            .work
            .0
            .get()
            .saturating_add(u64::try_from(units).unwrap_or(u64::MAX));
        self.work.0.set(spent);
        if spent <= WORK_LIMIT {
            return Ok(());
        }
        Err(CommandError::new(
            code::EXCEEDED_TIME_LIMIT,
            format!(
                "an aggregation expression would visit more than {WORK_LIMIT} values for one \
                 document; blackpipe stops it there (mongod has no such limit)"
            ),
        ))
    }

    /// Charges the copy of a value (a path or variable read, a literal): about one unit per 16
    /// bytes, so that re-reading a large value in every iteration of a loop counts. blackpipe
    /// copies what mongod shares by reference, so this work is blackpipe's own.
    pub(crate) fn charge_copy(&self, value: Option<&Bson>) -> StoreResult<()> {
        self.charge(1 + value.map_or(0, |value| value_size(value) / 16))
    }
}

/// `value` followed along `parts` with aggregation field-path rules (a missing value, or a
/// path into a scalar, is missing).
fn path_in(value: Option<&Bson>, parts: &[String]) -> Option<Bson> {
    let value = value?;
    if parts.is_empty() {
        return Some(value.clone());
    }
    field_path_in_value(value, parts)
}

/// A reference to a user variable: `$$name` or `$$name.a.b`.
#[derive(Debug, Clone)]
pub(crate) struct Reference {
    name: String,
    path: Vec<String>,
}

impl Reference {
    pub(super) fn evaluate(&self, scope: &Scope) -> StoreResult<Option<Bson>> {
        // Parsing checked that an enclosing construct binds the name, so it is bound here,
        // unless it is a system variable (`NOW`, `CLUSTER_TIME`), which no user can bind.
        let value = match scope.lookup(&self.name) {
            Some(bound) => path_in(bound, &self.path),
            None => path_in(Some(&scope.system.value(&self.name)?), &self.path),
        };
        scope.charge_copy(value.as_ref())?;
        Ok(value)
    }
}

/// Parses a `$$`-prefixed string (`text` without the `$$`): a built-in or defined variable.
pub(super) fn parse_reference(text: &str, defined: &Defined) -> StoreResult<Expr> {
    let (name, rest) = text.split_once('.').unwrap_or((text, ""));
    check_name_for_read(name)?;
    let path = if rest.is_empty() {
        Vec::new()
    } else {
        split_path(rest)
    };
    if defined.contains(name) && name != "CURRENT" {
        return Ok(Expr::Variable(Box::new(Reference {
            name: name.to_owned(),
            path,
        })));
    }
    match name {
        // Field paths read `$$CURRENT` wherever it is bound, so `$$CURRENT.a` is `$a`.
        "CURRENT" => Ok(Expr::Field(path)),
        "ROOT" => Ok(Expr::Root(path)),
        "REMOVE" => Ok(Expr::Remove),
        // The command's system variables (stages-single): read from the scope.
        "NOW" | "CLUSTER_TIME" => Ok(Expr::Variable(Box::new(Reference {
            name: name.to_owned(),
            path,
        }))),
        _ => Err(CommandError::new(
            code::UNDEFINED_VARIABLE,
            format!("Use of undefined variable: {name}"),
        )),
    }
}

/// mongod's rule for a variable a user binds (`$let`'s `vars`, `as`): `CURRENT`, or a lowercase
/// ASCII letter or a non-ASCII byte first, then letters, digits, `_` and non-ASCII bytes.
///
/// # Errors
/// FailedToParse, worded as mongod 8.0 words it.
pub(crate) fn check_name_for_write(name: &str) -> StoreResult<()> {
    if name == "CURRENT" {
        return Ok(());
    }
    check_name(name, |byte| byte.is_ascii_lowercase())
}

/// mongod's rule for a variable a `$$` reference names: like [`check_name_for_write`], but an
/// uppercase first letter is allowed (the built-ins are uppercase).
fn check_name_for_read(name: &str) -> StoreResult<()> {
    check_name(name, |byte| byte.is_ascii_alphabetic())
}

fn check_name(name: &str, first_ok: impl Fn(u8) -> bool) -> StoreResult<()> {
    let bytes = name.as_bytes();
    let Some((&first, rest)) = bytes.split_first() else {
        return Err(CommandError::failed_to_parse(
            "empty variable names are not allowed",
        ));
    };
    if first.is_ascii() && !first_ok(first) {
        return Err(CommandError::failed_to_parse(format!(
            "'{name}' starts with an invalid character for a user variable name"
        )));
    }
    let valid = |byte: &u8| byte.is_ascii_alphanumeric() || *byte == b'_' || !byte.is_ascii();
    if let Some(&bad) = rest.iter().find(|byte| !valid(byte)) {
        return Err(CommandError::failed_to_parse(format!(
            "'{name}' contains an invalid character for a variable name: '{}'",
            char::from(bad)
        )));
    }
    Ok(())
}

/// A parsed `$let`.
#[derive(Debug, Clone)]
pub(crate) struct Let {
    names: Vec<String>,
    values: Vec<Expr>,
    body: Expr,
}

impl Let {
    /// Parses `$let`'s argument `{vars: {...}, in: ...}`. The values are parsed with the
    /// enclosing names only (they cannot see each other), `in` with the new names too.
    pub(super) fn parse(argument: &Bson, defined: &Defined) -> StoreResult<Let> {
        let Bson::Document(spec) = argument else {
            return Err(CommandError::new(
                code::LET_NOT_OBJECT,
                "$let only supports an object as its argument",
            ));
        };
        let (mut vars, mut body) = (None, None);
        for (key, value) in spec {
            match key.as_str() {
                "vars" => vars = Some(value),
                "in" => body = Some(value),
                _ => {
                    return Err(CommandError::new(
                        code::LET_UNKNOWN_PARAMETER,
                        format!("Unrecognized parameter to $let: {key}"),
                    ));
                }
            }
        }
        let vars = vars.ok_or_else(|| {
            CommandError::new(code::LET_WITHOUT_VARS, "Missing 'vars' parameter to $let")
        })?;
        let body = body.ok_or_else(|| {
            CommandError::new(code::LET_WITHOUT_IN, "Missing 'in' parameter to $let")
        })?;
        let Bson::Document(vars) = vars else {
            return Err(CommandError::new(
                code::EXPECTED_AN_OBJECT,
                "invalid parameter: expected an object (vars)",
            ));
        };
        let mut names = Vec::with_capacity(vars.len());
        let mut values = Vec::with_capacity(vars.len());
        for (name, value) in vars {
            values.push(Expr::parse_in(value, defined)?);
            names.push(name.clone());
        }
        // mongod checks the names after parsing every value.
        for name in &names {
            check_name_for_write(name)?;
        }
        let body = Expr::parse_in(body, &defined.with(&names))?;
        Ok(Let {
            names,
            values,
            body,
        })
    }

    pub(super) fn evaluate(&self, scope: &Scope) -> StoreResult<Option<Bson>> {
        let values = self
            .values
            .iter()
            .map(|value| value.eval(scope))
            .collect::<StoreResult<Vec<_>>>()?;
        let frame = scope.frame(&self.names, &values);
        self.body.eval(&scope.enter(&frame))
    }
}
