//! The server selection loop of server-selection.md ("Multi-threaded or asynchronous server
//! selection"): select on the current snapshot with core's `select`, and while nothing is
//! suitable, request immediate checks and wait for the next snapshot, until
//! serverSelectionTimeoutMS or the operation's deadline.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use steadfast_core::selection::{
    Selection, SelectionCriteria, candidates, choose_in_window, select,
};
use steadfast_core::{Deadline, ServerAddress, TopologyDescription};

use super::select_log::{self, SelectionFor, SelectionLog};
use super::selection_cache::SelectionCache;
use super::{OperationInFlight, SelectedServer, Snapshot, Topology};
use crate::error::{Error, ErrorKind, Result};
use crate::runtime;

impl Topology {
    /// Selects a server for `criteria`, preferring servers not in `deprioritized` (those an
    /// earlier attempt of the same operation failed on), and counts one more operation in
    /// flight on it until the returned value is dropped.
    ///
    /// Waits for topology changes while no server is suitable, requesting immediate checks,
    /// for at most serverSelectionTimeoutMS (or until `deadline`, if that comes first).
    ///
    /// # Errors
    /// `ServerSelection` when the time runs out (the message names the criteria and describes
    /// the topology seen: its type and each server's type or last error), when the topology
    /// is incompatible with this driver or the read preference is invalid (at once), or when
    /// the topology is closed.
    ///
    /// # Cancel safety
    /// Cancel safe: nothing is selected (and no operation counted) until the future returns.
    pub(crate) async fn select_server(
        &self,
        criteria: &SelectionCriteria,
        deprioritized: &[ServerAddress],
        deadline: Deadline,
    ) -> Result<SelectedServer> {
        self.select_server_for(criteria, deprioritized, deadline, None)
            .await
    }

    /// [`Topology::select_server`] for `operation`, whose name and id the server selection
    /// log messages carry.
    ///
    /// # Errors
    /// As [`Topology::select_server`].
    ///
    /// # Cancel safety
    /// As [`Topology::select_server`].
    pub(crate) async fn select_server_for(
        &self,
        criteria: &SelectionCriteria,
        deprioritized: &[ServerAddress],
        deadline: Deadline,
        operation: Option<SelectionFor<'_>>,
    ) -> Result<SelectedServer> {
        let mut log = operation
            .filter(|_| select_log::enabled())
            .map(|operation| {
                SelectionLog::start(
                    operation,
                    criteria,
                    &self.inner.topology_id,
                    &self.snapshot(),
                )
            });
        let result = match self.select_now(criteria, deprioritized) {
            Some(result) => result,
            // The waiting loop is boxed: it is the rare case, and its timer and channel state
            // would otherwise make every operation's future larger.
            None => {
                Box::pin(self.select_waiting(criteria, deprioritized, deadline, log.as_mut())).await
            }
        };
        if let Some(log) = &log {
            log.finished(&self.snapshot(), result.as_ref().map(|s| &s.address));
        }
        result
    }

    /// Selection on the current snapshot, when it settles the matter without waiting: a
    /// server, or an error that waiting cannot fix. `None` when the loop must wait (nothing
    /// suitable yet, or reports sent before now not yet applied).
    fn select_now(
        &self,
        criteria: &SelectionCriteria,
        deprioritized: &[ServerAddress],
    ) -> Option<Result<SelectedServer>> {
        let reports_due = self.inner.reports_sent.load(Ordering::SeqCst);
        let snapshot: Arc<Snapshot> = Arc::clone(&self.inner.snapshots.borrow());
        if snapshot.closed {
            return Some(Err(selection_error(
                "the client has been closed".to_string(),
            )));
        }
        if snapshot.reports_applied < reports_due {
            return None;
        }
        match self.try_select(&snapshot, criteria, deprioritized, &mut runtime::rng()) {
            Attempt::Selected(server) => Some(Ok(*server)),
            Attempt::Invalid(message) => Some(Err(selection_error(message))),
            Attempt::Wait(_) => None,
        }
    }

    /// The selection loop proper: select, and while nothing is suitable request immediate
    /// checks and wait for the next snapshot, until the time runs out.
    async fn select_waiting(
        &self,
        criteria: &SelectionCriteria,
        deprioritized: &[ServerAddress],
        deadline: Deadline,
        mut log: Option<&mut SelectionLog<'_>>,
    ) -> Result<SelectedServer> {
        let started = runtime::now();
        let timeout = self.inner.server_selection_timeout;
        let give_up = match deadline.instant() {
            Some(deadline) => deadline.min(started + timeout),
            None => started + timeout,
        };
        // Reports sent before this selection started must be reflected in what it sees.
        let reports_due = self.inner.reports_sent.load(Ordering::SeqCst);
        let mut snapshots = self.inner.snapshots.clone();
        let mut rng = runtime::rng();
        loop {
            let snapshot: Arc<Snapshot> = Arc::clone(&snapshots.borrow_and_update());
            if snapshot.closed {
                return Err(selection_error("the client has been closed".to_string()));
            }
            let mut last_reason = None;
            if snapshot.reports_applied >= reports_due {
                match self.try_select(&snapshot, criteria, deprioritized, &mut rng) {
                    Attempt::Selected(server) => return Ok(*server),
                    Attempt::Invalid(message) => return Err(selection_error(message)),
                    Attempt::Wait(reason) => last_reason = Some(reason),
                }
                self.request_immediate_checks();
            }
            if let Some(log) = log.as_deref_mut() {
                let remaining = give_up.saturating_duration_since(runtime::now());
                log.waiting(&snapshot.description, remaining);
            }
            tokio::select! {
                changed = snapshots.changed() => {
                    if changed.is_err() {
                        return Err(selection_error("the client has been closed".to_string()));
                    }
                }
                () = runtime::sleep_until(give_up) => {
                    let snapshot = Arc::clone(&snapshots.borrow());
                    let reason = last_reason.unwrap_or_else(|| {
                        "the topology had not processed earlier errors yet".to_string()
                    });
                    let waited = runtime::now().saturating_duration_since(started);
                    return Err(timeout_error(
                        &reason,
                        waited,
                        deadline.instant().is_some_and(|d| d < started + timeout),
                        &snapshot.description,
                    ));
                }
            }
        }
    }

    fn try_select(
        &self,
        snapshot: &Arc<Snapshot>,
        criteria: &SelectionCriteria,
        deprioritized: &[ServerAddress],
        rng: &mut impl rand::Rng,
    ) -> Attempt {
        let window = match self.latency_window(snapshot, criteria, deprioritized, rng) {
            Ok(window) => window,
            Err(attempt) => return attempt,
        };
        let servers = self.inner.servers.read().unwrap_or_else(|p| p.into_inner());
        let operations = |address: &ServerAddress| {
            servers
                .get(address)
                .map_or(0, |server| server.operations.load(Ordering::SeqCst))
        };
        // Two random servers of the window, the less busy one winning: made on every
        // selection, memoized window or not.
        let Some(address) = choose_in_window(&window[..], operations, rng) else {
            return Attempt::Wait("no server is in the latency window".to_string());
        };
        let description = &snapshot.description;
        let (Some(server), Some(server_description)) =
            (servers.get(address), description.servers.get(address))
        else {
            // The server left the topology after this snapshot; the next one will not offer
            // it.
            return Attempt::Wait(format!("{address} left the topology"));
        };
        Attempt::Selected(Box::new(SelectedServer {
            pool: server.pool.clone(),
            description: Arc::clone(server_description),
            topology_type: description.topology_type,
            _operation: OperationInFlight::start(&server.operations),
            address: address.clone(),
        }))
    }

    /// The servers of the latency window for `criteria` on `snapshot`: the memo's when it was
    /// computed for this very snapshot and these criteria, else core's `candidates` (then
    /// memoized). An empty window or invalid criteria end the attempt, with core's
    /// explanation.
    fn latency_window(
        &self,
        snapshot: &Arc<Snapshot>,
        criteria: &SelectionCriteria,
        deprioritized: &[ServerAddress],
        rng: &mut impl rand::Rng,
    ) -> Result<Arc<[ServerAddress]>, Attempt> {
        let memoized = SelectionCache::applies(criteria, deprioritized);
        let cache = &self.inner.selection_cache;
        if memoized && let Some(window) = cache.window(snapshot, criteria) {
            return Ok(window);
        }
        let description = &snapshot.description;
        let window: Arc<[ServerAddress]> = match candidates(description, criteria, deprioritized) {
            Ok(found) => found.in_window.iter().map(|s| s.address.clone()).collect(),
            Err(error) => return Err(Attempt::Invalid(error.to_string())),
        };
        if window.is_empty() {
            // Core's `select` words the reason (rare: the caller waits for a new snapshot).
            return Err(
                match select(description, criteria, deprioritized, |_| 0, rng) {
                    Selection::Invalid(error) => Attempt::Invalid(error.to_string()),
                    Selection::NoneSuitable { reason } => Attempt::Wait(reason),
                    Selection::Selected(address) => {
                        Attempt::Wait(format!("{address} is not in the latency window"))
                    }
                },
            );
        }
        if memoized {
            cache.remember(snapshot, criteria, Arc::clone(&window));
        }
        Ok(window)
    }
}

enum Attempt {
    Selected(Box<SelectedServer>),
    Wait(String),
    Invalid(String),
}

fn selection_error(message: String) -> Error {
    Error::new(ErrorKind::ServerSelection { message })
}

fn timeout_error(
    reason: &str,
    waited: Duration,
    deadline_first: bool,
    topology: &TopologyDescription,
) -> Error {
    let limit = if deadline_first {
        "the operation's deadline"
    } else {
        "serverSelectionTimeoutMS"
    };
    selection_error(format!(
        "timed out after {} ms ({limit}): {reason}; topology seen: {}",
        waited.as_millis(),
        describe(topology)
    ))
}

/// "ReplicaSetNoPrimary (set rs0): a:27017 RSSecondary, b:27017 Unknown (error: ...)".
pub(super) fn describe(topology: &TopologyDescription) -> String {
    let mut text = topology.topology_type.to_string();
    if let Some(set_name) = &topology.set_name {
        let _ = write!(text, " (set {set_name})");
    }
    if let Some(error) = &topology.compatibility_error {
        let _ = write!(text, " [incompatible: {error}]");
    }
    text.push_str(": ");
    if topology.servers.is_empty() {
        text.push_str("no servers");
    }
    for (i, server) in topology.servers.values().enumerate() {
        if i > 0 {
            text.push_str(", ");
        }
        let _ = write!(text, "{} {}", server.address, server.server_type);
        if let Some(error) = &server.error {
            let _ = write!(text, " (error: {error})");
        }
    }
    text
}
