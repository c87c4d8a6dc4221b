//! Injecting faults: through the control API of an embedded blackpipe deployment, or through
//! `configureFailPoint` alone on a real deployment.
//!
//! Fail points are configured with `appName` set to the workload's application name where
//! `failCommand` allows it, so that on a shared deployment only this run is disturbed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use blackpipe::deployment::{Deployment, Health, Role};
use blackpipe::failpoint::{FailPointMode, Overload};
use bson::{Document, doc};
use serde::Serialize;

use super::burst::{self, BurstFigures};
use super::fault::{Fault, ScheduledFault, Target};
use super::ledger::WriteProgress;
use super::policy_switch::SwitchablePolicy;
use super::progress::LiveCounters;

/// The longest a control command may take: a partitioned member holds requests until it heals.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(5);
/// The commands that an overload or a slow member affects on a real deployment.
const WORKLOAD_COMMANDS: &[&str] = &["update", "insert", "find"];

/// What happened when a fault was injected.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct FaultRecord {
    /// Offset from the start of the run, in milliseconds.
    pub(crate) at_ms: u64,
    /// `stepdown`, `kill`, ...
    pub(crate) kind: &'static str,
    /// What the fault did.
    pub(crate) description: String,
    /// The member it hit, when it hit one.
    pub(crate) member: Option<String>,
    /// Why it could not be injected, if it could not.
    pub(crate) skipped: Option<String>,
    /// When it was injected (not serialised: reports use `at_ms`).
    #[serde(skip)]
    pub(crate) injected: Instant,
    /// How long it was meant to last (zero for an instant fault), for the HTML report.
    #[serde(skip)]
    pub(crate) lasted: Duration,
}

/// The fault currently being played, for the progress display.
#[derive(Debug, Default)]
pub(crate) struct FaultBoard {
    current: Mutex<Option<String>>,
}

impl FaultBoard {
    fn set(&self, fault: Option<String>) {
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = fault;
    }

    /// The fault being played, if any.
    pub(crate) fn current(&self) -> Option<String> {
        self.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Where faults go.
pub(crate) enum Injector {
    /// An embedded blackpipe deployment: every fault is available.
    Simulated(SimulatedFaults),
    /// A real deployment: fail points only, configured on the primary through the workload's
    /// own client.
    Remote {
        /// The `admin` database of a client connected to the deployment.
        admin: steadfast::Database,
        /// The workload's appName, which the fail points filter on.
        app_name: String,
    },
}

/// The control side of an embedded deployment.
pub(crate) struct SimulatedFaults {
    deployment: Arc<Deployment>,
    app_name: String,
    /// One direct connection per member for `configureFailPoint`, opened on first use.
    control: Mutex<HashMap<String, steadfast::Client>>,
    /// The application's live counters, for the figures of overload bursts.
    live: Option<Arc<LiveCounters>>,
    /// The figures of the overload bursts played so far.
    bursts: Mutex<Vec<BurstFigures>>,
    /// The workload client's policy, switched to adaptive for the bursts that ask for it.
    policy: Option<Arc<SwitchablePolicy>>,
}

impl SimulatedFaults {
    /// Faults for `deployment`; fail points filter on `app_name`.
    pub(crate) fn new(deployment: Arc<Deployment>, app_name: impl Into<String>) -> Self {
        SimulatedFaults {
            deployment,
            app_name: app_name.into(),
            control: Mutex::new(HashMap::new()),
            live: None,
            bursts: Mutex::new(Vec::new()),
            policy: None,
        }
    }

    /// Switches `policy` to adaptive during the overload bursts that ask for it.
    pub(crate) fn with_policy_switch(mut self, policy: Arc<SwitchablePolicy>) -> Self {
        self.policy = Some(policy);
        self
    }

    /// Reads the application's successes and failures from `live` during overload bursts.
    pub(crate) fn with_live(mut self, live: Arc<LiveCounters>) -> Self {
        self.live = Some(live);
        self
    }

    /// The figures of every overload burst played so far.
    pub(crate) fn bursts(&self) -> Vec<BurstFigures> {
        self.bursts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn resolve(&self, target: Target) -> Result<usize, String> {
        let topology = self.deployment.topology();
        match target {
            Target::Primary => topology.primary().ok_or_else(|| "no primary".to_owned()),
            Target::Secondary { pick } => {
                let secondaries: Vec<usize> = topology
                    .nodes()
                    .iter()
                    .enumerate()
                    .filter(|(_, node)| node.role() == Role::Secondary)
                    .map(|(index, _)| index)
                    .collect();
                if secondaries.is_empty() {
                    return Err("no secondary".to_owned());
                }
                Ok(secondaries[pick % secondaries.len()])
            }
        }
    }

    fn host(&self, index: usize) -> String {
        self.deployment
            .host(index)
            .unwrap_or_else(|| format!("member {index}"))
    }

    async fn control_client(&self, host: &str) -> Result<steadfast::Client, String> {
        let existing = self
            .control
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(host)
            .cloned();
        if let Some(client) = existing {
            return Ok(client);
        }
        let uri = format!(
            "mongodb://{host}/?directConnection=true&appName=steadfast-control\
             &serverSelectionTimeoutMS=2000&connectTimeoutMS=2000"
        );
        let client = steadfast::Client::with_uri_str(&uri)
            .await
            .map_err(|e| e.to_string())?;
        self.control
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(host.to_owned(), client.clone());
        Ok(client)
    }

    /// Closes the control connections (the leak check counts connections afterwards).
    pub(crate) fn close_control_clients(&self) -> Vec<steadfast::Client> {
        self.control
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, client)| client)
            .collect()
    }

    async fn fail_point_on_primary(&self, command: Document) -> Result<String, String> {
        let primary = self.resolve(Target::Primary)?;
        let host = self.host(primary);
        let client = self.control_client(&host).await?;
        run_control(&client.database("admin"), command).await?;
        Ok(host)
    }

    /// Injects `fault` and returns once it is over; `Ok` names the member it hit.
    async fn inject(&self, fault: &Fault, injected: &mut Instant) -> Result<String, String> {
        let deployment = &self.deployment;
        match fault {
            Fault::StepDown { election } => {
                let old = self.resolve(Target::Primary)?;
                // The election is ours to time: no automatic one in the meantime.
                deployment.set_auto_failover(false, None);
                let stepped = deployment.step_down(*election + Duration::from_secs(1));
                *injected = Instant::now();
                if let Err(error) = stepped {
                    deployment.set_auto_failover(true, None);
                    return Err(error.to_string());
                }
                tokio::time::sleep(*election).await;
                let elected = self.elect_other_than(old);
                deployment.set_auto_failover(true, None);
                elected.map(|new| format!("{} -> {}", self.host(old), self.host(new)))
            }
            Fault::KillAndRestart { target, down_for } => {
                let index = self.resolve(*target)?;
                *injected = Instant::now();
                deployment.kill(index).await.map_err(|e| e.to_string())?;
                tokio::time::sleep(*down_for).await;
                deployment.restart(index).await.map_err(|e| e.to_string())?;
                Ok(self.host(index))
            }
            Fault::Partition { target, duration } => {
                let index = self.resolve(*target)?;
                *injected = Instant::now();
                deployment.partition(index).map_err(|e| e.to_string())?;
                tokio::time::sleep(*duration).await;
                deployment.heal(index).map_err(|e| e.to_string())?;
                Ok(self.host(index))
            }
            Fault::IsolatePrimary { duration } => {
                let index = self.resolve(Target::Primary)?;
                let others: Vec<usize> = (0..deployment.topology().nodes().len())
                    .filter(|other| *other != index)
                    .collect();
                *injected = Instant::now();
                deployment
                    .partition_from(index, &others)
                    .map_err(|e| e.to_string())?;
                tokio::time::sleep(*duration).await;
                deployment.heal(index).map_err(|e| e.to_string())?;
                Ok(self.host(index))
            }
            Fault::CloseAfterWrite { times } => {
                *injected = Instant::now();
                self.fail_point_on_primary(close_after_write(*times)).await
            }
            Fault::CloseBeforeCommand { commands, times } => {
                *injected = Instant::now();
                let command = close_before_command(commands, *times, &self.app_name);
                self.fail_point_on_primary(command).await
            }
            Fault::CommitOutcomeLost { times } => {
                *injected = Instant::now();
                let command = commit_outcome_lost(*times, &self.app_name);
                self.fail_point_on_primary(command).await
            }
            Fault::Slow {
                target,
                delay,
                duration,
            } => {
                let index = self.resolve(*target)?;
                *injected = Instant::now();
                deployment.slow(index, *delay).map_err(|e| e.to_string())?;
                tokio::time::sleep(*duration).await;
                deployment
                    .slow(index, Duration::ZERO)
                    .map_err(|e| e.to_string())?;
                Ok(self.host(index))
            }
            Fault::Overload {
                probability,
                duration,
            } => {
                let index = self.resolve(Target::Primary)?;
                let overload = Overload::new(FailPointMode::Probability(*probability), Some(20));
                *injected = Instant::now();
                deployment
                    .overload(index, Some(overload))
                    .map_err(|e| e.to_string())?;
                tokio::time::sleep(*duration).await;
                deployment
                    .overload(index, None)
                    .map_err(|e| e.to_string())?;
                Ok(self.host(index))
            }
            Fault::CapacityBurst {
                fraction,
                duration,
                adaptive,
            } => {
                let index = self.resolve(Target::Primary)?;
                let live = self.live.as_deref();
                let switch = match (adaptive, &self.policy) {
                    (false, _) => None,
                    (true, Some(policy)) => Some(policy),
                    (true, None) => return Err("the client has no adaptive policy".to_owned()),
                };
                if let Some(policy) = switch {
                    policy.set_adaptive(true);
                }
                let played =
                    burst::play(deployment, index, *fraction, *duration, live, injected).await;
                if let Some(policy) = switch {
                    policy.set_adaptive(false);
                }
                let mut figures = played?;
                figures.policy = if *adaptive { "adaptive" } else { "default" };
                self.bursts
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(figures);
                Ok(self.host(index))
            }
        }
    }

    async fn disarm(&self, name: &str, host: &str) -> Result<(), String> {
        let client = self.control_client(host).await?;
        run_control(
            &client.database("admin"),
            doc! { "configureFailPoint": name, "mode": "off" },
        )
        .await
    }

    fn elect_other_than(&self, old: usize) -> Result<usize, String> {
        let topology = self.deployment.topology();
        let candidate = topology
            .nodes()
            .iter()
            .enumerate()
            .find(|(index, node)| {
                *index != old
                    && node.role() == Role::Secondary
                    && node.health() == Health::Up
                    && node.options().is_electable()
            })
            .map(|(index, _)| index)
            .ok_or_else(|| "no member can win the election".to_owned())?;
        self.deployment
            .elect(candidate)
            .map_err(|e| e.to_string())?;
        Ok(candidate)
    }

    /// Undoes whatever a fault that failed midway may have left behind: every member up,
    /// healed, at full speed, neither overloaded nor capacity-limited, without fail points, with
    /// automatic elections.
    pub(crate) async fn restore(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let deployment = &self.deployment;
        deployment.set_auto_failover(true, None);
        let topology = deployment.topology();
        for (index, node) in topology.nodes().iter().enumerate() {
            let outcome = match node.health() {
                Health::Down => deployment.restart(index).await,
                // Healing an up member restores the links a `partition_from` cut.
                Health::Partitioned | Health::Up => deployment.heal(index),
                Health::ShuttingDown => Ok(()),
            };
            if let Err(error) = outcome {
                problems.push(format!("member {index}: {error}"));
            }
            let _ = deployment.slow(index, Duration::ZERO);
            let _ = deployment.overload(index, None);
            let _ = deployment.set_capacity(index, None);
        }
        if tokio::time::timeout(CONTROL_TIMEOUT, deployment.wait_for_primary())
            .await
            .is_err()
        {
            problems.push("no primary after restoring every member".to_owned());
        }
        for index in 0..topology.nodes().len() {
            let host = self.host(index);
            let Ok(client) = self.control_client(&host).await else {
                continue;
            };
            let admin = client.database("admin");
            for name in ["failCommand", "onPrimaryTransactionalWrite"] {
                let off = doc! { "configureFailPoint": name, "mode": "off" };
                if let Err(error) = run_control(&admin, off).await {
                    problems.push(format!("{host}: turning {name} off: {error}"));
                }
            }
        }
        problems
    }
}

/// Runs a control command with a deadline: a partitioned member answers only after it heals.
async fn run_control(admin: &steadfast::Database, command: Document) -> Result<(), String> {
    match tokio::time::timeout(CONTROL_TIMEOUT, admin.run_command(command)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(error)) => Err(error.to_string()),
        Err(_) => Err(format!("no answer within {} s", CONTROL_TIMEOUT.as_secs())),
    }
}

/// `onPrimaryTransactionalWrite`: apply the write, then close the connection.
fn close_after_write(times: u32) -> Document {
    doc! {
        "configureFailPoint": "onPrimaryTransactionalWrite",
        "mode": { "times": i64::from(times) },
        "data": { "closeConnection": true },
    }
}

/// `failCommand` closing the connection instead of running `commands`.
fn close_before_command(commands: &[&str], times: u32, app_name: &str) -> Document {
    doc! {
        "configureFailPoint": "failCommand",
        "mode": { "times": i64::from(times) },
        "data": { "failCommands": commands, "closeConnection": true, "appName": app_name },
    }
}

/// `failCommand` committing the next `times` transactions and replying with a write concern
/// error (ShutdownInProgress, code 91) instead of the commit's acknowledgement.
fn commit_outcome_lost(times: u32, app_name: &str) -> Document {
    doc! {
        "configureFailPoint": "failCommand",
        "mode": { "times": i64::from(times) },
        "data": {
            "failCommands": ["commitTransaction"],
            "writeConcernError": { "code": 91, "errmsg": "Replication is being shut down" },
            "appName": app_name,
        },
    }
}

impl Injector {
    /// Whether the injector can play `fault`.
    pub(crate) fn supports(&self, fault: &Fault) -> bool {
        match self {
            Injector::Simulated(_) => true,
            Injector::Remote { .. } => !fault.needs_simulator(),
        }
    }

    /// Turns off the fail point `fault` armed on `member` (a no-op for other faults).
    async fn disarm(&self, fault: &Fault, member: &str) -> Result<(), String> {
        let name = match fault {
            Fault::CloseAfterWrite { .. } => "onPrimaryTransactionalWrite",
            Fault::CloseBeforeCommand { .. } | Fault::CommitOutcomeLost { .. } => "failCommand",
            _ => return Ok(()),
        };
        match self {
            Injector::Simulated(simulated) => simulated.disarm(name, member).await,
            Injector::Remote { admin, .. } => {
                run_control(admin, doc! { "configureFailPoint": name, "mode": "off" }).await
            }
        }
    }

    async fn inject(&self, fault: &Fault, injected: &mut Instant) -> Result<String, String> {
        match self {
            Injector::Simulated(simulated) => simulated.inject(fault, injected).await,
            Injector::Remote { admin, app_name } => {
                inject_remote(admin, app_name, fault, injected).await
            }
        }
    }
}

/// Plays a fault on a real deployment through `failCommand` and `onPrimaryTransactionalWrite`.
async fn inject_remote(
    admin: &steadfast::Database,
    app_name: &str,
    fault: &Fault,
    injected: &mut Instant,
) -> Result<String, String> {
    *injected = Instant::now();
    let (command, lasts) = match fault {
        Fault::CloseAfterWrite { times } => (close_after_write(*times), None),
        Fault::CloseBeforeCommand { commands, times } => {
            (close_before_command(commands, *times, app_name), None)
        }
        Fault::CommitOutcomeLost { times } => (commit_outcome_lost(*times, app_name), None),
        Fault::Slow {
            delay, duration, ..
        } => (
            doc! {
                "configureFailPoint": "failCommand",
                "mode": "alwaysOn",
                "data": {
                    "failCommands": WORKLOAD_COMMANDS,
                    "blockConnection": true,
                    "blockTimeMS": i64::try_from(delay.as_millis()).unwrap_or(i64::MAX),
                    "appName": app_name,
                },
            },
            Some(*duration),
        ),
        Fault::Overload {
            probability,
            duration,
        } => (
            doc! {
                "configureFailPoint": "failCommand",
                "mode": { "activationProbability": *probability },
                "data": {
                    "failCommands": WORKLOAD_COMMANDS,
                    "errorCode": 462,
                    "errorLabels": ["SystemOverloadedError", "RetryableError"],
                    "appName": app_name,
                },
            },
            Some(*duration),
        ),
        Fault::StepDown { .. }
        | Fault::KillAndRestart { .. }
        | Fault::Partition { .. }
        | Fault::IsolatePrimary { .. }
        | Fault::CapacityBurst { .. } => {
            return Err("needs an embedded deployment".to_owned());
        }
    };
    run_control(admin, command).await?;
    if let Some(duration) = lasts {
        tokio::time::sleep(duration).await;
        let off = doc! { "configureFailPoint": "failCommand", "mode": "off" };
        run_control(admin, off).await?;
    }
    Ok("the primary".to_owned())
}

/// Turns off every fail point a remote run may have left on.
pub(crate) async fn restore_remote(admin: &steadfast::Database) -> Vec<String> {
    let mut problems = Vec::new();
    for name in ["failCommand", "onPrimaryTransactionalWrite"] {
        let off = doc! { "configureFailPoint": name, "mode": "off" };
        if let Err(error) = run_control(admin, off).await {
            problems.push(format!("turning {name} off: {error}"));
        }
    }
    problems
}

/// How the schedule is paced.
pub(crate) struct Pacing {
    /// Wait, after each fault, until the application writes again (and disarm a fail point
    /// once it has): each fault is then seen on its own, never stacked on the previous one.
    /// Without it (torture), faults follow each other on schedule, recovered from or not.
    pub(crate) one_at_a_time: bool,
    /// No fault starts after this instant (the workers stop then).
    pub(crate) deadline: Instant,
    /// The workers' acknowledged writes.
    pub(crate) writes: Arc<WriteProgress>,
}

/// A pause after recovery, so that retries still queued behind the recovered fault finish
/// before the next one.
const SETTLE: Duration = Duration::from_millis(200);

impl Pacing {
    /// Waits until a write sent at or after `since` is acknowledged, or the deadline.
    async fn recovered(&self, since: Instant) {
        while !self.writes.acknowledged_since(since) && Instant::now() < self.deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// Plays `schedule` from `start`, one fault after the other, and returns what happened.
///
/// # Cancel safety
///
/// Not cancel safe: dropping the future may leave a member down, partitioned or slow (call
/// [`SimulatedFaults::restore`] afterwards in any case).
pub(crate) async fn play(
    injector: Arc<Injector>,
    schedule: Vec<ScheduledFault>,
    start: Instant,
    board: Arc<FaultBoard>,
    pacing: Pacing,
) -> Vec<FaultRecord> {
    let mut records = Vec::with_capacity(schedule.len());
    for scheduled in schedule {
        tokio::time::sleep_until((start + scheduled.at).into()).await;
        let fault = &scheduled.fault;
        let mut injected = Instant::now();
        let description = fault.to_string();
        let outcome = if injected + fault.duration() > pacing.deadline {
            Err("the run ends before it would".to_owned())
        } else if injector.supports(fault) {
            board.set(Some(description.clone()));
            let mut outcome = injector.inject(fault, &mut injected).await;
            if pacing.one_at_a_time {
                if let Ok(member) = &outcome {
                    pacing.recovered(injected).await;
                    if let Err(error) = injector.disarm(fault, member).await {
                        outcome = Err(format!("disarming: {error}"));
                    }
                    pacing.recovered(Instant::now()).await;
                    tokio::time::sleep(SETTLE).await;
                }
            }
            board.set(None);
            outcome
        } else {
            Err("not available against a real deployment".to_owned())
        };
        let at = injected.saturating_duration_since(start);
        let (member, skipped) = match outcome {
            Ok(member) => (Some(member), None),
            Err(reason) => (None, Some(reason)),
        };
        records.push(FaultRecord {
            at_ms: u64::try_from(at.as_millis()).unwrap_or(u64::MAX),
            kind: fault.kind(),
            description,
            member,
            skipped,
            injected,
            lasted: fault.duration(),
        });
    }
    records
}
