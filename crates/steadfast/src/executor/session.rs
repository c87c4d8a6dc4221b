//! The session stage of an attempt: the explicit session, or an implicit one taken only now
//! that a connection is checked out (so that no more server sessions are in use than
//! connections), and the retryable write's transaction number.

use std::sync::Arc;

use steadfast_core::TopologyType;
use steadfast_core::retry::OperationKind;

use super::Executor;
use super::Progress;
use super::attempt::{Interrupt, Stage, not_sent};
use super::transaction::pin_if_sharded;
use crate::conn::description::StreamDescription;
use crate::error::Error;
use crate::session::{ClientSession, SessionOptions};

/// The session an attempt runs in and how the retry rules see the attempt.
pub(super) struct AttemptSession<'p> {
    /// The session whose `lsid` the command carries, if any.
    pub(super) session: Option<&'p mut ClientSession>,
    /// The operation's kind once the transaction number is settled.
    pub(super) kind: OperationKind,
    /// The retryable write's transaction number, reused by every retry.
    pub(super) txn_number: Option<i64>,
}

impl Executor {
    /// Picks the attempt's session and, for a retryable write, its transaction number. A
    /// retryable write without one becomes non-retryable on its first attempt and cannot be
    /// retried on later ones.
    pub(super) fn session<'p>(
        self: &Arc<Self>,
        stage: Stage<'_>,
        description: &StreamDescription,
        progress: &'p mut Progress<'_>,
    ) -> Result<AttemptSession<'p>, Interrupt> {
        let Stage {
            plan,
            selected,
            kind,
            ..
        } = stage;
        let supported = description.logical_session_timeout_minutes.is_some()
            || selected.topology_type == TopologyType::LoadBalanced;
        let first = progress.retry.is_first_attempt();
        if plan.takes_session {
            if progress.explicit.is_some() && !supported {
                let error = Error::invalid_argument(
                    "the operation runs in a session, but the server does not support sessions",
                )
                .with_address(&selected.address);
                return Err(self.failure(error, kind, &not_sent(Some(selected), plan)));
            }
            if progress.explicit.is_none() && progress.implicit.is_none() && supported {
                let options = SessionOptions::default();
                progress.implicit = Some(ClientSession::new(Arc::clone(self), options, true));
            }
        }
        let Progress {
            retry,
            explicit,
            implicit,
            txn_number,
            ..
        } = progress;
        let mut session = if plan.takes_session && supported {
            explicit.as_deref_mut().or(implicit.as_mut())
        } else {
            None
        };
        let retryable_write = retry.profile().kind == OperationKind::RetryableWrite;
        if retryable_write && plan.transaction.is_none() && txn_number.is_none() {
            match session
                .as_deref_mut()
                .and_then(ClientSession::next_txn_number)
            {
                Some(number) => *txn_number = Some(number),
                None if first => retry.set_kind(OperationKind::NonRetryableWrite),
                None => return Err(Interrupt::CannotRetry),
            }
        }
        let kind = retry.profile().kind;
        let txn_number = match &plan.transaction {
            // Every command of a transaction carries the number startTransaction took.
            Some(transaction) => {
                let session = session.as_deref_mut();
                let number = session.as_ref().and_then(|s| s.current_txn_number());
                if let (Some(session), true) = (session, transaction.first) {
                    pin_if_sharded(session, selected);
                }
                number
            }
            None => txn_number.filter(|_| kind == OperationKind::RetryableWrite),
        };
        Ok(AttemptSession {
            session,
            kind,
            txn_number,
        })
    }
}
