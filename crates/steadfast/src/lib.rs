//! steadfast: a MongoDB driver for Rust built to keep working through elections, stepdowns,
//! dropped connections and overloaded servers.
//!
//! This is the foundation stage: connections (TCP, TLS), the handshake, SCRAM authentication,
//! the [`Error`] type, and a first [`Client`] that talks to a single server:
//!
//! ```no_run
//! # async fn demo() -> steadfast::Result<()> {
//! let client = steadfast::Client::with_uri_str("mongodb://127.0.0.1:27017").await?;
//! let reply = client.database("admin").run_command(bson::doc! { "ping": 1 }).await?;
//! assert_eq!(reply.get_f64("ok").ok(), Some(1.0));
//! # Ok(())
//! # }
//! ```

mod auth;
mod client;
mod coll;
mod conn;
mod cursor;
mod db;
pub mod error;
pub mod event;
mod handshake;
mod operation;
pub mod options;
/// One server's connection pool used on its own (conformance tests, tools); applications use
/// [`Client`]. Not a stable API.
#[doc(hidden)]
pub mod pool;
pub mod results;
mod runtime;
mod sdam;

pub use client::Client;
pub use coll::{
    Collection, DeleteModel, InsertOneModel, Namespace, ReplaceOneModel, UpdateModel, WriteModel,
};
pub use conn::config::ServerApi;
pub use db::Database;
pub use error::{Error, ErrorKind, Result};
pub use handshake::metadata::DriverInfo;
pub use steadfast_core::options::{ClientOptions, Credential};
