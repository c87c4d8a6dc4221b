//! The stages that work on their own input only (stages-single): `$bucket`, `$bucketAuto`,
//! `$sample`, `$redact`, `$densify` and `$fill`, each in its own file; this one dispatches to
//! them and holds the helpers they share.

use std::sync::Arc;

use bson::{Bson, Document};

use super::OutputBudget;
use super::bucket::Bucket;
use super::bucket_auto::BucketAuto;
use super::densify::Densify;
use super::fill::Fill;
use super::redact::Redact;
use super::sample::Sample;
use crate::code;
use crate::collation::Collation;
use crate::errors::{CommandError, StoreResult, type_name};
use crate::expr::{Expr, Operator};

/// The names of the stages this family parses.
pub(super) const NAMES: &[&str] = &[
    "$bucket",
    "$bucketAuto",
    "$sample",
    "$redact",
    "$densify",
    "$fill",
];

/// One parsed stage of the family.
#[derive(Debug, Clone)]
pub(super) enum SingleStage {
    Bucket(Box<Bucket>),
    BucketAuto(Box<BucketAuto>),
    Sample(Sample),
    Redact(Box<Redact>),
    Densify(Box<Densify>),
    Fill(Box<Fill>),
}

impl SingleStage {
    /// Parses the stage `name` (one of [`NAMES`]) from its specification.
    pub(super) fn parse(name: &str, spec: &Bson) -> StoreResult<SingleStage> {
        Ok(match name {
            "$bucket" => SingleStage::Bucket(Box::new(Bucket::parse(spec)?)),
            "$bucketAuto" => SingleStage::BucketAuto(Box::new(BucketAuto::parse(spec)?)),
            "$sample" => SingleStage::Sample(Sample::parse(spec)?),
            "$redact" => SingleStage::Redact(Box::new(Redact::parse(spec)?)),
            "$densify" => SingleStage::Densify(Box::new(Densify::parse(spec)?)),
            "$fill" => SingleStage::Fill(Box::new(Fill::parse(spec)?)),
            other => {
                return Err(CommandError::new(
                    code::INTERNAL_ERROR,
                    format!("{other} is not a single-input stage"),
                ));
            }
        })
    }

    /// The name mongod gives the stage in errors (`$bucket` is a `$group` there, `$densify` a
    /// `$sort`).
    pub(super) fn source_name(&self) -> &'static str {
        match self {
            SingleStage::Bucket(_) => "$group",
            SingleStage::BucketAuto(_) => "$bucketAuto",
            SingleStage::Sample(_) => "$sample",
            SingleStage::Redact(_) => "$redact",
            // mongod runs `$densify` as a `$sort` and an internal stage.
            SingleStage::Densify(_) => "$sort",
            SingleStage::Fill(_) => "$fill",
        }
    }

    /// Whether the stage may follow `$changeStream` (mongod allows `$redact` there).
    pub(super) fn allowed_in_change_stream(&self) -> bool {
        matches!(self, SingleStage::Redact(_))
    }

    /// The stage comparing strings under the command's collation.
    pub(super) fn with_collation(self, collation: Option<&Collation>) -> SingleStage {
        match self {
            SingleStage::Bucket(stage) => {
                SingleStage::Bucket(Box::new(stage.with_collation(collation)))
            }
            SingleStage::BucketAuto(stage) => {
                SingleStage::BucketAuto(Box::new(stage.with_collation(collation)))
            }
            SingleStage::Densify(stage) => {
                SingleStage::Densify(Box::new(stage.with_collation(collation)))
            }
            SingleStage::Fill(stage) => {
                SingleStage::Fill(Box::new(stage.with_collation(collation)))
            }
            other => other,
        }
    }

    pub(super) fn run(
        &self,
        documents: Vec<Arc<Document>>,
        budget: &mut OutputBudget,
    ) -> StoreResult<Vec<Arc<Document>>> {
        match self {
            SingleStage::Bucket(stage) => stage.run(documents, budget),
            SingleStage::BucketAuto(stage) => stage.run(documents, budget),
            SingleStage::Sample(stage) => Ok(stage.run(documents)),
            SingleStage::Redact(stage) => stage.run(documents, budget),
            SingleStage::Densify(stage) => stage.run(documents, budget),
            SingleStage::Fill(stage) => stage.run(documents, budget),
        }
    }
}

/// The value of a constant expression (one that reads no field, variable or random number),
/// as mongod folds a stage argument it requires to be constant; `None` when it is not one.
///
/// # Errors
/// A malformed expression's own parse error, or its evaluation error.
pub(super) fn constant_value(value: &Bson) -> StoreResult<Option<Bson>> {
    let expr = Expr::parse(value)?;
    if !is_constant(value) {
        return Ok(None);
    }
    expr.evaluate(&Document::new())
}

fn is_constant(value: &Bson) -> bool {
    match value {
        // mongod folds the command's system variables to constants too.
        Bson::String(text) => !text.starts_with('$') || text == "$$NOW" || text == "$$CLUSTER_TIME",
        Bson::Document(document) => match document.iter().next() {
            Some((name, _)) if name == "$literal" => true,
            Some((name, _)) if name == "$rand" => false,
            _ => document.values().all(is_constant),
        },
        Bson::Array(items) => items.iter().all(is_constant),
        _ => true,
    }
}

/// `left op right` with the arithmetic of the `$add`, `$subtract`, `$multiply`, `$divide` and
/// `$mod` expressions (types, overflow and errors included).
pub(super) fn arith(operator: Operator, left: &Bson, right: &Bson) -> StoreResult<Bson> {
    let call = Expr::Operator(
        operator,
        vec![Expr::Literal(left.clone()), Expr::Literal(right.clone())],
    );
    Ok(call.evaluate(&Document::new())?.unwrap_or(Bson::Null))
}

/// The error mongod's IDL parser reports for a field of the wrong type in stage `stage`.
pub(super) fn wrong_type(path: &str, value: &Bson, expected: &str) -> CommandError {
    CommandError::type_mismatch(format!(
        "BSON field '{path}' is the wrong type '{}', expected {expected}",
        type_name(value)
    ))
}

/// The error mongod's IDL parser reports for an unknown field.
pub(super) fn unknown_field(path: &str) -> CommandError {
    CommandError::new(
        code::IDL_UNKNOWN_FIELD,
        format!("BSON field '{path}' is an unknown field."),
    )
}

/// The error mongod's IDL parser reports for a missing required field.
pub(super) fn missing_field(path: &str) -> CommandError {
    CommandError::new(
        code::IDL_MISSING_FIELD,
        format!("BSON field '{path}' is missing but a required field"),
    )
}

/// An IDL `array<string>` field (`partitionByFields`).
pub(super) fn string_array(path: &str, value: &Bson) -> StoreResult<Vec<String>> {
    let Bson::Array(items) = value else {
        return Err(wrong_type(path, value, "type 'array'"));
    };
    items
        .iter()
        .enumerate()
        .map(|(position, item)| match item {
            Bson::String(text) => Ok(text.clone()),
            other => Err(wrong_type(
                &format!("{path}.{position}"),
                other,
                "type 'string'",
            )),
        })
        .collect()
}

/// The error a stage that is not an object gets from an IDL-parsed stage (`$densify`, `$fill`).
pub(super) fn stage_not_object(stage: &str, spec: &Bson) -> CommandError {
    CommandError::failed_to_parse(format!(
        "The {stage} stage specification must be an object, found {}",
        type_name(spec)
    ))
}
