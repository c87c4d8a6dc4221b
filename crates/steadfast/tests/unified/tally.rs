//! Counting a suite's results per case (test x topology) and per test.

use crate::skips::Key;

/// Passed, failed and skipped counts, of cases or of tests.
#[derive(Default, Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) passed: usize,
    pub(crate) failed: usize,
    pub(crate) skipped: usize,
}

/// The tally of one suite: cases (test x topology) and tests counted apart, so that a skip
/// rate cannot look smaller than it is.
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) cases: Counts,
    pub(crate) tests: Counts,
    /// Skipped tests: `file: description`, the table entry, the reason.
    pub(crate) skipped: Vec<(String, Key, String)>,
}

impl Tally {
    /// Records a test that ran on `cases.len()` topologies with these results (`true` for a
    /// pass): it passes if all its cases pass and fails if any fails.
    pub(crate) fn ran(&mut self, cases: &[bool]) {
        let failed = cases.iter().filter(|passed| !**passed).count();
        self.cases.passed += cases.len() - failed;
        self.cases.failed += failed;
        if failed == 0 {
            self.tests.passed += 1;
        } else {
            self.tests.failed += 1;
        }
    }

    /// Records a test that could not be run at all (unreadable file, malformed requirements):
    /// one failed test and one failed case.
    pub(crate) fn broken(&mut self) {
        self.ran(&[false]);
    }

    /// Records a test skipped before topology expansion: one skipped test, and `cases`
    /// skipped cases (the topologies it would have run on).
    pub(crate) fn skip(&mut self, test: String, key: Key, reason: String, cases: usize) {
        self.cases.skipped += cases;
        self.tests.skipped += 1;
        self.skipped.push((test, key, reason));
    }

    /// The `spec-suite` line.
    pub(crate) fn line(&self, suite: &str) -> String {
        let (c, t) = (self.cases, self.tests);
        format!(
            "spec-suite {suite}: {} passed, {} failed, {} skipped (tests: {} passed, {} failed, {} skipped)",
            c.passed, c.failed, c.skipped, t.passed, t.failed, t.skipped
        )
    }
}
