//! The client: the application's handle to a deployment.
//!
//! A [`Client`] owns the topology (monitors, one connection pool per server, the worker that
//! keeps the description current), the server-session pool, the event emitter, the retry
//! budget and the default retry policy. Operations run through the executor
//! (`crate::executor`). Cloning is cheap; the clones share everything. When the last clone
//! (and the last session, cursor or task holding one) is dropped, the topology shuts down in
//! the background: monitors stop, pools close their sockets. [`Client::shutdown`] does the
//! same but also ends the pooled server sessions (`endSessions`) and waits until every task
//! and socket is gone.

mod builder;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use steadfast_core::options::{ClientOptions, ParsedUri};
use steadfast_core::retry::{RetryBudget, RetryPolicy};
use steadfast_core::session::{ServerSession, SessionPool};

pub use self::builder::ClientBuilder;
use crate::conn::config::{ConnectionConfig, ServerApi};
use crate::db::Database;
use crate::error::{Error, Result};
use crate::event::EventEmitter;
use crate::executor::ExecutionContext;
use crate::executor::run_command::EndSessions;
use crate::handshake::metadata::{DriverInfo, Environment, client_metadata};
use crate::options::DatabaseOptions;
use crate::runtime::{self, TaskTracker};
use crate::sdam::Topology;
use crate::sdam::srv::{self, HickoryResolver};
use crate::session::{ClientSession, SessionOptions};

/// How long shutdown lets `endSessions` look for a server: the command is a courtesy (the
/// server forgets idle sessions anyway), so shutdown never waits long for it.
const END_SESSIONS_LIMIT: Duration = Duration::from_secs(1);

/// A handle to a MongoDB deployment. Cheap to clone: clones share the topology, the pools and
/// the sessions.
///
/// ```no_run
/// # async fn demo() -> steadfast::Result<()> {
/// let client = steadfast::Client::with_uri_str("mongodb://127.0.0.1:27017/?replicaSet=rs0").await?;
/// let reply = client.database("admin").run_command(bson::doc! { "ping": 1 }).await?;
/// assert_eq!(reply.get_f64("ok").ok(), Some(1.0));
/// client.shutdown().await;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Client {
    inner: Arc<ClientInner>,
}

struct ClientInner {
    options: ClientOptions,
    environment: Environment,
    config: Arc<ConnectionConfig>,
    /// Wrapping libraries appended so far, in order (no duplicates).
    wrappers: Mutex<Vec<DriverInfo>>,
    topology: Topology,
    events: EventEmitter,
    sessions: Mutex<SessionPool>,
    /// The retry budget, if the application turned it on.
    budget: Option<Mutex<RetryBudget>>,
    retry_policy: Arc<dyn RetryPolicy>,
    /// Tasks the client spawns itself (background killCursors).
    tasks: TaskTracker,
    closed: AtomicBool,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("options", &self.inner.options)
            .field("topology", &self.inner.topology)
            .field("retry_policy", &self.inner.retry_policy)
            .finish()
    }
}

impl Client {
    /// Parses a connection string and creates a client. A `mongodb+srv://` string is resolved
    /// through DNS first (SRV and TXT records); otherwise no I/O happens here: monitoring
    /// starts in the background and operations wait for a suitable server.
    ///
    /// # Errors
    /// `Configuration` naming the offending part when the string is invalid, when its DNS
    /// records cannot be resolved or used, or when the options cannot be honoured (see
    /// [`Client::with_options`]).
    pub async fn with_uri_str(uri: &str) -> Result<Client> {
        ClientBuilder::from_uri_str(uri).await?.build()
    }

    /// Creates a client from options (after [`ClientOptions::validate`]). Must be called
    /// inside a tokio runtime: the client's monitors and pools run as tasks on it.
    ///
    /// # Errors
    /// `Configuration` for invalid options, an unsupported authentication mechanism, an
    /// over-long appName, or outside a tokio runtime; TLS and I/O errors when certificate
    /// files cannot be used.
    pub fn with_options(options: ClientOptions) -> Result<Client> {
        ClientBuilder::new(options).build()
    }

    /// Like [`Client::with_options`], declaring a Stable API version on every command.
    ///
    /// # Errors
    /// As [`Client::with_options`].
    pub fn with_options_and_server_api(options: ClientOptions, api: ServerApi) -> Result<Client> {
        ClientBuilder::new(options).server_api(api).build()
    }

    /// A builder for a client with event handlers, a default retry policy, a retry budget or
    /// a Stable API version.
    pub fn builder(options: ClientOptions) -> ClientBuilder {
        ClientBuilder::new(options)
    }

    /// A handle to the database `name`. No I/O.
    pub fn database(&self, name: &str) -> Database {
        Database::new(self.clone(), name, DatabaseOptions::default())
    }

    /// A handle to the database `name` with settings of its own (read and write concern, read
    /// preference, timeout, retry policy) that its collections inherit. No I/O.
    pub fn database_with_options(&self, name: &str, options: DatabaseOptions) -> Database {
        Database::new(self.clone(), name, options)
    }

    /// The database named in the connection string's path, if there was one.
    pub fn default_database(&self) -> Option<Database> {
        self.inner
            .options
            .default_database
            .as_deref()
            .map(|name| self.database(name))
    }

    /// Starts an explicit, causally consistent session.
    ///
    /// # Errors
    /// `InvalidArgument` once the client has been shut down.
    pub async fn start_session(&self) -> Result<ClientSession> {
        self.start_session_with_options(SessionOptions::default())
            .await
    }

    /// Starts an explicit session with `options`. No I/O: the session id is generated
    /// locally, and whether the deployment supports sessions is checked by its first
    /// operation.
    ///
    /// # Errors
    /// `InvalidArgument` once the client has been shut down.
    pub async fn start_session_with_options(
        &self,
        options: SessionOptions,
    ) -> Result<ClientSession> {
        self.ensure_open()?;
        Ok(ClientSession::new(self.clone(), options, false))
    }

    /// Appends a wrapping library's name, version and platform to the metadata that *new*
    /// connections send in their handshake (existing connections keep theirs). Appending the
    /// same information twice has no further effect.
    ///
    /// # Errors
    /// `InvalidArgument` when a field contains the delimiter `|`.
    pub fn append_metadata(&self, info: DriverInfo) -> Result<()> {
        info.validate()?;
        let info = info.normalized();
        let mut wrappers = self
            .inner
            .wrappers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if wrappers.contains(&info) {
            return Ok(());
        }
        let mut updated = wrappers.clone();
        updated.push(info);
        let metadata = client_metadata(
            self.inner.options.app_name.as_deref(),
            &self.inner.environment,
            &updated,
        )?;
        self.inner.config.appended_metadata.set(metadata);
        *wrappers = updated;
        Ok(())
    }

    /// The options this client was created with.
    pub fn options(&self) -> &ClientOptions {
        &self.inner.options
    }

    /// Shuts the client down: ends the pooled server sessions with `endSessions` (best effort,
    /// errors ignored), stops the monitors, closes every pool (TopologyClosed is the last
    /// event), and returns once every task of the client has ended and every socket is
    /// closed. Operations started afterwards, on this handle's clones too, fail at once. The
    /// background `killCursors` of dropped cursors is among those tasks; it is bounded by
    /// timeoutMS (else by serverSelectionTimeoutMS, at most 10 s), so a server that never
    /// answers it cannot hold shutdown up.
    ///
    /// # Cancel safety
    /// Cancel safe: the topology's shutdown is requested before the future first waits, and
    /// completes in the background if the future is dropped.
    pub async fn shutdown(self) {
        if !self.inner.closed.load(Ordering::SeqCst) {
            self.end_pooled_sessions().await;
            self.inner.closed.store(true, Ordering::SeqCst);
        }
        self.inner.topology.shutdown().await;
        self.inner.tasks.wait_until_idle().await;
    }

    /// The client's background work, for proving that none outlives it: tasks of the topology
    /// (worker, monitors, RTT tasks, pools) and of the client itself.
    #[doc(hidden)]
    pub fn background_tasks(&self) -> BackgroundTasks {
        BackgroundTasks {
            trackers: [self.inner.topology.tasks(), self.inner.tasks.clone()],
        }
    }

    async fn end_pooled_sessions(&self) {
        let batches = self
            .inner
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain_for_end_sessions();
        let limit = END_SESSIONS_LIMIT.min(self.inner.options.server_selection_timeout);
        for ids in batches {
            let context = ExecutionContext {
                session: None,
                timeout: Some(limit),
                retry_policy: Some(Arc::new(steadfast_core::retry::FailFast)),
                ..ExecutionContext::default()
            };
            if let Err(error) = self.execute(EndSessions::new(ids), context).await {
                tracing::debug!(%error, "endSessions failed at shutdown; the server will expire the sessions");
            }
        }
    }

    pub(crate) fn from_parts(parts: builder::Parts) -> Client {
        Client {
            inner: Arc::new(ClientInner {
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
                closed: AtomicBool::new(false),
            }),
        }
    }

    pub(crate) fn topology(&self) -> &Topology {
        &self.inner.topology
    }

    pub(crate) fn events(&self) -> &EventEmitter {
        &self.inner.events
    }

    pub(crate) fn server_api(&self) -> Option<&ServerApi> {
        self.inner.config.server_api.as_ref()
    }

    pub(crate) fn default_retry_policy(&self) -> Arc<dyn RetryPolicy> {
        Arc::clone(&self.inner.retry_policy)
    }

    /// Whether two handles are clones of one client.
    pub(crate) fn same_client(&self, other: &Client) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Fails once the client has been shut down.
    pub(crate) fn ensure_open(&self) -> Result<()> {
        if self.inner.closed.load(Ordering::SeqCst) {
            return Err(Error::invalid_argument("the client has been shut down"));
        }
        Ok(())
    }

    /// Counts an operation's first attempt in the retry budget, if there is one.
    pub(crate) fn record_request(&self, now: Instant) {
        if let Some(budget) = &self.inner.budget {
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
        match &self.inner.budget {
            Some(budget) => {
                let mut budget = budget.lock().unwrap_or_else(PoisonError::into_inner);
                decide(Some(&mut budget), &mut rng)
            }
            None => decide(None, &mut rng),
        }
    }

    /// A server session from the pool (or a new one).
    pub(crate) fn acquire_server_session(&self) -> ServerSession {
        let timeout = self.inner.topology.logical_session_timeout();
        let load_balanced = self.inner.options.load_balanced;
        self.inner
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .acquire(timeout, load_balanced, &mut runtime::rng(), runtime::now())
    }

    /// Returns a server session to the pool (dropped if dirty, about to expire, or the client
    /// is shut down).
    pub(crate) fn release_server_session(&self, session: ServerSession) {
        if self.inner.closed.load(Ordering::SeqCst) {
            return;
        }
        let timeout = self.inner.topology.logical_session_timeout();
        self.inner
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .release(session, timeout, runtime::now());
    }

    /// Runs `future` as one of the client's background tasks.
    pub(crate) fn spawn<F>(&self, future: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        self.inner.tasks.spawn(future);
    }

    /// Server sessions waiting in the pool.
    #[cfg(test)]
    pub(crate) fn pooled_sessions(&self) -> usize {
        self.inner
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// Counts a client's live background tasks; keeps counting after the client is dropped.
#[doc(hidden)]
#[derive(Clone, Debug)]
pub struct BackgroundTasks {
    trackers: [TaskTracker; 2],
}

impl BackgroundTasks {
    /// Tasks alive now.
    pub fn live(&self) -> usize {
        self.trackers.iter().map(TaskTracker::live).sum()
    }

    /// Waits until none is alive.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn wait_until_idle(&self) {
        for tracker in &self.trackers {
            tracker.wait_until_idle().await;
        }
    }
}

/// Parses `uri`, resolving `mongodb+srv://` through the system resolver.
async fn options_from_uri(uri: &str) -> Result<ClientOptions> {
    let (options, warnings) = match ClientOptions::parse(uri) {
        Ok(ParsedUri::Complete { options, warnings }) => (options, warnings),
        Ok(ParsedUri::NeedsSrv(connection_string)) => {
            let resolver = HickoryResolver::from_system_config()?;
            let resolution = srv::resolve(&connection_string, &resolver).await?;
            (resolution.options, resolution.warnings)
        }
        Err(e) => {
            return Err(
                Error::configuration(format!("invalid connection string: {e}")).with_source(e),
            );
        }
    };
    for warning in warnings {
        tracing::warn!(%warning, "connection string option ignored");
    }
    Ok(options)
}
