//! `$documents`: the first stage of a collectionless pipeline (`{aggregate: 1}`, or a
//! `$lookup`/`$unionWith` sub-pipeline), producing the documents its expression evaluates to.
//! The expression is evaluated once, against an empty document (a command's `let` variables
//! are bound into it beforehand), and must give an array of documents.

use std::sync::Arc;

use bson::{Bson, Document};

use super::OutputBudget;
use crate::code;
use crate::errors::{CommandError, StoreResult, type_name};
use crate::expr::Expr;

/// A parsed `$documents`.
#[derive(Debug, Clone)]
pub(crate) struct Documents(Expr);

impl Documents {
    pub(super) fn parse(spec: &Bson) -> StoreResult<Documents> {
        Ok(Documents(Expr::parse(spec)?))
    }

    /// The documents.
    ///
    /// # Errors
    /// Location5858203 when the value is not an array of documents; the expression's errors.
    pub(super) fn run(&self, budget: &mut OutputBudget) -> StoreResult<Vec<Arc<Document>>> {
        let value = self.0.evaluate(&Document::new())?;
        let Some(Bson::Array(items)) = value else {
            return Err(not_an_array_of_objects(value.as_ref()));
        };
        items
            .into_iter()
            .map(|item| match item {
                Bson::Document(document) => budget.admit(document),
                other => Err(not_an_array_of_objects(Some(&other))),
            })
            .collect()
    }
}

fn not_an_array_of_objects(value: Option<&Bson>) -> CommandError {
    CommandError::new(
        code::DOCUMENTS_NOT_AN_ARRAY,
        format!(
            "$documents must evaluate to an array of objects, found {}",
            value.map_or("missing", type_name)
        ),
    )
}
