//! The operation builders ("actions") returned by `Collection`, `Database` and `Client`
//! methods: one file per family holds the builders, their `IntoFuture` and the handle methods
//! that return them. The actions of a `ClientSession`'s transactions and of a GridFS bucket
//! live beside what runs them and are re-exported here. Each action is configured with
//! chainable setters and runs when awaited (`IntoFuture`), like the official driver's
//! actions: `coll.find(filter).sort(doc! {..}).limit(5).await?`.
//!
//! # Errors
//! Awaiting an action fails with `InvalidArgument` for arguments rejected before anything is
//! sent (an empty `insert_many`, an update document without operators, a replacement with
//! them, a document over the server's `maxBsonObjectSize`), `Write` (single-statement writes),
//! `InsertMany` or `BulkWrite` for write errors and write concern errors (with the server's
//! codes and messages, at the caller's positions), `Command` for `ok: 0` replies, and the
//! executor's server selection errors and `Io` errors (network failures and timeouts), each
//! carrying the retry history.
//!
//! # Cancel safety
//! Dropping an action's future abandons the operation: a command in flight may or may not have
//! run (the connection it used is closed). A bulk write (or `insert_many`) keeps the batches
//! already acknowledged; a retryable write resent later with a new call gets a new
//! transaction number, so it is not deduplicated against the abandoned one.

/// Chainable setters that fill the action's `options` struct, one per option field. As in the
/// official driver, a field marked `#[into]` takes `impl Into<Type>` and a list field marked
/// `#[iter]` (given its element type) takes `impl IntoIterator<Item = Element>`.
macro_rules! option_setters {
    ($options:ident; $($field:ident : $(#[$into:ident])? $ty:ty),* $(,)?) => {
        $(
            option_setters!(@one $options, $field, $ty $(, $into)?);
        )*
    };
    (@one $options:ident, $field:ident, $ty:ty, iter) => {
        #[doc = concat!("Sets [`", stringify!($options), "::", stringify!($field), "`](crate::options::", stringify!($options), "::", stringify!($field), ").")]
        pub fn $field(mut self, values: impl IntoIterator<Item = $ty>) -> Self {
            self.options.$field = Some(values.into_iter().collect());
            self
        }
    };
    (@one $options:ident, $field:ident, $ty:ty, into) => {
        #[doc = concat!("Sets [`", stringify!($options), "::", stringify!($field), "`](crate::options::", stringify!($options), "::", stringify!($field), ").")]
        pub fn $field(mut self, value: impl Into<$ty>) -> Self {
            self.options.$field = Some(value.into());
            self
        }
    };
    (@one $options:ident, $field:ident, $ty:ty) => {
        #[doc = concat!("Sets [`", stringify!($options), "::", stringify!($field), "`](crate::options::", stringify!($options), "::", stringify!($field), ").")]
        pub fn $field(mut self, value: $ty) -> Self {
            self.options.$field = Some(value);
            self
        }
    };
}

/// `timeout` and `retry_policy` for an action with an `overrides` field
/// ([`OperationOverrides`](crate::operation::settings::OperationOverrides)).
macro_rules! operation_overrides {
    () => {
        /// Sets timeoutMS for this operation alone, over the session's `default_timeout` and
        /// the collection's, database's and client's timeout (`Duration::ZERO`: no limit).
        /// Server selection, connection check-out, every attempt and the waits between
        /// retries all fit in it; the server gets what is left as `maxTimeMS`. Under a
        /// timeout, the operation's `max_time`, socketTimeoutMS, waitQueueTimeoutMS and
        /// `wtimeout` are ignored. Once it expires the operation fails with a timeout error
        /// ([`Error::is_timeout`](crate::Error::is_timeout)) whose source is the last
        /// attempt's error.
        pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
            self.overrides.timeout = Some(timeout);
            self
        }

        /// Sets the retry policy for this operation alone, over the handle's and the
        /// client's. A policy can only narrow or delay what the specifications allow.
        pub fn retry_policy(
            mut self,
            policy: std::sync::Arc<dyn crate::retries::RetryPolicy>,
        ) -> Self {
            self.overrides.retry_policy = Some(policy);
            self
        }

        /// Runs the operation within `deadline`, which the operation it is part of started
        /// (a GridFS operation's), instead of starting a deadline of its own.
        #[allow(
            dead_code,
            reason = "generated for every action; only the actions GridFS runs call it"
        )]
        pub(crate) fn within(mut self, deadline: steadfast_core::Deadline) -> Self {
            self.overrides.deadline = Some(deadline);
            self
        }
    };
}

/// `timeout_mode` for an action that opens a cursor and has an `overrides` field.
macro_rules! timeout_mode_setter {
    () => {
        /// Sets how the timeout applies to the cursor: to its whole life (the default for
        /// non-tailable cursors) or to each fetch (see
        /// [`TimeoutMode`](crate::options::TimeoutMode)). Requires a timeout (the operation's
        /// or an inherited one): awaiting fails with `InvalidArgument` otherwise, and for a
        /// mode the cursor cannot have.
        pub fn timeout_mode(mut self, mode: crate::options::TimeoutMode) -> Self {
            self.overrides.timeout_mode = Some(mode);
            self
        }
    };
}

/// `with_options` and `session` (and [`operation_overrides`]) for an action with `options`,
/// `session` and `overrides` fields.
macro_rules! options_and_session {
    ($options:ty) => {
        operation_overrides!();

        /// Replaces every option at once.
        pub fn with_options(mut self, options: impl Into<Option<$options>>) -> Self {
            self.options = options.into().unwrap_or_default();
            self
        }

        /// Runs the operation in an explicit session.
        pub fn session(mut self, session: &'a mut crate::session::ClientSession) -> Self {
            self.session = Some(session);
            self
        }
    };
}

/// `IntoFuture` for an action whose `execute(self)` async method produces the result, and
/// (with the `sync` feature) its blocking `run`.
macro_rules! action_future {
    ($action:ident<$lt:lifetime $(, $param:ident)*> $(where [$($bound:tt)+])? => $output:ty) => {
        impl<$lt $(, $param)*> std::future::IntoFuture for $action<$lt $(, $param)*>
        $(where $($bound)+)?
        {
            type Output = crate::error::Result<$output>;
            type IntoFuture = futures_util::future::BoxFuture<$lt, Self::Output>;

            fn into_future(self) -> Self::IntoFuture {
                Box::pin(self.execute())
            }
        }

        blocking_run!([$lt $(, $param)*] $action<$lt $(, $param)*> $(where [$($bound)+])? => $output);
    };
}

/// With the `sync` feature, an inherent `run(self)` for an action that implements
/// `IntoFuture<Output = Result<Async>>`: it blocks on the future in the
/// [`sync`](crate::sync) API's runtime and turns the output into `$sync`
/// (`From<Async>`: the identity, or a cursor, session or change stream's blocking wrapper).
macro_rules! blocking_run {
    ([$($generics:tt)*] $action:ty $(where [$($bound:tt)+])? => $sync:ty) => {
        #[cfg(feature = "sync")]
        impl<$($generics)*> $action
        $(where $($bound)+)?
        {
            /// Runs the action and blocks the calling thread until it completes (the
            /// [`sync`](crate::sync) API; awaiting the action is the async API's way).
            ///
            /// # Errors
            /// As awaiting the action; and `InvalidArgument` when called from inside an async
            /// runtime, where blocking could deadlock it (await the action there instead).
            pub fn run(self) -> crate::error::Result<$sync> {
                crate::sync::runtime::block_on(std::future::IntoFuture::into_future(self))
                    .map(<$sync>::from)
            }
        }
    };
}

mod action_trait;
mod aggregate;
mod bulk_write;
mod client_lifecycle;
mod count;
mod create_collection;
mod create_index;
mod delete;
mod distinct;
mod drop;
mod drop_index;
mod find;
mod find_and_modify;
mod insert_many;
mod insert_one;
mod list_collections;
mod list_databases;
mod list_indexes;
mod parse_connection_string;
mod replace_one;
mod run;
mod run_command;
mod search_index;
mod session;
mod update;
mod watch;

use crate::session::ClientSession;

pub use action_trait::Action;
pub use aggregate::Aggregate;
pub use bulk_write::{BulkWrite, ClientBulkWrite};
pub use client_lifecycle::{Shutdown, WarmConnectionPool};
pub use count::{Count, CountDocuments, EstimatedDocumentCount};
pub use create_collection::CreateCollection;
pub use create_index::{CreateIndex, CreateIndexes};
pub use delete::Delete;
pub use distinct::Distinct;
pub use drop::{DropCollection, DropDatabase};
pub use drop_index::DropIndex;
pub use find::{Find, FindOne};
pub use find_and_modify::{FindOneAndDelete, FindOneAndReplace, FindOneAndUpdate};
pub use insert_many::InsertMany;
pub use insert_one::InsertOne;
pub use list_collections::ListCollections;
pub use list_databases::ListDatabases;
pub use list_indexes::ListIndexes;
pub use parse_connection_string::ParseConnectionString;
pub use replace_one::ReplaceOne;
pub use run_command::{RunCommand, RunCursorCommand};
pub use search_index::{
    CreateSearchIndex, CreateSearchIndexes, DropSearchIndex, ListSearchIndexes, UpdateSearchIndex,
};
pub use session::StartSession;
pub use update::Update;
pub use watch::Watch;

// The transaction actions stay beside the session's transaction state, which runs them and
// which the convenient API (`and_run`) extends; exported here too, as the official driver does.
pub use crate::session::{AbortTransaction, CommitTransaction, StartTransaction};

// The GridFS actions stay in `gridfs/`: they run on the bucket's private parts (its files and
// chunks collections, the operation's deadline, the streams' constructors).
/// The actions of a [`GridFsBucket`](crate::gridfs::GridFsBucket).
pub mod gridfs {
    pub use crate::gridfs::action::{
        Delete, DeleteByName, Drop, Find, FindOne, OpenDownloadStream, OpenDownloadStreamByName,
        OpenUploadStream, Rename, RenameByName,
    };
}

/// Marker: the action runs on an implicit session (the default).
#[derive(Clone, Copy, Debug, Default)]
pub struct ImplicitSession;

/// Marker: the action runs in the caller's session.
#[derive(Debug)]
pub struct ExplicitSession<'a>(pub(crate) &'a mut ClientSession);
