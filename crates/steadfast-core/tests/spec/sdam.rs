//! The server-discovery-and-monitoring suites: `single`, `rs`, `sharded`, `errors`,
//! `monitoring` and `load-balanced`.
//!
//! Each file is one case. The runner plays the monitor and the pools: a hello reply becomes
//! `ServerDescription::from_hello` and goes through `TopologyDescription::apply`; an empty
//! reply is a network error and a reply without `ok: 1` a command error, both decided by
//! `on_heartbeat_failure`; application errors go through `on_application_error`. Pools are
//! modelled as one generation counter per server, bumped whenever a decision says "clear".
//! As a backpressure-enabled pool does, network errors and timeouts that happen before the
//! handshake completes carry the `SystemOverloadedError` label.
//!
//! No case is skipped, so there is no skip table. (`unified/` is an integration suite for
//! the async driver and is not run here.)

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use steadfast_core::ServerAddress;
use steadfast_core::description::{ServerDescription, TopologyDescription};
use steadfast_core::sdam::{
    ApplicationErrorKind, ApplyOutcome, ErrorContext, ErrorPhase, HeartbeatFailure, SdamEvent,
    TopologyChange, on_application_error, on_heartbeat_failure,
};

use crate::harness::{self, Outcome, SuiteReport, Suites};
use crate::sdam_events;
use crate::sdam_input::{self, address, integer, object_id, to_document, topology_version};

const SUITE: &str = "server-discovery-and-monitoring";

pub(crate) fn run(suites: &mut Suites) {
    for subdir in [
        "single",
        "rs",
        "sharded",
        "errors",
        "monitoring",
        "load-balanced",
    ] {
        suites.run(SUITE, subdir, run_file);
    }
}

fn run_file(file: &Path, report: &mut SuiteReport) {
    let json = match harness::read_json(file) {
        Ok(json) => json,
        Err(e) => return report.record(file, "(file)", Outcome::Fail(e)),
    };
    let name = json["description"].as_str().unwrap_or("(no description)");
    let outcome = match run_case(&json) {
        Ok(()) => Outcome::Pass,
        Err(why) => Outcome::Fail(why),
    };
    report.record(file, name, outcome);
}

/// The client under test: the topology, the pools' generations, and the events not yet
/// checked.
struct Client {
    topology: TopologyDescription,
    generations: BTreeMap<ServerAddress, u32>,
    events: Vec<SdamEvent>,
    now: Instant,
}

impl Client {
    fn absorb(&mut self, change: TopologyChange) {
        for address in &change.removed {
            self.generations.remove(address);
        }
        for address in &change.added {
            self.generations.insert(address.clone(), 0);
        }
        self.events.extend(change.events);
        self.topology = change.description;
    }

    fn clear_pool(&mut self, address: &ServerAddress, generation: u32) {
        if let Some(current) = self.generations.get_mut(address) {
            // A clear decided against an older generation already happened.
            if *current == generation {
                *current += 1;
            }
        }
    }

    fn generation(&self, address: &ServerAddress) -> u32 {
        self.generations.get(address).copied().unwrap_or(0)
    }

    /// One monitor check of `address` answered by `reply` (empty = network error).
    fn check(&mut self, address: &ServerAddress, reply: &Value) -> Result<(), String> {
        let document = to_document(reply)?;
        let previous = self
            .topology
            .server(address)
            .cloned()
            .unwrap_or_else(|| ServerDescription::unknown(address.clone()));
        let failure = if document.is_empty() {
            Some(HeartbeatFailure::Network("connection reset (test)".into()))
        } else if let Some(ApplicationErrorKind::Command(reply)) =
            ApplicationErrorKind::from_command_reply(&document)
        {
            Some(HeartbeatFailure::Command(reply))
        } else {
            None
        };
        match failure {
            Some(failure) => {
                let actions = on_heartbeat_failure(&previous, &failure, self.generation(address));
                let change = self.topology.apply(actions.description);
                let applied = change.outcome == ApplyOutcome::Applied;
                self.absorb(change);
                if applied {
                    self.clear_pool(address, actions.clear_pool.generation);
                }
            }
            None => {
                let rtt = Duration::from_millis(1);
                let description =
                    ServerDescription::from_hello(address.clone(), &document, rtt, rtt, self.now);
                let change = self.topology.apply(description);
                self.absorb(change);
            }
        }
        Ok(())
    }

    /// One application error as described by the test file.
    fn application_error(&mut self, error: &Value, phase_label: &str) -> Result<(), String> {
        let at = |field: &str| format!("{phase_label} applicationError.{field}");
        let address = address(&error["address"]).map_err(|e| format!("{}: {e}", at("address")))?;
        let pool_generation = self.generation(&address);
        let connection_generation = match integer(&error["generation"]) {
            Ok(Some(g)) => u32::try_from(g).map_err(|e| format!("{}: {e}", at("generation")))?,
            Ok(None) => pool_generation,
            Err(e) => return Err(format!("{}: {e}", at("generation"))),
        };
        let phase = match error["when"].as_str() {
            Some("beforeHandshakeCompletes") => ErrorPhase::Hello,
            Some("afterHandshakeCompletes") => ErrorPhase::AfterHandshake,
            other => return Err(format!("{}: unsupported {other:?}", at("when"))),
        };
        let kind = match error["type"].as_str() {
            Some("network") => ApplicationErrorKind::Network,
            Some("timeout") => ApplicationErrorKind::NetworkTimeout,
            Some("command") => {
                let reply = to_document(&error["response"])
                    .map_err(|e| format!("{}: {e}", at("response")))?;
                match ApplicationErrorKind::from_command_reply(&reply) {
                    Some(kind) => kind,
                    // A reply that is no error (e.g. only writeErrors) reaches no SDAM code.
                    None => return Ok(()),
                }
            }
            other => return Err(format!("{}: unsupported {other:?}", at("type"))),
        };
        let overloaded = phase == ErrorPhase::Hello
            && matches!(
                kind,
                ApplicationErrorKind::Network | ApplicationErrorKind::NetworkTimeout
            );
        let mut context = ErrorContext::new(
            address.clone(),
            connection_generation,
            pool_generation,
            phase,
            kind,
        );
        context.system_overloaded = overloaded;
        let actions = on_application_error(&self.topology, &context);
        if let Some(unknown) = actions.mark_unknown {
            let change = self.topology.apply(unknown);
            self.absorb(change);
        }
        if let Some(clear) = actions.clear_pool {
            self.clear_pool(&address, clear.generation);
        }
        Ok(())
    }
}

fn run_case(json: &Value) -> Result<(), String> {
    let uri = json["uri"].as_str().ok_or("no uri")?;
    let config = sdam_input::config_from_uri(uri)?;
    let opened = TopologyDescription::open(&config).map_err(|e| format!("open: {e}"))?;
    let mut client = Client {
        topology: opened.description.clone(),
        generations: BTreeMap::new(),
        events: Vec::new(),
        now: Instant::now(),
    };
    client.absorb(opened);
    let phases = json["phases"].as_array().ok_or("no phases")?;
    for (index, phase) in phases.iter().enumerate() {
        let label = match phase["description"].as_str() {
            Some(d) => format!("phase {index} ({d})"),
            None => format!("phase {index}"),
        };
        for response in phase["responses"].as_array().into_iter().flatten() {
            let address = address(&response[0]).map_err(|e| format!("{label}: {e}"))?;
            client
                .check(&address, &response[1])
                .map_err(|e| format!("{label}: response from {address}: {e}"))?;
        }
        for error in phase["applicationErrors"].as_array().into_iter().flatten() {
            client.application_error(error, &label)?;
        }
        let outcome = &phase["outcome"];
        if let Some(expected) = outcome.get("events") {
            let events = std::mem::take(&mut client.events);
            sdam_events::check_events(expected, &events).map_err(|e| format!("{label}: {e}"))?;
        } else {
            check_topology(outcome, &client).map_err(|e| format!("{label}: {e}"))?;
        }
    }
    Ok(())
}

fn mismatch(field: &str, expected: impl std::fmt::Debug, actual: impl std::fmt::Debug) -> String {
    format!("{field}: expected {expected:?}, got {actual:?}")
}

fn check_topology(outcome: &Value, client: &Client) -> Result<(), String> {
    let topology = &client.topology;
    if let Some(expected) = outcome["topologyType"].as_str()
        && expected != topology.topology_type.spec_name()
    {
        return Err(mismatch("topologyType", expected, topology.topology_type));
    }
    if let Some(expected) = outcome.get("setName") {
        let expected = expected.as_str();
        if expected != topology.set_name.as_deref() {
            return Err(mismatch("setName", expected, &topology.set_name));
        }
    }
    if let Some(expected) = outcome.get("logicalSessionTimeoutMinutes") {
        let expected =
            integer(expected).map_err(|e| format!("logicalSessionTimeoutMinutes: {e}"))?;
        if expected != topology.logical_session_timeout_minutes {
            return Err(mismatch(
                "logicalSessionTimeoutMinutes",
                expected,
                topology.logical_session_timeout_minutes,
            ));
        }
    }
    if let Some(expected) = outcome.get("maxSetVersion") {
        let expected = integer(expected).map_err(|e| format!("maxSetVersion: {e}"))?;
        if expected != topology.max_set_version {
            return Err(mismatch(
                "maxSetVersion",
                expected,
                topology.max_set_version,
            ));
        }
    }
    if let Some(expected) = outcome.get("maxElectionId") {
        let expected = object_id(expected).map_err(|e| format!("maxElectionId: {e}"))?;
        if expected != topology.max_election_id {
            return Err(mismatch(
                "maxElectionId",
                expected,
                topology.max_election_id,
            ));
        }
    }
    if let Some(expected) = outcome.get("compatible").and_then(Value::as_bool)
        && expected != topology.compatible()
    {
        return Err(mismatch(
            "compatible",
            expected,
            &topology.compatibility_error,
        ));
    }
    let Some(servers) = outcome.get("servers").and_then(Value::as_object) else {
        return Ok(());
    };
    let mut expected_addresses = Vec::new();
    for (text, expected) in servers {
        let address = address(&Value::String(text.clone()))?;
        let actual = topology
            .server(&address)
            .ok_or_else(|| format!("servers: {address} expected but missing"))?;
        check_server(expected, actual, client.generation(&address))
            .map_err(|e| format!("servers[{address}].{e}"))?;
        expected_addresses.push(address);
    }
    let extra: Vec<String> = topology
        .servers
        .keys()
        .filter(|a| !expected_addresses.contains(a))
        .map(ToString::to_string)
        .collect();
    if !extra.is_empty() {
        return Err(format!("servers: unexpected {}", extra.join(", ")));
    }
    Ok(())
}

fn check_server(
    expected: &Value,
    actual: &ServerDescription,
    generation: u32,
) -> Result<(), String> {
    if let Some(kind) = expected["type"].as_str()
        && kind != actual.server_type.spec_name()
    {
        return Err(mismatch("type", kind, actual.server_type));
    }
    if let Some(fragment) = expected["error"].as_str() {
        let error = actual.error.as_deref().unwrap_or("");
        if !error.contains(fragment) {
            return Err(format!(
                "error: expected to contain {fragment:?}, got {error:?}"
            ));
        }
    }
    if let Some(name) = expected.get("setName") {
        if name.as_str() != actual.set_name.as_deref() {
            return Err(mismatch("setName", name, &actual.set_name));
        }
    }
    if let Some(value) = expected.get("setVersion") {
        let value = integer(value).map_err(|e| format!("setVersion: {e}"))?;
        if value != actual.set_version {
            return Err(mismatch("setVersion", value, actual.set_version));
        }
    }
    if let Some(value) = expected.get("electionId") {
        let value = object_id(value).map_err(|e| format!("electionId: {e}"))?;
        if value != actual.election_id {
            return Err(mismatch("electionId", value, actual.election_id));
        }
    }
    if let Some(value) = expected.get("logicalSessionTimeoutMinutes") {
        let value = integer(value).map_err(|e| format!("logicalSessionTimeoutMinutes: {e}"))?;
        if value != actual.logical_session_timeout_minutes {
            return Err(mismatch(
                "logicalSessionTimeoutMinutes",
                value,
                actual.logical_session_timeout_minutes,
            ));
        }
    }
    // Wire versions are integers defaulting to 0 (the SDAM default); null means "unset".
    for (field, actual_version) in [
        ("minWireVersion", actual.min_wire_version),
        ("maxWireVersion", actual.max_wire_version),
    ] {
        if let Some(value) = expected.get(field) {
            let value = integer(value)
                .map_err(|e| format!("{field}: {e}"))?
                .unwrap_or(0);
            if value != i64::from(actual_version) {
                return Err(mismatch(field, value, actual_version));
            }
        }
    }
    if let Some(value) = expected.get("topologyVersion") {
        let value = topology_version(value).map_err(|e| format!("topologyVersion: {e}"))?;
        if value != actual.topology_version {
            return Err(mismatch("topologyVersion", value, actual.topology_version));
        }
    }
    if let Some(value) = expected.get("pool").map(|p| &p["generation"]) {
        let value = integer(value).map_err(|e| format!("pool.generation: {e}"))?;
        if value != Some(i64::from(generation)) {
            return Err(mismatch("pool.generation", value, generation));
        }
    }
    Ok(())
}
