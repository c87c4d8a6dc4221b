//! The unified format's `valid-fail` files: tests a runner must fail. Each validates against
//! the schema but breaks a rule of the format at run time (an undefined entity, an operation
//! that fails, a malformed argument or expectation); a runner that passes one has a check too
//! lax to trust. A test here counts as passed only when it fails for the reason its file is
//! about, so that an unrelated failure (a timeout, a server limit) cannot stand in for it.

/// The suite of files that must fail.
pub(crate) const SUITE: &str = "unified-test-format/valid-fail";

/// For each file, the words the runner's failure must contain: what the file tests.
const EXPECTED_FAILURES: &[(&str, &[&str])] = &[
    (
        "assertNumberConnectionsCheckedOut.json",
        &[
            "argument `client` is required",
            "connections must be an integer",
            "expected 1 connections checked out, found 0",
        ],
    ),
    (
        "entity-client-apiVersion-unsupported.json",
        &["is not a known version"],
    ),
    (
        "entity-collection-database-undefined.json",
        &["no entity named \"foo\""],
    ),
    (
        "entity-database-client-undefined.json",
        &["no entity named \"foo\""],
    ),
    (
        "entity-findCursor-malformed.json",
        &["argument `filter` is required"],
    ),
    ("entity-findCursor.json", &["no entity named \"cursor0\""]),
    (
        "entity-session-client-undefined.json",
        &["no entity named \"foo\""],
    ),
    (
        "ignoreResultAndError-malformed.json",
        &["argument `document` is required"],
    ),
    // These need client-side encryption, which steadfast does not have: the requirements skip
    // them, and a failure of another kind would not be theirs.
    ("kmsProviders-missing_aws_kms_credentials.json", &[]),
    ("kmsProviders-missing_gcp_kms_credentials.json", &[]),
    ("kmsProviders-no_kms.json", &[]),
    (
        "operation-failure.json",
        &[
            "unexpected error: command failed (CommandNotFound 59)",
            "unexpected error: command failed (BadValue 2): unknown top level operator",
        ],
    ),
    (
        "operation-unsupported.json",
        &["\"unsupportedOperation\" is not supported by this runner"],
    ),
    ("operator-matchAsDocument.json", &["expectResult field"]),
    ("operator-matchAsRoot.json", &["expectResult field"]),
    (
        "returnDocument-enum-invalid.json",
        &["returnDocument must be Before or After"],
    ),
];

/// The number of tests a file holds, read without the runner's model (whose parse may be what
/// fails): the length of its `tests` array, at least 1.
pub(crate) fn count_tests(text: &str) -> usize {
    serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|file| file.get("tests")?.as_array().map(Vec::len))
        .unwrap_or(1)
        .max(1)
}

/// Judges the failure of a `valid-fail` test (`case` is `<file>: <description>`): whether it
/// is a failure its file is about, or why not.
pub(crate) fn judge(case: &str, error: &str) -> Result<(), String> {
    let file = case.split_once(": ").map_or(case, |(file, _)| file);
    let Some((_, expected)) = EXPECTED_FAILURES.iter().find(|(name, _)| *name == file) else {
        return Err(format!(
            "a valid-fail file this runner has no expectation for (add what its failure must \
             say to valid_fail.rs); it failed with: {error}"
        ));
    };
    if expected.iter().any(|words| error.contains(words)) {
        Ok(())
    } else {
        Err(format!(
            "failed, but not as the file requires (expected one of {expected:?}): {error}"
        ))
    }
}

/// The runner's self-test of [`judge`] and [`count_tests`]: only the failure a file is about
/// counts, and a file nobody described fails.
pub(crate) fn judged_by_file() -> Result<(), String> {
    let cases: &[(&str, &str, bool)] = &[
        (
            "entity-findCursor-malformed.json: t",
            "createFindCursor: argument `filter` is required",
            true,
        ),
        (
            "entity-findCursor-malformed.json: t",
            "did not finish within 60s",
            false,
        ),
        (
            "operator-matchAsRoot.json: t",
            "no entity named \"x\"",
            false,
        ),
        ("a-new-file.json: t", "no entity named \"foo\"", false),
    ];
    for (case, error, counts) in cases {
        if judge(case, error).is_ok() != *counts {
            return Err(format!(
                "{case} failing with {error:?} should count: {counts}"
            ));
        }
    }
    let counted = [
        count_tests(r#"{"tests": [{}, {}, {}]}"#),
        count_tests(r#"{"tests": []}"#),
        count_tests("not json"),
    ];
    if counted != [3, 1, 1] {
        return Err(format!("count_tests gave {counted:?}, not [3, 1, 1]"));
    }
    Ok(())
}
