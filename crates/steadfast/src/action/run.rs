//! The one place the CRUD API meets the executor: running an operation with the resolved
//! timeout and retry policy and an optional explicit session, running the batches of a bulk
//! write, and opening cursors. Also what the actions take from the collection or database
//! they were built from: the inherited settings and the write commands' fields.

use std::sync::Arc;

use bson::{Bson, Document};
use steadfast_core::ServerAddress;
use steadfast_core::options::WriteConcern;
use steadfast_core::retry::Outcome;

use crate::bulk::plan::{BulkAccumulator, BulkPlan};
use crate::client::Client;
use crate::coll::Collection;
use crate::cursor::{
    Cursor, CursorReply, CursorSettings, CursorState, SessionCursor, cursor_timing,
};
use crate::db::Database;
use crate::error::{Error, Result};
use crate::namespace::Namespace;
use crate::operation::Operation;
use crate::operation::inherited::Inherited;
use crate::operation::settings::{OperationOverrides, OperationSettings};
use crate::operation::write::{SizeCheck, WriteBatch, WriteCommandFields};
use crate::options::CollectionOptions;
use crate::raw_batch_cursor::{RawBatchCursor, SessionRawBatchCursor};
use crate::results::BulkWriteResult;
use crate::runtime;
use crate::session::ClientSession;

/// Runs `op`.
///
/// # Errors
/// Whatever the executor or the operation reports.
pub(crate) fn execute<'a, O: Operation + 'a>(
    client: &'a Client,
    op: O,
    session: Option<&'a mut ClientSession>,
    settings: &OperationSettings,
) -> impl Future<Output = Result<O::Output>> + use<'a, O> {
    // No future of its own: the executor's holds the boxed operation.
    client.executor().execute(op, settings.context(session))
}

/// Runs an operation that opens a cursor, on an implicit session that the cursor keeps for
/// its `getMore`s.
///
/// # Errors
/// Whatever the executor or the operation reports.
pub(crate) async fn open_cursor<O, T>(
    client: &Client,
    op: Box<O>,
    settings: OperationSettings,
    cursor_settings: CursorSettings,
) -> Result<Cursor<T>>
where
    O: Operation<Output = CursorReply>,
{
    open_cursor_as(client, op, settings, cursor_settings, CursorState::new).await
}

/// [`open_cursor`] for a cursor handing out whole batches (`.batch()`).
///
/// # Errors
/// Whatever the executor or the operation reports.
pub(crate) async fn open_raw_batch_cursor<O>(
    client: &Client,
    op: Box<O>,
    settings: OperationSettings,
    cursor_settings: CursorSettings,
) -> Result<RawBatchCursor>
where
    O: Operation<Output = CursorReply>,
{
    let cursor = open_cursor_as(
        client,
        op,
        settings,
        cursor_settings,
        CursorState::new_raw_batches,
    )
    .await?;
    Ok(RawBatchCursor::new(cursor))
}

/// [`open_session_cursor`] for a cursor handing out whole batches (`.batch()`).
///
/// # Errors
/// Whatever the executor or the operation reports.
pub(crate) async fn open_raw_batch_session_cursor<O>(
    client: &Client,
    op: Box<O>,
    session: &mut ClientSession,
    settings: OperationSettings,
    cursor_settings: CursorSettings,
) -> Result<SessionRawBatchCursor>
where
    O: Operation<Output = CursorReply>,
{
    let cursor = open_session_cursor_as(
        client,
        op,
        session,
        settings,
        cursor_settings,
        CursorState::new_raw_batches,
    )
    .await?;
    Ok(SessionRawBatchCursor::new(cursor))
}

/// How a cursor's state is built from the opening reply (documents or whole batches).
type NewState = fn(CursorReply, ServerAddress, CursorSettings) -> CursorState;

async fn open_cursor_as<O, T>(
    client: &Client,
    op: Box<O>,
    settings: OperationSettings,
    cursor_settings: CursorSettings,
    new_state: NewState,
) -> Result<Cursor<T>>
where
    O: Operation<Output = CursorReply>,
{
    let (opening, settings) = cursor_phases(settings, &cursor_settings, None)?;
    let executor = client.executor();
    let (reply, pin) = executor.execute_cursor(op, opening.context(None)).await?;
    let state = new_state(reply, pin.address, cursor_settings).pinned_to(pin.connection);
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
    op: Box<O>,
    session: &mut ClientSession,
    settings: OperationSettings,
    cursor_settings: CursorSettings,
) -> Result<SessionCursor<T>>
where
    O: Operation<Output = CursorReply>,
{
    open_session_cursor_as(
        client,
        op,
        session,
        settings,
        cursor_settings,
        CursorState::new,
    )
    .await
}

async fn open_session_cursor_as<O, T>(
    client: &Client,
    op: Box<O>,
    session: &mut ClientSession,
    settings: OperationSettings,
    cursor_settings: CursorSettings,
    new_state: NewState,
) -> Result<SessionCursor<T>>
where
    O: Operation<Output = CursorReply>,
{
    let (opening, settings) = cursor_phases(settings, &cursor_settings, Some(session))?;
    let executor = client.executor();
    let (reply, pin) = executor
        .execute_cursor(op, opening.context(Some(session)))
        .await?;
    let state = new_state(reply, pin.address, cursor_settings).pinned_to(pin.connection);
    Ok(SessionCursor::new(
        Arc::clone(executor),
        state,
        settings,
        session,
    ))
}

/// The settings of a cursor's opening command and of its later fetches, from the operation's
/// settings and the cursor's `timeoutMode` (see `cursor_timing`); the clock starts now.
///
/// # Errors
/// `InvalidArgument` for options that CSOT rejects (see `cursor_timing`).
fn cursor_phases(
    settings: OperationSettings,
    cursor_settings: &CursorSettings,
    session: Option<&ClientSession>,
) -> Result<(OperationSettings, OperationSettings)> {
    let timeout = settings.timeout_in(session);
    let timing = cursor_timing(timeout, cursor_settings)?;
    let opening = OperationSettings {
        omit_max_time: timing.omit_max_time,
        ..settings.clone()
    };
    let fetches = OperationSettings {
        deadline: settings
            .deadline
            .or_else(|| timing.lifetime_deadline(timeout, runtime::now())),
        ..settings
    };
    Ok((opening, fetches))
}

/// Sends every batch of a bulk write, run by run: one command (and one `txnNumber`) per batch;
/// an ordered bulk stops after the first batch with a write error.
///
/// # Errors
/// A command error or network error of a batch as the executor reports it; the plan's
/// [`FailureShape`](crate::bulk::plan::FailureShape) with the merged write errors and write concern
/// errors. Either carries the bulk's
/// [`PartialWrite`](crate::error::PartialWrite): what the earlier batches applied stays
/// reported, and the failed batch's statements are of unknown fate unless the executor knows
/// that none of its attempts could have run.
pub(crate) async fn run_bulk(
    client: &Client,
    ns: &Namespace,
    plan: BulkPlan,
    fields: WriteCommandFields,
    session: Option<&mut ClientSession>,
    settings: &OperationSettings,
) -> Result<BulkWriteResult> {
    // One OpenTelemetry operation span for every batch (and so every command) of the write.
    let trace = crate::executor::trace_operation(
        client.executor(),
        bulk_operation_name(&plan),
        session.as_deref(),
    );
    let settings = OperationSettings {
        trace: Some(trace.clone()),
        ..settings.clone()
    };
    let result = run_batches(client, ns, plan, fields, session, &settings).await;
    trace.finish(result.as_ref().err());
    result
}

/// The operation a write plan is: its command when every run has the same (`insert` for
/// insertMany), else `bulkWrite`.
fn bulk_operation_name(plan: &BulkPlan) -> &'static str {
    let mut names = plan.runs.iter().map(|run| run.kind.command_name());
    match names.next() {
        Some(first) if names.all(|name| name == first) => first,
        _ => "bulkWrite",
    }
}

/// [`run_bulk`]'s batches, each executed on its own.
async fn run_batches(
    client: &Client,
    ns: &Namespace,
    plan: BulkPlan,
    fields: WriteCommandFields,
    mut session: Option<&mut ClientSession>,
    settings: &OperationSettings,
) -> Result<BulkWriteResult> {
    let fields = Arc::new(fields);
    // timeoutMS covers the whole bulk write, not each of its commands (CSOT "Batching").
    let timeout = settings.timeout_in(session.as_deref());
    // One operation id for every batch, so that monitoring links them.
    let settings = &OperationSettings {
        deadline: Some(
            settings
                .deadline
                .unwrap_or_else(|| runtime::start_deadline(timeout)),
        ),
        operation_id: Some(crate::executor::new_operation_id()),
        ..settings.clone()
    };
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

impl<T: Send + Sync> Collection<T> {
    /// What this collection's operations inherit.
    pub(super) fn inherited(&self) -> Inherited {
        Inherited::new(self.client(), self.handle_options())
    }

    /// timeoutMS and retry policy for an operation of this collection with `overrides`.
    pub(crate) fn operation_settings(&self, overrides: &OperationOverrides) -> OperationSettings {
        OperationSettings {
            timeout: self.timeout(),
            operation_timeout: None,
            retry_policy: self.retry_policy(),
            deadline: None,
            omit_max_time: false,
            operation_id: None,
            trace: None,
        }
        .overridden_by(overrides)
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
        overrides: &OperationOverrides,
    ) -> Result<BulkWriteResult> {
        let settings = self.operation_settings(overrides);
        run_bulk(self.client(), self.ns(), plan, fields, session, &settings).await
    }

    /// The fields every write command of this collection carries, with the operation's write
    /// concern, else the collection's.
    pub(super) fn write_fields(
        &self,
        ordered: bool,
        bypass_document_validation: Option<bool>,
        write_concern: Option<WriteConcern>,
        comment: Option<Bson>,
        let_vars: Option<Document>,
    ) -> WriteCommandFields {
        WriteCommandFields {
            ordered,
            bypass_document_validation,
            own_write_concern: write_concern.as_ref().is_some_and(|wc| !wc.is_empty()),
            write_concern: self.resolve_write_concern(write_concern),
            comment,
            let_vars,
        }
    }
}

impl Database {
    /// What operations on this database inherit.
    pub(super) fn inherited(&self) -> Inherited {
        Inherited::new(
            self.client(),
            &self.options().overridden_by(&CollectionOptions::default()),
        )
    }
}
