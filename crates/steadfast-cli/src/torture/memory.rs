//! The process's resident memory, from `/proc/self/status` (Linux).

/// Resident set size in bytes (`VmRSS`), or `None` where `/proc` is unavailable.
pub(crate) fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_vm_rss(&status)
}

/// The `VmRSS` line of a `/proc/<pid>/status` file, in bytes.
fn parse_vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    let mut fields = line["VmRSS:".len()..].split_whitespace();
    let value: u64 = fields.next()?.parse().ok()?;
    match fields.next() {
        Some("kB") => value.checked_mul(1024),
        _ => None,
    }
}

/// Bytes as MiB with one decimal.
pub(crate) fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_vm_rss_line() {
        let status = "Name:\tsteadfast\nVmPeak:\t  9000 kB\nVmRSS:\t    5120 kB\nThreads:\t3\n";
        assert_eq!(parse_vm_rss(status), Some(5120 * 1024));
        assert_eq!(parse_vm_rss("Name: x\n"), None);
        assert_eq!(parse_vm_rss("VmRSS: 12 pages\n"), None);
    }

    #[test]
    fn this_process_has_resident_memory() {
        if std::path::Path::new("/proc/self/status").exists() {
            assert!(resident_bytes().is_some_and(|bytes| bytes > 0));
        }
    }

    #[test]
    fn mebibytes() {
        assert_eq!(mib(3 * 1024 * 1024 / 2), "1.5 MiB");
    }
}
