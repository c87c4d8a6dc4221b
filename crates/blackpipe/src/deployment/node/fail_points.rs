//! The fail points a command meets on its way (configured by `configureFailPoint`, a control
//! command): `failCommand` before the command runs (blocking the connection, closing it, or
//! failing with a code), and `onPrimaryTransactionalWrite` where a retryable write is applied.
//! (`failGetMoreAfterCursorCheckout` belongs to the change-stream gate, and the write concern
//! errors `failCommand` injects to the write concern stage.)

use std::ops::ControlFlow;

use bson::Document;

use super::context::request::CommandClass;
use super::context::time::interrupted;
use super::context::{Gate, NodeContext};
use crate::deployment::errors::{self, SessionFacts};
use crate::deployment::state::lock;
use crate::failpoint::{CommandFacts, FailOutcome, TransactionalWriteAction};
use crate::server::{Reaction, Request};

/// `failCommand`: blocks, hangs up or fails the command with these facts if a fail point
/// triggers. A stepdown during the block interrupts a write that started on the primary.
pub(crate) async fn fail_command(
    node: &NodeContext,
    facts: &CommandFacts<'_>,
    write_on_primary: Option<i64>,
    session: SessionFacts,
) -> Gate {
    let Some(action) = node.fail_command_action(facts) else {
        return ControlFlow::Continue(());
    };
    if let Some(block) = action.block_for {
        // A partition that begins during the block holds the reply, not the command.
        if node.pause(block, write_on_primary).await.is_err() {
            return ControlFlow::Break(interrupted(node, session));
        }
    }
    match action.outcome {
        FailOutcome::Proceed => ControlFlow::Continue(()),
        FailOutcome::CloseConnection => ControlFlow::Break(Reaction::HangUp.into()),
        FailOutcome::Error { code, labels } => ControlFlow::Break(node.finish(
            errors::error_reply(code, "Failing command via 'failCommand' failpoint"),
            session,
            labels.as_deref(),
        )),
    }
}

/// `onPrimaryTransactionalWrite` before a retryable write is applied: `Continue` with what
/// to do after the commit, or the hang-up or error that replaces the write.
pub(crate) fn transactional_write(
    node: &NodeContext,
    request: &Request,
    session: SessionFacts,
    class: CommandClass,
) -> Gate<TransactionalWriteAction> {
    let command: &Document = request.command();
    // mongod's fail point sits where a retryable write is applied; a retry that the
    // transaction table answers from its stored outcomes applies nothing and never reaches it.
    let retryable_write = class == CommandClass::Write
        && session.has_txn_number
        && !session.in_transaction
        && command.contains_key("lsid")
        && !node.store().replays_entirely(command);
    let transactional = if retryable_write {
        lock(&node.process.fail_points).transactional_write(&mut *lock(&node.inner.rng))
    } else {
        TransactionalWriteAction::Proceed
    };
    match transactional {
        TransactionalWriteAction::CloseBeforeCommit => ControlFlow::Break(Reaction::HangUp.into()),
        TransactionalWriteAction::FailBeforeCommit { code } => ControlFlow::Break(node.finish(
            errors::error_reply(
                code,
                "Failing write via 'onPrimaryTransactionalWrite' failpoint",
            ),
            session,
            None,
        )),
        other => ControlFlow::Continue(other),
    }
}
