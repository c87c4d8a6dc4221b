//! The blocking [`Database`]: its accessors, the handles it gives, and one method per
//! operation building the async API's action, which `.run()` finishes.

use std::ops::Deref;

use bson::Document;

use crate::action::{
    Aggregate, CreateCollection, DropDatabase, ListCollections, RunCommand, RunCursorCommand, Watch,
};
use crate::options::{CollectionOptions, ReadConcern, SelectionCriteria, WriteConcern};

use super::Collection;
use super::runtime::InRuntime;

/// A blocking handle to a database, as [`crate::Database`]; cheap to clone. Each operation
/// method returns the async API's action, which `.run()` finishes
/// (`db.run_command(doc! { "ping": 1 }).run()?`). It also dereferences to the async handle.
#[derive(Clone, Debug)]
pub struct Database {
    inner: InRuntime<crate::Database>,
}

impl From<crate::Database> for Database {
    fn from(database: crate::Database) -> Self {
        Database {
            inner: InRuntime::new(database),
        }
    }
}

impl Deref for Database {
    type Target = crate::Database;

    fn deref(&self) -> &crate::Database {
        &self.inner
    }
}

/// Handles and accessors; no I/O.
impl Database {
    /// The database's name.
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// The read preference operations use unless given one, if the database (or its client)
    /// sets one.
    pub fn selection_criteria(&self) -> Option<&SelectionCriteria> {
        self.inner.selection_criteria()
    }

    /// The read concern operations use unless given one, if one is set.
    pub fn read_concern(&self) -> Option<&ReadConcern> {
        self.inner.read_concern()
    }

    /// The write concern writes use unless given one, if one is set.
    pub fn write_concern(&self) -> Option<&WriteConcern> {
        self.inner.write_concern()
    }

    /// A GridFS bucket in this database (see [`crate::Database::gridfs_bucket`]).
    pub fn gridfs_bucket(
        &self,
        options: impl Into<Option<crate::options::GridFsBucketOptions>>,
    ) -> super::gridfs::GridFsBucket {
        super::gridfs::GridFsBucket::from(self.inner.gridfs_bucket(options))
    }

    /// A handle to the collection `name`, (de)serialising documents as `T`.
    pub fn collection<T: Send + Sync>(&self, name: &str) -> Collection<T> {
        Collection::from(self.inner.collection(name))
    }

    /// As [`Database::collection`], with settings that override the database's.
    pub fn collection_with_options<T: Send + Sync>(
        &self,
        name: &str,
        options: CollectionOptions,
    ) -> Collection<T> {
        Collection::from(self.inner.collection_with_options(name, options))
    }
}

/// Operations: `.run()` returns what awaiting the action returns, cursors and change streams
/// as their blocking wrappers.
impl Database {
    /// Runs a collection-less aggregation (see [`crate::Database::aggregate`]); `.run()`
    /// returns a blocking cursor.
    pub fn aggregate(&self, pipeline: impl IntoIterator<Item = Document>) -> Aggregate<'_> {
        self.inner.aggregate(pipeline)
    }

    /// Creates the collection `name` (see [`crate::Database::create_collection`]).
    pub fn create_collection(&self, name: impl AsRef<str>) -> CreateCollection<'_> {
        self.inner.create_collection(name)
    }

    /// Drops the database (see [`crate::Database::drop`]).
    pub fn drop(&self) -> DropDatabase<'_> {
        crate::Database::drop(&self.inner)
    }

    /// Lists the database's collections and views (see
    /// [`crate::Database::list_collections`]); `.run()` returns a blocking cursor of
    /// [`CollectionSpecification`](crate::results::CollectionSpecification)s.
    pub fn list_collections(&self) -> ListCollections<'_> {
        self.inner.list_collections()
    }

    /// The names of the database's collections and views (see
    /// [`crate::Database::list_collection_names`]).
    pub fn list_collection_names(&self) -> ListCollections<'_, true> {
        self.inner.list_collection_names()
    }

    /// Runs a command as written (see [`crate::Database::run_command`]); `.run()` returns the
    /// server's reply.
    pub fn run_command(&self, command: Document) -> RunCommand<'_> {
        self.inner.run_command(command)
    }

    /// Runs a command given as raw BSON (see [`crate::Database::run_raw_command`]); `.run()`
    /// returns the server's reply.
    pub fn run_raw_command(&self, command: bson::RawDocumentBuf) -> RunCommand<'_> {
        self.inner.run_raw_command(command)
    }

    /// Runs a command that opens a cursor (see [`crate::Database::run_cursor_command`]);
    /// `.run()` returns a blocking cursor over its results.
    pub fn run_cursor_command(&self, command: Document) -> RunCursorCommand<'_> {
        self.inner.run_cursor_command(command)
    }

    /// Runs a command given as raw BSON that opens a cursor (see
    /// [`crate::Database::run_raw_cursor_command`]); `.run()` returns the cursor.
    pub fn run_raw_cursor_command(&self, command: bson::RawDocumentBuf) -> RunCursorCommand<'_> {
        self.inner.run_raw_cursor_command(command)
    }

    /// Opens a change stream on every collection of the database (see
    /// [`crate::Database::watch`]); `.run()` returns a blocking
    /// [`ChangeStream`](super::ChangeStream).
    pub fn watch(&self) -> Watch<'_> {
        self.inner.watch()
    }
}
