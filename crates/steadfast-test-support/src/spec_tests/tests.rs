use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::{Layout, LocateError, SpecTests, json_files, skip_line};

/// A directory under the system's temporary folder, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "steadfast-spec-tests-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the temporary directory");
        TempDir(dir)
    }

    fn mkdir(&self, relative: &str) -> PathBuf {
        let dir = self.0.join(relative);
        std::fs::create_dir_all(&dir).expect("create a directory");
        dir
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn locate_set(workspace: &Path, value: &Path) -> Result<Option<SpecTests>, LocateError> {
    SpecTests::locate(workspace, Some(value.as_os_str()))
}

/// Every folder the harnesses read, in the flat layout's names.
const HARNESS_SUITES: &[&str] = &[
    "server-selection/server_selection",
    "server-selection/rtt",
    "server-selection/in_window",
    "max-staleness",
    "connection-string",
    "uri-options",
    "server-discovery-and-monitoring/rs",
    "server-discovery-and-monitoring/unified",
    "retryable-writes/unified",
    "retryable-reads/unified",
    "client-backpressure",
    "sessions",
    "client-side-operations-timeout",
    "connection-monitoring-and-pooling/cmap-format",
];

#[test]
fn flat_layout_maps_every_harness_suite_to_its_own_name() {
    let temp = TempDir::new("flat");
    for suite in HARNESS_SUITES {
        temp.mkdir(&format!("spec-tests/{suite}"));
    }
    let root = temp.0.join("spec-tests");
    let found = locate_set(&temp.0, &root)
        .expect("a flat folder is accepted")
        .expect("a set variable always locates or fails");
    assert_eq!(found.layout(), Layout::Flat);
    for suite in HARNESS_SUITES {
        let dir = found.suite_dir(suite);
        assert_eq!(dir, root.join(suite));
        assert!(dir.is_dir(), "{suite}");
    }
}

#[test]
fn specifications_checkout_maps_every_harness_suite_under_source_tests() {
    let temp = TempDir::new("checkout");
    let checkout = temp.0.join("specifications");
    for suite in HARNESS_SUITES {
        let (spec, folder) = suite.split_once('/').unwrap_or((suite, ""));
        temp.mkdir(&format!("specifications/source/{spec}/tests/{folder}"));
    }
    let found = locate_set(&temp.0, &checkout)
        .expect("a checkout is accepted")
        .expect("a set variable always locates or fails");
    assert_eq!(found.layout(), Layout::Specifications);
    assert_eq!(
        found.suite_dir("retryable-writes/unified"),
        checkout.join("source/retryable-writes/tests/unified")
    );
    assert_eq!(
        found.suite_dir("sessions"),
        checkout.join("source/sessions/tests")
    );
    for suite in HARNESS_SUITES {
        assert!(found.suite_dir(suite).is_dir(), "{suite}");
    }
}

#[test]
fn a_set_variable_naming_an_empty_folder_is_an_error() {
    let temp = TempDir::new("empty");
    let empty = temp.mkdir("empty");
    let error = locate_set(&temp.0, &empty).expect_err("an empty folder holds no suites");
    assert!(matches!(error, LocateError::NoSuites { .. }), "{error}");
    assert!(
        error.to_string().contains("STEADFAST_SPEC_TESTS"),
        "{error}"
    );
}

#[test]
fn a_set_variable_naming_a_missing_folder_is_an_error() {
    let temp = TempDir::new("missing");
    let error =
        locate_set(&temp.0, &temp.0.join("nowhere")).expect_err("a missing folder is an error");
    assert!(matches!(error, LocateError::Missing { .. }), "{error}");
}

#[test]
fn a_set_but_empty_variable_is_an_error() {
    let temp = TempDir::new("blank");
    let error = SpecTests::locate(&temp.0, Some(OsStr::new("")))
        .expect_err("the workspace root itself holds no suites");
    assert!(matches!(error, LocateError::NoSuites { .. }), "{error}");
}

#[test]
fn a_relative_variable_is_relative_to_the_workspace_root() {
    let temp = TempDir::new("relative");
    let workspace = temp.mkdir("workspace");
    temp.mkdir("elsewhere/sessions");
    let found = SpecTests::locate(&workspace, Some(OsStr::new("../elsewhere")))
        .expect("the relative folder exists")
        .expect("a set variable always locates or fails");
    assert_eq!(
        found.suite_dir("sessions"),
        workspace.join("../elsewhere/sessions")
    );
}

#[test]
fn unset_without_the_default_folder_finds_nothing() {
    let temp = TempDir::new("unset-absent");
    let workspace = temp.mkdir("workspace");
    let found = SpecTests::locate(&workspace, None).expect("absence is not an error");
    assert!(found.is_none());
}

#[test]
fn unset_with_the_default_folder_uses_it() {
    let temp = TempDir::new("unset-present");
    let workspace = temp.mkdir("workspace");
    temp.mkdir("shared/spec-tests/retryable-writes/unified");
    let found = SpecTests::locate(&workspace, None)
        .expect("the default folder holds a suite")
        .expect("the default folder exists");
    assert_eq!(
        found.suite_dir("retryable-writes/unified"),
        workspace.join("../shared/spec-tests/retryable-writes/unified")
    );
}

#[test]
fn the_skip_line_names_the_suite_and_how_to_get_the_suites() {
    assert_eq!(
        skip_line("sessions"),
        "spec-suite sessions: skipped: the official test suites were not found (set \
         STEADFAST_SPEC_TESTS to a checkout of github.com/mongodb/specifications or its \
         spec-tests folder)"
    );
}

#[test]
fn json_files_lists_only_json_sorted() {
    let temp = TempDir::new("json");
    for name in ["b.json", "a.json", "a.yml", "README.md"] {
        std::fs::write(temp.0.join(name), "{}").expect("write a file");
    }
    temp.mkdir("nested.json.d");
    let files = json_files(&temp.0).expect("the directory exists");
    assert_eq!(files, vec![temp.0.join("a.json"), temp.0.join("b.json")]);
}

/// Writes an empty JSON file at `relative` under `root`, creating its folders.
fn touch_json(root: &Path, relative: &str) {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("create the folders");
    std::fs::write(path, "{}").expect("write a file");
}

#[test]
fn json_folders_name_every_folder_with_json_files_in_the_flat_names_of_both_layouts() {
    let temp = TempDir::new("folders");
    let flat = temp.0.join("flat");
    touch_json(&flat, "sessions/a.json");
    touch_json(&flat, "crud/unified/b.json");
    touch_json(&flat, "crud/README.md");
    temp.mkdir("flat/empty/inner");
    let checkout = temp.0.join("checkout");
    touch_json(&checkout, "source/sessions/tests/a.json");
    touch_json(&checkout, "source/crud/tests/unified/b.json");
    touch_json(&checkout, "source/crud/crud.json");
    let names = |root: &Path| -> Vec<String> {
        let found = locate_set(&temp.0, root)
            .expect("accepted")
            .expect("located");
        found
            .json_folders()
            .expect("readable")
            .into_iter()
            .map(|(name, path)| {
                assert!(path.is_dir(), "{}", path.display());
                name
            })
            .collect()
    };
    // `sessions` is one of the known specs, so both folders are accepted as spec folders.
    assert_eq!(names(&flat), ["crud/unified", "sessions"]);
    assert_eq!(names(&checkout), ["crud/unified", "sessions"]);
}
