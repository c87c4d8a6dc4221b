//! Shared plumbing for the spec-suite runners: locating files, counting, reporting.

use std::path::{Path, PathBuf};

use steadfast_test_support::spec_tests::{self, SpecTests};

/// Outcome of one case.
pub(crate) enum Outcome {
    /// The case passed.
    Pass,
    /// The case failed; the message names the file, the phase and the field that differed.
    Fail(String),
    /// The case was not run, for the reason given (listed in one place per suite).
    // Not every registered suite has skips; until one does, nothing constructs this.
    #[allow(dead_code)]
    Skip(String),
}

/// The counts of one suite directory.
#[derive(Default)]
pub(crate) struct SuiteReport {
    pub(crate) passed: usize,
    pub(crate) failed: usize,
    pub(crate) skipped: usize,
    pub(crate) files: usize,
    pub(crate) messages: Vec<String>,
}

impl SuiteReport {
    /// Records the outcome of the case `name` in `file`.
    pub(crate) fn record(&mut self, file: &Path, name: &str, outcome: Outcome) {
        let file = file
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        match outcome {
            Outcome::Pass => self.passed += 1,
            Outcome::Fail(why) => {
                self.failed += 1;
                self.messages
                    .push(format!("  FAIL {file} :: {name}: {why}"));
            }
            Outcome::Skip(why) => {
                self.skipped += 1;
                self.messages
                    .push(format!("  skip {file} :: {name}: {why}"));
            }
        }
    }
}

/// Runs suites and aggregates their verdict.
pub(crate) struct Suites {
    filter: Option<String>,
    /// `None` when no spec test folder was found: every suite is skipped.
    spec: Option<SpecTests>,
    failed: bool,
}

impl Suites {
    /// Locates the spec test folder.
    ///
    /// # Panics
    /// When `STEADFAST_SPEC_TESTS` names a folder that is missing or holds no suites.
    pub(crate) fn new(filter: Option<String>) -> Self {
        Suites {
            filter,
            spec: SpecTests::from_env(),
            failed: false,
        }
    }

    /// The folder of `suite` (`<spec>` or `<spec>/<folder>`), if a spec test folder was found.
    pub(crate) fn suite_dir(&self, suite: &str) -> Option<PathBuf> {
        self.spec.as_ref().map(|spec| spec.suite_dir(suite))
    }

    /// Runs `run_file` over every JSON file of the suite's `<subdir>` and prints the line (or
    /// the skip line when no spec test folder was found).
    /// `run_file` records one outcome per case (a file may hold several cases).
    pub(crate) fn run(
        &mut self,
        suite: &str,
        subdir: &str,
        mut run_file: impl FnMut(&Path, &mut SuiteReport),
    ) {
        let label = if subdir.is_empty() {
            suite.to_string()
        } else {
            format!("{suite}/{subdir}")
        };
        if self
            .filter
            .as_ref()
            .is_some_and(|f| !label.contains(f.as_str()))
        {
            return;
        }
        let Some(dir) = self.suite_dir(&label) else {
            println!("{}", spec_tests::skip_line(&label));
            return;
        };
        let mut report = SuiteReport::default();
        for file in spec_tests::json_files(&dir).unwrap_or_default() {
            report.files += 1;
            run_file(&file, &mut report);
        }
        println!(
            "spec-suite {label}: {} passed, {} failed, {} skipped",
            report.passed, report.failed, report.skipped
        );
        for m in &report.messages {
            println!("{m}");
        }
        if report.files == 0 {
            println!("  ERROR no JSON files found in {}", dir.display());
            self.failed = true;
        }
        if report.failed > 0 {
            self.failed = true;
        }
    }

    /// Prints the overall verdict and returns the process exit code.
    pub(crate) fn finish(self) -> i32 {
        if self.failed {
            println!("spec suites: FAILED");
            1
        } else {
            println!("spec suites: ok");
            0
        }
    }
}

/// Reads and parses a JSON file, or records a failure for it.
pub(crate) fn read_json(file: &Path) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("read: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("parse: {e}"))
}
