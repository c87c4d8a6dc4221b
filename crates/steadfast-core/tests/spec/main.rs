//! Runs the official JSON specification suites against the pure core.
//!
//! The suites are read from the folder named by `STEADFAST_SPEC_TESTS` (default
//! `../shared/spec-tests` relative to the workspace root); nothing is copied into the repository.
//! Each suite prints `spec-suite <suite>/<subdir>: N passed, N failed, N skipped`, lists every
//! skip with its reason, and fails when it found no files or any case failed.
#![allow(
    clippy::disallowed_methods,
    reason = "tests and examples drive the clock, tasks and randomness themselves"
)]

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
    std::process::exit(suites.finish());
}
