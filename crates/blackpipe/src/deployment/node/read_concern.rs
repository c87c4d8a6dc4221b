//! The read concern gate of a replica set member, as mongod applies it: a linearizable read
//! runs on the primary only and answers once the primary has confirmed with a majority that it
//! still leads (mongod writes a no-op with `w: "majority"`; blackpipe waits for the commit point
//! to reach everything the primary had applied when it read); `afterClusterTime` (or
//! `afterOpTime`, or a snapshot read's `atClusterTime`) makes a lagging member wait until it has
//! applied that time (for `majority` and `snapshot`, until the commit point it knows reaches
//! it), bounded by `maxTimeMS`. What each level then reads is the store's business: `local`
//! and `available` the member's applied data, `majority` its majority-committed snapshot.

use std::ops::ControlFlow;
use std::time::Duration;

use bson::{Bson, Document, Timestamp};

use super::context::time::expired_reply;
use super::context::{Gate, NodeContext, NodeView};
use crate::deployment::errors::{self, SessionFacts};
use crate::deployment::model::{DeploymentKind, Role};
use crate::deployment::replication::wait::{Acknowledgement, WaitOutcome};
use blackpipe_store::code;

/// A command's read concern, as far as the member waits on it.
struct ReadConcern {
    level: Option<String>,
    /// The time the member must have applied (or, for majority levels, committed) first.
    after: Option<Timestamp>,
}

fn read_concern(command: &Document) -> Option<ReadConcern> {
    let concern = command.get_document("readConcern").ok()?;
    let level = concern.get_str("level").ok().map(str::to_owned);
    let timestamp = |value: Option<&Bson>| match value {
        Some(Bson::Timestamp(ts)) => Some(*ts),
        _ => None,
    };
    let after = timestamp(concern.get("afterClusterTime"))
        .or_else(|| {
            concern
                .get_document("afterOpTime")
                .ok()
                .and_then(|op_time| timestamp(op_time.get("ts")))
        })
        .or_else(|| timestamp(concern.get("atClusterTime")));
    Some(ReadConcern { level, after })
}

fn is_majority_level(level: Option<&str>) -> bool {
    matches!(level, Some("majority" | "snapshot"))
}

/// Before the store: refuses a linearizable read off the primary, and waits for
/// `afterClusterTime`.
pub(crate) async fn before(
    node: &NodeContext,
    view: &NodeView,
    command: &Document,
    limit: Option<Duration>,
    session: SessionFacts,
) -> Gate {
    if view.kind != DeploymentKind::ReplicaSet {
        return ControlFlow::Continue(());
    }
    let Some(concern) = read_concern(command) else {
        return ControlFlow::Continue(());
    };
    if concern.level.as_deref() == Some("linearizable") && view.role != Role::Primary {
        let refusal = errors::error_reply(
            code::NOT_WRITABLE_PRIMARY,
            "cannot satisfy linearizable read concern on non-primary",
        );
        return ControlFlow::Break(node.finish(refusal, session, None));
    }
    let Some(after) = concern.after else {
        return ControlFlow::Continue(());
    };
    let majority = is_majority_level(concern.level.as_deref());
    match node
        .inner
        .await_applied(node.index, after, majority, limit)
        .await
    {
        WaitOutcome::Satisfied | WaitOutcome::SteppedDown => ControlFlow::Continue(()),
        WaitOutcome::TimedOut => ControlFlow::Break(node.finish(expired_reply(), session, None)),
    }
}

/// After a linearizable read on a replica set primary: it confirms with a majority that it
/// still leads and that everything it had applied is committed; a stepdown meanwhile fails the
/// read. (A router's shards share its store: nothing to confirm.)
pub(crate) async fn confirm_linearizable(
    node: &NodeContext,
    view: &NodeView,
    command: &Document,
    limit: Option<Duration>,
    session: SessionFacts,
) -> Gate {
    let linearizable = read_concern(command)
        .is_some_and(|concern| concern.level.as_deref() == Some("linearizable"));
    if !linearizable || view.kind != DeploymentKind::ReplicaSet {
        return ControlFlow::Continue(());
    }
    let stepped_down = || {
        let reply = errors::error_reply(
            code::PRIMARY_STEPPED_DOWN,
            "Primary stepped down while waiting for a linearizable read to be confirmed",
        );
        ControlFlow::Break(node.finish(reply, session, None))
    };
    let Some(term) = node.inner.primary_term(node.index) else {
        return stepped_down();
    };
    let target = node.store().op_time().ts;
    let outcome = node
        .inner
        .await_acknowledgement(node.index, term, target, Acknowledgement::Majority, limit)
        .await;
    match outcome {
        WaitOutcome::Satisfied => ControlFlow::Continue(()),
        WaitOutcome::TimedOut => ControlFlow::Break(node.finish(expired_reply(), session, None)),
        WaitOutcome::SteppedDown => stepped_down(),
    }
}
