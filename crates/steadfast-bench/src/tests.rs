//! Tests of the bench's pure parts: workload data, targets and rendering.

use std::collections::HashSet;
use std::time::Duration;

use super::failover::{FailoverOp, FailoverReport, FaultReport};
use super::fixture::{cell, empty_report};
use super::throughput::ContenderResult;
use super::timeout::{TimeoutReport, TimeoutSchedule, summarize};
use super::workload::{
    ContenderKind, INSERT_MANY_BATCH, ITEM_COUNT, Workload, fresh_batch, item_id, seed_commands,
};

#[test]
fn find_one_reads_only_seeded_ids_and_batches_have_fresh_ids() {
    for sequence in [0, 1, 999, 1_000, 7_919 * 63 + 5, u64::MAX] {
        let id = item_id(sequence);
        assert!((0..ITEM_COUNT as i64).contains(&id), "{id}");
    }
    let batch = fresh_batch(3);
    assert_eq!(batch.len(), INSERT_MANY_BATCH);
    let ids: HashSet<String> = batch
        .iter()
        .map(|d| d.get_object_id("_id").expect("an ObjectId _id").to_hex())
        .collect();
    assert_eq!(ids.len(), INSERT_MANY_BATCH);
    let seeded: usize = seed_commands()
        .iter()
        .map(|c| c.get_array("documents").expect("insert documents").len())
        .sum();
    assert_eq!(seeded, 2_000);
}

#[test]
fn targets_compare_ratios_and_overheads_with_the_issue() {
    use ContenderKind::{Official, Raw, Steadfast};
    let mut report = empty_report();
    report.throughput = vec![
        cell(
            Workload::Ping,
            1,
            &[
                (Steadfast, 30_000.0, 24.0),
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
        cell(
            Workload::InsertOne,
            1,
            &[(Steadfast, 12_000.0, 50.0), (Official, 8_000.0, 80.0)],
        ),
    ];
    report.failover = vec![FailoverReport {
        driver: Steadfast,
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
                recovery_ms: Some(8.0),
                errors: 1,
                first_error: Some("boom".into()),
            },
            FaultReport {
                fault: "closeConnection",
                recovery_ms: None,
                errors: 0,
                first_error: None,
            },
        ],
        writes_acknowledged: 10,
        errors_total: 1,
        documents_stored: 10,
        note: None,
    }];
    report.evaluate_targets();
    let verdicts: Vec<(String, Option<bool>)> = report
        .targets
        .iter()
        .map(|t| (t.measured.clone(), t.met))
        .collect();
    assert_eq!(
        verdicts,
        vec![
            ("1.60x".to_owned(), Some(true)),                   // find_one at 1
            ("1.25x".to_owned(), Some(false)),                  // find_one at 64
            ("1.50x".to_owned(), Some(true)),                   // insert_one at 1
            ("not measured for both drivers".to_owned(), None), // insert_one at 64
            ("1.20x".to_owned(), Some(true)),                   // ping overhead
            ("1.60x".to_owned(), Some(false)),                  // find_one overhead
            ("12.0 ms, 0 errors".to_owned(), Some(true)),
            ("8.0 ms, 1 errors".to_owned(), Some(false)),
            ("no success, 0 errors".to_owned(), Some(false)),
        ]
    );
}

#[test]
fn markdown_shows_every_cell_note_and_escapes_table_text() {
    use ContenderKind::{Official, Steadfast};
    let mut report = empty_report();
    let mut find = cell(Workload::Find, 16, &[(Official, 200.0, 70_000.0)]);
    find.results.push(ContenderResult {
        contender: Steadfast,
        summary: None,
        note: Some("failed: a | b".into()),
    });
    report.throughput = vec![
        cell(
            Workload::Ping,
            1,
            &[(Steadfast, 2_000.0, 500.0), (Official, 1_000.0, 1_000.0)],
        ),
        find,
    ];
    report.failover = vec![FailoverReport {
        driver: Official,
        operation: FailoverOp::Transfer,
        balance_total: Some(4_000),
        faults: vec![FaultReport {
            fault: "stepdown",
            recovery_ms: Some(3.5),
            errors: 2,
            first_error: Some("NotWritablePrimary | retried".into()),
        }],
        writes_acknowledged: 5,
        errors_total: 2,
        documents_stored: 6,
        note: None,
    }];
    report.evaluate_targets();
    let markdown = report.to_markdown();
    assert!(
        markdown.contains("| ping | 1 | 2000 | 500.0 | 1500.0 | 1000 | 1000.0 | 3000.0 | 2.00x |"),
        "{markdown}"
    );
    assert!(
        markdown.contains("| find(1000) | 16 | n/a | n/a | n/a | 200 |"),
        "{markdown}"
    );
    assert!(
        markdown.contains("- steadfast (find(1000)×16): failed: a \\| b"),
        "{markdown}"
    );
    assert!(
        markdown.contains(
            "| official | transfer (convenient transaction API) | stepdown | 3.5 | 2 | NotWritablePrimary \\| retried |"
        ),
        "{markdown}"
    );
    assert!(markdown.contains(
        "- official, transfer (convenient transaction API): 5 writes acknowledged, 6 documents stored, balances sum to 4000, 2 errors in all"
    ));
    assert!(markdown.contains("- command: `steadfast-bench --quick`"));
}

#[test]
fn the_timeout_cell_counts_late_returns_and_new_connections_against_the_targets() {
    let schedule = TimeoutSchedule::FULL;
    assert_eq!(schedule.on_time_limit(), Duration::from_millis(60));
    let ms = Duration::from_millis;
    // 100 timeouts: 98 on time (the limit itself included), 2 late; one non-timeout outcome.
    let mut outcomes: Vec<(Duration, Result<(), String>)> =
        (0..97).map(|_| (ms(51), Ok(()))).collect();
    outcomes.push((ms(60), Ok(())));
    outcomes.push((ms(61), Ok(())));
    outcomes.push((ms(300), Err("error: connection reset".into())));
    let mut run = summarize(&outcomes, schedule.on_time_limit());
    assert_eq!((run.operations, run.on_time), (100, 98));
    assert_eq!((run.timed_out, run.other), (99, 1));
    assert_eq!(run.first_other.as_deref(), Some("error: connection reset"));
    assert!((run.p50_ms - 51.0).abs() < 1e-9 && (run.max_ms - 300.0).abs() < 1e-9);
    assert!((run.p99_ms - 61.0).abs() < 1e-9, "{}", run.p99_ms);
    run.connections_created = 5;

    let mut report = empty_report();
    report.timeout_schedule = Some(schedule);
    report.timeout = vec![run, TimeoutReport::official_unsupported()];
    report.evaluate_targets();
    let timeout_targets: Vec<(&str, Option<bool>)> = report
        .targets
        .iter()
        .filter(|t| t.target.starts_with("timeout cell"))
        .map(|t| (t.measured.as_str(), t.met))
        .collect();
    // 98% on time misses 99%; 5 new connections in 100 operations is not under 5%.
    assert_eq!(
        timeout_targets,
        vec![("98.0%", Some(false)), ("5.0%", Some(false))]
    );
    let markdown = report.to_markdown();
    assert!(
        markdown.contains("| steadfast | 100 | 98.0% | 51.0 | 61.0 | 300.0 | 99 | 5 (5.0%) | 0 |"),
        "{markdown}"
    );
    assert!(
        markdown.contains("- official: not measured: the official mongodb crate has no timeoutMS"),
        "{markdown}"
    );
}

#[test]
fn markdown_has_every_part_of_a_full_report() {
    use super::fixture::{HOSTILE, full_report};
    let markdown = full_report().to_markdown();
    let mut at = 0;
    for heading in [
        "## Throughput and latency",
        "## Raw floor",
        "## Failover",
        "## Memory",
        "## Timeout cell",
        "## Overload (open loop)",
        "## DriverBench",
        "## Client CPU per operation",
        "## Targets",
    ] {
        let found = markdown[at..].find(heading);
        assert!(
            found.is_some(),
            "{heading} missing or out of order:\n{markdown}"
        );
        at += found.unwrap_or_default();
    }
    assert_eq!(markdown.matches("| 3× |").count(), 3, "{markdown}");
    assert!(
        markdown
            .contains("| official | n/a | n/a | n/a | n/a | n/a | n/a | n/a | n/a (see below) |"),
        "{markdown}"
    );
    assert!(markdown.contains(
        "| Small doc Client BulkWrite insert | 2.750 | 12.50 | not available | – | 3/– | 1.0–3.0 | – | 0.8 / – |"
    ));
    assert!(markdown.contains(
        "| find one by _id | 1 | defaults (100 / 10) | 5000 | 5000 | 20.0 | 50.0 | 0.40× |"
    ));
    assert!(markdown.contains("- official: child crashed\n"));
    assert!(markdown.contains(&format!(
        "- steadfast (insert_one×16): failed: {}\n",
        HOSTILE.replace('|', "\\|")
    )));
}
