//! The unified-test-format runner for the `retryable-writes/unified`, `retryable-reads/unified`
//! and `client-backpressure` suites, run against blackpipe's simulated deployments.
//!
//! Files are read at run time from `$STEADFAST_SPEC_TESTS` (default `../shared/spec-tests`
//! from the workspace root; a relative value is relative to the workspace root). Each test runs
//! once on every blackpipe topology (replica set, sharded, single) its `runOnRequirements`
//! allow, on a fresh deployment. Skips come only from the table in `skips.rs`. The run prints
//! one `spec-suite` line per suite and fails if a suite has no files or any case fails.
//! `STEADFAST_UNIFIED_FILTER=<text>` runs only the tests whose `file: description` contains it.

// The operations are wired to the driver as its CRUD API and executor land.
#![allow(dead_code)]

mod ejson;
mod events;
mod expect_error;
mod fixture;
mod matcher;
mod model;
mod observe;
mod requirements;
mod selftest;
mod skips;

use std::process::ExitCode;

fn main() -> ExitCode {
    let (count, failures) = selftest::run();
    println!(
        "runner self-test: {} passed, {} failed",
        count - failures.len(),
        failures.len()
    );
    for failure in &failures {
        println!("FAILED  self-test {failure}");
    }
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
