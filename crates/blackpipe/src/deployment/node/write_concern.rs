//! The write concern stage after the store has applied a write: the `writeConcernError` a
//! `failCommand` fail point injects, else the check mongod makes when it waits for
//! replication: a numeric `w` larger than the number of data-bearing members can never be
//! satisfied, so the write (already applied) is answered with a `writeConcernError`
//! UnsatisfiableWriteConcern (100).
//!
//! blackpipe does not simulate replication delays, so every satisfiable write concern is
//! satisfied at once; fail points inject the other write concern errors.

use bson::{Bson, Document, doc};

use super::context::NodeContext;
use crate::deployment::model::Role;
use crate::deployment::state::lock;
use crate::failpoint::CommandFacts;
use blackpipe_store::code;

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

/// Adds the `writeConcernError` of a successful write, if any: a fail point's first (returning
/// the labels it adds), else an unsatisfiable `w`'s.
pub(crate) fn after_write(
    node: &NodeContext,
    facts: &CommandFacts<'_>,
    command: &Document,
    reply: &mut Document,
) -> Option<Vec<String>> {
    let injection = {
        let mut fail_points = lock(&node.process.fail_points);
        if fail_points.any_active() {
            fail_points.after_write(facts, &mut *lock(&node.inner.rng))
        } else {
            None
        }
    };
    let mut labels = None;
    if let Some(injection) = injection {
        reply.insert("writeConcernError", injection.error);
        labels = injection.labels;
    }
    if !reply.contains_key("writeConcernError") {
        if let Some(error) = unsatisfiable(node, command) {
            reply.insert("writeConcernError", error);
        }
    }
    labels
}

/// The `writeConcernError` an acknowledged write gets when its numeric `w` exceeds the
/// data-bearing members; `None` when the write concern can be satisfied.
fn unsatisfiable(node: &NodeContext, command: &Document) -> Option<Document> {
    let w = numeric_w(command)?;
    let members = i64::try_from(data_bearing_members(node)).unwrap_or(i64::MAX);
    (w > members).then(|| {
        doc! {
            "code": code::UNSATISFIABLE_WRITE_CONCERN,
            "codeName": "UnsatisfiableWriteConcern",
            "errmsg": "Not enough data-bearing nodes",
        }
    })
}
