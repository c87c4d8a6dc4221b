//! `$facet`: named sub-pipelines over the same input documents; one output document holding
//! each sub-pipeline's output as an array (empty arrays when there is no input). The output
//! may hold 100 MiB while it is built (mongod's `internalQueryFacetMaxOutputDocSizeBytes`,
//! Location4031700) and, like any document a stage builds, must fit mongod's document size
//! limit (BSONObjectTooLarge).

use std::sync::Arc;

use bson::{Bson, Document};

use super::foreign::{ParseContext, Reader, field_name};
use super::multi::{Parent, check_sub_pipeline};
use super::{OutputBudget, Pipeline};
use crate::code;
use crate::collation::Collation;
use crate::errors::{CommandError, StoreResult, format_value, type_name};
use crate::value_order::document_size;

/// mongod's `internalQueryFacetMaxOutputDocSizeBytes`.
const MAX_OUTPUT_BYTES: usize = 100 * 1024 * 1024;

/// A parsed `$facet`.
#[derive(Debug, Clone)]
pub(crate) struct Facet {
    facets: Vec<(String, Pipeline)>,
}

impl Facet {
    /// Parses the specification: every name and pipeline shape is checked first, then each
    /// pipeline is parsed, as mongod does. The sub-pipelines are as deep as the `$facet`.
    ///
    /// # Errors
    /// 40169-40171 for a malformed specification, the field name errors, BadValue for an
    /// empty pipeline, 40600 for a stage a `$facet` may not hold, the stages' errors.
    pub(super) fn parse(spec: &Bson, context: ParseContext<'_>) -> StoreResult<Facet> {
        let raw = raw_pipelines(spec)?;
        let mut facets = Vec::with_capacity(raw.len());
        for (name, stages) in raw {
            if stages.is_empty() {
                return Err(CommandError::bad_value(
                    "sub-pipeline in $facet stage cannot be empty",
                ));
            }
            check_sub_pipeline(stages, Parent::Facet)?;
            facets.push((name.to_owned(), Pipeline::parse_in(stages, context)?));
        }
        Ok(Facet { facets })
    }

    pub(super) fn with_collation(self, collation: Option<&Collation>) -> Facet {
        let facets = self
            .facets
            .into_iter()
            .map(|(name, pipeline)| (name, pipeline.with_collation(collation)))
            .collect();
        Facet { facets }
    }

    pub(super) fn involved(&self, out: &mut Vec<String>) {
        for (_, pipeline) in &self.facets {
            super::multi::pipeline_involved(pipeline, out);
        }
    }

    pub(super) fn run(
        &self,
        documents: Vec<Arc<Document>>,
        reader: &mut Reader<'_>,
        budget: &mut OutputBudget,
    ) -> StoreResult<Vec<Arc<Document>>> {
        let mut output = Document::new();
        let mut total = 0usize;
        for (name, pipeline) in &self.facets {
            reader.charge(documents.len().max(1))?;
            let results = pipeline.run_with(documents.clone(), false, reader)?;
            let mut array = Vec::with_capacity(results.len());
            for result in results {
                total = total.saturating_add(document_size(&result));
                if total > MAX_OUTPUT_BYTES {
                    return Err(CommandError::new(
                        code::FACET_OUTPUT_TOO_LARGE,
                        format!(
                            "document constructed by $facet is {total} bytes, which exceeds \
                             the limit of {MAX_OUTPUT_BYTES} bytes"
                        ),
                    ));
                }
                array.push(Bson::Document(Arc::unwrap_or_clone(result)));
            }
            output.insert(name.clone(), array);
        }
        Ok(vec![budget.admit(output)?])
    }
}

/// The names and raw pipelines of the specification, their shapes checked.
fn raw_pipelines(spec: &Bson) -> StoreResult<Vec<(&str, &[Bson])>> {
    let facets = match spec {
        Bson::Document(facets) if !facets.is_empty() => facets,
        other => {
            return Err(CommandError::new(
                code::FACET_NOT_OBJECT,
                format!(
                    "the $facet specification must be a non-empty object, but found: $facet: {}",
                    format_value(other)
                ),
            ));
        }
    };
    let mut raw = Vec::with_capacity(facets.len());
    for (name, value) in facets {
        check_facet_name(name)?;
        let Bson::Array(stages) = value else {
            return Err(CommandError::new(
                code::FACET_PIPELINE_NOT_ARRAY,
                format!(
                    "arguments to $facet must be arrays, {name} is type {}",
                    type_name(value)
                ),
            ));
        };
        if let Some(stage) = stages
            .iter()
            .find(|stage| !matches!(stage, Bson::Document(_)))
        {
            return Err(CommandError::new(
                code::FACET_STAGE_NOT_OBJECT,
                format!(
                    "elements of arrays in $facet spec must be non-empty objects, {name} \
                     argument contained an element of type {}: {}",
                    type_name(stage),
                    format_value(stage)
                ),
            ));
        }
        raw.push((name.as_str(), stages.as_slice()));
    }
    Ok(raw)
}

/// A facet's name is an output field name.
fn check_facet_name(name: &str) -> StoreResult<()> {
    let checked = if name.contains('.') {
        Err(CommandError::new(
            code::FIELD_NAME_WITH_DOT,
            "FieldPath field names may not contain '.'. Consider using $getField or $setField.",
        ))
    } else {
        field_name(name)
    };
    checked.map_err(|error| {
        CommandError::new(
            error.code,
            format!(
                "$facet pipeline names must follow the naming rules of field path expressions. \
                 :: caused by :: {}",
                error.message
            ),
        )
    })
}
