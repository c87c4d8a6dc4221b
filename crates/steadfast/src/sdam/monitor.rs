//! The monitor of one server (server-monitoring.md): checks on its own connection, streaming
//! (awaitable hello with exhaust) or polling, immediate checks on request, cancellation of the
//! in-progress check, and heartbeat events. It reports to the topology worker and decides
//! nothing itself: failed checks go through core's `on_heartbeat_failure`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use steadfast_core::description::topology::MIN_HEARTBEAT_FREQUENCY;
use steadfast_core::sdam::{NextCheck, SdamEvent, on_heartbeat_failure};
use steadfast_core::{ServerAddress, ServerDescription};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tokio::task::JoinHandle;

use super::hello::{HelloReply, MonitorConnection, heartbeat_failure};
use super::log::HeartbeatConnection;
use super::rtt::{RttStats, RttTask};
use super::worker::{MonitorId, WorkerMessage};
use crate::conn::config::ConnectionConfig;
use crate::error::{Error, Result};
use crate::pool::ConnectionPool;
use crate::runtime::{self, TaskTracker};

/// Requests for an immediate check, shared with server selection. A request that arrives while
/// a check is running is dropped (the check's result answers it).
#[derive(Debug, Default)]
pub(crate) struct CheckRequests {
    requested: AtomicBool,
    wake: Notify,
}

impl CheckRequests {
    /// Asks the monitor to check as soon as minHeartbeatFrequencyMS allows.
    pub(crate) fn request(&self) {
        self.requested.store(true, Ordering::SeqCst);
        self.wake.notify_one();
    }

    fn forget(&self) {
        self.requested.store(false, Ordering::SeqCst);
    }

    /// Resolves once a check is requested.
    async fn requested(&self) {
        loop {
            let notified = self.wake.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.requested.swap(false, Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }
}

/// Leave for one check result of a monitor to wait in the worker's queue: the worker drops it
/// once it has applied the result, and the monitor starts no check without one. A server that
/// floods streamed hello replies therefore fills its own socket (and TCP paces it) instead of
/// the worker's queue, which holds at most one result (and its heartbeat events) per monitor.
#[derive(Debug)]
pub(super) struct ReportTicket {
    _permit: OwnedSemaphorePermit,
}

/// What a monitor needs to run.
pub(super) struct MonitorParams {
    /// Tags every report, so the worker can ignore a monitor it has stopped.
    pub(super) id: MonitorId,
    pub(super) address: ServerAddress,
    /// The client's connection settings without the credential.
    pub(super) config: Arc<ConnectionConfig>,
    pub(super) heartbeat_frequency: Duration,
    pub(super) streaming_enabled: bool,
    /// The server's pool: its generation goes into the pool-clear decision of a failed check.
    pub(super) pool: ConnectionPool,
    pub(super) worker: mpsc::UnboundedSender<WorkerMessage>,
    pub(super) checks: Arc<CheckRequests>,
    /// Ids for monitoring connections, shared by every monitor of the topology.
    pub(super) connection_ids: Arc<AtomicU64>,
}

/// The worker's handle on a running monitor. Dropping it stops the monitor.
#[derive(Debug)]
pub(super) struct MonitorHandle {
    stop: watch::Sender<()>,
    cancel: watch::Sender<u64>,
    checks: Arc<CheckRequests>,
    task: JoinHandle<()>,
}

impl MonitorHandle {
    /// Starts monitoring `params.address`: the first check begins at once.
    pub(super) fn start(params: MonitorParams, tracker: &TaskTracker) -> Self {
        let (stop, stop_rx) = watch::channel(());
        let (cancel, cancel_rx) = watch::channel(0);
        let checks = Arc::clone(&params.checks);
        let monitor = Monitor {
            signals: Signals {
                stop: stop_rx.clone(),
                cancel: cancel_rx,
                checks: Arc::clone(&params.checks),
            },
            state: MonitorState {
                previous: ServerDescription::unknown(params.address.clone()),
                connection: None,
                rtt: RttStats::default(),
                rtt_task: None,
                in_progress: None,
                heartbeat_connection: HeartbeatConnection::default(),
                tickets: Arc::new(Semaphore::new(1)),
                ticket: None,
                rtt_stop: stop_rx.clone(),
                tracker: tracker.clone(),
                params,
            },
        };
        let task = tracker.spawn(monitor.run());
        MonitorHandle {
            stop,
            cancel,
            checks,
            task,
        }
    }

    /// Requests an immediate check.
    pub(super) fn request_check(&self) {
        self.checks.request();
    }

    /// Interrupts the check in progress and drops the monitoring connection (an application
    /// operation saw a network error on this server, so that connection is likely dead too).
    pub(super) fn cancel_check(&self) {
        self.cancel
            .send_modify(|epoch| *epoch = epoch.wrapping_add(1));
    }

    /// Stops the monitor; the returned task ends once it (and its RTT task) have finished,
    /// after reporting the failure of a check that was in progress.
    pub(super) fn stop(self) -> JoinHandle<()> {
        drop(self.stop);
        self.task
    }
}

struct Signals {
    /// Its sender lives in the `MonitorHandle`: `changed()` fails once the handle is gone.
    stop: watch::Receiver<()>,
    cancel: watch::Receiver<u64>,
    checks: Arc<CheckRequests>,
}

struct MonitorState {
    params: MonitorParams,
    /// The monitor's own last result (the "previous description" of the specification's
    /// pseudocode), which decides whether a network error is retried at once.
    previous: ServerDescription,
    connection: Option<MonitorConnection>,
    rtt: RttStats,
    rtt_task: Option<JoinHandle<()>>,
    /// When the check whose ServerHeartbeatStarted was published began, and whether it was
    /// awaited: every started event gets its succeeded or failed event.
    in_progress: Option<(Instant, bool)>,
    /// The monitoring connection the heartbeats run on, as their log messages name it.
    heartbeat_connection: HeartbeatConnection,
    /// One ticket: taken before each check, returned when the worker has applied its result.
    tickets: Arc<Semaphore>,
    /// The ticket of the check under way, sent with its result.
    ticket: Option<ReportTicket>,
    /// The stop signal, for the RTT task.
    rtt_stop: watch::Receiver<()>,
    tracker: TaskTracker,
}

struct Monitor {
    signals: Signals,
    state: MonitorState,
}

enum Outcome {
    Checked(Result<Box<ServerDescription>>),
    Cancelled,
    Stopped,
}

impl Monitor {
    async fn run(mut self) {
        loop {
            if self.signals.cancel.has_changed().unwrap_or(false) {
                // Cancelled between checks: start over on a new connection.
                self.signals.cancel.mark_unchanged();
                self.state.connection = None;
            }
            // A ticket not sent (the check was cancelled) goes back before the next is taken.
            self.state.ticket = None;
            let Some(ticket) = self.ticket().await else {
                break;
            };
            self.state.ticket = Some(ticket);
            let outcome = tokio::select! {
                biased;
                _ = self.signals.stop.changed() => Outcome::Stopped,
                _ = self.signals.cancel.changed() => Outcome::Cancelled,
                result = self.state.check() => Outcome::Checked(result.map(Box::new)),
            };
            // Requests that arrived while a check ran are answered by its result; a cancelled
            // check answered nothing, so requests made since (typically by the selection that
            // retries the failed operation) must still wake the monitor.
            let (wait, answered) = match outcome {
                Outcome::Stopped => {
                    self.state
                        .interrupted("the monitor stopped (the client is closing)");
                    break;
                }
                Outcome::Cancelled => {
                    self.state
                        .interrupted("the check was cancelled after an application error");
                    self.state.connection = None;
                    (true, false)
                }
                Outcome::Checked(Ok(description)) => (self.state.succeeded(description), true),
                Outcome::Checked(Err(error)) => (self.state.failed(error), true),
            };
            if self.state.params.worker.is_closed() {
                break;
            }
            if wait && !self.wait(answered).await {
                break;
            }
        }
        if let Some(rtt) = self.state.rtt_task.take() {
            // The RTT task watches the same stop signal; wait so that nothing outlives us.
            let _ = rtt.await;
        }
    }

    /// Waits until the worker has applied this monitor's previous result; `None` when the
    /// monitor is stopped meanwhile.
    async fn ticket(&mut self) -> Option<ReportTicket> {
        let tickets = Arc::clone(&self.state.tickets);
        tokio::select! {
            biased;
            _ = self.signals.stop.changed() => None,
            permit = tickets.acquire_owned() => permit.ok().map(|p| ReportTicket { _permit: p }),
        }
    }

    /// Sleeps heartbeatFrequencyMS, or less when a check is requested, but never less than
    /// minHeartbeatFrequencyMS. `answered` says whether the last check produced a result that
    /// answers the requests made while it ran. Returns false when the monitor is stopped
    /// meanwhile.
    async fn wait(&mut self, answered: bool) -> bool {
        if answered {
            self.signals.checks.forget();
        }
        let start = runtime::now();
        tokio::select! {
            _ = self.signals.stop.changed() => return false,
            () = runtime::sleep_until(start + self.state.params.heartbeat_frequency) => {}
            () = self.signals.checks.requested() => {}
        }
        let earliest = start + MIN_HEARTBEAT_FREQUENCY;
        if runtime::now() < earliest {
            tokio::select! {
                _ = self.signals.stop.changed() => return false,
                () = runtime::sleep_until(earliest) => {}
            }
        }
        true
    }
}

impl MonitorState {
    fn send(&self, message: WorkerMessage) {
        // A closed channel means the topology is gone; the loop notices and ends.
        let _ = self.params.worker.send(message);
    }

    fn event(&self, event: SdamEvent) {
        self.send(WorkerMessage::Event(
            self.params.id,
            event,
            self.heartbeat_connection,
        ));
    }

    fn started(&mut self, awaited: bool) {
        self.in_progress = Some((runtime::now(), awaited));
        self.event(SdamEvent::ServerHeartbeatStarted {
            address: self.params.address.clone(),
            awaited,
            driver_connection_id: self.heartbeat_connection.driver,
            server_connection_id: self.heartbeat_connection.server,
        });
    }

    /// Publishes the failure of a check whose future was dropped midway.
    fn interrupted(&mut self, why: &str) {
        if let Some((since, awaited)) = self.in_progress.take() {
            self.event(SdamEvent::ServerHeartbeatFailed {
                address: self.params.address.clone(),
                duration: runtime::now().saturating_duration_since(since),
                failure: why.to_string(),
                awaited,
                driver_connection_id: self.heartbeat_connection.driver,
                server_connection_id: self.heartbeat_connection.server,
            });
        }
    }

    /// One check: on a new connection (its handshake is the check), by reading the next
    /// streamed reply, by starting an awaitable hello, or by a regular hello.
    async fn check(&mut self) -> Result<ServerDescription> {
        let config = Arc::clone(&self.params.config);
        let heartbeat = self.params.heartbeat_frequency;
        let open = self.connection.as_ref().is_some_and(|c| !c.is_broken());
        let (reply, awaited) = if !open {
            self.connection = None;
            let id = self.params.connection_ids.fetch_add(1, Ordering::Relaxed);
            self.heartbeat_connection = HeartbeatConnection::new(id);
            self.started(false);
            let result = MonitorConnection::open(id, &self.params.address, &config).await;
            let (connection, reply) = self.heartbeat_result(result.map(|(c, r)| (Some(c), r)))?;
            self.connection = connection;
            (reply, false)
        } else if self
            .connection
            .as_ref()
            .is_some_and(MonitorConnection::is_streaming)
        {
            self.started(true);
            let timeout = config.connect_timeout.map(|t| t + heartbeat);
            let result = match self.connection.as_mut() {
                Some(connection) => connection.next_streamed(timeout).await,
                None => Err(Error::network("the monitoring connection is gone")),
            };
            (self.heartbeat_result(result.map(|r| ((), r)))?.1, true)
        } else if let (true, Some(version)) = (
            self.params.streaming_enabled,
            self.previous.topology_version,
        ) {
            self.started(true);
            let timeout = config.connect_timeout.map(|t| t + heartbeat);
            let result = match self.connection.as_mut() {
                Some(connection) => {
                    connection
                        .awaitable_hello(&config, &version, heartbeat, timeout)
                        .await
                }
                None => Err(Error::network("the monitoring connection is gone")),
            };
            (self.heartbeat_result(result.map(|r| ((), r)))?.1, true)
        } else {
            self.started(false);
            let result = match self.connection.as_mut() {
                Some(connection) => connection.hello(&config, config.connect_timeout).await,
                None => Err(Error::network("the monitoring connection is gone")),
            };
            (self.heartbeat_result(result.map(|r| ((), r)))?.1, false)
        };
        // Awaited replies block on the server: their duration is no round-trip time.
        if !awaited {
            self.rtt.add_sample(reply.duration);
        }
        let (average, minimum) = self.rtt.current();
        Ok(ServerDescription::from_hello(
            self.params.address.clone(),
            &reply.document,
            average,
            minimum,
            runtime::now(),
        ))
    }

    /// Publishes the heartbeat outcome of the check in progress and passes the result on.
    fn heartbeat_result<T>(&mut self, result: Result<(T, HelloReply)>) -> Result<(T, HelloReply)> {
        let (since, awaited) = self.in_progress.take().unwrap_or((runtime::now(), false));
        let address = self.params.address.clone();
        if let Ok((_, reply)) = &result {
            self.heartbeat_connection.learn(&reply.document);
        }
        let HeartbeatConnection {
            driver: driver_connection_id,
            server: server_connection_id,
        } = self.heartbeat_connection;
        match &result {
            Ok((_, reply)) => self.event(SdamEvent::ServerHeartbeatSucceeded {
                address,
                // Not awaited: exactly the measurement the RTT uses.
                duration: if awaited {
                    runtime::now().saturating_duration_since(since)
                } else {
                    reply.duration
                },
                reply: reply.document.clone(),
                awaited,
                driver_connection_id,
                server_connection_id,
            }),
            Err(error) => self.event(SdamEvent::ServerHeartbeatFailed {
                address,
                duration: runtime::now().saturating_duration_since(since),
                failure: error.to_string(),
                awaited,
                driver_connection_id,
                server_connection_id,
            }),
        }
        result
    }

    /// Reports a successful check; returns whether to wait before the next one.
    fn succeeded(&mut self, description: Box<ServerDescription>) -> bool {
        let server_streams =
            description.server_type.is_known() && description.topology_version.is_some();
        let ticket = self.ticket.take();
        self.send(WorkerMessage::CheckSucceeded(
            self.params.id,
            description.clone(),
            ticket,
        ));
        self.previous = *description;
        if self.params.streaming_enabled && server_streams && self.rtt_task.is_none() {
            self.start_rtt_task();
        }
        let connection_streams = self
            .connection
            .as_ref()
            .is_some_and(MonitorConnection::is_streaming);
        // Streaming: the next check starts at once (the server itself paces the replies).
        !(self.params.streaming_enabled && (server_streams || connection_streams))
    }

    /// Reports a failed check (core decides the description, the pool clear and whether to
    /// retry at once); returns whether to wait before the next one.
    fn failed(&mut self, error: Error) -> bool {
        tracing::debug!(address = %self.params.address, %error, "server check failed");
        self.connection = None;
        self.rtt.reset();
        let failure = heartbeat_failure(&error);
        let actions = on_heartbeat_failure(&self.previous, &failure, self.params.pool.generation());
        let wait = actions.next_check == NextCheck::AfterInterval;
        self.previous = actions.description.clone();
        let ticket = self.ticket.take();
        self.send(WorkerMessage::CheckFailed {
            monitor: self.params.id,
            actions: Box::new(actions),
            cause: error,
            ticket,
        });
        wait
    }

    fn start_rtt_task(&mut self) {
        let task = RttTask {
            address: self.params.address.clone(),
            config: Arc::clone(&self.params.config),
            heartbeat_frequency: self.params.heartbeat_frequency,
            stats: self.rtt.clone(),
            stop: self.rtt_stop.clone(),
            connection_ids: Arc::clone(&self.params.connection_ids),
        };
        self.rtt_task = Some(self.tracker.spawn(task.run()));
    }
}
