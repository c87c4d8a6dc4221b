//! Writes a [`ConnectionString`] back as a connection string that parses to the same value.

use std::collections::BTreeMap;
use std::time::Duration;

use bson::UuidRepresentation;
use percent_encoding::{AsciiSet, CONTROLS, NON_ALPHANUMERIC, utf8_percent_encode};
use steadfast_core::ServerAddress;

use super::{ConnectionString, HostInfo};
use crate::client::{Compressor, Tls};

/// User names, passwords, database names and socket paths: everything but the unreserved
/// characters is escaped.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Option values: what would end the value or the query, or be taken for user information,
/// is escaped; `:` and `,` stay, as lists (tags, mechanism properties) are written with them.
const VALUE: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'&')
    .add(b'=')
    .add(b'?')
    .add(b'/')
    .add(b'@')
    .add(b'+');

fn component(text: &str) -> String {
    utf8_percent_encode(text, COMPONENT).to_string()
}

fn value(text: &str) -> String {
    utf8_percent_encode(text, VALUE).to_string()
}

/// The query options, in a fixed order, each already written as its text value.
struct Query(Vec<(&'static str, String)>);

impl Query {
    fn put(&mut self, key: &'static str, text: Option<String>) {
        if let Some(text) = text {
            self.0.push((key, text));
        }
    }

    fn millis(&mut self, key: &'static str, duration: Option<Duration>) {
        self.put(key, duration.map(|d| d.as_millis().to_string()));
    }

    fn shown(&mut self, key: &'static str, shown: Option<impl ToString>) {
        self.put(key, shown.map(|v| v.to_string()));
    }
}

/// The connection string of `options`.
pub(super) fn to_uri(options: &ConnectionString) -> String {
    let mut uri = String::from(match options.host_info {
        HostInfo::DnsRecord(_) => "mongodb+srv://",
        HostInfo::HostIdentifiers(_) => "mongodb://",
    });
    if let Some(username) = options
        .credential
        .as_ref()
        .and_then(|c| c.username.as_ref())
    {
        uri.push_str(&component(username));
        if let Some(password) = options
            .credential
            .as_ref()
            .and_then(|c| c.password.as_ref())
        {
            uri.push(':');
            uri.push_str(&component(password));
        }
        uri.push('@');
    }
    uri.push_str(&hosts(&options.host_info));
    let query = query(options);
    if options.default_database.is_some() || !query.0.is_empty() {
        uri.push('/');
    }
    if let Some(database) = &options.default_database {
        uri.push_str(&component(database));
    }
    for (i, (key, text)) in query.0.iter().enumerate() {
        uri.push(if i == 0 { '?' } else { '&' });
        uri.push_str(key);
        uri.push('=');
        uri.push_str(&value(text));
    }
    uri
}

fn hosts(info: &HostInfo) -> String {
    match info {
        HostInfo::DnsRecord(name) => name.clone(),
        HostInfo::HostIdentifiers(hosts) => hosts
            .iter()
            .map(|host| match host {
                ServerAddress::Unix { path } => component(path),
                tcp => tcp.to_string(),
            })
            .collect::<Vec<_>>()
            .join(","),
    }
}

fn pairs(map: &BTreeMap<String, String>) -> String {
    map.iter()
        .map(|(key, val)| format!("{key}:{val}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn query(o: &ConnectionString) -> Query {
    let mut q = Query(Vec::new());
    q.put("appName", o.app_name.clone());
    credential_options(o, &mut q);
    tls_options(o, &mut q);
    q.millis("heartbeatFrequencyMS", o.heartbeat_frequency);
    q.millis("localThresholdMS", o.local_threshold);
    q.put(
        "readConcernLevel",
        o.read_concern
            .as_ref()
            .map(|c| c.level.as_str().to_string()),
    );
    q.put("replicaSet", o.replica_set.clone());
    if let Some(concern) = &o.write_concern {
        q.shown("w", concern.w.as_ref());
        q.millis("wTimeoutMS", concern.w_timeout);
        q.shown("journal", concern.journal);
    }
    q.millis("serverSelectionTimeoutMS", o.server_selection_timeout);
    q.shown("maxPoolSize", o.max_pool_size);
    q.shown("minPoolSize", o.min_pool_size);
    q.shown("maxConnecting", o.max_connecting);
    q.millis("maxIdleTimeMS", o.max_idle_time);
    compressor_options(o.compressors.as_deref(), &mut q);
    q.millis("connectTimeoutMS", o.connect_timeout);
    q.shown("retryReads", o.retry_reads);
    q.shown("retryWrites", o.retry_writes);
    q.shown("serverMonitoringMode", o.server_monitoring_mode);
    q.shown("directConnection", o.direct_connection);
    q.shown("loadBalanced", o.load_balanced);
    q.millis("socketTimeoutMS", o.socket_timeout);
    read_preference_options(o, &mut q);
    q.put(
        "uuidRepresentation",
        o.uuid_representation
            .and_then(uuid_name)
            .map(str::to_string),
    );
    q.shown("srvMaxHosts", o.srv_max_hosts);
    q.put("srvServiceName", o.srv_service_name.clone());
    if let Some(proxy) = &o.socks5_proxy {
        q.put("proxyHost", Some(proxy.host.clone()));
        q.shown("proxyPort", proxy.port);
        if let Some((username, password)) = &proxy.authentication {
            q.put("proxyUsername", Some(username.clone()));
            q.put("proxyPassword", Some(password.clone()));
        }
    }
    q.shown("maxAdaptiveRetries", o.max_adaptive_retries);
    q.shown("enableOverloadRetargeting", o.enable_overload_retargeting);
    q.millis("timeoutMS", o.timeout);
    q.millis("waitQueueTimeoutMS", o.wait_queue_timeout);
    q
}

fn credential_options(o: &ConnectionString, q: &mut Query) {
    let Some(credential) = &o.credential else {
        return;
    };
    q.put("authSource", credential.source.clone());
    q.shown("authMechanism", credential.mechanism);
    if !credential.mechanism_properties.is_empty() {
        q.put(
            "authMechanismProperties",
            Some(pairs(&credential.mechanism_properties)),
        );
    }
}

fn tls_options(o: &ConnectionString, q: &mut Query) {
    match &o.tls {
        None => {}
        Some(Tls::Disabled) => q.put("tls", Some("false".to_string())),
        Some(Tls::Enabled(tls)) => {
            q.put("tls", Some("true".to_string()));
            let path = |p: &Option<std::path::PathBuf>| {
                p.as_ref().map(|p| p.to_string_lossy().into_owned())
            };
            q.put("tlsCAFile", path(&tls.ca_file_path));
            q.put("tlsCertificateKeyFile", path(&tls.cert_key_file_path));
            q.put(
                "tlsCertificateKeyFilePassword",
                tls.tls_certificate_key_file_password
                    .as_ref()
                    .map(|p| String::from_utf8_lossy(p).into_owned()),
            );
            // tlsInsecure stands for both relaxed checks, and may not be written with them.
            if o.tls_insecure.is_none() {
                q.shown(
                    "tlsAllowInvalidCertificates",
                    tls.allow_invalid_certificates,
                );
                q.shown("tlsAllowInvalidHostnames", tls.allow_invalid_hostnames);
            }
        }
    }
    q.shown("tlsInsecure", o.tls_insecure);
}

fn compressor_options(compressors: Option<&[Compressor]>, q: &mut Query) {
    let Some(compressors) = compressors else {
        return;
    };
    let names: Vec<&str> = compressors.iter().map(Compressor::name).collect();
    q.put("compressors", Some(names.join(",")));
    let zlib_level = compressors.iter().find_map(|c| match c {
        Compressor::Zlib { level } => *level,
        _ => None,
    });
    q.shown("zlibCompressionLevel", zlib_level);
}

fn read_preference_options(o: &ConnectionString, q: &mut Query) {
    let Some(preference) = &o.read_preference else {
        return;
    };
    q.shown("readPreference", Some(preference.mode()));
    for tags in preference.tag_sets() {
        q.put("readPreferenceTags", Some(pairs(tags)));
    }
    q.shown(
        "maxStalenessSeconds",
        preference.max_staleness().map(|s| s.as_secs()),
    );
}

fn uuid_name(representation: UuidRepresentation) -> Option<&'static str> {
    match representation {
        UuidRepresentation::Standard => Some("standard"),
        UuidRepresentation::CSharpLegacy => Some("csharpLegacy"),
        UuidRepresentation::JavaLegacy => Some("javaLegacy"),
        UuidRepresentation::PythonLegacy => Some("pythonLegacy"),
        _ => None,
    }
}
