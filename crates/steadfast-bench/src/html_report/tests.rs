//! Tests of the HTML report: one bar per contender and cell with its value in the tooltip,
//! the curves' points, the ratio bars, the notes that replace charts the run did not
//! measure, the targets' verdicts, and escaping.

use super::{render, write};
use crate::driverbench::score::Outcome;
use crate::fixture::{HOSTILE, driverbench, empty_report, full_report, throughput};

const DATE: &str = "2026-01-02T03:04:05Z";

/// The `<svg>` whose title is `title`.
fn chart<'a>(page: &'a str, title: &str) -> &'a str {
    let at = page
        .find(&format!(">{title}</text>"))
        .unwrap_or_else(|| panic!("no chart titled {title:?}"));
    let start = page[..at].rfind("<svg").expect("the chart's <svg>");
    let end = at + page[at..].find("</svg>").expect("the chart's </svg>");
    &page[start..end]
}

/// The section whose heading starts with `heading`.
fn section<'a>(page: &'a str, heading: &str) -> &'a str {
    let start = page
        .find(&format!("<h2>{heading}"))
        .unwrap_or_else(|| panic!("no section {heading:?}"));
    let end = start + page[start..].find("</section>").expect("</section>");
    &page[start..end]
}

/// Every `data-tip` of the marks of class `class` in `svg`, in order.
fn tips(svg: &str, class: &str) -> Vec<String> {
    svg.split(&format!("class=\"{class}\""))
        .skip(1)
        .map(|mark| {
            let tip = mark.split("data-tip=\"").nth(1).expect("a data-tip");
            tip[..tip.find('"').expect("closing quote")].to_owned()
        })
        .collect()
}

#[test]
fn every_contender_has_one_bar_per_cell_with_its_value() {
    let page = render(&full_report(), DATE);
    // Cell by cell, steadfast then official then the raw floor; no bar where a contender
    // has no figure (steadfast failed insert_one; raw runs ping and find_one at 1 only).
    let ops = tips(chart(&page, "Throughput per cell"), "bar");
    assert_eq!(
        ops,
        [
            "ping @ 1: steadfast: 32000 ops/s",
            "ping @ 1: official: 14000 ops/s",
            "ping @ 1: raw: 40000 ops/s",
            "find_one @ 1: steadfast: 16000 ops/s",
            "find_one @ 1: official: 10000 ops/s",
            "find_one @ 1: raw: 30000 ops/s",
            "find_one @ 64: steadfast: 10000 ops/s",
            "find_one @ 64: official: 8000 ops/s",
            "insert_one @ 16: official: 8000 ops/s",
        ]
    );
    let p50 = tips(chart(&page, "p50 latency per cell"), "bar");
    assert_eq!(
        p50,
        [
            "ping @ 1: steadfast: 24.5 µs",
            "ping @ 1: official: 55 µs",
            "find_one @ 1: steadfast: 40 µs",
            "find_one @ 1: official: 80 µs",
            "find_one @ 64: steadfast: 6000 µs",
            "find_one @ 64: official: 8000 µs",
            "insert_one @ 16: official: 1900 µs",
        ]
    );
    let p99 = tips(chart(&page, "p99 latency per cell"), "bar");
    assert_eq!(p99.len(), 7, "{p99:?}");
    assert_eq!(p99[0], "ping @ 1: steadfast: 73.5 µs");
    assert_eq!(p99[5], "find_one @ 64: official: 24000 µs");
}

#[test]
fn the_raw_floor_has_no_series_when_no_cell_measured_it() {
    let mut report = empty_report();
    report.throughput = throughput()
        .into_iter()
        .filter(|cell| cell.concurrency > 1)
        .collect();
    let page = render(&report, DATE);
    let ops = chart(&page, "Throughput per cell");
    assert!(!ops.contains(": raw: "), "{ops}");
    assert!(
        !ops.contains(">raw</text>"),
        "a legend entry for nothing: {ops}"
    );
    assert_eq!(tips(ops, "bar").len(), 3);
}

#[test]
fn goodput_has_one_curve_per_policy_with_a_point_per_load() {
    let page = render(&full_report(), DATE);
    let svg = chart(
        &page,
        "Goodput against offered load (capacity C = 1000 ops/s)",
    );
    assert_eq!(svg.matches("<polyline").count(), 3);
    let points = tips(svg, "point");
    assert_eq!(points.len(), 18, "{points:?}");
    for name in ["steadfast default", "steadfast adaptive", "official"] {
        let prefix = format!("{name}: ");
        assert_eq!(
            points.iter().filter(|t| t.starts_with(&prefix)).count(),
            6,
            "{name}"
        );
    }
    assert!(points.contains(
        &"steadfast adaptive: offered load (x C) = 1.5, goodput (ops/s) = 970".to_owned()
    ));
    assert!(
        points.contains(&"official: offered load (x C) = 0.5, goodput (ops/s) = 300".to_owned())
    );
}

#[test]
fn driverbench_ratios_are_drawn_for_tasks_both_drivers_measured() {
    let page = render(&full_report(), DATE);
    let svg = chart(
        &page,
        "DriverBench: steadfast MB/s over the official crate&#39;s, per task",
    );
    assert_eq!(
        tips(svg, "bar"),
        ["Find one by ID: 1.50x", "Small doc insertOne: 0.80x"]
    );
    assert!(svg.contains(">parity 1</text>"), "{svg}");
    assert!(svg.contains(">target 1.1</text>"), "{svg}");
}

#[test]
fn a_part_the_run_did_not_measure_gets_a_note_and_no_chart() {
    let mut report = empty_report();
    report.evaluate_targets();
    let page = render(&report, DATE);
    assert!(!page.contains("<svg"), "an empty chart was drawn");
    for note in [
        "No throughput or latency chart: the throughput part did not run.",
        "No goodput curve: the overload part did not run.",
        "No DriverBench ratio chart: the driverbench part did not run.",
        "Not measured: the timeout part did not run.",
    ] {
        assert!(
            page.contains(&format!("<p class=\"note\">{note}</p>")),
            "{note}"
        );
    }
    // A part that did not run shows no empty table and no explanation of its figures.
    let failover = section(&page, "Failover");
    assert!(failover.contains("<p class=\"note\">Not measured in this run.</p>"));
    assert!(!failover.contains("<table>") && !failover.contains("Recovery runs"));
    // Throughput alone: its three charts, the other parts' notes.
    report.throughput = throughput();
    let page = render(&report, DATE);
    assert_eq!(page.matches("<svg").count(), 3);
    assert!(page.contains("No goodput curve: the overload part did not run."));
}

#[test]
fn no_ratio_chart_when_no_task_was_measured_for_both_drivers() {
    let mut report = empty_report();
    let mut only_steadfast = driverbench();
    for task in &mut only_steadfast.tasks {
        task.official = Outcome::Failed {
            error: "boom".into(),
        };
    }
    report.driverbench = Some(only_steadfast);
    let page = render(&report, DATE);
    assert!(page.contains("No DriverBench ratio chart: no task was measured for both drivers."));
    assert!(!page.contains("class=\"chart ratios\""));
}

#[test]
fn every_table_is_there_and_targets_show_their_verdict() {
    let report = full_report();
    let page = render(&report, DATE);
    let tables: usize = report.sections().iter().map(|s| s.tables.len()).sum();
    assert_eq!(tables, 10);
    assert_eq!(page.matches("<table>").count(), tables);
    let targets = section(&page, "Targets");
    let count = |met: Option<bool>| report.targets.iter().filter(|t| t.met == met).count();
    assert_eq!(
        targets.matches("<td class=\"pass\">pass</td>").count(),
        count(Some(true))
    );
    assert_eq!(
        targets.matches("<td class=\"fail\">FAIL</td>").count(),
        count(Some(false))
    );
    assert!(count(Some(false)) > 0 && count(None) > 0);
    assert_eq!(targets.matches("<td>n/a</td></tr>").count(), count(None));
    assert!(targets.contains("<td>lowest 0.80x (Small doc insertOne) over 2 tasks</td>"));
}

#[test]
fn text_from_the_data_is_escaped() {
    let page = render(&full_report(), DATE);
    // The page's own two scripts, and none from the data.
    assert_eq!(page.matches("<script>").count(), 2);
    let escaped =
        "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;quoted&quot; | piped";
    // The command line (subtitle), a failed cell's note, a failover error.
    assert!(page.contains(&format!(
        "command: steadfast-bench --quick --report {escaped}"
    )));
    assert!(page.contains(&format!(
        "<li>steadfast (insert_one×16): failed: {escaped}</li>"
    )));
    assert!(page.contains(&format!("<td>{escaped}</td>")));
    assert!(!page.contains(HOSTILE));
}

#[test]
fn the_subtitle_has_the_machine_and_the_date() {
    let report = full_report();
    let page = render(&report, DATE);
    assert!(page.contains("<p class=\"subtitle\">command: steadfast-bench --quick --report "));
    assert!(page.contains(&format!(
        "\nmachine: {}\ngenerated: {DATE}</p>",
        report.machine_text()
    )));
    assert!(page.contains("<code>maxPoolSize=64</code>"));
}

#[test]
fn an_unwritable_report_path_is_a_clear_error() {
    let report = empty_report();
    let path = std::path::Path::new("/nonexistent-steadfast-dir/report.html");
    let error = write(&report, DATE, path).expect_err("no such folder");
    assert!(
        error.starts_with("cannot write the HTML report /nonexistent-steadfast-dir/report.html: "),
        "{error}"
    );
    assert!(crate::check_report_path(path).is_err());
    let folder = std::env::temp_dir();
    assert!(crate::check_report_path(&folder).is_err(), "a directory");
    assert!(crate::check_report_path(&folder.join("report.html")).is_ok());
    assert!(crate::check_report_path(std::path::Path::new("report.html")).is_ok());
}
