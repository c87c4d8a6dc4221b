//! The executor: runs an [`Operation`] from start to finish.
//!
//! ```text
//! deadline (timeoutMS) ─► select ─► check out ─► implicit session ─► build + common fields
//!     ▲                                                                 │
//!     │                                            send, command events ▼
//!   sleep (capped) ◄── Retry ◄── RetryState::on_failure ◄── classify + SDAM error handling
//! ```
//!
//! Every attempt is one [`attempt`](Client::attempt); its failure becomes
//! `steadfast_core::retry::FailureFacts`, and the pure orchestrator
//! (`steadfast_core::retry::RetryState`) decides — with the operation's [`RetryPolicy`] — whether
//! to retry, when and where. The executor carries the decision out: it sleeps only through
//! `runtime`, passes the failed servers to the next selection as deprioritized, reuses the
//! same `txnNumber` and session, and, when it stops, builds the error from the retry history.

mod attempt;
mod classify;
mod fields;
mod monitoring;
pub(crate) mod run_command;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use steadfast_core::ServerAddress;
use steadfast_core::retry::{
    OperationKind, OperationProfile, Outcome, RetryDecision, RetryPolicy, RetryReason, RetryState,
    StopReason,
};
use steadfast_core::selection::SelectionCriteria;
use tracing::Instrument as _;

use self::attempt::{AttemptResult, Failure};
use crate::client::Client;
use crate::cursor::{CursorPin, CursorReply};
use crate::error::{AttemptRecord, Error, ErrorKind, Result};
use crate::event::RetryEvent;
use crate::operation::{Operation, ReplyContext, Retryability};
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
    /// timeoutMS as resolved by the caller; `None` falls back to the client's; zero means no
    /// limit.
    pub(crate) timeout: Option<Duration>,
    /// The retry policy; `None` means the client's.
    pub(crate) retry_policy: Option<Arc<dyn RetryPolicy>>,
    /// A fixed deadline that replaces `timeout`'s (a cursor's lifetime, for its getMores).
    pub(crate) deadline: Option<Instant>,
    /// No `maxTimeMS` on the command even under timeoutMS (CSOT: iteration-mode and
    /// non-awaitData tailable cursors' opening commands).
    pub(crate) omit_max_time: bool,
}

/// What the retry loop needs that stays fixed for an operation.
pub(crate) struct OperationPlan {
    name: String,
    operation_id: i64,
    started: Instant,
    deadline: Option<Instant>,
    /// timeoutMS is set (possibly to zero): the deprecated per-step timeouts give way to it.
    csot: bool,
    /// The command carries no `maxTimeMS` (see `ExecutionContext::omit_max_time`).
    omit_max_time: bool,
    criteria: SelectionCriteria,
    target: Option<ServerAddress>,
    acknowledged: bool,
    /// The command carries an `lsid` (acknowledged, and the operation takes sessions).
    takes_session: bool,
}

/// What changes from attempt to attempt.
pub(crate) struct Progress<'a> {
    retry: RetryState,
    explicit: Option<&'a mut ClientSession>,
    implicit: Option<ClientSession>,
    txn_number: Option<i64>,
}

/// A finished operation: its output, the server that produced it, and the implicit session it
/// ran in (a cursor keeps it).
struct Done<T> {
    output: T,
    address: ServerAddress,
    implicit: Option<ClientSession>,
}

impl Client {
    /// Runs `op`: select, check out, build, send, classify, SDAM, retry.
    ///
    /// # Errors
    /// The operation's error, chosen and annotated as the `error` module describes.
    ///
    /// # Cancel safety
    /// Dropping the future abandons the operation: a command in flight may or may not run.
    pub(crate) async fn execute<O: Operation>(
        &self,
        op: O,
        context: ExecutionContext<'_>,
    ) -> Result<O::Output> {
        self.run_operation(op, context)
            .await
            .map(|done| done.output)
    }

    /// Runs an operation that opens a cursor; also returns where the cursor lives and, when it
    /// has more batches, the implicit session its getMores must use.
    ///
    /// # Errors
    /// As [`Client::execute`].
    ///
    /// # Cancel safety
    /// As [`Client::execute`].
    pub(crate) async fn execute_cursor<O: Operation<Output = CursorReply>>(
        &self,
        op: O,
        context: ExecutionContext<'_>,
    ) -> Result<(CursorReply, CursorPin)> {
        let done = self.run_operation(op, context).await?;
        let session = if done.output.id != 0 {
            done.implicit
        } else {
            None
        };
        Ok((
            done.output,
            CursorPin {
                address: done.address,
                session,
            },
        ))
    }

    async fn run_operation<O: Operation>(
        &self,
        mut op: O,
        context: ExecutionContext<'_>,
    ) -> Result<Done<O::Output>> {
        let ExecutionContext {
            session,
            timeout,
            retry_policy,
            deadline,
            omit_max_time,
        } = context;
        self.ensure_open()?;
        let acknowledged = op.is_acknowledged();
        if let Some(session) = &session {
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
        }
        let options = self.options();
        let timeout = timeout.or(options.timeout);
        let started = runtime::now();
        let plan = OperationPlan {
            name: op.name().to_string(),
            operation_id: NEXT_OPERATION_ID.fetch_add(1, Ordering::Relaxed),
            started,
            deadline: deadline.or_else(|| timeout.filter(|t| !t.is_zero()).map(|t| started + t)),
            csot: timeout.is_some() || deadline.is_some(),
            omit_max_time,
            criteria: op.selection_criteria(),
            target: op.target().cloned(),
            acknowledged,
            takes_session: acknowledged && op.supports_sessions(),
        };
        let kind = match op.retryability() {
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
            retry_writes: options.retry_writes,
            max_adaptive_retries: options.max_adaptive_retries,
            overload_retargeting: options.enable_overload_retargeting,
            // timeoutMS=0 is a timeout too: no limit on the retries (CSOT "Retryability").
            has_timeout: plan.csot,
        };
        let policy = retry_policy.unwrap_or_else(|| self.default_retry_policy());
        let mut progress = Progress {
            retry: RetryState::new(profile),
            explicit: session,
            implicit: None,
            txn_number: None,
        };
        let mut errors: Vec<Error> = Vec::new();
        self.record_request(started);
        loop {
            let span = tracing::debug_span!(
                target: RETRY_LOG_TARGET,
                "attempt",
                operation = %plan.name,
                operation_id = plan.operation_id,
                attempt = errors.len(),
            );
            let result = self
                .attempt(&mut op, &plan, &mut progress)
                .instrument(span)
                .await;
            let failure = match result {
                AttemptResult::Completed { result, address } => {
                    return match result {
                        Ok(output) => Ok(Done {
                            output,
                            address,
                            implicit: progress.implicit.take(),
                        }),
                        Err(error) => Err(unreadable_reply(error, &progress.retry, &errors, None)),
                    };
                }
                AttemptResult::CannotRetry => {
                    return Err(final_error(
                        &plan,
                        &progress.retry,
                        errors,
                        Some(StopReason::NotRetryable),
                    ));
                }
                AttemptResult::Failed(failure) => failure,
            };
            let Failure {
                error,
                facts,
                server,
                sharded,
                reply,
            } = *failure;
            let now = runtime::now();
            let remaining = plan.deadline.map(|d| d.saturating_duration_since(now));
            let decision = self.with_budget(|budget, rng| {
                progress.retry.on_failure(
                    &facts,
                    server.clone(),
                    sharded,
                    now.saturating_duration_since(plan.started),
                    remaining,
                    policy.as_ref(),
                    Some(budget),
                    now,
                    rng,
                )
            });
            match decision {
                RetryDecision::Retry { after, .. } => {
                    self.announce_retry(&plan, &progress.retry, server.as_ref(), after);
                    errors.push(error);
                    if !after.is_zero() {
                        runtime::sleep_until(now + after).await;
                    }
                }
                RetryDecision::Stop(stop) => {
                    if let Some(held) = reply {
                        // A write concern error the rules did not retry: the operation reads
                        // the reply and reports it its own way.
                        let context = ReplyContext {
                            description: &held.description,
                            address: &held.address,
                        };
                        return match op.handle_reply(held.reply, &context) {
                            Ok(output) => Ok(Done {
                                output,
                                address: held.address,
                                implicit: progress.implicit.take(),
                            }),
                            Err(error) => Err(unreadable_reply(
                                error,
                                &progress.retry,
                                &errors,
                                Some(stop),
                            )),
                        };
                    }
                    errors.push(error);
                    return Err(final_error(&plan, &progress.retry, errors, Some(stop)));
                }
            }
        }
    }

    /// Whether command events must be built: a handler listens, or command logging is on.
    pub(crate) fn monitoring_active(&self) -> bool {
        self.events().is_active()
            || tracing::enabled!(target: monitoring::LOG_TARGET, tracing::Level::DEBUG)
    }

    /// Emits the retry event and the tracing event of a retry.
    fn announce_retry(
        &self,
        plan: &OperationPlan,
        retry: &RetryState,
        server: Option<&ServerAddress>,
        delay: Duration,
    ) {
        let Some(record) = retry.history().last() else {
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
    retry: &RetryState,
    errors: Vec<Error>,
    stop: Option<StopReason>,
) -> Error {
    let Some(last) = errors.last().cloned() else {
        return Error::invalid_argument("the operation ended without an attempt");
    };
    let index = retry
        .error_to_report()
        .filter(|i| *i < errors.len())
        .unwrap_or(errors.len() - 1);
    let expired = plan.csot
        && (plan.deadline.is_some_and(|d| runtime::now() >= d)
            || retry
                .history()
                .last()
                .is_some_and(|r| r.reason == RetryReason::DeadlineExpired));
    let reported = if expired {
        let limit = plan
            .deadline
            .map(|d| d.saturating_duration_since(plan.started))
            .unwrap_or_default();
        let mut error = Error::timeout(format!(
            "running {}: timeoutMS ({} ms) expired after {} attempt(s)",
            plan.name,
            limit.as_millis(),
            errors.len()
        ))
        .with_source(last.clone());
        if let Some(address) = last.address() {
            error = error.with_address(address);
        }
        error
    } else {
        errors[index].clone()
    };
    annotate(reported, retry, &errors, stop)
}

/// The error of an operation whose server answered `ok: 1` but whose reply the operation could
/// not turn into a result. A write the server acknowledged ran: unless the error itself says
/// what was applied (a write failure), its fate is unknown, never "not applied".
fn unreadable_reply(
    error: Error,
    retry: &RetryState,
    errors: &[Error],
    stop: Option<StopReason>,
) -> Error {
    let is_write = retry.profile().kind.is_write_like();
    let error = if errors.is_empty() {
        error
    } else {
        annotate(error, retry, errors, stop)
    };
    if is_write && !matches!(error.kind(), ErrorKind::Write(_)) {
        error.with_outcome(Outcome::Ambiguous)
    } else {
        error
    }
}

/// Attaches the attempts (`errors` runs parallel to the retry history) and the outcome.
fn annotate(error: Error, retry: &RetryState, errors: &[Error], stop: Option<StopReason>) -> Error {
    let history = retry
        .history()
        .iter()
        .zip(errors)
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
