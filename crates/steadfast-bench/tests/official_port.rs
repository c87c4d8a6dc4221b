//! The port program of steadfast's tests (`crates/steadfast/tests/port/library.rs`), compiled
//! and run with the official `mongodb` crate standing in for steadfast: the program is the
//! official driver's idiom, and both drivers must give it the same results.

#![allow(
    clippy::disallowed_methods,
    reason = "the program drives tasks as an application would"
)]

// The program names its driver `steadfast`; here that name is the official crate.
extern crate mongodb as steadfast;

include!("../../steadfast/tests/port/library.rs");

#[tokio::test]
async fn the_port_program_runs_the_same_with_the_official_driver() {
    run_library_against_blackpipe().await;
}
