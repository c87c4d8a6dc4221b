//! Running a client-level bulk write: one `bulkWrite` command (and one `txnNumber`) per batch,
//! each batch's results cursor read to its end with `getMore` on the batch's session.

use std::sync::Arc;

use steadfast_core::ServerAddress;
use steadfast_core::options::{Acknowledgment, WriteConcern};

use super::accumulate::{Accumulator, OpenBatch};
use super::batch::{BulkFields, ClientBulkBatch};
use super::models::{EncodedOp, WriteModel};
use super::results::ResultShape;
use crate::bulk::plan::at_position;
use crate::client::Client;
use crate::cursor::CursorReply;
use crate::error::{Error, Result};
use crate::operation::get_more::{GetMore, KillCursors};
use crate::operation::settings::{OperationOverrides, OperationSettings};
use crate::options::BulkWriteOptions;
use crate::pool::PinnedConnection;
use crate::runtime;
use crate::session::ClientSession;

/// Everything one `Client::bulk_write` call runs with.
pub(crate) struct BulkCall<'a> {
    pub(crate) client: &'a Client,
    pub(crate) models: Vec<WriteModel>,
    pub(crate) options: BulkWriteOptions,
    pub(crate) session: Option<&'a mut ClientSession>,
    pub(crate) overrides: OperationOverrides,
}

/// Runs the bulk write and returns its result in shape `R`.
///
/// # Errors
/// `InvalidArgument` (before anything is sent) for an empty list, an invalid model, an
/// unacknowledged write concern with ordered writes or verbose results, or a model over the
/// server's limits; a top-level error (command, network, timeout) as the executor reports it,
/// wrapped in [`ErrorKind::BulkWrite`](crate::ErrorKind::BulkWrite) when results were already
/// observed; `BulkWrite` with the write errors and write concern errors. Every error carries
/// the [`PartialWrite`](crate::error::PartialWrite).
pub(crate) async fn run<R: ResultShape>(call: BulkCall<'_>) -> Result<R> {
    // One OpenTelemetry operation span for every batch and getMore of the bulk write.
    let trace = crate::executor::trace_operation(
        call.client.executor(),
        "bulkWrite",
        call.session.as_deref(),
    );
    let result = run_batches(call, &trace).await;
    trace.finish(result.as_ref().err());
    result
}

/// [`run`]'s batches, each executed on its own, joining `trace`.
async fn run_batches<R: ResultShape>(
    call: BulkCall<'_>,
    trace: &crate::otel::OperationTrace,
) -> Result<R> {
    let BulkCall {
        client,
        models,
        options,
        mut session,
        overrides,
    } = call;
    let in_transaction = session
        .as_deref()
        .is_some_and(ClientSession::in_transaction);
    if in_transaction && options.write_concern.is_some() {
        // The transaction's write concern applies at commit; one per operation cannot.
        return Err(Error::invalid_argument(
            "Cannot set write concern after starting a transaction",
        ));
    }
    let fields = Arc::new(fields_of::<R>(client, options)?);
    let ops = encode_all(models)?;
    let settings = OperationSettings {
        trace: Some(trace.clone()),
        ..settings_of(client, &overrides, session.as_deref())
    };
    let mut acc = Accumulator::new(fields.ordered, ops.len());
    if !fields.acknowledged {
        acc = acc.unacknowledged();
    }
    let mut start = 0;
    while start < ops.len() {
        let batch = ClientBulkBatch::new(Arc::clone(&ops), start, Arc::clone(&fields), start == 0);
        let extent = batch.extent();
        let context = settings.context(session.as_deref_mut());
        let (reply, pin) = match client
            .executor()
            .execute_cursor(Box::new(batch), context)
            .await
        {
            Ok(done) => done,
            Err(error) => return Err(acc.fail::<R>(start, extent.get().copied(), error)),
        };
        let Some(count) = extent.get().copied().filter(|n| *n > 0) else {
            let error = Error::protocol("a bulkWrite batch reported sending no op");
            return Err(acc.fail::<R>(start, None, error));
        };
        let mut open = acc.open(start, count, &reply);
        let mut own_session = pin.session;
        let reader = CursorRead {
            client,
            settings: &settings,
            address: pin.address,
        };
        let pinned = pin.connection;
        let session_for_more = match own_session.as_mut() {
            Some(own) => Some(own),
            None => session.as_deref_mut(),
        };
        if let Err(error) = reader
            .drain(
                reply.cursor,
                &mut acc,
                &mut open,
                &ops,
                session_for_more,
                pinned,
            )
            .await
        {
            acc.close_incomplete(open, &ops);
            return Err(acc.fail::<R>(ops.len(), Some(0), error));
        }
        acc.close(open, &ops);
        start += count;
        if acc.must_stop() {
            break;
        }
    }
    acc.finish()
}

/// Reads a results cursor to its end.
struct CursorRead<'a> {
    client: &'a Client,
    settings: &'a OperationSettings,
    address: ServerAddress,
}

impl CursorRead<'_> {
    /// Absorbs every entry of `cursor`, fetching with `getMore` in `session` (on the cursor's
    /// `pinned` connection in load-balanced mode, checked in when the cursor is done); on a
    /// failed fetch, kills the cursor and returns the error.
    async fn drain(
        &self,
        mut cursor: CursorReply,
        acc: &mut Accumulator,
        open: &mut OpenBatch,
        ops: &[EncodedOp],
        mut session: Option<&mut ClientSession>,
        mut pinned: Option<PinnedConnection>,
    ) -> Result<()> {
        acc.absorb(open, ops, cursor.first_batch.drain(..))?;
        while cursor.id != 0 {
            let more = GetMore::new(
                cursor.ns.clone(),
                cursor.id,
                self.address.clone(),
                None,
                None,
                None,
            );
            let mut context = self.settings.context(session.as_deref_mut());
            context.pinned = pinned.as_mut();
            let fetched = self.client.executor().execute(more, context).await;
            let next = match fetched.and_then(|mut next| {
                acc.absorb(open, ops, next.first_batch.drain(..))?;
                Ok(next)
            }) {
                Ok(next) => next,
                Err(error) => {
                    let kill = KillCursors::new(cursor.ns, vec![cursor.id], self.address.clone());
                    // The fetch error is what the caller must see. The kill's own failure is
                    // not ignored (bulk write specification, "Top-Level Errors") but logged:
                    // the server keeps the cursor until its idle timeout, which the caller
                    // cannot change. Not on a pinned connection a network error broke: the
                    // server closes the cursor with it.
                    if pinned.as_ref().is_none_or(PinnedConnection::is_usable) {
                        let mut context = self.settings.context(session.as_deref_mut());
                        context.pinned = pinned.as_mut();
                        let id = cursor.id;
                        if let Err(kill_error) = self.client.executor().execute(kill, context).await
                        {
                            tracing::warn!(
                                cursor_id = id,
                                error = %kill_error,
                                "killCursors of a bulkWrite results cursor failed; the server closes it when it times out"
                            );
                        }
                    }
                    return Err(error);
                }
            };
            cursor.id = next.id;
        }
        Ok(())
    }
}

/// The command fields, after the specification's checks of the write concern.
///
/// # Errors
/// `InvalidArgument` for an unacknowledged write concern with ordered writes or verbose results.
fn fields_of<R: ResultShape>(client: &Client, options: BulkWriteOptions) -> Result<BulkFields> {
    let ordered = options.ordered.unwrap_or(true);
    let write_concern: Option<WriteConcern> = options
        .write_concern
        .or_else(|| client.write_concern().cloned());
    let unacknowledged = write_concern
        .as_ref()
        .and_then(|wc| wc.w.as_ref())
        .is_some_and(|w| *w == Acknowledgment::Nodes(0));
    if unacknowledged && ordered {
        return Err(Error::invalid_argument(
            "Cannot request unacknowledged write concern and ordered writes",
        ));
    }
    if unacknowledged && !R::errors_only() {
        return Err(Error::invalid_argument(
            "Cannot request unacknowledged write concern and verbose results",
        ));
    }
    Ok(BulkFields {
        ordered,
        errors_only: R::errors_only(),
        bypass_document_validation: options.bypass_document_validation,
        comment: options.comment,
        let_vars: options.let_vars,
        write_concern,
        acknowledged: !unacknowledged,
    })
}

/// Every model encoded, before anything is sent.
///
/// # Errors
/// `InvalidArgument` for an empty list or an invalid model (named by its position).
fn encode_all(models: Vec<WriteModel>) -> Result<Arc<[EncodedOp]>> {
    if models.is_empty() {
        return Err(Error::invalid_argument(
            "a bulk write needs at least one write model",
        ));
    }
    models
        .into_iter()
        .enumerate()
        .map(|(position, model)| model.encode().map_err(|e| at_position(e, position)))
        .collect()
}

/// timeoutMS and retry policy: the client's under the call's own; the timeout covers the whole
/// bulk write, not each of its commands (CSOT "Batching").
fn settings_of(
    client: &Client,
    overrides: &OperationOverrides,
    session: Option<&ClientSession>,
) -> OperationSettings {
    let settings = OperationSettings {
        timeout: client.options().timeout,
        ..OperationSettings::default()
    }
    .overridden_by(overrides);
    let timeout = settings.timeout_in(session);
    OperationSettings {
        deadline: Some(runtime::start_deadline(timeout)),
        // One operation id for every batch (and its getMores), so that monitoring links them.
        operation_id: Some(crate::executor::new_operation_id()),
        ..settings
    }
}
