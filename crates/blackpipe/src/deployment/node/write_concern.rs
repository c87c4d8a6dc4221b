//! The write concern stage after the store has applied a write: the `writeConcernError` a
//! `failCommand` fail point injects, else mongod's wait for replication. A numeric `w` larger
//! than the number of data-bearing members can never be satisfied (UnsatisfiableWriteConcern,
//! 100); a `w` naming no mode is UnknownReplWriteConcern (79). On a replica set primary,
//! `w: "majority"` (mongod's implicit default, or `w: 1` when arbiters make a majority of
//! data-bearing voters impossible to lose) waits for the majority commit point to reach the
//! write, and a numeric `w` for that many data-bearing members to hold it. `wtimeout` ends the
//! wait with WriteConcernTimeout (64), the command's `maxTimeMS` with MaxTimeMSExpired (50), a
//! stepdown with PrimarySteppedDown (189): the write stays applied, and the reply says so.
//! Statements inside a transaction do not wait (their commit does).

use std::time::Duration;

use bson::{Bson, Document, doc};

use super::context::NodeContext;
use crate::deployment::model::Role;
use crate::deployment::replication::wait::{Acknowledgement, WaitOutcome};
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
/// the labels it adds), else an unsatisfiable `w`'s, else the replication wait's.
pub(crate) async fn after_write(
    node: &NodeContext,
    facts: &CommandFacts<'_>,
    command: &Document,
    reply: &mut Document,
    limit: Option<Duration>,
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
        let error = match unsatisfiable(node, command) {
            Some(error) => Some(error),
            None => replicated(node, facts.name, command, limit).await,
        };
        if let Some(error) = error {
            reply.insert("writeConcernError", error);
        }
    }
    labels
}

/// What a write concern asks to wait for, or why it cannot be satisfied.
fn acknowledgement(
    node: &NodeContext,
    concern: Option<&Document>,
) -> Result<Option<Acknowledgement>, Document> {
    match concern.and_then(|concern| concern.get("w")) {
        None => {
            // mongod's implicit default: majority, unless arbiters leave so few data-bearing
            // voters that a majority of voters could be all but one of them.
            let state = lock(&node.inner.state);
            let topology = &state.topology;
            let voters = topology
                .nodes()
                .iter()
                .filter(|n| n.options().votes > 0 && n.role() != Role::Removed)
                .count();
            let arbiters = topology.nodes().iter().any(|n| n.role() == Role::Arbiter);
            let data_voters = topology
                .nodes()
                .iter()
                .filter(|n| {
                    n.options().votes > 0 && !matches!(n.role(), Role::Arbiter | Role::Removed)
                })
                .count();
            Ok(Some(if arbiters && data_voters <= voters / 2 + 1 {
                Acknowledgement::Members(1)
            } else {
                Acknowledgement::Majority
            }))
        }
        Some(Bson::String(mode)) if mode == "majority" => Ok(Some(Acknowledgement::Majority)),
        Some(Bson::String(mode)) => Err(doc! {
            "code": code::UNKNOWN_REPL_WRITE_CONCERN,
            "codeName": "UnknownReplWriteConcern",
            "errmsg": format!("No write concern mode named '{mode}' found in replica set configuration"),
        }),
        Some(_) => Ok(concern
            .and_then(|concern| numeric_w(&doc! { "writeConcern": concern.clone() }))
            .filter(|&w| w > 1)
            .map(|w| Acknowledgement::Members(usize::try_from(w).unwrap_or(usize::MAX)))),
    }
}

/// The command's `wtimeout`, if it sets a positive one.
fn wtimeout(concern: Option<&Document>) -> Option<Duration> {
    let millis = match concern?.get("wtimeout")? {
        Bson::Int32(ms) => i64::from(*ms),
        Bson::Int64(ms) => *ms,
        Bson::Double(ms) if ms.is_finite() => *ms as i64,
        _ => return None,
    };
    u64::try_from(millis)
        .ok()
        .filter(|&ms| ms > 0)
        .map(Duration::from_millis)
}

/// Waits, on a replica set primary, until the write is replicated as the write concern asks;
/// the `writeConcernError` when it is not.
async fn replicated(
    node: &NodeContext,
    name: &str,
    command: &Document,
    limit: Option<Duration>,
) -> Option<Document> {
    let in_transaction = command.get("autocommit") == Some(&Bson::Boolean(false))
        && !matches!(name, "commitTransaction" | "abortTransaction");
    if in_transaction {
        return None;
    }
    let term = node.inner.primary_term(node.index)?;
    let concern = command.get_document("writeConcern").ok();
    let acknowledgement = match acknowledgement(node, concern) {
        Ok(acknowledgement) => acknowledgement?,
        Err(error) => return Some(error),
    };
    let target = node.store().op_time().ts;
    let wtimeout = wtimeout(concern);
    let wait = match (wtimeout, limit) {
        (Some(w), Some(l)) => Some(w.min(l)),
        (w, l) => w.or(l),
    };
    let outcome = node
        .inner
        .await_acknowledgement(node.index, term, target, acknowledgement, wait)
        .await;
    match outcome {
        WaitOutcome::Satisfied => None,
        WaitOutcome::TimedOut if wtimeout.is_some_and(|w| limit.is_none_or(|l| w <= l)) => {
            let mut echoed = concern.cloned().unwrap_or_default();
            echoed.insert("provenance", "clientSupplied");
            Some(doc! {
                "code": code::WRITE_CONCERN_TIMEOUT,
                "codeName": "WriteConcernTimeout",
                "errmsg": "waiting for replication timed out",
                "errInfo": { "wtimeout": true, "writeConcern": echoed },
            })
        }
        WaitOutcome::TimedOut => Some(doc! {
            "code": code::MAX_TIME_MS_EXPIRED,
            "codeName": "MaxTimeMSExpired",
            "errmsg": "operation exceeded time limit",
        }),
        WaitOutcome::SteppedDown => Some(doc! {
            "code": code::PRIMARY_STEPPED_DOWN,
            "codeName": "PrimarySteppedDown",
            "errmsg": "Primary stepped down while waiting for replication",
        }),
    }
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
