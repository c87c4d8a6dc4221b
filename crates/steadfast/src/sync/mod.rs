//! The blocking API (cargo feature `sync`), shaped as the official driver's `mongodb::sync`:
//! a program with no async runtime of its own uses MongoDB through [`Client`],
//! [`Database`], [`Collection`], [`Cursor`], [`SessionCursor`], [`ClientSession`],
//! [`ChangeStream`], [`SessionChangeStream`] and [`gridfs::GridFsBucket`], and finishes every action with `.run()`
//! instead of `.await`.
//!
//! The handles wrap the async ones and build the same actions, so options, setters,
//! timeouts, retries, transactions and change-stream resumption are the async API's. They
//! run on one process-wide multi-thread tokio runtime, started on first use: its workers run
//! the clients' monitors and pools, and each blocking call drives its own operation on the
//! calling thread.
//!
//! ```no_run
//! use steadfast::bson::{Document, doc};
//! use steadfast::sync::Client;
//!
//! fn main() -> steadfast::error::Result<()> {
//!     let client = Client::with_uri_str("mongodb://127.0.0.1:27017/?replicaSet=rs0")?;
//!     let orders = client.database("shop").collection::<Document>("orders");
//!     orders.insert_one(doc! { "sku": "pen", "qty": 2 }).run()?;
//!     for order in orders.find(doc! { "sku": "pen" }).run()? {
//!         println!("{}", order?);
//!     }
//!     let mut session = client.start_session().run()?;
//!     session.start_transaction().and_run(&orders, |session, orders| {
//!         orders
//!             .update_one(doc! { "sku": "pen" }, doc! { "$inc": { "qty": 1 } })
//!             .session(&mut *session)
//!             .run()?;
//!         Ok(())
//!     })?;
//!     client.shutdown().run();
//!     Ok(())
//! }
//! ```
//!
//! # Errors
//! Every blocking call fails as its async counterpart does, and with `InvalidArgument` when
//! it is made from inside an async runtime (a thread of a tokio runtime, or inside
//! `block_on`): blocking there could deadlock the runtime, so the call refuses instead of
//! panicking; use the async API there.

mod actions;
mod change_stream;
mod client;
mod coll;
mod cursor;
mod db;
pub mod gridfs;
pub(crate) mod runtime;
mod session;
#[cfg(test)]
mod tests;

pub use change_stream::{ChangeStream, SessionChangeStream};
pub use client::Client;
pub use coll::Collection;
pub use cursor::{Cursor, SessionCursor, SessionCursorIter};
pub use db::Database;
pub use session::ClientSession;
