//! Change streams: `watch()` on a [`Client`](crate::Client), [`Database`](crate::Database) or
//! [`Collection`](crate::Collection) returns a [`ChangeStream`] of the changes made there,
//! which resumes by itself after the errors an election or a lost connection cause.
//!
//! # Resuming
//! After a resumable `getMore` error (a network error, `CursorNotFound`, or a server error
//! labelled `ResumableChangeStreamError` — from 4.4 on; older servers: the change streams
//! specification's code list), the stream selects a server again with its read preference,
//! kills the old cursor and runs its `aggregate` again from its cached resume token, once per
//! error: the events after the last one returned come next, none lost and none repeated. Any
//! other error ends the stream ([`ChangeStream::is_alive`] turns false).
//!
//! An overloaded server's refusal (`SystemOverloadedError`, code 462) is not resumable: the
//! `getMore` is retried with backoff as the client backpressure specification says, and once
//! those retries are spent the error reaches the application. A consumer that must ride out
//! overload opens a new stream with `resume_after(token)`, `token` being the last
//! [`ChangeStream::resume_token`] it read: no event is lost or repeated that way either
//! (`steadfast torture --consumer` does exactly this and checks it).
//!
//! # Keeping the resume token
//! [`ChangeStream::resume_token`] is the token a resume would use: after each event, and also
//! after empty batches (the server's post-batch token), so polling with
//! [`ChangeStream::next_if_any`] keeps it current while nothing happens. An application that
//! stores tokens to restart later should store this one, read after each call.
//!
//! # Timeouts
//! timeoutMS applies to the opening `aggregate` and to each call that waits for an event
//! (iteration mode), resume included; `max_await_time` must then be below it. When a call
//! runs out of time the stream stays alive: call it again (it resumes first), or drop the
//! stream and open a new one. If it times out before any event arrived, the server may be
//! too slow to scan its oplog: open the stream again with a larger timeout.
//!
//! # Example: a consumer that survives a failover
//! The example `change_stream_failover` (`cargo run -p steadfast --example
//! change_stream_failover`) runs this against a blackpipe replica set whose primary steps
//! down and is killed mid-stream, and checks that every insert arrives once, in order.
//!
//! ```no_run
//! use futures_util::TryStreamExt;
//! use steadfast::bson::{Document, doc};
//! use steadfast::change_stream::event::OperationType;
//!
//! # async fn demo(client: steadfast::Client) -> steadfast::Result<()> {
//! let orders = client.database("shop").collection::<Document>("orders");
//! let mut stream = orders
//!     .watch()
//!     .pipeline([doc! { "$match": { "operationType": "insert" } }])
//!     .await?;
//! // Elections and dropped connections are resumed inside `try_next`: each insert arrives
//! // exactly once, in order.
//! while let Some(event) = stream.try_next().await? {
//!     if event.operation_type == OperationType::Insert {
//!         println!("new order: {:?}", event.full_document);
//!     }
//!     // Where to restart from after a crash of this program.
//!     let _checkpoint = stream.resume_token();
//! }
//! # Ok(())
//! # }
//! ```

pub(crate) mod core;
pub mod event;
pub mod session;
mod stream;

pub use stream::ChangeStream;
