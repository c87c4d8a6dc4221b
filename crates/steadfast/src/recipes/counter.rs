//! The exactly-once counter: an increment split into two idempotent updates linked by a token,
//! and the reconciliation that finishes increments abandoned between the two.

use std::fmt;
use std::future::IntoFuture;
use std::sync::Arc;
use std::time::Duration;

use bson::{Bson, DateTime, Document, doc};

use super::{RecipeOptions, Token, repeat_step, require_acknowledged};
use crate::coll::Collection;
use crate::error::{Error, Result};
use crate::options::ReadPreference;
use crate::recipes::dup_key::{DuplicateIndex, duplicate_index};

/// The field holding a counter's value.
pub const VALUE_FIELD: &str = "count";
/// The array of `{token, amount, at}` entries for increments registered but not yet applied.
pub const PENDING_FIELD: &str = "pending";
/// The array of `{token, at}` entries for increments applied, kept so that a re-run with the
/// same token is recognised (see [`ExactlyOnceCounter::forget_applied_before`]).
pub const APPLIED_FIELD: &str = "applied";

/// What [`ExactlyOnceCounter::increment`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IncrementOutcome {
    /// This call applied the increment.
    Applied,
    /// The increment had already been applied under this token — by an earlier attempt of
    /// this call whose answer was lost, an earlier call, or [`ExactlyOnceCounter::reconcile`] —
    /// and was not applied again.
    AlreadyApplied,
}

/// What one [`ExactlyOnceCounter::reconcile`] pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReconcileReport {
    /// Counter documents that had pending tokens older than the cutoff.
    pub documents: u64,
    /// Tokens this pass applied.
    pub finished: u64,
    /// Tokens that were gone by the time this pass got to them (their client, or another
    /// reconciler, finished them first).
    pub finished_elsewhere: u64,
    /// Pending entries that could not be read (no token or a non-integer amount); left alone.
    pub malformed: u64,
}

/// The source of the timestamps written next to tokens.
type Clock = Arc<dyn Fn() -> DateTime + Send + Sync>;

/// Counters whose increments are applied exactly once, however often a call is repeated.
///
/// Each counter is one document of the collection, found by `_id`, holding its value in
/// [`VALUE_FIELD`]. An increment, named by a caller-chosen [`Token`], takes two
/// single-document updates, each safe to repeat:
///
/// 1. **Register**: add `{token, amount, at}` to [`PENDING_FIELD`], only if the token is neither
///    pending nor already applied (creating the counter document if needed). Repeating it
///    changes nothing.
/// 2. **Apply**: in one update whose filter requires the token to be pending, remove it, add the
///    amount to the value and record the token in [`APPLIED_FIELD`]. A single update is atomic,
///    so the removal and the increment happen together or not at all; once the token has left
///    `pending`, repeating the update matches nothing.
///
/// So the caller may repeat [`increment`](Self::increment) with the same token after any
/// failure, any number of times: the amount is added once. A client that dies after step 1
/// leaves its token pending; [`reconcile`](Self::reconcile) applies such tokens once they are
/// old enough to be considered abandoned, with the same guarded update, so it cannot race a
/// slow client into a double increment either.
///
/// Applied tokens are remembered in the document until
/// [`forget_applied_before`](Self::forget_applied_before) removes them, which bounds the
/// document's size and also the guarantee: a token that has been forgotten is a stranger, and a
/// re-run with it is applied as a new increment. Forget only tokens older than any client may
/// still retry (hours or days, not seconds).
///
/// Timestamps come from this process's clock ([`with_clock`](Self::with_clock) to replace it).
/// They only decide *when* a pending token is considered abandoned, never *whether* it is
/// applied twice, so clock skew between clients can delay or hasten reconciliation but not
/// break exactness.
///
/// ```no_run
/// # async fn demo(db: steadfast::Database) -> steadfast::Result<()> {
/// use std::time::Duration;
/// use steadfast::recipes::{ExactlyOnceCounter, IncrementOutcome, Token};
///
/// let counter = ExactlyOnceCounter::new(&db.collection::<bson::Document>("daily_events"));
/// let token = Token::new_object_id();
/// let outcome = counter.increment("2016-06-28", 1, &token).await?;
/// assert!(matches!(outcome, IncrementOutcome::Applied | IncrementOutcome::AlreadyApplied));
///
/// // In a periodic job: finish increments abandoned for more than a minute,
/// // and forget applied tokens after a day.
/// counter.reconcile(Duration::from_secs(60)).await?;
/// counter.forget_applied(Duration::from_secs(24 * 3600)).await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct ExactlyOnceCounter {
    coll: Collection<Document>,
    options: RecipeOptions,
    clock: Clock,
}

impl fmt::Debug for ExactlyOnceCounter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExactlyOnceCounter")
            .field("collection", &self.coll.namespace())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl ExactlyOnceCounter {
    /// Counters stored in `coll` (its write concern and timeouts apply to every step).
    pub fn new<T: Send + Sync>(coll: &Collection<T>) -> Self {
        ExactlyOnceCounter {
            coll: coll.clone_with_type(),
            options: RecipeOptions::default(),
            clock: Arc::new(DateTime::now),
        }
    }

    /// Uses `options` for the attempts of each step.
    #[must_use]
    pub fn with_options(mut self, options: RecipeOptions) -> Self {
        self.options = options;
        self
    }

    /// Takes the timestamps written next to tokens, and the "now" that
    /// [`reconcile`](Self::reconcile) and [`forget_applied`](Self::forget_applied) measure
    /// ages from, from `clock` instead of the system clock.
    #[must_use]
    pub fn with_clock(mut self, clock: impl Fn() -> DateTime + Send + Sync + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Adds `amount` to the counter `counter_id` exactly once for `token`: see the
    /// [type documentation](Self) for the two steps. Each step is repeated up to
    /// [`RecipeOptions::attempts`] times on transient errors.
    ///
    /// # Errors
    ///
    /// The last error of a step that kept failing: the increment is then registered or not,
    /// and calling again with the same token is safe (a registered token is also finished by
    /// [`reconcile`](Self::reconcile)). `InvalidArgument` when the token was already used with
    /// a different amount, when it is neither pending nor remembered as applied after step 1
    /// (it was applied and then [forgotten](Self::forget_applied_before), or the counter
    /// document was removed), or when the collection's writes are unacknowledged.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future leaves the increment not started, registered, or applied; calling
    /// again with the same token completes it exactly once, as does `reconcile`.
    pub async fn increment(
        &self,
        counter_id: impl Into<Bson>,
        amount: i64,
        token: &Token,
    ) -> Result<IncrementOutcome> {
        require_acknowledged(&self.coll)?;
        let id = counter_id.into();
        let token = token.as_bson();
        let entry = pending_entry(token, amount, (self.clock)());
        repeat_step(
            self.options.attempts,
            |_| {},
            || self.register(&id, token, &entry),
        )
        .await?;
        if self.apply(&id, token, amount).await? {
            return Ok(IncrementOutcome::Applied);
        }
        self.confirm_applied(&id, token).await
    }

    /// Step 1: puts the pending entry in place unless the token is already known.
    async fn register(&self, id: &Bson, token: &Bson, entry: &Document) -> Result<()> {
        let filter = register_filter(id, token);
        let update = doc! { "$push": { PENDING_FIELD: entry.clone() } };
        match self
            .coll
            .update_one(filter.clone(), update.clone())
            .upsert(true)
            .await
        {
            Ok(_) => Ok(()),
            // The document exists but the filter did not match, so the upsert tried to create
            // a second one: either the token is already known, or another client created the
            // document between our match and our insert. The plain update settles which.
            Err(error) if duplicate_index(&error) == Some(DuplicateIndex::Id) => {
                self.coll.update_one(filter, update).await.map(|_| ())
            }
            Err(error) => Err(error),
        }
    }

    /// Step 2: applies the pending token; `false` when it was not pending (any more).
    async fn apply(&self, id: &Bson, token: &Bson, amount: i64) -> Result<bool> {
        let filter = apply_filter(id, token, amount);
        let update = apply_update(token, amount, (self.clock)());
        let result = repeat_step(
            self.options.attempts,
            |_| {},
            || {
                self.coll
                    .update_one(filter.clone(), update.clone())
                    .into_future()
            },
        )
        .await?;
        Ok(result.matched_count > 0)
    }

    /// After step 2 matched nothing: the token must be remembered as applied.
    async fn confirm_applied(&self, id: &Bson, token: &Bson) -> Result<IncrementOutcome> {
        let applied = doc! { "_id": id.clone(), format!("{APPLIED_FIELD}.token"): token.clone() };
        if self.exists(applied).await? {
            return Ok(IncrementOutcome::AlreadyApplied);
        }
        let pending = doc! { "_id": id.clone(), format!("{PENDING_FIELD}.token"): token.clone() };
        if self.exists(pending).await? {
            return Err(Error::invalid_argument(format!(
                "token {token} is pending on counter {id} with a different amount; \
                 a token names one increment and its amount"
            )));
        }
        Err(Error::invalid_argument(format!(
            "token {token} is neither pending nor remembered as applied on counter {id}: it was \
             applied and then forgotten, or the counter document was removed"
        )))
    }

    /// Whether a document matches `filter`, read from the primary.
    async fn exists(&self, filter: Document) -> Result<bool> {
        let found = repeat_step(
            self.options.attempts,
            |_| {},
            || {
                self.coll
                    .find_one(filter.clone())
                    .projection(doc! { "_id": 1 })
                    .selection_criteria(ReadPreference::primary())
                    .into_future()
            },
        )
        .await?;
        Ok(found.is_some())
    }

    /// The value of counter `counter_id`, read from the primary: `None` when the counter
    /// document does not exist, 0 when it exists but no increment was applied yet.
    ///
    /// # Errors
    ///
    /// Any driver error; `InvalidArgument` when the value is not an integer.
    pub async fn value(&self, counter_id: impl Into<Bson>) -> Result<Option<i64>> {
        let id = counter_id.into();
        let found = self
            .coll
            .find_one(doc! { "_id": id.clone() })
            .projection(doc! { VALUE_FIELD: 1 })
            .selection_criteria(ReadPreference::primary())
            .await?;
        let Some(document) = found else {
            return Ok(None);
        };
        match document.get(VALUE_FIELD) {
            None => Ok(Some(0)),
            Some(value) => as_integer(value).map(Some).ok_or_else(|| {
                Error::invalid_argument(format!(
                    "counter {id} holds a non-integer {VALUE_FIELD}: {value}"
                ))
            }),
        }
    }

    /// Applies every pending token registered more than `older_than` ago (by this counter's
    /// clock): see [`reconcile_before`](Self::reconcile_before).
    ///
    /// # Errors
    ///
    /// As [`reconcile_before`](Self::reconcile_before).
    ///
    /// # Cancel safety
    ///
    /// As [`reconcile_before`](Self::reconcile_before).
    pub async fn reconcile(&self, older_than: Duration) -> Result<ReconcileReport> {
        self.reconcile_before(cutoff((self.clock)(), older_than))
            .await
    }

    /// Applies every pending token registered before `cutoff`, in every counter document of
    /// the collection, each with the same guarded update a client uses for step 2: a token
    /// its client (or another reconciler) finishes first is skipped, never applied twice.
    /// Run it periodically with a cutoff older than any client takes between the two steps;
    /// running it concurrently with clients, or with itself, is safe.
    ///
    /// # Errors
    ///
    /// The first error that persisted through the step's attempts. Tokens applied before it
    /// stay applied; run again to continue.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future leaves each token applied or pending; run again to finish.
    pub async fn reconcile_before(&self, cutoff: DateTime) -> Result<ReconcileReport> {
        require_acknowledged(&self.coll)?;
        let filter = doc! { PENDING_FIELD: { "$elemMatch": { "at": { "$lt": cutoff } } } };
        let documents = repeat_step(
            self.options.attempts,
            |_| {},
            || self.find_all(filter.clone(), doc! { PENDING_FIELD: 1 }),
        )
        .await?;
        let mut report = ReconcileReport::default();
        for document in documents {
            let Some(id) = document.get("_id").cloned() else {
                continue;
            };
            report.documents += 1;
            let entries = document
                .get_array(PENDING_FIELD)
                .map_or(&[][..], Vec::as_slice);
            for entry in entries {
                match abandoned_entry(entry, cutoff) {
                    AbandonedEntry::Recent => {}
                    AbandonedEntry::Malformed => report.malformed += 1,
                    AbandonedEntry::Abandoned { token, amount } => {
                        if self.apply(&id, token, amount).await? {
                            report.finished += 1;
                        } else {
                            report.finished_elsewhere += 1;
                        }
                    }
                }
            }
        }
        if report.finished > 0 {
            tracing::info!(?report, "reconciled abandoned counter increments");
        }
        Ok(report)
    }

    /// Forgets applied tokens recorded more than `older_than` ago (by this counter's clock):
    /// see [`forget_applied_before`](Self::forget_applied_before).
    ///
    /// # Errors
    ///
    /// As [`forget_applied_before`](Self::forget_applied_before).
    ///
    /// # Cancel safety
    ///
    /// As [`forget_applied_before`](Self::forget_applied_before).
    pub async fn forget_applied(&self, older_than: Duration) -> Result<u64> {
        self.forget_applied_before(cutoff((self.clock)(), older_than))
            .await
    }

    /// Removes the applied-token records written before `cutoff` from every counter document,
    /// returning how many documents changed. After this, those tokens are no longer
    /// recognised: a re-run of an increment with one of them is applied as a new increment, so
    /// choose a cutoff older than any client may still retry. The removal is idempotent, so it
    /// is repeated on transient errors although `update_many` is never retried by the driver.
    ///
    /// # Errors
    ///
    /// The error of the last attempt, when every attempt failed.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future leaves some records removed; run again to finish.
    pub async fn forget_applied_before(&self, cutoff: DateTime) -> Result<u64> {
        require_acknowledged(&self.coll)?;
        let old = doc! { "at": { "$lt": cutoff } };
        let filter = doc! { APPLIED_FIELD: { "$elemMatch": old.clone() } };
        let update = doc! { "$pull": { APPLIED_FIELD: old } };
        let result = repeat_step(
            self.options.attempts,
            |_| {},
            || {
                self.coll
                    .update_many(filter.clone(), update.clone())
                    .into_future()
            },
        )
        .await?;
        Ok(result.modified_count)
    }

    /// Every document matching `filter`, projected, read from the primary.
    async fn find_all(&self, filter: Document, projection: Document) -> Result<Vec<Document>> {
        let mut cursor = self
            .coll
            .find(filter)
            .projection(projection)
            .selection_criteria(ReadPreference::primary())
            .await?;
        let mut documents = Vec::new();
        while cursor.advance().await? {
            documents.push(cursor.deserialize_current()?);
        }
        Ok(documents)
    }
}

/// The entry step 1 pushes onto `pending`.
pub(crate) fn pending_entry(token: &Bson, amount: i64, at: DateTime) -> Document {
    doc! { "token": token.clone(), "amount": amount, "at": at }
}

/// Step 1's filter: the counter, unless the token is already pending or applied.
pub(crate) fn register_filter(id: &Bson, token: &Bson) -> Document {
    doc! {
        "_id": id.clone(),
        format!("{PENDING_FIELD}.token"): { "$ne": token.clone() },
        format!("{APPLIED_FIELD}.token"): { "$ne": token.clone() },
    }
}

/// Step 2's filter: the counter, only while the token is pending with this amount.
pub(crate) fn apply_filter(id: &Bson, token: &Bson, amount: i64) -> Document {
    doc! {
        "_id": id.clone(),
        PENDING_FIELD: { "$elemMatch": { "token": token.clone(), "amount": amount } },
    }
}

/// Step 2's update: the token leaves `pending`, the amount is added, the token is remembered.
pub(crate) fn apply_update(token: &Bson, amount: i64, at: DateTime) -> Document {
    doc! {
        "$pull": { PENDING_FIELD: { "token": token.clone() } },
        "$inc": { VALUE_FIELD: amount },
        "$push": { APPLIED_FIELD: { "token": token.clone(), "at": at } },
    }
}

/// How reconciliation sees one pending entry.
#[derive(Debug, PartialEq)]
pub(crate) enum AbandonedEntry<'a> {
    /// Registered at or after the cutoff: its client may still be working on it.
    Recent,
    /// Not a `{token, amount: integer, at: date}` document.
    Malformed,
    /// Registered before the cutoff.
    Abandoned {
        /// The entry's token.
        token: &'a Bson,
        /// The amount it registered.
        amount: i64,
    },
}

/// Classifies a pending entry against the reconciliation cutoff.
pub(crate) fn abandoned_entry(entry: &Bson, cutoff: DateTime) -> AbandonedEntry<'_> {
    let Some(entry) = entry.as_document() else {
        return AbandonedEntry::Malformed;
    };
    let (Some(token), Some(amount), Ok(at)) = (
        entry.get("token"),
        entry.get("amount").and_then(as_integer),
        entry.get_datetime("at"),
    ) else {
        return AbandonedEntry::Malformed;
    };
    if *at < cutoff {
        AbandonedEntry::Abandoned { token, amount }
    } else {
        AbandonedEntry::Recent
    }
}

/// `now - older_than`, saturating at the earliest representable date.
pub(crate) fn cutoff(now: DateTime, older_than: Duration) -> DateTime {
    let millis = i64::try_from(older_than.as_millis()).unwrap_or(i64::MAX);
    DateTime::from_millis(now.timestamp_millis().saturating_sub(millis))
}

/// An integer counter value or amount (doubles only when integral and exactly representable).
pub(crate) fn as_integer(value: &Bson) -> Option<i64> {
    match value {
        Bson::Int32(v) => Some(i64::from(*v)),
        Bson::Int64(v) => Some(*v),
        // The guard keeps the conversion exact: integral and within 2^53.
        #[allow(clippy::cast_possible_truncation)]
        Bson::Double(v) if v.fract() == 0.0 && v.abs() <= 9_007_199_254_740_992.0 => {
            Some(*v as i64)
        }
        _ => None,
    }
}
