//! blackpipe: a MongoDB wire-protocol server for testing drivers.
//!
//! Two layers: a scripted server, where a test receives requests and decides each reply, and a
//! simulated deployment (standalone, replica set, sharded) with an in-memory store and mongod's
//! fail points. blackpipe depends on `steadfast-wire` for framing, on its own store
//! (`blackpipe-store`) and on `bson`: it builds every reply itself and never reuses the driver's SDAM or hello logic, so a bug cannot hide on
//! both sides of the wire.
//!
//! # Layers
//!
//! - [`server`]: the listener. It frames the wire protocol (OP_MSG with document sequences,
//!   legacy OP_QUERY hello, OP_COMPRESSED, exhaust streams) and hands each request to a
//!   [`server::Handler`] on the connection's own task, so one slow connection never delays
//!   another.
//! - [`scripted`]: a [`server::Handler`] driven by the test, like MockupDB: await a request and
//!   answer it, or install rules that answer on their own; every request is recorded.
//! - [`deployment`]: simulated standalones, replica sets and sharded clusters, which can
//!   require authentication ([`deployment::DeploymentConfig::with_user`]).
//! - [`auth`]: server-side SCRAM-SHA-1/256 and the per-connection authentication state.
//! - [`store`]: the in-memory document store the deployments serve, the `blackpipe-store`
//!   crate (pure and synchronous), re-exported.
//!
//! # A scripted test
//!
//! The official driver inserts a document; the test sees the request, checks that the documents
//! came as an OP_MSG document sequence, and decides the reply. The driver's handshakes and
//! monitoring are answered by the scripted server's default hello responder.
//!
//! ```
//! use blackpipe::scripted::{Matcher, ScriptedServer};
//! use bson::doc;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = ScriptedServer::start().await?;
//! let uri = format!("{}&serverSelectionTimeoutMS=5000", server.uri());
//! let client = mongodb::Client::with_uri_str(uri).await?;
//! let orders = client.database("shop").collection::<bson::Document>("orders");
//! let insert = tokio::spawn(async move { orders.insert_one(doc! { "item": "pen" }).await });
//!
//! let request = server.next_request(Matcher::command("insert").db("shop")).await?;
//! assert!(request.request().came_in_sequence("documents"));
//! request.reply(doc! { "n": 1 })?;
//! insert.await??;
//!
//! // Rules answer without the test: here, fail the next two finds, then let the test decide.
//! server
//!     .rule("find", blackpipe::server::Reaction::error(11600, "InterruptedAtShutdown", "bye"))
//!     .times(2);
//! # Ok(())
//! # }
//! ```

/// The README's examples (using blackpipe in Rust tests), compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeExamples;

pub mod auth;
pub mod deployment;
pub mod failpoint;
pub mod scripted;
pub mod server;

/// The in-memory document store the simulated deployment serves: the `blackpipe-store` crate,
/// re-exported so that `blackpipe::store::...` paths keep working.
pub use blackpipe_store as store;
