//! [`Action`]: the trait every action implements, as in the official driver, so that code
//! generic over actions (and `use mongodb::action::Action` turned into
//! `use steadfast::action::Action`) carries over. It is sealed: only steadfast's actions are
//! actions.

use std::future::IntoFuture;

use super::{
    AbortTransaction, Aggregate, BulkWrite, ClientBulkWrite, CommitTransaction, Count,
    CountDocuments, CreateCollection, CreateIndex, CreateIndexes, CreateSearchIndex,
    CreateSearchIndexes, Delete, Distinct, DropCollection, DropDatabase, DropIndex,
    DropSearchIndex, EstimatedDocumentCount, Find, FindOne, FindOneAndDelete, FindOneAndReplace,
    FindOneAndUpdate, InsertMany, InsertOne, ListCollections, ListDatabases, ListIndexes,
    ListSearchIndexes, ParseConnectionString, ReplaceOne, RunCommand, RunCursorCommand, Shutdown,
    StartSession, StartTransaction, Update, UpdateSearchIndex, WarmConnectionPool, Watch, gridfs,
};

pub(crate) mod private {
    /// Only steadfast's actions implement [`Action`](super::Action).
    pub trait Sealed {}
}

/// A pending operation: configured with chained setters, run when awaited (or with `run()` in
/// the blocking API).
pub trait Action: private::Sealed + IntoFuture {
    /// Calls `f` on the action with the value when there is one, and returns the action
    /// unchanged otherwise: a setter applied only when an optional value is present.
    ///
    /// ```
    /// use steadfast::action::Action;
    /// use steadfast::bson::Document;
    ///
    /// async fn names(db: &steadfast::Database, filter: Option<Document>) -> steadfast::error::Result<Vec<String>> {
    ///     db.list_collection_names().optional(filter, |action, f| action.filter(f)).await
    /// }
    /// ```
    fn optional<Value>(self, value: Option<Value>, f: impl FnOnce(Self, Value) -> Self) -> Self
    where
        Self: Sized,
    {
        match value {
            Some(value) => f(self, value),
            None => self,
        }
    }
}

/// `Sealed` and `Action` for an action type, with the generics of its definition.
macro_rules! actions {
    ($( [$($generics:tt)*] $ty:ty ;)*) => {
        $(
            impl<$($generics)*> private::Sealed for $ty {}
            impl<$($generics)*> Action for $ty where $ty: IntoFuture {}
        )*
    };
}

actions! {
    ['a, S, T] Aggregate<'a, S, T>;
    ['a, T: Send + Sync] BulkWrite<'a, T>;
    ['a, R] ClientBulkWrite<'a, R>;
    ['a, T: Send + Sync] Count<'a, T>;
    ['a, T: Send + Sync] CountDocuments<'a, T>;
    ['a] CreateCollection<'a>;
    ['a, T: Send + Sync] CreateIndex<'a, T>;
    ['a, T: Send + Sync] CreateIndexes<'a, T>;
    ['a, T: Send + Sync] CreateSearchIndex<'a, T>;
    ['a, T: Send + Sync] CreateSearchIndexes<'a, T>;
    ['a, T: Send + Sync] Delete<'a, T>;
    ['a, T: Send + Sync] Distinct<'a, T>;
    ['a, T: Send + Sync] DropCollection<'a, T>;
    ['a] DropDatabase<'a>;
    ['a, T: Send + Sync] DropIndex<'a, T>;
    ['a, T: Send + Sync] DropSearchIndex<'a, T>;
    ['a, T: Send + Sync] EstimatedDocumentCount<'a, T>;
    ['a, T: Send + Sync, S] Find<'a, T, S>;
    ['a, T: Send + Sync] FindOne<'a, T>;
    ['a, T: Send + Sync] FindOneAndDelete<'a, T>;
    ['a, T: Send + Sync] FindOneAndReplace<'a, T>;
    ['a, T: Send + Sync] FindOneAndUpdate<'a, T>;
    ['a, T: Send + Sync] InsertMany<'a, T>;
    ['a, T: Send + Sync] InsertOne<'a, T>;
    ['a, const NAMES: bool, S] ListCollections<'a, NAMES, S>;
    ['a, const NAMES: bool] ListDatabases<'a, NAMES>;
    ['a, T: Send + Sync, const NAMES: bool, S] ListIndexes<'a, T, NAMES, S>;
    ['a, T: Send + Sync] ListSearchIndexes<'a, T>;
    [] ParseConnectionString;
    ['a, T: Send + Sync] ReplaceOne<'a, T>;
    ['a] RunCommand<'a>;
    [] Shutdown;
    ['a] WarmConnectionPool<'a>;
    ['a, S] RunCursorCommand<'a, S>;
    ['a] StartSession<'a>;
    [S] StartTransaction<S>;
    ['a] CommitTransaction<'a>;
    ['a] AbortTransaction<'a>;
    ['a, T: Send + Sync] Update<'a, T>;
    ['a, T: Send + Sync] UpdateSearchIndex<'a, T>;
    ['a, T, S] Watch<'a, T, S>;
    ['a] gridfs::Delete<'a>;
    ['a] gridfs::DeleteByName<'a>;
    ['a] gridfs::Drop<'a>;
    ['a] gridfs::Find<'a>;
    ['a] gridfs::FindOne<'a>;
    ['a] gridfs::OpenDownloadStream<'a>;
    ['a] gridfs::OpenDownloadStreamByName<'a>;
    ['a] gridfs::OpenUploadStream<'a>;
    ['a] gridfs::Rename<'a>;
    ['a] gridfs::RenameByName<'a>;
}
