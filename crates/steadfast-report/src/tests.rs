//! Unit tests of the report's data: bins, downsampling, spans, colours, and what the page holds.

use crate::charts::{self, Curve, Series};
use crate::html::{self, Cell};
use crate::timeline::{
    self, CheckRow, FaultMark, Marker, OpPoint, Outcome, RunTimeline, State, StateChange, Verdict,
};
use crate::{count_per_bin, downsample, sum_per_bin};

fn op(at_ms: f64, latency_ms: f64, outcome: Outcome) -> OpPoint {
    OpPoint {
        at_ms,
        latency_ms,
        kind: "increment",
        outcome,
        retries: u32::from(outcome == Outcome::RetriedOk),
    }
}

fn change(at_ms: f64, row: &str, state: State) -> StateChange {
    StateChange {
        at_ms,
        row: row.to_owned(),
        state,
    }
}

#[test]
fn bins_count_each_time_once_and_keep_the_end() {
    assert_eq!(
        count_per_bin([0.0, 99.9, 100.0, 250.0, 300.0], 100.0, 300.0),
        vec![2, 1, 2]
    );
    // Outside the run, or not a number: dropped.
    assert_eq!(
        count_per_bin([-1.0, 301.0, f64::NAN], 100.0, 300.0),
        vec![0, 0, 0]
    );
    assert_eq!(
        sum_per_bin([(10.0, 3), (1500.0, 2)], 1000.0, 2000.0),
        vec![3, 2]
    );
    assert!(count_per_bin([1.0], 0.0, 10.0).is_empty());
    assert!(count_per_bin([1.0], 100.0, 0.0).is_empty());
}

#[test]
fn a_small_run_is_drawn_whole_in_time_order() {
    let ops = vec![op(5.0, 1.0, Outcome::Ok), op(1.0, 2.0, Outcome::Ambiguous)];
    let drawn = downsample(&ops, 10);
    assert_eq!(drawn.len(), 2);
    assert_eq!(drawn[0].at_ms, 1.0);
}

#[test]
fn downsampling_keeps_failures_and_latency_spikes_within_the_budget() {
    let mut ops: Vec<OpPoint> = (0..100_000)
        .map(|i| op(f64::from(i) / 10.0, 1.0, Outcome::Ok))
        .collect();
    ops[54_321].latency_ms = 900.0;
    ops.push(op(42.0, 30.0, Outcome::Ambiguous));
    ops.push(op(43.0, 3.0, Outcome::RetriedOk));
    let drawn = downsample(&ops, 1_000);
    assert!(drawn.len() <= 1_000, "{}", drawn.len());
    assert!(drawn.len() >= 900, "the budget is used: {}", drawn.len());
    assert!(
        drawn.iter().any(|op| op.latency_ms == 900.0),
        "the spike survives"
    );
    assert!(drawn.iter().any(|op| op.outcome == Outcome::Ambiguous));
    assert!(drawn.iter().any(|op| op.outcome == Outcome::RetriedOk));
    assert!(drawn.windows(2).all(|w| w[0].at_ms <= w[1].at_ms));
}

#[test]
fn failures_beyond_half_the_budget_are_thinned_evenly() {
    let ops: Vec<OpPoint> = (0..10_000)
        .map(|i| op(f64::from(i), 1.0, Outcome::NotApplied))
        .collect();
    let drawn = downsample(&ops, 100);
    assert_eq!(drawn.len(), 50);
    assert_eq!(drawn[0].at_ms, 0.0);
    assert!(
        drawn[49].at_ms >= 9_000.0,
        "spread over the run: {}",
        drawn[49].at_ms
    );
}

#[test]
fn spans_start_unknown_and_follow_each_change() {
    let changes = [
        change(0.0, "a", State::Secondary),
        change(1_000.0, "a", State::Primary),
        change(1_000.0, "a", State::Primary),
        change(2_500.0, "a", State::Down),
    ];
    let refs: Vec<&StateChange> = changes.iter().collect();
    assert_eq!(
        timeline::spans(&refs, 4_000.0),
        vec![
            (0.0, 1_000.0, State::Secondary),
            (1_000.0, 2_500.0, State::Primary),
            (2_500.0, 4_000.0, State::Down),
        ]
    );
    let late = [change(500.0, "b", State::Secondary)];
    let refs: Vec<&StateChange> = late.iter().collect();
    assert_eq!(
        timeline::spans(&refs, 1_000.0)[0],
        (0.0, 500.0, State::Unknown)
    );
    assert_eq!(
        timeline::spans(&[], 1_000.0),
        vec![(0.0, 1_000.0, State::Unknown)]
    );
}

#[test]
fn every_outcome_and_state_has_its_own_colour_and_class() {
    let colours: std::collections::BTreeSet<_> = Outcome::ALL.iter().map(|o| o.colour()).collect();
    assert_eq!(colours.len(), Outcome::ALL.len());
    let classes: std::collections::BTreeSet<_> = Outcome::ALL.iter().map(|o| o.class()).collect();
    assert_eq!(classes.len(), Outcome::ALL.len());
    assert_eq!(Outcome::Ok.colour(), "#43a047");
    assert_eq!(Outcome::Ambiguous.class(), "op-ambiguous");
    assert_ne!(State::Primary.colour(), State::Secondary.colour());
    assert_ne!(State::Down.colour(), State::Partitioned.colour());
}

fn sample_run() -> RunTimeline {
    RunTimeline {
        title: "steadfast demo".to_owned(),
        subtitle: "seed 7 <script>".to_owned(),
        duration_ms: 3_000.0,
        members: vec!["m0".to_owned(), "m1".to_owned(), "m2".to_owned()],
        member_changes: vec![
            change(0.0, "m0", State::Primary),
            change(0.0, "m1", State::Secondary),
            change(0.0, "m2", State::Secondary),
            change(1_200.0, "m0", State::Secondary),
            change(1_500.0, "m1", State::Primary),
        ],
        rollbacks: vec![Marker {
            at_ms: 2_000.0,
            row: "m0".to_owned(),
            label: "1 write rolled back".to_owned(),
        }],
        faults: vec![
            FaultMark {
                at_ms: 1_200.0,
                duration_ms: 0.0,
                kind: "stepdown".to_owned(),
                description: "the primary steps down".to_owned(),
            },
            FaultMark {
                at_ms: 2_000.0,
                duration_ms: 500.0,
                kind: "partition".to_owned(),
                description: "m2 cut off".to_owned(),
            },
        ],
        servers: vec!["m0".to_owned(), "m1".to_owned(), "m2".to_owned()],
        server_changes: vec![change(10.0, "m0", State::Primary)],
        pool_clears: vec![Marker {
            at_ms: 1_203.0,
            row: "m0".to_owned(),
            label: "pool cleared".to_owned(),
        }],
        operations: vec![
            op(100.0, 1.0, Outcome::Ok),
            op(1_210.0, 300.0, Outcome::RetriedOk),
            op(1_220.0, 30.0, Outcome::Ambiguous),
        ],
        checks: vec![CheckRow {
            name: "no acknowledged write lost".to_owned(),
            verdict: Verdict::Held,
            detail: "812 of 812".to_owned(),
        }],
    }
}

#[test]
fn the_page_has_a_row_per_member_and_server_and_a_marker_per_fault() {
    let page = timeline::render(&sample_run());
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert_eq!(page.matches("class=\"member-row\"").count(), 3);
    assert_eq!(page.matches("class=\"server-row\"").count(), 3);
    assert_eq!(page.matches("class=\"fault-marker\"").count(), 2);
    assert_eq!(
        page.matches("class=\"row-marker\"").count(),
        2,
        "a rollback and a pool clear"
    );
    assert_eq!(page.matches("<circle class=\"op-").count(), 3);
    assert!(page.contains("retried, then ok: 1"), "the legend counts");
    assert!(
        page.contains("1 retry"),
        "the tooltip says how many retries"
    );
    assert!(page.contains("seed 7 &lt;script&gt;"), "text is escaped");
    assert!(!page.contains("seed 7 <script>"));
    assert!(page.contains("class=\"pass\""));
    assert!(
        !page.contains("http://") || !page.contains("src=\"http"),
        "nothing is fetched"
    );
}

#[test]
fn a_long_run_stays_a_few_mib() {
    let mut run = sample_run();
    run.duration_ms = 600_000.0;
    run.operations = (0..2_000_000u32)
        .map(|i| op(f64::from(i) * 0.3, 1.0 + f64::from(i % 7), Outcome::Ok))
        .collect();
    let page = timeline::render(&run);
    assert!(page.len() < 4 * 1024 * 1024, "{} bytes", page.len());
    assert!(page.contains("operations drawn"), "it says it downsampled");
    // Throughput comes from every operation, not from the drawn ones: 100 ms bins.
    let bins = page.matches("class=\"bin\"").count();
    assert!(bins >= 6_000, "{bins} throughput bins");
}

#[test]
fn charts_carry_exact_values_and_skip_what_was_not_measured() {
    let bars = charts::grouped_bars(
        "throughput",
        "ops/s",
        &["ping @ 1".to_owned(), "find @ 16".to_owned()],
        &[
            Series {
                name: "steadfast".to_owned(),
                values: vec![Some(12_345.0), None],
            },
            Series {
                name: "official".to_owned(),
                values: vec![Some(9_000.0), Some(5.5)],
            },
        ],
        charts::Axis::Linear,
    );
    assert_eq!(bars.matches("class=\"bar\"").count(), 3);
    assert!(
        bars.contains("ping @ 1: steadfast: 12345 ops/s"),
        "exact in the tooltip"
    );
    assert!(bars.contains("find @ 16: official: 5.5 ops/s"));
    let log = charts::grouped_bars(
        "latency",
        "µs",
        &["a".to_owned()],
        &[Series {
            name: "s".to_owned(),
            values: vec![Some(37.25), Some(41_234.5)],
        }],
        charts::Axis::Log,
    );
    assert!(log.contains("µs (log)"));
    assert!(
        log.contains(">10k<") || log.contains(">100k<"),
        "decade labels: {log}"
    );
    let curve = charts::curves(
        "goodput",
        "offered",
        "goodput",
        &[Curve {
            name: "adaptive".to_owned(),
            points: vec![(0.5, 0.5), (1.0, 0.98), (3.0, 0.9)],
        }],
    );
    assert_eq!(curve.matches("class=\"point\"").count(), 3);
    let ratios = charts::ratios("tasks", &[("Find one".to_owned(), 1.25)], 1.0, Some(1.1));
    assert!(ratios.contains("Find one: 1.25x"));
    assert!(ratios.contains("target 1.1"));
}

#[test]
fn tables_escape_and_mark_verdicts() {
    let table = html::table(
        &["a<b"],
        &[vec![Cell::verdict(false)], vec![Cell::from("x & y")]],
    );
    assert!(table.contains("a&lt;b"));
    assert!(table.contains("<td class=\"fail\">FAIL</td>"));
    assert!(table.contains("x &amp; y"));
}

#[test]
fn the_latency_axis_spans_whole_decades_around_the_operations() {
    use crate::timeline::render::latency_decades;
    let ops = [op(0.0, 0.7, Outcome::Ok), op(1.0, 1_500.0, Outcome::Ok)];
    assert_eq!(latency_decades(&ops), (0.1, 10_000.0));
    assert_eq!(latency_decades(&[op(0.0, 2.0, Outcome::Ok)]), (1.0, 10.0));
    assert_eq!(latency_decades(&[]), (0.1, 10.0));
    assert_eq!(latency_decades(&[op(0.0, 0.0, Outcome::Ok)]), (0.1, 10.0));
}

#[test]
fn round_maxima_and_exact_values() {
    use crate::charts::{decades, nice_max};
    assert_eq!(nice_max(1_040.0), 1_200.0);
    assert_eq!(nice_max(3.0), 3.0);
    assert_eq!(nice_max(0.0), 1.0);
    assert_eq!(decades(37.0, 41_000.0), (10.0, 100_000.0));
    assert_eq!(crate::svg::exact(30_125.0), "30125");
    assert_eq!(crate::svg::exact(1.234_567), "1.23457");
    assert_eq!(crate::svg::exact(0.5), "0.5");
}
