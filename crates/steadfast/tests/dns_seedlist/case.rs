//! One JSON test of the suite, with the README's semantics: `seeds`/`numSeeds` are the seed
//! list after DNS resolution and before discovery, `hosts`/`numHosts` the topology's servers
//! once discovery settled, `options`/`parsed_options` the client's parsed values, `error` a
//! failure while creating the client, `ping: false` no ping.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};
use steadfast::Client;
use steadfast::bson::doc;
use steadfast::event::{Event, EventRecorder, SdamEvent};
use steadfast::options::{ClientOptions, ResolverConfig, Tls};

/// How long discovery may take to reach the expected servers (a bound that only keeps a broken
/// case from hanging: the wait ends at the first matching description).
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(20);
/// Server selection for the ping.
const SELECTION_TIMEOUT: Duration = Duration::from_secs(10);

/// A test file. Unknown fields are refused, so that a field this runner does not check cannot
/// pass unnoticed.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct DnsCase {
    uri: String,
    seeds: Option<Vec<String>>,
    num_seeds: Option<usize>,
    hosts: Option<Vec<String>>,
    num_hosts: Option<usize>,
    options: Option<Map<String, Value>>,
    #[serde(rename = "parsed_options")]
    parsed_options: Option<Map<String, Value>>,
    #[serde(default)]
    error: bool,
    ping: Option<bool>,
    #[serde(rename = "comment")]
    _comment: Option<String>,
}

/// What a case needs besides its file.
pub(crate) struct Environment<'a> {
    /// The local name server's configuration.
    pub(crate) resolver: &'a ResolverConfig,
    /// The CA that signed the deployment's certificate.
    pub(crate) ca_file: &'a Path,
}

impl DnsCase {
    /// Reads a test file.
    ///
    /// # Errors
    /// A message when the file cannot be read or has an unknown shape.
    pub(crate) fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
        serde_json::from_str(&text).map_err(|e| format!("unexpected test format: {e}"))
    }

    /// Runs the case; `Err` says which check failed and how.
    pub(crate) async fn run(&self, environment: &Environment<'_>) -> Result<(), String> {
        let parsed = ClientOptions::parse(&self.uri)
            .resolver_config(environment.resolver.clone())
            .await;
        if self.error {
            return self.expect_error(parsed);
        }
        let mut options = parsed.map_err(|e| format!("parsing and resolving failed: {e}"))?;
        let mut checked = 0;
        checked += self.check_seeds(&options)?;
        checked += check_options(self.options.as_ref(), &options, option_value)?;
        checked += check_options(self.parsed_options.as_ref(), &options, parsed_value)?;
        trust(&mut options, environment.ca_file);
        options.server_selection_timeout = Some(SELECTION_TIMEOUT);
        let recorder = Arc::new(EventRecorder::new());
        options.event_listeners.push(recorder.clone());
        let client = Client::with_options(options).map_err(|e| format!("no client: {e}"))?;
        let outcome = self.check_client(&client, &recorder).await;
        client.shutdown().await;
        checked += outcome?;
        if checked == 0 {
            return Err("the case names nothing to check".into());
        }
        Ok(())
    }

    /// An error case passes when parsing and resolving fails, or else creating the client.
    fn expect_error(&self, parsed: steadfast::Result<ClientOptions>) -> Result<(), String> {
        let options = match parsed {
            Err(_) => return Ok(()),
            Ok(options) => options,
        };
        match Client::with_options(options) {
            Err(_) => Ok(()),
            Ok(_) => Err("expected an error, but the client was created".into()),
        }
    }

    /// `seeds` and `numSeeds` against the resolved seed list; returns how many were checked.
    fn check_seeds(&self, options: &ClientOptions) -> Result<usize, String> {
        let seeds: BTreeSet<String> = options.hosts.iter().map(ToString::to_string).collect();
        if seeds.len() != options.hosts.len() {
            return Err(format!("the seed list has duplicates: {:?}", options.hosts));
        }
        let mut checked = 0;
        if let Some(expected) = &self.seeds {
            compare_sets("seeds", expected, &seeds)?;
            checked += 1;
        }
        if let Some(expected) = self.num_seeds {
            if seeds.len() != expected {
                return Err(format!("numSeeds: expected {expected}, got {seeds:?}"));
            }
            checked += 1;
        }
        Ok(checked)
    }

    /// `hosts`/`numHosts` once discovery settles, then the ping; returns how many checks ran.
    async fn check_client(
        &self,
        client: &Client,
        recorder: &EventRecorder,
    ) -> Result<usize, String> {
        let mut checked = 0;
        if self.hosts.is_some() || self.num_hosts.is_some() {
            self.await_hosts(recorder).await?;
            checked += 1;
        }
        if self.ping.unwrap_or(true) {
            client
                .database("admin")
                .run_command(doc! { "ping": 1 })
                .await
                .map_err(|e| format!("ping failed: {e}"))?;
            checked += 1;
        }
        Ok(checked)
    }

    /// Waits for a topology description whose servers are `hosts` (and number `numHosts`).
    async fn await_hosts(&self, recorder: &EventRecorder) -> Result<(), String> {
        let matches = |servers: &BTreeSet<String>| {
            self.hosts
                .as_ref()
                .is_none_or(|hosts| hosts.iter().cloned().collect::<BTreeSet<_>>() == *servers)
                && self.num_hosts.is_none_or(|n| n == servers.len())
        };
        let found = recorder
            .wait_for(0, DISCOVERY_TIMEOUT, |event| {
                description_servers(event).is_some_and(|servers| matches(&servers))
            })
            .await;
        if found.is_some() {
            return Ok(());
        }
        let last = recorder.events().iter().rev().find_map(description_servers);
        Err(format!(
            "hosts: expected {:?} (numHosts {:?}); the last topology description had {last:?}",
            self.hosts, self.num_hosts
        ))
    }
}

/// The servers of a topology description change event.
fn description_servers(event: &Event) -> Option<BTreeSet<String>> {
    match event {
        Event::Sdam(SdamEvent::TopologyDescriptionChanged { new, .. }) => {
            Some(new.servers.keys().map(ToString::to_string).collect())
        }
        _ => None,
    }
}

fn compare_sets(what: &str, expected: &[String], actual: &BTreeSet<String>) -> Result<(), String> {
    let expected: BTreeSet<String> = expected.iter().cloned().collect();
    if expected == *actual {
        Ok(())
    } else {
        Err(format!("{what}: expected {expected:?}, got {actual:?}"))
    }
}

/// Compares each expected option with the client's value; returns how many were compared.
fn check_options(
    expected: Option<&Map<String, Value>>,
    options: &ClientOptions,
    value_of: fn(&ClientOptions, &str) -> Option<Value>,
) -> Result<usize, String> {
    let Some(expected) = expected else {
        return Ok(0);
    };
    for (key, want) in expected {
        let actual = value_of(options, key)
            .ok_or_else(|| format!("option {key}: this runner cannot read it"))?;
        if actual != *want {
            return Err(format!("option {key}: expected {want}, got {actual}"));
        }
    }
    Ok(expected.len())
}

/// A URI option as the client parsed it (`None`: unknown to this runner).
fn option_value(options: &ClientOptions, key: &str) -> Option<Value> {
    let text = |value: Option<&String>| value.map_or(Value::Null, |v| Value::from(v.as_str()));
    let flag = |value: Option<bool>| value.map_or(Value::Null, Value::from);
    Some(match key {
        "ssl" | "tls" => Value::from(matches!(options.tls, Some(Tls::Enabled(_)))),
        "replicaSet" => text(options.repl_set_name.as_ref()),
        // The source a credential would use: kept even when none is configured.
        "authSource" => text(options.resolve().auth_source.as_ref()),
        "loadBalanced" => flag(options.load_balanced),
        "directConnection" => flag(options.direct_connection),
        "srvMaxHosts" => options.srv_max_hosts.map_or(Value::Null, Value::from),
        "srvServiceName" => text(options.srv_service_name.as_ref()),
        _ => return None,
    })
}

/// A value parsed from the string's other components (user information, path).
fn parsed_value(options: &ClientOptions, key: &str) -> Option<Value> {
    let credential = options.credential.as_ref();
    let text = |value: Option<&String>| value.map_or(Value::Null, |v| Value::from(v.as_str()));
    Some(match key {
        "user" => text(credential.and_then(|c| c.username.as_ref())),
        "password" => text(credential.and_then(|c| c.password.as_ref())),
        // The path's database: the default database and, for a credential, its source.
        "db" | "auth_database" | "defaultDatabase" => text(options.default_database.as_ref()),
        _ => return None,
    })
}

/// Trusts the test CA when TLS is on (a case's `ssl=false` stays off).
fn trust(options: &mut ClientOptions, ca_file: &Path) {
    if let Some(Tls::Enabled(tls)) = &mut options.tls {
        tls.ca_file_path = Some(ca_file.to_path_buf());
    }
}
