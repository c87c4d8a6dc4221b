//! `steadfast torture`: a randomized fault schedule under concurrent load, then the
//! invariants the driver must keep whatever happened.
//!
//! Workers increment counters, insert documents with client-generated `_id`s and read the
//! counters back against an embedded 3-member blackpipe replica set, while faults drawn from a
//! seeded generator play: stepdowns, kills and restarts, partitions, connections closed
//! before and after writes, slow members, overload. Afterwards the run checks, against
//! blackpipe's store rather than through the driver, that no acknowledged write was lost,
//! none was applied twice, every counter agrees with what the application was told (exact, up
//! to increments reported with an unknown outcome), no task panicked, and that once the client shut down no task,
//! connection or live heap was left behind. Any violation exits non-zero with the seed that
//! reproduces the schedule; so does an invariant that could not be checked, under `--strict`
//! or `CI=true`.

mod invariants;
mod memory;
mod panics;
mod schedule;
mod settle;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bson::{Document, doc};
use clap::{Args, ValueEnum};
use rand::SeedableRng;
use rand::rngs::StdRng;

use crate::workload::durability::{Discarded, Durability, check_convergence, discarded_in};
use crate::workload::events::DriverWatch;
use crate::workload::inject::{Injector, SimulatedFaults};
use crate::workload::ledger::{CounterBook, WriteProgress, day_keys};
use crate::workload::progress::{Display, LiveCounters};
use crate::workload::report::{Report, ReportInputs};
use crate::workload::run::{RunPlan, execute};
use crate::workload::setup::{self, DATABASE};
use crate::workload::timeline::{self, Heading, TimelineRecorder};
use crate::workload::verify::{Rollbacks, check_counters_after, check_inserts};
use crate::workload::worker::Workload;

use crate::workload::roles::{Consumer, Transfers, WorkloadKind};
use crate::workload::transfer_worker::BANK;
use crate::workload::verify::{CounterCheck, InsertCheck};
use invariants::Observations;
use steadfast::options::CollectionOptions;

/// The appName of the workload's client; fail points filter on it.
const APP_NAME: &str = "steadfast-torture";
/// The counters' and inserts' collections.
const COUNTERS: &str = "counters";
const INSERTS: &str = "inserts";
/// How long the deployment may take to close every connection once the clients are gone.
const CONNECTION_DRAIN_LIMIT: Duration = Duration::from_secs(10);

/// Options of `steadfast torture`.
#[derive(Debug, Args)]
pub(crate) struct TortureArgs {
    /// How long the workload runs, in seconds (faults play until the end).
    #[arg(long, default_value_t = 30.0)]
    seconds: f64,
    /// Seed of the fault schedule and the workers' choices; printed, so that any run can be
    /// replayed. Random when not given.
    #[arg(long)]
    seed: Option<u64>,
    /// How many concurrent workers.
    #[arg(long, default_value_t = 8)]
    workers: usize,
    /// Print the report as JSON on standard output (progress goes to standard error).
    #[arg(long)]
    json: bool,
    /// Fail the run when an invariant could not be checked (the live heap not measured, no
    /// write acknowledged...). On by default when the environment says `CI=true`.
    #[arg(long)]
    strict: bool,
    /// What the writers do: the article's counters, or transfers between accounts in
    /// transactions (the convenient API), with lost commit replies among the faults.
    #[arg(long, value_enum, default_value_t = WorkloadKind::Counters)]
    workload: WorkloadKind,
    /// Also run a change stream consumer on the collection the writers write to, and check
    /// that it received every applied write exactly once, in op-log order.
    #[arg(long)]
    consumer: bool,
    /// The write concern of the workers' increments and inserts: with `1`, writes a primary
    /// cut off from its secondaries acknowledged are rolled back when it rejoins, and the
    /// report counts and names them; with `majority` no acknowledged write may be lost.
    /// Transfers commit with `majority` either way.
    #[arg(long, value_enum, default_value_t = Durability::Majority)]
    write_concern: Durability,
    /// Also write the run as a self-contained HTML page: each member's role over time, the
    /// faults, the driver's view of each server, every operation's latency by outcome,
    /// throughput, retries and the invariants. The recording it needs is allowed for in the
    /// memory invariant.
    #[arg(long, value_name = "FILE.html")]
    report: Option<PathBuf>,
}

impl TortureArgs {
    /// Whether unchecked invariants fail the run: `--strict`, or CI.
    fn strict(&self) -> bool {
        self.strict || std::env::var("CI").is_ok_and(|ci| ci == "true")
    }
}

type TortureResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

pub(crate) async fn run(args: TortureArgs) -> TortureResult {
    if !(args.seconds > 0.0 && args.seconds.is_finite()) {
        return Err("--seconds must be a positive number".into());
    }
    if args.workers == 0 {
        return Err("--workers must be at least 1".into());
    }
    let seed = args.seed.unwrap_or_else(fresh_seed);
    let duration = Duration::from_secs_f64(args.seconds);
    let faults = schedule::FaultMix {
        transactions: args.workload == WorkloadKind::Transfer,
        change_stream: args.consumer,
        isolation: true,
    };
    let schedule = schedule::random_schedule(&mut StdRng::seed_from_u64(seed), duration, faults);
    if !args.json {
        println!(
            "steadfast torture: seed {seed}, {:.1} s, {} workers, {:?} workload with w: {}{}, {} faults",
            args.seconds,
            args.workers,
            args.workload,
            args.write_concern.name(),
            if args.consumer {
                " and a change stream consumer"
            } else {
                ""
            },
            schedule.len()
        );
        for scheduled in &schedule {
            println!(
                "  +{:>6.2} s  {}",
                scheduled.at.as_secs_f64(),
                scheduled.fault
            );
        }
    }

    let panic_watch = panics::PanicWatch::install();
    let memory_before = memory::live_heap_bytes();
    let recorder = args
        .report
        .as_ref()
        .map(|_| Arc::new(TimelineRecorder::new(Instant::now())));
    let deployment = Arc::new(setup::embedded_replica_set(seed).await?);
    let member_watch = recorder
        .as_ref()
        .map(|recorder| recorder.watch(Arc::clone(&deployment)));
    let driver = Arc::new(DriverWatch::recording(recorder.clone()));
    let uri = setup::embedded_uri(&deployment, APP_NAME, true);
    let client = setup::connect(&uri, Arc::clone(&driver), true).await?;
    let tasks = client.background_tasks();
    let db = client.database(DATABASE);
    db.run_command(doc! { "ping": 1 })
        .await
        .map_err(|e| format!("the embedded deployment does not answer: {e}"))?;
    let simulated = SimulatedFaults::new(Arc::clone(&deployment), APP_NAME);
    let injector = Arc::new(Injector::Simulated(simulated));
    let transfers = match args.workload {
        WorkloadKind::Transfer => Some(Transfers::open(&client, &deployment).await?),
        WorkloadKind::Counters => None,
    };
    let watched = args.workload.watched(INSERTS);
    let live = Arc::new(LiveCounters::default());
    let consumer = if args.consumer {
        let collection = db.collection::<Document>(watched);
        Some(Consumer::start(Arc::clone(&deployment), collection, Arc::clone(&live)).await?)
    } else {
        None
    };
    let probe = Arc::clone(&deployment);
    let durable = CollectionOptions::default().write_concern(args.write_concern.write_concern());
    let workload = Arc::new(Workload {
        counters: db.collection_with_options::<Document>(COUNTERS, durable.clone()),
        inserts: db.collection_with_options::<Document>(INSERTS, durable),
        book: Arc::new(CounterBook::new(day_keys(8))),
        writes: Arc::new(WriteProgress::new()),
        live,
        mix: args.workload.mix(),
        check_reads: true,
        bank: transfers.as_ref().map(|t| Arc::clone(&t.bank)),
        record_samples: recorder.is_some(),
    });
    let mut outcome = execute(RunPlan {
        workload,
        injector: Arc::clone(&injector),
        schedule,
        one_at_a_time: false,
        workers: args.workers,
        duration,
        seed,
        display: Display::choose(args.json),
        driver: Arc::clone(&driver),
        primary: Box::new(move || probe.primary().and_then(|index| probe.host(index))),
    })
    .await;

    let Injector::Simulated(simulated) = &*injector else {
        return Err("the torture run always injects through blackpipe".into());
    };
    let mut restore_problems = simulated.restore().await;
    restore_problems.extend(settle::catch_up(&deployment).await);
    let rollbacks = deployment.rollbacks();
    let discarded = Discarded::from_rollbacks(&rollbacks);
    // After the restore, so that the consumer drains from a healthy deployment.
    let stream = match consumer {
        Some(consumer) => match consumer.finish(&outcome.ledger, watched, &rollbacks).await {
            Ok(check) => Some(check),
            Err(panic) => {
                outcome.panics.push(panic);
                None
            }
        },
        None => None,
    };
    for control in simulated.close_control_clients() {
        control.shutdown().await;
    }
    drop(db);
    client.shutdown().await;
    let live_tasks = tasks.live();
    let open_connections = wait_for_no_connections(&deployment).await;

    let store = deployment.store();
    let finals = setup::counters_in_store(&deployment, COUNTERS)?;
    let stored_ids = setup::ids_in_store(&deployment, INSERTS);
    let counter_writes_applied = store.writes_applied(&format!("{DATABASE}.{COUNTERS}"));
    let insert_writes_applied = store.writes_applied(&format!("{DATABASE}.{INSERTS}"));
    // The primary's store: released with the deployment, before the memory is measured.
    drop(store);
    let transfer_check = match &transfers {
        Some(transfers) => Some(transfers.check(&outcome.ledger, &deployment)?),
        None => None,
    };
    drop(transfers);
    let mut collections = vec![COUNTERS, INSERTS];
    if args.workload == WorkloadKind::Transfer {
        collections.push(BANK);
    }
    let convergence = check_convergence(&settle::member_data(&deployment, &collections));
    drop(rollbacks);
    if let Some(watch) = member_watch {
        watch.finish().await;
    }
    let members = deployment.hosts();
    // The page's time axis ends here: what follows is the checks, with no deployment.
    let recorded_for = recorder.as_ref().map(|recorder| recorder.elapsed());
    deployment.stop().await;
    let deployment_name = format!("embedded blackpipe replica set {}", deployment.uri());
    // The injector shares the deployment: both go, so the store's data is freed before the
    // memory is measured.
    drop(injector);
    if Arc::strong_count(&deployment) > 1 {
        return Err("the deployment is still referenced after the run".into());
    }
    drop(deployment);
    // blackpipe's per-connection, hello-stream and control tasks finish just after the
    // deployment reports it stopped, and free what they hold (up to a whole store's worth,
    // through their references to the deployment) as they end: wait for them, or a slow
    // machine reports their memory as leaked.
    wait_for_no_tasks().await;
    let (counters, inserts, stale_reads_after_rollback) = check_writes(
        &mut outcome.ledger,
        &finals,
        &stored_ids,
        &discarded,
        args.write_concern,
    );
    // The findings name every write a rollback discarded (thousands in a long w: 1 run) and
    // stay alive, with the report's copy, when the heap is measured: the copy is made here,
    // with nothing else running, and what it took is allowed twice.
    let before_copy = memory::live_heap_bytes();
    let (counters_copy, inserts_copy) = (counters.clone(), inserts.clone());
    let findings_heap = before_copy
        .zip(memory::live_heap_bytes())
        .map_or(0, |(before, after)| after.saturating_sub(before));
    drop((discarded, stored_ids));

    let mut report = Report::new(
        ReportInputs {
            command: "torture",
            deployment: deployment_name,
            seed: Some(seed),
            workers: args.workers,
            retries_enabled: true,
            driver: &driver,
            counters: counters_copy,
            inserts: Some(inserts_copy),
        },
        &mut outcome,
    );
    report.panics.extend(panic_watch.finish());
    report.transfers = transfer_check;
    report.stream = stream;
    report.write_concern = Some(args.write_concern);
    report.convergence = Some(convergence.clone());
    // The report's recording stays for the page written after the checks; what it holds is
    // measured by copying it, with nothing else running, and allowed for.
    let mut recording = recorder.as_ref().map(|recorder| {
        let heading = Heading {
            title: "steadfast torture".to_owned(),
            subtitle: format!(
                "seed {seed}, {:.1} s, {} workers, {:?} workload with w: {}, on the {}",
                args.seconds,
                args.workers,
                args.workload,
                args.write_concern.name(),
                report.deployment
            ),
            duration: recorded_for.unwrap_or_else(|| recorder.elapsed()),
            members,
        };
        recorder.timeline(heading, &outcome.faults, &outcome.ledger.samples, &report)
    });
    drop(recorder);
    let report_heap = recording.as_ref().map_or(0, |recording| {
        let before = memory::live_heap_bytes();
        let copy = recording.clone();
        let after = memory::live_heap_bytes();
        drop(copy);
        before
            .zip(after)
            .map_or(0, |(before, after)| after.saturating_sub(before))
    });
    // The ledger holds an entry per operation: release it before measuring memory.
    drop(outcome);
    let memory_after = memory::live_heap_bytes();
    let observations = Observations {
        counters,
        inserts,
        counter_writes_applied,
        insert_writes_applied,
        panics: report.panics.clone(),
        stale_reads: report.stale_reads.len(),
        stale_reads_after_rollback,
        durability: args.write_concern,
        convergence: Some(convergence),
        anomalies: report.anomalies.len(),
        live_tasks,
        open_connections,
        memory: memory_before.zip(memory_after),
        findings_heap,
        report_heap,
        operations: report.operations,
        faults: report.faults.len(),
        restore_problems,
    };
    report.checks = invariants::evaluate(&observations);
    if let Some(transfers) = &report.transfers {
        report.checks.extend(transfers.checks());
    }
    if let Some(stream) = &report.stream {
        report.checks.extend(stream.checks());
    }

    if let (Some(path), Some(recording)) = (&args.report, &mut recording) {
        recording.checks = timeline::check_rows(&report);
        timeline::write(path, recording, args.json)?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.to_text());
    }
    let failing = report.failing_checks(args.strict());
    if failing.is_empty() {
        if !args.json {
            println!("torture: no invariant violated (seed {seed})");
        }
        Ok(())
    } else {
        let names: Vec<&str> = failing.iter().map(|check| check.name).collect();
        Err(format!(
            "invariants violated or, strict, not checked: {}; reproduce with: steadfast torture --seconds {} --seed {seed} --workers {} --write-concern {} --workload {}{}",
            names.join(", "),
            args.seconds,
            args.workers,
            args.write_concern.name(),
            args.workload.to_possible_value().map_or("counters".to_owned(), |v| v.get_name().to_owned()),
            if args.consumer { " --consumer" } else { "" }
        )
        .into())
    }
}

/// The counters and inserts checked against the primary's data and the writes rollbacks
/// discarded; the stale reads those rollbacks explain are taken out of the ledger and
/// counted.
fn check_writes(
    ledger: &mut crate::workload::ledger::Ledger,
    finals: &std::collections::BTreeMap<String, i64>,
    stored_ids: &std::collections::BTreeMap<String, usize>,
    discarded: &[Discarded],
    durability: Durability,
) -> (CounterCheck, InsertCheck, usize) {
    let counters_discarded = discarded_in(discarded, &format!("{DATABASE}.{COUNTERS}"));
    let inserts_discarded = discarded_in(discarded, &format!("{DATABASE}.{INSERTS}"));
    let explained =
        settle::explained_by_rollbacks(&mut ledger.stale_reads, &counters_discarded, durability);
    let counters = check_counters_after(
        ledger,
        finals,
        Rollbacks {
            discarded: &counters_discarded,
            durability,
        },
    );
    let inserts = check_inserts(
        &ledger.inserts,
        stored_ids,
        Rollbacks {
            discarded: &inserts_discarded,
            durability,
        },
    );
    (counters, inserts, explained)
}

/// Waits until the deployment has no open connection, for at most [`CONNECTION_DRAIN_LIMIT`];
/// returns how many are still open. Connections close asynchronously on the server side
/// after the client closed its sockets, so the count is re-read until it reaches zero.
async fn wait_for_no_connections(deployment: &blackpipe::deployment::Deployment) -> usize {
    let give_up = Instant::now() + CONNECTION_DRAIN_LIMIT;
    loop {
        let open = deployment.open_connections();
        if open == 0 || Instant::now() >= give_up {
            return open;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits until no task is alive on this runtime (the run's own future is not a task), for at
/// most [`CONNECTION_DRAIN_LIMIT`]. A task still alive then is not an error here: the memory
/// check that follows reports whatever it holds.
async fn wait_for_no_tasks() {
    let runtime = tokio::runtime::Handle::current();
    let give_up = Instant::now() + CONNECTION_DRAIN_LIMIT;
    while runtime.metrics().num_alive_tasks() > 0 && Instant::now() < give_up {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A seed for a run that was not given one.
fn fresh_seed() -> u64 {
    use rand::Rng;
    rand::rng().random()
}
