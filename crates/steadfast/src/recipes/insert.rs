//! The idempotent insert: a client-chosen `_id`, and a duplicate key on `_id` read as "already
//! inserted" when the evidence says the earlier insert was ours.

use std::borrow::Borrow;
use std::future::IntoFuture;

use bson::oid::ObjectId;
use bson::{Bson, Document};
use serde::Serialize;

use super::dup_key::{DuplicateIndex, duplicate_index};
use super::{RecipeOptions, repeat_step, require_acknowledged};
use crate::coll::Collection;
use crate::error::{Outcome, Result};
use crate::options::ReadPreference;

/// What an idempotent insert found.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum InsertOutcome {
    /// This call inserted the document (possibly through the driver's own retry, which the
    /// server deduplicates).
    Inserted {
        /// The document's `_id`.
        id: Bson,
    },
    /// The document was already stored, by an earlier attempt of this insert whose answer
    /// was lost; `evidence` says how that was established.
    AlreadyInserted {
        /// The document's `_id`.
        id: Bson,
        /// Why the duplicate key was read as "ours".
        evidence: InsertEvidence,
    },
}

impl InsertOutcome {
    /// The inserted document's `_id`.
    pub fn id(&self) -> &Bson {
        match self {
            InsertOutcome::Inserted { id } | InsertOutcome::AlreadyInserted { id, .. } => id,
        }
    }

    /// Whether the document was found already stored rather than inserted by this call.
    pub fn was_already_inserted(&self) -> bool {
        matches!(self, InsertOutcome::AlreadyInserted { .. })
    }
}

/// How a duplicate key on `_id` was recognised as the trace of an earlier attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InsertEvidence {
    /// An earlier attempt of this [`IdempotentInsert`] failed in a way that may have written
    /// (its [`Outcome`] was not `NotApplied`), so the `_id` it carried being taken is that
    /// attempt's doing.
    DuplicateAfterUncertainAttempt,
    /// No earlier attempt of this value was uncertain (for example, the process restarted and
    /// rebuilt the insert), so the stored document was read back: it is equal to this one.
    StoredDocumentMatches,
}

/// An insert that may be run any number of times and stores its document once.
///
/// It gives the document an `_id` when it has none (a fresh ObjectId), before the first
/// attempt, so every attempt and every re-run carries the same one. A duplicate-key error on
/// `_id` then means the document is already there: when an earlier attempt of this value may
/// have written, the error is read as that attempt's success
/// ([`InsertEvidence::DuplicateAfterUncertainAttempt`]); otherwise the stored document is read
/// back and compared ([`InsertEvidence::StoredDocumentMatches`]), and a different document
/// under the same `_id` is reported as the duplicate-key error it is. A duplicate key on any
/// other unique index is always an error: it is a conflict with someone else's data.
///
/// Keep the value (or at least [`document`](Self::document), with its `_id`) until an attempt
/// succeeds; rebuilding the insert from the original document without `_id` would generate a
/// new `_id` and could store a second copy.
///
/// ```no_run
/// # async fn demo(orders: steadfast::Collection<bson::Document>) -> steadfast::Result<()> {
/// use steadfast::recipes::{IdempotentInsert, is_worth_retrying};
///
/// let mut insert = IdempotentInsert::from_document(bson::doc! { "sku": "pen", "qty": 2 });
/// let outcome = loop {
///     match insert.run(&orders).await {
///         Ok(outcome) => break outcome,
///         Err(error) if is_worth_retrying(&error) => continue, // back off in real code
///         Err(error) => return Err(error),
///     }
/// };
/// assert_eq!(outcome.id(), insert.id());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct IdempotentInsert {
    document: Document,
    id: Bson,
    /// Whether some failed attempt may have written the document.
    uncertain: bool,
    options: RecipeOptions,
}

impl IdempotentInsert {
    /// Serialises `document` and gives it an ObjectId `_id` if it has none.
    ///
    /// # Errors
    ///
    /// `InvalidArgument` when `document` does not serialise to a BSON document.
    pub fn new<T: Serialize + ?Sized>(document: &T) -> Result<Self> {
        Ok(Self::from_document(bson::serialize_to_document(document)?))
    }

    /// Takes a BSON document, giving it an ObjectId `_id` (first) if it has none.
    pub fn from_document(document: Document) -> Self {
        let (document, id) = with_id(document);
        IdempotentInsert {
            document,
            id,
            uncertain: false,
            options: RecipeOptions::default(),
        }
    }

    /// Uses `options` for the attempts of each run.
    #[must_use]
    pub fn with_options(mut self, options: RecipeOptions) -> Self {
        self.options = options;
        self
    }

    /// The `_id` every attempt carries.
    pub fn id(&self) -> &Bson {
        &self.id
    }

    /// The document every attempt sends, `_id` included.
    pub fn document(&self) -> &Document {
        &self.document
    }

    /// Inserts the document into `coll` unless it is already there. Transient failures are
    /// retried up to [`RecipeOptions::attempts`] times; after a failure, calling `run` again
    /// is safe.
    ///
    /// # Errors
    ///
    /// The last error when every attempt failed (after a transient error, running again is
    /// safe); a duplicate-key error on `_id` when a *different* document is stored under this
    /// `_id`, or on any other unique index; `InvalidArgument` when `coll`'s writes are
    /// unacknowledged (`w: 0`), since nothing could then be known; any other driver error.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future leaves the document inserted or not, and the value usable: run it
    /// again to find out. A dropped attempt is not remembered as uncertain, so if the next run
    /// meets its `_id` taken, it reads the stored document back before calling it "ours".
    pub async fn run<T: Send + Sync>(&mut self, coll: &Collection<T>) -> Result<InsertOutcome> {
        require_acknowledged(coll)?;
        let docs = coll.clone_with_type::<Document>();
        let document = &self.document;
        let uncertain = &mut self.uncertain;
        let attempt = repeat_step(
            self.options.attempts,
            |error| *uncertain |= error.outcome() != Outcome::NotApplied,
            || docs.insert_one(document).into_future(),
        )
        .await;
        let error = match attempt {
            Ok(_) => {
                return Ok(InsertOutcome::Inserted {
                    id: self.id.clone(),
                });
            }
            Err(error) => error,
        };
        if duplicate_index(&error) != Some(DuplicateIndex::Id) {
            return Err(error);
        }
        if self.uncertain {
            return Ok(InsertOutcome::AlreadyInserted {
                id: self.id.clone(),
                evidence: InsertEvidence::DuplicateAfterUncertainAttempt,
            });
        }
        let filter = bson::doc! { "_id": self.id.clone() };
        let stored = repeat_step(
            self.options.attempts,
            |_| {},
            || {
                docs.find_one(filter.clone())
                    .selection_criteria(ReadPreference::primary())
                    .into_future()
            },
        )
        .await?;
        match stored {
            Some(stored) if stored == self.document => Ok(InsertOutcome::AlreadyInserted {
                id: self.id.clone(),
                evidence: InsertEvidence::StoredDocumentMatches,
            }),
            _ => Err(error),
        }
    }
}

/// Inserts `document` into `coll` so that the call can be repeated: see [`IdempotentInsert`],
/// which this builds and runs once. To repeat the call after an error, the document must carry
/// its `_id` (give it one, or keep the [`IdempotentInsert`] and run it again); without one, a
/// fresh `_id` is generated per call.
///
/// ```no_run
/// # async fn demo(db: steadfast::Database) -> steadfast::Result<()> {
/// use bson::{doc, oid::ObjectId};
/// let events = db.collection::<bson::Document>("events");
/// let event = doc! { "_id": ObjectId::new(), "kind": "signup" };
/// let outcome = steadfast::recipes::insert_idempotent(&events, &event).await?;
/// println!("stored {} (already there: {})", outcome.id(), outcome.was_already_inserted());
/// # Ok(())
/// # }
/// ```
///
/// # Errors
///
/// As [`IdempotentInsert::run`], plus `InvalidArgument` when `document` does not serialise.
///
/// # Cancel safety
///
/// As [`IdempotentInsert::run`]: dropping the future leaves the document inserted or not.
pub async fn insert_idempotent<T>(
    coll: &Collection<T>,
    document: impl Borrow<T>,
) -> Result<InsertOutcome>
where
    T: Serialize + Send + Sync,
{
    IdempotentInsert::new(document.borrow())?.run(coll).await
}

/// `document` with an `_id` (a new ObjectId placed first when it had none), and that `_id`.
pub(crate) fn with_id(document: Document) -> (Document, Bson) {
    if let Some(id) = document.get("_id") {
        let id = id.clone();
        return (document, id);
    }
    let id = Bson::ObjectId(ObjectId::new());
    let mut with_id = Document::new();
    with_id.insert("_id", id.clone());
    with_id.extend(document);
    (with_id, id)
}
