//! Self-contained HTML reports of steadfast's runs: one file, no network, no CDN, inline SVG
//! and a few lines of inline script (tooltips and legend toggles), that opens from disk in any
//! browser.
//!
//! - [`timeline`]: what a failover run looked like in time (the demo, the torture, the
//!   simulation): a row per member with its role over time, every fault as a marker, the
//!   driver's view of each server with its pool clears, the operations' latencies coloured by
//!   outcome, throughput per 100 ms, retries per second, and the invariants.
//! - [`charts`]: the benchmark's charts (grouped bars per cell, curves, ratios).
//! - [`html`]: the page around them.
//!
//! Pure: no I/O, no clock. A caller records its run into the plain data types here and writes
//! the returned string to a file.

pub mod charts;
pub mod html;
mod sample;
mod svg;
#[cfg(test)]
mod tests;
pub mod timeline;

pub use sample::{count_per_bin, downsample, sum_per_bin};
