//! `steadfast demo`: the article's application, run through a failover.
//!
//! Several workers count events the way "How to write resilient MongoDB applications" does
//! (`updateOne({_id: day}, {$inc: {counter: 1}}, upsert)`) and read the counters back, on an
//! embedded 3-member blackpipe replica set, while a fixed schedule of faults plays: a stepdown
//! whose election takes a second, connections closed after writes were applied, connections
//! closed before commands ran, the primary partitioned, and an overload burst: on the embedded
//! deployment the primary's capacity (blackpipe's capacity model) drops to half of the load
//! the workers offer, and the report gives the goodput, attempts per success and errors of the
//! burst; on runs of 10 s or more the burst plays a second time with the client's
//! [`AdaptivePolicy`](steadfast::retries::AdaptivePolicy), so the two can be compared. Against
//! a real deployment `failCommand` rejects 30% of commands at random instead.
//! The workers never retry by themselves. At the end the increments the application saw
//! acknowledged are compared with the counters' final values: with steadfast's retries they
//! match exactly, and the run fails if they do not. `--no-retries` runs the same workload with
//! retries off to show what the application would have suffered.
//! On the embedded deployment a last act shows a `w: 1` write lost to a rollback beside a
//! `w: "majority"` write that survived ([`rollback`]).

mod rollback;
mod schedule;

use schedule::OverloadPlan;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use blackpipe::deployment::{Deployment, RolledBackWrite};
use bson::{Document, doc};
use clap::Args;
use steadfast::retries::RetryPolicy;

use crate::workload::events::DriverWatch;
use crate::workload::inject::{Injector, SimulatedFaults, restore_remote};
use crate::workload::ledger::{CounterBook, WriteProgress, day_keys};
use crate::workload::policy_switch::SwitchablePolicy;
use crate::workload::progress::{Display, LiveCounters, PrimaryProbe};
use crate::workload::report::{Report, ReportInputs};
use crate::workload::roles::{Consumer, Transfers};
use crate::workload::run::{RunPlan, execute};
use crate::workload::setup::{self, DATABASE};
use crate::workload::timeline::{self, Heading, TimelineRecorder};
use crate::workload::transfer_worker::BANK;
use crate::workload::verify::check_counters;
use crate::workload::worker::{OpMix, Workload};

/// The appName of the workload's client; fail points filter on it.
const APP_NAME: &str = "steadfast-demo";
/// How many per-day counters the workers share.
const COUNTERS: usize = 8;

/// Options of `steadfast demo`.
#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// How long the workload runs, in seconds.
    #[arg(long, default_value_t = 20.0)]
    seconds: f64,
    /// How many concurrent workers.
    #[arg(long, default_value_t = 8)]
    workers: usize,
    /// Run against this deployment instead of an embedded blackpipe replica set. Only the
    /// faults that fail points can produce are played, and only if the server allows
    /// `configureFailPoint` (mongod started with enableTestCommands=1). `failCommand` is
    /// limited to the demo's appName, but `onPrimaryTransactionalWrite` cannot be: it closes
    /// one write's connection, whichever application sent it. Never point it at production.
    #[arg(long)]
    uri: Option<String>,
    /// Print the report as JSON on standard output (progress goes to standard error).
    #[arg(long)]
    json: bool,
    /// Turn retryable writes and reads off and never retry (FailFast): what the application
    /// would suffer without the driver's help. Counters may then mismatch; that is reported,
    /// not treated as a failure.
    #[arg(long)]
    no_retries: bool,
    /// Seed of the workers' choices (which counter, increment or read).
    #[arg(long, default_value_t = 2016)]
    seed: u64,
    /// Also move money between accounts in transactions (the convenient API), with a commit
    /// whose reply is lost among the faults; afterwards the balances and transfer records are
    /// checked against blackpipe's store (embedded deployment only).
    #[arg(long)]
    transfers: bool,
    /// Watch the collection the writers write to (the accounts with `--transfers`, else the
    /// counters) with a change stream consumer shown live beside the counters; afterwards its
    /// events are checked against blackpipe's op log (embedded deployment only).
    #[arg(long)]
    consumer: bool,
    /// Also write the run as a self-contained HTML page: each member's role over time, the
    /// faults, the driver's view of each server, every operation's latency by outcome,
    /// throughput, retries and the invariants.
    #[arg(long, value_name = "FILE.html")]
    report: Option<PathBuf>,
}

type DemoResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// Where the demo runs.
enum Target {
    Embedded(Arc<Deployment>),
    Remote(String),
}

pub(crate) async fn run(args: DemoArgs) -> DemoResult {
    if !(args.seconds > 0.0 && args.seconds.is_finite()) {
        return Err("--seconds must be a positive number".into());
    }
    if args.workers == 0 {
        return Err("--workers must be at least 1".into());
    }
    if (args.transfers || args.consumer) && args.uri.is_some() {
        return Err(
            "--transfers and --consumer run on the embedded deployment only (their checks read blackpipe's store)"
                .into(),
        );
    }
    let retries = !args.no_retries;
    let duration = Duration::from_secs_f64(args.seconds);
    let recorder = args
        .report
        .as_ref()
        .map(|_| Arc::new(TimelineRecorder::new(Instant::now())));
    let driver = Arc::new(DriverWatch::recording(recorder.clone()));
    let target = match &args.uri {
        Some(uri) => Target::Remote(uri.clone()),
        None => Target::Embedded(Arc::new(setup::embedded_replica_set(args.seed).await?)),
    };
    let member_watch = match (&recorder, &target) {
        (Some(recorder), Target::Embedded(deployment)) => {
            Some(recorder.watch(Arc::clone(deployment)))
        }
        _ => None,
    };
    let (uri, collection_name) = match &target {
        Target::Embedded(deployment) => (
            setup::embedded_uri(deployment, APP_NAME, retries),
            "counters".to_owned(),
        ),
        Target::Remote(uri) => {
            let mut uri = setup::with_app_name(uri, APP_NAME);
            if !retries {
                uri.push_str("&retryWrites=false&retryReads=false");
            }
            // A collection of our own, so that earlier data cannot spoil the comparison.
            let run_id = format!(
                "counters_{}_{}",
                std::process::id(),
                bson::DateTime::now().timestamp_millis()
            );
            (uri, run_id)
        }
    };
    // On the embedded deployment, with retries, the client's policy is the default until the
    // second overload burst switches it to the adaptive policy.
    let switch = (retries && matches!(target, Target::Embedded(_)))
        .then(|| Arc::new(SwitchablePolicy::default()));
    let client = match &switch {
        Some(switch) => {
            let policy: Arc<dyn RetryPolicy> = Arc::clone(switch) as Arc<dyn RetryPolicy>;
            setup::connect_with_policy(&uri, Arc::clone(&driver), Some(policy)).await?
        }
        None => setup::connect(&uri, Arc::clone(&driver), retries).await?,
    };
    let app_name = client
        .options()
        .app_name
        .clone()
        .unwrap_or_else(|| APP_NAME.to_owned());
    let db = client.database(DATABASE);
    let counters = db.collection::<Document>(&collection_name);
    let live = Arc::new(LiveCounters::default());
    let (injector, primary): (Injector, PrimaryProbe) = match &target {
        Target::Embedded(deployment) => {
            let probe = Arc::clone(deployment);
            (
                Injector::Simulated({
                    let faults = SimulatedFaults::new(Arc::clone(deployment), &app_name)
                        .with_live(Arc::clone(&live));
                    match &switch {
                        Some(switch) => faults.with_policy_switch(Arc::clone(switch)),
                        None => faults,
                    }
                }),
                Box::new(move || probe.primary().and_then(|index| probe.host(index))),
            )
        }
        Target::Remote(_) => {
            let probe = Arc::clone(&driver);
            (
                Injector::Remote {
                    admin: client.database("admin"),
                    app_name: app_name.clone(),
                },
                Box::new(move || probe.primary()),
            )
        }
    };
    let injector = Arc::new(injector);
    let overload = match (&target, &switch) {
        (Target::Remote(_), _) => OverloadPlan::Random,
        (Target::Embedded(_), Some(_)) => OverloadPlan::CapacityThenAdaptive,
        (Target::Embedded(_), None) => OverloadPlan::Capacity,
    };
    let schedule = schedule::demo_schedule(duration, args.transfers, overload);
    let deployment_name = match &target {
        Target::Embedded(deployment) => {
            format!("embedded blackpipe replica set {}", deployment.uri())
        }
        Target::Remote(uri) => format!("deployment {}", redact(uri)),
    };
    if !args.json {
        println!("steadfast demo on the {deployment_name}");
        println!(
            "{} workers run updateOne({{_id: day}}, {{$inc: {{counter: 1}}}}, upsert) and read the counters back for {:.1} s; faults:",
            args.workers, args.seconds
        );
        for scheduled in &schedule {
            println!(
                "  +{:>5.1} s  {}",
                scheduled.at.as_secs_f64(),
                scheduled.fault
            );
        }
    }
    // The first round trip discovers the primary before the clock starts.
    db.run_command(doc! { "ping": 1 })
        .await
        .map_err(|e| format!("the deployment does not answer: {e}"))?;

    let watched = if args.transfers {
        BANK
    } else {
        collection_name.as_str()
    };
    let (transfers, consumer) = match &target {
        Target::Embedded(deployment) => {
            let transfers = if args.transfers {
                Some(Transfers::open(&client, deployment).await?)
            } else {
                None
            };
            let consumer = if args.consumer {
                let collection = db.collection::<Document>(watched);
                Some(Consumer::start(Arc::clone(deployment), collection, Arc::clone(&live)).await?)
            } else {
                None
            };
            (transfers, consumer)
        }
        Target::Remote(_) => (None, None),
    };
    let book = Arc::new(CounterBook::new(day_keys(COUNTERS)));
    let workload = Arc::new(Workload {
        counters: counters.clone(),
        inserts: db.collection::<Document>("inserts"),
        book: Arc::clone(&book),
        writes: Arc::new(WriteProgress::new()),
        live,
        mix: OpMix {
            increments: 3,
            reads: 1,
            inserts: 0,
            transfers: if args.transfers { 3 } else { 0 },
        },
        check_reads: matches!(target, Target::Embedded(_)),
        bank: transfers.as_ref().map(|t| Arc::clone(&t.bank)),
        record_samples: recorder.is_some(),
    });
    let mut outcome = execute(RunPlan {
        workload,
        injector: Arc::clone(&injector),
        schedule,
        one_at_a_time: true,
        workers: args.workers,
        duration,
        seed: args.seed,
        display: Display::choose(args.json),
        driver: Arc::clone(&driver),
        primary,
    })
    .await;

    let mut problems = match &*injector {
        Injector::Simulated(simulated) => simulated.restore().await,
        Injector::Remote { admin, .. } => restore_remote(admin).await,
    };
    let stream = match consumer {
        Some(consumer) => match consumer
            .finish(&outcome.ledger, watched, &rollbacks_of(&target))
            .await
        {
            Ok(check) => Some(check),
            Err(panic) => {
                outcome.panics.push(panic);
                None
            }
        },
        None => None,
    };
    let transfer_check = match (&transfers, &target) {
        (Some(transfers), Target::Embedded(deployment)) => {
            Some(transfers.check(&outcome.ledger, deployment)?)
        }
        _ => None,
    };
    drop(transfers);
    let finals = match &target {
        Target::Embedded(deployment) => setup::counters_in_store(deployment, &collection_name)?,
        Target::Remote(_) => {
            let finals = setup::counters_via_driver(&counters, book.keys()).await?;
            if let Err(error) = counters.drop().await {
                problems.push(format!("dropping {collection_name}: {error}"));
            }
            finals
        }
    };
    let bursts = match &*injector {
        Injector::Simulated(simulated) => simulated.bursts(),
        Injector::Remote { .. } => Vec::new(),
    };
    if let Injector::Simulated(simulated) = &*injector {
        for control in simulated.close_control_clients() {
            control.shutdown().await;
        }
    }
    client.shutdown().await;
    let act = match &target {
        Target::Embedded(deployment) => Some(rollback::play(deployment).await),
        Target::Remote(_) => None,
    };
    if let Some(watch) = member_watch {
        watch.finish().await;
    }
    let members = match &target {
        Target::Embedded(deployment) => deployment.hosts(),
        Target::Remote(_) => Vec::new(),
    };
    if let Target::Embedded(deployment) = &target {
        deployment.stop().await;
    }

    let counters = check_counters(&outcome.ledger, &finals);
    let mut report = Report::new(
        ReportInputs {
            command: "demo",
            deployment: deployment_name,
            seed: Some(args.seed),
            workers: args.workers,
            retries_enabled: retries,
            driver: &driver,
            counters,
            inserts: None,
        },
        &mut outcome,
    );
    report.cleanup_problems = problems;
    report.transfers = transfer_check;
    report.stream = stream;
    report.overload_bursts = bursts;
    if let Some(transfers) = &report.transfers {
        report.checks.extend(transfers.checks());
    }
    if let Some(stream) = &report.stream {
        report.checks.extend(stream.checks());
    }
    let act_lines = match act {
        Some(act) => {
            report.checks.push(act.check);
            act.lines
        }
        None => Vec::new(),
    };
    if let (Some(path), Some(recorder)) = (&args.report, &recorder) {
        let heading = Heading {
            title: "steadfast demo".to_owned(),
            subtitle: format!(
                "{} workers for {:.1} s on the {}, seed {}, retries {}",
                args.workers,
                args.seconds,
                report.deployment,
                args.seed,
                if retries { "on" } else { "off" }
            ),
            duration: recorder.elapsed(),
            members,
        };
        let mut page =
            recorder.timeline(heading, &outcome.faults, &outcome.ledger.samples, &report);
        page.checks
            .insert(0, timeline::counters_row(&report.counters, retries));
        timeline::write(path, &page, args.json)?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.to_text());
        for line in &act_lines {
            println!("{line}");
        }
        if !retries {
            let c = &report.counters;
            let failed = c.not_applied + c.ambiguous + c.applied_despite_error;
            println!(
                "retries were off: the application failed to count {failed} of {} events, and {} of those failures left it unable to know whether the event was counted",
                c.acknowledged + failed,
                c.ambiguous
            );
        }
    }
    if !report.panics.is_empty() {
        return Err(format!("{} task(s) panicked", report.panics.len()).into());
    }
    if retries && !report.counters.exact() {
        return Err("the counters do not match the acknowledged increments".into());
    }
    let violated: Vec<&str> = report
        .failing_checks(false)
        .iter()
        .map(|check| check.name)
        .collect();
    if retries && !violated.is_empty() {
        return Err(format!("violated: {}", violated.join(", ")).into());
    }
    Ok(())
}

/// The connection string without its password.
/// The writes rollbacks discarded on the embedded deployment (none on a real one: its
/// rollbacks are not observable from here).
fn rollbacks_of(target: &Target) -> Vec<RolledBackWrite> {
    match target {
        Target::Embedded(deployment) => deployment.rollbacks(),
        Target::Remote(_) => Vec::new(),
    }
}

fn redact(uri: &str) -> String {
    match (uri.find("://"), uri.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &uri[scheme + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &uri[..scheme + 3], &uri[at..]),
                None => uri.to_owned(),
            }
        }
        _ => uri.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn passwords_are_not_printed() {
        assert_eq!(
            redact("mongodb://u:secret@h:1/?x=1"),
            "mongodb://u:***@h:1/?x=1"
        );
        assert_eq!(redact("mongodb://h:1/"), "mongodb://h:1/");
    }
}
