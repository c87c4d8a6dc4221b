//! Per-collection operation latencies, as `$collStats: {latencyStats: {}}` reports them: the
//! caller (which has a clock; the store has none) records each command's time on its
//! namespace, by class (reads, writes, commands, transactions), with a power-of-two histogram.

use std::collections::HashMap;
use std::time::Duration;

use bson::{Bson, Document, doc};

use crate::Store;
use crate::catalog::lock;

/// At most this many namespaces keep figures (later ones are not recorded): bounded memory.
const MAX_NAMESPACES: usize = 10_000;
/// Histogram buckets: `[2^k, 2^(k+1))` microseconds, the last open-ended.
const BUCKETS: usize = 40;

/// The class of an operation, as `latencyStats` groups them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatencyClass {
    /// `find`, `getMore`, `aggregate`, `count`, `distinct`.
    Read,
    /// `insert`, `update`, `delete`, `findAndModify`, `bulkWrite`.
    Write,
    /// Any other command on the collection.
    Command,
    /// `commitTransaction`, `abortTransaction`.
    Transaction,
}

impl LatencyClass {
    /// The class of the command `name`.
    pub fn of(name: &str) -> LatencyClass {
        match name {
            "find" | "getMore" | "aggregate" | "count" | "distinct" => LatencyClass::Read,
            "insert" | "update" | "delete" | "findAndModify" | "findandmodify" | "bulkWrite" => {
                LatencyClass::Write
            }
            "commitTransaction" | "abortTransaction" => LatencyClass::Transaction,
            _ => LatencyClass::Command,
        }
    }

    fn index(self) -> usize {
        match self {
            LatencyClass::Read => 0,
            LatencyClass::Write => 1,
            LatencyClass::Command => 2,
            LatencyClass::Transaction => 3,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Totals {
    ops: u64,
    micros: u64,
    histogram: [u64; BUCKETS],
}

impl Default for Totals {
    fn default() -> Self {
        Totals {
            ops: 0,
            micros: 0,
            histogram: [0; BUCKETS],
        }
    }
}

/// Every namespace's figures.
#[derive(Debug, Default)]
pub(crate) struct Latencies {
    by_namespace: HashMap<String, [Totals; 4]>,
}

impl Store {
    /// Records that a `class` operation on namespace `ns` (`db.collection`) took `elapsed`.
    pub fn record_latency(&self, ns: &str, class: LatencyClass, elapsed: Duration) {
        let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        let mut latencies = lock(&self.latencies);
        let by_namespace = &mut latencies.by_namespace;
        // The namespace is copied only the first time it is seen: a command on a known one
        // allocates nothing.
        if !by_namespace.contains_key(ns) {
            if by_namespace.len() >= MAX_NAMESPACES {
                return;
            }
            by_namespace.insert(ns.to_owned(), Default::default());
        }
        let Some(figures) = by_namespace.get_mut(ns) else {
            return;
        };
        let totals = &mut figures[class.index()];
        totals.ops += 1;
        totals.micros = totals.micros.saturating_add(micros);
        let bucket = usize::try_from(u64::BITS - micros.max(1).leading_zeros() - 1).unwrap_or(0);
        totals.histogram[bucket.min(BUCKETS - 1)] += 1;
    }

    /// `latencyStats` of `ns`: `reads`, `writes`, `commands`, `transactions`, each with its
    /// total `latency` (µs) and `ops`, and with `histograms` the non-empty buckets.
    pub(crate) fn latency_stats(&self, ns: &str, histograms: bool) -> Document {
        let latencies = lock(&self.latencies);
        let figures = latencies.by_namespace.get(ns).copied().unwrap_or_default();
        let section = |totals: &Totals| {
            let mut section = doc! {
                "latency": i64::try_from(totals.micros).unwrap_or(i64::MAX),
                "ops": i64::try_from(totals.ops).unwrap_or(i64::MAX),
                "queryableEncryptionLatencyMicros": 0_i64,
            };
            if histograms {
                let buckets: Vec<Bson> = totals
                    .histogram
                    .iter()
                    .enumerate()
                    .filter(|(_, count)| **count > 0)
                    .map(|(bucket, count)| {
                        Bson::Document(doc! {
                            "micros": 1_i64 << bucket,
                            "count": i64::try_from(*count).unwrap_or(i64::MAX),
                        })
                    })
                    .collect();
                section.insert("histogram", buckets);
            }
            section
        };
        doc! {
            "reads": section(&figures[0]),
            "writes": section(&figures[1]),
            "commands": section(&figures[2]),
            "transactions": section(&figures[3]),
        }
    }
}
