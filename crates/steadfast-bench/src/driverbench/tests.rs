//! Tests of DriverBench's pure parts: sizes, scoring, composites, the iteration rule and the
//! rendering of tasks a driver cannot run.

use std::time::Duration;

use super::cpu::{Sample, with_pool};
use super::data::parse_ldjson;
use super::score::{Composite, Measured, Outcome, TaskScore, composites, nearest_rank};
use super::task::{Direction, Scale, Task};
use super::{DriverBenchReport, IterationPolicy, order};
use crate::driverbench::server::ServerPlacement;

fn ms(values: &[u64]) -> Vec<Duration> {
    values.iter().map(|&v| Duration::from_millis(v)).collect()
}

#[test]
fn nearest_rank_uses_the_specifications_index() {
    let sorted = ms(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    // i = int(N * p / 100) - 1
    assert_eq!(nearest_rank(&sorted, 10), Some(Duration::from_millis(1)));
    assert_eq!(nearest_rank(&sorted, 50), Some(Duration::from_millis(5)));
    assert_eq!(nearest_rank(&sorted, 99), Some(Duration::from_millis(9)));
    assert_eq!(nearest_rank(&sorted, 100), Some(Duration::from_millis(10)));
    // One sample: the index would be -1; the only sample is every percentile.
    assert_eq!(nearest_rank(&ms(&[7]), 10), Some(Duration::from_millis(7)));
    assert_eq!(nearest_rank(&[], 50), None);
}

#[test]
fn score_divides_the_task_size_by_the_median_iteration() {
    let samples: Vec<Sample> = ms(&[10_000, 1_000, 3_000, 2_000])
        .into_iter()
        .map(|wall| Sample {
            wall,
            cpu: wall / 2,
        })
        .collect();
    let measured = Measured::score(&samples, 4_000_000, Some(1_000)).expect("measured");
    // Sorted 1, 2, 3, 10 s: the median by nearest rank is the second, 2 s.
    assert!((measured.mb_per_s - 2.0).abs() < 1e-9);
    assert_eq!(measured.iterations, 4);
    assert_eq!(measured.percentiles_ms.len(), 8);
    // 8 s of CPU over 4 iterations of 1,000 operations: 2,000 µs per operation.
    assert!((measured.cpu_us_per_op.expect("per op") - 2_000.0).abs() < 1e-6);
    assert!(Measured::score(&[], 1, None).is_none());
}

#[test]
fn full_scale_sizes_are_the_specifications() {
    let full = Scale::FULL;
    let expect = [
        (Task::RunCommand, 130_000),
        (Task::FindOne, 16_220_000),
        (Task::FindMany, 16_220_000),
        (Task::SmallInsertOne, 2_750_000),
        (Task::LargeInsertOne, 27_310_890),
        (Task::SmallClientBulkMixed, 5_500_000),
        (Task::SmallCollectionBulkMixed, 5_500_000),
        (Task::GridfsUpload, 52_428_800),
        (Task::LdjsonImport, 565_000_000),
        (Task::GridfsMultiDownload, 262_144_000),
    ];
    for (task, bytes) in expect {
        assert_eq!(task.bytes(full), bytes, "{task:?}");
    }
    assert_eq!(Task::RunCommand.units(full), 10_000);
    assert_eq!(Task::LargeInsertMany.units(full), 10);
    // The quick scale never rounds a task down to nothing.
    assert!(Task::ALL.iter().all(|t| t.units(Scale::QUICK) >= 1));
}

#[test]
fn composites_have_the_specifications_members() {
    let count = |d: Direction| Task::ALL.iter().filter(|t| t.direction() == d).count();
    assert_eq!(count(Direction::Read), 5);
    assert_eq!(count(Direction::Write), 13);
    assert_eq!(count(Direction::Neither), 1);
}

fn measured(mb_per_s: f64) -> Outcome {
    Outcome::Measured(Measured {
        iterations: 1,
        seconds: 1.0,
        mb_per_s,
        percentiles_ms: Vec::new(),
        cpu_ms_median: 0.0,
        cpu_us_per_op: None,
    })
}

fn score(task: Task, steadfast: Outcome, official: Outcome) -> TaskScore {
    TaskScore {
        task,
        bytes: 1,
        steadfast,
        official,
    }
}

#[test]
fn composite_ratios_count_only_tasks_both_drivers_measured() {
    let unavailable = || Outcome::NotAvailable {
        reason: "no API".into(),
    };
    let scores = [
        score(Task::FindOne, measured(30.0), measured(10.0)),
        score(Task::SmallInsertOne, measured(20.0), measured(10.0)),
        // steadfast only: outside the ratio, inside steadfast's all-tasks figure.
        score(
            Task::SmallCollectionBulkInsert,
            measured(100.0),
            unavailable(),
        ),
        score(Task::GridfsUpload, unavailable(), measured(1_000.0)),
        // Run command counts in no composite but SingleBench excludes it too.
        score(Task::RunCommand, measured(1.0), measured(1.0)),
    ];
    let all = composites(&scores);
    let get = |c: Composite| all.iter().find(|s| s.composite == c).expect("composite");
    let read = get(Composite::ReadBench);
    assert_eq!((read.tasks, read.ratio()), (1, Some(3.0)));
    let write = get(Composite::WriteBench);
    assert_eq!((write.tasks, write.ratio()), (1, Some(2.0)));
    assert_eq!(write.steadfast_all_tasks, Some(60.0));
    let driver = get(Composite::DriverBench);
    assert_eq!(
        (driver.steadfast, driver.official),
        (Some(25.0), Some(10.0))
    );
    assert_eq!(get(Composite::SingleBench).tasks, 2);
    assert_eq!(get(Composite::ParallelBench).ratio(), None);
}

#[test]
fn iterations_stop_by_the_specifications_rule() {
    let policy = IterationPolicy {
        min_seconds: 60.0,
        max_seconds: 300.0,
        max_iterations: 100,
    };
    assert!(!policy.done(100, 59.0), "at least the minimum time");
    assert!(policy.done(100, 60.0));
    assert!(!policy.done(99, 200.0), "until the iteration count");
    assert!(policy.done(3, 300.0), "or the maximum time");
}

#[test]
fn the_first_driver_alternates() {
    assert_eq!(order(0), [0, 1]);
    assert_eq!(order(1), [1, 0]);
    assert_eq!(order(2), [0, 1]);
}

#[test]
fn equal_pool_size_is_added_to_any_connection_string() {
    assert_eq!(with_pool("mongodb://h:1/", None), "mongodb://h:1/");
    assert_eq!(
        with_pool("mongodb://h:1/", Some(10)),
        "mongodb://h:1/?maxPoolSize=10"
    );
    assert_eq!(
        with_pool("mongodb://h:1/?directConnection=true", Some(10)),
        "mongodb://h:1/?directConnection=true&maxPoolSize=10"
    );
    assert_eq!(
        with_pool("mongodb://h:1", Some(4)),
        "mongodb://h:1/?maxPoolSize=4"
    );
}

#[test]
fn ldjson_lines_parse_and_garbage_is_an_error() {
    let documents = parse_ldjson(b"{\"a\":1}\n\n{\"b\":\"x\"}\n").expect("two documents");
    assert_eq!(documents.len(), 2);
    assert!(parse_ldjson(b"{\"a\":1}\nnot json\n").is_err());
    assert!(parse_ldjson(b"[1,2]\n").is_err());
}

#[test]
fn a_task_a_driver_cannot_run_shows_no_number() {
    let report = DriverBenchReport {
        server: ServerPlacement {
            mode: "separate process".into(),
            pinning: "none".into(),
        },
        scale: Scale::QUICK,
        policy: IterationPolicy {
            min_seconds: 0.0,
            max_seconds: 1.0,
            max_iterations: 1,
        },
        tasks: vec![score(
            Task::SmallClientBulkInsert,
            Outcome::NotAvailable {
                reason: "no Client::bulk_write".into(),
            },
            measured(12.5),
        )],
        composites: Vec::new(),
        cpu: Vec::new(),
        bsonbench: "BSONBench not run",
    };
    let mut out = String::new();
    for section in report.sections() {
        section.write_markdown(&mut out);
    }
    let row = out
        .lines()
        .find(|line| line.starts_with("| Small doc Client BulkWrite insert"))
        .expect("task row");
    assert!(row.contains("| not available | 12.50 | – |"), "{row}");
    assert!(out.contains("BSONBench not run"));
}
