//! [`ClientOptions`]: a client's settings as an application writes them, shaped as the official
//! driver's (field names, `Option`s meaning "the default", a `builder()`), plus steadfast's own
//! settings (retry policy, retry budget, event listeners).
//!
//! The client itself runs on the *resolved* settings, [`ResolvedClientOptions`], in which every
//! default is filled in and the specifications' combination rules have been checked;
//! [`ClientOptions::resolve`] is the one conversion from the first to the second, and
//! [`ClientOptions::parse`](crate::action::ParseConnectionString) goes the other way once a connection string has been parsed.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use steadfast_core::ServerAddress;
use steadfast_core::options::srv::SrvHost;
use steadfast_core::options::{
    ClientOptions as ResolvedClientOptions, Compressor as CompressorName, Credential, ReadConcern,
    ServerMonitoringMode, WriteConcern,
};
use steadfast_core::retry::{RetryBudgetConfig, RetryPolicy};
use steadfast_core::selection::{ReadPreference, SelectionCriteria};

pub use super::options_builder::ClientOptionsBuilder;
#[cfg(feature = "dns-resolver")]
use super::resolver_config::ResolverConfig;
use super::tls::Tls;
use crate::conn::config::{ServerApi, wire_compressors};
use crate::event::{EventHandler, EventHandlers, EventListener, cmap, command, sdam};
use crate::handshake::metadata::DriverInfo;
pub use steadfast_core::options::Socks5Proxy;
pub use steadfast_wire::Compressor;

/// Every setting of a client. Read one from a connection string with
/// [`ClientOptions::parse`], or build one with [`ClientOptions::builder`]; then pass it to
/// [`Client::with_options`](crate::Client::with_options).
///
/// A field left at `None` takes the default the MongoDB specifications give it (named in each
/// field's documentation). [`Client::with_options`](crate::Client::with_options) checks the
/// combination rules (for example `directConnection` with several hosts).
///
/// ```no_run
/// # async fn demo() -> steadfast::Result<()> {
/// use std::time::Duration;
/// use steadfast::{Client, options::ClientOptions};
///
/// let mut options = ClientOptions::parse("mongodb://127.0.0.1:27017/?replicaSet=rs0").await?;
/// options.app_name = Some("inventory".to_string());
/// options.server_selection_timeout = Some(Duration::from_secs(5));
/// let client = Client::with_options(options)?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct ClientOptions {
    /// The seed list (for `mongodb+srv://`, the hosts resolved from DNS). Empty means
    /// `localhost:27017`.
    pub hosts: Vec<ServerAddress>,
    /// `appname`: sent in the handshake, at most 128 bytes.
    pub app_name: Option<String>,
    /// Compressors offered to the server, most preferred first, each with its level.
    /// Default none.
    pub compressors: Option<Vec<Compressor>>,
    /// Receives connection pool events.
    pub cmap_event_handler: Option<EventHandler<cmap::CmapEvent>>,
    /// Receives command events.
    pub command_event_handler: Option<EventHandler<command::CommandEvent>>,
    /// `connectTimeoutMS`. Default 10 s; `Some(Duration::ZERO)` means no limit.
    pub connect_timeout: Option<Duration>,
    /// Credentials, when authentication is configured.
    pub credential: Option<Credential>,
    /// `directConnection`; `None` lets the seed list decide.
    pub direct_connection: Option<bool>,
    /// A wrapping library's name, version and platform, appended to the handshake metadata.
    pub driver_info: Option<DriverInfo>,
    /// `heartbeatFrequencyMS`, at least 500 ms. Default 10 s.
    pub heartbeat_freq: Option<Duration>,
    /// `loadBalanced`. Default false.
    pub load_balanced: Option<bool>,
    /// `localThresholdMS`: the latency window of server selection. Default 15 ms.
    pub local_threshold: Option<Duration>,
    /// `maxIdleTimeMS`. Default (and `Some(Duration::ZERO)`): idle connections are kept.
    pub max_idle_time: Option<Duration>,
    /// `maxPoolSize`, per server; `Some(0)` means no limit. Default 100.
    pub max_pool_size: Option<u32>,
    /// `minPoolSize`, per server. Default 0.
    pub min_pool_size: Option<u32>,
    /// `maxConnecting`: connections a pool establishes at once, at least 1. Default 2.
    pub max_connecting: Option<u32>,
    /// The default read concern. Default: the server's.
    pub read_concern: Option<ReadConcern>,
    /// `replicaSet`: the replica set's name.
    pub repl_set_name: Option<String>,
    /// `retryReads`. Default true.
    pub retry_reads: Option<bool>,
    /// `retryWrites`. Default true.
    pub retry_writes: Option<bool>,
    /// `serverMonitoringMode`. Default auto.
    pub server_monitoring_mode: Option<ServerMonitoringMode>,
    /// Receives topology events.
    pub sdam_event_handler: Option<EventHandler<sdam::SdamEvent>>,
    /// Which servers reads go to by default. Default: the primary. A read preference only:
    /// a [`Predicate`](crate::options::Predicate) is accepted per operation, not here.
    pub selection_criteria: Option<SelectionCriteria>,
    /// A Stable API version declared on every command.
    pub server_api: Option<ServerApi>,
    /// `serverSelectionTimeoutMS`. Default 30 s.
    pub server_selection_timeout: Option<Duration>,
    /// The database named in the connection string's path.
    pub default_database: Option<String>,
    /// `srvServiceName` (`mongodb+srv://` only). Default `mongodb`.
    pub srv_service_name: Option<String>,
    /// TLS settings. Default: no TLS (a parsed `mongodb+srv://` string turns it on).
    pub tls: Option<Tls>,
    /// The SOCKS5 proxy every connection goes through (`proxyHost`, `proxyPort`,
    /// `proxyUsername`, `proxyPassword`): application and monitoring connections alike. Needs
    /// the `socks5-proxy` cargo feature; without it a client with a proxy is refused.
    pub socks5_proxy: Option<Socks5Proxy>,
    /// The default write concern. Default: the server's.
    pub write_concern: Option<WriteConcern>,
    /// `srvMaxHosts` (`mongodb+srv://` only); `None` or 0 means all.
    pub srv_max_hosts: Option<u32>,
    /// `maxAdaptiveRetries`: retries of overload errors. Default 2.
    pub max_adaptive_retries: Option<u32>,
    /// `enableOverloadRetargeting`. Default false.
    pub enable_overload_retargeting: Option<bool>,
    /// The name servers to ask for SRV and TXT records (connection string resolution and SRV
    /// polling) and for the servers' addresses. Default: the operating system's resolver.
    /// With the `dns-resolver` feature only.
    #[cfg(feature = "dns-resolver")]
    pub resolver_config: Option<ResolverConfig>,

    // steadfast's own settings.
    /// `timeoutMS`: `None` leaves it unset (the older per-step timeouts apply);
    /// `Some(Duration::ZERO)` means no limit; any other value bounds each operation.
    pub timeout: Option<Duration>,
    /// `socketTimeoutMS` (superseded by `timeout`). Default (and `Some(Duration::ZERO)`): no
    /// limit.
    pub socket_timeout: Option<Duration>,
    /// `waitQueueTimeoutMS` (superseded by `timeout`). Default: no separate limit.
    pub wait_queue_timeout: Option<Duration>,
    /// The retry policy of every operation that sets none (nor inherits one from its database
    /// or collection). Default [`SpecPolicy`](crate::retries::SpecPolicy): exactly what the
    /// specifications require. No policy can make the driver retry what is unsafe.
    pub retry_policy: Option<Arc<dyn RetryPolicy>>,
    /// A retry budget shared by every operation of the client, so that retries beyond the
    /// specifications and overload retries add at most this share of the traffic. Default off.
    pub retry_budget: Option<RetryBudgetConfig>,
    /// Listeners of steadfast's own events (including retries), called in order.
    pub event_listeners: Vec<Arc<dyn EventListener>>,
    /// The longest a document (command, reply) may be in a log message, in bytes of relaxed
    /// Extended JSON; longer ones are cut at a character boundary and end with `...`.
    /// Default: the `MONGODB_LOG_MAX_DOCUMENT_LENGTH` environment variable, else 1000. See
    /// [`logging`](crate::logging).
    pub tracing_max_document_length_bytes: Option<usize>,
    /// OpenTelemetry spans for the client's operations and commands (feature
    /// `opentelemetry`). Default: the environment variables the [`otel`](crate::otel) module
    /// names, else off.
    #[cfg(feature = "opentelemetry")]
    pub tracing: Option<crate::otel::OpentelemetryOptions>,

    /// The SRV name a `mongodb+srv://` string was resolved from (kept to poll it again).
    srv_host: Option<SrvHost>,
    /// The connection string's (or its TXT record's) authSource: the source of a credential
    /// set in code without one ([`ResolvedClientOptions::auth_source`]).
    auth_source: Option<String>,
}

impl fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The resolved view shows every setting (with secrets redacted); the rest are handlers.
        let mut debug = f.debug_struct("ClientOptions");
        debug
            .field("settings", &self.resolve())
            .field("server_api", &self.server_api);
        #[cfg(feature = "dns-resolver")]
        debug.field("resolver_config", &self.resolver_config);
        debug
            .field("driver_info", &self.driver_info)
            .field("command_event_handler", &self.command_event_handler)
            .field("sdam_event_handler", &self.sdam_event_handler)
            .field("cmap_event_handler", &self.cmap_event_handler)
            .field("retry_policy", &self.retry_policy)
            .field("retry_budget", &self.retry_budget)
            .field("event_listeners", &self.event_listeners.len())
            .field(
                "tracing_max_document_length_bytes",
                &self.tracing_max_document_length_bytes,
            );
        #[cfg(feature = "opentelemetry")]
        debug.field("tracing", &self.tracing);
        debug.finish()
    }
}

impl ClientOptions {
    /// A builder, starting from the defaults.
    pub fn builder() -> ClientOptionsBuilder {
        ClientOptionsBuilder::default()
    }

    /// These options with every default filled in, as the client runs on them. The
    /// combination rules are not checked here: see [`ResolvedClientOptions::validate`].
    pub fn resolve(&self) -> ResolvedClientOptions {
        let mut resolved = ResolvedClientOptions::default();
        if !self.hosts.is_empty() {
            resolved.hosts.clone_from(&self.hosts);
        }
        resolved.srv_host.clone_from(&self.srv_host);
        resolved.srv_max_hosts = self.srv_max_hosts;
        resolved.srv_service_name.clone_from(&self.srv_service_name);
        resolved.auth_source.clone_from(&self.auth_source);
        // A source given in code wins over the connection string's (and its TXT record's).
        resolved.credential = self.credential.clone().map(|mut credential| {
            if credential.source.is_none() {
                credential.source.clone_from(&self.auth_source);
            }
            credential
        });
        resolved.default_database.clone_from(&self.default_database);
        resolved.app_name.clone_from(&self.app_name);
        // Unset means off; a parsed mongodb+srv:// string always sets it (on, unless tls=false).
        resolved.proxy.clone_from(&self.socks5_proxy);
        resolved.tls = match &self.tls {
            Some(tls) => tls.resolve(),
            None => Tls::Disabled.resolve(),
        };
        self.resolve_compressors(&mut resolved);
        self.resolve_durations(&mut resolved);
        self.resolve_pool_sizes(&mut resolved);
        resolved.direct_connection = self.direct_connection;
        resolved.replica_set.clone_from(&self.repl_set_name);
        resolved.load_balanced = self.load_balanced.unwrap_or(false);
        resolved.read_preference = match &self.selection_criteria {
            Some(SelectionCriteria::ReadPreference(preference)) => preference.clone(),
            // Writes go to the primary: as a default for reads, that is mode primary. A
            // predicate cannot be a client's default: `Client::with_options` refuses it.
            _ => ReadPreference::primary(),
        };
        resolved.write_concern = self.write_concern.clone().unwrap_or_default();
        resolved.read_concern.clone_from(&self.read_concern);
        resolved.retry_reads = self.retry_reads.unwrap_or(true);
        resolved.retry_writes = self.retry_writes.unwrap_or(true);
        resolved.server_monitoring_mode = self.server_monitoring_mode.unwrap_or_default();
        resolved.max_adaptive_retries = self
            .max_adaptive_retries
            .unwrap_or(resolved.max_adaptive_retries);
        resolved.enable_overload_retargeting = self.enable_overload_retargeting.unwrap_or(false);
        resolved
    }

    /// The compressors' names, and their levels where the connection string keeps them.
    fn resolve_compressors(&self, resolved: &mut ResolvedClientOptions) {
        let compressors = self.compressors.as_deref().unwrap_or_default();
        resolved.compressors = compressors
            .iter()
            .filter_map(|c| CompressorName::parse(c.name()))
            .collect();
        for compressor in compressors {
            match *compressor {
                Compressor::Zlib { level } => resolved.zlib_compression_level = level,
                Compressor::Zstd { level } => resolved.zstd_compression_level = level,
                Compressor::Snappy => {}
            }
        }
    }

    /// The pool sizes; `None` keeps the default.
    fn resolve_pool_sizes(&self, resolved: &mut ResolvedClientOptions) {
        if let Some(max) = self.max_pool_size {
            resolved.max_pool_size = max;
        }
        if let Some(min) = self.min_pool_size {
            resolved.min_pool_size = min;
        }
        if let Some(connecting) = self.max_connecting {
            resolved.max_connecting = connecting;
        }
    }

    /// The durations, where "no limit" is spelt `Some(Duration::ZERO)` here and `None` there.
    fn resolve_durations(&self, resolved: &mut ResolvedClientOptions) {
        let zero_is_unlimited = |value: Option<Duration>| value.filter(|t| !t.is_zero());
        if let Some(connect) = self.connect_timeout {
            resolved.connect_timeout = zero_is_unlimited(Some(connect));
        }
        resolved.socket_timeout = zero_is_unlimited(self.socket_timeout);
        resolved.max_idle_time = zero_is_unlimited(self.max_idle_time);
        resolved.wait_queue_timeout = self.wait_queue_timeout;
        resolved.timeout = self.timeout;
        if let Some(selection) = self.server_selection_timeout {
            resolved.server_selection_timeout = selection;
        }
        if let Some(heartbeat) = self.heartbeat_freq {
            resolved.heartbeat_frequency = heartbeat;
        }
        if let Some(threshold) = self.local_threshold {
            resolved.local_threshold = threshold;
        }
    }

    /// The options a parsed connection string stands for: every setting it could carry is
    /// `Some`, except those the string leaves to the server (concerns, read preference
    /// primary) and `directConnection`, `replicaSet` and the SRV limits when absent.
    pub(crate) fn from_resolved(resolved: ResolvedClientOptions) -> ClientOptions {
        let compressors = wire_compressors(&resolved);
        let read_preference = resolved.read_preference;
        ClientOptions {
            hosts: resolved.hosts,
            app_name: resolved.app_name,
            compressors: Some(compressors),
            connect_timeout: Some(resolved.connect_timeout.unwrap_or(Duration::ZERO)),
            credential: resolved.credential,
            direct_connection: resolved.direct_connection,
            heartbeat_freq: Some(resolved.heartbeat_frequency),
            load_balanced: Some(resolved.load_balanced),
            local_threshold: Some(resolved.local_threshold),
            max_idle_time: resolved.max_idle_time,
            max_pool_size: Some(resolved.max_pool_size),
            min_pool_size: Some(resolved.min_pool_size),
            max_connecting: Some(resolved.max_connecting),
            read_concern: resolved.read_concern,
            repl_set_name: resolved.replica_set,
            retry_reads: Some(resolved.retry_reads),
            retry_writes: Some(resolved.retry_writes),
            server_monitoring_mode: Some(resolved.server_monitoring_mode),
            selection_criteria: (read_preference != ReadPreference::primary())
                .then_some(SelectionCriteria::ReadPreference(read_preference)),
            server_selection_timeout: Some(resolved.server_selection_timeout),
            default_database: resolved.default_database,
            srv_service_name: resolved.srv_service_name,
            tls: Some(Tls::from_resolved(&resolved.tls)),
            socks5_proxy: resolved.proxy,
            write_concern: (!resolved.write_concern.is_empty()).then_some(resolved.write_concern),
            srv_max_hosts: resolved.srv_max_hosts,
            max_adaptive_retries: Some(resolved.max_adaptive_retries),
            enable_overload_retargeting: Some(resolved.enable_overload_retargeting),
            timeout: resolved.timeout,
            socket_timeout: resolved.socket_timeout,
            wait_queue_timeout: resolved.wait_queue_timeout,
            srv_host: resolved.srv_host,
            auth_source: resolved.auth_source,
            ..ClientOptions::default()
        }
    }

    /// The three event handlers, taken out for the client's event emitter.
    pub(crate) fn event_handlers(&self) -> EventHandlers {
        EventHandlers {
            command: self.command_event_handler.clone(),
            sdam: self.sdam_event_handler.clone(),
            cmap: self.cmap_event_handler.clone(),
        }
    }
}

impl From<ResolvedClientOptions> for ClientOptions {
    fn from(resolved: ResolvedClientOptions) -> Self {
        ClientOptions::from_resolved(resolved)
    }
}

/// Whether two optional shared objects are the same object (or both absent): policies,
/// listeners and tracer providers are code, compared by identity.
fn same_arc<T: ?Sized>(a: Option<&Arc<T>>, b: Option<&Arc<T>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

impl PartialEq for ClientOptions {
    /// Compares every setting. The event handlers are not compared (as in the official
    /// driver); the retry policy, the event listeners and the OpenTelemetry tracer provider
    /// compare equal only when they are the same objects.
    fn eq(&self, other: &Self) -> bool {
        let listeners_eq = self.event_listeners.len() == other.event_listeners.len()
            && self
                .event_listeners
                .iter()
                .zip(&other.event_listeners)
                .all(|(a, b)| Arc::ptr_eq(a, b));
        #[cfg(feature = "dns-resolver")]
        let resolver_eq = self.resolver_config == other.resolver_config;
        #[cfg(not(feature = "dns-resolver"))]
        let resolver_eq = true;
        #[cfg(feature = "opentelemetry")]
        let tracing_eq = match (&self.tracing, &other.tracing) {
            (Some(a), Some(b)) => {
                a.enabled == b.enabled
                    && a.query_text_max_length == b.query_text_max_length
                    && same_arc(a.tracer_provider.as_ref(), b.tracer_provider.as_ref())
            }
            (None, None) => true,
            _ => false,
        };
        #[cfg(not(feature = "opentelemetry"))]
        let tracing_eq = true;
        self.settings_eq(other)
            && listeners_eq
            && resolver_eq
            && tracing_eq
            && same_arc(self.retry_policy.as_ref(), other.retry_policy.as_ref())
    }
}

impl ClientOptions {
    /// The plain data settings of [`PartialEq`] (everything but code and the feature-gated
    /// fields).
    fn settings_eq(&self, other: &Self) -> bool {
        self.hosts == other.hosts
            && self.app_name == other.app_name
            && self.compressors == other.compressors
            && self.connect_timeout == other.connect_timeout
            && self.credential == other.credential
            && self.direct_connection == other.direct_connection
            && self.driver_info == other.driver_info
            && self.heartbeat_freq == other.heartbeat_freq
            && self.load_balanced == other.load_balanced
            && self.local_threshold == other.local_threshold
            && self.max_idle_time == other.max_idle_time
            && self.max_pool_size == other.max_pool_size
            && self.min_pool_size == other.min_pool_size
            && self.max_connecting == other.max_connecting
            && self.read_concern == other.read_concern
            && self.repl_set_name == other.repl_set_name
            && self.retry_reads == other.retry_reads
            && self.retry_writes == other.retry_writes
            && self.server_monitoring_mode == other.server_monitoring_mode
            && self.selection_criteria == other.selection_criteria
            && self.server_api == other.server_api
            && self.server_selection_timeout == other.server_selection_timeout
            && self.default_database == other.default_database
            && self.srv_service_name == other.srv_service_name
            && self.tls == other.tls
            && self.socks5_proxy == other.socks5_proxy
            && self.write_concern == other.write_concern
            && self.srv_max_hosts == other.srv_max_hosts
            && self.max_adaptive_retries == other.max_adaptive_retries
            && self.enable_overload_retargeting == other.enable_overload_retargeting
            && self.timeout == other.timeout
            && self.socket_timeout == other.socket_timeout
            && self.wait_queue_timeout == other.wait_queue_timeout
            && self.retry_budget == other.retry_budget
            && self.tracing_max_document_length_bytes == other.tracing_max_document_length_bytes
            && self.srv_host == other.srv_host
            && self.auth_source == other.auth_source
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use steadfast_core::options::{ClientOptions as ResolvedClientOptions, ParsedUri};

    use super::ClientOptions;

    fn parsed(uri: &str) -> ResolvedClientOptions {
        match ResolvedClientOptions::parse(uri) {
            Ok(ParsedUri::Complete { options, .. }) => options,
            other => panic!("{uri}: {other:?}"),
        }
    }

    #[test]
    fn parsed_options_resolve_to_what_was_parsed() {
        let resolved = parsed(
            "mongodb://a:1,b/db?replicaSet=rs&appName=x&connectTimeoutMS=0&maxIdleTimeMS=5\
             &heartbeatFrequencyMS=700&maxPoolSize=0&minPoolSize=3&readPreference=nearest\
             &readPreferenceTags=dc:ny&maxStalenessSeconds=120&w=2&readConcernLevel=local\
             &retryReads=false&timeoutMS=40&tls=true&tlsAllowInvalidHostnames=true&compressors=zlib\
             &zlibCompressionLevel=4&socketTimeoutMS=9&waitQueueTimeoutMS=11",
        );
        let options = ClientOptions::from_resolved(resolved.clone());
        assert_eq!(options.connect_timeout, Some(Duration::ZERO));
        assert_eq!(options.max_pool_size, Some(0));
        assert_eq!(options.resolve(), resolved);

        // tlsInsecure comes back as the two switches it stands for.
        let insecure = parsed("mongodb://a/?tls=true&tlsInsecure=true");
        let tls = ClientOptions::from_resolved(insecure).resolve().tls;
        assert!(tls.accepts_invalid_certificates() && tls.accepts_invalid_hostnames());
        assert_eq!(tls.validate(), Ok(()));
    }

    #[test]
    fn zero_durations_mean_no_limit_and_none_means_the_default() {
        let defaults = ClientOptions::default().resolve();
        assert_eq!(defaults, ResolvedClientOptions::default());
        let options = ClientOptions {
            connect_timeout: Some(Duration::ZERO),
            max_idle_time: Some(Duration::ZERO),
            socket_timeout: Some(Duration::ZERO),
            ..ClientOptions::default()
        };
        let resolved = options.resolve();
        assert_eq!(resolved.connect_timeout, None);
        assert_eq!(resolved.max_idle_time, None);
        assert_eq!(resolved.socket_timeout, None);
        assert!(defaults.connect_timeout.is_some_and(|t| !t.is_zero()));
    }

    #[test]
    fn the_connection_strings_auth_source_is_the_source_of_a_credential_set_in_code() {
        let mut options = ClientOptions::from_resolved(parsed("mongodb://h/?authSource=fromuri"));
        assert_eq!(options.resolve().auth_source.as_deref(), Some("fromuri"));
        assert_eq!(options.resolve().credential, None);

        options.credential = Some(
            steadfast_core::options::Credential::builder()
                .username("u".to_string())
                .password("p".to_string())
                .build(),
        );
        let source = |options: &ClientOptions| options.resolve().credential.unwrap().source;
        assert_eq!(source(&options).as_deref(), Some("fromuri"));

        options.credential.as_mut().unwrap().source = Some("fromcode".to_string());
        assert_eq!(source(&options).as_deref(), Some("fromcode"));
    }
}
