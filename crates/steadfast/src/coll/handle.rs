//! The `Collection<T>` handle and how it resolves its settings.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use steadfast_core::options::{ReadConcern, WriteConcern};
use steadfast_core::retry::RetryPolicy;
use steadfast_core::selection::SelectionCriteria;

use crate::client::Client;
use crate::db::Database;
use crate::namespace::Namespace;
use crate::options::CollectionOptions;

/// A handle to one collection, whose documents are (de)serialised as `T`.
///
/// Cheap to clone (clones share one allocation); creating one does no I/O. Its read concern,
/// write concern, read preference, timeout and retry policy are the ones given when it was
/// created, else the database's, else the client's; every operation may override them.
///
/// ```no_run
/// # async fn demo(db: steadfast::Database) -> steadfast::Result<()> {
/// use bson::doc;
/// let orders = db.collection::<bson::Document>("orders");
/// orders.insert_one(doc! { "sku": "pen", "qty": 2 }).await?;
/// let pen = orders.find_one(doc! { "sku": "pen" }).await?;
/// assert!(pen.is_some());
/// # Ok(())
/// # }
/// ```
pub struct Collection<T: Send + Sync> {
    inner: Arc<CollectionInner>,
    _documents: PhantomData<fn() -> T>,
}

pub(crate) struct CollectionInner {
    db: Database,
    ns: Namespace,
    /// The collection's own settings over the database's (the client's apply last, when an
    /// operation resolves them).
    settings: CollectionOptions,
}

impl<T: Send + Sync> Clone for Collection<T> {
    fn clone(&self) -> Self {
        Collection {
            inner: Arc::clone(&self.inner),
            _documents: PhantomData,
        }
    }
}

impl<T: Send + Sync> fmt::Debug for Collection<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Collection")
            .field("namespace", &self.inner.ns)
            .field("settings", &self.inner.settings)
            .finish()
    }
}

impl<T: Send + Sync> Collection<T> {
    pub(crate) fn new(db: Database, name: &str, settings: CollectionOptions) -> Self {
        let ns = Namespace::new(db.name(), name);
        Collection {
            inner: Arc::new(CollectionInner { db, ns, settings }),
            _documents: PhantomData,
        }
    }

    /// The same collection, (de)serialising documents as `U`.
    pub fn clone_with_type<U: Send + Sync>(&self) -> Collection<U> {
        Collection {
            inner: Arc::clone(&self.inner),
            _documents: PhantomData,
        }
    }

    /// The collection name.
    pub fn name(&self) -> &str {
        &self.inner.ns.coll
    }

    /// The `database.collection` namespace.
    pub fn namespace(&self) -> Namespace {
        self.inner.ns.clone()
    }

    /// The database this collection belongs to.
    pub fn database(&self) -> &Database {
        &self.inner.db
    }

    /// The client this collection belongs to.
    pub fn client(&self) -> &Client {
        self.inner.db.client()
    }

    pub(crate) fn ns(&self) -> &Namespace {
        &self.inner.ns
    }

    /// The settings given to this handle (over its database's).
    pub(crate) fn handle_options(&self) -> &CollectionOptions {
        &self.inner.settings
    }

    /// The write concern operations use unless they set one (`None`: the server's default).
    pub fn write_concern(&self) -> Option<&WriteConcern> {
        self.inner
            .settings
            .write_concern
            .as_ref()
            .or(Some(&self.client().options().write_concern))
            .filter(|wc| !wc.is_empty())
    }

    /// The read concern operations use unless they set one (`None`: the server's default).
    pub fn read_concern(&self) -> Option<&ReadConcern> {
        self.inner
            .settings
            .read_concern
            .as_ref()
            .or(self.client().options().read_concern.as_ref())
    }

    /// The selection criteria reads use unless they set their own, when this handle (or its
    /// database) sets them; `None`: the client's read preference applies.
    pub fn selection_criteria(&self) -> Option<&SelectionCriteria> {
        self.inner.settings.selection_criteria.as_ref()
    }

    /// The operation's write concern, else the collection's.
    pub(crate) fn resolve_write_concern(&self, op: Option<WriteConcern>) -> Option<WriteConcern> {
        op.filter(|wc| !wc.is_empty())
            .or_else(|| self.write_concern().cloned())
    }

    /// The operation's read concern, else the collection's.
    pub(crate) fn resolve_read_concern(&self, op: Option<ReadConcern>) -> Option<ReadConcern> {
        op.or_else(|| self.read_concern().cloned())
    }

    /// The operation's selection criteria, else the collection's, else the client's read
    /// preference.
    pub(crate) fn resolve_criteria(&self, op: Option<SelectionCriteria>) -> SelectionCriteria {
        op.or_else(|| self.selection_criteria().cloned())
            .unwrap_or_else(|| {
                SelectionCriteria::ReadPreference(self.client().options().read_preference.clone())
            })
    }

    /// timeoutMS for this collection's operations (`None`: unset).
    pub(crate) fn timeout(&self) -> Option<Duration> {
        self.inner
            .settings
            .timeout
            .or(self.client().options().timeout)
    }

    /// The retry policy for this collection's operations (`None`: the client's).
    pub(crate) fn retry_policy(&self) -> Option<Arc<dyn RetryPolicy>> {
        self.inner.settings.retry_policy.clone()
    }
}
