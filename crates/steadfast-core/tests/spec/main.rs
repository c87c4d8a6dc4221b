//! Runs the official JSON specification suites against the pure core.
//!
//! The suites are read from the folder that `steadfast_test_support::spec_tests` locates
//! (`STEADFAST_SPEC_TESTS`, else `../shared/spec-tests` beside the workspace; flat or a
//! specifications checkout); nothing is copied into the repository. Each suite prints
//! `spec-suite <suite>/<subdir>: N passed, N failed, N skipped`, lists every skip with its
//! reason, and fails when it found no files or any case failed. When no folder was found, each
//! suite prints one line saying it was skipped and the run passes.
#![allow(
    clippy::disallowed_methods,
    reason = "tests and examples drive the clock, tasks and randomness themselves"
)]

mod auth;
mod concern;
mod harness;
mod sdam;
mod sdam_events;
mod sdam_input;
mod selection;
mod uri;

fn main() {
    let filter = std::env::args().nth(1).filter(|a| !a.starts_with('-'));
    let mut suites = harness::Suites::new(filter);
    // Each suite module registers itself here as it is written.
    let _ = &mut suites;
    selection::run(&mut suites);
    uri::run(&mut suites);
    sdam::run(&mut suites);
    concern::run(&mut suites);
    auth::run(&mut suites);
    std::process::exit(suites.finish());
}
