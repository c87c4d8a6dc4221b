//! The stages that read other collections or run sub-pipelines: `$lookup`, `$graphLookup`,
//! `$unionWith`, `$facet` and `$documents`. They are parsed in a [`ParseContext`] (database
//! and sub-pipeline depth) and run with a [`Reader`] (see `foreign.rs`).

use std::sync::Arc;

use bson::{Bson, Document};

use super::documents::Documents;
use super::facet::Facet;
use super::foreign::{ParseContext, Reader};
use super::graph_lookup::GraphLookup;
use super::lookup::Lookup;
use super::union_with::UnionWith;
use super::{OutputBudget, Pipeline, Stage};
use crate::code;
use crate::collation::Collation;
use crate::errors::{CommandError, StoreResult};

/// One of the stages of this family, parsed.
#[derive(Debug, Clone)]
pub(crate) enum MultiStage {
    Lookup(Box<Lookup>),
    GraphLookup(Box<GraphLookup>),
    UnionWith(Box<UnionWith>),
    Facet(Facet),
    Documents(Documents),
}

/// Parses `stage` if it is one of this family's; `None` for any other stage.
pub(super) fn parse(stage: &Bson, context: ParseContext<'_>) -> StoreResult<Option<MultiStage>> {
    let Bson::Document(stage) = stage else {
        return Ok(None);
    };
    let Some((name, spec)) = stage.iter().next().filter(|_| stage.len() == 1) else {
        return Ok(None);
    };
    let parsed = match name.as_str() {
        "$lookup" => MultiStage::Lookup(Box::new(Lookup::parse(spec, context)?)),
        "$graphLookup" => MultiStage::GraphLookup(Box::new(GraphLookup::parse(spec, context)?)),
        "$unionWith" => MultiStage::UnionWith(Box::new(UnionWith::parse(spec, context)?)),
        "$facet" => MultiStage::Facet(Facet::parse(spec, context)?),
        "$documents" => MultiStage::Documents(Documents::parse(spec)?),
        _ => return Ok(None),
    };
    Ok(Some(parsed))
}

/// `$documents` may only start a pipeline.
///
/// # Errors
/// Location40602.
pub(super) fn check_positions(stages: &[Stage]) -> StoreResult<()> {
    let misplaced = stages
        .iter()
        .skip(1)
        .any(|stage| matches!(stage, Stage::Multi(multi) if multi.is_source()));
    if misplaced {
        return Err(CommandError::new(
            code::FIRST_STAGE_ONLY,
            "$documents is only valid as the first stage in a pipeline",
        ));
    }
    Ok(())
}

impl MultiStage {
    pub(super) fn name(&self) -> &'static str {
        match self {
            MultiStage::Lookup(_) => "$lookup",
            MultiStage::GraphLookup(_) => "$graphLookup",
            MultiStage::UnionWith(_) => "$unionWith",
            MultiStage::Facet(_) => "$facet",
            MultiStage::Documents(_) => "$documents",
        }
    }

    /// Whether the stage produces the pipeline's documents itself (`$documents`).
    pub(super) fn is_source(&self) -> bool {
        matches!(self, MultiStage::Documents(_))
    }

    /// The stage with its comparisons (and those of its sub-pipelines) under `collation`.
    pub(super) fn with_collation(self, collation: Option<&Collation>) -> MultiStage {
        match self {
            MultiStage::Lookup(lookup) => {
                MultiStage::Lookup(Box::new(lookup.with_collation(collation)))
            }
            MultiStage::UnionWith(union) => {
                MultiStage::UnionWith(Box::new(union.with_collation(collation)))
            }
            MultiStage::Facet(facet) => MultiStage::Facet(facet.with_collation(collation)),
            // Its filter is built for each search, under the reader's collation.
            other @ (MultiStage::GraphLookup(_) | MultiStage::Documents(_)) => other,
        }
    }

    /// Adds the collections and views the stage (and its sub-pipelines) name to `out`.
    pub(super) fn involved(&self, out: &mut Vec<String>) {
        match self {
            MultiStage::Lookup(lookup) => lookup.involved(out),
            MultiStage::GraphLookup(graph) => graph.involved(out),
            MultiStage::UnionWith(union) => union.involved(out),
            MultiStage::Facet(facet) => facet.involved(out),
            MultiStage::Documents(_) => {}
        }
    }

    pub(super) fn run(
        &self,
        documents: Vec<Arc<Document>>,
        reader: &mut Reader<'_>,
        budget: &mut OutputBudget,
    ) -> StoreResult<Vec<Arc<Document>>> {
        match self {
            MultiStage::Lookup(lookup) => lookup.run(documents, reader, budget),
            MultiStage::GraphLookup(graph) => graph.run(documents, reader, budget),
            MultiStage::UnionWith(union) => union.run(documents, reader),
            MultiStage::Facet(facet) => facet.run(documents, reader, budget),
            MultiStage::Documents(source) => {
                let produced = source.run(budget)?;
                reader.charge(produced.len())?;
                Ok(produced)
            }
        }
    }
}

/// The stages that hold a sub-pipeline, for the errors naming what it may not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Parent {
    Lookup,
    UnionWith,
    Facet,
}

/// Stages no `$lookup` or `$unionWith` sub-pipeline may hold: they write, or only start a
/// top-level pipeline.
const NOT_IN_SUB_PIPELINES: &[&str] = &["$out", "$merge", "$changeStream"];

/// Stages a `$facet` sub-pipeline may not hold (mongod's `FacetRequirement::kNotAllowed`).
const NOT_IN_FACET: &[&str] = &[
    "$out",
    "$merge",
    "$facet",
    "$collStats",
    "$indexStats",
    "$changeStream",
    "$currentOp",
    "$listLocalSessions",
    "$listSessions",
    "$planCacheStats",
    "$geoNear",
    "$search",
    "$searchMeta",
    "$vectorSearch",
    "$documents",
    "$listSearchIndexes",
    "$changeStreamSplitLargeEvent",
    "$queryStats",
    "$listCatalog",
    "$listClusterCatalog",
];

/// Parses `value`, the sub-pipeline of a `parent` stage, in `context` (already one level down
/// for `$lookup` and `$unionWith`). The raw stages are returned too, for a `$lookup` that
/// binds its variables into them for each document.
///
/// # Errors
/// TypeMismatch for a pipeline that is not an array of documents; the `parent`'s code for a
/// stage it may not hold; the stages' parse errors.
pub(super) fn parse_sub_pipeline(
    value: &Bson,
    parent: Parent,
    context: ParseContext<'_>,
) -> StoreResult<(Vec<Bson>, Pipeline)> {
    let Bson::Array(stages) = value else {
        return Err(CommandError::type_mismatch(
            "'pipeline' option must be specified as an array",
        ));
    };
    check_sub_pipeline(stages, parent)?;
    let pipeline = Pipeline::parse_in(stages, context)?;
    Ok((stages.clone(), pipeline))
}

/// Refuses by name the stages a `parent`'s sub-pipeline may not hold (before parsing them:
/// blackpipe parses `$out` and `$merge` only as the last stage of an aggregate).
pub(super) fn check_sub_pipeline(stages: &[Bson], parent: Parent) -> StoreResult<()> {
    for stage in stages {
        let Bson::Document(stage) = stage else {
            return Err(CommandError::type_mismatch(
                "Each element of the 'pipeline' array must be an object",
            ));
        };
        let Some(name) = stage.keys().next() else {
            continue;
        };
        let (refused, code, context) = match parent {
            Parent::Lookup => (
                NOT_IN_SUB_PIPELINES,
                code::NOT_ALLOWED_IN_LOOKUP,
                "is not allowed within a $lookup's sub-pipeline",
            ),
            Parent::UnionWith => (
                NOT_IN_SUB_PIPELINES,
                code::NOT_ALLOWED_IN_UNION_WITH,
                "is not allowed within a $unionWith's sub-pipeline",
            ),
            Parent::Facet => (
                NOT_IN_FACET,
                code::NOT_ALLOWED_IN_FACET,
                "is not allowed to be used within a $facet stage",
            ),
        };
        if refused.contains(&name.as_str()) {
            return Err(CommandError::new(code, format!("{name} {context}")));
        }
    }
    Ok(())
}

/// Adds the collections and views `pipeline`'s stages (and their sub-pipelines) name.
pub(super) fn pipeline_involved(pipeline: &Pipeline, out: &mut Vec<String>) {
    for stage in &pipeline.stages {
        if let Stage::Multi(multi) = stage {
            multi.involved(out);
        }
    }
}
