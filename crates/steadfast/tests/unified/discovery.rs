//! Suites are discovered, not only listed: every folder of unified-format tests under the spec
//! root must be one the runner runs, so that a suite added to the specifications cannot be
//! silently ignored.

use std::path::Path;

use steadfast_test_support::spec_tests::{self, SpecTests};

/// The folders of unified-format test files under the root that are not in `known`, or why the
/// root could not be read.
pub(crate) fn unknown_suites(spec: &SpecTests, known: &[&str]) -> Result<Vec<String>, String> {
    let folders = spec
        .json_folders()
        .map_err(|error| format!("cannot list the spec test folders: {error}"))?;
    let mut unknown = Vec::new();
    for (name, path) in folders {
        if !known.contains(&name.as_str()) && holds_unified_tests(&path)? {
            unknown.push(name);
        }
    }
    Ok(unknown)
}

/// Whether a file of `dir` is a unified-format test file: an object with `schemaVersion` and
/// `tests` (the format's schemas, beside its tests, have neither).
fn holds_unified_tests(dir: &Path) -> Result<bool, String> {
    let files = spec_tests::json_files(dir)
        .map_err(|error| format!("cannot read {}: {error}", dir.display()))?;
    for file in files {
        let text = std::fs::read_to_string(&file)
            .map_err(|error| format!("cannot read {}: {error}", file.display()))?;
        if is_unified_test_file(&text) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Whether `text` is a unified-format test file.
pub(crate) fn is_unified_test_file(text: &str) -> bool {
    // Most JSON files of other formats never name the key: skip parsing them.
    text.contains("\"schemaVersion\"")
        && serde_json::from_str::<serde_json::Value>(text).is_ok_and(|file| {
            file.get("schemaVersion")
                .is_some_and(serde_json::Value::is_string)
                && file.get("tests").is_some_and(serde_json::Value::is_array)
        })
}

/// The runner's self-test of [`is_unified_test_file`].
pub(crate) fn recognises_unified_files() -> Result<(), String> {
    let cases = [
        (r#"{"schemaVersion": "1.0", "tests": []}"#, true),
        (r#"{"schemaVersion": "1.0"}"#, false),
        (
            r#"{"$schema": "x", "properties": {"schemaVersion": {}}}"#,
            false,
        ),
        (r#"{"tests": [], "data": []}"#, false),
        ("not json \"schemaVersion\"", false),
    ];
    for (text, unified) in cases {
        if is_unified_test_file(text) != unified {
            return Err(format!("{text} should be unified: {unified}"));
        }
    }
    Ok(())
}
