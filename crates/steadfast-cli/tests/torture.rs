//! The demo and a short torture run through the built `steadfast` binary, as CI runs them:
//! both must exit successfully, the demo with exact counters, torture with every invariant held.

use std::process::{Command, Output};

use blackpipe::deployment::{Deployment, DeploymentConfig};

fn steadfast(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_steadfast"))
        .args(args)
        .output()
        .expect("the steadfast binary runs")
}

fn explain(output: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn the_demo_counts_exactly_through_its_faults() {
    let output = steadfast(&["demo", "--seconds", "3", "--workers", "4"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", explain(&output));
    assert!(
        stdout
            .lines()
            .any(|line| line.starts_with("counters exact: yes")),
        "{}",
        explain(&output)
    );
    // The stepdown is always played first, even in a three-second run.
    assert!(stdout.contains("stepdown"), "{}", explain(&output));
    // The last act: a w:1 write rolled back beside a majority write that survived.
    assert!(
        stdout.contains("[held] a w:1 write rolled back, a majority write survived"),
        "{}",
        explain(&output)
    );
    assert!(
        stdout.contains("rollbacks() lists steadfast_demo.rollback_demo w1-write"),
        "{}",
        explain(&output)
    );
    assert!(
        stdout.contains("every member now holds \"majority-write\" and none holds \"w1-write\""),
        "{}",
        explain(&output)
    );
}

#[test]
fn the_demo_report_is_json_with_json() {
    let output = steadfast(&["demo", "--seconds", "2", "--workers", "2", "--json"]);
    assert!(output.status.success(), "{}", explain(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", explain(&output)));
    assert_eq!(report["command"], "demo");
    assert_eq!(report["retries_enabled"], true);
    let counters = &report["counters"];
    assert_eq!(
        counters["mismatches"].as_array().map(Vec::len),
        Some(0),
        "{counters}"
    );
    assert_eq!(
        counters["acknowledged"], counters["final_total"],
        "{counters}"
    );
    assert!(
        report["operations"].as_u64().is_some_and(|n| n > 0),
        "{report}"
    );
    assert!(
        report["faults"].as_array().is_some_and(|f| !f.is_empty()),
        "{report}"
    );
}

/// Every invariant torture checks, in report order: a check that disappears fails the test.
const INVARIANTS: [&str; 13] = [
    "no acknowledged write lost",
    "no write applied twice",
    "failed writes reported truthfully",
    "counters agree with the reported outcomes",
    "reads saw every acknowledged write",
    "no anomalous reply or hung operation",
    "no panic",
    "no leaked task",
    "no leaked connection",
    "live heap back to its baseline",
    "deployment healthy after the faults",
    "every member holds the same data",
    "rollbacks account for every missing write",
];

#[test]
fn a_short_torture_run_holds_every_invariant() {
    let output = steadfast(&[
        "torture",
        "--seconds",
        "4",
        "--seed",
        "7",
        "--workers",
        "4",
        "--json",
        "--strict",
    ]);
    assert!(output.status.success(), "{}", explain(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", explain(&output)));
    assert_eq!(report["seed"], 7);
    let checks = report["checks"].as_array().expect("checks");
    let names: Vec<&str> = checks.iter().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(names, INVARIANTS, "{}", explain(&output));
    for check in checks {
        assert_eq!(check["verdict"], "held", "{check}");
    }
    // The write checks had something to check.
    assert!(
        report["counters"]["acknowledged"]
            .as_u64()
            .is_some_and(|n| n > 0),
        "{}",
        report["counters"]
    );
}

/// Runs `torture` with `extra` options (4 s, 4 workers, strict JSON) and returns its report,
/// after asserting that it succeeded and that every check held.
fn strict_torture(extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "torture",
        "--seconds",
        "4",
        "--workers",
        "4",
        "--json",
        "--strict",
    ];
    args.extend_from_slice(extra);
    let output = steadfast(&args);
    assert!(output.status.success(), "{}", explain(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", explain(&output)));
    for check in report["checks"].as_array().expect("checks") {
        assert_eq!(check["verdict"], "held", "{check}");
    }
    report
}

/// Runs `torture` with seed 7 and `extra` options and returns the names of its checks, after
/// asserting that every one held.
fn torture_checks(extra: &[&str]) -> Vec<String> {
    let mut args = vec!["--seed", "7"];
    args.extend_from_slice(extra);
    strict_torture(&args)["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter_map(|c| c["name"].as_str().map(str::to_owned))
        .collect()
}

/// The consumer's checks come after the common ones, and its stream saw the inserts.
#[test]
fn a_torture_run_with_a_consumer_checks_its_change_stream() {
    let names = torture_checks(&["--consumer"]);
    assert_eq!(
        names[INVARIANTS.len()..],
        [
            "change stream delivered every applied write exactly once",
            "change stream events in op-log order",
            "change stream showed nothing that was not applied",
            "change stream showed no write later rolled back",
        ],
        "{names:?}"
    );
}

/// A transfer run holds every common invariant and adds the four transfer invariants.
#[test]
fn a_transfer_torture_run_checks_its_transfers() {
    let names = torture_checks(&["--workload", "transfer"]);
    assert_eq!(
        names[INVARIANTS.len()..],
        [
            "total balance unchanged",
            "every committed transfer applied exactly once",
            "no failed transfer applied",
            "no transaction half applied",
        ],
        "{names:?}"
    );
}

/// [`strict_torture`], also asserting that the primary was isolated.
fn torture_report(extra: &[&str]) -> serde_json::Value {
    let report = strict_torture(extra);
    let isolated = report["faults"]
        .as_array()
        .expect("faults")
        .iter()
        .any(|fault| fault["kind"] == "isolate-primary" && fault["skipped"].is_null());
    assert!(
        isolated,
        "the seed isolates the primary: {}",
        report["faults"]
    );
    report
}

fn check_detail(report: &serde_json::Value, name: &str) -> String {
    report["checks"]
        .as_array()
        .and_then(|checks| checks.iter().find(|check| check["name"] == name))
        .and_then(|check| check["detail"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// w: 1: the isolated primary acknowledges writes that its rejoining rolls back; the report
/// counts them and names each, and every one missing is one rollbacks() lists.
#[test]
fn a_w1_torture_run_counts_and_names_the_writes_rolled_back() {
    let report = torture_report(&["--seed", "3", "--write-concern", "1"]);
    assert_eq!(report["write_concern"], "1");
    let inserts = &report["inserts"];
    let lost = inserts["lost_to_rollback"]
        .as_array()
        .expect("named inserts");
    let increments = report["counters"]["lost_to_rollback"].as_u64().unwrap_or(0);
    assert!(!lost.is_empty() || increments > 0, "{report}");
    let detail = check_detail(&report, "rollbacks account for every missing write");
    for id in lost.iter().filter_map(|id| id.as_str()) {
        assert!(
            detail.contains(&format!("steadfast_demo.inserts {id}")),
            "{id} unnamed: {detail}"
        );
    }
    assert!(
        check_detail(&report, "no acknowledged write lost").contains("as w: 1 allows"),
        "{report}"
    );
}

/// w: majority, through the same isolation: nothing acknowledged is lost, whatever the
/// rollbacks discarded (writes whose retry applied them again on the new primary), and the
/// change stream never showed a write that was later rolled back.
#[test]
fn a_majority_torture_run_loses_no_acknowledged_write_to_a_rollback() {
    let report = torture_report(&["--seed", "3", "--write-concern", "majority", "--consumer"]);
    assert_eq!(report["write_concern"], "majority");
    assert_eq!(report["counters"]["lost_to_rollback"], 0, "{report}");
    assert_eq!(
        report["inserts"]["lost_to_rollback"]
            .as_array()
            .map(Vec::len),
        Some(0),
        "{report}"
    );
    assert_eq!(
        report["convergence"]["differences"]
            .as_array()
            .map(Vec::len),
        Some(0),
        "{report}"
    );
}

/// Transfers through an isolated primary and its rollback: causally consistent sessions that
/// saw the discarded branch read after a cluster time the new primary never applied (it holds
/// everything of the set's branch before it, so the read does not wait), and the transfer
/// invariants hold.
#[test]
fn a_transfer_run_through_an_isolated_primary_keeps_its_invariants() {
    let report = torture_report(&["--seed", "2", "--workload", "transfer"]);
    assert_eq!(
        report["anomalies"].as_array().map(Vec::len),
        Some(0),
        "{report}"
    );
    assert!(report["transfers"].is_object(), "{report}");
}

#[test]
fn the_demo_runs_against_a_deployment_given_by_uri() {
    // A deployment the demo does not control: only fail points are available to it.
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let deployment = runtime
        .block_on(Deployment::start(
            DeploymentConfig::replica_set(3).with_port(0),
        ))
        .expect("blackpipe starts");
    let uri = format!(
        "{}&heartbeatFrequencyMS=500&serverSelectionTimeoutMS=10000",
        deployment.uri()
    );
    let output = steadfast(&["demo", "--uri", &uri, "--seconds", "3", "--workers", "2"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", explain(&output));
    assert!(
        stdout
            .lines()
            .any(|line| line.starts_with("counters exact: yes")),
        "{}",
        explain(&output)
    );
    assert!(
        stdout.contains("skipped: not available against a real deployment"),
        "{}",
        explain(&output)
    );
    // The demo dropped the collection it created for the run.
    let databases = deployment.store().database_names();
    assert!(
        !databases.iter().any(|db| db == "steadfast_demo"),
        "{databases:?}"
    );
    runtime.block_on(deployment.stop());
}

#[test]
fn invalid_arguments_fail() {
    let output = steadfast(&["torture", "--seconds", "0"]);
    assert!(!output.status.success(), "{}", explain(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("--seconds"),
        "{}",
        explain(&output)
    );
}
