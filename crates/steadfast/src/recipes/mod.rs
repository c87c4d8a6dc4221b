//! Exactly-once recipes: writes an application may repeat after an error without applying
//! them twice.
//!
//! # What the driver already guarantees
//!
//! With `retryWrites` on (the default) and a deployment that has sessions (a replica set or a
//! sharded cluster; a standalone has none), every single-document write — `insert_one`,
//! `update_one`, `replace_one`, `delete_one`, the `find_one_and_*` family, and `insert_many`
//! / `bulk_write` batches that hold no `update_many` / `delete_many` — carries a transaction
//! number. When an attempt fails in a way that leaves its fate unknown (the connection drops,
//! the primary steps down), the driver sends the *same* transaction number again, and the
//! server, which remembers what it did for that number, answers from memory instead of
//! writing a second time. Inside one call, then, a write is applied at most once, and a single
//! transient failure is invisible to the application.
//!
//! If that is the whole story of your application — one write per request, no retry loop of
//! your own, acknowledged writes — you do not need this module.
//!
//! # Where that guarantee ends
//!
//! The server's memory is keyed by the call's transaction number, so it only protects the
//! driver's own retries. It does not help when:
//!
//! - **The application retries.** A call that fails with an
//!   [ambiguous](crate::error::Outcome::Ambiguous) error (the driver's retry failed too, the
//!   outage outlasted it, the deadline passed) may or may not have written. Calling it again
//!   uses a new transaction number, and a non-idempotent write such as `$inc` is applied a
//!   second time if the first one had landed.
//! - **The write touches many documents.** `update_many`, `delete_many` and aggregations with
//!   `$out` / `$merge` are never retried by the driver.
//! - **Writes are unacknowledged** (`w: 0`): nothing is retried and nothing is known.
//! - **The process dies between two related writes**, so the second never happens.
//!
//! The recipes turn such writes into operations whose *whole call* may be repeated — by a
//! retry loop, a message redelivery, a restarted job — with the same result as one call:
//!
//! - [`insert_idempotent`] (and [`IdempotentInsert`] for re-runs): an insert with a
//!   client-chosen `_id`, where a duplicate-key error on `_id` after an uncertain earlier
//!   attempt means "already inserted", while a duplicate on any other unique index stays an
//!   error.
//! - [`ExactlyOnceCounter`]: an increment split into two idempotent single-document updates
//!   linked by a token (record the token as pending; then, in one update that only matches
//!   while the token is pending, remove it and apply the increment), plus
//!   [`reconcile`](ExactlyOnceCounter::reconcile), which finishes the tokens of clients that
//!   crashed in between.
//!
//! Both need acknowledged writes, and both cost more round trips than the plain write: use
//! them for the writes whose double (or missing) application matters.
//!
//! # Retrying at the application level
//!
//! Each recipe already repeats a failed step a few times ([`RecipeOptions::attempts`]) when
//! the failure is transient ([`is_worth_retrying`]). When it still fails, the error is
//! returned and calling the recipe again with the same document or token is safe:
//!
//! ```no_run
//! # async fn demo(db: steadfast::Database) -> steadfast::Result<()> {
//! use steadfast::recipes::{ExactlyOnceCounter, Token, is_worth_retrying};
//!
//! let counter = ExactlyOnceCounter::new(&db.collection::<bson::Document>("page_views"));
//! let token = Token::new_object_id(); // keep it with the request, e.g. in its message
//! loop {
//!     match counter.increment("2016-06-28", 1, &token).await {
//!         Ok(_) => break,
//!         Err(error) if is_worth_retrying(&error) => continue, // back off in real code
//!         Err(error) => return Err(error),
//!     }
//! }
//! # Ok(())
//! # }
//! ```

mod counter;
mod dup_key;
mod insert;
#[cfg(test)]
mod tests;
mod token;

pub use counter::{
    APPLIED_FIELD, ExactlyOnceCounter, IncrementOutcome, PENDING_FIELD, ReconcileReport,
    VALUE_FIELD,
};
pub use insert::{IdempotentInsert, InsertEvidence, InsertOutcome, insert_idempotent};
pub use token::Token;

use std::future::Future;

use crate::coll::Collection;
use crate::error::{Error, ErrorClass, Result};

/// How persistently a recipe repeats one of its steps.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecipeOptions {
    /// How many times a step is sent, at most, when it keeps failing with errors
    /// [worth retrying](is_worth_retrying); at least 1. Each send already includes the
    /// driver's own retry, so the default of 2 follows the advice to retry a failed operation
    /// once: after that, the outage is likely to last.
    pub attempts: u32,
}

impl Default for RecipeOptions {
    fn default() -> Self {
        RecipeOptions { attempts: 2 }
    }
}

impl RecipeOptions {
    /// Sets [`RecipeOptions::attempts`] (values below 1 count as 1).
    #[must_use]
    pub fn attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts.max(1);
        self
    }
}

/// Whether an error from a recipe (or any driver call) is transient: a network error, a
/// timeout, an election, an overloaded server or no reachable server
/// ([`ErrorClass::Transient`] or [`ErrorClass::Outage`]). Repeating a recipe after such an
/// error is safe and may succeed; repeating it after a command error (a validation failure,
/// a duplicate key on another index, missing privileges) would fail the same way.
pub fn is_worth_retrying(error: &Error) -> bool {
    matches!(error.class(), ErrorClass::Transient | ErrorClass::Outage)
}

/// Fails when the collection's writes are unacknowledged: every recipe reads the server's
/// answer to decide what to do next.
fn require_acknowledged<T: Send + Sync>(coll: &Collection<T>) -> Result<()> {
    match coll.write_concern() {
        Some(concern) if concern.is_unacknowledged() => Err(Error::invalid_argument(
            "exactly-once recipes need acknowledged writes; the collection's write concern is w: 0",
        )),
        _ => Ok(()),
    }
}

/// Runs `step` until it succeeds, fails with an error not worth retrying, or has been sent
/// `attempts` times. `on_failure` sees every failed attempt, so a caller can remember one
/// that may have written and read a later answer in that light.
async fn repeat_step<F, Fut, R>(
    attempts: u32,
    mut on_failure: impl FnMut(&Error),
    mut step: F,
) -> Result<R>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<R>>,
{
    let mut sent = 0;
    loop {
        sent += 1;
        match step().await {
            Ok(value) => return Ok(value),
            Err(error) => {
                on_failure(&error);
                if sent >= attempts.max(1) || !is_worth_retrying(&error) {
                    return Err(error);
                }
                tracing::debug!(attempt = sent, %error, "recipe step failed; sending it again");
            }
        }
    }
}
