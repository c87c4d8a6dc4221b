//! The first gates a request meets, in mongod's order: arrival (a partitioned node holds the
//! request until it heals, a dead one hangs up, a slow one spends its delay, one shutting down
//! answers `ShutdownInProgress`), then load shedding: the random `overload` fault (the rate
//! limiter firing regardless of load, a fault the torture plays) and the member's [`capacity`],
//! both rejecting with `IngressRequestRateLimitExceeded` (462). Admission runs after the
//! authentication gate and the control commands, before `failCommand`.

use std::ops::ControlFlow;

use super::context::request::CommandClass;
use super::context::time::{self, spend};
use super::context::{Gate, NodeContext};
use crate::deployment::capacity::{self, Admission};
use crate::deployment::errors::{self, SHUTDOWN_IN_PROGRESS, SessionFacts};
use crate::deployment::hello;
use crate::deployment::model::Health;
use crate::deployment::state::lock;
use crate::server::{Reaction, Request};
use blackpipe_store::code;

/// Lets a request in: `Continue` with the term of a write that started on the primary (a
/// stepdown interrupts it), or the outcome of a node that cannot take it now.
pub(crate) async fn arrive(
    node: &NodeContext,
    request: &Request,
    name: &str,
    class: CommandClass,
    session: SessionFacts,
) -> Gate<Option<i64>> {
    let Some(mut view) = node.view() else {
        return ControlFlow::Break(
            Reaction::reply(errors::error_reply(
                code::SHUTDOWN_IN_PROGRESS,
                "this node is not running",
            ))
            .into(),
        );
    };
    if view.health == Health::Partitioned {
        // Not delivered yet: the request is processed when the partition heals, as TCP would
        // deliver it late. Later requests on this connection wait behind it, in order.
        match node.reachable_view().await {
            Some(fresh) => view = fresh,
            None => return ControlFlow::Break(Reaction::HangUp.into()),
        }
    }
    match view.health {
        Health::Down => return ControlFlow::Break(Reaction::HangUp.into()),
        Health::Up | Health::ShuttingDown | Health::Partitioned => {}
    }
    let write_on_primary = view.write_on_primary(class);
    if !view.slow.is_zero() {
        // A slow node's delay is time the command spends on the server, so it ends at a valid
        // maxTimeMS too (an invalid one is refused once the command is read, below).
        let limit = time::parse(request.command()).ok().flatten();
        if let Some(answer) = spend(node, view.slow, limit, write_on_primary, session).await {
            return ControlFlow::Break(answer);
        }
        // The request was delivered before any partition that began meanwhile: it runs now,
        // and its reply is held until the partition heals.
        match node.view() {
            Some(fresh) => view = fresh,
            None => return ControlFlow::Break(Reaction::HangUp.into()),
        }
    }
    if view.health == Health::ShuttingDown {
        let mut reply = errors::error_reply(
            SHUTDOWN_IN_PROGRESS,
            "The server is in quiesce mode and will shut down",
        );
        // In quiesce mode, mongod's shutdown errors carry its topologyVersion.
        reply.insert("topologyVersion", hello::version_document(view.version));
        if node.is_stream_get_more(name, request.command()) {
            errors::label_resumable_change_stream_error(&mut reply);
        }
        return ControlFlow::Break(node.finish(reply, session, None));
    }
    ControlFlow::Continue(write_on_primary)
}

/// Admits the command `name` (hello-family when `is_hello`), or rejects it as overloaded.
/// `Continue(Some(_))` holds the command's place under the capacity until dropped;
/// `Continue(None)` for commands the capacity does not count.
pub(crate) fn admit(
    node: &NodeContext,
    name: &str,
    is_hello: bool,
    session: SessionFacts,
) -> Gate<Option<Admission>> {
    if is_hello {
        return ControlFlow::Continue(None);
    }
    let exempt = capacity::is_exempt(name);
    // Read before the lock: the clock the deployment runs on (tokio's, pausable in tests).
    let now = tokio::time::Instant::now().into_std();
    let admitted = {
        let mut state = lock(&node.inner.state);
        let Some(slot) = state.slots.get_mut(node.index) else {
            return ControlFlow::Continue(None);
        };
        let rejected = slot
            .overload
            .as_mut()
            .and_then(|overload| overload.evaluate(&mut *lock(&node.inner.rng)));
        match rejected {
            Some(rejection) => Err(rejection),
            None if exempt => Ok(None),
            None => slot.capacity.admit(now).map(Some),
        }
    };
    match admitted {
        Ok(admission) => ControlFlow::Continue(admission),
        Err(rejection) => ControlFlow::Break(node.finish(rejection.to_reply(), session, None)),
    }
}
