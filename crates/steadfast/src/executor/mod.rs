//! The executor: runs an [`Operation`] from start to finish.
//!
//! The [`Executor`] (`shared.rs`) owns what that takes — topology, server-session pool, retry
//! budget, events, options, default retry policy, open or shut down — and is shared by the
//! `Client` handles, their sessions and their cursors. This module is its retry loop.
//!
//! ```text
//! Deadline (timeoutMS) ─► select ─► check_out ─► session ─► prepare ─► exchange ─► interpret
//!     ▲                                                                               │
//!     │                                                                  failure      ▼
//!   sleep (capped to the deadline) ◄── Retry ◄── RetrySession::on_failure ◄── classify + SDAM
//! ```
//!
//! Every attempt is one pass through the stages (`attempt.rs` and one module per stage); a
//! failure becomes `steadfast_core::retry::FailureFacts` in one place (`Executor::failure`), and
//! the operation's `steadfast_core::retry::RetrySession` — the pure orchestrator with the
//! operation's [`RetryPolicy`], its deadline and the errors of its attempts — decides whether
//! to retry, when and where. The executor carries the decision out: it sleeps only through
//! `runtime`, passes the failed servers to the next selection as deprioritized, reuses the
//! same `txnNumber` and session, and, when it stops, builds the error the session chooses.

mod attempt;
mod classify;
mod exchange;
mod fields;
#[cfg(test)]
mod future_size_tests;
mod interpret;
pub(crate) mod monitoring;
mod pinning;
mod prepare;
mod reauthenticate;
pub(crate) mod run_command;
mod select;
mod session;
mod shared;
mod spans;
#[cfg(test)]
mod tests;
mod transaction;

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use steadfast_core::retry::{
    AttemptFailure, FinalError, OperationKind, OperationProfile, Outcome, RetryDecision,
    RetryPolicy, RetrySession, StopReason,
};
use steadfast_core::selection::SelectionCriteria;
use steadfast_core::{Deadline, ServerAddress};
use tracing::Instrument as _;

use self::attempt::{AttemptResult, Failure};
pub(crate) use self::shared::{Executor, ExecutorParts};
use self::transaction::{TransactionPlan, label_failure, plan_transaction, unpin_before_retry};
use crate::cursor::{CursorPin, CursorReply};
use crate::error::{AttemptRecord, Error, ErrorKind, Result};
use crate::event::RetryEvent;
use crate::operation::{Operation, ReplyContext, Retryability};
use crate::pool::{PinPurpose, PinnedConnection, PooledConnection};
use crate::runtime;
use crate::session::ClientSession;

/// The tracing target of retry messages.
const RETRY_LOG_TARGET: &str = "steadfast::retry";

/// Operation ids are unique per process; every attempt of one operation shares its id.
static NEXT_OPERATION_ID: AtomicI64 = AtomicI64::new(1);

/// Per-operation settings resolved from the client, database, collection and operation levels.
#[derive(Default)]
pub(crate) struct ExecutionContext<'a> {
    /// The session to run in: an explicit one, or a cursor's implicit one; `None` for a fresh
    /// implicit session.
    pub(crate) session: Option<&'a mut ClientSession>,
    /// The retry policy; `None` means the client's.
    pub(crate) retry_policy: Option<Arc<dyn RetryPolicy>>,
    /// The operation's deadline, started where the operation was called from its resolved
    /// timeoutMS (or a deadline it shares: a cursor's lifetime, a bulk write's, a convenient
    /// transaction's).
    pub(crate) deadline: Deadline,
    /// No `maxTimeMS` on the command even under timeoutMS (CSOT: iteration-mode and
    /// non-awaitData tailable cursors' opening commands).
    pub(crate) omit_max_time: bool,
    /// The operation set its own timeoutMS inside a withTransaction callback that runs under
    /// one: refused (CSOT, "Convenient Transactions API").
    pub(crate) overrides_transaction_timeout: bool,
    /// The connection pinned to the cursor whose `getMore` or `killCursors` this is
    /// (load-balanced mode): every attempt runs on it, never on another connection.
    pub(crate) pinned: Option<&'a mut PinnedConnection>,
    /// The operation id the run's events carry, when it is one command of a larger operation
    /// (a bulk write's batches); `None`: a new one.
    pub(crate) operation_id: Option<i64>,
    /// The OpenTelemetry span of the larger operation this run is one command of (joined, see
    /// `crate::otel::OperationTrace`); `None`: the run opens its own.
    pub(crate) trace: Option<crate::otel::OperationTrace>,
}

/// The OpenTelemetry span of an operation made of several executor runs (a bulk write's
/// batches), started now in `session`'s transaction if it has one; the runs join it through
/// `ExecutionContext::trace`, and the caller ends it.
pub(crate) fn trace_operation(
    executor: &Executor,
    operation_name: &str,
    session: Option<&ClientSession>,
) -> crate::otel::OperationTrace {
    let transaction = session
        .filter(|session| session.in_transaction())
        .map(ClientSession::transaction_trace);
    crate::otel::OperationTrace::start(executor.tracer(), operation_name, transaction)
}

/// A new operation id, unique in the process.
pub(crate) fn new_operation_id() -> i64 {
    NEXT_OPERATION_ID.fetch_add(1, Ordering::Relaxed)
}

/// What the retry loop needs that stays fixed for an operation.
pub(crate) struct OperationPlan {
    name: String,
    /// The driver operation's name, as the OpenTelemetry specification names its span.
    operation_name: String,
    operation_id: i64,
    /// The operation's span (see `spans`); its attempts' spans are its children.
    span: tracing::Span,
    /// The operation's OpenTelemetry span and its command's (see `crate::otel`).
    otel: crate::otel::OperationTrace,
    /// timeoutMS as a deadline; under it the deprecated per-step timeouts give way.
    deadline: Deadline,
    /// The command carries no `maxTimeMS` (see `ExecutionContext::omit_max_time`).
    omit_max_time: bool,
    criteria: SelectionCriteria,
    /// An aggregation with `$out`/`$merge`: `criteria` is resolved at each selection.
    write_stage: bool,
    target: Option<ServerAddress>,
    acknowledged: bool,
    /// The command carries an `lsid` (acknowledged, and the operation takes sessions).
    takes_session: bool,
    /// The operation's place in its session's transaction, if it runs in one.
    transaction: Option<TransactionPlan>,
}

/// What changes from attempt to attempt.
pub(crate) struct Progress<'a> {
    retry: RetrySession<Error>,
    explicit: Option<&'a mut ClientSession>,
    implicit: Option<ClientSession>,
    txn_number: Option<i64>,
    /// The cursor connection the operation must run on (see `ExecutionContext::pinned`).
    cursor_pin: Option<&'a mut PinnedConnection>,
    /// The operation opens a cursor in load-balanced mode: its connection is kept for the
    /// cursor instead of being checked in.
    keep_connection: bool,
    /// The connection kept for the cursor.
    kept: Option<PooledConnection>,
}

impl Progress<'_> {
    /// The finished operation, handing over its implicit session.
    fn done<T>(&mut self, output: T, address: ServerAddress) -> Done<T> {
        Done {
            output,
            address,
            implicit: self.implicit.take(),
            connection: self.kept.take(),
        }
    }
}

/// A finished operation: its output, the server that produced it, and the implicit session it
/// ran in (a cursor keeps it).
struct Done<T> {
    output: T,
    address: ServerAddress,
    implicit: Option<ClientSession>,
    /// The connection kept for the cursor the operation opened (load-balanced mode).
    connection: Option<PooledConnection>,
}

impl Executor {
    /// Runs `op`: select, check out, build, send, classify, SDAM, retry.
    ///
    /// # Errors
    /// The operation's error, chosen and annotated as the `error` module describes.
    ///
    /// # Cancel safety
    /// Dropping the future abandons the operation: a command in flight may or may not run.
    pub(crate) fn execute<'a, O: Operation + 'a>(
        self: &'a Arc<Self>,
        op: O,
        context: ExecutionContext<'a>,
    ) -> impl Future<Output = Result<O::Output>> + 'a {
        // Boxed before the future is made: the operation then travels through the nested
        // stage futures as a pointer instead of being stored (and copied) at every level.
        let op = Box::new(op);
        async move {
            self.run_operation(op, context, false)
                .await
                .map(|done| done.output)
        }
    }

    /// Runs an operation that opens a cursor (boxed by the caller, see
    /// [`Executor::execute`]); also returns where the cursor lives and, when it has more
    /// batches, the implicit session its getMores must use and, in load-balanced mode, the
    /// connection they must run on (load-balancers, "Behaviour With Cursors"; a cursor
    /// exhausted at once checks its connection back in now).
    ///
    /// # Errors
    /// As [`Executor::execute`].
    ///
    /// # Cancel safety
    /// As [`Executor::execute`].
    pub(crate) async fn execute_cursor<O>(
        self: &Arc<Self>,
        op: Box<O>,
        context: ExecutionContext<'_>,
    ) -> Result<(O::Output, CursorPin)>
    where
        O: Operation,
        O::Output: AsRef<CursorReply>,
    {
        let done = self
            .run_operation(op, context, self.options().load_balanced)
            .await?;
        let (session, connection) = if done.output.as_ref().id != 0 {
            (
                done.implicit,
                done.connection
                    .map(|c| PinnedConnection::new(c, PinPurpose::Cursor)),
            )
        } else {
            (None, None)
        };
        Ok((
            done.output,
            CursorPin {
                address: done.address,
                session,
                connection,
            },
        ))
    }

    async fn run_operation<O: Operation>(
        self: &Arc<Self>,
        mut op: Box<O>,
        context: ExecutionContext<'_>,
        keep_connection: bool,
    ) -> Result<Done<O::Output>> {
        let (plan, mut progress) = self.start(&*op, context)?;
        progress.keep_connection = keep_connection && progress.cursor_pin.is_none();
        let result = self
            .run_attempts(&mut *op, &plan, &mut progress)
            .instrument(plan.span.clone())
            .await;
        if let Err(error) = &result {
            spans::failed(&plan.span, error);
        }
        let result = match (&plan.transaction, result) {
            (Some(transaction), Err(error)) => Err(label_failure(
                error,
                transaction,
                plan.deadline,
                progress.explicit.as_deref_mut(),
            )),
            (_, result) => result,
        };
        plan.otel.finish(result.as_ref().err());
        result
    }

    /// The retry loop: attempts until one completes or the retry rules stop.
    async fn run_attempts<O: Operation>(
        self: &Arc<Self>,
        op: &mut O,
        plan: &OperationPlan,
        progress: &mut Progress<'_>,
    ) -> Result<Done<O::Output>> {
        let mut attempt: u32 = 0;
        loop {
            let span = spans::command(&plan.name, plan.operation_id, attempt);
            attempt = attempt.saturating_add(1);
            let result = self
                .attempt(op, plan, progress)
                .instrument(span.clone())
                .await;
            spans::attempt_finished(&span, &result);
            plan.otel.attempt_ended(attempt::error_of(&result));
            attempt::observe_reply(progress.retry.policy(), &result);
            let failure = match result {
                AttemptResult::Completed { result, address } => {
                    return match result {
                        Ok(output) => Ok(progress.done(output, address)),
                        Err(error) => Err(unreadable_reply(error, &progress.retry, None)),
                    };
                }
                AttemptResult::CannotRetry => {
                    let stop = Some(StopReason::NotRetryable);
                    return Err(final_error(plan, &progress.retry, stop));
                }
                AttemptResult::Refused(error) => return Err(error),
                AttemptResult::Failed(failure) => *failure,
            };
            // Boxed: the retry path is cold, and its sleep would enlarge every operation's
            // future.
            let after = Box::pin(self.after_failure(op, plan, progress, failure));
            if let Some(end) = after.await {
                return end;
            }
        }
    }

    /// Checks the context, resolves the operation's settings, and opens its retry session.
    ///
    /// # Errors
    /// `Shutdown` when the client is shut down; `InvalidArgument` when the session cannot be
    /// used.
    fn start<'a, O: Operation>(
        self: &Arc<Self>,
        op: &O,
        context: ExecutionContext<'a>,
    ) -> Result<(OperationPlan, Progress<'a>)> {
        let ExecutionContext {
            mut session,
            retry_policy,
            deadline,
            omit_max_time,
            overrides_transaction_timeout,
            pinned,
            operation_id,
            trace,
        } = context;
        self.ensure_open()?;
        if overrides_transaction_timeout {
            return Err(Error::invalid_argument(
                "timeoutMS cannot be set on an operation inside a withTransaction callback that runs under timeoutMS",
            ));
        }
        // In a transaction the operation's own write concern is not sent: it is acknowledged
        // as the transaction is (transactions, "Behavior of the writeConcern field").
        let in_transaction = session
            .as_deref()
            .is_some_and(ClientSession::in_transaction);
        let acknowledged = op.is_acknowledged() || in_transaction;
        if let Some(session) = &session {
            self.check_session(session, acknowledged)?;
        }
        let transaction = match session.as_deref_mut() {
            Some(session) if acknowledged => plan_transaction(session, op)?,
            _ => None,
        };
        let options = self.options();
        let started = runtime::now();
        let operation_id = operation_id.unwrap_or_else(new_operation_id);
        // In a transaction (its commit and abort included) the span nests in the
        // transaction's.
        let transaction_trace = match (&transaction, session.as_deref()) {
            (Some(_), Some(session)) => Some(session.transaction_trace()),
            _ => None,
        };
        let otel = trace.unwrap_or_else(|| {
            crate::otel::OperationTrace::start(
                self.tracer(),
                op.operation_name(),
                transaction_trace,
            )
        });
        let plan = OperationPlan {
            name: op.name().to_string(),
            operation_name: op.operation_name().to_owned(),
            operation_id,
            span: spans::operation(op.operation_name(), operation_id),
            otel,
            deadline,
            omit_max_time,
            criteria: transaction
                .as_ref()
                .and_then(|t| t.criteria.clone())
                .unwrap_or_else(|| op.selection_criteria()),
            write_stage: op.has_write_stage(),
            target: op
                .target()
                .cloned()
                .or_else(|| transaction.as_ref().and_then(|t| t.pinned.clone())),
            acknowledged,
            takes_session: acknowledged && op.supports_sessions(),
            transaction,
        };
        let ends_transaction = plan.transaction.as_ref().is_some_and(|t| t.ends);
        let kind = match op.retryability() {
            // commitTransaction and abortTransaction are retried whatever retryWrites says.
            _ if ends_transaction => OperationKind::RetryableWrite,
            // Inside a transaction only overload errors are retried.
            _ if plan.transaction.is_some() => OperationKind::NonRetryableWrite,
            Retryability::Read => OperationKind::RetryableRead,
            Retryability::Write if acknowledged && options.retry_writes => {
                OperationKind::RetryableWrite
            }
            Retryability::Write | Retryability::None => OperationKind::NonRetryableWrite,
            Retryability::GetMore => OperationKind::GetMore,
            Retryability::RunCommand => OperationKind::RunCommand,
        };
        let profile = OperationProfile {
            name: plan.name.clone(),
            kind,
            idempotent: op.idempotent(),
            retry_reads: options.retry_reads,
            retry_writes: options.retry_writes || ends_transaction,
            max_adaptive_retries: options.max_adaptive_retries,
            overload_retargeting: options.enable_overload_retargeting,
            // The retry session sets it from the deadline.
            has_timeout: false,
        };
        let policy = retry_policy.unwrap_or_else(|| self.default_retry_policy());
        let progress = Progress {
            retry: RetrySession::new(profile, policy, plan.deadline, started),
            explicit: session,
            implicit: None,
            txn_number: None,
            cursor_pin: pinned,
            keep_connection: false,
            kept: None,
        };
        self.record_request(started);
        Ok((plan, progress))
    }

    /// An explicit session must belong to this client, and cannot carry an unacknowledged write.
    fn check_session(self: &Arc<Self>, session: &ClientSession, acknowledged: bool) -> Result<()> {
        if !session.belongs_to(self) {
            return Err(Error::invalid_argument(
                "the session belongs to another client",
            ));
        }
        if !acknowledged && !session.is_implicit() {
            return Err(Error::invalid_argument(
                "an unacknowledged write (w: 0) cannot run in an explicit session",
            ));
        }
        Ok(())
    }

    /// Asks the retry session about a failed attempt and carries out its decision: sleep
    /// (capped to the deadline) before the next attempt and return `None`, or end the
    /// operation.
    async fn after_failure<O: Operation>(
        &self,
        op: &mut O,
        plan: &OperationPlan,
        progress: &mut Progress<'_>,
        failure: Failure,
    ) -> Option<Result<Done<O::Output>>> {
        let Failure {
            error,
            facts,
            server,
            sharded,
            reply,
        } = failure;
        let now = runtime::now();
        let overload = facts.is_retryable_overload();
        let failure = AttemptFailure {
            error,
            facts,
            server: server.clone(),
            sharded,
        };
        let decision =
            self.with_budget(|budget, rng| progress.retry.on_failure(failure, budget, now, rng));
        let stop = match decision {
            RetryDecision::Retry { after, .. } => {
                op.before_retry(overload);
                unpin_before_retry(plan.transaction.as_ref(), progress.explicit.as_deref_mut());
                self.announce_retry(plan, &progress.retry, server.as_ref(), after);
                let after = plan.deadline.cap(after, now);
                if !after.is_zero() {
                    runtime::sleep_until(now + after).await;
                }
                return None;
            }
            RetryDecision::Stop(stop) => stop,
        };
        let Some(held) = reply else {
            return Some(Err(final_error(plan, &progress.retry, Some(stop))));
        };
        // A write concern error the rules did not retry: the operation reads the reply and
        // reports it its own way.
        let context = ReplyContext {
            description: &held.description,
            address: &held.address,
        };
        Some(match op.handle_reply(held.reply, &context) {
            Ok(output) => Ok(progress.done(output, held.address)),
            Err(error) => Err(unreadable_reply(error, &progress.retry, Some(stop))),
        })
    }

    /// Whether command events must be built: a handler listens, or command logging is on.
    pub(crate) fn monitoring_active(&self) -> bool {
        self.events().is_active() || monitoring::logging_enabled()
    }

    /// Emits the retry event and the tracing event of a retry.
    fn announce_retry(
        &self,
        plan: &OperationPlan,
        retry: &RetrySession<Error>,
        server: Option<&ServerAddress>,
        delay: Duration,
    ) {
        let Some(record) = retry.last_record() else {
            return;
        };
        tracing::info!(
            target: RETRY_LOG_TARGET,
            operation = %plan.name,
            operation_id = plan.operation_id,
            attempt = record.attempt,
            reason = %record.reason,
            execution = ?record.execution,
            delay_ms = delay.as_secs_f64() * 1000.0,
            server = server.map(ToString::to_string),
            "retrying"
        );
        self.events().retry(|| RetryEvent {
            operation: plan.name.clone(),
            operation_id: plan.operation_id,
            attempt: record.attempt,
            reason: record.reason,
            execution: record.execution,
            delay,
            server: server.cloned(),
        });
    }
}

/// The error a failed operation reports: the retry-writes choice among the attempts' errors
/// (or, once the deadline has passed, a timeout wrapping the last one), with the history and
/// the outcome.
fn final_error(
    plan: &OperationPlan,
    retry: &RetrySession<Error>,
    stop: Option<StopReason>,
) -> Error {
    let reported = match retry.final_error(runtime::now()) {
        None => return Error::invalid_argument("the operation ended without an attempt"),
        Some(FinalError::Chosen(error)) => error.clone(),
        Some(FinalError::DeadlineExpired {
            last,
            limit,
            attempts,
        }) => {
            let error = Error::timeout(format!(
                "running {}: timeoutMS ({} ms) expired after {attempts} attempt(s)",
                plan.name,
                limit.as_millis(),
            ))
            .with_source(last.clone());
            match last.address() {
                Some(address) => error.with_address(address),
                None => error,
            }
        }
    };
    annotate(reported, retry, usize::MAX, stop)
}

/// The error of an operation whose server answered `ok: 1` but whose reply the operation could
/// not turn into a result. A write the server acknowledged ran: unless the error itself says
/// what was applied (a write failure), its fate is unknown, never "not applied". The attempt
/// that produced the reply is not part of the history it reports.
fn unreadable_reply(error: Error, retry: &RetrySession<Error>, stop: Option<StopReason>) -> Error {
    let is_write = retry.profile().kind.is_write_like();
    let earlier = match stop {
        // A held reply: the session recorded its attempt as the last failure.
        Some(_) => retry.attempts().count().saturating_sub(1),
        None => retry.attempts().count(),
    };
    let error = if earlier == 0 {
        error
    } else {
        annotate(error, retry, earlier, stop)
    };
    if is_write && !matches!(error.kind(), ErrorKind::Write(_)) {
        error.with_outcome(Outcome::Ambiguous)
    } else {
        error
    }
}

/// Attaches the first `count` attempts of the history and the outcome.
fn annotate(
    error: Error,
    retry: &RetrySession<Error>,
    count: usize,
    stop: Option<StopReason>,
) -> Error {
    let history = retry
        .attempts()
        .take(count)
        .map(|(record, error)| AttemptRecord {
            address: record.server.clone(),
            error: error.clone(),
            reason: record.reason,
            execution: record.execution,
            delay_before_next: record.delay.unwrap_or_default(),
        })
        .collect();
    error.with_retry_report(history, retry.outcome(), stop)
}
