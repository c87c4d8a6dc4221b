//! What the figures were measured on.

use serde::Serialize;

/// The machine and toolchain a report was produced on.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Machine {
    /// Logical CPUs available to this process.
    pub(crate) cores: usize,
    /// The first `model name` of `/proc/cpuinfo`.
    pub(crate) cpu_model: Option<String>,
    /// `rustc --version`, when a rustc is on the PATH (it may differ from the one that built
    /// this binary).
    pub(crate) rustc: Option<String>,
    /// Whether this binary was built with optimisations.
    pub(crate) optimized: bool,
}

impl Machine {
    /// Describes the current machine.
    pub(crate) fn current() -> Self {
        Self {
            cores: std::thread::available_parallelism().map_or(1, usize::from),
            cpu_model: cpu_model(),
            rustc: rustc_version(),
            optimized: !cfg!(debug_assertions),
        }
    }
}

fn cpu_model() -> Option<String> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "model name").then(|| value.trim().to_owned())
    })
}

fn rustc_version() -> Option<String> {
    let output = std::process::Command::new("rustc")
        .arg("--version")
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}
