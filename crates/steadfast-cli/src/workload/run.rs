//! Running the workers, the fault schedule and the progress display together.

use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio::task::JoinError;

use super::events::DriverWatch;
use super::fault::ScheduledFault;
use super::inject::{FaultBoard, FaultRecord, Injector, Pacing, play};
use super::ledger::Ledger;
use super::progress::{self, Display, PrimaryProbe, ProgressSources};
use super::worker::{self, Workload};

/// What a run needs.
pub(crate) struct RunPlan {
    pub(crate) workload: Arc<Workload>,
    pub(crate) injector: Arc<Injector>,
    pub(crate) schedule: Vec<ScheduledFault>,
    /// Each fault waits for the application to recover from the previous one (the demo).
    pub(crate) one_at_a_time: bool,
    pub(crate) workers: usize,
    pub(crate) duration: Duration,
    pub(crate) seed: u64,
    pub(crate) display: Display,
    pub(crate) driver: Arc<DriverWatch>,
    pub(crate) primary: PrimaryProbe,
}

/// What a run produced.
pub(crate) struct RunOutcome {
    /// Every worker's log, merged.
    pub(crate) ledger: Ledger,
    /// The faults, as injected.
    pub(crate) faults: Vec<FaultRecord>,
    /// Panics of workers or of the fault player, with their messages.
    pub(crate) panics: Vec<String>,
    /// From the start until the last worker finished.
    pub(crate) elapsed: Duration,
}

/// Runs `plan`: `workers` workers until the duration is over, the schedule alongside, and the
/// progress display; returns once every worker and the schedule are done.
///
/// # Cancel safety
///
/// Not cancel safe: dropping the future leaves the tasks running (and faults in place).
pub(crate) async fn execute(plan: RunPlan) -> RunOutcome {
    let started = Instant::now();
    let deadline = started + plan.duration;
    let board = Arc::new(FaultBoard::default());
    let (stop_display, display_stopped) = watch::channel(false);
    let display = tokio::spawn(progress::show(
        ProgressSources {
            live: Arc::clone(&plan.workload.live),
            driver: Arc::clone(&plan.driver),
            board: Arc::clone(&board),
            primary: plan.primary,
        },
        plan.display,
        started,
        plan.duration,
        display_stopped,
    ));
    let player = tokio::spawn(play(
        Arc::clone(&plan.injector),
        plan.schedule,
        started,
        Arc::clone(&board),
        Pacing {
            one_at_a_time: plan.one_at_a_time,
            deadline,
            writes: Arc::clone(&plan.workload.writes),
        },
    ));
    let workers: Vec<_> = (0..plan.workers)
        .map(|index| {
            tokio::spawn(worker::run(
                index,
                Arc::clone(&plan.workload),
                worker::worker_seed(plan.seed, index),
                deadline,
            ))
        })
        .collect();

    let mut ledger = Ledger::default();
    let mut panics = Vec::new();
    for (index, handle) in workers.into_iter().enumerate() {
        match handle.await {
            Ok(log) => ledger.absorb(log),
            Err(error) => panics.push(format!("worker {index}: {}", join_failure(error))),
        }
    }
    let elapsed = started.elapsed();
    let faults = match player.await {
        Ok(records) => records,
        Err(error) => {
            panics.push(format!("fault schedule: {}", join_failure(error)));
            Vec::new()
        }
    };
    let _ = stop_display.send(true);
    if let Err(error) = display.await {
        panics.push(format!("progress display: {}", join_failure(error)));
    }
    RunOutcome {
        ledger,
        faults,
        panics,
        elapsed,
    }
}

/// Why a task did not return: its panic message, or that it was cancelled.
fn join_failure(error: JoinError) -> String {
    if error.is_panic() {
        format!("panicked: {}", panic_message(&error.into_panic()))
    } else {
        "cancelled".to_owned()
    }
}

fn panic_message(payload: &Box<dyn Any + Send>) -> String {
    if let Some(message) = payload.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else {
        "a panic without a message".to_owned()
    }
}
