//! Runs the `connection-string` and `uri-options` suites against `ConnectionString::parse`.
//!
//! Each case parses its URI; `valid` must match whether parsing succeeded, `warning` whether
//! warnings were recorded, and every host, auth field and option the case lists must match the
//! parsed value. Options are compared as a subset (the README's rule); auth fields are compared
//! strictly, a JSON null meaning "absent".

use std::path::Path;

use serde_json::Value;
use steadfast_core::address::ServerAddress;
use steadfast_core::options::{Acknowledgment, ConnectionString, HostInfo, UriOptions};

use crate::harness::{self, Outcome, SuiteReport};

/// Options this driver deliberately does not implement. A case whose URI uses one of them is
/// skipped with the reason given; the driver itself reports them as unsupported (a warning).
const SKIPPED_OPTIONS: &[(&str, &str)] = &[
    (
        "tlsDisableOCSPEndpointCheck",
        "optional option: rustls does no OCSP endpoint checks, so there is nothing to disable",
    ),
    (
        "tlsDisableCertificateRevocationCheck",
        "optional option: revocation checking is not implemented on top of rustls",
    ),
    (
        "serverSelectionTryOnce",
        "single-threaded drivers only; steadfast selects servers on an async runtime",
    ),
];

pub(crate) fn run(suites: &mut harness::Suites) {
    for suite in ["connection-string", "uri-options"] {
        suites.run(suite, "", run_file);
    }
}

fn run_file(file: &Path, report: &mut SuiteReport) {
    let json = match harness::read_json(file) {
        Ok(json) => json,
        Err(why) => return report.record(file, "<file>", Outcome::Fail(why)),
    };
    let Some(cases) = json["tests"].as_array() else {
        return report.record(file, "<file>", Outcome::Fail("no `tests` array".into()));
    };
    for case in cases {
        let name = case["description"].as_str().unwrap_or("<unnamed>");
        report.record(file, name, run_case(case));
    }
}

fn run_case(case: &Value) -> Outcome {
    let Some(uri) = case["uri"].as_str() else {
        return Outcome::Fail("field uri: missing".into());
    };
    if let Some((option, reason)) = skipped_option(uri) {
        return Outcome::Skip(format!("{option}: {reason}"));
    }
    let expect_valid = case["valid"].as_bool().unwrap_or(true);
    let parsed = match (ConnectionString::parse(uri), expect_valid) {
        (Ok(parsed), true) => parsed,
        (Err(_), false) => return Outcome::Pass,
        (Ok(_), false) => return Outcome::Fail("field valid: parsed, but must be rejected".into()),
        (Err(e), true) => return Outcome::Fail(format!("field valid: rejected: {e}")),
    };
    match check_valid_case(case, &parsed) {
        Ok(()) => Outcome::Pass,
        Err(why) => Outcome::Fail(why),
    }
}

fn skipped_option(uri: &str) -> Option<(&'static str, &'static str)> {
    let query = uri.split_once('?')?.1;
    let keys: Vec<String> = query
        .split('&')
        .map(|pair| pair.split('=').next().unwrap_or("").to_ascii_lowercase())
        .collect();
    SKIPPED_OPTIONS
        .iter()
        .find(|(option, _)| keys.contains(&option.to_ascii_lowercase()))
        .copied()
}

fn check_valid_case(case: &Value, parsed: &ConnectionString) -> Result<(), String> {
    if let Some(expect_warning) = case["warning"].as_bool()
        && expect_warning == parsed.warnings.is_empty()
    {
        return Err(format!(
            "field warning: expected {expect_warning}, got warnings {:?}",
            parsed.warnings
        ));
    }
    if let Some(hosts) = case["hosts"].as_array() {
        check_hosts(hosts, &parsed.host_info)?;
    }
    if case["auth"].is_object() {
        check_auth(&case["auth"], parsed)?;
    }
    if let Some(options) = case["options"].as_object() {
        for (key, expected) in options {
            let actual = option_value(&parsed.options, key)
                .ok_or_else(|| format!("field options.{key}: no mapping for this option"))?;
            if !same_json(&actual, expected) {
                return Err(format!(
                    "field options.{key}: expected {expected}, got {actual}"
                ));
            }
        }
    }
    Ok(())
}

fn check_hosts(expected: &[Value], actual: &HostInfo) -> Result<(), String> {
    let HostInfo::Seeds(seeds) = actual else {
        return Err("field hosts: expected a seed list, got an SRV host".into());
    };
    if seeds.len() != expected.len() {
        return Err(format!(
            "field hosts: expected {} hosts, got {seeds:?}",
            expected.len()
        ));
    }
    for (i, (want, got)) in expected.iter().zip(seeds).enumerate() {
        if want["host"].as_str() != Some(got.host()) {
            return Err(format!(
                "field hosts[{i}].host: expected {}, got {got}",
                want["host"]
            ));
        }
        if let Some(port) = want["port"].as_u64()
            && got.port().map(u64::from) != Some(port)
        {
            return Err(format!("field hosts[{i}].port: expected {port}, got {got}"));
        }
        if let Some(kind) = want["type"].as_str()
            && (kind == "unix") != matches!(got, ServerAddress::Unix { .. })
        {
            return Err(format!(
                "field hosts[{i}].type: expected {kind}, got {got:?}"
            ));
        }
    }
    Ok(())
}

fn check_auth(expected: &Value, parsed: &ConnectionString) -> Result<(), String> {
    let username = parsed.user_info.as_ref().map(|u| u.username.as_str());
    let password = parsed
        .user_info
        .as_ref()
        .and_then(|u| u.password.as_deref());
    let database = parsed.default_database.as_deref();
    for (field, actual) in [
        ("username", username),
        ("password", password),
        ("db", database),
    ] {
        let want = expected[field].as_str();
        if want != actual {
            // The password itself is test data, never a real secret, so it may be shown.
            return Err(format!(
                "field auth.{field}: expected {want:?}, got {actual:?}"
            ));
        }
    }
    Ok(())
}

/// JSON equality where object keys compare case-insensitively (the suites mix key cases).
fn same_json(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::Object(a), Value::Object(e)) => {
            a.len() == e.len()
                && e.iter().all(|(k, v)| {
                    a.iter()
                        .find(|(ak, _)| ak.eq_ignore_ascii_case(k))
                        .is_some_and(|(_, av)| same_json(av, v))
                })
        }
        (Value::Array(a), Value::Array(e)) => {
            a.len() == e.len() && a.iter().zip(e).all(|(x, y)| same_json(x, y))
        }
        _ => actual == expected,
    }
}

fn millis(d: Option<std::time::Duration>) -> Value {
    d.map_or(Value::Null, |d| Value::from(d.as_millis() as u64))
}

fn opt<T: Into<Value>>(v: Option<T>) -> Value {
    v.map_or(Value::Null, Into::into)
}

/// The parsed value of a URI option, rendered as the suites write it. `None` means this runner
/// does not know the option, which fails the case rather than passing it silently.
fn option_value(o: &UriOptions, key: &str) -> Option<Value> {
    let tls = &o.tls;
    let path = |p: &Option<std::path::PathBuf>| opt(p.as_ref().map(|p| p.display().to_string()));
    Some(match key.to_ascii_lowercase().as_str() {
        "appname" => opt(o.app_name.clone()),
        "authmechanism" => opt(o.auth_mechanism.map(|m| m.as_str())),
        "authmechanismproperties" => opt(o.auth_mechanism_properties.as_ref().map(|props| {
            props
                .iter()
                .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
                .collect::<serde_json::Map<_, _>>()
        })),
        "authsource" => opt(o.auth_source.clone()),
        "compressors" => opt(o
            .compressors
            .as_ref()
            .map(|list| list.iter().map(|c| c.as_str()).collect::<Vec<_>>())),
        "zlibcompressionlevel" => opt(o.zlib_compression_level),
        "connecttimeoutms" => millis(o.connect_timeout),
        "heartbeatfrequencyms" => millis(o.heartbeat_frequency),
        "localthresholdms" => millis(o.local_threshold),
        "maxidletimems" => millis(o.max_idle_time),
        "serverselectiontimeoutms" => millis(o.server_selection_timeout),
        "sockettimeoutms" => millis(o.socket_timeout),
        "timeoutms" => millis(o.timeout),
        "wtimeoutms" => millis(o.w_timeout),
        "waitqueuetimeoutms" => millis(o.wait_queue_timeout),
        "directconnection" => opt(o.direct_connection),
        "enableoverloadretargeting" => opt(o.enable_overload_retargeting),
        "journal" => opt(o.journal),
        "loadbalanced" => opt(o.load_balanced),
        "retryreads" => opt(o.retry_reads),
        "retrywrites" => opt(o.retry_writes),
        "maxadaptiveretries" => opt(o.max_adaptive_retries),
        "maxconnecting" => opt(o.max_connecting),
        "maxpoolsize" => opt(o.max_pool_size),
        "minpoolsize" => opt(o.min_pool_size),
        "srvmaxhosts" => opt(o.srv_max_hosts),
        "srvservicename" => opt(o.srv_service_name.clone()),
        "maxstalenessseconds" => opt(o.max_staleness.map(|d| d.as_secs())),
        "readconcernlevel" => opt(o
            .read_concern_level
            .as_ref()
            .map(|l| l.as_str().to_string())),
        "readpreference" => opt(o.read_preference.map(|m| m.as_str())),
        "readpreferencetags" => opt(o.read_preference_tags.as_ref().map(|sets| {
            sets.iter()
                .map(|set| {
                    set.iter()
                        .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
                        .collect::<serde_json::Map<_, _>>()
                })
                .collect::<Vec<_>>()
        })),
        "replicaset" => opt(o.replica_set.clone()),
        "servermonitoringmode" => opt(o.server_monitoring_mode.map(|m| m.as_str())),
        "w" => match &o.w {
            Some(Acknowledgment::Nodes(n)) => Value::from(*n),
            Some(other) => Value::from(other.to_string()),
            None => Value::Null,
        },
        "tls" | "ssl" => opt(tls.tls),
        "tlscafile" => path(&tls.ca_file),
        "tlscertificatekeyfile" => path(&tls.cert_key_file),
        "tlscertificatekeyfilepassword" => opt(tls.cert_key_password.clone()),
        "tlsallowinvalidcertificates" => opt(tls.allow_invalid_certificates),
        "tlsallowinvalidhostnames" => opt(tls.allow_invalid_hostnames),
        "tlsinsecure" => opt(tls.insecure),
        _ => return None,
    })
}
