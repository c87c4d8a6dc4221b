//! The stage names mongod 8.0 knows, and the lite parse it runs over a pipeline before (or, for
//! an update command, after) parsing it in full.
//!
//! blackpipe implements some stages, refuses others it knows mongod has
//! ([`UNSUPPORTED_STAGES`]), and must tell both from names no mongod knows: an update pipeline
//! with an unknown stage fails the whole `update` command, one with a known stage an update may
//! not use only fails its statement.

use bson::Bson;

use crate::code;
use crate::errors::{CommandError, StoreResult};

/// The stages blackpipe parses and runs (`parse_stage`).
const IMPLEMENTED_STAGES: &[&str] = &[
    "$match",
    "$project",
    "$addFields",
    "$set",
    "$unset",
    "$group",
    "$sort",
    "$limit",
    "$skip",
    "$count",
    "$unwind",
    "$replaceRoot",
    "$replaceWith",
    "$sortByCount",
    // Accumulators and window functions (accumulators).
    "$setWindowFields",
    // Single-input stages (stages-single).
    "$bucket",
    "$bucketAuto",
    "$sample",
    "$redact",
    "$densify",
    "$fill",
    // Stages reading other collections and running sub-pipelines (stages-multi).
    "$lookup",
    "$graphLookup",
    "$unionWith",
    "$facet",
    "$documents",
];

/// Stages mongod has that blackpipe does not implement; they get a clear error. (`$collStats`
/// runs as the first stage of an aggregate on a collection, `commands/coll_stats.rs`, which
/// handles it before the pipeline is parsed; anywhere else it is refused.)
pub(super) const UNSUPPORTED_STAGES: &[&str] = &[
    "$out",
    "$merge",
    "$geoNear",
    "$collStats",
    "$indexStats",
    "$changeStream",
    "$currentOp",
    "$listSessions",
    "$search",
    "$planCacheStats",
];

/// The rest of mongod 8.0's registered stages: administrative, search and cluster-internal
/// ones no application pipeline runs against blackpipe, listed only so that their names are
/// not taken for unknown ones. Stages named `$_internal...` are known by prefix.
const OTHER_MONGOD_STAGES: &[&str] = &[
    "$changeStreamSplitLargeEvent",
    "$listLocalSessions",
    "$listSampledQueries",
    "$listSearchIndexes",
    "$listCatalog",
    "$listClusterCatalog",
    "$listCachedAndActiveUsers",
    "$querySettings",
    "$queryStats",
    "$searchMeta",
    "$vectorSearch",
    "$shardedDataDistribution",
    "$mergeCursors",
    "$setVariableFromSubPipeline",
    "$operationMetrics",
    "$backupCursor",
    "$backupCursorExtend",
    "$_unpackBucket",
    "$_analyzeShardKeyReadWriteDistribution",
    "$_addReshardingResumeId",
];

/// Whether mongod 8.0 has a stage called `name`.
pub(crate) fn is_mongod_stage(name: &str) -> bool {
    IMPLEMENTED_STAGES.contains(&name)
        || UNSUPPORTED_STAGES.contains(&name)
        || OTHER_MONGOD_STAGES.contains(&name)
        || name.starts_with("$_internal")
}

/// mongod's `LiteParsedPipeline` over `stages`: each stage object has exactly one field
/// (Location40323) naming a stage mongod knows (Location40324). It looks no further: a stage's
/// specification and whether the context allows it are for the full parse. Elements that are
/// not objects are the caller's to refuse (mongod does so while parsing the command).
pub(crate) fn lite_parse(stages: &[Bson]) -> StoreResult<()> {
    for stage in stages {
        let Bson::Document(stage) = stage else {
            continue;
        };
        let name = match stage.keys().next() {
            Some(name) if stage.len() == 1 => name,
            _ => return Err(stage_not_one_field()),
        };
        if !is_mongod_stage(name) {
            return Err(unrecognized_stage(name));
        }
    }
    Ok(())
}

pub(super) fn stage_not_one_field() -> CommandError {
    CommandError::new(
        code::STAGE_NOT_ONE_FIELD,
        "A pipeline stage specification object must contain exactly one field.",
    )
}

pub(super) fn unrecognized_stage(name: &str) -> CommandError {
    CommandError::new(
        code::UNRECOGNIZED_STAGE,
        format!("Unrecognized pipeline stage name: '{name}'"),
    )
}
