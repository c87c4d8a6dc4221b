//! The convenient transaction API (transactions-convenient-api): run a callback in a
//! transaction and commit it, retrying the whole transaction on `TransientTransactionError`
//! and the commit on `UnknownTransactionCommitResult`, with a jittered exponential backoff
//! between attempts, for up to 120 seconds (or the session's timeoutMS).
//!
//! ```no_run
//! # async fn demo(client: steadfast::Client) -> steadfast::error::Result<()> {
//! use futures_util::FutureExt as _;
//! use steadfast::bson::{Document, doc};
//! use steadfast::Collection;
//!
//! let accounts: Collection<Document> = client.database("bank").collection("accounts");
//! let mut session = client.start_session().await?;
//! session
//!     .start_transaction()
//!     .and_run(accounts, |session, accounts| {
//!         async move {
//!             accounts
//!                 .update_one(doc! { "_id": 1 }, doc! { "$inc": { "balance": -10 } })
//!                 .session(&mut *session)
//!                 .await?;
//!             accounts
//!                 .update_one(doc! { "_id": 2 }, doc! { "$inc": { "balance": 10 } })
//!                 .session(&mut *session)
//!                 .await?;
//!             Ok(())
//!         }
//!         .boxed()
//!     })
//!     .await?;
//! # Ok(())
//! # }
//! ```
//!
//! The callback may run more than once (once per attempt): anything it does outside the
//! session — sending a message, counting — happens again on every retry, so it should do only
//! the transaction's operations, or be idempotent.

use std::time::Duration;

use futures_util::future::BoxFuture;
use rand::Rng as _;
use steadfast_core::codes::MAX_TIME_MS_EXPIRED;
use steadfast_core::session::transaction::{
    AfterCommitFailure, CONVENIENT_RETRY_LIMIT, ConvenientRetries, NextAttempt,
};

use super::{ClientSession, StartTransaction};
use crate::error::{Error, Result};
use crate::runtime;

/// One step of the convenient loop that the callback's shape does not change.
enum Step<R> {
    Done(Result<R>),
    Again(Error),
}

impl StartTransaction<&mut ClientSession> {
    /// Runs `callback` in a transaction and commits it, retrying as the
    /// [module documentation](super::convenient) describes; `context` is lent to every call
    /// of the callback. Returns the callback's value from the attempt that committed. If the
    /// callback commits or aborts the transaction itself, its value is returned as is.
    ///
    /// # Errors
    /// The callback's error when it is not transient (the transaction is aborted first); a
    /// commit's error that is neither transient nor of unknown outcome; the last error once
    /// the time limit is reached; `Transaction` as for [`ClientSession::start_transaction`].
    ///
    /// # Cancel safety
    /// Dropping the future mid-commit leaves the commit's outcome unknown.
    pub async fn and_run<R, C, F>(self, mut context: C, mut callback: F) -> Result<R>
    where
        F: for<'b> FnMut(&'b mut ClientSession, &'b mut C) -> BoxFuture<'b, Result<R>>,
    {
        let StartTransaction { session, options } = self;
        let started = runtime::now();
        let mut retries = ConvenientRetries::new(session.convenient_limit());
        let mut last_error = None;
        loop {
            session
                .next_convenient_attempt(&mut retries, started, &mut last_error, &options)
                .await?;
            let outcome = callback(session, &mut context).await;
            match session.finish_attempt(outcome, &retries, started).await {
                Step::Done(result) => return result,
                Step::Again(error) => last_error = Some(error),
            }
        }
    }

    /// As [`and_run`](Self::and_run), with an async closure that captures what it needs:
    /// `session.start_transaction().and_run2(async |session| { .. }).await`.
    ///
    /// # Errors
    /// As [`and_run`](Self::and_run).
    ///
    /// # Cancel safety
    /// As [`and_run`](Self::and_run).
    pub async fn and_run2<R, F>(self, mut callback: F) -> Result<R>
    where
        F: for<'b> AsyncFnMut(&'b mut ClientSession) -> Result<R>,
    {
        let StartTransaction { session, options } = self;
        let started = runtime::now();
        let mut retries = ConvenientRetries::new(session.convenient_limit());
        let mut last_error = None;
        loop {
            session
                .next_convenient_attempt(&mut retries, started, &mut last_error, &options)
                .await?;
            let outcome = callback(session).await;
            match session.finish_attempt(outcome, &retries, started).await {
                Step::Done(result) => return result,
                Step::Again(error) => last_error = Some(error),
            }
        }
    }
}

impl ClientSession {
    /// 120 s, or the timeoutMS that applies to the session's operations.
    fn convenient_limit(&self) -> Duration {
        self.default_timeout()
            .or(self.executor.options().timeout)
            .filter(|limit| !limit.is_zero())
            .unwrap_or(CONVENIENT_RETRY_LIMIT)
    }

    /// Backs off (after the first attempt) and starts the transaction, or gives up with the
    /// last error.
    async fn next_convenient_attempt(
        &mut self,
        retries: &mut ConvenientRetries,
        started: std::time::Instant,
        last_error: &mut Option<Error>,
        options: &Option<crate::options::TransactionOptions>,
    ) -> Result<()> {
        let jitter = runtime::rng().random_range(0.0..1.0);
        let now = runtime::now();
        match retries.next_attempt(now.saturating_duration_since(started), jitter) {
            NextAttempt::After(backoff) if backoff.is_zero() => {}
            NextAttempt::After(backoff) => runtime::sleep_until(now + backoff).await,
            NextAttempt::GiveUp => {
                return Err(last_error.take().unwrap_or_else(|| {
                    Error::transaction("the transaction's time limit passed before it ran")
                }));
            }
        }
        self.start_transaction_now(options.clone())
    }

    /// After the callback: abort and maybe run again on its error, else commit (again while
    /// the outcome is unknown).
    async fn finish_attempt<R>(
        &mut self,
        outcome: Result<R>,
        retries: &ConvenientRetries,
        started: std::time::Instant,
    ) -> Step<R> {
        let elapsed = || runtime::now().saturating_duration_since(started);
        let value = match outcome {
            Ok(value) => value,
            Err(error) => {
                if self.in_transaction() {
                    // Errors ignored, as abort_transaction always does.
                    let _ = self.abort_now().await;
                }
                if retries.run_again_after_callback(error.labels(), elapsed()) {
                    return Step::Again(error);
                }
                return Step::Done(Err(error));
            }
        };
        if !self.in_transaction() {
            // The callback committed or aborted the transaction itself.
            return Step::Done(Ok(value));
        }
        loop {
            let error = match self.commit_now().await {
                Ok(()) => return Step::Done(Ok(value)),
                Err(error) => error,
            };
            let max_time_expired = error.code() == Some(MAX_TIME_MS_EXPIRED);
            match retries.after_commit_failure(error.labels(), max_time_expired, elapsed()) {
                AfterCommitFailure::CommitAgain => {}
                AfterCommitFailure::RunAgain => return Step::Again(error),
                AfterCommitFailure::Fail => return Step::Done(Err(error)),
            }
        }
    }
}
