//! The server DriverBench and the CPU cells run against: the `blackpipe` binary in a process of
//! its own (so that the client process's CPU time is the driver's alone), pinned to one core
//! and the bench to the others where the machine allows; the embedded server only when the
//! binary cannot be found, and the report says so.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};

use blackpipe::deployment::Deployment;
use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::unistd::Pid;
use serde::Serialize;

use super::super::BenchError;

/// How the server was run, for the report.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ServerPlacement {
    /// `separate process` or `in-process`.
    pub(crate) mode: String,
    /// What was pinned where, or why nothing was.
    pub(crate) pinning: String,
}

/// A running benchmark server.
pub(crate) struct BenchServer {
    uri: String,
    placement: ServerPlacement,
    process: Option<ServerProcess>,
    embedded: Option<Deployment>,
}

struct ServerProcess {
    child: Child,
    /// Kept open (never read after the URI): blackpipe prints its member list after the URI,
    /// and a closed pipe would make those writes fail.
    _stdout: BufReader<ChildStdout>,
}

impl BenchServer {
    /// Starts `blackpipe --standalone --port 0` from `binary` (default: next to this
    /// executable) and pins it, or the embedded server when there is no such binary.
    ///
    /// # Errors
    /// The binary exists but cannot be started or prints no connection string, or the embedded
    /// server cannot start.
    pub(crate) async fn start(binary: Option<&Path>) -> Result<Self, BenchError> {
        let path = binary.map(Path::to_path_buf).or_else(default_binary);
        match path.filter(|path| path.is_file()) {
            Some(path) => Self::spawn(&path),
            None => {
                let (deployment, uri, _) = super::super::standalone().await?;
                Ok(Self {
                    uri,
                    placement: ServerPlacement {
                        mode: "in-process (no blackpipe binary found: build it with `cargo build \
                               --release -p blackpipe`); CPU figures include the server's"
                            .to_owned(),
                        pinning: "none".to_owned(),
                    },
                    process: None,
                    embedded: Some(deployment),
                })
            }
        }
    }

    fn spawn(path: &Path) -> Result<Self, BenchError> {
        let mut child = Command::new(path)
            .args(["--standalone", "--port", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", path.display()))?;
        let Some(stdout) = child.stdout.take() else {
            let _ = child.kill();
            return Err("blackpipe's stdout was not captured".into());
        };
        let mut stdout = BufReader::new(stdout);
        let mut line = String::new();
        let read = stdout.read_line(&mut line);
        let uri = line.trim().to_owned();
        if read.is_err() || !uri.starts_with("mongodb://") {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("blackpipe printed no connection string (got {uri:?})").into());
        }
        let pinning = pin(child.id());
        Ok(Self {
            uri,
            placement: ServerPlacement {
                mode: format!("separate process ({})", path.display()),
                pinning,
            },
            process: Some(ServerProcess {
                child,
                _stdout: stdout,
            }),
            embedded: None,
        })
    }

    /// The connection string.
    pub(crate) fn uri(&self) -> &str {
        &self.uri
    }

    /// How the server runs.
    pub(crate) fn placement(&self) -> &ServerPlacement {
        &self.placement
    }

    /// Stops the server (the child process this bench started, by its id).
    pub(crate) async fn stop(mut self) {
        if let Some(mut process) = self.process.take() {
            let _ = process.child.kill();
            let _ = process.child.wait();
        }
        if let Some(deployment) = self.embedded.take() {
            deployment.stop().await;
        }
    }
}

impl Drop for BenchServer {
    fn drop(&mut self) {
        if let Some(process) = self.process.as_mut() {
            let _ = process.child.kill();
            let _ = process.child.wait();
        }
    }
}

/// `blackpipe` in the same directory as this executable (target/release next to
/// target/release/steadfast-bench).
fn default_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.join("blackpipe"))
}

/// Pins the server process to the last CPU this process may use and every thread of this
/// process to the others; says what it did.
fn pin(server_pid: u32) -> String {
    let allowed = match sched_getaffinity(Pid::from_raw(0)) {
        Ok(set) => set,
        Err(error) => return format!("not pinned: sched_getaffinity failed ({error})"),
    };
    let cpus: Vec<usize> = (0..CpuSet::count())
        .filter(|&cpu| allowed.is_set(cpu).unwrap_or(false))
        .collect();
    let Some((&server_cpu, client_cpus)) = cpus.split_last() else {
        return "not pinned: no CPU in this process's affinity mask".to_owned();
    };
    if client_cpus.is_empty() {
        return format!("not pinned: this process may use only CPU {server_cpu}");
    }
    let Ok(server_pid) = i32::try_from(server_pid) else {
        return "not pinned: the server's pid does not fit a pid_t".to_owned();
    };
    let mut server_set = CpuSet::new();
    let mut client_set = CpuSet::new();
    if server_set.set(server_cpu).is_err()
        || client_cpus.iter().any(|&cpu| client_set.set(cpu).is_err())
    {
        return "not pinned: a CPU number is out of range".to_owned();
    }
    if let Err(error) = sched_setaffinity(Pid::from_raw(server_pid), &server_set) {
        return format!("not pinned: sched_setaffinity on the server failed ({error})");
    }
    let (pinned, failed) = pin_own_threads(&client_set);
    format!(
        "blackpipe pinned to CPU {server_cpu}; the bench's {pinned} threads to CPU(s) {client_cpus:?}{} \
         (other processes on the machine are not excluded from either)",
        if failed > 0 {
            format!(", {failed} threads could not be pinned")
        } else {
            String::new()
        }
    )
}

/// Applies `set` to every thread of this process (threads created later inherit it from the
/// thread that creates them).
fn pin_own_threads(set: &CpuSet) -> (usize, usize) {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return match sched_setaffinity(Pid::from_raw(0), set) {
            Ok(()) => (1, 0),
            Err(_) => (0, 1),
        };
    };
    let (mut pinned, mut failed) = (0, 0);
    for task in tasks.flatten() {
        let tid = task
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok());
        match tid.map(|tid| sched_setaffinity(Pid::from_raw(tid), set)) {
            Some(Ok(())) => pinned += 1,
            _ => failed += 1,
        }
    }
    (pinned, failed)
}
