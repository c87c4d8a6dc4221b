//! The one place the CRUD API meets the executor: running an operation with the resolved
//! timeout and retry policy and an optional explicit session, running the batches of a bulk
//! write, and opening cursors.

use std::sync::Arc;
use std::time::Duration;

use steadfast_core::retry::{Outcome, RetryPolicy};

use super::Namespace;
use super::bulk::{BulkAccumulator, BulkPlan};
use crate::client::Client;
use crate::cursor::{Cursor, CursorReply, CursorSettings, CursorState, SessionCursor};
use crate::error::{Error, Result};
use crate::executor::ExecutionContext;
use crate::operation::Operation;
use crate::operation::write::{SizeCheck, WriteBatch, WriteCommandFields};
use crate::results::BulkWriteResult;
use crate::session::ClientSession;

/// The per-operation settings resolved from the handle levels.
#[derive(Clone, Debug, Default)]
pub(crate) struct OperationSettings {
    /// timeoutMS (`None`: unset).
    pub(crate) timeout: Option<Duration>,
    /// The retry policy (`None`: the client's).
    pub(crate) retry_policy: Option<Arc<dyn RetryPolicy>>,
}

impl OperationSettings {
    /// The execution context of one run of an operation with these settings in `session`.
    pub(crate) fn context<'s>(
        &self,
        session: Option<&'s mut ClientSession>,
    ) -> ExecutionContext<'s> {
        ExecutionContext {
            session,
            timeout: self.timeout,
            retry_policy: self.retry_policy.clone(),
        }
    }
}

/// Runs `op`.
///
/// # Errors
/// Whatever the executor or the operation reports.
pub(crate) async fn execute<O: Operation>(
    client: &Client,
    op: O,
    session: Option<&mut ClientSession>,
    settings: &OperationSettings,
) -> Result<O::Output> {
    client
        .executor()
        .execute(op, settings.context(session))
        .await
}

/// Runs an operation that opens a cursor, on an implicit session that the cursor keeps for
/// its `getMore`s.
///
/// # Errors
/// Whatever the executor or the operation reports.
pub(crate) async fn open_cursor<O, T>(
    client: &Client,
    op: O,
    settings: OperationSettings,
    cursor_settings: CursorSettings,
) -> Result<Cursor<T>>
where
    O: Operation<Output = CursorReply>,
{
    let executor = client.executor();
    let (reply, pin) = executor.execute_cursor(op, settings.context(None)).await?;
    let state = CursorState::new(reply, pin.address, cursor_settings);
    Ok(Cursor::new(
        Arc::clone(executor),
        state,
        pin.session,
        settings,
    ))
}

/// Runs an operation that opens a cursor in the caller's session.
///
/// # Errors
/// Whatever the executor or the operation reports.
pub(crate) async fn open_session_cursor<O, T>(
    client: &Client,
    op: O,
    session: &mut ClientSession,
    settings: OperationSettings,
    cursor_settings: CursorSettings,
) -> Result<SessionCursor<T>>
where
    O: Operation<Output = CursorReply>,
{
    let executor = client.executor();
    let (reply, pin) = executor
        .execute_cursor(op, settings.context(Some(session)))
        .await?;
    let state = CursorState::new(reply, pin.address, cursor_settings);
    Ok(SessionCursor::new(Arc::clone(executor), state, settings))
}

/// Sends every batch of a bulk write, run by run: one command (and one `txnNumber`) per batch;
/// an ordered bulk stops after the first batch with a write error.
///
/// # Errors
/// A command error or network error of a batch as the executor reports it; `Write` with the
/// merged write errors and write concern errors. Either carries the bulk's
/// [`PartialWrite`](crate::error::PartialWrite): what the earlier batches applied stays
/// reported, and the failed batch's statements are of unknown fate unless the executor knows
/// that none of its attempts could have run.
pub(crate) async fn run_bulk(
    client: &Client,
    ns: &Namespace,
    plan: BulkPlan,
    fields: WriteCommandFields,
    mut session: Option<&mut ClientSession>,
    settings: &OperationSettings,
) -> Result<BulkWriteResult> {
    let fields = Arc::new(fields);
    let mut accumulator = BulkAccumulator::new(&plan, fields.ordered);
    // The first batch checks every statement of the bulk against the server's limit, so an
    // oversized document fails the operation before anything is sent.
    let mut size_check: Option<Arc<[SizeCheck]>> = Some(
        plan.runs
            .iter()
            .flat_map(|run| {
                run.positions
                    .iter()
                    .zip(run.statements.iter())
                    .map(|(&position, statement)| SizeCheck {
                        position,
                        len: statement.checked_len,
                    })
            })
            .collect(),
    );
    'runs: for run in &plan.runs {
        let mut start = 0;
        while start < run.statements.len() {
            let batch = WriteBatch::new(
                ns.clone(),
                run.kind,
                Arc::clone(&run.statements),
                start,
                Arc::clone(&fields),
            );
            let batch = match size_check.take() {
                Some(sizes) => batch.with_size_check(sizes),
                None => batch,
            };
            let extent = batch.extent();
            let outcome = match execute(client, batch, session.as_deref_mut(), settings).await {
                Ok(outcome) if outcome.count > 0 => outcome,
                Ok(_) => {
                    // The server acknowledged a batch the driver cannot place: its fate is open.
                    let error = Error::protocol(format!(
                        "a {} batch reported sending no statement",
                        run.kind.command_name()
                    ))
                    .with_outcome(Outcome::Ambiguous);
                    return Err(accumulator.fail(run, start, extent.get().copied(), error));
                }
                Err(error) => {
                    return Err(accumulator.fail(run, start, extent.get().copied(), error));
                }
            };
            start += outcome.count;
            accumulator.add(run, outcome);
            if accumulator.must_stop() {
                break 'runs;
            }
        }
    }
    accumulator.finish()
}

impl<T: Send + Sync> super::Collection<T> {
    /// timeoutMS and retry policy for this collection's operations.
    pub(crate) fn operation_settings(&self) -> OperationSettings {
        OperationSettings {
            timeout: self.timeout(),
            retry_policy: self.retry_policy(),
        }
    }

    /// Runs a write plan on this collection with its timeoutMS and retry policy.
    ///
    /// # Errors
    /// As [`run_bulk`].
    pub(crate) async fn run_write_plan(
        &self,
        plan: BulkPlan,
        fields: WriteCommandFields,
        session: Option<&mut ClientSession>,
    ) -> Result<BulkWriteResult> {
        let settings = self.operation_settings();
        run_bulk(self.client(), self.ns(), plan, fields, session, &settings).await
    }
}
