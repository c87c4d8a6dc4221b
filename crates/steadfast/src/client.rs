//! The client: the application's handle to a deployment.
//!
//! A [`Client`] is a thin, cheaply cloned handle to an executor (`crate::executor::Executor`),
//! which owns the topology (monitors, one connection pool per server, the worker that keeps
//! the description current), the server-session pool, the event emitter, the retry budget and
//! the default retry policy, and runs every operation. Clones, sessions and cursors share
//! that executor. When the last of them is dropped, the topology shuts down in the
//! background: monitors stop, pools close their sockets. [`Client::shutdown`] does the same
//! but also ends the pooled server sessions (`endSessions`) and waits until every task and
//! socket is gone.

mod builder;
mod options;
mod options_builder;
#[cfg(feature = "dns-resolver")]
mod resolver_config;
mod tls;

use std::sync::Arc;

use steadfast_core::options::{
    ClientOptions as ResolvedClientOptions, ParsedUri, ReadConcern, WriteConcern,
};
use steadfast_core::retry::SpecPolicy;
use steadfast_core::selection::SelectionCriteria;

pub use self::builder::ClientBuilder;
pub use self::options::{ClientOptions, ClientOptionsBuilder, Compressor, Socks5Proxy};
#[cfg(feature = "dns-resolver")]
pub use self::resolver_config::{DnsProtocol, NameServer, ResolverConfig};
pub use self::tls::{Tls, TlsOptions, TlsOptionsBuilder};
use crate::conn::config::{ConnectionConfig, ServerApi};
#[cfg(feature = "dns-resolver")]
use crate::conn::stream::HostResolver;
use crate::db::Database;
use crate::error::{Error, Result};
use crate::event::EventEmitter;
use crate::executor::{Executor, ExecutorParts};
use crate::handshake::metadata::{DriverInfo, Environment};
use crate::logging::LogContext;
use crate::options::DatabaseOptions;
use crate::runtime::TaskTracker;
use crate::sdam::Topology;
#[cfg(feature = "dns-resolver")]
use crate::sdam::srv::{self, HickoryResolver};
use crate::session::{ClientSession, SessionOptions};

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
    executor: Arc<Executor>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("options", self.executor.options())
            .field("topology", self.executor.topology())
            .field("retry_policy", &self.executor.default_retry_policy())
            .finish()
    }
}

impl Client {
    /// Parses a connection string and creates a client. A `mongodb+srv://` string is resolved
    /// through DNS first (SRV and TXT records); otherwise no I/O happens here: monitoring
    /// starts in the background and operations wait for a suitable server.
    ///
    /// # Errors
    /// `InvalidArgument` naming the offending part when the string is invalid or the options
    /// cannot be honoured, `DnsResolve` when its DNS records cannot be resolved or used (see
    /// [`Client::with_options`]).
    pub async fn with_uri_str(uri: impl AsRef<str>) -> Result<Client> {
        Client::with_options(ClientOptions::parse(uri).await?)
    }

    /// Creates a client from options: fills in the defaults
    /// ([`ClientOptions::resolve`]), checks the specifications' combination rules, and starts
    /// monitoring in the background. Must be called inside a tokio runtime: the client's
    /// monitors and pools run as tasks on it.
    ///
    /// # Errors
    /// `InvalidArgument` for invalid options (including a predicate as the default selection
    /// criteria), an option that needs a cargo feature this program was built without (a
    /// compressor, TLS, MONGODB-AWS, an OIDC environment; the message names the feature), an
    /// unsupported authentication mechanism, an over-long appName or driver
    /// information containing `|`, or outside a tokio runtime; TLS and I/O errors when
    /// certificate files cannot be used.
    pub fn with_options(options: ClientOptions) -> Result<Client> {
        crate::features::check(&options)?;
        if let Some(SelectionCriteria::Predicate(_)) = options.selection_criteria {
            return Err(Error::invalid_argument(
                "a client's default selection criteria must be a read preference; pass a \
                 predicate to each operation instead",
            ));
        }
        if !options.tls.as_ref().is_none_or(Tls::password_is_utf8) {
            return Err(Error::invalid_argument(
                "the TLS key password must be UTF-8",
            ));
        }
        let resolved = options.resolve();
        resolved.validate().map_err(|e| {
            Error::invalid_argument(format!("invalid client options: {e}")).with_source(e)
        })?;
        let environment = Environment::current();
        // One resolver for SRV polling and the servers' addresses when the application names
        // its name servers; the system's resolver for SRV and the operating system's lookup for
        // addresses otherwise.
        #[cfg(feature = "dns-resolver")]
        let custom_resolver = options
            .resolver_config
            .as_ref()
            .map(HickoryResolver::with_config);
        #[cfg_attr(
            not(feature = "dns-resolver"),
            allow(unused_mut, reason = "no resolver to set")
        )]
        let mut config =
            ConnectionConfig::from_options_in(&resolved, options.server_api.clone(), &environment)?;
        #[cfg(feature = "dns-resolver")]
        if let Some(resolver) = &custom_resolver {
            config.host_resolver = HostResolver::Dns(resolver.shared());
        }
        let config = Arc::new(config);
        let tasks = TaskTracker::new()?;
        let mut listeners = options.event_listeners.clone();
        // Event deliveries run on a tracker of their own: they are the application's work, and
        // a handler that never returns (or a channel nobody drains) must not hold up shutdown.
        let delivery_tasks = TaskTracker::new()?;
        let log = LogContext::new(
            crate::runtime::object_id(),
            options.tracing_max_document_length_bytes,
        );
        listeners.extend(
            options
                .event_handlers()
                .into_listener(delivery_tasks, log.topology_id),
        );
        let events = EventEmitter::with_log(listeners, log);
        let topology = Topology::new(&resolved, Arc::clone(&config), events.clone())?;
        // A client without `dns-resolver` has no mongodb+srv:// seed list to poll.
        #[cfg(feature = "dns-resolver")]
        srv::poll::start(&topology, &resolved, custom_resolver);
        let client = Client::from_executor(Executor::new(ExecutorParts {
            options: resolved,
            environment,
            config,
            topology,
            events,
            retry_policy: options
                .retry_policy
                .clone()
                .unwrap_or_else(|| Arc::new(SpecPolicy)),
            budget: options.retry_budget,
            tasks,
            tracer: tracer(&options),
            selection_criteria: options.selection_criteria.clone(),
        }));
        if let Some(info) = options.driver_info {
            client.append_metadata(info)?;
        }
        Ok(client)
    }

    /// Like [`Client::with_options`], declaring a Stable API version on every command.
    ///
    /// # Errors
    /// As [`Client::with_options`].
    pub fn with_options_and_server_api(
        mut options: ClientOptions,
        api: ServerApi,
    ) -> Result<Client> {
        options.server_api = Some(api);
        Client::with_options(options)
    }

    /// A builder for a client with steadfast's settings (event listeners, a default retry
    /// policy, a retry budget) set by chained calls.
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

    /// The id of this client's topology: the `topology_id` of its SDAM events and the
    /// `topologyId` field of every log message it writes (see [`logging`](crate::logging)),
    /// which tells one client's messages from another's.
    pub fn topology_id(&self) -> bson::oid::ObjectId {
        self.executor.events().log().topology_id
    }

    /// The database named in the connection string's path, if there was one.
    pub fn default_database(&self) -> Option<Database> {
        self.executor
            .options()
            .default_database
            .as_deref()
            .map(|name| self.database(name))
    }

    /// Starts an explicit session with `options`, as
    /// `client.start_session().with_options(options)`.
    ///
    /// # Errors
    /// `Shutdown` once the client has been shut down.
    pub async fn start_session_with_options(
        &self,
        options: SessionOptions,
    ) -> Result<ClientSession> {
        self.open_session(options)
    }

    /// A new explicit session. No I/O: the session id is generated locally, and whether the
    /// deployment supports sessions is checked by its first operation.
    pub(crate) fn open_session(&self, options: SessionOptions) -> Result<ClientSession> {
        self.executor.ensure_open()?;
        options.validate()?;
        Ok(ClientSession::new(
            Arc::clone(&self.executor),
            options,
            false,
        ))
    }

    /// Establishes connections up to `min_pool_size` in the pool of every server the client
    /// knows and can use now, and returns once they are ready, so that the first operations do
    /// not pay for them. Not needed for correctness: pools fill in the background anyway. Does
    /// nothing when `min_pool_size` is 0 (the default); servers not yet discovered, or whose
    /// pool is paused, are skipped, and a pool stops warming at its first failed connection.
    ///
    /// # Cancel safety
    /// Cancel safe: connections already being created still join their pools.
    pub fn warm_connection_pool(&self) -> crate::action::WarmConnectionPool<'_> {
        crate::action::WarmConnectionPool { client: self }
    }

    /// The work of [`Self::warm_connection_pool`].
    pub(crate) async fn warm_pools(&self) {
        if self.options().min_pool_size == 0 {
            return;
        }
        self.executor.topology().fill_pools().await;
    }

    /// Appends a wrapping library's name, version and platform to the metadata that *new*
    /// connections send in their handshake (existing connections keep theirs). Appending the
    /// same information twice has no further effect.
    ///
    /// # Errors
    /// `InvalidArgument` when a field contains the delimiter `|`.
    pub fn append_metadata(&self, info: DriverInfo) -> Result<()> {
        self.executor.append_metadata(info)
    }

    /// The client's default selection criteria (its read preference), if one was set.
    pub fn selection_criteria(&self) -> Option<&SelectionCriteria> {
        self.executor.selection_criteria()
    }

    /// The client's default read concern, if one was set.
    pub fn read_concern(&self) -> Option<&ReadConcern> {
        self.options().read_concern.as_ref()
    }

    /// The client's default write concern, if one was set.
    pub fn write_concern(&self) -> Option<&WriteConcern> {
        let concern = &self.options().write_concern;
        (!concern.is_empty()).then_some(concern)
    }

    /// The settings this client runs on: its [`ClientOptions`] with every default filled in.
    pub fn options(&self) -> &ResolvedClientOptions {
        self.executor.options()
    }

    /// Shuts the client down: ends the pooled server sessions with `endSessions` (best effort,
    /// errors ignored), stops the monitors, closes every pool (TopologyClosed is the last
    /// event), and returns once every task of the client has ended and every socket is
    /// closed. Operations started afterwards, on this handle's clones too, fail at once. The
    /// background `killCursors` of dropped cursors is among those tasks; it is bounded by
    /// timeoutMS (else by serverSelectionTimeoutMS, at most 10 s), so a server that never
    /// answers it cannot hold shutdown up.
    ///
    /// [`immediate(true)`](crate::action::Shutdown::immediate) skips the `endSessions` and
    /// does not wait for the client's own background tasks.
    ///
    /// # Cancel safety
    /// Cancel safe: the topology's shutdown is requested before the future first waits, and
    /// completes in the background if the future is dropped.
    pub fn shutdown(self) -> crate::action::Shutdown {
        crate::action::Shutdown {
            client: self,
            immediate: false,
        }
    }

    /// The client's background work, for proving that none outlives it: tasks of the topology
    /// (worker, monitors, RTT tasks, pools) and of the client itself.
    #[doc(hidden)]
    pub fn background_tasks(&self) -> BackgroundTasks {
        BackgroundTasks {
            trackers: self.executor.task_trackers(),
        }
    }

    /// A handle to `executor` (a session's or a cursor's).
    pub(crate) fn from_executor(executor: Arc<Executor>) -> Client {
        Client { executor }
    }

    /// The executor that runs this client's operations.
    pub(crate) fn executor(&self) -> &Arc<Executor> {
        &self.executor
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

    /// Waits until none of the client's own tasks is alive: the background work of closed
    /// cursors (`killCursors`, then the check-in of a load-balanced cursor's connection) and
    /// of ended sessions (abortTransaction). The topology's tasks are not waited for: they
    /// live as long as the client.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn wait_until_client_tasks_idle(&self) {
        let [_, client] = &self.trackers;
        client.wait_until_idle().await;
    }
}

/// Parses `uri`, resolving `mongodb+srv://` through the name servers of `resolver_config`,
/// or the system's resolver without one.
pub(crate) async fn options_from_uri(
    uri: &str,
    #[cfg(feature = "dns-resolver")] resolver_config: Option<&ResolverConfig>,
) -> Result<ResolvedClientOptions> {
    let (options, warnings) = match ResolvedClientOptions::parse(uri) {
        Ok(ParsedUri::Complete { options, warnings }) => (options, warnings),
        #[cfg(feature = "dns-resolver")]
        Ok(ParsedUri::NeedsSrv(connection_string)) => {
            let resolver = HickoryResolver::for_client(resolver_config)?;
            let resolution = srv::resolve(&connection_string, &resolver).await?;
            (resolution.options, resolution.warnings)
        }
        #[cfg(not(feature = "dns-resolver"))]
        Ok(ParsedUri::NeedsSrv(_)) => {
            return Err(Error::invalid_argument(crate::features::missing(
                "a mongodb+srv:// connection string",
                "dns-resolver",
            )));
        }
        Err(e) => {
            return Err(
                Error::invalid_argument(format!("invalid connection string: {e}")).with_source(e),
            );
        }
    };
    for warning in warnings {
        tracing::warn!(%warning, "connection string option ignored");
    }
    Ok(options)
}

/// The client's OpenTelemetry tracer, as its `tracing` options and the environment ask.
#[cfg(feature = "opentelemetry")]
fn tracer(options: &ClientOptions) -> crate::otel::Tracer {
    crate::otel::Tracer::new(options.tracing.as_ref())
}

/// No tracer without the `opentelemetry` feature.
#[cfg(not(feature = "opentelemetry"))]
fn tracer(_options: &ClientOptions) -> crate::otel::Tracer {
    crate::otel::Tracer::new()
}
