//! The process's live heap: bytes allocated and not freed yet, as counted by the binary's
//! global allocator (`main.rs` installs `stats_alloc`'s instrumented system allocator).
//!
//! The resident set is no measure of a leak here: the embedded deployment's store lives in the
//! same process, and the allocator keeps most pages the run freed, so a run of 300 s ended
//! with a gigabyte resident and nothing alive. The live heap drops the moment memory is freed,
//! so once the deployment (and its store) is dropped, what is left over the baseline is what
//! the driver, the workload or blackpipe failed to free.

use stats_alloc::{INSTRUMENTED_SYSTEM, Stats};

/// Live heap bytes, or `None` when the counting allocator is not the global allocator (it
/// then counts nothing at all).
pub(crate) fn live_heap_bytes() -> Option<u64> {
    live_bytes(&INSTRUMENTED_SYSTEM.stats())
}

/// Bytes allocated and not freed, from the allocator's running totals (a reallocation adds
/// its growth to the allocated bytes, or its shrinkage to the freed ones).
fn live_bytes(stats: &Stats) -> Option<u64> {
    if stats.allocations == 0 {
        return None;
    }
    let live = stats.bytes_allocated.checked_sub(stats.bytes_deallocated)?;
    u64::try_from(live).ok()
}

/// Bytes as MiB with one decimal.
pub(crate) fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// Bytes as KiB with one decimal.
pub(crate) fn kib(bytes: u64) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(allocated: usize, deallocated: usize) -> Stats {
        Stats {
            allocations: 3,
            deallocations: 1,
            bytes_allocated: allocated,
            bytes_deallocated: deallocated,
            ..Stats::default()
        }
    }

    #[test]
    fn live_bytes_are_allocated_minus_freed() {
        assert_eq!(live_bytes(&stats(1000, 300)), Some(700));
        assert_eq!(live_bytes(&stats(10, 30)), None, "never negative");
    }

    #[test]
    fn an_allocator_that_counted_nothing_is_not_a_measurement() {
        assert_eq!(live_bytes(&Stats::default()), None);
    }

    /// The test binary installs the same global allocator as the `steadfast` binary, so a
    /// buffer shows in the live heap while it exists and leaves it when freed.
    #[test]
    fn the_live_heap_follows_a_buffer() {
        let before = live_heap_bytes().expect("the counting allocator is installed");
        // Reserved, never touched: counted on the heap without costing resident pages. The
        // margins leave 56 MiB for whatever the tests running alongside allocate meanwhile.
        const MIB: u64 = 1024 * 1024;
        let buffer: Vec<u8> = Vec::with_capacity(256 * 1024 * 1024);
        let during = live_heap_bytes().expect("counted");
        assert!(during >= before + 200 * MIB, "{before} -> {during}");
        drop(buffer);
        let after = live_heap_bytes().expect("counted");
        assert!(after + 200 * MIB <= during, "{during} -> {after}");
    }

    #[test]
    fn units() {
        assert_eq!(mib(3 * 1024 * 1024 / 2), "1.5 MiB");
        assert_eq!(kib(1536), "1.5 KiB");
    }
}
