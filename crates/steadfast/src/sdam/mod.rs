//! Server discovery and monitoring in motion: the topology worker, one monitor per server,
//! the server selection loop, and SRV resolution.
//!
//! [`Topology`] is the handle the rest of the driver holds. Behind it, one worker task owns the
//! `TopologyDescription` (see [`worker`]): monitors ([`monitor`]) and pools report to it, it
//! applies their reports with `steadfast_core`'s decisions, and publishes every new description
//! as an immutable snapshot on a `watch` channel that server selection ([`select`]) waits on.
//! Pools and in-flight operation counts live in a map next to the snapshots, because snapshots
//! are plain values that hold no pools or sockets.

// The client reaches the topology through the executor, which is built after this module;
// until then only this module's tests use it.
#![allow(dead_code)]

mod hello;
mod log;
mod monitor;
mod pinned;
mod rtt;
mod select;
mod select_log;
pub(crate) use select_log::SelectionFor;
mod selection_cache;
pub(crate) mod srv;
mod worker;

#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use steadfast_core::description::TopologyConfig;
use steadfast_core::options::{ClientOptions, ServerMonitoringMode};
use steadfast_core::pool::PoolOptions;
use steadfast_core::sdam::ErrorPhase;
use steadfast_core::session::{ClusterTime, advance_cluster_time};
use steadfast_core::{ServerAddress, ServerDescription, TopologyDescription, TopologyType};
use tokio::sync::{mpsc, oneshot, watch};

pub(crate) use self::monitor::CheckRequests;
use self::worker::{ApplicationErrorReport, TopologyWorker, WorkerMessage, WorkerSettings};
use crate::conn::config::ConnectionConfig;
use crate::error::{Error, Result};
use crate::event::EventEmitter;
use crate::pool::{
    ConnectionGeneration, ConnectionPool, EstablishmentFailure, PoolErrorSink, ReportApplied,
};
use crate::runtime::TaskTracker;

/// One published state of the topology.
#[derive(Debug)]
struct Snapshot {
    description: Arc<TopologyDescription>,
    /// How many error reports the worker has processed: a selection waits until the reports
    /// sent before it started are reflected, so a retry never picks a server its own failed
    /// attempt has just marked Unknown.
    reports_applied: u64,
    /// Set once by shutdown.
    closed: bool,
}

/// What the driver keeps per server besides its description.
#[derive(Clone)]
struct ServerHandle {
    pool: ConnectionPool,
    /// Operations currently running on the server (server selection's operationCount).
    operations: Arc<AtomicU32>,
    checks: Arc<CheckRequests>,
}

type ServerMap = Arc<RwLock<HashMap<ServerAddress, ServerHandle>>>;

/// The driver's view of the deployment and the tasks that keep it current. Cheap to clone;
/// when the last clone is dropped, the worker shuts everything down (as [`Topology::shutdown`]
/// does, without waiting).
#[derive(Clone)]
pub(crate) struct Topology {
    inner: Arc<TopologyInner>,
}

struct TopologyInner {
    sender: mpsc::UnboundedSender<WorkerMessage>,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    servers: ServerMap,
    reports_sent: Arc<AtomicU64>,
    cluster_time: Mutex<Option<ClusterTime>>,
    server_selection_timeout: Duration,
    tracker: TaskTracker,
    /// The client's topology id, for the server selection log messages.
    topology_id: bson::oid::ObjectId,
    /// The last latency window computed, reused while the snapshot and criteria are the same.
    selection_cache: selection_cache::SelectionCache,
}

impl Drop for TopologyInner {
    fn drop(&mut self) {
        // Nothing waits for the acknowledgement: dropping must not block.
        let _ = self.sender.send(WorkerMessage::Shutdown(None));
    }
}

impl fmt::Debug for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let snapshot = self.inner.snapshots.borrow();
        f.debug_struct("Topology")
            .field("type", &snapshot.description.topology_type)
            .field("servers", &snapshot.description.servers.len())
            .field("closed", &snapshot.closed)
            .finish()
    }
}

/// The server an operation was sent to, with its pool. While it is alive the server counts
/// one more operation in flight (server selection's operationCount).
pub(crate) struct SelectedServer {
    pub(crate) address: ServerAddress,
    pub(crate) pool: ConnectionPool,
    pub(crate) description: Arc<ServerDescription>,
    pub(crate) topology_type: TopologyType,
    _operation: OperationInFlight,
}

impl fmt::Debug for SelectedServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SelectedServer")
            .field("address", &format_args!("{}", self.address))
            .field("server_type", &self.description.server_type)
            .field("topology_type", &self.topology_type)
            .finish()
    }
}

/// Decrements the server's operation count when the operation ends, however it ends.
struct OperationInFlight(Arc<AtomicU32>);

impl OperationInFlight {
    fn start(count: &Arc<AtomicU32>) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        OperationInFlight(Arc::clone(count))
    }
}

impl Drop for OperationInFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Topology {
    /// Opens the topology: the initial description from the seeds and options, a pool and a
    /// monitor per seed, and the worker. Monitoring starts at once; nothing waits for it.
    ///
    /// # Errors
    /// `InvalidArgument` when the seeds and topology options form a combination the SDAM
    /// specification forbids, or when called outside a tokio runtime.
    pub(crate) fn new(
        options: &ClientOptions,
        config: Arc<ConnectionConfig>,
        events: EventEmitter,
    ) -> Result<Self> {
        let tracker = TaskTracker::new()?;
        let mut topology_config = TopologyConfig::new(options.hosts.iter().cloned());
        topology_config.direct_connection = options.direct_connection;
        topology_config.replica_set = options.replica_set.clone();
        topology_config.load_balanced = options.load_balanced;
        topology_config.local_threshold = options.local_threshold;
        topology_config.heartbeat_frequency = options.heartbeat_frequency;
        let opening = TopologyDescription::open(&topology_config).map_err(|e| {
            Error::invalid_argument(format!("the topology cannot be opened: {e}")).with_source(e)
        })?;

        let (sender, messages) = mpsc::unbounded_channel();
        let (publisher, snapshots) = watch::channel(Arc::new(Snapshot {
            description: Arc::new(opening.description.clone()),
            reports_applied: 0,
            closed: false,
        }));
        let servers = ServerMap::default();
        let reports_sent = Arc::new(AtomicU64::new(0));
        let mut monitor_config = (*config).clone();
        // Monitors never authenticate (server-monitoring.md).
        monitor_config.auth = None;
        let streaming = streaming_enabled(
            options.server_monitoring_mode,
            on_faas_platform(&config.metadata),
        );
        let settings = WorkerSettings {
            pool_config: config,
            monitor_config: Arc::new(monitor_config),
            pool_options: PoolOptions::from(options),
            heartbeat_frequency: options.heartbeat_frequency,
            streaming_enabled: streaming,
        };
        let topology_id = events.log().topology_id;
        let mut worker = TopologyWorker {
            description: opening.description.clone(),
            servers: Arc::clone(&servers),
            messages,
            sender: sender.clone(),
            snapshots: publisher,
            events,
            settings,
            tracker: tracker.clone(),
            reports_sent: Arc::clone(&reports_sent),
            reports_applied: 0,
            monitors: HashMap::new(),
            live_monitors: HashSet::new(),
            next_monitor_id: 1,
            connection_ids: Arc::new(AtomicU64::new(1)),
            extra_acks: Vec::new(),
        };
        worker.open(opening);
        tracker.spawn(worker.run());
        Ok(Topology {
            inner: Arc::new(TopologyInner {
                sender,
                snapshots,
                servers,
                reports_sent,
                cluster_time: Mutex::new(None),
                server_selection_timeout: options.server_selection_timeout,
                tracker,
                topology_id,
                selection_cache: selection_cache::SelectionCache::default(),
            }),
        })
    }

    /// The current description: an immutable value.
    pub(crate) fn snapshot(&self) -> Arc<TopologyDescription> {
        Arc::clone(&self.inner.snapshots.borrow().description)
    }

    /// The deployment's session timeout, when every data-bearing server supports sessions.
    pub(crate) fn logical_session_timeout(&self) -> Option<Duration> {
        let minutes = self.snapshot().logical_session_timeout_minutes?;
        let minutes = u64::try_from(minutes).ok()?;
        Some(Duration::from_secs(minutes.saturating_mul(60)))
    }

    /// Records a `$clusterTime` seen in a reply, if it is newer than the one known.
    pub(crate) fn advance_cluster_time(&self, cluster_time: &ClusterTime) {
        let mut current = self
            .inner
            .cluster_time
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        advance_cluster_time(&mut current, cluster_time);
    }

    /// The highest `$clusterTime` seen.
    pub(crate) fn cluster_time(&self) -> Option<ClusterTime> {
        self.inner
            .cluster_time
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// How many operations are running on `address` (zero for an unknown server).
    pub(crate) fn operation_count(&self, address: &ServerAddress) -> u32 {
        self.inner
            .servers
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(address)
            .map_or(0, |server| server.operations.load(Ordering::SeqCst))
    }

    /// SDAM application-error handling for `error`, seen on a connection of pool generation
    /// `generation` in `phase`: the worker marks the server Unknown, clears its pool (in that
    /// order, before publishing), and cancels or requests a check, as core decides. Returns at
    /// once; the next server selection waits until the report is applied.
    pub(crate) fn handle_application_error(
        &self,
        address: &ServerAddress,
        error: &Error,
        generation: u32,
        phase: ErrorPhase,
    ) {
        let generation = ConnectionGeneration {
            number: generation,
            service_id: None,
        };
        self.handle_connection_error(address, error, generation, phase);
    }

    /// [`Topology::handle_application_error`] for an error seen on a connection whose
    /// generation belongs to a service (load-balanced mode): only that service's connections
    /// are cleared, and its generation decides whether the error is stale.
    pub(crate) fn handle_connection_error(
        &self,
        address: &ServerAddress,
        error: &Error,
        generation: ConnectionGeneration,
        phase: ErrorPhase,
    ) {
        // Whoever must wait for it does so through `error_reports_applied`.
        let _due = report_application_error(
            &self.inner.sender,
            &self.inner.reports_sent,
            ApplicationErrorReport {
                address: address.clone(),
                error: error.clone(),
                generation: generation.number,
                phase,
                system_overloaded: false,
                service_id: generation.service_id,
            },
        );
    }

    /// Waits until the worker has applied every error report sent so far (server marked
    /// Unknown, pool cleared), or the topology is closed. An attempt awaits this before it
    /// checks in the connection that saw the error, so that an operation waiting for that
    /// connection fails its check-out with PoolClearedError instead of receiving it.
    ///
    /// # Cancel safety
    /// Cancel safe: it only observes published snapshots.
    pub(crate) async fn error_reports_applied(&self) {
        let due = self.inner.reports_sent.load(Ordering::SeqCst);
        let mut snapshots = self.inner.snapshots.clone();
        // An error means the worker is gone: nothing more will be applied.
        let _ = snapshots
            .wait_for(|snapshot| snapshot.closed || snapshot.reports_applied >= due)
            .await;
    }

    /// Stops the monitors (publishing the failure of checks in progress), closes the pools, and
    /// publishes the closed topology (TopologyClosed is the last event). Returns once every
    /// task of the topology (worker, monitors, RTT tasks, pool establishment and maintenance)
    /// has ended. Idempotent.
    ///
    /// # Cancel safety
    /// Cancel safe: the shutdown is requested before the first `.await` and completes anyway.
    pub(crate) async fn shutdown(&self) {
        let (ack, done) = oneshot::channel();
        if self
            .inner
            .sender
            .send(WorkerMessage::Shutdown(Some(ack)))
            .is_ok()
        {
            // An error means the worker had already finished closing.
            let _ = done.await;
        }
        self.inner.tracker.wait_until_idle().await;
    }

    /// The tasks this topology runs (worker, monitors, RTT tasks, and its pools' tasks), for
    /// proving none leaks.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn live_tasks(&self) -> usize {
        self.inner.tracker.live()
    }

    /// Fills the pool of every server now in the topology to minPoolSize (see
    /// `ConnectionPool::fill`: pools that are not ready are skipped).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub(crate) async fn fill_pools(&self) {
        let pools: Vec<ConnectionPool> = self
            .inner
            .servers
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .map(|server| server.pool.clone())
            .collect();
        futures_util::future::join_all(pools.iter().map(ConnectionPool::fill)).await;
    }

    pub(super) fn request_immediate_checks(&self) {
        for server in self
            .inner
            .servers
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
        {
            server.checks.request();
        }
    }
}

/// Sends `report` to the worker; returns the count of reports sent so far, which the worker's
/// snapshots reach once it has applied this one (`None` when the topology is closed).
fn report_application_error(
    sender: &mpsc::UnboundedSender<WorkerMessage>,
    reports_sent: &AtomicU64,
    report: ApplicationErrorReport,
) -> Option<u64> {
    // Counted before sending, so that a selection starting after this call waits for it.
    let due = reports_sent.fetch_add(1, Ordering::SeqCst) + 1;
    if sender
        .send(WorkerMessage::ApplicationError(Box::new(report)))
        .is_err()
    {
        // The topology is closed; nothing is left to update.
        reports_sent.fetch_sub(1, Ordering::SeqCst);
        return None;
    }
    Some(due)
}

/// How pools tell the worker that establishing a connection failed (before or during the
/// handshake): the same handling as an application error in that phase.
struct PoolErrorReporter {
    sender: mpsc::UnboundedSender<WorkerMessage>,
    reports_sent: Arc<AtomicU64>,
    /// The worker's snapshots, which say how many reports it has applied.
    snapshots: watch::Receiver<Arc<Snapshot>>,
}

impl PoolErrorSink for PoolErrorReporter {
    fn establishment_failed(&self, failure: &EstablishmentFailure<'_>) -> ReportApplied {
        let due = report_application_error(
            &self.sender,
            &self.reports_sent,
            ApplicationErrorReport {
                address: failure.address.clone(),
                error: failure.error.clone(),
                generation: failure.generation,
                phase: failure.phase,
                // CMAP backpressure: a network failure while connecting means "busy", not
                // "gone", whether or not the label is on the error yet.
                system_overloaded: failure.system_overloaded,
                service_id: failure.service_id,
            },
        );
        let mut snapshots = self.snapshots.clone();
        Box::pin(async move {
            let Some(due) = due else { return };
            // An error means the worker is gone: nothing more will be applied.
            let _ = snapshots
                .wait_for(|snapshot| snapshot.closed || snapshot.reports_applied >= due)
                .await;
        })
    }
}

fn pool_error_sink(
    sender: mpsc::UnboundedSender<WorkerMessage>,
    reports_sent: Arc<AtomicU64>,
    snapshots: watch::Receiver<Arc<Snapshot>>,
) -> Arc<dyn PoolErrorSink> {
    Arc::new(PoolErrorReporter {
        sender,
        reports_sent,
        snapshots,
    })
}

/// Whether the process runs on a FaaS platform, by the handshake's rule: the client metadata
/// carries `env.name` exactly then.
fn on_faas_platform(metadata: &bson::Document) -> bool {
    metadata
        .get_document("env")
        .is_ok_and(|env| env.contains_key("name"))
}

/// serverMonitoringMode: stream unless told to poll, or on a FaaS platform in auto mode.
fn streaming_enabled(mode: ServerMonitoringMode, on_faas: bool) -> bool {
    match mode {
        ServerMonitoringMode::Stream => true,
        ServerMonitoringMode::Poll => false,
        ServerMonitoringMode::Auto => !on_faas,
    }
}
