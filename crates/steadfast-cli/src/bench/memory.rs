//! Memory per driver, each measured in a fresh child process so that one driver's allocations
//! (and the allocator's retained pages) never count against the other.
//!
//! The parent runs `steadfast bench --memory-child <driver> --memory-uri <uri>` against its
//! own blackpipe server; the child prints one JSON line with what it measured.

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::BenchError;
use super::official::OfficialSide;
use super::steadfast_side::SteadfastSide;
use super::workload::{ContenderKind, Workload};

/// Tasks sharing the client while the pool grows.
const POOL_TASKS: u64 = 64;
/// `ping`s each of those tasks sends.
const PINGS_PER_TASK: u64 = 10;
/// How long the server holds each `ping` while the memory children run, so that 64 tasks
/// really hold 64 connections at once instead of a fast loop reusing a few.
pub(crate) const PING_BLOCK_MS: i32 = 20;

/// What a child process measured (all sizes in bytes).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct MemoryReport {
    /// The driver.
    pub(crate) driver: String,
    /// Resident set growth from creating the client and completing one `ping`.
    pub(crate) idle_client_bytes: i64,
    /// Sockets the idle client holds (monitors and pooled connections).
    pub(crate) idle_sockets: u64,
    /// Sockets after [`POOL_TASKS`] tasks shared the client.
    pub(crate) busy_sockets: u64,
    /// Resident set growth over the idle client after those tasks ran.
    pub(crate) busy_growth_bytes: i64,
    /// `busy_growth_bytes` divided by the sockets opened, when any were.
    pub(crate) per_connection_bytes: Option<i64>,
    /// Why the child could not measure, if it could not.
    pub(crate) note: Option<String>,
}

/// The child side: connects `driver` to `uri`, measures and prints the report as JSON.
pub(crate) async fn child(driver: &str, uri: &str) -> Result<(), BenchError> {
    let report = match measure_in_this_process(driver, uri).await {
        Ok(report) => report,
        Err(error) => MemoryReport {
            driver: driver.to_owned(),
            idle_client_bytes: 0,
            idle_sockets: 0,
            busy_sockets: 0,
            busy_growth_bytes: 0,
            per_connection_bytes: None,
            note: Some(error.to_string()),
        },
    };
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}

#[derive(Clone)]
enum Side {
    Steadfast(SteadfastSide),
    Official(OfficialSide),
}

impl Side {
    async fn ping(&self, sequence: u64) -> Result<(), BenchError> {
        match self {
            Side::Steadfast(side) => side.execute(Workload::Ping, sequence).await.map(drop),
            Side::Official(side) => side.execute(Workload::Ping, sequence).await.map(drop),
        }
    }
}

async fn measure_in_this_process(driver: &str, uri: &str) -> Result<MemoryReport, BenchError> {
    let page = page_size()?;
    let sockets_before = open_sockets()?;
    let before = resident_bytes(page)?;
    let side = match driver {
        "steadfast" => Side::Steadfast(SteadfastSide::connect(uri).await?),
        "official" => Side::Official(OfficialSide::connect(uri).await?),
        other => return Err(format!("unknown driver {other}").into()),
    };
    let idle = resident_bytes(page)?;
    let idle_sockets = open_sockets()?.saturating_sub(sockets_before);

    let side = Arc::new(side);
    let tasks: Vec<_> = (0..POOL_TASKS)
        .map(|task| {
            let side = Arc::clone(&side);
            tokio::spawn(async move {
                for ping in 0..PINGS_PER_TASK {
                    side.ping(task * PINGS_PER_TASK + ping).await?;
                }
                Ok::<(), BenchError>(())
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    let busy = resident_bytes(page)?;
    let busy_sockets = open_sockets()?.saturating_sub(sockets_before);
    let opened = busy_sockets.saturating_sub(idle_sockets);
    let busy_growth = busy - idle;
    Ok(MemoryReport {
        driver: driver.to_owned(),
        idle_client_bytes: idle - before,
        idle_sockets,
        busy_sockets,
        busy_growth_bytes: busy_growth,
        per_connection_bytes: i64::try_from(opened)
            .ok()
            .filter(|&n| n > 0)
            .map(|n| busy_growth / n),
        note: None,
    })
}

/// The fail point the parent arms (on its server, for every connection) before running the
/// children.
pub(crate) fn slow_ping_fail_point() -> bson::Document {
    bson::doc! {
        "configureFailPoint": "failCommand",
        "mode": "alwaysOn",
        "data": { "failCommands": ["ping"], "blockConnection": true, "blockTimeMS": PING_BLOCK_MS },
        "$db": "admin",
    }
}

/// The parent side: runs the child for `driver` and parses its report.
pub(crate) async fn measure_in_child(
    driver: ContenderKind,
    uri: &str,
) -> Result<MemoryReport, BenchError> {
    let exe: PathBuf = std::env::current_exe()?;
    let args = [
        "bench".to_owned(),
        "--memory-child".to_owned(),
        driver.label().to_owned(),
        "--memory-uri".to_owned(),
        uri.to_owned(),
    ];
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(exe)
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
    })
    .await??;
    if !output.status.success() {
        return Err(format!(
            "the memory child for {} failed ({}): {}",
            driver.label(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )
        .into());
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .rev()
        .find(|line| line.starts_with('{'))
        .ok_or("the memory child printed no report")?;
    Ok(serde_json::from_str(line)?)
}

/// The resident set size from `/proc/self/statm` (its second field, in pages).
fn resident_bytes(page: i64) -> Result<i64, BenchError> {
    let statm = std::fs::read_to_string("/proc/self/statm")?;
    let pages: i64 = statm
        .split_whitespace()
        .nth(1)
        .ok_or("/proc/self/statm has no resident field")?
        .parse()?;
    Ok(pages * page)
}

/// The page size, from the `AT_PAGESZ` entry of the auxiliary vector.
fn page_size() -> Result<i64, BenchError> {
    const AT_PAGESZ: u64 = 6;
    let auxv = std::fs::read("/proc/self/auxv")?;
    let word = std::mem::size_of::<usize>();
    let read_word = |bytes: &[u8]| -> u64 {
        let mut buffer = [0u8; 8];
        buffer[..bytes.len()].copy_from_slice(bytes);
        u64::from_ne_bytes(buffer)
    };
    auxv.chunks_exact(word * 2)
        .map(|pair| (read_word(&pair[..word]), read_word(&pair[word..])))
        .find(|&(key, _)| key == AT_PAGESZ)
        .and_then(|(_, value)| i64::try_from(value).ok())
        .ok_or_else(|| "the auxiliary vector has no page size".into())
}

/// Open file descriptors that are sockets.
fn open_sockets() -> Result<u64, BenchError> {
    let mut sockets = 0;
    for entry in std::fs::read_dir("/proc/self/fd")? {
        // A descriptor closed between listing and reading is simply not counted.
        let Ok(target) = std::fs::read_link(entry?.path()) else {
            continue;
        };
        if target.to_string_lossy().starts_with("socket:") {
            sockets += 1;
        }
    }
    Ok(sockets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_size_is_a_power_of_two_and_resident_memory_is_positive() {
        let page = page_size().expect("Linux exposes the auxiliary vector");
        assert!(page >= 4096 && page.count_ones() == 1, "page size {page}");
        assert!(resident_bytes(page).expect("statm is readable") > 0);
    }

    #[test]
    fn an_open_socket_is_counted() {
        let before = open_sockets().expect("fds are listable");
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind loopback");
        let during = open_sockets().expect("fds are listable");
        drop(socket);
        assert!(
            during > before,
            "{during} sockets with one more open, {before} before"
        );
    }
}
