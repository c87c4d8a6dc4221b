//! The topology worker: the one task that owns the `TopologyDescription`. Monitors, pools and
//! the executor report to it over a channel; it applies every report with core's decisions,
//! carries out what they ask (monitors and pools started, readied, cleared, closed), publishes
//! each new description as an immutable snapshot, and emits SDAM events in order.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use bson::oid::ObjectId;
use steadfast_core::pool::PoolOptions;
use steadfast_core::sdam::{
    ApplicationErrorKind, ErrorContext, ErrorPhase, HeartbeatFailureActions, PoolClear, SdamEvent,
    ServerErrorReply, TopologyChange, on_application_error,
};
use steadfast_core::{ServerAddress, ServerDescription, TopologyDescription};
use tokio::sync::{mpsc, oneshot, watch};

use super::log::{self, HeartbeatConnection};
use super::monitor::{MonitorHandle, MonitorParams, ReportTicket};
use super::{ServerHandle, ServerMap, Snapshot};
use crate::conn::config::ConnectionConfig;
use crate::error::{ConnectionFailure, Error, ErrorFacts};
use crate::event::EventEmitter;
use crate::pool::{ConnectionPool, PoolSettings};
use crate::runtime::TaskTracker;

/// Identifies one monitor for its whole life, so that reports from a monitor that was stopped
/// (its server left the topology) are recognised and dropped.
pub(super) type MonitorId = u64;

/// What the worker is told.
#[derive(Debug)]
pub(super) enum WorkerMessage {
    /// A heartbeat event from a monitor, published in order with the worker's own events,
    /// with the monitoring connection it ran on (for its log message).
    Event(MonitorId, SdamEvent, HeartbeatConnection),
    /// A check succeeded with this description. The ticket is dropped once it is applied,
    /// letting the monitor start its next check.
    CheckSucceeded(MonitorId, Box<ServerDescription>, Option<ReportTicket>),
    /// A check failed; core already decided what follows.
    CheckFailed {
        monitor: MonitorId,
        actions: Box<HeartbeatFailureActions>,
        cause: Error,
        ticket: Option<ReportTicket>,
    },
    /// An application operation (or a pool establishing a connection) failed.
    ApplicationError(Box<ApplicationErrorReport>),
    /// An SRV rescan's verified hosts, with srvMaxHosts (see `super::srv::poll`).
    SrvHosts(Vec<ServerAddress>, Option<u32>),
    /// Close everything; acknowledge when done.
    Shutdown(Option<oneshot::Sender<()>>),
}

/// An error seen on a connection, for SDAM's application-error handling.
#[derive(Debug)]
pub(super) struct ApplicationErrorReport {
    pub(super) address: ServerAddress,
    pub(super) error: Error,
    /// The pool generation of the connection that failed.
    pub(super) generation: u32,
    pub(super) phase: ErrorPhase,
    /// Known to be backpressure even if the error does not carry the label.
    pub(super) system_overloaded: bool,
    pub(super) service_id: Option<ObjectId>,
}

/// The settings the worker starts monitors and pools with.
pub(super) struct WorkerSettings {
    /// For pools: the client's full connection settings.
    pub(super) pool_config: Arc<ConnectionConfig>,
    /// For monitors: the same without the credential.
    pub(super) monitor_config: Arc<ConnectionConfig>,
    pub(super) pool_options: PoolOptions,
    pub(super) heartbeat_frequency: Duration,
    pub(super) streaming_enabled: bool,
}

/// A running monitor and its id.
pub(super) struct MonitorEntry {
    id: MonitorId,
    handle: MonitorHandle,
}

/// The worker's state; `run` consumes it.
pub(super) struct TopologyWorker {
    pub(super) description: TopologyDescription,
    pub(super) servers: ServerMap,
    pub(super) messages: mpsc::UnboundedReceiver<WorkerMessage>,
    /// Handed to monitors and pools so that they can report.
    pub(super) sender: mpsc::UnboundedSender<WorkerMessage>,
    pub(super) snapshots: watch::Sender<Arc<Snapshot>>,
    pub(super) events: EventEmitter,
    pub(super) settings: WorkerSettings,
    pub(super) tracker: TaskTracker,
    /// Counted by the `Topology` handles as they send error reports.
    pub(super) reports_sent: Arc<AtomicU64>,
    pub(super) reports_applied: u64,
    pub(super) monitors: HashMap<ServerAddress, MonitorEntry>,
    /// Monitors whose reports are still wanted (those running, and those being stopped at
    /// shutdown, whose final heartbeat events precede TopologyClosed).
    pub(super) live_monitors: HashSet<MonitorId>,
    pub(super) next_monitor_id: MonitorId,
    pub(super) connection_ids: Arc<AtomicU64>,
    /// Shutdown requests that arrived while closing, answered at the end.
    pub(super) extra_acks: Vec<oneshot::Sender<()>>,
}

impl TopologyWorker {
    /// Carries out the opening decision (`TopologyDescription::open`): pools for every seed,
    /// the opening events, then the monitors.
    pub(super) fn open(&mut self, opening: TopologyChange) {
        self.commit(opening, None);
    }

    /// Processes reports until told to shut down.
    pub(super) async fn run(mut self) {
        while let Some(message) = self.messages.recv().await {
            match message {
                WorkerMessage::Event(monitor, event, connection) => {
                    if self.live_monitors.contains(&monitor) {
                        self.emit_heartbeat(event, connection);
                    }
                }
                WorkerMessage::CheckSucceeded(monitor, description, _ticket) => {
                    if self.live_monitors.contains(&monitor) {
                        let change = self.description.apply(*description);
                        self.commit(change, None);
                    }
                }
                WorkerMessage::CheckFailed {
                    monitor,
                    actions,
                    cause,
                    ticket: _ticket,
                } => {
                    if self.live_monitors.contains(&monitor) {
                        let address = actions.description.address.clone();
                        let change = self.description.apply(actions.description);
                        self.commit(change, Some((&address, actions.clear_pool, &cause)));
                    }
                }
                WorkerMessage::ApplicationError(report) => {
                    self.application_error(&report);
                    self.reports_applied += 1;
                    self.publish(false);
                }
                WorkerMessage::SrvHosts(hosts, max_hosts) => {
                    let mut rng = crate::runtime::rng();
                    if let Some(change) = self
                        .description
                        .apply_srv_hosts(&hosts, max_hosts, &mut rng)
                    {
                        self.commit(change, None);
                    }
                }
                WorkerMessage::Shutdown(ack) => {
                    self.close().await;
                    for ack in ack.into_iter().chain(self.extra_acks.drain(..)) {
                        let _ = ack.send(());
                    }
                    return;
                }
            }
        }
    }

    fn publish(&self, closed: bool) {
        self.snapshots.send_replace(Arc::new(Snapshot {
            description: Arc::new(self.description.clone()),
            reports_applied: self.reports_applied,
            closed,
        }));
    }

    /// Carries out one decision: pools for new servers, the pool clear (after the server was
    /// marked Unknown, before anyone can see the new description), the pool made ready, the
    /// snapshot, the events, then monitors started and departed servers shut down.
    fn commit(
        &mut self,
        change: TopologyChange,
        clear: Option<(&ServerAddress, PoolClear, &Error)>,
    ) {
        // Pools are created outside the map's lock: creating one emits PoolCreated, and an
        // event handler must never run under a lock that selection takes.
        let fresh: Vec<(ServerAddress, ServerHandle)> = change
            .added
            .iter()
            .filter(|address| self.server(address).is_none())
            .map(|address| (address.clone(), self.new_server(address)))
            .collect();
        let mut departed = Vec::new();
        {
            let mut servers = self.servers.write().unwrap_or_else(|p| p.into_inner());
            servers.extend(fresh);
            for address in &change.removed {
                if let Some(handle) = servers.remove(address) {
                    departed.push((address.clone(), handle));
                }
            }
        }
        if let Some((address, clear, cause)) = clear
            && let Some(server) = self.server(address)
            // A newer generation means this clear already happened.
            && server.pool.generation() == clear.generation
        {
            server
                .pool
                .clear(cause, clear.service_id, clear.interrupt_in_use);
        }
        if let Some(address) = &change.pool_ready
            && let Some(server) = self.server(address)
        {
            server.pool.ready();
        }
        self.description = change.description;
        self.publish(false);
        for event in change.events {
            self.emit(event);
        }
        for address in &change.added {
            self.start_monitor(address);
        }
        for (address, server) in departed {
            if let Some(entry) = self.monitors.remove(&address) {
                self.live_monitors.remove(&entry.id);
                // Not awaited: the monitor ends on its own, and its reports are now ignored.
                drop(entry.handle.stop());
            }
            server.pool.close();
        }
        for address in &change.check_now {
            if let Some(entry) = self.monitors.get(address) {
                entry.handle.request_check();
            }
        }
    }

    fn new_server(&self, address: &ServerAddress) -> ServerHandle {
        ServerHandle {
            pool: ConnectionPool::with_settings(
                address.clone(),
                self.settings.pool_options.clone(),
                Arc::clone(&self.settings.pool_config),
                self.events.clone(),
                Some(super::pool_error_sink(
                    self.sender.clone(),
                    Arc::clone(&self.reports_sent),
                    self.snapshots.subscribe(),
                )),
                // The pools' tasks are the topology's: shutdown waits for them too.
                PoolSettings {
                    tasks: Some(self.tracker.clone()),
                    ..PoolSettings::default()
                },
            ),
            operations: Arc::default(),
            checks: Arc::default(),
        }
    }

    /// Publishes an SDAM event to the subscribers and to the log (the specification's
    /// "topology" component), in the order the worker processes changes.
    fn emit(&self, event: SdamEvent) {
        log::event(&event, self.events.log(), None);
        self.events.sdam(|| event);
    }

    /// [`TopologyWorker::emit`] for a monitor's heartbeat event.
    fn emit_heartbeat(&self, event: SdamEvent, connection: HeartbeatConnection) {
        log::event(&event, self.events.log(), Some(connection));
        self.events.sdam(|| event);
    }

    fn start_monitor(&mut self, address: &ServerAddress) {
        if self.description.topology_type == steadfast_core::TopologyType::LoadBalanced
            || self.monitors.contains_key(address)
        {
            // A load balancer is never monitored (load-balancers.md).
            return;
        }
        let Some(server) = self.server(address) else {
            return;
        };
        let id = self.next_monitor_id;
        self.next_monitor_id += 1;
        let params = MonitorParams {
            id,
            address: address.clone(),
            config: Arc::clone(&self.settings.monitor_config),
            heartbeat_frequency: self.settings.heartbeat_frequency,
            streaming_enabled: self.settings.streaming_enabled,
            pool: server.pool,
            worker: self.sender.clone(),
            checks: server.checks,
            connection_ids: Arc::clone(&self.connection_ids),
        };
        let handle = MonitorHandle::start(params, &self.tracker);
        self.live_monitors.insert(id);
        self.monitors
            .insert(address.clone(), MonitorEntry { id, handle });
    }

    fn server(&self, address: &ServerAddress) -> Option<ServerHandle> {
        self.servers
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(address)
            .cloned()
    }

    /// SDAM "Error handling" for an error an operation or a pool saw.
    fn application_error(&mut self, report: &ApplicationErrorReport) {
        let Some(server) = self.server(&report.address) else {
            return;
        };
        let Some(kind) = application_error_kind(&report.error, report.phase) else {
            return;
        };
        let mut context = ErrorContext::new(
            report.address.clone(),
            report.generation,
            server.pool.generation_for(report.service_id.as_ref()),
            report.phase,
            kind,
        );
        context.system_overloaded = report.system_overloaded || report.error.is_overload_error();
        context.service_id = report.service_id;
        let actions = on_application_error(&self.description, &context);
        if let Some(reason) = actions.ignored {
            tracing::debug!(address = %report.address, ?reason, error = %report.error,
                "application error changes nothing in the topology");
            return;
        }
        tracing::debug!(address = %report.address, error = %report.error,
            mark_unknown = actions.mark_unknown.is_some(), clear_pool = actions.clear_pool.is_some(),
            "application error handled");
        let clear = actions
            .clear_pool
            .map(|clear| (&report.address, clear, &report.error));
        match actions.mark_unknown {
            Some(unknown) => {
                let change = self.description.apply(unknown);
                self.commit(change, clear);
            }
            // Load-balanced: only the service's connections are cleared.
            None => {
                if let Some((_, clear, cause)) = clear {
                    server
                        .pool
                        .clear(cause, clear.service_id, clear.interrupt_in_use);
                }
            }
        }
        if let Some(entry) = self.monitors.get(&report.address) {
            if actions.cancel_check {
                entry.handle.cancel_check();
            }
            if actions.request_check {
                entry.handle.request_check();
            }
        }
    }

    /// Stops every monitor (publishing the failure of checks they had in progress), closes the
    /// pools, and publishes the closed topology: ServerClosed per server, the description
    /// change, and TopologyClosed last.
    async fn close(&mut self) {
        let stopping: Vec<_> = self
            .monitors
            .drain()
            .map(|(_, entry)| entry.handle.stop())
            .collect();
        let mut stopped = std::pin::pin!(futures_util::future::join_all(stopping));
        loop {
            tokio::select! {
                biased;
                message = self.messages.recv() => match message {
                    Some(message) => self.final_event(message),
                    None => break,
                },
                _ = &mut stopped => break,
            }
        }
        while let Ok(message) = self.messages.try_recv() {
            self.final_event(message);
        }
        self.live_monitors.clear();
        let pools: Vec<ServerHandle> = self
            .servers
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .drain()
            .map(|(_, server)| server)
            .collect();
        for server in pools {
            server.pool.close();
        }
        let change = self.description.close();
        self.description = change.description;
        self.publish(true);
        for event in change.events {
            self.emit(event);
        }
    }

    /// While closing, only the monitors' heartbeat events still matter.
    fn final_event(&mut self, message: WorkerMessage) {
        match message {
            WorkerMessage::Event(monitor, event, connection)
                if self.live_monitors.contains(&monitor) =>
            {
                self.emit_heartbeat(event, connection);
            }
            // Another shutdown call: answered once this one is complete.
            WorkerMessage::Shutdown(Some(ack)) => self.extra_acks.push(ack),
            _ => {}
        }
    }
}

/// What SDAM makes of an error: network errors and timeouts, command errors (`ok: 0`), and
/// write concern errors. Anything else the driver raised itself says nothing about the server,
/// except during the handshake, where every failure makes the server unusable.
fn application_error_kind(error: &Error, phase: ErrorPhase) -> Option<ApplicationErrorKind> {
    match error.facts() {
        ErrorFacts::Connection(ConnectionFailure::Timeout) => {
            Some(ApplicationErrorKind::NetworkTimeout)
        }
        ErrorFacts::Connection(_) => Some(ApplicationErrorKind::Network),
        ErrorFacts::Command(reply) => Some(ApplicationErrorKind::Command(reply)),
        // At worst a write concern error, which keeps no topologyVersion, has the server
        // checked once more than needed.
        ErrorFacts::WriteConcern(reply) => Some(ApplicationErrorKind::WriteConcern(reply)),
        ErrorFacts::Authentication(message) if phase != ErrorPhase::AfterHandshake => {
            Some(ApplicationErrorKind::Command(ServerErrorReply {
                code: None,
                message: format!("authentication failed: {message}"),
                topology_version: None,
            }))
        }
        ErrorFacts::Authentication(_) | ErrorFacts::Other => None,
    }
}
