//! Serde forms of [`ConnectionString`] and [`HostInfo`], as the official driver writes them:
//! the options under their camel-case names (durations in milliseconds, the credential, TLS
//! and proxy settings under their lower-case connection-string keys), and a connection string
//! read back from its text.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use steadfast_core::ServerAddress;
use steadfast_core::options::{ReadConcern, ServerMonitoringMode, WriteConcern};
use steadfast_core::selection::ReadPreference;

use super::{ConnectionString, HostInfo};
use crate::client::Tls;

const MS: fn(&Option<Duration>) -> Option<i64> =
    |d| d.map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));

#[derive(Serialize)]
enum HostInfoForm<'a> {
    HostIdentifiers(&'a [ServerAddress]),
    DnsRecord(&'a str),
}

impl Serialize for HostInfo {
    /// `{ "HostIdentifiers": [..] }` or `{ "DnsRecord": "name" }`.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            HostInfo::HostIdentifiers(hosts) => HostInfoForm::HostIdentifiers(hosts),
            HostInfo::DnsRecord(name) => HostInfoForm::DnsRecord(name),
        }
        .serialize(serializer)
    }
}

#[derive(Serialize)]
struct CredentialForm<'a> {
    authsource: Option<&'a str>,
    authmechanism: Option<&'static str>,
    authmechanismproperties: Option<&'a BTreeMap<String, String>>,
}

#[derive(Serialize)]
struct TlsForm {
    tls: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    tlscafile: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tlscertificatekeyfile: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tlsallowinvalidcertificates: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tlsallowinvalidhostnames: Option<bool>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ProxyForm<'a> {
    proxy_host: &'a str,
    proxy_port: Option<u16>,
    proxy_username: Option<&'a str>,
    proxy_password: Option<&'a str>,
}

/// The serialized fields, `None`s left out.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Form<'a> {
    host_info: &'a HostInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    app_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tls: Option<TlsForm>,
    #[serde(skip_serializing_if = "Option::is_none")]
    heartbeat_frequency: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    local_threshold: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    read_concern: Option<&'a ReadConcern>,
    #[serde(skip_serializing_if = "Option::is_none")]
    replica_set: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    write_concern: Option<&'a WriteConcern>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_selection_timeout: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_pool_size: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    min_pool_size: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_connecting: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_idle_time: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    compressors: Option<Vec<&'static str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    connect_timeout: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_reads: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_writes: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_monitoring_mode: Option<ServerMonitoringMode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    direct_connection: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    credential: Option<CredentialForm<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    default_database: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    load_balanced: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    socket_timeout: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    read_preference: Option<&'a ReadPreference>,
    #[serde(skip_serializing_if = "Option::is_none")]
    uuid_representation: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    srv_max_hosts: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    srv_service_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    socks5_proxy: Option<ProxyForm<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_adaptive_retries: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    enable_overload_retargeting: Option<bool>,
    #[serde(rename = "timeoutMS", skip_serializing_if = "Option::is_none")]
    timeout: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    wait_queue_timeout: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tls_insecure: Option<bool>,
}

fn tls_form(tls: &Option<Tls>) -> Option<TlsForm> {
    let Some(Tls::Enabled(options)) = tls else {
        return None;
    };
    let path =
        |p: &Option<std::path::PathBuf>| p.as_ref().map(|p| p.to_string_lossy().into_owned());
    Some(TlsForm {
        tls: true,
        tlscafile: path(&options.ca_file_path),
        tlscertificatekeyfile: path(&options.cert_key_file_path),
        tlsallowinvalidcertificates: options.allow_invalid_certificates,
        tlsallowinvalidhostnames: options.allow_invalid_hostnames,
    })
}

impl Serialize for ConnectionString {
    /// The options under their camel-case names; `None`s are left out. The credential is
    /// written without user name and password, the TLS settings without the key password.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let o = self;
        Form {
            host_info: &o.host_info,
            app_name: o.app_name.as_deref(),
            tls: tls_form(&o.tls),
            heartbeat_frequency: MS(&o.heartbeat_frequency),
            local_threshold: MS(&o.local_threshold),
            read_concern: o.read_concern.as_ref(),
            replica_set: o.replica_set.as_deref(),
            write_concern: o.write_concern.as_ref(),
            server_selection_timeout: MS(&o.server_selection_timeout),
            max_pool_size: o.max_pool_size,
            min_pool_size: o.min_pool_size,
            max_connecting: o.max_connecting,
            max_idle_time: MS(&o.max_idle_time),
            compressors: o
                .compressors
                .as_ref()
                .map(|list| list.iter().map(|c| c.name()).collect()),
            connect_timeout: MS(&o.connect_timeout),
            retry_reads: o.retry_reads,
            retry_writes: o.retry_writes,
            server_monitoring_mode: o.server_monitoring_mode,
            direct_connection: o.direct_connection,
            credential: o.credential.as_ref().map(|c| CredentialForm {
                authsource: c.source.as_deref(),
                authmechanism: c.mechanism.map(|m| m.as_str()),
                authmechanismproperties: (!c.mechanism_properties.is_empty())
                    .then_some(&c.mechanism_properties),
            }),
            default_database: o.default_database.as_deref(),
            load_balanced: o.load_balanced,
            socket_timeout: MS(&o.socket_timeout),
            read_preference: o.read_preference.as_ref(),
            uuid_representation: o.uuid_representation.and_then(uuid_variant),
            srv_max_hosts: o.srv_max_hosts,
            srv_service_name: o.srv_service_name.as_deref(),
            socks5_proxy: o.socks5_proxy.as_ref().map(|p| ProxyForm {
                proxy_host: &p.host,
                proxy_port: p.port,
                proxy_username: p.authentication.as_ref().map(|a| a.0.as_str()),
                proxy_password: p.authentication.as_ref().map(|a| a.1.as_str()),
            }),
            max_adaptive_retries: o.max_adaptive_retries,
            enable_overload_retargeting: o.enable_overload_retargeting,
            timeout: MS(&o.timeout),
            wait_queue_timeout: MS(&o.wait_queue_timeout),
            tls_insecure: o.tls_insecure,
        }
        .serialize(serializer)
    }
}

/// The variant name the official driver writes for a UUID representation.
fn uuid_variant(representation: bson::UuidRepresentation) -> Option<&'static str> {
    use bson::UuidRepresentation as Rep;
    match representation {
        Rep::Standard => Some("Standard"),
        Rep::CSharpLegacy => Some("CSharpLegacy"),
        Rep::JavaLegacy => Some("JavaLegacy"),
        Rep::PythonLegacy => Some("PythonLegacy"),
        _ => None,
    }
}

impl<'de> Deserialize<'de> for ConnectionString {
    /// Reads a connection string from its text.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        ConnectionString::parse(&text).map_err(serde::de::Error::custom)
    }
}
