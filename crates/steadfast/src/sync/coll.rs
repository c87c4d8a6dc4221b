//! The blocking [`Collection`]: its accessors, and one method per operation building the
//! async API's action, which `.run()` finishes on the sync API's runtime.

use std::borrow::Borrow;
use std::ops::Deref;

use bson::Document;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::action::{
    Aggregate, CountDocuments, CreateIndex, CreateIndexes, CreateSearchIndex, CreateSearchIndexes,
    Delete, Distinct, DropCollection, DropIndex, DropSearchIndex, EstimatedDocumentCount, Find,
    FindOne, FindOneAndDelete, FindOneAndReplace, FindOneAndUpdate, InsertMany, InsertOne,
    ListIndexes, ListSearchIndexes, ReplaceOne, Update, UpdateSearchIndex, Watch,
};
use crate::options::{ReadConcern, SelectionCriteria, UpdateModifications, WriteConcern};
use crate::{IndexModel, Namespace, SearchIndexModel};

use super::runtime::InRuntime;

/// A blocking handle to a collection, as [`crate::Collection`]; cheap to clone. Each operation
/// method returns the async API's action (with all its option setters), and `.run()` blocks
/// until it completes: `coll.insert_one(doc).run()?`, `coll.find(filter).run()?` returning a
/// blocking [`Cursor`](super::Cursor). The collection also dereferences to the async handle,
/// for what only steadfast has (`bulk_write`, `count`, ...).
pub struct Collection<T: Send + Sync> {
    inner: InRuntime<crate::Collection<T>>,
}

impl<T: Send + Sync> Clone for Collection<T> {
    fn clone(&self) -> Self {
        Collection {
            inner: self.inner.clone(),
        }
    }
}

impl<T: Send + Sync> std::fmt::Debug for Collection<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl<T: Send + Sync> From<crate::Collection<T>> for Collection<T> {
    fn from(collection: crate::Collection<T>) -> Self {
        Collection {
            inner: InRuntime::new(collection),
        }
    }
}

impl<T: Send + Sync> Deref for Collection<T> {
    type Target = crate::Collection<T>;

    fn deref(&self) -> &crate::Collection<T> {
        &self.inner
    }
}

/// Accessors; no I/O.
impl<T: Send + Sync> Collection<T> {
    /// The same collection, (de)serialising documents as `U`.
    pub fn clone_with_type<U: Send + Sync>(&self) -> Collection<U> {
        Collection::from(self.inner.clone_with_type())
    }

    /// The collection's name.
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// The collection's namespace (`database.collection`).
    pub fn namespace(&self) -> Namespace {
        self.inner.namespace()
    }

    /// The read preference operations use unless given one, if the collection (or its
    /// database or client) sets one.
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
}

/// Reads: `.run()` returns what awaiting the action returns, cursors and change streams as
/// their blocking wrappers.
impl<T: Send + Sync> Collection<T> {
    /// Finds the documents matching `filter` (see [`crate::Collection::find`]); `.run()`
    /// returns a blocking [`Cursor`](super::Cursor), or a
    /// [`SessionCursor`](super::SessionCursor) after `.session(..)`.
    pub fn find(&self, filter: Document) -> Find<'_, T> {
        self.inner.find(filter)
    }

    /// Runs an aggregation pipeline on the collection (see [`crate::Collection::aggregate`]);
    /// `.run()` returns a blocking cursor over the resulting documents.
    pub fn aggregate(&self, pipeline: impl IntoIterator<Item = Document>) -> Aggregate<'_> {
        self.inner.aggregate(pipeline)
    }

    /// Counts the documents matching `filter` exactly (see
    /// [`crate::Collection::count_documents`]); `.run()` returns the count.
    pub fn count_documents(&self, filter: Document) -> CountDocuments<'_, T> {
        self.inner.count_documents(filter)
    }

    /// Estimates the number of documents from the collection's metadata (see
    /// [`crate::Collection::estimated_document_count`]); `.run()` returns the estimate.
    pub fn estimated_document_count(&self) -> EstimatedDocumentCount<'_, T> {
        self.inner.estimated_document_count()
    }

    /// The distinct values of `field_name` among the documents matching `filter` (see
    /// [`crate::Collection::distinct`]); `.run()` returns them.
    pub fn distinct(&self, field_name: impl AsRef<str>, filter: Document) -> Distinct<'_, T> {
        self.inner.distinct(field_name, filter)
    }

    /// Opens a change stream on the collection (see [`crate::Collection::watch`]); `.run()`
    /// returns a blocking [`ChangeStream`](super::ChangeStream).
    pub fn watch(&self) -> Watch<'_, T> {
        self.inner.watch()
    }
}

/// Reads that deserialise their result as `T`.
impl<T: DeserializeOwned + Send + Sync> Collection<T> {
    /// Finds the first document matching `filter` (see [`crate::Collection::find_one`]);
    /// `.run()` returns it, or `None`.
    pub fn find_one(&self, filter: Document) -> FindOne<'_, T> {
        self.inner.find_one(filter)
    }

    /// Deletes the first document matching `filter` and returns it (see
    /// [`crate::Collection::find_one_and_delete`]).
    pub fn find_one_and_delete(&self, filter: Document) -> FindOneAndDelete<'_, T> {
        self.inner.find_one_and_delete(filter)
    }

    /// Updates the first document matching `filter` and returns it, before or after the update
    /// as `return_document` says (see [`crate::Collection::find_one_and_update`]).
    pub fn find_one_and_update(
        &self,
        filter: Document,
        update: impl Into<UpdateModifications>,
    ) -> FindOneAndUpdate<'_, T> {
        self.inner.find_one_and_update(filter, update)
    }
}

/// Writes.
impl<T: Send + Sync> Collection<T> {
    /// Updates the first document matching `query` (see [`crate::Collection::update_one`]);
    /// `.run()` returns the counts and any upserted id.
    pub fn update_one(
        &self,
        query: Document,
        update: impl Into<UpdateModifications>,
    ) -> Update<'_, T> {
        self.inner.update_one(query, update)
    }

    /// Updates every document matching `query` (see [`crate::Collection::update_many`]).
    pub fn update_many(
        &self,
        query: Document,
        update: impl Into<UpdateModifications>,
    ) -> Update<'_, T> {
        self.inner.update_many(query, update)
    }

    /// Deletes the first document matching `query` (see [`crate::Collection::delete_one`]);
    /// `.run()` returns the number deleted.
    pub fn delete_one(&self, query: Document) -> Delete<'_, T> {
        self.inner.delete_one(query)
    }

    /// Deletes every document matching `query` (see [`crate::Collection::delete_many`]).
    pub fn delete_many(&self, query: Document) -> Delete<'_, T> {
        self.inner.delete_many(query)
    }

    /// Drops the collection (see [`crate::Collection::drop`]).
    pub fn drop(&self) -> DropCollection<'_, T> {
        crate::Collection::drop(&self.inner)
    }
}

/// Writes that serialise `T`.
impl<T: Serialize + Send + Sync> Collection<T> {
    /// Inserts `doc`, owned or borrowed (see [`crate::Collection::insert_one`]); `.run()`
    /// returns its `_id`.
    pub fn insert_one(&self, doc: impl Borrow<T>) -> InsertOne<'_, T> {
        self.inner.insert_one(doc)
    }

    /// Inserts `docs` (see [`crate::Collection::insert_many`]); `.run()` returns their ids
    /// by position.
    pub fn insert_many(&self, docs: impl IntoIterator<Item = impl Borrow<T>>) -> InsertMany<'_, T> {
        self.inner.insert_many(docs)
    }

    /// Replaces the first document matching `query` with `replacement` (see
    /// [`crate::Collection::replace_one`]).
    pub fn replace_one(&self, query: Document, replacement: impl Borrow<T>) -> ReplaceOne<'_, T> {
        self.inner.replace_one(query, replacement)
    }
}

impl<T: Serialize + DeserializeOwned + Send + Sync> Collection<T> {
    /// Replaces the first document matching `filter` with `replacement` and returns the
    /// document before or after (see [`crate::Collection::find_one_and_replace`]).
    pub fn find_one_and_replace(
        &self,
        filter: Document,
        replacement: impl Borrow<T>,
    ) -> FindOneAndReplace<'_, T> {
        self.inner.find_one_and_replace(filter, replacement)
    }
}

/// Indexes and search indexes.
impl<T: Send + Sync> Collection<T> {
    /// Creates an index (see [`crate::Collection::create_index`]); `.run()` returns its name.
    pub fn create_index(&self, index: IndexModel) -> CreateIndex<'_, T> {
        self.inner.create_index(index)
    }

    /// Creates several indexes in one command (see [`crate::Collection::create_indexes`]).
    pub fn create_indexes(
        &self,
        indexes: impl IntoIterator<Item = IndexModel>,
    ) -> CreateIndexes<'_, T> {
        self.inner.create_indexes(indexes)
    }

    /// Drops the index named `name` (see [`crate::Collection::drop_index`]).
    pub fn drop_index(&self, name: impl AsRef<str>) -> DropIndex<'_, T> {
        self.inner.drop_index(name)
    }

    /// Drops every index but `_id`'s (see [`crate::Collection::drop_indexes`]).
    pub fn drop_indexes(&self) -> DropIndex<'_, T> {
        self.inner.drop_indexes()
    }

    /// Lists the collection's indexes (see [`crate::Collection::list_indexes`]); `.run()`
    /// returns a blocking cursor of [`IndexModel`]s.
    pub fn list_indexes(&self) -> ListIndexes<'_, T> {
        self.inner.list_indexes()
    }

    /// Lists the names of the collection's indexes (see
    /// [`crate::Collection::list_index_names`]).
    pub fn list_index_names(&self) -> ListIndexes<'_, T, true> {
        self.inner.list_index_names()
    }

    /// Creates an Atlas Search index (see [`crate::Collection::create_search_index`]);
    /// `.run()` returns its name.
    pub fn create_search_index(&self, model: SearchIndexModel) -> CreateSearchIndex<'_, T> {
        self.inner.create_search_index(model)
    }

    /// Creates several Atlas Search indexes (see
    /// [`crate::Collection::create_search_indexes`]); `.run()` returns their names.
    pub fn create_search_indexes(
        &self,
        models: impl IntoIterator<Item = SearchIndexModel>,
    ) -> CreateSearchIndexes<'_, T> {
        self.inner.create_search_indexes(models)
    }

    /// Replaces the definition of the search index `name` (see
    /// [`crate::Collection::update_search_index`]).
    pub fn update_search_index(
        &self,
        name: impl Into<String>,
        definition: Document,
    ) -> UpdateSearchIndex<'_, T> {
        self.inner.update_search_index(name, definition)
    }

    /// Drops the search index `name` (see [`crate::Collection::drop_search_index`]).
    pub fn drop_search_index(&self, name: impl Into<String>) -> DropSearchIndex<'_, T> {
        self.inner.drop_search_index(name)
    }

    /// Lists the collection's search indexes (see
    /// [`crate::Collection::list_search_indexes`]); `.run()` returns a blocking cursor.
    pub fn list_search_indexes(&self) -> ListSearchIndexes<'_, T> {
        self.inner.list_search_indexes()
    }
}
