//! The unified-test-format runner for the suites listed in [`SUITES`], run against blackpipe's
//! simulated deployments.
//!
//! Files are read at run time from the folder `steadfast_test_support::spec_tests` locates
//! (`$STEADFAST_SPEC_TESTS`, else `../shared/spec-tests` beside the workspace; flat or a
//! specifications checkout); without one, each suite prints one skip line. Each test runs
//! once on every blackpipe topology (replica set, sharded, single) its `runOnRequirements`
//! allow, on a fresh deployment; each such run is one case. Skips come only from the table in
//! `skips.rs`. The run prints one `spec-suite` line per suite and fails if a suite has no files
//! or any case fails. `STEADFAST_UNIFIED_FILTER=<text>` runs only the tests whose
//! `file: description` contains the text, `STEADFAST_UNIFIED_SUITE=<text>` only the suites whose
//! folder contains it; `STEADFAST_UNIFIED_VERBOSE=1` also lists passes.
#![allow(
    clippy::disallowed_methods,
    reason = "tests drive the clock, tasks and randomness themselves"
)]

mod args;
mod discovery;
mod ejson;
mod entities;
mod events;
mod expect_error;
mod fixture;
mod load_balanced;
mod logs;
mod matcher;
mod model;
mod observe;
mod oidc;
mod ops;
mod requirements;
mod runner;
mod selftest;
mod server_api;
mod skips;
mod spans;
mod tally;
mod valid_fail;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use model::{TestCase, TestFile};
use requirements::{Target, Version, satisfied_on};
use skips::Key;
use steadfast_test_support::spec_tests::{self, SpecTests};
use tally::Tally;

/// The suites, as folders under the spec test root.
const SUITES: &[&str] = &[
    "retryable-writes/unified",
    "retryable-reads/unified",
    "client-backpressure",
    "server-discovery-and-monitoring/unified",
    "sessions",
    "client-side-operations-timeout",
    "transactions/unified",
    "transactions-convenient-api/unified",
    "causal-consistency",
    "change-streams/unified",
    "crud/unified",
    "gridfs",
    "index-management",
    "collection-management",
    "run-command/unified",
    "versioned-api",
    "read-write-concern/operation",
    "load-balancers",
    "command-logging-and-monitoring/monitoring",
    "command-logging-and-monitoring/logging",
    "connection-monitoring-and-pooling/logging",
    "server-selection/logging",
    "auth/unified",
    "open-telemetry/operation",
    "open-telemetry/transaction",
    "unified-test-format/valid-pass",
    valid_fail::SUITE,
];

/// Bounds one case, so that a hang fails the case instead of the run.
const CASE_TIMEOUT: Duration = Duration::from_secs(60);

fn main() -> ExitCode {
    if let Some(code) = oidc::run_with_token_file() {
        return code;
    }
    logs::install();
    let (count, failures) = selftest::run();
    println!(
        "runner self-test: {} passed, {} failed",
        count - failures.len(),
        failures.len()
    );
    for failure in &failures {
        println!("FAILED  self-test {failure}");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot start a runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let version = match runtime.block_on(fixture::probe_version()) {
        Ok(version) => version,
        Err(error) => {
            eprintln!("cannot read blackpipe's server version: {error}");
            return ExitCode::FAILURE;
        }
    };
    println!("blackpipe reports server version {version}");
    let filter = std::env::var("STEADFAST_UNIFIED_FILTER").ok();
    let verbose = std::env::var_os("STEADFAST_UNIFIED_VERBOSE").is_some();
    let mut success = failures.is_empty();
    let mut lines = Vec::new();
    let mut skip_counts: BTreeMap<String, usize> = BTreeMap::new();
    let only_suite = std::env::var("STEADFAST_UNIFIED_SUITE").ok();
    let spec = SpecTests::from_env();
    for suite in SUITES {
        if only_suite.as_deref().is_some_and(|s| !suite.contains(s)) {
            continue;
        }
        let Some(dir) = spec.as_ref().map(|spec| spec.suite_dir(suite)) else {
            lines.push(spec_tests::skip_line(suite));
            continue;
        };
        let files = match spec_tests::json_files(&dir) {
            Ok(files) if !files.is_empty() => files,
            Ok(_) => {
                lines.push(format!(
                    "spec-suite {suite}: no test files found in {}",
                    dir.display()
                ));
                success = false;
                continue;
            }
            Err(error) => {
                lines.push(format!(
                    "spec-suite {suite}: cannot read {}: {error}",
                    dir.display()
                ));
                success = false;
                continue;
            }
        };
        let mut tally = Tally::default();
        let run = FileRun {
            runtime: &runtime,
            version,
            filter: filter.as_deref(),
            verbose,
            expect: Expect::of_suite(suite),
        };
        for path in &files {
            run.file(path, &mut tally);
        }
        for (name, key, reason) in &tally.skipped {
            println!("skipped {suite}/{name}: {reason}");
            *skip_counts.entry(format!("{key:?}")).or_default() += 1;
        }
        lines.push(tally.line(suite));
        success &= tally.tests.failed == 0;
    }
    if let Some(spec) = &spec {
        success &= no_unknown_suites(spec, &mut lines);
    }
    println!("skips by table entry:");
    for (key, reason) in skips::TABLE {
        let used = skip_counts.get(&format!("{key:?}")).copied().unwrap_or(0);
        println!("  {used:4}  {key:?}: {reason}");
    }
    for line in lines {
        println!("{line}");
    }
    if success {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Whether every folder of unified tests under the root is one of [`SUITES`]; adds a line
/// for each that is not.
fn no_unknown_suites(spec: &SpecTests, lines: &mut Vec<String>) -> bool {
    match discovery::unknown_suites(spec, SUITES) {
        Ok(unknown) => {
            for suite in &unknown {
                lines.push(format!(
                    "spec-suite {suite}: FAILED: a folder of unified tests this runner does not \
                     run (add it to SUITES, with skips for what cannot run)"
                ));
            }
            unknown.is_empty()
        }
        Err(error) => {
            lines.push(format!("spec-suite discovery FAILED: {error}"));
            false
        }
    }
}

/// What a suite's tests must do: pass, or (the unified format's `valid-fail` files) fail.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    Pass,
    Fail,
}

impl Expect {
    fn of_suite(suite: &str) -> Expect {
        if suite == valid_fail::SUITE {
            Expect::Fail
        } else {
            Expect::Pass
        }
    }
}

/// How the files of one suite are run.
struct FileRun<'a> {
    runtime: &'a tokio::runtime::Runtime,
    version: Version,
    filter: Option<&'a str>,
    verbose: bool,
    expect: Expect,
}

impl FileRun<'_> {
    /// Runs every test of one file, adding to `tally`.
    fn file(&self, path: &Path, tally: &mut Tally) {
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"));
        let file = match text.clone().and_then(|text| TestFile::parse(&text)) {
            Ok(file) => file,
            Err(error) => {
                self.unreadable(&name, text.ok().as_deref(), &error, tally);
                return;
            }
        };
        for test in &file.tests {
            let case = format!("{name}: {}", test.description);
            if self.filter.is_some_and(|f| !case.contains(f)) {
                continue;
            }
            let targets = match targets_for(&file, test, self.version) {
                Ok(Ok(targets)) => targets,
                Ok(Err((key, reason))) => {
                    let cases = would_run_on(&file, test, self.version);
                    tally.skip(case, key, reason, cases);
                    continue;
                }
                Err(error) => {
                    self.outcome(&case, "", &Err(error), None);
                    tally.ran(&[self.expect == Expect::Fail]);
                    continue;
                }
            };
            let results: Vec<bool> = targets
                .into_iter()
                .map(|target| self.case(&file, test, target, &case))
                .collect();
            tally.ran(&results);
        }
    }

    /// Runs one test on one target; whether it did what the suite expects.
    fn case(&self, file: &TestFile, test: &TestCase, target: Target, case: &str) -> bool {
        let started = std::time::Instant::now();
        let outcome = self.runtime.block_on(async {
            tokio::time::timeout(CASE_TIMEOUT, runner::run_case(file, test, target))
                .await
                .unwrap_or_else(|_| Err(format!("did not finish within {CASE_TIMEOUT:?}")))
        });
        self.outcome(case, &format!(" [{target}]"), &outcome, Some(started))
    }

    /// Prints a case's outcome as the suite judges it, and returns that judgement.
    fn outcome(
        &self,
        case: &str,
        target: &str,
        outcome: &Result<(), String>,
        started: Option<std::time::Instant>,
    ) -> bool {
        let took = started.map_or_else(String::new, |s| format!(" ({:.2?})", s.elapsed()));
        match (self.expect, outcome) {
            (Expect::Pass, Ok(())) => {
                if self.verbose {
                    println!("ok      {case}{target}{took}");
                }
                true
            }
            (Expect::Pass, Err(error)) => {
                println!("FAILED  {case}{target}: {error}");
                false
            }
            (Expect::Fail, Err(error)) => match valid_fail::judge(case, error) {
                Ok(()) => {
                    if self.verbose {
                        println!("ok      {case}{target}: failed as required: {error}");
                    }
                    true
                }
                Err(why) => {
                    println!("FAILED  {case}{target}: {why}");
                    false
                }
            },
            (Expect::Fail, Ok(())) => {
                println!("FAILED  {case}{target}: passed, but the file requires a failure");
                false
            }
        }
    }

    /// A file that cannot be read or parsed: each of its tests failed to run.
    fn unreadable(&self, name: &str, text: Option<&str>, error: &str, tally: &mut Tally) {
        let tests = text.map_or(1, valid_fail::count_tests);
        for _ in 0..tests {
            let judged = self.outcome(&format!("{name}: "), "", &Err(error.to_owned()), None);
            tally.ran(&[judged]);
        }
    }
}

/// How many cases a skipped test stands for: the topologies its requirements allow when the
/// skip came from the table's operation, entity or assertion entries (the requirements are
/// met), and 1 when the requirements themselves excluded it (no topology is known then).
fn would_run_on(file: &TestFile, test: &TestCase, version: Version) -> usize {
    match requirement_targets(file, test, version) {
        Ok(Ok(targets)) if !targets.is_empty() => targets.len(),
        _ => 1,
    }
}

/// Where a test runs (topologies, each with or without authentication), or the skip-table
/// entry (and the reason with its detail) that excludes it.
fn targets_for(
    file: &TestFile,
    test: &TestCase,
    version: Version,
) -> Result<Result<Vec<Target>, (Key, String)>, String> {
    // A test the suite itself marks with a skipReason runs only once the table says why it
    // may be skipped.
    if let Some((key, reason, detail)) = test.static_skip(file) {
        return Ok(Err((key, format!("{reason} ({detail})"))));
    }
    let targets = requirement_targets(file, test, version)?;
    // Checked once the requirements are met: a test that cannot run here anyway is skipped
    // for that reason.
    if let (Ok(_), Some(reason)) = (&targets, &test.skip_reason) {
        return Err(format!(
            "the test has skipReason {reason:?}, which no table entry covers"
        ));
    }
    Ok(targets)
}

/// The targets the file's and the test's `runOnRequirements` allow, or the requirement that
/// excludes the test.
fn requirement_targets(
    file: &TestFile,
    test: &TestCase,
    version: Version,
) -> Result<Result<Vec<Target>, (Key, String)>, String> {
    let from_file = satisfied_on(file.run_on.as_ref(), version)?;
    let from_test = satisfied_on(test.run_on.as_ref(), version)?;
    let (file_topologies, test_topologies) = match (from_file, from_test) {
        (Ok(f), Ok(t)) => (f, t),
        (Err(unmet), _) | (_, Err(unmet)) => return Ok(Err(unmet_reason(&unmet))),
    };
    // Absent an `auth` requirement, the deployment runs without authentication.
    let both: Vec<Target> = file_topologies
        .into_iter()
        .filter_map(|(topology, file_auth)| {
            let (_, test_auth) = test_topologies.iter().find(|(t, _)| *t == topology)?;
            let need = file_auth.and(*test_auth)?;
            let oidc = need == requirements::AuthNeed::Oidc;
            let auth = oidc || need == requirements::AuthNeed::Required;
            Some(Target {
                topology,
                auth,
                oidc,
            })
        })
        .collect();
    if both.is_empty() {
        let unmet = requirements::Unmet {
            key: Key::Requirement("topologies"),
            detail: "the file's and the test's requirements (topologies, auth) do not overlap"
                .to_owned(),
        };
        return Ok(Err(unmet_reason(&unmet)));
    }
    Ok(Ok(both))
}

fn unmet_reason(unmet: &requirements::Unmet) -> (Key, String) {
    let reason = skips::reason(unmet.key).unwrap_or("(no entry in the skip table)");
    (unmet.key, format!("{reason} ({})", unmet.detail))
}
