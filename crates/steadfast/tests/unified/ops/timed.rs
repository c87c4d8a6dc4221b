//! The `timeoutMS` argument every operation accepts, applied to steadfast's actions.

use std::time::Duration;

use bson::Document;
use steadfast::action::{
    Aggregate, BulkWrite, Count, CountDocuments, CreateCollection, CreateIndex, CreateIndexes,
    Delete, Distinct, DropCollection, DropDatabase, DropIndex, EstimatedDocumentCount, Find,
    FindOne, FindOneAndDelete, FindOneAndReplace, FindOneAndUpdate, InsertMany, InsertOne,
    ListCollections, ListDatabases, ListIndexes, ReplaceOne, RunCommand, RunCursorCommand, Update,
};

/// An action that takes a per-operation timeout.
pub(crate) trait Timed: Sized {
    /// The action with `timeout` as its timeoutMS, when the test gave one.
    fn timed(self, timeout: Option<Duration>) -> Self;
}

macro_rules! timed {
    ($($action:ty),* $(,)?) => {
        $(
            impl Timed for $action {
                fn timed(self, timeout: Option<Duration>) -> Self {
                    match timeout {
                        Some(timeout) => self.timeout(timeout),
                        None => self,
                    }
                }
            }
        )*
    };
}

timed!(
    Aggregate<'_>,
    BulkWrite<'_, Document>,
    Count<'_, Document>,
    CountDocuments<'_, Document>,
    CreateCollection<'_>,
    CreateIndex<'_, Document>,
    CreateIndexes<'_, Document>,
    Delete<'_, Document>,
    Distinct<'_, Document>,
    DropCollection<'_, Document>,
    DropDatabase<'_>,
    DropIndex<'_, Document>,
    EstimatedDocumentCount<'_, Document>,
    Find<'_, Document>,
    FindOne<'_, Document>,
    FindOneAndDelete<'_, Document>,
    FindOneAndReplace<'_, Document>,
    FindOneAndUpdate<'_, Document>,
    InsertMany<'_, Document>,
    InsertOne<'_, Document>,
    ListCollections<'_>,
    ListCollections<'_, true>,
    ListDatabases<'_>,
    ListDatabases<'_, true>,
    ListIndexes<'_, Document>,
    ListIndexes<'_, Document, true>,
    ReplaceOne<'_, Document>,
    RunCommand<'_>,
    RunCursorCommand<'_>,
    Update<'_, Document>,
);

/// An action that can run in an explicit session (the `session` argument).
pub(crate) trait InSession<'a>: Sized {
    /// The action in `session`, when the test named one.
    fn in_session(self, session: Option<&'a mut steadfast::ClientSession>) -> Self;
}

macro_rules! in_session {
    ($($action:ty),* $(,)?) => {
        $(
            impl<'a> InSession<'a> for $action {
                fn in_session(self, session: Option<&'a mut steadfast::ClientSession>) -> Self {
                    match session {
                        Some(session) => self.session(session),
                        None => self,
                    }
                }
            }
        )*
    };
}

in_session!(
    BulkWrite<'a, Document>,
    Count<'a, Document>,
    CountDocuments<'a, Document>,
    CreateCollection<'a>,
    CreateIndex<'a, Document>,
    CreateIndexes<'a, Document>,
    Delete<'a, Document>,
    Distinct<'a, Document>,
    DropCollection<'a, Document>,
    DropDatabase<'a>,
    DropIndex<'a, Document>,
    FindOne<'a, Document>,
    FindOneAndDelete<'a, Document>,
    FindOneAndReplace<'a, Document>,
    FindOneAndUpdate<'a, Document>,
    InsertMany<'a, Document>,
    InsertOne<'a, Document>,
    ListDatabases<'a>,
    ListDatabases<'a, true>,
    ReplaceOne<'a, Document>,
    RunCommand<'a>,
    Update<'a, Document>,
);
