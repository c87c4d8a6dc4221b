//! The [`Executor`]: everything running an operation needs, shared by a client's handles, its
//! sessions and its cursors.
//!
//! It owns the topology (monitors, one connection pool per server, the worker that keeps the
//! description current), the server-session pool, the event emitter, the retry budget, the
//! default retry policy, the resolved options and connection settings, the client's own
//! background tasks, and whether the client has been shut down. [`crate::Client`] is a handle
//! to one; a `ClientSession` and a cursor hold the executor itself, so neither keeps a client.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use steadfast_core::options::ClientOptions;
use steadfast_core::retry::{FailFast, RetryBudget, RetryBudgetConfig, RetryPolicy};
use steadfast_core::session::{ServerSession, SessionPool};

use super::ExecutionContext;
use super::run_command::EndSessions;
use crate::conn::config::{ConnectionConfig, ServerApi};
use crate::error::{Error, ErrorKind, Result};
use crate::event::EventEmitter;
use crate::handshake::metadata::{DriverInfo, Environment, client_metadata};
use crate::runtime::{self, TaskTracker};
use crate::sdam::Topology;

/// How long shutdown lets `endSessions` look for a server: the command is a courtesy (the
/// server forgets idle sessions anyway), so shutdown never waits long for it.
const END_SESSIONS_LIMIT: Duration = Duration::from_secs(1);

/// What a client's builder resolved, handed to [`Executor::new`].
pub(crate) struct ExecutorParts {
    pub(crate) options: ClientOptions,
    pub(crate) environment: Environment,
    pub(crate) config: Arc<ConnectionConfig>,
    pub(crate) topology: Topology,
    pub(crate) events: EventEmitter,
    pub(crate) retry_policy: Arc<dyn RetryPolicy>,
    /// None unless the application turned the retry budget on.
    pub(crate) budget: Option<RetryBudgetConfig>,
    pub(crate) tasks: TaskTracker,
    /// The client's OpenTelemetry tracer (off unless enabled).
    pub(crate) tracer: crate::otel::Tracer,
    /// The client's default selection criteria as the application gave them (a read
    /// preference), for `Client::selection_criteria`.
    pub(crate) selection_criteria: Option<steadfast_core::selection::SelectionCriteria>,
}

/// Runs operations against one deployment; see the module documentation.
pub(crate) struct Executor {
    options: ClientOptions,
    /// The process environment, for rebuilding the handshake metadata on an append.
    environment: Environment,
    /// The connection settings every pool and monitor shares (handshake metadata, Stable API).
    config: Arc<ConnectionConfig>,
    /// Wrapping libraries appended to the handshake metadata so far, in order (no duplicates).
    wrappers: Mutex<Vec<DriverInfo>>,
    topology: Topology,
    events: EventEmitter,
    sessions: Mutex<SessionPool>,
    /// The retry budget, if the application turned it on.
    budget: Option<Mutex<RetryBudget>>,
    retry_policy: Arc<dyn RetryPolicy>,
    /// Tasks the executor spawns itself (background killCursors).
    tasks: TaskTracker,
    /// The client's OpenTelemetry tracer (off unless enabled).
    tracer: crate::otel::Tracer,
    /// The client's default selection criteria as given (see [`ExecutorParts`]).
    selection_criteria: Option<steadfast_core::selection::SelectionCriteria>,
    closed: AtomicBool,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("options", &self.options)
            .field("topology", &self.topology)
            .field("retry_policy", &self.retry_policy)
            .finish()
    }
}

impl Executor {
    /// An open executor over what the builder resolved.
    pub(crate) fn new(parts: ExecutorParts) -> Arc<Executor> {
        Arc::new(Executor {
            options: parts.options,
            environment: parts.environment,
            config: parts.config,
            wrappers: Mutex::new(Vec::new()),
            topology: parts.topology,
            events: parts.events,
            sessions: Mutex::new(SessionPool::new()),
            budget: parts
                .budget
                .map(|config| Mutex::new(RetryBudget::new(config))),
            retry_policy: parts.retry_policy,
            tasks: parts.tasks,
            tracer: parts.tracer,
            selection_criteria: parts.selection_criteria,
            closed: AtomicBool::new(false),
        })
    }

    /// The options the client was created with.
    pub(crate) fn options(&self) -> &ClientOptions {
        &self.options
    }

    /// The client's default selection criteria, when the application set them.
    pub(crate) fn selection_criteria(
        &self,
    ) -> Option<&steadfast_core::selection::SelectionCriteria> {
        self.selection_criteria.as_ref()
    }

    /// The client's OpenTelemetry tracer.
    pub(crate) fn tracer(&self) -> &crate::otel::Tracer {
        &self.tracer
    }

    pub(crate) fn topology(&self) -> &Topology {
        &self.topology
    }

    pub(crate) fn events(&self) -> &EventEmitter {
        &self.events
    }

    pub(crate) fn server_api(&self) -> Option<&ServerApi> {
        self.config.server_api.as_ref()
    }

    /// The client's credential, when it authenticates.
    pub(crate) fn auth(&self) -> Option<&crate::conn::config::AuthSettings> {
        self.config.auth.as_deref()
    }

    pub(crate) fn default_retry_policy(&self) -> Arc<dyn RetryPolicy> {
        Arc::clone(&self.retry_policy)
    }

    /// Fails once the client has been shut down.
    pub(crate) fn ensure_open(&self) -> Result<()> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(Error::new(ErrorKind::Shutdown));
        }
        Ok(())
    }

    /// Appends a wrapping library's information to the metadata that new connections send in
    /// their handshake; appending the same information twice has no further effect.
    ///
    /// # Errors
    /// `InvalidArgument` when a field contains the delimiter `|`.
    pub(crate) fn append_metadata(&self, info: DriverInfo) -> Result<()> {
        info.validate()?;
        let info = info.normalized();
        let mut wrappers = self.wrappers.lock().unwrap_or_else(PoisonError::into_inner);
        if wrappers.contains(&info) {
            return Ok(());
        }
        let mut updated = wrappers.clone();
        updated.push(info);
        let metadata = client_metadata(
            self.options.app_name.as_deref(),
            &self.environment,
            &updated,
        )?;
        self.config.appended_metadata.set(metadata);
        *wrappers = updated;
        Ok(())
    }

    /// Counts an operation's first attempt in the retry budget, if there is one.
    pub(crate) fn record_request(&self, now: Instant) {
        if let Some(budget) = &self.budget {
            budget
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .record_request(now);
        }
    }

    /// Runs `decide` with the retry budget (locked for the call only; None when the
    /// application did not turn it on) and a random source.
    pub(crate) fn with_budget<R>(
        &self,
        decide: impl FnOnce(Option<&mut RetryBudget>, &mut dyn rand::RngCore) -> R,
    ) -> R {
        let mut rng = runtime::rng();
        match &self.budget {
            Some(budget) => {
                let mut budget = budget.lock().unwrap_or_else(PoisonError::into_inner);
                decide(Some(&mut budget), &mut rng)
            }
            None => decide(None, &mut rng),
        }
    }

    /// A server session from the pool (or a new one).
    pub(crate) fn acquire_server_session(&self) -> ServerSession {
        let timeout = self.topology.logical_session_timeout();
        let load_balanced = self.options.load_balanced;
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .acquire(timeout, load_balanced, &mut runtime::rng(), runtime::now())
    }

    /// Returns a server session to the pool (dropped if dirty, about to expire, or the client
    /// is shut down).
    pub(crate) fn release_server_session(&self, session: ServerSession) {
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        if self.options.load_balanced {
            sessions.release_load_balanced(session);
        } else {
            let timeout = self.topology.logical_session_timeout();
            sessions.release(session, timeout, runtime::now());
        }
    }

    /// Server sessions waiting in the pool.
    #[cfg(test)]
    pub(crate) fn pooled_sessions(&self) -> usize {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Runs `future` as one of the executor's background tasks.
    pub(crate) fn spawn<F>(&self, future: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        self.tasks.spawn(future);
    }

    /// The trackers of every background task: the topology's and the executor's own.
    pub(crate) fn task_trackers(&self) -> [TaskTracker; 2] {
        [self.topology.tasks(), self.tasks.clone()]
    }

    /// Ends the pooled server sessions (once, best effort), refuses new operations, shuts the
    /// topology down and waits for every background task.
    ///
    /// # Cancel safety
    /// Cancel safe: once `endSessions` is done, the topology's shutdown is requested before the
    /// future waits again, and completes in the background if the future is dropped.
    ///
    /// With `immediate`, without the `endSessions` and without waiting for the client's own
    /// background tasks (a dropped cursor's `killCursors`): new operations are refused and the
    /// topology (monitors, pools, sockets) is still shut down.
    pub(crate) async fn shutdown_with(self: &Arc<Self>, immediate: bool) {
        if !self.closed.load(Ordering::SeqCst) {
            if !immediate {
                self.end_pooled_sessions().await;
            }
            self.closed.store(true, Ordering::SeqCst);
        }
        self.topology.shutdown().await;
        if !immediate {
            self.tasks.wait_until_idle().await;
        }
    }

    /// Sends `endSessions` for every pooled server session, in batches, errors ignored.
    async fn end_pooled_sessions(self: &Arc<Self>) {
        let batches = self
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain_for_end_sessions();
        let limit = END_SESSIONS_LIMIT.min(self.options.server_selection_timeout);
        for ids in batches {
            let context = ExecutionContext {
                session: None,
                deadline: runtime::start_deadline(Some(limit)),
                retry_policy: Some(Arc::new(FailFast)),
                ..ExecutionContext::default()
            };
            if let Err(error) = self.execute(EndSessions::new(ids), context).await {
                tracing::debug!(%error, "endSessions failed at shutdown; the server will expire the sessions");
            }
        }
    }
}
