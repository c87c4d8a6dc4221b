//! `ClientOptions`: every setting of a client, with the specifications' defaults and rules.

use std::fmt;
use std::time::Duration;

use super::OptionsError;
use super::auth::Credential;
use super::compression::{
    Compressor, MAX_ZLIB_LEVEL, MAX_ZSTD_LEVEL, MIN_ZLIB_LEVEL, MIN_ZSTD_LEVEL,
};
use super::concern::{ReadConcern, WriteConcern};
use super::srv::SrvHost;
use super::tls::Tls;
use super::uri::{ConnectionString, HostInfo, UserInfo};
use super::uri_options::UriOptions;
use crate::address::ServerAddress;
use crate::selection::read_preference::{ReadPreference, ReadPreferenceError};

/// Default `connectTimeoutMS`.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default `serverSelectionTimeoutMS`.
pub const DEFAULT_SERVER_SELECTION_TIMEOUT: Duration = Duration::from_secs(30);
/// Default `heartbeatFrequencyMS` for multi-threaded drivers.
pub const DEFAULT_HEARTBEAT_FREQUENCY: Duration = Duration::from_secs(10);
/// The smallest `heartbeatFrequencyMS` allowed (also the minimum gap between two checks).
pub const MIN_HEARTBEAT_FREQUENCY: Duration = Duration::from_millis(500);
/// Default `localThresholdMS`.
pub const DEFAULT_LOCAL_THRESHOLD: Duration = Duration::from_millis(15);
/// Default `maxPoolSize`.
pub const DEFAULT_MAX_POOL_SIZE: u32 = 100;
/// Default `maxConnecting`.
pub const DEFAULT_MAX_CONNECTING: u32 = 2;
/// Default `maxAdaptiveRetries` (client-backpressure.md).
pub const DEFAULT_MAX_ADAPTIVE_RETRIES: u32 = 2;
/// The longest application name the handshake accepts, in bytes.
pub const MAX_APP_NAME_BYTES: usize = 128;

/// Which monitoring protocol the client uses (server-monitoring.md).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "camelCase")]
pub enum ServerMonitoringMode {
    /// Polling on FaaS platforms, streaming elsewhere.
    #[default]
    Auto,
    /// Streaming when the server supports it.
    Stream,
    /// Always polling.
    Poll,
}

impl ServerMonitoringMode {
    /// The mode's name in connection strings.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerMonitoringMode::Auto => "auto",
            ServerMonitoringMode::Stream => "stream",
            ServerMonitoringMode::Poll => "poll",
        }
    }

    /// Parses a mode name (case-insensitively).
    pub fn parse(name: &str) -> Option<Self> {
        [
            ServerMonitoringMode::Auto,
            ServerMonitoringMode::Stream,
            ServerMonitoringMode::Poll,
        ]
        .into_iter()
        .find(|m| m.as_str().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for ServerMonitoringMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Every setting of a client. Build one with [`ClientOptions::parse`] or from
/// [`ClientOptions::default`] and field assignments, then call [`ClientOptions::validate`].
///
/// Durations that the specifications allow to be "no limit" are `Option<Duration>` with `None`
/// meaning no limit, except [`timeout`](Self::timeout) (see there). Secrets (passwords, the TLS
/// key password) never appear in the `Debug` output.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientOptions {
    /// The seed list. For `mongodb+srv://` it is the list resolved from DNS.
    pub hosts: Vec<ServerAddress>,
    /// The SRV host name, for `mongodb+srv://` clients (used again when polling SRV records).
    pub srv_host: Option<SrvHost>,
    /// `srvMaxHosts`: how many SRV targets to use at most; `None` or 0 means all.
    pub srv_max_hosts: Option<u32>,
    /// `srvServiceName`; `None` means `mongodb`.
    pub srv_service_name: Option<String>,
    /// Credentials, when authentication is configured.
    pub credential: Option<Credential>,
    /// `authSource` as the connection string (or the TXT record of a `mongodb+srv://` one)
    /// gave it. With a credential it is that credential's source; without one it has no effect
    /// (an authSource alone never asks for authentication), and is kept so that a credential
    /// supplied later in code without a source of its own uses it.
    pub auth_source: Option<String>,
    /// The database named in the connection string's path.
    pub default_database: Option<String>,
    /// `appname`: sent in the handshake, at most 128 bytes.
    pub app_name: Option<String>,
    /// TLS settings.
    pub tls: Tls,
    /// The SOCKS5 proxy every connection goes through (`proxyHost` and friends).
    pub proxy: Option<super::Socks5Proxy>,
    /// Compressors offered to the server, most preferred first.
    pub compressors: Vec<Compressor>,
    /// `zlibCompressionLevel` from -1 (library default) to 9; `None` means -1.
    pub zlib_compression_level: Option<i32>,
    /// The zstd level (no connection string option: set in code); `None` means zstd's
    /// default.
    pub zstd_compression_level: Option<i32>,
    /// `connectTimeoutMS`; `None` means no limit. Default 10 s.
    pub connect_timeout: Option<Duration>,
    /// `socketTimeoutMS` (deprecated for timeoutMS); `None` means no limit (the default).
    pub socket_timeout: Option<Duration>,
    /// `serverSelectionTimeoutMS`. Default 30 s.
    pub server_selection_timeout: Duration,
    /// `heartbeatFrequencyMS`, at least 500 ms. Default 10 s.
    pub heartbeat_frequency: Duration,
    /// `localThresholdMS`: the latency window. Default 15 ms.
    pub local_threshold: Duration,
    /// `maxPoolSize`; 0 means unlimited. Default 100.
    pub max_pool_size: u32,
    /// `minPoolSize`. Default 0.
    pub min_pool_size: u32,
    /// `maxConnecting`: connections a pool may establish at once, at least 1. Default 2.
    pub max_connecting: u32,
    /// `maxIdleTimeMS`; `None` means connections never expire for idleness (the default).
    pub max_idle_time: Option<Duration>,
    /// `waitQueueTimeoutMS` (deprecated for timeoutMS); `None` means no separate limit.
    pub wait_queue_timeout: Option<Duration>,
    /// `directConnection`; `None` lets the seed list decide (one seed without a replica set
    /// name is still discovered, not assumed single).
    pub direct_connection: Option<bool>,
    /// `replicaSet`.
    pub replica_set: Option<String>,
    /// `loadBalanced`.
    pub load_balanced: bool,
    /// The default read preference.
    pub read_preference: ReadPreference,
    /// The default write concern (empty: the server's default).
    pub write_concern: WriteConcern,
    /// The default read concern (`None`: the server's default).
    pub read_concern: Option<ReadConcern>,
    /// `retryReads`. Default true.
    pub retry_reads: bool,
    /// `retryWrites`. Default true.
    pub retry_writes: bool,
    /// `timeoutMS`: `None` means unset (the deprecated per-step timeouts apply);
    /// `Some(Duration::ZERO)` means explicitly no limit; any other value bounds each operation.
    pub timeout: Option<Duration>,
    /// `serverMonitoringMode`. Default auto.
    pub server_monitoring_mode: ServerMonitoringMode,
    /// `maxAdaptiveRetries`: retries of overload errors. Default 2.
    pub max_adaptive_retries: u32,
    /// `enableOverloadRetargeting`. Default false.
    pub enable_overload_retargeting: bool,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            hosts: vec![ServerAddress::tcp(
                "localhost",
                crate::address::DEFAULT_PORT,
            )],
            srv_host: None,
            srv_max_hosts: None,
            srv_service_name: None,
            credential: None,
            auth_source: None,
            default_database: None,
            app_name: None,
            tls: Tls::default(),
            proxy: None,
            compressors: Vec::new(),
            zlib_compression_level: None,
            zstd_compression_level: None,
            connect_timeout: Some(DEFAULT_CONNECT_TIMEOUT),
            socket_timeout: None,
            server_selection_timeout: DEFAULT_SERVER_SELECTION_TIMEOUT,
            heartbeat_frequency: DEFAULT_HEARTBEAT_FREQUENCY,
            local_threshold: DEFAULT_LOCAL_THRESHOLD,
            max_pool_size: DEFAULT_MAX_POOL_SIZE,
            min_pool_size: 0,
            max_connecting: DEFAULT_MAX_CONNECTING,
            max_idle_time: None,
            wait_queue_timeout: None,
            direct_connection: None,
            replica_set: None,
            load_balanced: false,
            read_preference: ReadPreference::default(),
            write_concern: WriteConcern::default(),
            read_concern: None,
            retry_reads: true,
            retry_writes: true,
            timeout: None,
            server_monitoring_mode: ServerMonitoringMode::Auto,
            max_adaptive_retries: DEFAULT_MAX_ADAPTIVE_RETRIES,
            enable_overload_retargeting: false,
        }
    }
}

/// What [`ClientOptions::parse`] produced.
#[derive(Clone, Debug)]
pub enum ParsedUri {
    /// A `mongodb://` string: the options are complete.
    Complete {
        /// The validated options.
        options: ClientOptions,
        /// What was ignored, for the caller to log.
        warnings: Vec<String>,
    },
    /// A `mongodb+srv://` string: resolve its SRV and TXT records, then call
    /// [`ConnectionString::resolve_srv`].
    NeedsSrv(ConnectionString),
}

impl ClientOptions {
    /// Parses a connection string into options.
    ///
    /// # Errors
    /// Any [`OptionsError`] from [`ConnectionString::parse`] or from the validation rules.
    pub fn parse(uri: &str) -> Result<ParsedUri, OptionsError> {
        let parsed = ConnectionString::parse(uri)?;
        match parsed.host_info {
            HostInfo::Srv(_) => Ok(ParsedUri::NeedsSrv(parsed)),
            HostInfo::Seeds(ref seeds) => {
                let options = ClientOptions::from_parts(
                    seeds.clone(),
                    None,
                    parsed.user_info.as_ref(),
                    parsed.default_database.as_deref(),
                    &parsed.options,
                )?;
                options.validate()?;
                Ok(ParsedUri::Complete {
                    options,
                    warnings: parsed.warnings,
                })
            }
        }
    }

    /// Builds options from the pieces of a connection string, applying the defaults. Does not
    /// run the combination rules: see [`ClientOptions::validate`].
    pub(crate) fn from_parts(
        hosts: Vec<ServerAddress>,
        srv_host: Option<SrvHost>,
        user_info: Option<&UserInfo>,
        database: Option<&str>,
        uri: &UriOptions,
    ) -> Result<Self, OptionsError> {
        let defaults = ClientOptions::default();
        let tls = uri.tls.to_tls(srv_host.is_some())?;
        let read_preference = ReadPreference::from_parts(
            uri.read_preference.unwrap_or_default(),
            uri.read_preference_tags.clone().unwrap_or_default(),
            uri.max_staleness,
        )
        .map_err(read_preference_error)?;
        let write_concern = WriteConcern {
            w: uri.w.clone(),
            w_timeout: uri.w_timeout,
            journal: uri.journal,
        };
        Ok(ClientOptions {
            hosts,
            srv_host,
            srv_max_hosts: uri.srv_max_hosts,
            srv_service_name: uri.srv_service_name.clone(),
            credential: build_credential(user_info, database, uri),
            auth_source: uri.auth_source.clone(),
            default_database: database.map(str::to_string),
            app_name: uri.app_name.clone(),
            tls,
            proxy: super::Socks5Proxy::from_uri(&uri.proxy)?,
            compressors: uri.compressors.clone().unwrap_or_default(),
            zlib_compression_level: uri.zlib_compression_level,
            zstd_compression_level: None,
            // For these options the specification spells "no limit" as zero.
            connect_timeout: match uri.connect_timeout {
                Some(Duration::ZERO) => None,
                Some(t) => Some(t),
                None => defaults.connect_timeout,
            },
            socket_timeout: uri.socket_timeout.filter(|t| !t.is_zero()),
            max_idle_time: uri.max_idle_time.filter(|t| !t.is_zero()),
            server_selection_timeout: uri
                .server_selection_timeout
                .unwrap_or(defaults.server_selection_timeout),
            heartbeat_frequency: uri
                .heartbeat_frequency
                .unwrap_or(defaults.heartbeat_frequency),
            local_threshold: uri.local_threshold.unwrap_or(defaults.local_threshold),
            max_pool_size: uri.max_pool_size.unwrap_or(defaults.max_pool_size),
            min_pool_size: uri.min_pool_size.unwrap_or(defaults.min_pool_size),
            max_connecting: uri.max_connecting.unwrap_or(defaults.max_connecting),
            wait_queue_timeout: uri.wait_queue_timeout,
            direct_connection: uri.direct_connection,
            replica_set: uri.replica_set.clone(),
            load_balanced: uri.load_balanced.unwrap_or(false),
            read_preference,
            write_concern,
            read_concern: uri.read_concern_level.clone().map(ReadConcern::new),
            retry_reads: uri.retry_reads.unwrap_or(true),
            retry_writes: uri.retry_writes.unwrap_or(true),
            timeout: uri.timeout,
            server_monitoring_mode: uri.server_monitoring_mode.unwrap_or_default(),
            max_adaptive_retries: uri
                .max_adaptive_retries
                .unwrap_or(defaults.max_adaptive_retries),
            enable_overload_retargeting: uri.enable_overload_retargeting.unwrap_or(false),
        })
    }

    /// Checks every combination rule of the specifications on complete options.
    ///
    /// # Errors
    /// [`OptionsError`] naming the options at fault: no hosts; `directConnection=true` with
    /// several hosts or SRV; `loadBalanced=true` with several hosts, `replicaSet`,
    /// `directConnection=true` or a positive `srvMaxHosts`; SRV options without SRV; a positive
    /// `srvMaxHosts` with `replicaSet`; out-of-range pool, heartbeat, timeout and compression
    /// settings; an invalid write concern, TLS combination or credential.
    pub fn validate(&self) -> Result<(), OptionsError> {
        if self.hosts.is_empty() {
            return Err(match &self.srv_host {
                Some(srv) => OptionsError::SrvNotResolved(srv.hostname().to_string()),
                None => OptionsError::MissingHost,
            });
        }
        if self.load_balanced && self.hosts.len() > 1 {
            return Err(OptionsError::invalid_option(
                "loadBalanced",
                "a load-balanced client takes exactly one host",
            ));
        }
        if self.direct_connection == Some(true) && self.hosts.len() > 1 {
            return Err(OptionsError::invalid_option(
                "directConnection",
                "directConnection=true takes exactly one host",
            ));
        }
        self.validate_without_hosts()
    }

    /// The rules that do not depend on the resolved host list; run on `mongodb+srv://` strings
    /// before DNS, since TXT records can only add options the string did not set.
    pub(crate) fn validate_without_hosts(&self) -> Result<(), OptionsError> {
        self.validate_topology_options()?;
        self.validate_limits()?;
        self.write_concern.validate()?;
        self.tls.validate()?;
        if let Some(credential) = &self.credential {
            credential.validate()?;
        }
        Ok(())
    }

    fn validate_topology_options(&self) -> Result<(), OptionsError> {
        let srv_max_hosts = self.srv_max_hosts.unwrap_or(0);
        if self.srv_host.is_none() {
            if self.srv_max_hosts.is_some() {
                return Err(srv_only("srvMaxHosts"));
            }
            if self.srv_service_name.is_some() {
                return Err(srv_only("srvServiceName"));
            }
        }
        if self.srv_host.is_some() && self.direct_connection == Some(true) {
            return Err(OptionsError::Conflict {
                first: "directConnection",
                second: "mongodb+srv",
                reason: "an SRV record may resolve to several hosts",
            });
        }
        if self.load_balanced {
            let conflict = |second, reason| OptionsError::Conflict {
                first: "loadBalanced",
                second,
                reason,
            };
            if self.replica_set.is_some() {
                return Err(conflict(
                    "replicaSet",
                    "a load balancer hides the replica set",
                ));
            }
            if self.direct_connection == Some(true) {
                return Err(conflict(
                    "directConnection",
                    "a load balancer is not a direct connection",
                ));
            }
            if srv_max_hosts > 0 {
                return Err(conflict(
                    "srvMaxHosts",
                    "a load-balanced client uses one host",
                ));
            }
        }
        if srv_max_hosts > 0 && self.replica_set.is_some() {
            return Err(OptionsError::Conflict {
                first: "srvMaxHosts",
                second: "replicaSet",
                reason: "a replica set must see all its members",
            });
        }
        Ok(())
    }

    fn validate_limits(&self) -> Result<(), OptionsError> {
        if self.heartbeat_frequency < MIN_HEARTBEAT_FREQUENCY {
            return Err(OptionsError::invalid_option(
                "heartbeatFrequencyMS",
                format!(
                    "must be at least {} ms",
                    MIN_HEARTBEAT_FREQUENCY.as_millis()
                ),
            ));
        }
        if self.max_pool_size > 0 && self.min_pool_size > self.max_pool_size {
            return Err(OptionsError::invalid_option(
                "minPoolSize",
                format!(
                    "{} is larger than maxPoolSize {}",
                    self.min_pool_size, self.max_pool_size
                ),
            ));
        }
        if self.max_connecting == 0 {
            return Err(OptionsError::invalid_option(
                "maxConnecting",
                "must be at least 1",
            ));
        }
        if self.server_selection_timeout.is_zero() {
            return Err(OptionsError::invalid_option(
                "serverSelectionTimeoutMS",
                "must be positive",
            ));
        }
        if self.wait_queue_timeout.is_some_and(|t| t.is_zero()) {
            return Err(OptionsError::invalid_option(
                "waitQueueTimeoutMS",
                "must be positive",
            ));
        }
        if let Some(level) = self.zlib_compression_level
            && !(MIN_ZLIB_LEVEL..=MAX_ZLIB_LEVEL).contains(&level)
        {
            return Err(OptionsError::invalid_option(
                "zlibCompressionLevel",
                format!("must be from -1 to 9, got {level}"),
            ));
        }
        if let Some(level) = self.zstd_compression_level
            && !(MIN_ZSTD_LEVEL..=MAX_ZSTD_LEVEL).contains(&level)
        {
            return Err(OptionsError::invalid_option(
                "zstd compression level",
                format!("must be from {MIN_ZSTD_LEVEL} to {MAX_ZSTD_LEVEL}, got {level}"),
            ));
        }
        if let Some(name) = &self.app_name
            && name.len() > MAX_APP_NAME_BYTES
        {
            return Err(OptionsError::invalid_option(
                "appname",
                format!(
                    "is {} bytes long; at most {MAX_APP_NAME_BYTES} are allowed",
                    name.len()
                ),
            ));
        }
        Ok(())
    }

    /// The SRV service name in effect (`mongodb` unless `srvServiceName` says otherwise).
    pub fn effective_srv_service_name(&self) -> &str {
        self.srv_service_name
            .as_deref()
            .unwrap_or(super::srv::DEFAULT_SRV_SERVICE_NAME)
    }
}

fn srv_only(option: &'static str) -> OptionsError {
    OptionsError::Conflict {
        first: option,
        second: "mongodb://",
        reason: "this option is only valid with the mongodb+srv:// scheme",
    }
}

fn read_preference_error(error: ReadPreferenceError) -> OptionsError {
    let option = match error {
        ReadPreferenceError::PrimaryWithTags => "readPreferenceTags",
        ReadPreferenceError::PrimaryWithMaxStaleness
        | ReadPreferenceError::MaxStalenessTooSmall { .. } => "maxStalenessSeconds",
    };
    OptionsError::invalid_option(option, error.to_string())
}

/// A credential exists when the string has user information (even empty) or names a
/// mechanism or mechanism properties; a database or authSource alone never asks for
/// authentication (auth.md).
pub(crate) fn build_credential(
    user_info: Option<&UserInfo>,
    database: Option<&str>,
    uri: &UriOptions,
) -> Option<Credential> {
    if user_info.is_none()
        && uri.auth_mechanism.is_none()
        && uri.auth_mechanism_properties.is_none()
    {
        return None;
    }
    let source = match (&uri.auth_source, uri.auth_mechanism) {
        (Some(source), _) => source.clone(),
        (None, Some(mechanism)) => mechanism.default_source(database),
        // Negotiated mechanisms are SCRAM, whose default source is the database or admin.
        (None, None) => database.unwrap_or(super::auth::ADMIN_SOURCE).to_string(),
    };
    let mut mechanism_properties = uri.auth_mechanism_properties.clone().unwrap_or_default();
    if uri.auth_mechanism == Some(super::auth::AuthMechanism::Gssapi) {
        // auth.md: GSSAPI's SERVICE_NAME defaults to "mongodb".
        mechanism_properties
            .entry("SERVICE_NAME".to_owned())
            .or_insert_with(|| "mongodb".to_owned());
    }
    Some(Credential {
        username: user_info.map(|u| u.username.clone()),
        password: user_info.and_then(|u| u.password.clone()),
        source: Some(source),
        mechanism: uri.auth_mechanism,
        mechanism_properties,
        oidc_callback: Default::default(),
    })
}
