//! steadfast: a MongoDB driver for Rust built to keep working through elections, stepdowns,
//! dropped connections and overloaded servers.
//!
//! A [`Client`] discovers and monitors the deployment (standalone, replica set, sharded
//! cluster, load balancer), keeps a connection pool per server, and runs every operation
//! through one executor that selects a server, attaches the session and cluster time, sends
//! the command and, when it fails, retries what the MongoDB specifications (and the chosen
//! [retry policy](retries)) allow — see [`retries`] for which operations retry and when, and
//! [`error`] for what a failed operation reports.
//!
//! ```no_run
//! # async fn demo() -> steadfast::Result<()> {
//! let client = steadfast::Client::with_uri_str("mongodb://127.0.0.1:27017").await?;
//! let reply = client.database("admin").run_command(bson::doc! { "ping": 1 }).await?;
//! assert_eq!(reply.get_f64("ok").ok(), Some(1.0));
//! client.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! # Transactions
//!
//! A [`ClientSession`] runs multi-document transactions:
//! [`start_transaction`](ClientSession::start_transaction) (with [`options::TransactionOptions`]),
//! [`commit_transaction`](ClientSession::commit_transaction) and
//! [`abort_transaction`](ClientSession::abort_transaction), or the whole transaction with its
//! retries through [`StartTransaction::and_run`] / [`StartTransaction::and_run2`]. Snapshot
//! sessions ([`SessionOptions::snapshot`]) read at one point in time.
//!
//! # Coming from the official `mongodb` crate
//!
//! Code written for `mongodb` 3.x compiles against steadfast once the crate name is changed
//! in `Cargo.toml` and the `use` lines: the same actions (`coll.find(filter).sort(..).await`),
//! option structs with `::builder()`, `ClientOptions`, `SelectionCriteria`, event handlers
//! and `match *error.kind { .. }`. steadfast adds, and does not rename: retry policies
//! ([`retries`]), per-operation `.timeout(..)`, [`Error::outcome`] (whether a failed write was
//! applied) and the partial results a failed write carries. `MIGRATING.md` in the repository
//! lists what still differs.
//!
//! # Examples
//!
//! The repository's `crates/steadfast/examples/` run against an embedded blackpipe
//! deployment (`cargo run -p steadfast --example <name>`): `quickstart`, `typed_documents`,
//! `failover` (a stepdown in the middle of writes), `change_stream_failover` (a change-stream
//! consumer that sees every insert once, in order, through a failover; see
//! [`change_stream`]), `retry_policies` and `timeouts`.
#![cfg_attr(
    test,
    allow(
        clippy::disallowed_methods,
        reason = "tests drive the clock, tasks and randomness themselves"
    )
)]

// First: the action macros it defines are used by `client_bulk` and `gridfs`.
#[macro_use]
pub mod action;
mod adaptive;
pub mod atlas_search;
mod auth;
mod bulk;
pub mod change_stream;
mod client;
mod client_bulk;
mod coll;
mod conn;
mod cursor;
mod db;
pub mod error;
pub mod event;
mod executor;
mod features;
pub mod gridfs;
mod handshake;
pub mod logging;
mod namespace;
mod operation;
pub mod options;
pub mod otel;
/// One server's connection pool used on its own (conformance tests, tools); applications use
/// [`Client`]. Not a stable API.
#[doc(hidden)]
pub mod pool;
pub mod raw_batch_cursor;
pub mod recipes;
pub mod results;
pub mod retries;
mod runtime;
mod sdam;
pub mod search_index;
pub mod session;
#[cfg(feature = "sync")]
pub mod sync;

pub use action::StartSession;
pub use bson;
pub use bulk::models::{DeleteModel, InsertOneModel, ReplaceOneModel, UpdateModel, WriteModel};
#[doc(hidden)]
pub use client::BackgroundTasks;
pub use client::{Client, ClientBuilder, ClientOptions};
pub use coll::Collection;
pub use conn::config::ServerApi;
pub use cursor::{Cursor, SessionCursor, SessionCursorStream};
pub use db::Database;
pub use error::{Error, ErrorKind, Result};
pub use handshake::metadata::DriverInfo;
pub use namespace::Namespace;
pub use options::IndexModel;
pub use search_index::{SearchIndexModel, SearchIndexType};
pub use session::{
    AbortTransaction, ClientSession, ClusterTime, CommitTransaction, SessionOptions,
    StartTransaction, TransactionState,
};
pub use steadfast_core::options::Credential;
pub use steadfast_core::selection::ServerInfo;
/// A boxed future, as the official driver names it (`futures_util`'s).
pub type BoxFuture<'a, T> = futures_util::future::BoxFuture<'a, T>;
/// The kind of deployment the client sees (also `event::sdam::TopologyType`).
pub use steadfast_core::description::TopologyType;
pub use steadfast_core::{ServerAddress, ServerType};
