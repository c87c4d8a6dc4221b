//! Recording a run for its HTML report (`--report`): each member's role as the deployment
//! changes it, the driver's view of each server and its pool clears, rollbacks, and (in the
//! workers' logs) every operation with its outcome and retries.
//!
//! Everything is recorded as it happens: member roles from the deployment's change
//! notifications, the driver's view from its SDAM and CMAP events. Nothing is sampled.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use blackpipe::deployment::{Deployment, Health, Role, Topology};
use steadfast::ServerType;
use steadfast::event::{CmapEvent, SdamEvent};
use steadfast_report::timeline::{
    CheckRow, FaultMark, Marker, OpPoint, RunTimeline, State, StateChange, Verdict as ReportVerdict,
};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::inject::FaultRecord;
use super::ledger::OpSample;
use super::report::{Report, Verdict};
use super::verify::CounterCheck;

/// What the recorder has seen so far.
#[derive(Debug, Default)]
struct Seen {
    member_changes: Vec<StateChange>,
    server_changes: Vec<StateChange>,
    pool_clears: Vec<Marker>,
    rollbacks: Vec<Marker>,
    servers: Vec<String>,
    rollbacks_marked: usize,
}

/// Records a run in time, from `origin` (the start of the run's clock).
#[derive(Debug)]
pub(crate) struct TimelineRecorder {
    origin: Instant,
    seen: Mutex<Seen>,
}

impl TimelineRecorder {
    pub(crate) fn new(origin: Instant) -> Self {
        Self {
            origin,
            seen: Mutex::new(Seen::default()),
        }
    }

    /// Time since the origin: the run's length when asked at its end.
    pub(crate) fn elapsed(&self) -> Duration {
        self.origin.elapsed()
    }

    fn ms_since_origin(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.origin).as_secs_f64() * 1000.0
    }

    fn now_ms(&self) -> f64 {
        self.ms_since_origin(Instant::now())
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The driver's SDAM event: a server's new type.
    pub(crate) fn on_sdam(&self, event: &SdamEvent) {
        if let SdamEvent::ServerDescriptionChanged { address, new, .. } = event {
            let row = address.to_string();
            let state = driver_state(new.server_type());
            let at_ms = self.now_ms();
            let mut seen = self.seen();
            if !seen.servers.contains(&row) {
                seen.servers.push(row.clone());
            }
            seen.server_changes.push(StateChange { at_ms, row, state });
        }
    }

    /// The driver's CMAP event: a pool clear.
    pub(crate) fn on_cmap(&self, event: &CmapEvent) {
        if let CmapEvent::PoolCleared {
            address,
            interrupt_in_use_connections,
            ..
        } = event
        {
            let label = if *interrupt_in_use_connections {
                "pool cleared (connections in use interrupted)"
            } else {
                "pool cleared"
            };
            let marker = Marker {
                at_ms: self.now_ms(),
                row: address.to_string(),
                label: label.to_owned(),
            };
            self.seen().pool_clears.push(marker);
        }
    }

    /// Each member's state in `topology`, recorded at once.
    fn on_topology(&self, topology: &Topology) {
        let at_ms = self.now_ms();
        let mut seen = self.seen();
        for node in topology.nodes() {
            seen.member_changes.push(StateChange {
                at_ms,
                row: node.host().to_owned(),
                state: member_state(node.role(), node.health()),
            });
        }
    }

    /// Marks the rollbacks `deployment` reports that are not marked yet, now.
    fn mark_new_rollbacks(&self, deployment: &Deployment) {
        let rollbacks = deployment.rollbacks();
        let at_ms = self.now_ms();
        let mut seen = self.seen();
        let fresh = rollbacks.get(seen.rollbacks_marked..).unwrap_or_default();
        let mut markers: Vec<Marker> = Vec::new();
        for write in fresh {
            match markers.iter_mut().find(|marker| marker.row == write.host) {
                Some(marker) => marker.label = bump(&marker.label),
                None => markers.push(Marker {
                    at_ms,
                    row: write.host.clone(),
                    label: "1 write rolled back".to_owned(),
                }),
            }
        }
        seen.rollbacks_marked = rollbacks.len();
        seen.rollbacks.extend(markers);
    }

    /// Follows `deployment`'s changes until the returned task is aborted (by
    /// [`MemberWatch::finish`]).
    pub(crate) fn watch(self: &Arc<Self>, deployment: Arc<Deployment>) -> MemberWatch {
        let (changed, mut changes) = mpsc::unbounded_channel::<()>();
        let recorder = Arc::clone(self);
        let notifier = {
            let deployment = Arc::clone(&deployment);
            let recorder = Arc::clone(self);
            tokio::spawn(async move {
                deployment
                    .wait_until(|topology| {
                        recorder.on_topology(topology);
                        let _ = changed.send(());
                        false
                    })
                    .await;
            })
        };
        // Rollbacks are read outside the deployment's lock, after each change.
        let rollbacks = {
            let deployment = Arc::clone(&deployment);
            tokio::spawn(async move {
                while changes.recv().await.is_some() {
                    recorder.mark_new_rollbacks(&deployment);
                }
            })
        };
        MemberWatch {
            deployment,
            recorder: Arc::clone(self),
            tasks: [notifier, rollbacks],
        }
    }

    /// The run as a report: `faults` and `operations` from the run's outcome, `checks` from
    /// its report. Takes what the recorder saw (a second call has only what came since).
    pub(crate) fn timeline(
        &self,
        heading: Heading,
        faults: &[FaultRecord],
        operations: &[OpSample],
        report: &Report,
    ) -> RunTimeline {
        // Taken, not copied: the recorder holds nothing once the page has its data.
        let seen = std::mem::take(&mut *self.seen());
        let servers = in_member_order(seen.servers, &heading.members);
        RunTimeline {
            title: heading.title,
            subtitle: heading.subtitle,
            duration_ms: heading.duration.as_secs_f64() * 1000.0,
            members: heading.members,
            member_changes: fitted(seen.member_changes),
            rollbacks: fitted(seen.rollbacks),
            faults: faults
                .iter()
                .filter(|fault| fault.skipped.is_none())
                .map(|fault| self.fault_mark(fault))
                .collect(),
            servers,
            server_changes: fitted(seen.server_changes),
            pool_clears: fitted(seen.pool_clears),
            operations: operations.iter().map(|op| self.op_point(op)).collect(),
            checks: check_rows(report),
        }
    }

    fn fault_mark(&self, fault: &FaultRecord) -> FaultMark {
        FaultMark {
            at_ms: self.ms_since_origin(fault.injected),
            duration_ms: fault.lasted.as_secs_f64() * 1000.0,
            kind: fault.kind.to_owned(),
            description: match &fault.member {
                Some(member) if !member.is_empty() => format!("{} ({member})", fault.description),
                _ => fault.description.clone(),
            },
        }
    }

    fn op_point(&self, op: &OpSample) -> OpPoint {
        OpPoint {
            at_ms: self.ms_since_origin(op.sent),
            latency_ms: op.latency.as_secs_f64() * 1000.0,
            kind: op.kind.name(),
            outcome: op.outcome,
            retries: op.retries,
        }
    }
}

/// What heads a run's report.
pub(crate) struct Heading {
    pub(crate) title: String,
    pub(crate) subtitle: String,
    /// The run's length (the time axis).
    pub(crate) duration: Duration,
    /// The members, in row order.
    pub(crate) members: Vec<String>,
}

/// The tasks following a deployment for a [`TimelineRecorder`].
pub(crate) struct MemberWatch {
    deployment: Arc<Deployment>,
    recorder: Arc<TimelineRecorder>,
    tasks: [JoinHandle<()>; 2],
}

impl MemberWatch {
    /// Stops following the deployment (once its tasks are gone, so are their references to
    /// it), marking the rollbacks it reported since the last change.
    pub(crate) async fn finish(self) {
        for task in self.tasks {
            task.abort();
            // A task cancelled by the abort ends with a cancellation error: expected.
            let _ = task.await;
        }
        self.recorder.mark_new_rollbacks(&self.deployment);
    }
}

/// `items` holding no spare capacity: the torture measures what the recording holds by
/// copying it, and a copy has none.
fn fitted<T>(mut items: Vec<T>) -> Vec<T> {
    items.shrink_to_fit();
    items
}

/// The driver's servers in the members' order (a server that is no member, such as one the
/// driver was given but the deployment does not list, comes after them).
fn in_member_order(mut servers: Vec<String>, members: &[String]) -> Vec<String> {
    servers.sort_by_key(|server| {
        members
            .iter()
            .position(|member| member == server)
            .unwrap_or(usize::MAX)
    });
    servers
}

/// "1 write rolled back" → "2 writes rolled back".
fn bump(label: &str) -> String {
    let count: u64 = label
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    format!("{} writes rolled back", count + 1)
}

fn member_state(role: Role, health: Health) -> State {
    match health {
        Health::Down => State::Down,
        Health::Partitioned => State::Partitioned,
        Health::ShuttingDown => State::ShuttingDown,
        Health::Up => match role {
            Role::Primary => State::Primary,
            Role::Secondary => State::Secondary,
            Role::Standalone => State::Standalone,
            Role::Router => State::Router,
            Role::Arbiter | Role::Removed => State::Other,
        },
    }
}

fn driver_state(server_type: ServerType) -> State {
    match server_type {
        ServerType::RsPrimary => State::Primary,
        ServerType::RsSecondary => State::Secondary,
        ServerType::Standalone => State::Standalone,
        ServerType::Mongos => State::Router,
        ServerType::Unknown | ServerType::PossiblePrimary => State::Unknown,
        ServerType::RsArbiter
        | ServerType::RsOther
        | ServerType::RsGhost
        | ServerType::LoadBalancer => State::Other,
    }
}

/// Renders `timeline` and writes it to `path`, saying where on standard error (when standard
/// output carries JSON) or standard output.
///
/// # Errors
/// When the file cannot be written.
pub(crate) fn write(path: &Path, timeline: &RunTimeline, json: bool) -> Result<(), String> {
    let page = steadfast_report::timeline::render(timeline);
    std::fs::write(path, page.as_bytes())
        .map_err(|e| format!("cannot write the report {}: {e}", path.display()))?;
    let line = format!(
        "report: {} ({} KiB, {} operations, {} faults)",
        path.display(),
        page.len().div_ceil(1024),
        timeline.operations.len(),
        timeline.faults.len()
    );
    if json {
        eprintln!("{line}");
    } else {
        println!("{line}");
    }
    Ok(())
}

/// The report's invariants and checks, as the page's table shows them.
pub(crate) fn check_rows(report: &Report) -> Vec<CheckRow> {
    report
        .checks
        .iter()
        .map(|check| CheckRow {
            name: check.name.to_owned(),
            verdict: match check.verdict {
                Verdict::Held => ReportVerdict::Held,
                Verdict::Violated => ReportVerdict::Violated,
                Verdict::NotChecked => ReportVerdict::NotChecked,
            },
            detail: check.detail.clone(),
        })
        .collect()
}

/// The demo's own invariant (its text report's "counters exact" line): every counter holds
/// exactly the increments known to be applied. With retries off a mismatch is what the demo
/// shows, not a failure of the driver, so it is reported as not checked.
pub(crate) fn counters_row(counters: &CounterCheck, retries: bool) -> CheckRow {
    let verdict = match (counters.exact(), retries) {
        (true, _) => ReportVerdict::Held,
        (false, true) => ReportVerdict::Violated,
        (false, false) => ReportVerdict::NotChecked,
    };
    CheckRow {
        name: "the counters match the acknowledged increments".to_owned(),
        verdict,
        detail: format!(
            "{} increments acknowledged, {} counted over {} counters; {} failed as not applied, {} with an unknown outcome, {} applied despite an error",
            counters.acknowledged,
            counters.final_total,
            counters.counters,
            counters.not_applied,
            counters.ambiguous,
            counters.applied_despite_error
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rollback_labels_count_up() {
        assert_eq!(bump("1 write rolled back"), "2 writes rolled back");
        assert_eq!(bump("2 writes rolled back"), "3 writes rolled back");
    }

    #[test]
    fn servers_follow_the_members_order() {
        let members = vec!["a:1".to_owned(), "b:2".to_owned()];
        let servers = vec!["x:9".to_owned(), "b:2".to_owned(), "a:1".to_owned()];
        assert_eq!(in_member_order(servers, &members), ["a:1", "b:2", "x:9"]);
    }

    #[test]
    fn health_wins_over_role() {
        assert_eq!(
            member_state(Role::Primary, Health::Partitioned),
            State::Partitioned
        );
        assert_eq!(member_state(Role::Secondary, Health::Down), State::Down);
        assert_eq!(member_state(Role::Primary, Health::Up), State::Primary);
        assert_eq!(driver_state(ServerType::Unknown), State::Unknown);
        assert_eq!(driver_state(ServerType::RsPrimary), State::Primary);
    }
}
