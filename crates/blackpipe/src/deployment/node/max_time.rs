//! `maxTimeMS`, the gate: mongod reads it after the `failCommand` fail point (so
//! `blockConnection` neither counts towards it nor is cut short by it), refuses a malformed one,
//! and interrupts the command once that much time has passed, answering `MaxTimeMSExpired`
//! (50). blackpipe's commands run instantly except where a knob gives them time (a slow node,
//! a member's command execution time): those waits end at `maxTimeMS`. How the value is read
//! and the time spent are in [`time`].

use std::ops::ControlFlow;
use std::time::Duration;

use bson::{Bson, Document};

use super::context::time::{self, spend};
use super::context::{Gate, NodeContext, NodeView};
use crate::deployment::errors::SessionFacts;
use crate::deployment::state::lock;

/// The command's `maxTimeMS` (`None`: no limit), or the refusal of a malformed one.
pub(crate) fn limit(
    node: &NodeContext,
    command: &Document,
    session: SessionFacts,
) -> Gate<Option<Duration>> {
    match time::parse(command) {
        Ok(limit) => ControlFlow::Continue(limit),
        Err(reply) => ControlFlow::Break(node.finish(reply, session, None)),
    }
}

/// The `maxTimeAlwaysTimeOut` fail point: an operation with a time limit (its own
/// `maxTimeMS`, or a getMore of a cursor opened with one) fails at once with
/// MaxTimeMSExpired, as if its time had run out.
pub(crate) fn always_time_out(
    node: &NodeContext,
    name: &str,
    command: &Document,
    limit: Option<Duration>,
    session: SessionFacts,
) -> Gate {
    let limited = match (name, command.get("getMore")) {
        ("getMore", Some(Bson::Int64(id))) => node.store().cursor_is_time_limited(*id),
        ("getMore", _) => false,
        _ => limit.is_some(),
    };
    if !limited {
        return ControlFlow::Continue(());
    }
    let triggered = {
        let mut fail_points = lock(&node.process.fail_points);
        fail_points.any_active()
            && fail_points.max_time_always_times_out(&mut *lock(&node.inner.rng))
    };
    if triggered {
        ControlFlow::Break(node.finish(time::expired_reply(), session, None))
    } else {
        ControlFlow::Continue(())
    }
}

/// Spends the member's command execution time on a command about to reach the store, ending
/// it at its `maxTimeMS` (or, for a write on the primary, at a stepdown).
pub(crate) async fn execution(
    node: &NodeContext,
    view: &NodeView,
    name: &str,
    limit: Option<Duration>,
    write_on_primary: Option<i64>,
    session: SessionFacts,
) -> Gate {
    // A getMore's maxTimeMS is how long an awaitData cursor waits for new data (the store
    // refuses it on other cursors), not a limit on the command: mongod never answers a getMore
    // with MaxTimeMSExpired for it, so a slow node's delay is not cut short by it either.
    let work_limit = if name == "getMore" { None } else { limit };
    match spend(
        node,
        view.command_time,
        work_limit,
        write_on_primary,
        session,
    )
    .await
    {
        Some(answer) => ControlFlow::Break(answer),
        None => ControlFlow::Continue(()),
    }
}
