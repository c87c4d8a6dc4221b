//! `$redact`: an expression evaluated on each document, then on the embedded documents of those
//! it descends into, answering `$$KEEP` (keep as is), `$$PRUNE` (drop) or `$$DESCEND` (keep the
//! fields, redacting embedded documents, also inside arrays). `$$CURRENT` (and so `"$a"`) is the
//! document being decided; `$$ROOT` stays the top-level one.
//!
//! `KEEP`, `PRUNE` and `DESCEND` are variables the stage binds (to the strings mongod binds them
//! to), through the variables engine: no other expression sees them.

use std::cmp::Ordering;
use std::sync::Arc;

use bson::{Bson, Document};

use super::OutputBudget;
use crate::code;
use crate::errors::{CommandError, StoreResult, format_value};
use crate::expr::{Defined, Expr, Scope, Work};
use crate::value_order::compare_values;

/// The variables the stage binds, in the order of [`values`]; `CURRENT` last.
const NAMES: [&str; 4] = ["DESCEND", "PRUNE", "KEEP", "CURRENT"];

/// A parsed `$redact`.
#[derive(Debug, Clone)]
pub(crate) struct Redact {
    expr: Expr,
    names: Vec<String>,
}

enum Decision {
    Keep,
    Prune,
    Descend,
}

impl Redact {
    pub(crate) fn parse(spec: &Bson) -> StoreResult<Redact> {
        let names: Vec<String> = NAMES.iter().map(|name| (*name).to_owned()).collect();
        let expr = Expr::parse_in(spec, &Defined::TOP.with(&names[..3]))?;
        Ok(Redact { expr, names })
    }

    pub(super) fn run(
        &self,
        documents: Vec<Arc<Document>>,
        budget: &mut OutputBudget,
    ) -> StoreResult<Vec<Arc<Document>>> {
        let mut out = Vec::with_capacity(documents.len());
        for document in documents {
            let work = Work::default();
            let scope = Scope::new(&document, &work);
            match self.decide(&scope, &document)? {
                Decision::Keep => out.push(document),
                Decision::Prune => {}
                Decision::Descend => out.push(budget.admit(self.descend(&scope, &document)?)?),
            }
        }
        Ok(out)
    }

    /// The expression's answer for `current`.
    fn decide(&self, scope: &Scope, current: &Document) -> StoreResult<Decision> {
        let values = values(current);
        // Binding `$$CURRENT` copies the document: work, bounded like any evaluation's.
        scope.charge_copy(values[3].as_ref())?;
        let frame = scope.frame(&self.names, &values);
        let result = self.expr.eval(&scope.enter(&frame))?;
        let is = |word: &str| {
            result.as_ref().is_some_and(|value| {
                compare_values(value, &Bson::String(word.to_owned())) == Ordering::Equal
            })
        };
        if is("keep") {
            Ok(Decision::Keep)
        } else if is("prune") {
            Ok(Decision::Prune)
        } else if is("descend") {
            Ok(Decision::Descend)
        } else {
            Err(CommandError::new(
                code::REDACT_BAD_RESULT,
                format!(
                    "$redact's expression should not return anything aside from the variables $$KEEP, $$DESCEND, and $$PRUNE, but returned {}",
                    result
                        .as_ref()
                        .map_or_else(|| "MISSING".to_owned(), format_value)
                ),
            ))
        }
    }

    /// `current` with its embedded documents redacted.
    fn descend(&self, scope: &Scope, current: &Document) -> StoreResult<Document> {
        let mut out = Document::new();
        for (name, value) in current {
            if let Some(value) = self.redact_value(scope, value)? {
                out.insert(name.clone(), value);
            }
        }
        Ok(out)
    }

    /// A field's value once redacted: `None` for a pruned document.
    fn redact_value(&self, scope: &Scope, value: &Bson) -> StoreResult<Option<Bson>> {
        match value {
            Bson::Document(embedded) => Ok(match self.decide(scope, embedded)? {
                Decision::Keep => Some(value.clone()),
                Decision::Prune => None,
                Decision::Descend => Some(Bson::Document(self.descend(scope, embedded)?)),
            }),
            Bson::Array(items) => {
                let mut kept = Vec::with_capacity(items.len());
                for item in items {
                    if let Some(item) = self.redact_value(scope, item)? {
                        kept.push(item);
                    }
                }
                Ok(Some(Bson::Array(kept)))
            }
            other => Ok(Some(other.clone())),
        }
    }
}

/// The values of [`NAMES`] while `current` is decided.
fn values(current: &Document) -> [Option<Bson>; 4] {
    [
        Some(Bson::String("descend".to_owned())),
        Some(Bson::String("prune".to_owned())),
        Some(Bson::String("keep".to_owned())),
        Some(Bson::Document(current.clone())),
    ]
}
