//! Programs written in the official `mongodb` crate's idiom, compiled against steadfast: each
//! area's module shows that such code ports by renaming the crate, and runs against an
//! embedded blackpipe where it can.
#![allow(
    clippy::disallowed_methods,
    reason = "tests drive the clock, tasks and randomness themselves"
)]

mod aws;
mod change_streams;
mod client;
mod client_bulk;
mod errors;
mod gridfs;
mod management;
mod oidc;
mod options;
mod program;
mod sync;
mod transactions;
