//! `maxTimeMS`, the gate: mongod reads it after the `failCommand` fail point (so
//! `blockConnection` neither counts towards it nor is cut short by it), refuses a malformed one,
//! and interrupts the command once that much time has passed, answering `MaxTimeMSExpired`
//! (50). blackpipe's commands run instantly except where a knob gives them time (a slow node,
//! a member's command execution time): those waits end at `maxTimeMS`. How the value is read
//! and the time spent are in [`time`].

use std::ops::ControlFlow;
use std::time::Duration;

use bson::Document;

use super::context::time::{self, spend};
use super::context::{Gate, NodeContext, NodeView};
use crate::deployment::errors::SessionFacts;

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
