//! The read preference of an aggregation whose pipeline writes (`$out`, `$merge`).
//!
//! Secondaries of 5.0+ run such pipelines (forwarding the writes to the primary); older
//! servers do not. The driver cannot see `featureCompatibilityVersion`, so it decides by the
//! wire versions it sees (crud specification, "Aggregation pipelines with write stages").

use super::select::SelectionCriteria;
use crate::description::{TopologyDescription, TopologyType};

/// The first wire version (MongoDB 5.0) whose secondaries run `$out` and `$merge`.
pub const WRITE_STAGE_ON_SECONDARY_WIRE_VERSION: i32 = 13;

/// The criteria to select by for an aggregation with a write stage, given `criteria` (the read
/// preference the operation has, explicit or inherited) and the topology snapshot selection
/// runs over.
///
/// `criteria` is kept when the topology is load balanced (the mongos behind it is assumed
/// 5.0+), when no server is available, or when every available server is 5.0+ (wire version
/// 13 or more); otherwise a primary read preference replaces it. Criteria that are not a read
/// preference are returned unchanged.
pub fn write_stage_criteria(
    topology: &TopologyDescription,
    criteria: &SelectionCriteria,
) -> SelectionCriteria {
    let is_read_preference = matches!(criteria, SelectionCriteria::ReadPreference(_));
    let some_available_server_is_older = topology
        .servers
        .values()
        .filter(|server| server.server_type.is_known())
        .any(|server| server.max_wire_version < WRITE_STAGE_ON_SECONDARY_WIRE_VERSION);
    if is_read_preference
        && topology.topology_type != TopologyType::LoadBalanced
        && some_available_server_is_older
    {
        SelectionCriteria::primary_read()
    } else {
        criteria.clone()
    }
}
