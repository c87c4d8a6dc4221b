//! A report with synthetic figures in every part, for the writers' tests.

use std::time::Duration;

use super::driverbench::cpu::{CpuCell, CpuResult, SingleOp};
use super::driverbench::score::{Measured, Outcome, TaskScore, composites};
use super::driverbench::server::ServerPlacement;
use super::driverbench::task::{Scale, Task};
use super::driverbench::{DriverBenchReport, IterationPolicy};
use super::failover::{FailoverOp, FailoverReport, FailoverSchedule, FaultReport};
use super::memory::{self, MemoryReport};
use super::overload::{LOADS, OverloadCell, OverloadReport, OverloadSchedule, Policy};
use super::report::Report;
use super::stats::Summary;
use super::throughput::{CellReport, ContenderResult, Schedule};
use super::timeout::{TimeoutReport, TimeoutSchedule, summarize};
use super::workload::{ContenderKind, Workload};

/// Text with every character HTML gives meaning to, as a driver's error could carry.
pub(crate) const HOSTILE: &str = "<script>alert('x')</script> & \"quoted\" | piped";

fn summary(ops_per_sec: f64, p50_us: f64) -> Option<Summary> {
    Some(Summary {
        operations: 1_000,
        ops_per_sec,
        p50_us,
        p99_us: p50_us * 3.0,
    })
}

/// A cell with `figures` as (contender, ops/s, p50 µs); p99 is three times p50.
pub(crate) fn cell(
    workload: Workload,
    concurrency: usize,
    figures: &[(ContenderKind, f64, f64)],
) -> CellReport {
    CellReport {
        workload,
        concurrency,
        results: figures
            .iter()
            .map(|&(contender, ops, p50)| ContenderResult {
                contender,
                summary: summary(ops, p50),
                note: None,
            })
            .collect(),
    }
}

/// A report with no measurement.
pub(crate) fn empty_report() -> Report {
    Report::new(
        "steadfast-bench --quick".into(),
        Schedule {
            rounds: 2,
            round: Duration::from_millis(50),
            warmup: Duration::from_millis(25),
        },
        FailoverSchedule {
            election_delay: Duration::from_millis(200),
            patience: Duration::from_secs(10),
            settle_writes: 10,
        },
    )
}

/// Four throughput cells: ping and find_one at 1 with the raw floor, find_one at 64, and
/// insert_one at 16 where steadfast failed with [`HOSTILE`] text.
pub(crate) fn throughput() -> Vec<CellReport> {
    use ContenderKind::{Official, Raw, Steadfast};
    let mut insert = cell(Workload::InsertOne, 16, &[(Official, 8_000.0, 1_900.0)]);
    insert.results.insert(
        0,
        ContenderResult {
            contender: Steadfast,
            summary: None,
            note: Some(format!("failed: {HOSTILE}")),
        },
    );
    vec![
        cell(
            Workload::Ping,
            1,
            &[
                (Steadfast, 32_000.0, 24.5),
                (Official, 14_000.0, 55.0),
                (Raw, 40_000.0, 20.0),
            ],
        ),
        cell(
            Workload::FindOne,
            1,
            &[
                (Steadfast, 16_000.0, 40.0),
                (Official, 10_000.0, 80.0),
                (Raw, 30_000.0, 25.0),
            ],
        ),
        cell(
            Workload::FindOne,
            64,
            &[(Steadfast, 10_000.0, 6_000.0), (Official, 8_000.0, 8_000.0)],
        ),
        insert,
    ]
}

fn failover() -> Vec<FailoverReport> {
    vec![FailoverReport {
        driver: ContenderKind::Steadfast,
        operation: FailoverOp::Insert,
        balance_total: None,
        faults: vec![
            FaultReport {
                fault: "stepdown",
                recovery_ms: Some(12.0),
                errors: 0,
                first_error: None,
            },
            FaultReport {
                fault: "primary killed",
                recovery_ms: Some(180.0),
                errors: 1,
                first_error: Some(HOSTILE.into()),
            },
        ],
        writes_acknowledged: 10,
        errors_total: 1,
        documents_stored: 10,
        note: None,
    }]
}

fn memory() -> Vec<MemoryReport> {
    let steadfast = MemoryReport {
        driver: "steadfast".into(),
        idle_client_bytes: 300 * 1024,
        idle_client_anon_bytes: 200 * 1024,
        idle_sockets: 2,
        busy_sockets: 66,
        busy_growth_bytes: 1024 * 1024,
        busy_growth_anon_bytes: 900 * 1024,
        busy_ms: 120.0,
        per_connection_bytes: Some(16 * 1024),
        note: None,
    };
    let official = memory::failed(ContenderKind::Official, &"child crashed".into());
    vec![steadfast, official]
}

fn timeout() -> Vec<TimeoutReport> {
    let ms = Duration::from_millis;
    let outcomes: Vec<(Duration, Result<(), String>)> =
        (0..100).map(|_| (ms(51), Ok(()))).collect();
    let run = summarize(&outcomes, TimeoutSchedule::QUICK.on_time_limit());
    vec![run, TimeoutReport::official_unsupported()]
}

/// Goodput `capacity * min(load, 1) * share` for each policy at each load.
pub(crate) fn overload() -> OverloadReport {
    let schedule = OverloadSchedule::QUICK;
    let shares = [0.9, 0.97, 0.6];
    let mut cells = Vec::new();
    for load in LOADS {
        for (policy, share) in Policy::ALL.into_iter().zip(shares) {
            cells.push(OverloadCell {
                driver: policy.label(),
                load,
                offered: schedule.capacity * load,
                goodput: schedule.capacity * load.min(1.0) * share,
                attempts_per_success: Some(1.25),
                errors: 3,
                refusals: 0,
                p50_ms: 1.5,
                p99_ms: 12.25,
                dropped_at_cap: 0,
            });
        }
    }
    OverloadReport {
        schedule,
        cells,
        plot: Some("target/overload-goodput.svg".into()),
    }
}

fn measured(mb_per_s: f64) -> Outcome {
    Outcome::Measured(Measured {
        iterations: 3,
        seconds: 1.5,
        mb_per_s,
        percentiles_ms: vec![(10, 1.0), (50, 2.0), (90, 3.0)],
        cpu_ms_median: 0.75,
        cpu_us_per_op: Some(12.0),
    })
}

/// Three tasks (ratios 1.5 and 0.8, and one the official crate cannot run) and one CPU cell.
pub(crate) fn driverbench() -> DriverBenchReport {
    let score = |task, steadfast, official| TaskScore {
        task,
        bytes: 2_750_000,
        steadfast,
        official,
    };
    let tasks = vec![
        score(Task::FindOne, measured(30.0), measured(20.0)),
        score(Task::SmallInsertOne, measured(8.0), measured(10.0)),
        score(
            Task::SmallClientBulkInsert,
            measured(12.5),
            Outcome::NotAvailable {
                reason: "no Client::bulk_write".into(),
            },
        ),
    ];
    let result = |driver, cpu| CpuResult {
        driver,
        iterations: 2,
        ops_per_sec: Some(5_000.0),
        cpu_us_per_op: Some(cpu),
        error: None,
    };
    DriverBenchReport {
        server: ServerPlacement {
            mode: "separate process".into(),
            pinning: "none".into(),
        },
        scale: Scale::QUICK,
        policy: IterationPolicy {
            min_seconds: 0.0,
            max_seconds: 5.0,
            max_iterations: 2,
        },
        composites: composites(&tasks),
        tasks,
        cpu: vec![CpuCell {
            op: SingleOp::FindOne,
            workers: 1,
            max_pool_size: None,
            operations: 200,
            results: vec![
                result(ContenderKind::Steadfast, 20.0),
                result(ContenderKind::Official, 50.0),
            ],
        }],
        bsonbench: "BSONBench not run",
    }
}

/// Every part measured, the targets evaluated.
pub(crate) fn full_report() -> Report {
    let mut report = empty_report();
    report.command_line = format!("steadfast-bench --quick --report {HOSTILE}");
    report.throughput = throughput();
    report.failover = failover();
    report.memory = memory();
    report.timeout_schedule = Some(TimeoutSchedule::QUICK);
    report.timeout = timeout();
    report.overload = Some(overload());
    report.driverbench = Some(driverbench());
    report.evaluate_targets();
    report
}
