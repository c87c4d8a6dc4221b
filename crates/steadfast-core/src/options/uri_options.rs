//! The options part of a connection string: reading `key=value` pairs into typed values.
//!
//! The connection string specification separates two kinds of trouble. Unknown keys and values
//! that cannot be used are ignored with a warning, so one connection string stays portable
//! across drivers. A few things are errors because ignoring them would be unsafe: an option
//! without `=`, an empty authSource, an unknown authMechanism, and contradicting `tls`/`ssl`.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

use percent_encoding::percent_decode_str;

use super::OptionsError;
use super::auth::AuthMechanism;
use super::client::{MIN_HEARTBEAT_FREQUENCY, ServerMonitoringMode};
use super::compression::{Compressor, MAX_ZLIB_LEVEL, MIN_ZLIB_LEVEL};
use super::concern::{Acknowledgment, ReadConcernLevel};
use super::proxy::UriProxyOptions;
use super::tls::UriTlsOptions;
use crate::selection::read_preference::{ReadPreferenceMode, TagSet};

/// The options exactly as a connection string (or TXT record) gave them: `None` means absent.
///
/// Durations keep the value written, so `Some(Duration::ZERO)` for `connectTimeoutMS=0` still
/// means "given as zero" here; [`ClientOptions`](super::ClientOptions) gives zero its meaning.
#[derive(Clone, Debug, PartialEq, Default)]
#[non_exhaustive]
pub struct UriOptions {
    /// `uuidRepresentation`: how the application decodes legacy (subtype 3) UUIDs. The
    /// driver does not use it; it is kept for the application.
    pub uuid_representation: Option<bson::UuidRepresentation>,
    /// `appname`.
    pub app_name: Option<String>,
    /// `authMechanism`.
    pub auth_mechanism: Option<AuthMechanism>,
    /// `authMechanismProperties`, keys upper-cased.
    pub auth_mechanism_properties: Option<BTreeMap<String, String>>,
    /// `authSource`.
    pub auth_source: Option<String>,
    /// `compressors`, known names only, in the order given.
    pub compressors: Option<Vec<Compressor>>,
    /// `zlibCompressionLevel`.
    pub zlib_compression_level: Option<i32>,
    /// `connectTimeoutMS`.
    pub connect_timeout: Option<Duration>,
    /// `directConnection`.
    pub direct_connection: Option<bool>,
    /// `enableOverloadRetargeting`.
    pub enable_overload_retargeting: Option<bool>,
    /// `heartbeatFrequencyMS`.
    pub heartbeat_frequency: Option<Duration>,
    /// `journal`.
    pub journal: Option<bool>,
    /// `loadBalanced`.
    pub load_balanced: Option<bool>,
    /// `localThresholdMS`.
    pub local_threshold: Option<Duration>,
    /// `maxAdaptiveRetries`.
    pub max_adaptive_retries: Option<u32>,
    /// `maxConnecting`.
    pub max_connecting: Option<u32>,
    /// `maxIdleTimeMS`.
    pub max_idle_time: Option<Duration>,
    /// `maxPoolSize`.
    pub max_pool_size: Option<u32>,
    /// `maxStalenessSeconds`; `-1` ("no maximum") is stored as absent.
    pub max_staleness: Option<Duration>,
    /// `minPoolSize`.
    pub min_pool_size: Option<u32>,
    /// `readConcernLevel`.
    pub read_concern_level: Option<ReadConcernLevel>,
    /// `readPreference`.
    pub read_preference: Option<ReadPreferenceMode>,
    /// Every `readPreferenceTags`, in order; an empty value is the empty tag set.
    pub read_preference_tags: Option<Vec<TagSet>>,
    /// `replicaSet`.
    pub replica_set: Option<String>,
    /// `retryReads`.
    pub retry_reads: Option<bool>,
    /// `retryWrites`.
    pub retry_writes: Option<bool>,
    /// `proxyHost`, `proxyPort`, `proxyUsername` and `proxyPassword`.
    pub proxy: UriProxyOptions,
    /// `serverMonitoringMode`.
    pub server_monitoring_mode: Option<ServerMonitoringMode>,
    /// `serverSelectionTimeoutMS`.
    pub server_selection_timeout: Option<Duration>,
    /// `socketTimeoutMS`.
    pub socket_timeout: Option<Duration>,
    /// `srvMaxHosts`.
    pub srv_max_hosts: Option<u32>,
    /// `srvServiceName`.
    pub srv_service_name: Option<String>,
    /// `timeoutMS`.
    pub timeout: Option<Duration>,
    /// `tls`, `ssl` and the `tls*` options.
    pub tls: UriTlsOptions,
    /// `w`.
    pub w: Option<Acknowledgment>,
    /// `wTimeoutMS`.
    pub w_timeout: Option<Duration>,
    /// `waitQueueTimeoutMS`.
    pub wait_queue_timeout: Option<Duration>,
}

/// Where an integer option's valid range starts.
#[derive(Clone, Copy)]
enum Minimum {
    Zero,
    One,
}

impl UriOptions {
    /// Reads an options string (`k=v&k=v`, already split from the connection string), recording
    /// warnings for what the specification says to ignore.
    ///
    /// # Errors
    /// [`OptionsError`] for a pair without `=`, an empty authSource, an unknown authMechanism,
    /// disagreeing `tls`/`ssl` values, the TLS option conflicts of uri-options.md, and a
    /// repeated or incomplete proxy option (socks5.md).
    pub fn parse(query: &str, warnings: &mut Vec<String>) -> Result<Self, OptionsError> {
        let mut options = UriOptions::default();
        let mut seen = HashSet::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (raw_key, raw_value) = pair
                .split_once('=')
                .ok_or_else(|| OptionsError::OptionWithoutValue(pair.to_string()))?;
            let Ok(key) = percent_decode_str(raw_key).decode_utf8() else {
                warnings.push(format!(
                    "option key {raw_key:?} is not valid UTF-8; ignored"
                ));
                continue;
            };
            let Ok(value) = percent_decode_str(raw_value).decode_utf8() else {
                warnings.push(format!("value of option {key} is not valid UTF-8; ignored"));
                continue;
            };
            let lower = key.to_ascii_lowercase();
            // Lists are built from repeated keys; any other repetition is probably a mistake,
            // and for the proxy options (where connections go) an error (socks5.md).
            let repeated = !seen.insert(lower.clone());
            if repeated && lower.starts_with("proxy") {
                return Err(OptionsError::RepeatedOption(key.into_owned()));
            }
            if repeated && lower != "readpreferencetags" {
                warnings.push(format!("option {key} is repeated; the last value is used"));
            }
            options.apply(&lower, &key, &value, warnings)?;
        }
        options.tls.check_conflicts()?;
        super::Socks5Proxy::from_uri(&options.proxy)?;
        Ok(options)
    }

    /// Applies one option; `lower` is the lower-cased key, `key` the key as written.
    fn apply(
        &mut self,
        lower: &str,
        key: &str,
        value: &str,
        warnings: &mut Vec<String>,
    ) -> Result<(), OptionsError> {
        let mut warn = |reason: &str| {
            warnings.push(format!("option {key}={value:?} ignored: {reason}"));
        };
        if value.is_empty() && !matches!(lower, "readpreferencetags" | "authsource") {
            warn("empty value");
            return Ok(());
        }
        match lower {
            "appname" => self.app_name = Some(value.to_string()),
            "authmechanism" => {
                let mechanism =
                    AuthMechanism::parse(value).ok_or_else(|| OptionsError::InvalidValue {
                        option: "authMechanism",
                        value: value.to_string(),
                        reason: "unknown authentication mechanism",
                    })?;
                self.auth_mechanism = Some(mechanism);
            }
            "authmechanismproperties" => match parse_pairs(value, |k| k.to_ascii_uppercase()) {
                Some(pairs) => self.auth_mechanism_properties = Some(pairs.into_iter().collect()),
                None => warn("every property must be written NAME:value, separated by commas"),
            },
            "authsource" => {
                if value.is_empty() {
                    return Err(OptionsError::InvalidValue {
                        option: "authSource",
                        value: String::new(),
                        reason: "the authentication source cannot be empty",
                    });
                }
                self.auth_source = Some(value.to_string());
            }
            "compressors" => {
                let mut list = Vec::new();
                for name in value.split(',') {
                    match Compressor::parse(name) {
                        Some(c) if !list.contains(&c) => list.push(c),
                        Some(_) => {}
                        None => warnings.push(format!(
                            "option {key}: unsupported compressor {name:?} ignored"
                        )),
                    }
                }
                self.compressors = Some(list);
            }
            "zlibcompressionlevel" => match value.parse::<i32>() {
                Ok(level) if (MIN_ZLIB_LEVEL..=MAX_ZLIB_LEVEL).contains(&level) => {
                    self.zlib_compression_level = Some(level);
                }
                _ => warn("must be an integer from -1 to 9"),
            },
            "connecttimeoutms" => set_millis(&mut self.connect_timeout, value, 0, &mut warn),
            "heartbeatfrequencyms" => {
                let min = MIN_HEARTBEAT_FREQUENCY.as_millis() as i64;
                set_millis(&mut self.heartbeat_frequency, value, min, &mut warn);
            }
            "localthresholdms" => set_millis(&mut self.local_threshold, value, 0, &mut warn),
            "maxidletimems" => set_millis(&mut self.max_idle_time, value, 0, &mut warn),
            "serverselectiontimeoutms" => {
                set_millis(&mut self.server_selection_timeout, value, 1, &mut warn);
            }
            "sockettimeoutms" => set_millis(&mut self.socket_timeout, value, 0, &mut warn),
            "timeoutms" => set_millis(&mut self.timeout, value, 0, &mut warn),
            "wtimeoutms" => set_millis(&mut self.w_timeout, value, 0, &mut warn),
            "waitqueuetimeoutms" => set_millis(&mut self.wait_queue_timeout, value, 1, &mut warn),
            "directconnection" => set_bool(&mut self.direct_connection, value, &mut warn),
            "enableoverloadretargeting" => {
                set_bool(&mut self.enable_overload_retargeting, value, &mut warn);
            }
            "journal" => set_bool(&mut self.journal, value, &mut warn),
            "loadbalanced" => set_bool(&mut self.load_balanced, value, &mut warn),
            "retryreads" => set_bool(&mut self.retry_reads, value, &mut warn),
            "retrywrites" => set_bool(&mut self.retry_writes, value, &mut warn),
            "maxadaptiveretries" => {
                set_count(
                    &mut self.max_adaptive_retries,
                    value,
                    Minimum::Zero,
                    &mut warn,
                );
            }
            "maxconnecting" => set_count(&mut self.max_connecting, value, Minimum::One, &mut warn),
            "maxpoolsize" => set_count(&mut self.max_pool_size, value, Minimum::Zero, &mut warn),
            "minpoolsize" => set_count(&mut self.min_pool_size, value, Minimum::Zero, &mut warn),
            "srvmaxhosts" => set_count(&mut self.srv_max_hosts, value, Minimum::Zero, &mut warn),
            "maxstalenessseconds" => match value.parse::<i64>() {
                Ok(-1) => self.max_staleness = None,
                Ok(secs) if secs >= 0 => {
                    self.max_staleness = Some(Duration::from_secs(secs.unsigned_abs()));
                }
                _ => warn("must be -1 (no maximum) or a number of seconds"),
            },
            "readconcernlevel" => self.read_concern_level = Some(ReadConcernLevel::parse(value)),
            "readpreference" => match ReadPreferenceMode::parse(value) {
                Some(mode) => self.read_preference = Some(mode),
                None => warn("unknown read preference mode"),
            },
            "readpreferencetags" => match parse_pairs(value, str::to_string) {
                Some(pairs) => self
                    .read_preference_tags
                    .get_or_insert_with(Vec::new)
                    .push(pairs.into_iter().collect()),
                None => warn("every tag must be written name:value, separated by commas"),
            },
            "proxyhost" => self.proxy.host = Some(value.to_string()),
            "proxyport" => match value.parse::<u16>() {
                Ok(port) if port > 0 => self.proxy.port = Some(port),
                _ => warn("must be a TCP port from 1 to 65535"),
            },
            "proxyusername" => self.proxy.username = Some(value.to_string()),
            "proxypassword" => self.proxy.password = Some(value.to_string()),
            "replicaset" => self.replica_set = Some(value.to_string()),
            "servermonitoringmode" => match ServerMonitoringMode::parse(value) {
                Some(mode) => self.server_monitoring_mode = Some(mode),
                None => warn("must be auto, stream or poll"),
            },
            "srvservicename" => {
                if is_valid_service_name(value) {
                    self.srv_service_name = Some(value.to_string());
                } else {
                    warn("not a valid SRV service name (RFC 6335)");
                }
            }
            // A negative node count is an error rather than a warning: the read-write-concern
            // suite requires the URI to be rejected, and no other suite expects a warning.
            "w" => match Acknowledgment::parse(value) {
                Some(w) => self.w = Some(w),
                None => {
                    return Err(OptionsError::InvalidValue {
                        option: "w",
                        value: value.to_string(),
                        reason: "must be a non-negative integer or a string",
                    });
                }
            },
            "tls" | "ssl" => match parse_bool(value) {
                Some(enabled) => {
                    if self.tls.tls.is_some_and(|previous| previous != enabled) {
                        return Err(OptionsError::Conflict {
                            first: "tls",
                            second: "ssl",
                            reason: "every tls and ssl value must be the same",
                        });
                    }
                    self.tls.tls = Some(enabled);
                }
                None => warn("must be true or false"),
            },
            "tlscafile" => self.tls.ca_file = Some(PathBuf::from(value)),
            "tlscertificatekeyfile" => self.tls.cert_key_file = Some(PathBuf::from(value)),
            "tlscertificatekeyfilepassword" => {
                self.tls.cert_key_password = Some(value.to_string());
            }
            "tlsallowinvalidcertificates" => {
                set_bool(&mut self.tls.allow_invalid_certificates, value, &mut warn);
            }
            "tlsallowinvalidhostnames" => {
                set_bool(&mut self.tls.allow_invalid_hostnames, value, &mut warn);
            }
            "tlsinsecure" => set_bool(&mut self.tls.insecure, value, &mut warn),
            "uuidrepresentation" => match parse_uuid_representation(value) {
                Some(representation) => self.uuid_representation = Some(representation),
                None => warn("must be standard, csharpLegacy, javaLegacy or pythonLegacy"),
            },
            _ => warnings.push(format!("unsupported option {key} ignored")),
        }
        Ok(())
    }
}

/// A `uuidRepresentation` value (ASCII case ignored).
fn parse_uuid_representation(value: &str) -> Option<bson::UuidRepresentation> {
    use bson::UuidRepresentation as Rep;
    [
        ("standard", Rep::Standard),
        ("csharpLegacy", Rep::CSharpLegacy),
        ("javaLegacy", Rep::JavaLegacy),
        ("pythonLegacy", Rep::PythonLegacy),
    ]
    .into_iter()
    .find(|(name, _)| name.eq_ignore_ascii_case(value))
    .map(|(_, rep)| rep)
}

fn parse_bool(value: &str) -> Option<bool> {
    match value {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

fn set_bool(slot: &mut Option<bool>, value: &str, warn: &mut impl FnMut(&str)) {
    match parse_bool(value) {
        Some(b) => *slot = Some(b),
        None => warn("must be true or false"),
    }
}

fn set_millis(slot: &mut Option<Duration>, value: &str, min: i64, warn: &mut impl FnMut(&str)) {
    match value.parse::<i64>() {
        Ok(ms) if ms >= min => *slot = Some(Duration::from_millis(ms.unsigned_abs())),
        _ if min == 0 => warn("must be a non-negative number of milliseconds"),
        _ => warn(&format!(
            "must be a number of milliseconds of at least {min}"
        )),
    }
}

fn set_count(slot: &mut Option<u32>, value: &str, min: Minimum, warn: &mut impl FnMut(&str)) {
    // Counts are 32-bit signed integers in the specification, hence the i32 parse.
    match (value.parse::<i32>(), min) {
        (Ok(n), Minimum::Zero) if n >= 0 => *slot = Some(n.unsigned_abs()),
        (Ok(n), Minimum::One) if n >= 1 => *slot = Some(n.unsigned_abs()),
        (_, Minimum::Zero) => warn("must be a non-negative integer"),
        (_, Minimum::One) => warn("must be a positive integer"),
    }
}

/// Reads `k:v,k:v`; the key ends at the first colon so values may contain colons (URLs).
/// Returns `None` when an entry has no colon or an empty key.
fn parse_pairs(value: &str, key: impl Fn(&str) -> String) -> Option<Vec<(String, String)>> {
    if value.is_empty() {
        return Some(Vec::new());
    }
    value
        .split(',')
        .map(|entry| match entry.split_once(':') {
            Some((k, v)) if !k.is_empty() => Some((key(k), v.to_string())),
            _ => None,
        })
        .collect()
}

/// RFC 6335 service names (letters, digits, inner single hyphens, at least one letter), with
/// the initial DNS seedlist specification's allowance for up to 62 characters.
fn is_valid_service_name(name: &str) -> bool {
    (1..=62).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && name.bytes().any(|b| b.is_ascii_alphabetic())
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}
