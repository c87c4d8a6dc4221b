//! The convenient transaction API (transactions-convenient-api): run a callback in a
//! transaction and commit it, retrying the whole transaction on `TransientTransactionError`
//! and the commit on `UnknownTransactionCommitResult`, with a jittered exponential backoff
//! between attempts, for up to 120 seconds (or the session's timeoutMS).
//!
//! See [`StartTransaction::and_run`] for an example.

use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use rand::Rng as _;
use steadfast_core::Deadline;
use steadfast_core::codes::MAX_TIME_MS_EXPIRED;
use steadfast_core::session::transaction::{
    AfterCommitFailure, CONVENIENT_RETRY_LIMIT, ConvenientRetries, NextAttempt,
};

use super::{ClientSession, StartTransaction};
use crate::error::{Error, Result, TRANSIENT_TRANSACTION_ERROR};
use crate::options::TransactionOptions;
use crate::runtime;

/// One step of the convenient loop that the callback's shape does not change.
enum Step<R> {
    Done(Result<R>),
    Again(Error),
}

/// When the convenient API's retries began and what bounds them.
#[derive(Clone, Copy)]
struct Limits {
    started: Instant,
    limit: Duration,
    /// The limit is a timeoutMS (every operation shares its deadline, and running out of
    /// it is reported as a timeout), not the fixed 120 s.
    csot: bool,
}

impl Limits {
    fn elapsed(&self) -> Duration {
        runtime::now().saturating_duration_since(self.started)
    }

    /// The error to report when the time ran out after `last` (transactions-convenient-api,
    /// "Timeout Error propagation"): `last` itself when it is a timeout already, else a
    /// timeout whose source is `last` and which carries every label of `last`, so that
    /// `has_label` still tells the application whether the commit's outcome is unknown. The
    /// specification's `makeTimeoutError` does this under timeoutMS and under the fixed 120 s
    /// limit alike; only the message differs.
    fn out_of_time(&self, last: Error) -> Error {
        if last.is_timeout() {
            return last;
        }
        let message = if self.csot {
            format!(
                "withTransaction: timeoutMS ({} ms) expired before the transaction could commit",
                self.limit.as_millis()
            )
        } else {
            format!(
                "withTransaction: its retry time limit ({} s) passed before the transaction could commit",
                self.limit.as_secs()
            )
        };
        let labels = last.label_set().clone();
        Error::timeout(message)
            .with_label_set(&labels)
            .with_source(last)
    }
}

impl StartTransaction<&mut ClientSession> {
    /// Runs `callback` in a transaction and commits it, retrying the whole transaction on
    /// `TransientTransactionError` and the commit on `UnknownTransactionCommitResult` (not
    /// after MaxTimeMSExpired), with a jittered exponential backoff between attempts
    /// (5 ms × 1.5^attempt, at most 500 ms), for up to 120 seconds or the transaction's
    /// timeoutMS; `context` is lent to every call of the callback. Returns the callback's value
    /// from the attempt that committed. If the callback commits or aborts the transaction
    /// itself, its value is returned as is.
    ///
    /// ```no_run
    /// # async fn demo(client: steadfast::Client) -> steadfast::error::Result<()> {
    /// use futures_util::FutureExt as _;
    /// use steadfast::bson::{Document, doc};
    /// use steadfast::Collection;
    ///
    /// let accounts: Collection<Document> = client.database("bank").collection("accounts");
    /// let mut session = client.start_session().await?;
    /// session
    ///     .start_transaction()
    ///     .and_run(accounts, |session, accounts| {
    ///         async move {
    ///             accounts
    ///                 .update_one(doc! { "_id": 1 }, doc! { "$inc": { "balance": -10 } })
    ///                 .session(&mut *session)
    ///                 .await?;
    ///             accounts
    ///                 .update_one(doc! { "_id": 2 }, doc! { "$inc": { "balance": 10 } })
    ///                 .session(&mut *session)
    ///                 .await?;
    ///             Ok(())
    ///         }
    ///         .boxed()
    ///     })
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// The callback may run more than once (once per attempt): anything it does outside the
    /// session (sending a message, counting) happens again on every retry, so it should do
    /// only the transaction's operations, or be idempotent.
    ///
    /// # Errors
    /// The callback's error when it is not transient (the transaction is aborted first); a
    /// commit's error that is neither transient nor of unknown outcome; once the time limit
    /// is reached, a timeout whose source is the last error and which carries all its labels
    /// (the last error itself when it is a timeout); `Transaction` as for
    /// [`ClientSession::start_transaction`].
    ///
    /// # Cancel safety
    /// Dropping the future mid-commit leaves the commit's outcome unknown.
    pub async fn and_run<R, C, F>(self, mut context: C, mut callback: F) -> Result<R>
    where
        F: for<'b> FnMut(&'b mut ClientSession, &'b mut C) -> BoxFuture<'b, Result<R>>,
    {
        // The loop is spelled out here and in `and_run2` rather than shared by delegating to
        // it: a future built from an async closure cannot yet be proven `Send` for every
        // lifetime (rustc's higher-ranked `Send` limitation), and callers spawn this one.
        let StartTransaction {
            session,
            options,
            timeout,
        } = self;
        let limits = session.begin_convenient(timeout);
        let mut retries = ConvenientRetries::new(limits.limit);
        let mut last_error = None;
        let result = loop {
            let started = session
                .next_convenient_attempt(&mut retries, &limits, &mut last_error, &options)
                .await;
            if let Err(error) = started {
                break Err(error);
            }
            let outcome = callback(session, &mut context).await;
            match session.finish_attempt(outcome, &retries, &limits).await {
                Step::Done(result) => break result,
                Step::Again(error) => last_error = Some(error),
            }
        };
        session.set_convenient_deadline(None);
        result
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
        let StartTransaction {
            session,
            options,
            timeout,
        } = self;
        let limits = session.begin_convenient(timeout);
        let mut retries = ConvenientRetries::new(limits.limit);
        let mut last_error = None;
        let result = loop {
            let started = session
                .next_convenient_attempt(&mut retries, &limits, &mut last_error, &options)
                .await;
            if let Err(error) = started {
                break Err(error);
            }
            let outcome = callback(session).await;
            match session.finish_attempt(outcome, &retries, &limits).await {
                Step::Done(result) => break result,
                Step::Again(error) => last_error = Some(error),
            }
        };
        session.set_convenient_deadline(None);
        result
    }
}

#[cfg(feature = "sync")]
impl StartTransaction<&mut crate::sync::ClientSession> {
    /// Starts the transaction (the blocking API's
    /// [`ClientSession::start_transaction`]).
    ///
    /// # Errors
    /// `Transaction` as for [`ClientSession::start_transaction`]; `InvalidArgument` inside an
    /// async runtime.
    pub fn run(self) -> Result<()> {
        let StartTransaction {
            session, options, ..
        } = self;
        crate::sync::runtime::block_on(async { session.start_transaction_now(options) })
    }

    /// The blocking [`and_run`](StartTransaction::and_run): runs the synchronous `callback`
    /// in a transaction and commits it, with the same retries, backoff and time limit (the
    /// same steps run it; only the callback is not a future). `context` is lent to every
    /// call of the callback; the callback may run more than once.
    ///
    /// ```no_run
    /// # fn demo(client: steadfast::sync::Client) -> steadfast::error::Result<()> {
    /// use steadfast::bson::{Document, doc};
    ///
    /// let accounts = client.database("bank").collection::<Document>("accounts");
    /// let mut session = client.start_session().run()?;
    /// session
    ///     .start_transaction()
    ///     .and_run(accounts, |session, accounts| {
    ///         accounts
    ///             .update_one(doc! { "_id": 1 }, doc! { "$inc": { "balance": -10 } })
    ///             .session(&mut *session)
    ///             .run()?;
    ///         accounts
    ///             .update_one(doc! { "_id": 2 }, doc! { "$inc": { "balance": 10 } })
    ///             .session(&mut *session)
    ///             .run()?;
    ///         Ok(())
    ///     })?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As the async [`and_run`](StartTransaction::and_run); `InvalidArgument` inside an async
    /// runtime.
    pub fn and_run<R, C, F>(self, mut context: C, mut callback: F) -> Result<R>
    where
        F: for<'b> FnMut(&'b mut crate::sync::ClientSession, &'b mut C) -> Result<R>,
    {
        use crate::sync::runtime::block_on;
        let StartTransaction {
            session,
            options,
            timeout,
        } = self;
        let limits = session.begin_convenient(timeout);
        let mut retries = ConvenientRetries::new(limits.limit);
        let mut last_error = None;
        let result = loop {
            let started = block_on(session.next_convenient_attempt(
                &mut retries,
                &limits,
                &mut last_error,
                &options,
            ));
            if let Err(error) = started {
                break Err(error);
            }
            let outcome = callback(session, &mut context);
            match block_on(async { Ok(session.finish_attempt(outcome, &retries, &limits).await) }) {
                Ok(Step::Done(result)) => break result,
                Ok(Step::Again(error)) => last_error = Some(error),
                Err(refused) => break Err(refused),
            }
        };
        session.set_convenient_deadline(None);
        result
    }
}

impl ClientSession {
    /// The convenient API's limits: `timeout`, else the session's or the client's timeoutMS
    /// (then every operation shares its deadline), else 120 s.
    fn begin_convenient(&mut self, timeout: Option<Duration>) -> Limits {
        let started = runtime::now();
        let csot_limit = timeout
            .or_else(|| self.default_timeout())
            .or(self.executor.options().timeout)
            .filter(|limit| !limit.is_zero());
        self.set_convenient_deadline(
            csot_limit
                .and_then(|limit| started.checked_add(limit))
                .map(Deadline::At),
        );
        Limits {
            started,
            limit: csot_limit.unwrap_or(CONVENIENT_RETRY_LIMIT),
            csot: csot_limit.is_some(),
        }
    }

    /// Backs off (after the first attempt) and starts the transaction, or gives up with the
    /// last error.
    async fn next_convenient_attempt(
        &mut self,
        retries: &mut ConvenientRetries,
        limits: &Limits,
        last_error: &mut Option<Error>,
        options: &Option<TransactionOptions>,
    ) -> Result<()> {
        let jitter = runtime::rng().random_range(0.0..1.0);
        let now = runtime::now();
        match retries.next_attempt(limits.elapsed(), jitter) {
            NextAttempt::After(backoff) if backoff.is_zero() => {}
            NextAttempt::After(backoff) => runtime::sleep_until(now + backoff).await,
            NextAttempt::GiveUp => {
                let last = last_error.take().unwrap_or_else(|| {
                    Error::transaction("the transaction's time limit passed before it ran")
                });
                return Err(limits.out_of_time(last));
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
        limits: &Limits,
    ) -> Step<R> {
        let value = match outcome {
            Ok(value) => value,
            Err(error) => {
                if self.in_transaction() {
                    // The abort gets a fresh timeoutMS of its own: the transaction's deadline
                    // may be what ended the callback (CSOT, "Convenient Transactions API").
                    // Errors ignored, as abort_transaction always does.
                    let deadline = self.convenient_deadline();
                    self.set_convenient_deadline(None);
                    let abort = self.end_transaction_deadline(limits.csot.then_some(limits.limit));
                    let _ = self.abort_now(abort).await;
                    self.set_convenient_deadline(deadline);
                }
                let transient = error.contains_label(TRANSIENT_TRANSACTION_ERROR);
                if retries.run_again_after_callback(error.labels(), limits.elapsed()) {
                    return Step::Again(error);
                }
                let error = if transient {
                    limits.out_of_time(error)
                } else {
                    error
                };
                return Step::Done(Err(error));
            }
        };
        if !self.in_transaction() {
            // The callback committed or aborted the transaction itself.
            return Step::Done(Ok(value));
        }
        loop {
            let deadline = self.end_transaction_deadline(None);
            let error = match self.commit_now(deadline).await {
                Ok(()) => return Step::Done(Ok(value)),
                Err(error) => error,
            };
            let max_time_expired = error.code() == Some(MAX_TIME_MS_EXPIRED);
            match retries.after_commit_failure(error.labels(), max_time_expired, limits.elapsed()) {
                AfterCommitFailure::CommitAgain => {}
                AfterCommitFailure::RunAgain => return Step::Again(error),
                AfterCommitFailure::TimedOut => return Step::Done(Err(limits.out_of_time(error))),
                AfterCommitFailure::Fail => return Step::Done(Err(error)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::Limits;
    use crate::error::{Error, RETRYABLE_WRITE_ERROR, UNKNOWN_TRANSACTION_COMMIT_RESULT};
    use crate::runtime;

    fn limits(csot: bool) -> Limits {
        Limits {
            started: runtime::now(),
            limit: Duration::from_secs(120),
            csot,
        }
    }

    #[test]
    fn running_out_of_time_reports_a_timeout_carrying_the_last_error_and_its_labels() {
        for csot in [false, true] {
            let last = Error::network("connection reset")
                .with_labels([RETRYABLE_WRITE_ERROR, UNKNOWN_TRANSACTION_COMMIT_RESULT]);
            let error = limits(csot).out_of_time(last);
            assert!(error.is_timeout(), "csot {csot}: {error}");
            assert!(
                error.has_label(UNKNOWN_TRANSACTION_COMMIT_RESULT),
                "csot {csot}"
            );
            assert!(error.has_label(RETRYABLE_WRITE_ERROR), "csot {csot}");
            let source = std::error::Error::source(&error)
                .and_then(|source| source.downcast_ref::<Error>())
                .expect("the last error is the timeout's source");
            assert!(!source.is_timeout() && source.is_network_error());
        }
    }

    #[test]
    fn a_last_error_that_is_a_timeout_is_reported_as_it_is() {
        let last = Error::timeout("the commit's socket read timed out")
            .with_labels([UNKNOWN_TRANSACTION_COMMIT_RESULT]);
        let error = limits(true).out_of_time(last);
        assert!(std::error::Error::source(&error).is_none(), "not wrapped");
        assert!(error.has_label(UNKNOWN_TRANSACTION_COMMIT_RESULT));
    }
}
