//! Finds the official JSON test suites of the MongoDB specifications, for every harness.
//!
//! The suites are never copied into this repository. They are read from:
//! - the folder named by `STEADFAST_SPEC_TESTS` when it is set (a relative value is relative to
//!   the workspace root). A missing folder, or one holding none of the suites, is an error: CI
//!   sets the variable, and a wrong path must fail there rather than pass as a skip;
//! - otherwise `../shared/spec-tests` beside the workspace, when it exists;
//! - otherwise nowhere: each suite prints one [`skip_line`] and passes, so that a fresh clone's
//!   `cargo test --workspace` succeeds and says how to get the suites.
//!
//! Two layouts are accepted (see [`Layout`]): the flat `<spec>/<folder>` layout, and a checkout
//! of github.com/mongodb/specifications, where the same folder is `source/<spec>/tests/<folder>`.

use std::ffi::OsStr;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// The environment variable that names the folder of the suites.
pub const VARIABLE: &str = "STEADFAST_SPEC_TESTS";

/// The folder used when [`VARIABLE`] is unset, relative to the workspace root.
const DEFAULT_FOLDER: &str = "../shared/spec-tests";

/// Why a suite did not run when no folder was found.
pub const SKIP_REASON: &str = "the official test suites were not found (set STEADFAST_SPEC_TESTS \
     to a checkout of github.com/mongodb/specifications or its spec-tests folder)";

/// The specifications whose suites the harnesses run. A folder holding none of them is not a
/// spec test folder (an empty directory, a typo, the wrong level of a checkout).
pub const SPECS: &[&str] = &[
    "client-backpressure",
    "client-side-operations-timeout",
    "connection-monitoring-and-pooling",
    "connection-string",
    "initial-dns-seedlist-discovery",
    "max-staleness",
    "retryable-reads",
    "retryable-writes",
    "server-discovery-and-monitoring",
    "server-selection",
    "sessions",
    "uri-options",
];

/// How the suites are laid out under the root folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `<spec>/<folder>`, e.g. `retryable-writes/unified` (the shared spec-tests folder).
    Flat,
    /// A checkout of github.com/mongodb/specifications: `source/<spec>/tests/<folder>`, e.g.
    /// `source/retryable-writes/tests/unified`. Recognised by its `source` directory.
    Specifications,
}

/// A located folder of spec test suites.
#[derive(Debug, Clone)]
pub struct SpecTests {
    root: PathBuf,
    layout: Layout,
}

/// Why the configured folder cannot be used.
#[derive(Debug)]
pub enum LocateError {
    /// The path does not name a directory.
    Missing {
        /// Where the path came from (the variable or the default).
        origin: &'static str,
        /// The path, as resolved.
        path: PathBuf,
    },
    /// The directory holds none of [`SPECS`] in either layout.
    NoSuites {
        /// Where the path came from (the variable or the default).
        origin: &'static str,
        /// The path, as resolved.
        path: PathBuf,
    },
}

impl fmt::Display for LocateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LocateError::Missing { origin, path } => write!(
                f,
                "{origin} names {}, which is not a directory; point {VARIABLE} at a checkout of \
                 github.com/mongodb/specifications or at its spec-tests folder",
                path.display()
            ),
            LocateError::NoSuites { origin, path } => write!(
                f,
                "{origin} names {}, which holds none of the spec test suites (looked for \
                 <spec>/ and source/<spec>/tests/ for each of: {})",
                path.display(),
                SPECS.join(", ")
            ),
        }
    }
}

impl std::error::Error for LocateError {}

impl SpecTests {
    /// Locates the suites from the environment, for a harness.
    ///
    /// Returns `None` when the variable is unset and the default folder does not exist: the
    /// harness then prints a [`skip_line`] per suite and passes.
    ///
    /// # Panics
    /// When the folder named by the variable (or the existing default folder) is not a
    /// directory or holds no suites, with a message saying which path and why.
    pub fn from_env() -> Option<SpecTests> {
        let variable = std::env::var_os(VARIABLE);
        match SpecTests::locate(&workspace_root(), variable.as_deref()) {
            Ok(found) => found,
            Err(error) => panic!("{error}"),
        }
    }

    /// Locates the suites given the workspace root and the variable's value, if set.
    ///
    /// # Errors
    /// [`LocateError`] when the chosen folder is not a directory or holds no suites.
    pub fn locate(
        workspace_root: &Path,
        variable: Option<&OsStr>,
    ) -> Result<Option<SpecTests>, LocateError> {
        let (origin, root) = match variable {
            // `join` keeps an absolute value as it is.
            Some(value) => (VARIABLE, workspace_root.join(value)),
            None => {
                let default = workspace_root.join(DEFAULT_FOLDER);
                if !default.exists() {
                    return Ok(None);
                }
                ("the default spec test folder", default)
            }
        };
        if !root.is_dir() {
            return Err(LocateError::Missing { origin, path: root });
        }
        let layout = if root.join("source").is_dir() {
            Layout::Specifications
        } else {
            Layout::Flat
        };
        let found = SpecTests { root, layout };
        if SPECS.iter().any(|spec| found.spec_dir(spec).is_dir()) {
            Ok(Some(found))
        } else {
            Err(LocateError::NoSuites {
                origin,
                path: found.root,
            })
        }
    }

    /// The layout found.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The folder of `suite`, named as in the flat layout (`<spec>` or `<spec>/<folder>`, e.g.
    /// `retryable-writes/unified`), in this folder's layout.
    pub fn suite_dir(&self, suite: &str) -> PathBuf {
        let (spec, folder) = suite.split_once('/').unwrap_or((suite, ""));
        let dir = self.spec_dir(spec);
        if folder.is_empty() {
            dir
        } else {
            dir.join(folder)
        }
    }

    /// Every folder that directly holds a `.json` file, named as in the flat layout
    /// (`<spec>/<folder>/...`) whatever this folder's layout, sorted; with its path. Harnesses
    /// use it to find suites they do not know, so that a new suite cannot be silently ignored.
    ///
    /// # Errors
    /// The error of reading a directory.
    pub fn json_folders(&self) -> io::Result<Vec<(String, PathBuf)>> {
        let mut found = Vec::new();
        match self.layout {
            Layout::Flat => collect_json_folders(&self.root, "", &mut found)?,
            Layout::Specifications => {
                for spec in subdirectories(&self.root.join("source"))? {
                    let name = file_name(&spec);
                    let tests = spec.join("tests");
                    if tests.is_dir() {
                        collect_json_folders(&tests, &name, &mut found)?;
                    }
                }
            }
        }
        found.sort();
        Ok(found)
    }

    fn spec_dir(&self, spec: &str) -> PathBuf {
        match self.layout {
            Layout::Flat => self.root.join(spec),
            Layout::Specifications => self.root.join("source").join(spec).join("tests"),
        }
    }
}

/// The one line a suite prints when no spec test folder was found.
pub fn skip_line(suite: &str) -> String {
    format!("spec-suite {suite}: skipped: {SKIP_REASON}")
}

/// Every `.json` file directly inside `dir`, sorted (a checkout also holds the `.yml` sources).
///
/// # Errors
/// The error of reading the directory.
pub fn json_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    Ok(files)
}

/// How deep [`SpecTests::json_folders`] looks below a spec's folder: the deepest suite today is
/// `server-selection/server_selection/<topology>/<read|write>`.
const MAX_FOLDER_DEPTH: usize = 6;

/// Adds `dir` (named `name`) and its subfolders that directly hold `.json` files to `found`.
fn collect_json_folders(
    dir: &Path,
    name: &str,
    found: &mut Vec<(String, PathBuf)>,
) -> io::Result<()> {
    let depth = name.split('/').filter(|part| !part.is_empty()).count();
    if depth > 0 && !json_files(dir)?.is_empty() {
        found.push((name.to_owned(), dir.to_owned()));
    }
    if depth >= MAX_FOLDER_DEPTH {
        return Ok(());
    }
    for sub in subdirectories(dir)? {
        let child = match file_name(&sub) {
            child if name.is_empty() => child,
            child => format!("{name}/{child}"),
        };
        collect_json_folders(&sub, &child, found)?;
    }
    Ok(())
}

/// The directories directly inside `dir`.
fn subdirectories(dir: &Path) -> io::Result<Vec<PathBuf>> {
    Ok(std::fs::read_dir(dir)?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.is_dir())
        .collect())
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(String::new, |name| name.to_string_lossy().into_owned())
}

/// The workspace root: this crate lives in `<root>/crates/steadfast-test-support`.
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[cfg(test)]
mod tests;
