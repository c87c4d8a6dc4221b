//! The invariants a torture run must keep, checked once it is over.

use crate::workload::report::Check;
use crate::workload::verify::{CounterCheck, InsertCheck};

use super::memory::mib;

/// How much more resident memory the process may hold after everything shut down than before
/// the deployment started, at the least.
const MEMORY_BASE_TOLERANCE: u64 = 32 * 1024 * 1024;
/// And per completed operation. The allocator keeps most of what the run freed (glibc does
/// not return fragmented heap pages): the store's documents and the workload's bookkeeping,
/// about 0.4 KiB per operation, stay resident after they are dropped, even though nothing is
/// alive (repeated runs in one process plateau instead of growing). So this check catches
/// gross leaks, such as buffers or connections piling up; the task and connection checks
/// catch the rest exactly.
const MEMORY_PER_OPERATION: u64 = 1024;

/// The memory the process may have gained over a run of `operations` operations.
pub(crate) fn memory_tolerance(operations: u64) -> u64 {
    MEMORY_BASE_TOLERANCE.saturating_add(MEMORY_PER_OPERATION.saturating_mul(operations))
}

/// Everything observed after a run.
#[derive(Debug, Default)]
pub(crate) struct Observations {
    pub(crate) counters: CounterCheck,
    pub(crate) inserts: InsertCheck,
    /// Document writes the store applied to the counters' namespace (replays excluded).
    pub(crate) counter_writes_applied: u64,
    /// Document writes the store applied to the inserts' namespace.
    pub(crate) insert_writes_applied: u64,
    pub(crate) panics: Vec<String>,
    pub(crate) stale_reads: usize,
    pub(crate) anomalies: usize,
    /// Tasks of the client still alive after its shutdown.
    pub(crate) live_tasks: usize,
    /// Connections still open on the deployment after every client shut down.
    pub(crate) open_connections: usize,
    /// Resident memory before the deployment started and after everything shut down.
    pub(crate) memory: Option<(u64, u64)>,
    /// Operations the workers completed (the memory tolerance grows with them).
    pub(crate) operations: u64,
    /// Problems putting the deployment back in order after the faults.
    pub(crate) restore_problems: Vec<String>,
}

fn check(name: &'static str, passed: bool, detail: String) -> Check {
    Check {
        name,
        passed,
        detail,
    }
}

/// The checks, in report order.
pub(crate) fn evaluate(o: &Observations) -> Vec<Check> {
    let mut checks = Vec::new();

    let lost_increments: Vec<String> = o
        .counters
        .mismatches
        .iter()
        .filter(|m| i128::from(m.actual) < i128::from(m.certainly_applied))
        .map(|m| m.describe())
        .collect();
    let lost_inserts: Vec<&String> = o.inserts.lost.iter().collect();
    let lost = lost_increments.len() + lost_inserts.len();
    checks.push(check(
        "no acknowledged write lost",
        lost == 0,
        if lost == 0 {
            format!(
                "{} acknowledged increments and {} acknowledged inserts all present",
                o.counters.acknowledged, o.inserts.acknowledged
            )
        } else {
            let mut all = lost_increments;
            all.extend(lost_inserts.into_iter().cloned());
            all.join("; ")
        },
    ));

    let doubled_increments: Vec<String> = o
        .counters
        .mismatches
        .iter()
        .filter(|m| {
            i128::from(m.actual) > i128::from(m.certainly_applied) + i128::from(m.ambiguous)
        })
        .map(|m| m.describe())
        .collect();
    let doubled_inserts: Vec<String> = o.inserts.duplicated.clone();
    let counter_total = u64::try_from(o.counters.final_total).unwrap_or(0);
    let mut doubled = doubled_increments;
    doubled.extend(doubled_inserts);
    if o.counter_writes_applied != counter_total {
        doubled.push(format!(
            "the store applied {} writes to the counters but they sum to {}",
            o.counter_writes_applied, o.counters.final_total
        ));
    }
    let stored = u64::try_from(o.inserts.stored).unwrap_or(u64::MAX);
    if o.insert_writes_applied != stored {
        doubled.push(format!(
            "the store applied {} inserts but holds {} documents",
            o.insert_writes_applied, o.inserts.stored
        ));
    }
    checks.push(check(
        "no write applied twice",
        doubled.is_empty(),
        if doubled.is_empty() {
            format!(
                "store op log agrees: {} counter writes, {} inserts; {} of {} ambiguous inserts applied, once",
                o.counter_writes_applied,
                o.insert_writes_applied,
                o.inserts.ambiguous_present,
                o.inserts.ambiguous
            )
        } else {
            doubled.join("; ")
        },
    ));

    checks.push(check(
        "failed writes reported truthfully",
        o.inserts.misreported.is_empty(),
        if o.inserts.misreported.is_empty() {
            format!(
                "none of the {} inserts reported as not applied is stored, no stranger stored",
                o.inserts.not_applied
            )
        } else {
            o.inserts.misreported.join("; ")
        },
    ));

    checks.push(check(
        "counters exact",
        o.counters.within_bounds(),
        if o.counters.exact() {
            format!(
                "{} counters hold exactly the {} increments known to be applied",
                o.counters.counters,
                o.counters.acknowledged + o.counters.applied_despite_error
            )
        } else if o.counters.within_bounds() {
            format!(
                "every difference is an increment the application was told had an unknown outcome ({} such)",
                o.counters.ambiguous
            )
        } else {
            "counters outside what the acknowledgements and errors allow".to_owned()
        },
    ));

    checks.push(check(
        "reads saw every acknowledged write",
        o.stale_reads == 0,
        format!("{} stale reads", o.stale_reads),
    ));
    checks.push(check(
        "no anomalous reply or hung operation",
        o.anomalies == 0,
        format!("{} anomalies", o.anomalies),
    ));
    checks.push(check(
        "no panic",
        o.panics.is_empty(),
        if o.panics.is_empty() {
            "no task panicked".to_owned()
        } else {
            o.panics.join("; ")
        },
    ));
    checks.push(check(
        "no leaked task",
        o.live_tasks == 0,
        format!("{} client tasks alive after shutdown", o.live_tasks),
    ));
    checks.push(check(
        "no leaked connection",
        o.open_connections == 0,
        format!(
            "{} connections open on the deployment after shutdown",
            o.open_connections
        ),
    ));
    checks.push(match o.memory {
        Some((before, after)) => {
            let tolerance = memory_tolerance(o.operations);
            check(
                "memory back to its baseline",
                after <= before.saturating_add(tolerance),
                format!(
                    "resident {} before the deployment started, {} after shutdown (tolerance {} for {} operations)",
                    mib(before),
                    mib(after),
                    mib(tolerance),
                    o.operations
                ),
            )
        }
        None => check(
            "memory back to its baseline",
            true,
            "not measured: /proc/self/status is unavailable".to_owned(),
        ),
    });
    checks.push(check(
        "deployment healthy after the faults",
        o.restore_problems.is_empty(),
        if o.restore_problems.is_empty() {
            "every member up with a primary".to_owned()
        } else {
            o.restore_problems.join("; ")
        },
    ));
    checks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::verify::CounterMismatch;

    fn healthy() -> Observations {
        Observations {
            counters: CounterCheck {
                counters: 2,
                acknowledged: 10,
                final_total: 10,
                ..CounterCheck::default()
            },
            inserts: InsertCheck {
                attempted: 5,
                acknowledged: 5,
                stored: 5,
                ..InsertCheck::default()
            },
            counter_writes_applied: 10,
            insert_writes_applied: 5,
            memory: Some((100, 120)),
            ..Observations::default()
        }
    }

    fn failed(o: &Observations) -> Vec<&'static str> {
        evaluate(o)
            .into_iter()
            .filter(|c| !c.passed)
            .map(|c| c.name)
            .collect()
    }

    #[test]
    fn a_clean_run_passes_everything() {
        assert!(failed(&healthy()).is_empty());
    }

    #[test]
    fn a_lost_increment_fails_loss_and_exactness() {
        let mut o = healthy();
        o.counters.mismatches.push(CounterMismatch {
            key: "d".into(),
            certainly_applied: 5,
            ambiguous: 0,
            actual: 4,
        });
        o.counters.final_total = 9;
        o.counter_writes_applied = 9;
        assert_eq!(failed(&o), ["no acknowledged write lost", "counters exact"]);
    }

    #[test]
    fn an_op_log_disagreement_is_a_double_write() {
        let mut o = healthy();
        o.insert_writes_applied = 6;
        assert_eq!(failed(&o), ["no write applied twice"]);
    }

    #[test]
    fn leaks_panics_and_memory_growth_fail() {
        let mut o = healthy();
        o.live_tasks = 1;
        o.open_connections = 2;
        o.panics.push("worker 3 panicked".into());
        o.operations = 1000;
        o.memory = Some((100, 100 + memory_tolerance(1000) + 1));
        o.stale_reads = 1;
        assert_eq!(
            failed(&o),
            [
                "reads saw every acknowledged write",
                "no panic",
                "no leaked task",
                "no leaked connection",
                "memory back to its baseline"
            ]
        );
    }

    #[test]
    fn the_memory_tolerance_grows_with_the_operations() {
        assert_eq!(memory_tolerance(0), 32 * 1024 * 1024);
        assert_eq!(memory_tolerance(1024), 33 * 1024 * 1024);
        assert_eq!(memory_tolerance(u64::MAX), u64::MAX);
    }

    #[test]
    fn an_applied_ambiguous_increment_is_allowed() {
        let mut o = healthy();
        o.counters.ambiguous = 1;
        o.counters.mismatches.push(CounterMismatch {
            key: "d".into(),
            certainly_applied: 5,
            ambiguous: 1,
            actual: 6,
        });
        o.counters.final_total = 11;
        o.counter_writes_applied = 11;
        assert!(failed(&o).is_empty());
    }
}
