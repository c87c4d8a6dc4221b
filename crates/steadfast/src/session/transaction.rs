//! Transactions on a [`ClientSession`]: `start_transaction`, `commit_transaction` and
//! `abort_transaction`, as actions in the official driver's shape.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::time::Duration;

use steadfast_core::Deadline;
use steadfast_core::options::Acknowledgment;
use steadfast_core::session::transaction::{AbortAction, CommitAction, TransactionMisuse};

use super::{ClientSession, EndTransaction};
use crate::error::{Error, Result};
use crate::executor::ExecutionContext;
use crate::options::TransactionOptions;
use crate::runtime;

/// The future of a transaction action.
type ActionFuture<'a> = Pin<Box<dyn Future<Output = Result<()>> + Send + 'a>>;

impl ClientSession {
    /// Starts a transaction: the session's next operations run in it until
    /// [`commit_transaction`](Self::commit_transaction) or
    /// [`abort_transaction`](Self::abort_transaction). Await the action, after
    /// [`with_options`](StartTransaction::with_options) if needed; or run a whole transaction
    /// with retries by [`and_run`](StartTransaction::and_run).
    ///
    /// Options not set are taken from the session's
    /// [`default_transaction_options`](super::SessionOptions::default_transaction_options),
    /// then from the client. Operations in the transaction use its read concern (on the first
    /// command only) and read preference; the read and write concerns of their collection,
    /// database and client are ignored, and an operation given its own read concern or write
    /// concern fails with `InvalidArgument` ("Cannot set read concern after starting a
    /// transaction.") without touching the transaction. A server error inside the transaction
    /// may abort it on the server: committing it then fails with `NoSuchTransaction`.
    ///
    /// ```no_run
    /// # async fn demo(client: steadfast::Client) -> steadfast::error::Result<()> {
    /// use steadfast::bson::doc;
    /// use steadfast::options::{Acknowledgment, TransactionOptions, WriteConcern};
    ///
    /// let accounts = client.database("bank").collection::<steadfast::bson::Document>("accounts");
    /// let mut session = client.start_session().await?;
    /// let majority = WriteConcern::builder().w(Acknowledgment::Majority).build();
    /// session
    ///     .start_transaction()
    ///     .with_options(TransactionOptions::builder().write_concern(majority).build())
    ///     .await?;
    /// accounts
    ///     .update_one(doc! { "_id": 1 }, doc! { "$inc": { "balance": -10 } })
    ///     .session(&mut session)
    ///     .await?;
    /// accounts
    ///     .update_one(doc! { "_id": 2 }, doc! { "$inc": { "balance": 10 } })
    ///     .session(&mut session)
    ///     .await?;
    /// session.commit_transaction().await?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `Transaction` while a transaction is active, in a snapshot session, or with an
    /// unacknowledged write concern.
    pub fn start_transaction(&mut self) -> StartTransaction<&mut ClientSession> {
        StartTransaction::new(self)
    }

    /// Commits the transaction. A transaction that sent nothing commits without a command.
    /// Calling it again re-sends the commit (with a majority write concern), which is how to
    /// retry a commit that failed with `UnknownTransactionCommitResult`.
    ///
    /// # Errors
    /// `Transaction` with no transaction started, or after an abort; the commit's own error,
    /// labelled `UnknownTransactionCommitResult` when the transaction may have committed
    /// (network errors, retryable errors, MaxTimeMSExpired, write concern errors), or
    /// `TransientTransactionError` when it certainly did not and may be run again.
    ///
    /// # Cancel safety
    /// Dropping the future leaves the commit's outcome unknown; the session counts as committed.
    pub fn commit_transaction(&mut self) -> CommitTransaction<'_> {
        CommitTransaction {
            session: self,
            timeout: None,
        }
    }

    /// Aborts the transaction. Errors of the abortTransaction command are ignored (the server
    /// aborts a forgotten transaction on its own).
    ///
    /// # Errors
    /// `Transaction` with no transaction started, after a commit, or after an abort.
    ///
    /// # Cancel safety
    /// Cancel safe: the session counts as aborted as soon as the future is first polled.
    pub fn abort_transaction(&mut self) -> AbortTransaction<'_> {
        AbortTransaction {
            session: self,
            timeout: None,
        }
    }

    pub(super) fn start_transaction_now(
        &mut self,
        options: Option<TransactionOptions>,
    ) -> Result<()> {
        if self.is_snapshot() {
            return Err(Error::transaction(
                "Transactions are not supported in snapshot sessions",
            ));
        }
        if self.transaction.state.is_active() {
            return Err(misuse(TransactionMisuse::AlreadyInProgress));
        }
        let options = self.resolve_transaction_options(options);
        let unacknowledged = options
            .write_concern
            .as_ref()
            .and_then(|wc| wc.w.as_ref())
            .is_some_and(|w| *w == Acknowledgment::Nodes(0));
        if unacknowledged {
            return Err(Error::transaction(
                "transactions do not support unacknowledged write concerns",
            ));
        }
        self.executor.ensure_open()?;
        let unpin = self.transaction.state.start().map_err(misuse)?;
        if unpin {
            self.unpin();
        }
        self.transaction.recovery_token = None;
        self.transaction.options = options;
        // The transaction's number: every command of it carries the same one.
        self.next_txn_number();
        self.transaction.trace.end();
        self.transaction.trace = crate::otel::TransactionTrace::start(self.executor.tracer());
        Ok(())
    }

    /// `options` over the session's defaults over the client's.
    fn resolve_transaction_options(
        &self,
        options: Option<TransactionOptions>,
    ) -> TransactionOptions {
        let client = self.executor.options();
        let from_client = TransactionOptions {
            read_concern: client.read_concern.clone(),
            write_concern: (!client.write_concern.is_empty()).then(|| client.write_concern.clone()),
            selection_criteria: Some(client.read_preference.clone().into()),
            max_commit_time: None,
        };
        let defaults = match &self.options.default_transaction_options {
            Some(defaults) => defaults.clone().or(&from_client),
            None => from_client,
        };
        options.unwrap_or_default().or(&defaults)
    }

    /// The deadline of a commitTransaction or abortTransaction called now: the convenient
    /// API's while it runs under timeoutMS, else `timeout` from now, else the session's
    /// defaultTimeoutMS, else the client's timeoutMS.
    pub(super) fn end_transaction_deadline(&self, timeout: Option<Duration>) -> Deadline {
        self.convenient_deadline().unwrap_or_else(|| {
            let timeout = timeout
                .or_else(|| self.default_timeout())
                .or(self.executor.options().timeout);
            runtime::start_deadline(timeout)
        })
    }

    pub(super) async fn commit_now(&mut self, deadline: Deadline) -> Result<()> {
        let rerun = match self.transaction.state.commit().map_err(misuse)? {
            CommitAction::Skip => {
                self.transaction.trace.end();
                return Ok(());
            }
            CommitAction::Send { rerun } => rerun,
        };
        let options = &self.transaction.options;
        let op = EndTransaction::commit(
            options.write_concern.clone(),
            options.max_commit_time,
            self.transaction.recovery_token.clone(),
            rerun,
        );
        let result = self.end_transaction(op, deadline).await;
        self.transaction.trace.end();
        result
    }

    pub(super) async fn abort_now(&mut self, deadline: Deadline) -> Result<()> {
        let action = self.transaction.state.abort().map_err(misuse)?;
        if action == AbortAction::Send {
            let op = EndTransaction::abort(
                self.transaction.options.write_concern.clone(),
                self.transaction.recovery_token.clone(),
            );
            if let Err(error) = self.end_transaction(op, deadline).await {
                // transactions: abortTransaction's errors mean nothing to the application.
                tracing::debug!(%error, "abortTransaction failed; the server will abort the transaction on its own");
            }
        }
        // Unpinned whatever abortTransaction did.
        self.unpin();
        self.transaction.trace.end();
        Ok(())
    }

    /// Runs commitTransaction or abortTransaction until `deadline` (see
    /// [`ClientSession::end_transaction_deadline`]).
    async fn end_transaction(&mut self, op: EndTransaction, deadline: Deadline) -> Result<()> {
        let executor = std::sync::Arc::clone(&self.executor);
        let context = ExecutionContext {
            session: Some(self),
            deadline,
            ..ExecutionContext::default()
        };
        executor.execute(op, context).await
    }
}

fn misuse(misuse: TransactionMisuse) -> Error {
    Error::transaction(misuse.to_string())
}

/// Starts a transaction (see [`ClientSession::start_transaction`]); await it, or run a whole
/// transaction with [`and_run`](Self::and_run) / [`and_run2`](Self::and_run2).
#[must_use = "an action does nothing until awaited"]
pub struct StartTransaction<S> {
    pub(super) session: S,
    pub(super) options: Option<TransactionOptions>,
    pub(super) timeout: Option<Duration>,
}

impl<S> StartTransaction<S> {
    /// Starts a transaction in `session` with the session's and the client's options.
    pub(crate) fn new(session: S) -> Self {
        StartTransaction {
            session,
            options: None,
            timeout: None,
        }
    }

    /// The transaction's options (`None`: the session's and the client's).
    pub fn with_options(mut self, options: impl Into<Option<TransactionOptions>>) -> Self {
        self.options = options.into();
        self
    }

    /// Sets [`TransactionOptions::read_concern`] for this transaction.
    pub fn read_concern(mut self, value: crate::options::ReadConcern) -> Self {
        self.options_mut().read_concern = Some(value);
        self
    }

    /// Sets [`TransactionOptions::write_concern`] for this transaction.
    pub fn write_concern(mut self, value: crate::options::WriteConcern) -> Self {
        self.options_mut().write_concern = Some(value);
        self
    }

    /// Sets [`TransactionOptions::selection_criteria`] for this transaction.
    pub fn selection_criteria(
        mut self,
        value: impl Into<crate::options::SelectionCriteria>,
    ) -> Self {
        self.options_mut().selection_criteria = Some(value.into());
        self
    }

    /// Sets [`TransactionOptions::max_commit_time`] for this transaction.
    pub fn max_commit_time(mut self, value: Duration) -> Self {
        self.options_mut().max_commit_time = Some(value);
        self
    }

    fn options_mut(&mut self) -> &mut TransactionOptions {
        self.options.get_or_insert_with(TransactionOptions::default)
    }

    /// For [`and_run`](Self::and_run) and [`and_run2`](Self::and_run2): the timeoutMS of the
    /// whole transaction, retries included (a steadfast addition; the default is the
    /// session's defaultTimeoutMS, else the client's). Every operation of the callback, and
    /// the commit, share its deadline; an operation of the callback may not set its own.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

impl<'a> IntoFuture for StartTransaction<&'a mut ClientSession> {
    type Output = Result<()>;
    type IntoFuture = ActionFuture<'a>;

    fn into_future(self) -> Self::IntoFuture {
        let StartTransaction {
            session, options, ..
        } = self;
        Box::pin(async move { session.start_transaction_now(options) })
    }
}

/// Commits the session's transaction (see [`ClientSession::commit_transaction`]).
#[must_use = "an action does nothing until awaited"]
pub struct CommitTransaction<'a> {
    session: &'a mut ClientSession,
    timeout: Option<Duration>,
}

impl CommitTransaction<'_> {
    /// timeoutMS for the commit (a steadfast addition; the default is the session's
    /// defaultTimeoutMS, else the client's).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

impl<'a> IntoFuture for CommitTransaction<'a> {
    type Output = Result<()>;
    type IntoFuture = ActionFuture<'a>;

    fn into_future(self) -> Self::IntoFuture {
        let deadline = self.session.end_transaction_deadline(self.timeout);
        Box::pin(self.session.commit_now(deadline))
    }
}

/// Aborts the session's transaction (see [`ClientSession::abort_transaction`]).
#[must_use = "an action does nothing until awaited"]
pub struct AbortTransaction<'a> {
    session: &'a mut ClientSession,
    timeout: Option<Duration>,
}

impl AbortTransaction<'_> {
    /// timeoutMS for the abort (a steadfast addition; the default is the session's
    /// defaultTimeoutMS, else the client's).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

impl<'a> IntoFuture for AbortTransaction<'a> {
    type Output = Result<()>;
    type IntoFuture = ActionFuture<'a>;

    fn into_future(self) -> Self::IntoFuture {
        let deadline = self.session.end_transaction_deadline(self.timeout);
        Box::pin(self.session.abort_now(deadline))
    }
}
