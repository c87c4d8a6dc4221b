//! Memory per driver, each measured in a fresh child process so that one driver's allocations
//! (and the allocator's retained pages) never count against the other.
//!
//! The parent runs `steadfast-bench --memory-child <driver> --memory-uri <uri>` against its
//! own blackpipe server; the child prints one JSON line with what it measured.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::BenchError;
use super::official::OfficialSide;
use super::steadfast_side::SteadfastSide;
use super::workload::{ContenderKind, Workload};

/// Tasks sharing the client while the pool grows.
const POOL_TASKS: u64 = 64;
/// How long the tasks may run while waiting for the pool to reach one connection per task.
const POOL_GROWTH_LIMIT: Duration = Duration::from_secs(10);
/// How often the socket count is read meanwhile.
const SOCKET_POLL_INTERVAL: Duration = Duration::from_millis(5);
/// How long the server holds each `ping` while the memory children run, so that 64 tasks
/// really hold 64 connections at once instead of a fast loop reusing a few.
pub(crate) const PING_BLOCK_MS: i32 = 20;

/// The report for `driver` when its child could not measure.
pub(crate) fn failed(driver: ContenderKind, error: &BenchError) -> MemoryReport {
    MemoryReport {
        driver: driver.label().to_owned(),
        idle_client_bytes: 0,
        idle_client_anon_bytes: 0,
        idle_sockets: 0,
        busy_sockets: 0,
        busy_growth_bytes: 0,
        busy_growth_anon_bytes: 0,
        busy_ms: 0.0,
        per_connection_bytes: None,
        note: Some(error.to_string()),
    }
}

/// What a child process measured (all sizes in bytes).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct MemoryReport {
    /// The driver.
    pub(crate) driver: String,
    /// Resident set growth from creating the client and completing one `ping`.
    pub(crate) idle_client_bytes: i64,
    /// The anonymous part of that growth (heap, stacks): the resident set also counts the
    /// pages of the executable the client's code touched for the first time, which this
    /// leaves out.
    pub(crate) idle_client_anon_bytes: i64,
    /// Sockets the idle client holds (monitors and pooled connections).
    pub(crate) idle_sockets: u64,
    /// Sockets after [`POOL_TASKS`] tasks shared the client.
    pub(crate) busy_sockets: u64,
    /// Resident set growth over the idle client after those tasks ran.
    pub(crate) busy_growth_bytes: i64,
    /// The anonymous part of that growth.
    pub(crate) busy_growth_anon_bytes: i64,
    /// How long the tasks ran, milliseconds: until the client held one connection per task,
    /// or at most [`POOL_GROWTH_LIMIT`].
    pub(crate) busy_ms: f64,
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
            idle_client_anon_bytes: 0,
            idle_sockets: 0,
            busy_sockets: 0,
            busy_growth_bytes: 0,
            busy_growth_anon_bytes: 0,
            busy_ms: 0.0,
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
    let anon_before = anonymous_bytes()?;
    let side = match driver {
        "steadfast" => Side::Steadfast(SteadfastSide::connect(uri).await?),
        "official" => Side::Official(OfficialSide::connect(uri).await?),
        other => return Err(format!("unknown driver {other}").into()),
    };
    let idle = resident_bytes(page)?;
    let anon_idle = anonymous_bytes()?;
    let idle_sockets = open_sockets()?.saturating_sub(sockets_before);

    let side = Arc::new(side);
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let tasks: Vec<_> = (0..POOL_TASKS)
        .map(|task| {
            let side = Arc::clone(&side);
            let stop = Arc::clone(&stop);
            tokio::spawn(async move {
                let mut sequence = task * 1_000_000;
                while !stop.load(Ordering::Relaxed) {
                    side.ping(sequence).await?;
                    sequence += 1;
                }
                Ok::<(), BenchError>(())
            })
        })
        .collect();
    // The tasks run until the client holds a connection per task (or the time is up): pools
    // grow at their own pace, and the question is what a connection costs, not how fast.
    // The idle client's ping already left one pooled connection open.
    let target = idle_sockets + POOL_TASKS - 1;
    while started.elapsed() < POOL_GROWTH_LIMIT
        && open_sockets()?.saturating_sub(sockets_before) < target
    {
        tokio::time::sleep(SOCKET_POLL_INTERVAL).await;
    }
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        task.await??;
    }
    let busy_ms = started.elapsed().as_secs_f64() * 1_000.0;
    let busy = resident_bytes(page)?;
    let anon_busy = anonymous_bytes()?;
    let busy_sockets = open_sockets()?.saturating_sub(sockets_before);
    let opened = busy_sockets.saturating_sub(idle_sockets);
    let busy_growth = busy - idle;
    Ok(MemoryReport {
        driver: driver.to_owned(),
        idle_client_bytes: idle - before,
        idle_client_anon_bytes: anon_idle - anon_before,
        idle_sockets,
        busy_sockets,
        busy_growth_bytes: busy_growth,
        busy_growth_anon_bytes: anon_busy - anon_idle,
        busy_ms,
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
    // /proc/self/exe still runs this very binary after a rebuild replaced the file on disk
    // (the shared target directory makes that likely during a long run).
    let own_image = PathBuf::from("/proc/self/exe");
    let exe = if own_image.exists() {
        own_image
    } else {
        std::env::current_exe()?
    };
    // The same explicit pool limit for both: the official driver's default (10) would stop
    // the pool well short of one connection per task.
    let separator = if uri.contains('?') { '&' } else { '?' };
    let args = [
        "--memory-child".to_owned(),
        driver.label().to_owned(),
        "--memory-uri".to_owned(),
        format!("{uri}{separator}maxPoolSize={POOL_TASKS}"),
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

/// The anonymous resident memory (heap, stacks, anonymous mappings) from
/// `/proc/self/smaps_rollup`'s `Anonymous:` line, in bytes.
fn anonymous_bytes() -> Result<i64, BenchError> {
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup")?;
    anonymous_kib(&rollup)
        .map(|kib| kib * 1024)
        .ok_or_else(|| "/proc/self/smaps_rollup has no Anonymous line".into())
}

/// The `Anonymous:` figure (kB) of a `smaps_rollup` text.
fn anonymous_kib(rollup: &str) -> Option<i64> {
    rollup
        .lines()
        .find_map(|line| line.strip_prefix("Anonymous:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
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
        if is_socket_link(&target) {
            sockets += 1;
        }
    }
    Ok(sockets)
}

/// Whether a `/proc/self/fd` link target names a socket (`socket:[inode]`).
fn is_socket_link(target: &std::path::Path) -> bool {
    target.to_string_lossy().starts_with("socket:")
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
    fn the_anonymous_line_is_read_from_a_rollup() {
        let rollup = "00400000-7ffd [rollup]\nRss:  4000 kB\nAnonymous:   1234 kB\nSwap: 0 kB\n";
        assert_eq!(anonymous_kib(rollup), Some(1234));
        assert_eq!(anonymous_kib("Rss: 4000 kB\n"), None);
        assert!(anonymous_bytes().expect("Linux has smaps_rollup") > 0);
    }

    #[test]
    fn socket_links_are_told_from_files_and_pipes() {
        assert!(is_socket_link(std::path::Path::new("socket:[123456]")));
        assert!(!is_socket_link(std::path::Path::new("pipe:[42]")));
        assert!(!is_socket_link(std::path::Path::new("/dev/null")));
        assert!(!is_socket_link(std::path::Path::new(
            "anon_inode:[eventpoll]"
        )));
    }

    #[test]
    fn a_socket_held_open_is_counted() {
        // Other tests may open and close sockets meanwhile, so only a lower bound is certain.
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind loopback");
        assert!(open_sockets().expect("fds are listable") >= 1);
        drop(socket);
    }
}
