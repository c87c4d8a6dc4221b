//! `$unionWith`: the input documents, then those of another collection (or view) of the same
//! database, through an optional sub-pipeline. `{$unionWith: "coll"}` or
//! `{$unionWith: {coll, pipeline}}`; without `coll` the pipeline must start with
//! `$documents`. A missing collection adds nothing.

use std::sync::Arc;

use bson::{Bson, Document};

use super::Pipeline;
use super::foreign::{ParseContext, Reader};
use super::multi::{Parent, parse_sub_pipeline};
use crate::code;
use crate::collation::Collation;
use crate::errors::{CommandError, StoreResult, type_name};

/// A parsed `$unionWith`.
#[derive(Debug, Clone)]
pub(crate) struct UnionWith {
    coll: Option<String>,
    pipeline: Pipeline,
    depth: usize,
}

impl UnionWith {
    /// Parses the specification as mongod's IDL parser (`UnionWithSpec`) does.
    ///
    /// # Errors
    /// FailedToParse for a specification of the wrong type or a collectionless one without
    /// `$documents`, TypeMismatch (14) and 40415 for the fields, InvalidNamespace for an
    /// empty name, MaxSubPipelineDepthExceeded (232), the sub-pipeline's errors.
    pub(super) fn parse(spec: &Bson, context: ParseContext<'_>) -> StoreResult<UnionWith> {
        let (coll, stages) = match spec {
            Bson::String(name) => (Some(name.clone()), None),
            Bson::Document(spec) => read_spec(spec)?,
            other => {
                return Err(CommandError::failed_to_parse(format!(
                    "the $unionWith stage specification must be an object or string, but found \
                     {}",
                    type_name(other)
                )));
            }
        };
        match &coll {
            Some(name) if name.is_empty() => {
                return Err(CommandError::new(
                    code::INVALID_NAMESPACE,
                    format!("Invalid $unionWith namespace: {}.", context.db),
                ));
            }
            Some(_) => {}
            None => {
                let starts_with_documents = stages
                    .as_ref()
                    .and_then(|stages| stages.first())
                    .and_then(Bson::as_document)
                    .is_some_and(|first| first.contains_key("$documents"));
                if !starts_with_documents {
                    return Err(CommandError::failed_to_parse(
                        "$unionWith stage without explicit collection must have a pipeline \
                         with $documents as first stage",
                    ));
                }
            }
        }
        let sub = context.nested()?;
        let stages = Bson::Array(stages.unwrap_or_default());
        let (_, pipeline) = parse_sub_pipeline(&stages, Parent::UnionWith, sub)?;
        Ok(UnionWith {
            coll,
            pipeline,
            depth: sub.depth(),
        })
    }

    pub(super) fn with_collation(mut self, collation: Option<&Collation>) -> UnionWith {
        self.pipeline = self.pipeline.with_collation(collation);
        self
    }

    pub(super) fn involved(&self, out: &mut Vec<String>) {
        out.extend(self.coll.iter().cloned());
        super::multi::pipeline_involved(&self.pipeline, out);
    }

    pub(super) fn run(
        &self,
        mut documents: Vec<Arc<Document>>,
        reader: &mut Reader<'_>,
    ) -> StoreResult<Vec<Arc<Document>>> {
        let added = reader.run_over(self.coll.as_deref(), &self.pipeline, self.depth)?;
        documents.extend(added);
        Ok(documents)
    }
}

/// `{coll, pipeline}`: both optional, nothing else.
fn read_spec(spec: &Document) -> StoreResult<(Option<String>, Option<Vec<Bson>>)> {
    let (mut coll, mut stages) = (None, None);
    for (name, value) in spec {
        match (name.as_str(), value) {
            ("coll", Bson::String(text)) => coll = Some(text.clone()),
            ("pipeline", Bson::Array(items)) => {
                for (position, item) in items.iter().enumerate() {
                    if !matches!(item, Bson::Document(_)) {
                        return Err(wrong_type(&format!("pipeline.{position}"), item, "object"));
                    }
                }
                stages = Some(items.clone());
            }
            ("coll", other) => return Err(wrong_type("coll", other, "string")),
            ("pipeline", other) => return Err(wrong_type("pipeline", other, "array")),
            _ => {
                return Err(CommandError::new(
                    code::IDL_UNKNOWN_FIELD,
                    format!("BSON field '$unionWith.{name}' is an unknown field."),
                ));
            }
        }
    }
    Ok((coll, stages))
}

fn wrong_type(field: &str, value: &Bson, expected: &str) -> CommandError {
    CommandError::type_mismatch(format!(
        "BSON field '$unionWith.{field}' is the wrong type '{}', expected type '{expected}'",
        type_name(value)
    ))
}
