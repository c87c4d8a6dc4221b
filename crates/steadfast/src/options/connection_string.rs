//! [`ConnectionString`]: a `mongodb://` or `mongodb+srv://` string parsed into the options it
//! sets, each `None` when the string leaves it out, shaped as the official driver's. The syntax
//! is read by steadfast-core's parser ([`steadfast_core::ConnectionString::parse`]); this type
//! only regroups what it found into the public option types.

mod display;
mod serde_form;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use bson::UuidRepresentation;
use steadfast_core::ServerAddress;
use steadfast_core::options::{
    ConnectionString as ParsedString, Credential, HostInfo as ParsedHosts, OptionsError,
    ReadConcern, ServerMonitoringMode, Socks5Proxy, UriOptions, UriTlsOptions, WriteConcern,
};
use steadfast_core::selection::ReadPreference;

use crate::client::{Compressor, Tls, TlsOptions};
use crate::error::{Error, Result};

/// Where the servers of a connection string are: the hosts it lists, or the DNS name whose
/// SRV records list them (`mongodb+srv://`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HostInfo {
    /// The hosts of a `mongodb://` string, in the order written.
    HostIdentifiers(Vec<ServerAddress>),
    /// The host name of a `mongodb+srv://` string, to be resolved through DNS.
    DnsRecord(String),
}

impl Default for HostInfo {
    /// No hosts.
    fn default() -> Self {
        HostInfo::HostIdentifiers(Vec::new())
    }
}

/// The options a connection string sets. Every field is `None` when the string does not give
/// it; nothing is resolved (no DNS lookup for `mongodb+srv://`) and no default is filled in.
/// [`ClientOptions::parse`](crate::options::ClientOptions::parse) is what turns a string into
/// a client's options; this type is for reading (or rewriting) the string itself.
///
/// ```
/// use std::time::Duration;
/// use steadfast::options::{ConnectionString, HostInfo};
///
/// let parsed = ConnectionString::parse("mongodb://db1,db2:27018/shop?replicaSet=rs0&maxPoolSize=20")?;
/// assert!(matches!(&parsed.host_info, HostInfo::HostIdentifiers(hosts) if hosts.len() == 2));
/// assert_eq!(parsed.replica_set.as_deref(), Some("rs0"));
/// assert_eq!(parsed.max_pool_size, Some(20));
/// assert_eq!(parsed.default_database.as_deref(), Some("shop"));
/// assert_eq!(parsed.connect_timeout, None);
/// // Displayed, it is a connection string again.
/// assert_eq!(parsed.to_string().parse::<ConnectionString>()?, parsed);
/// # Ok::<(), steadfast::error::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ConnectionString {
    /// The hosts, or the SRV name.
    pub host_info: HostInfo,
    /// `appName`.
    pub app_name: Option<String>,
    /// `tls` / `ssl` and the `tls*` options: `Some` when any of them is given.
    pub tls: Option<Tls>,
    /// `heartbeatFrequencyMS`.
    pub heartbeat_frequency: Option<Duration>,
    /// `localThresholdMS`.
    pub local_threshold: Option<Duration>,
    /// `readConcernLevel`.
    pub read_concern: Option<ReadConcern>,
    /// `replicaSet`.
    pub replica_set: Option<String>,
    /// `w`, `wTimeoutMS` and `journal`: `Some` when any of them is given.
    pub write_concern: Option<WriteConcern>,
    /// `serverSelectionTimeoutMS`.
    pub server_selection_timeout: Option<Duration>,
    /// `maxPoolSize`.
    pub max_pool_size: Option<u32>,
    /// `minPoolSize`.
    pub min_pool_size: Option<u32>,
    /// `maxConnecting`.
    pub max_connecting: Option<u32>,
    /// `maxIdleTimeMS`.
    pub max_idle_time: Option<Duration>,
    /// `compressors`, with `zlibCompressionLevel` on zlib.
    pub compressors: Option<Vec<Compressor>>,
    /// `connectTimeoutMS`.
    pub connect_timeout: Option<Duration>,
    /// `retryReads`.
    pub retry_reads: Option<bool>,
    /// `retryWrites`.
    pub retry_writes: Option<bool>,
    /// `serverMonitoringMode`.
    pub server_monitoring_mode: Option<ServerMonitoringMode>,
    /// `directConnection`.
    pub direct_connection: Option<bool>,
    /// The user information with `authSource`, `authMechanism` and
    /// `authMechanismProperties`; its source is filled in as the authentication specification
    /// defaults it.
    pub credential: Option<Credential>,
    /// The database after the hosts.
    pub default_database: Option<String>,
    /// `loadBalanced`.
    pub load_balanced: Option<bool>,
    /// `socketTimeoutMS`.
    pub socket_timeout: Option<Duration>,
    /// `readPreference` with `readPreferenceTags` and `maxStalenessSeconds`.
    pub read_preference: Option<ReadPreference>,
    /// `uuidRepresentation`: how the application decodes legacy UUIDs (the driver does not
    /// use it).
    pub uuid_representation: Option<UuidRepresentation>,
    /// `srvMaxHosts`.
    pub srv_max_hosts: Option<u32>,
    /// `srvServiceName`.
    pub srv_service_name: Option<String>,
    /// `proxyHost`, `proxyPort`, `proxyUsername` and `proxyPassword`.
    pub socks5_proxy: Option<Socks5Proxy>,
    /// `maxAdaptiveRetries`.
    pub max_adaptive_retries: Option<u32>,
    /// `enableOverloadRetargeting`.
    pub enable_overload_retargeting: Option<bool>,
    /// `timeoutMS` (steadfast keeps it here as well; the official driver reads it only into
    /// client options).
    pub timeout: Option<Duration>,
    wait_queue_timeout: Option<Duration>,
    tls_insecure: Option<bool>,
}

impl ConnectionString {
    /// Parses a connection string, checking its syntax, every option's value and the rules
    /// the string alone can decide (for example `directConnection=true` with several hosts).
    /// Unknown options and unusable values are ignored, as the specifications require.
    ///
    /// # Errors
    /// An [`ErrorKind::InvalidArgument`](crate::error::ErrorKind::InvalidArgument) error
    /// naming the offending part: the scheme, a host, the user information, the database, an
    /// option value or a forbidden combination.
    pub fn parse(s: impl AsRef<str>) -> Result<Self> {
        let parsed = ParsedString::parse(s.as_ref()).map_err(Error::from)?;
        ConnectionString::from_parsed(&parsed).map_err(Error::from)
    }

    /// `waitQueueTimeoutMS`, as given.
    pub fn wait_queue_timeout(&self) -> Option<Duration> {
        self.wait_queue_timeout
    }

    /// `tlsInsecure`, as given. When set, [`TlsOptions::allow_invalid_certificates`] and
    /// [`TlsOptions::allow_invalid_hostnames`] of [`ConnectionString::tls`] take its value.
    pub fn tls_insecure(&self) -> Option<bool> {
        self.tls_insecure
    }

    fn from_parsed(parsed: &ParsedString) -> std::result::Result<Self, OptionsError> {
        let uri = &parsed.options;
        Ok(ConnectionString {
            host_info: match &parsed.host_info {
                ParsedHosts::Seeds(hosts) => HostInfo::HostIdentifiers(hosts.clone()),
                ParsedHosts::Srv(host) => HostInfo::DnsRecord(host.hostname().to_string()),
            },
            app_name: uri.app_name.clone(),
            tls: tls_of(&uri.tls),
            heartbeat_frequency: uri.heartbeat_frequency,
            local_threshold: uri.local_threshold,
            read_concern: uri.read_concern_level.clone().map(ReadConcern::new),
            replica_set: uri.replica_set.clone(),
            write_concern: write_concern_of(uri),
            server_selection_timeout: uri.server_selection_timeout,
            max_pool_size: uri.max_pool_size,
            min_pool_size: uri.min_pool_size,
            max_connecting: uri.max_connecting,
            max_idle_time: uri.max_idle_time,
            compressors: compressors_of(uri),
            connect_timeout: uri.connect_timeout,
            retry_reads: uri.retry_reads,
            retry_writes: uri.retry_writes,
            server_monitoring_mode: uri.server_monitoring_mode,
            direct_connection: uri.direct_connection,
            credential: parsed.credential(),
            default_database: parsed.default_database.clone(),
            load_balanced: uri.load_balanced,
            socket_timeout: uri.socket_timeout,
            read_preference: read_preference_of(uri)?,
            uuid_representation: uri.uuid_representation,
            srv_max_hosts: uri.srv_max_hosts,
            srv_service_name: uri.srv_service_name.clone(),
            socks5_proxy: Socks5Proxy::from_uri(&uri.proxy)?,
            max_adaptive_retries: uri.max_adaptive_retries,
            enable_overload_retargeting: uri.enable_overload_retargeting,
            timeout: uri.timeout,
            wait_queue_timeout: uri.wait_queue_timeout,
            tls_insecure: uri.tls.insecure,
        })
    }
}

/// The TLS settings the string gives, if it gives any.
fn tls_of(uri: &UriTlsOptions) -> Option<Tls> {
    if uri.tls.is_none() && !uri.any_tls_prefixed_option() {
        return None;
    }
    if uri.tls == Some(false) {
        return Some(Tls::Disabled);
    }
    Some(Tls::Enabled(TlsOptions {
        allow_invalid_certificates: uri.allow_invalid_certificates.or(uri.insecure),
        ca_file_path: uri.ca_file.clone(),
        cert_key_file_path: uri.cert_key_file.clone(),
        allow_invalid_hostnames: uri.allow_invalid_hostnames.or(uri.insecure),
        tls_certificate_key_file_password: uri.cert_key_password.clone().map(String::into_bytes),
    }))
}

fn write_concern_of(uri: &UriOptions) -> Option<WriteConcern> {
    let mut concern = WriteConcern::default();
    concern.w.clone_from(&uri.w);
    concern.w_timeout = uri.w_timeout;
    concern.journal = uri.journal;
    (!concern.is_empty()).then_some(concern)
}

fn compressors_of(uri: &UriOptions) -> Option<Vec<Compressor>> {
    let names = uri.compressors.as_ref()?;
    Some(
        names
            .iter()
            .filter_map(|name| Compressor::from_name(name.as_str(), uri.zlib_compression_level))
            .collect(),
    )
}

fn read_preference_of(
    uri: &UriOptions,
) -> std::result::Result<Option<ReadPreference>, OptionsError> {
    let Some(mode) = uri.read_preference else {
        return Ok(None);
    };
    ReadPreference::from_parts(
        mode,
        uri.read_preference_tags.clone().unwrap_or_default(),
        uri.max_staleness,
    )
    .map(Some)
    .map_err(|e| OptionsError::InvalidOption {
        option: "readPreference",
        reason: e.to_string(),
    })
}

impl From<OptionsError> for Error {
    /// An invalid option or connection string: an `InvalidArgument` error whose source is the
    /// `OptionsError`.
    fn from(error: OptionsError) -> Self {
        Error::invalid_argument(error.to_string()).with_source(error)
    }
}

impl FromStr for ConnectionString {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        ConnectionString::parse(s)
    }
}

impl TryFrom<&str> for ConnectionString {
    type Error = Error;

    fn try_from(value: &str) -> Result<Self> {
        ConnectionString::parse(value)
    }
}

impl TryFrom<&String> for ConnectionString {
    type Error = Error;

    fn try_from(value: &String) -> Result<Self> {
        ConnectionString::parse(value)
    }
}

impl TryFrom<String> for ConnectionString {
    type Error = Error;

    fn try_from(value: String) -> Result<Self> {
        ConnectionString::parse(value)
    }
}

impl fmt::Display for ConnectionString {
    /// The connection string these options stand for (with the password, if any: do not
    /// log it).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&display::to_uri(self))
    }
}

#[cfg(test)]
mod tests;
