//! The write concern check mongod makes when it waits for replication: a numeric `w` larger
//! than the number of data-bearing members can never be satisfied, so the write (already
//! applied) is answered with a `writeConcernError` UnsatisfiableWriteConcern (100).
//!
//! blackpipe does not simulate replication delays, so every satisfiable write concern is
//! satisfied at once; fail points inject the other write concern errors.

use bson::{Bson, Document, doc};

use super::member::NodeContext;
use super::model::Role;
use super::state::lock;
use crate::codes;

/// The numeric `w` of a command's write concern, if it has one.
fn numeric_w(command: &Document) -> Option<i64> {
    match command.get_document("writeConcern").ok()?.get("w")? {
        Bson::Int32(w) => Some(i64::from(*w)),
        Bson::Int64(w) => Some(*w),
        // Whole numbers only (NaN and infinities have no whole part); `as` saturates.
        Bson::Double(w) if w.fract() == 0.0 => Some(*w as i64),
        _ => None,
    }
}

/// How many members bear data: the non-arbiter members of a replica set; for a sharded
/// deployment, whose routers share one store, as many as there are routers.
fn data_bearing_members(node: &NodeContext) -> usize {
    let state = lock(&node.inner.state);
    state
        .topology
        .nodes()
        .iter()
        .filter(|member| !matches!(member.role(), Role::Arbiter | Role::Removed))
        .count()
}

/// The `writeConcernError` an acknowledged write gets when its numeric `w` exceeds the
/// data-bearing members; `None` when the write concern can be satisfied.
pub(crate) fn unsatisfiable(node: &NodeContext, command: &Document) -> Option<Document> {
    let w = numeric_w(command)?;
    let members = i64::try_from(data_bearing_members(node)).unwrap_or(i64::MAX);
    (w > members).then(|| {
        doc! {
            "code": codes::UNSATISFIABLE_WRITE_CONCERN,
            "codeName": "UnsatisfiableWriteConcern",
            "errmsg": "Not enough data-bearing nodes",
        }
    })
}
