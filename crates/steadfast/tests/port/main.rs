//! Port tests: programs written in the official `mongodb` crate's idiom, compiled (and where
//! possible run against an embedded blackpipe) against steadfast.
#![allow(
    clippy::disallowed_methods,
    reason = "tests drive the clock, tasks and randomness themselves"
)]

mod errors;
