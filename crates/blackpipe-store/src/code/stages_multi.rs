//! Error codes of the stages that read other collections or run sub-pipelines.

/// MaxSubPipelineDepthExceeded: sub-pipelines (`$lookup`, `$unionWith`, `$graphLookup`, views
/// on the way) nested more than 20 deep.
pub const MAX_SUB_PIPELINE_DEPTH_EXCEEDED: i32 = 232;
/// `Location51047`: a stage a `$lookup` sub-pipeline may not hold.
pub const NOT_ALLOWED_IN_LOOKUP: i32 = 51047;
/// `Location31441`: a stage a `$unionWith` sub-pipeline may not hold.
pub const NOT_ALLOWED_IN_UNION_WITH: i32 = 31441;
/// `Location4568`: the documents one `$lookup` matched for one document total over 100 MiB.
pub const LOOKUP_MATCHES_TOO_LARGE: i32 = 4568;
/// `Location40169`: a `$facet` specification that is not a non-empty document.
pub const FACET_NOT_OBJECT: i32 = 40169;
/// `Location40170`: a `$facet` field that is not an array.
pub const FACET_PIPELINE_NOT_ARRAY: i32 = 40170;
/// `Location40171`: a `$facet` pipeline element that is not a document.
pub const FACET_STAGE_NOT_OBJECT: i32 = 40171;
/// `Location40600`: a stage a `$facet` sub-pipeline may not hold.
pub const NOT_ALLOWED_IN_FACET: i32 = 40600;
/// `Location4031700`: a `$facet` output document over 100 MiB.
pub const FACET_OUTPUT_TOO_LARGE: i32 = 4_031_700;
/// `Location40099`: a `$graphLookup` search holding more than 100 MiB.
pub const GRAPH_LOOKUP_MEMORY: i32 = 40099;
/// `Location40100`: a `$graphLookup` `maxDepth` that is not a number.
pub const GRAPH_LOOKUP_MAX_DEPTH_NOT_NUMBER: i32 = 40100;
/// `Location40101`: a negative `$graphLookup` `maxDepth`.
pub const GRAPH_LOOKUP_MAX_DEPTH_NEGATIVE: i32 = 40101;
/// `Location40102`: a `$graphLookup` `maxDepth` that is not a whole 64-bit number.
pub const GRAPH_LOOKUP_MAX_DEPTH_NOT_INTEGRAL: i32 = 40102;
/// `Location40103`: a `$graphLookup` name argument that is not a string.
pub const GRAPH_LOOKUP_ARGUMENT_NOT_STRING: i32 = 40103;
/// `Location40104`: an unknown `$graphLookup` argument.
pub const GRAPH_LOOKUP_UNKNOWN_ARGUMENT: i32 = 40104;
/// `Location40105`: a `$graphLookup` without one of its required arguments.
pub const GRAPH_LOOKUP_MISSING_ARGUMENT: i32 = 40105;
/// `Location40185`: a `$graphLookup` `restrictSearchWithMatch` that is not a document.
pub const GRAPH_LOOKUP_RESTRICT_NOT_OBJECT: i32 = 40185;
/// `Location40271`: a `$graphLookup` reached a document without `_id`.
pub const GRAPH_LOOKUP_NO_ID: i32 = 40271;
/// `Location15998`: a field path with an empty component.
pub const FIELD_PATH_EMPTY_COMPONENT: i32 = 15998;
/// `Location16411`: a field path with a NUL byte.
pub const FIELD_PATH_NUL: i32 = 16411;
/// `Location16412`: a field name (a `$facet` output) with a dot.
pub const FIELD_NAME_WITH_DOT: i32 = 16412;
