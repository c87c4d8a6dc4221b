//! One attempt of an operation, as a pipeline of stages, each in its own module and each
//! returning `Result<Next, Interrupt>`:
//!
//! ```text
//! select ─► check_out ─► session ─► prepare ─► exchange ─► interpret
//! ```
//!
//! A stage that fails classifies its error here ([`Executor::failure`]): the executor's one
//! translation of an `Error` into the retry rules' facts.

use std::sync::Arc;
use std::time::Duration;

use bson::RawDocumentBuf;
use steadfast_core::description::ServerType;
use steadfast_core::retry::{
    Admission, FailureFacts, FailureKind, OperationKind, Outcome, RetryPolicy, Sent, StopReason,
};
use steadfast_core::selection::SelectionCriteria;
use steadfast_core::{ServerAddress, TopologyType};

use super::Executor;
use super::classify::{Circumstances, DeadlineStatus, classify};
use super::{OperationPlan, Progress};
use crate::conn::description::StreamDescription;
use crate::error::Error;
use crate::operation::Operation;
use crate::runtime;
use crate::sdam::SelectedServer;

/// How an attempt ended.
pub(super) enum AttemptResult<T> {
    /// The server answered and the operation read the reply (into a result or an error that
    /// no retry can fix).
    Completed {
        result: crate::error::Result<T>,
        address: ServerAddress,
    },
    /// The attempt failed; the retry rules decide what happens next.
    Failed(Box<Failure>),
    /// A retry is impossible: the server selected for it does not support retryable writes
    /// (retryable-writes: raise the previous attempt's error).
    CannotRetry,
    /// The retry policy refused the first attempt before sending it (adaptive throttling).
    Refused(Error),
}

/// The error an attempt ended with, if it failed.
pub(super) fn error_of<T>(result: &AttemptResult<T>) -> Option<&Error> {
    match result {
        AttemptResult::Completed {
            result: Err(error), ..
        }
        | AttemptResult::Refused(error) => Some(error),
        AttemptResult::Failed(failure) => Some(&failure.error),
        AttemptResult::Completed { .. } | AttemptResult::CannotRetry => None,
    }
}

/// Why a stage did not hand its result to the next one.
pub(super) enum Interrupt {
    /// The stage failed; the retry rules decide what happens next.
    Failed(Box<Failure>),
    /// A retry is impossible (see [`AttemptResult::CannotRetry`]).
    CannotRetry,
    /// Refused before sending (see [`AttemptResult::Refused`]).
    Refused(Error),
}

impl<T> From<Interrupt> for AttemptResult<T> {
    fn from(interrupt: Interrupt) -> Self {
        match interrupt {
            Interrupt::Failed(failure) => AttemptResult::Failed(failure),
            Interrupt::CannotRetry => AttemptResult::CannotRetry,
            Interrupt::Refused(error) => AttemptResult::Refused(error),
        }
    }
}

/// A failed attempt.
pub(super) struct Failure {
    pub(super) error: Error,
    pub(super) facts: FailureFacts,
    pub(super) server: Option<ServerAddress>,
    pub(super) sharded: bool,
    /// An `ok: 1` reply whose write concern error may be retried; if it is not, the operation
    /// reads it as its result.
    pub(super) reply: Option<HeldReply>,
}

/// A reply kept for [`Operation::handle_reply`] with what its context needs.
pub(super) struct HeldReply {
    pub(super) reply: RawDocumentBuf,
    pub(super) description: Arc<StreamDescription>,
    pub(super) address: ServerAddress,
}

/// What the stages after selection share: the operation's plan, the server, and how the retry
/// rules see the operation at this attempt.
#[derive(Clone, Copy)]
pub(super) struct Stage<'a> {
    pub(super) plan: &'a OperationPlan,
    pub(super) selected: &'a SelectedServer,
    /// The criteria the server was selected by (the plan's, or their write-stage resolution).
    pub(super) criteria: &'a SelectionCriteria,
    pub(super) kind: OperationKind,
}

/// Where an attempt failed, for classifying the failure.
pub(super) struct On<'a> {
    pub(super) server: Option<&'a SelectedServer>,
    pub(super) sent: Sent,
    pub(super) base_backoff: Option<Duration>,
    pub(super) deadline: DeadlineStatus,
    /// The max wire version the attempt's connection reported in its handshake, once there
    /// is one: in load-balanced mode the server description has none (no monitoring).
    pub(super) wire_version: Option<i32>,
}

impl Executor {
    /// Runs one attempt of `op`.
    ///
    /// # Cancel safety
    /// Dropping the future midway releases the selected server and returns (or, mid-exchange,
    /// closes) the connection; the command may or may not have run.
    pub(super) async fn attempt<O: Operation>(
        self: &Arc<Self>,
        op: &mut O,
        plan: &OperationPlan,
        progress: &mut Progress<'_>,
    ) -> AttemptResult<O::Output> {
        self.run_stages(op, plan, progress)
            .await
            .unwrap_or_else(AttemptResult::from)
    }

    async fn run_stages<O: Operation>(
        self: &Arc<Self>,
        op: &mut O,
        plan: &OperationPlan,
        progress: &mut Progress<'_>,
    ) -> Result<AttemptResult<O::Output>, Interrupt> {
        let selection = self.select(plan, &mut progress.retry).await?;
        let selected = &selection.server;
        if progress.retry.is_first_attempt() {
            admit(plan, &selected.address, progress)?;
        }
        let mut stage = Stage {
            plan,
            selected,
            criteria: selection.criteria.as_ref().unwrap_or(&plan.criteria),
            kind: progress.retry.profile().kind,
        };
        let acquired = self.acquire(stage, selection.checkout, progress).await?;
        let (mut connection, description, origin) =
            (acquired.connection, acquired.description, acquired.origin);
        let mut session = match self.session(stage, &description, progress) {
            Ok(session) => session,
            Err(interrupt) => {
                self.release(connection, origin, plan, progress, false);
                return Err(interrupt);
            }
        };
        stage.kind = session.kind;
        let prepared = match self.prepare(op, stage, &description, &session) {
            Ok(prepared) => prepared,
            Err(interrupt) => {
                self.release(connection, origin, plan, progress, false);
                return Err(interrupt);
            }
        };
        if let Some(session) = session.session.as_deref_mut() {
            // The first command of a transaction is sent now: whatever its reply, the next
            // operation is not the first (transactions).
            session.transaction_mut().state.first_command_sent();
        }
        let exchanged = self
            .exchange_reauthenticating(
                stage,
                &mut connection,
                prepared,
                session.session.as_deref_mut(),
            )
            .await;
        let exchanged = match exchanged {
            Ok(exchanged) => exchanged,
            Err(interrupt) => {
                // The pool is cleared before this connection goes back to it (or is closed),
                // so that a waiter for it fails its check-out with PoolClearedError.
                self.topology().error_reports_applied().await;
                self.release(connection, origin, plan, progress, false);
                return Err(interrupt);
            }
        };
        let result = self.interpret(op, stage, description, exchanged, session.session);
        if matches!(result, AttemptResult::Failed(_)) {
            // As above: SDAM has judged the server's error before the connection goes back.
            self.topology().error_reports_applied().await;
        }
        // The connection goes back (to the pool, or its pin) only once the reply has been
        // read.
        let completed = matches!(&result, AttemptResult::Completed { result: Ok(_), .. });
        self.release(connection, origin, plan, progress, completed);
        Ok(result)
    }

    /// Classifies a failure of this attempt: the one place an attempt's `Error` becomes the
    /// retry rules' facts (with the labels the driver owes it).
    pub(super) fn failure(&self, error: Error, kind: OperationKind, on: &On<'_>) -> Interrupt {
        let (facts, error) = self.facts(error, kind, on);
        Interrupt::Failed(Box::new(Failure {
            error,
            facts,
            server: on.server.map(|s| s.address.clone()),
            sharded: on
                .server
                .is_some_and(|s| s.topology_type == TopologyType::Sharded),
            reply: None,
        }))
    }

    /// The facts of `error` and the error with the driver's labels added.
    pub(super) fn facts(
        &self,
        error: Error,
        kind: OperationKind,
        on: &On<'_>,
    ) -> (FailureFacts, Error) {
        let circumstances = Circumstances {
            kind,
            max_wire_version: on
                .wire_version
                .or(on.server.map(|s| s.description.max_wire_version))
                .unwrap_or(0),
            // A load balancer fronts mongos (load-balancers: "treated like a mongos").
            mongos: on.server.is_some_and(|s| {
                matches!(
                    s.description.server_type,
                    ServerType::Mongos | ServerType::LoadBalancer
                )
            }),
            deadline: on.deadline,
            sent: on.sent,
            base_backoff: on.base_backoff,
        };
        classify(error, &circumstances)
    }
}

/// Asks the operation's policy whether its first attempt may be sent to `server`; a refusal
/// ends the operation with an error that says it was never sent.
fn admit(
    plan: &OperationPlan,
    server: &ServerAddress,
    progress: &Progress<'_>,
) -> Result<(), Interrupt> {
    let policy = progress.retry.policy();
    match policy.admit(server, runtime::now(), &mut runtime::rng()) {
        Admission::Send => Ok(()),
        Admission::Refuse { probability } => {
            let error = Error::throttled(format!(
                "{} was refused by the client's adaptive retry policy because {server} has been shedding load (refusal probability {probability:.2})",
                plan.name
            ))
            .with_address(server)
            .with_retry_report(Vec::new(), Outcome::NotApplied, Some(StopReason::PolicyDeclined));
            Err(Interrupt::Refused(error))
        }
    }
}

/// Tells the operation's policy how `server` answered an attempt, when it answered: shed for
/// overload, or did the work (a result or any other error).
pub(super) fn observe_reply<T>(policy: &dyn RetryPolicy, result: &AttemptResult<T>) {
    let (server, shed) = match result {
        AttemptResult::Completed { address, .. } => (address, false),
        AttemptResult::Failed(failure) => match (&failure.server, &failure.facts.kind) {
            (Some(server), FailureKind::Command { .. } | FailureKind::WriteConcern { .. }) => {
                (server, failure.facts.is_overload())
            }
            _ => return,
        },
        AttemptResult::CannotRetry | AttemptResult::Refused(_) => return,
    };
    policy.observe_reply(server, runtime::now(), shed);
}

/// A failure before anything was sent.
pub(super) fn not_sent<'a>(server: Option<&'a SelectedServer>, plan: &OperationPlan) -> On<'a> {
    On {
        server,
        sent: Sent::No,
        base_backoff: None,
        deadline: deadline_status(plan),
        wire_version: None,
    }
}

/// Where the operation stands against its deadline now.
pub(super) fn deadline_status(plan: &OperationPlan) -> DeadlineStatus {
    DeadlineStatus::of(plan.deadline, runtime::now())
}
