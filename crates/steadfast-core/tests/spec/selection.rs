//! Server selection suites: `server-selection/{server_selection/*/*, rtt, in_window}` and
//! `max-staleness/*`.
//!
//! `server-selection/logging` is not run here: it is a unified-format suite about log messages,
//! which belong to the async driver, not to the pure selection decision.
//!
//! No case is skipped, so there is no skip table.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::Value;

use steadfast_core::ServerAddress;
use steadfast_core::description::server::MAX_WIRE_VERSION;
use steadfast_core::description::{
    ServerDescription, ServerType, TopologyConfig, TopologyDescription, TopologyType,
};
use steadfast_core::selection::{
    ReadPreference, ReadPreferenceError, ReadPreferenceMode, RoundTripTimeEstimator, Selection,
    SelectionCriteria, TagSet, candidates, select,
};

use crate::harness::{self, Outcome, SuiteReport, Suites};

/// The seed of every random choice in these suites, so that runs are reproducible.
const RNG_SEED: u64 = 0x5e1e_c7ed;

pub(crate) fn run(suites: &mut Suites) {
    for subdir in nested_dirs(suites, "server-selection", "server_selection") {
        suites.run("server-selection", &subdir, run_logic_file);
    }
    suites.run("server-selection", "rtt", run_rtt_file);
    suites.run("server-selection", "in_window", run_in_window_file);
    for subdir in nested_dirs(suites, "max-staleness", "") {
        suites.run("max-staleness", &subdir, run_logic_file);
    }
}

/// The leaf directories under `<suite>/<start>` (relative to the suite), sorted. When there are
/// none (or no spec test folder was found), `start` itself is returned so that the harness
/// reports "no JSON files found" (or the skip line).
fn nested_dirs(suites: &Suites, suite: &str, start: &str) -> Vec<String> {
    fn walk(root: &Path, relative: &str, out: &mut Vec<String>) {
        let mut children: Vec<String> = std::fs::read_dir(root.join(relative))
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .filter(|e| e.path().is_dir())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        children.sort();
        if children.is_empty() {
            out.push(relative.to_string());
        }
        for child in children {
            let next = if relative.is_empty() {
                child
            } else {
                format!("{relative}/{child}")
            };
            walk(root, &next, out);
        }
    }
    let mut out = Vec::new();
    match suites.suite_dir(suite) {
        Some(root) => walk(&root, start, &mut out),
        None => out.push(start.to_string()),
    }
    out
}

fn case_name(file: &Path, json: &Value) -> String {
    json.get("description")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| {
            file.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
}

fn parse_or_fail(file: &Path, report: &mut SuiteReport) -> Option<Value> {
    match harness::read_json(file) {
        Ok(v) => Some(v),
        Err(why) => {
            report.record(file, "file", Outcome::Fail(why));
            None
        }
    }
}

/// Milliseconds (integer or fractional) as a `Duration`.
fn millis(value: &Value, field: &str) -> Result<Duration, String> {
    let ms = value
        .as_f64()
        .filter(|v| *v >= 0.0)
        .ok_or_else(|| format!("field `{field}`: expected non-negative milliseconds"))?;
    Ok(Duration::from_secs_f64(ms / 1000.0))
}

/// An integer written either plainly or as extended JSON `{"$numberLong": "..."}`.
fn int64(value: &Value) -> Option<i64> {
    value.as_i64().or_else(|| {
        value
            .get("$numberLong")
            .and_then(Value::as_str)
            .and_then(|s| s.parse().ok())
    })
}

fn tag_set(value: &Value, field: &str) -> Result<TagSet, String> {
    let map = value
        .as_object()
        .ok_or_else(|| format!("field `{field}`: expected a tag document"))?;
    map.iter()
        .map(|(k, v)| {
            v.as_str()
                .map(|v| (k.clone(), v.to_string()))
                .ok_or_else(|| format!("field `{field}.{k}`: expected a string"))
        })
        .collect()
}

fn address(server: &Value, field: &str) -> Result<ServerAddress, String> {
    let text = server
        .get("address")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("field `{field}.address` missing"))?;
    ServerAddress::parse(text).map_err(|e| format!("field `{field}.address`: {e}"))
}

fn server_type(name: &str) -> Option<ServerType> {
    [
        ServerType::Standalone,
        ServerType::Mongos,
        ServerType::RsPrimary,
        ServerType::RsSecondary,
        ServerType::RsArbiter,
        ServerType::RsOther,
        ServerType::RsGhost,
        ServerType::LoadBalancer,
        ServerType::Unknown,
        ServerType::PossiblePrimary,
    ]
    .into_iter()
    .find(|t| t.spec_name() == name)
}

fn topology_type(name: &str) -> Option<TopologyType> {
    [
        TopologyType::Single,
        TopologyType::Unknown,
        TopologyType::Sharded,
        TopologyType::ReplicaSetNoPrimary,
        TopologyType::ReplicaSetWithPrimary,
        TopologyType::LoadBalanced,
    ]
    .into_iter()
    .find(|t| t.spec_name() == name)
}

/// One server of a `topology_description`. `lastUpdateTime` (milliseconds on the client's
/// clock) is placed relative to `epoch`; only differences between such times matter.
fn server_description(
    server: &Value,
    field: &str,
    epoch: Instant,
) -> Result<ServerDescription, String> {
    let mut description = ServerDescription::unknown(address(server, field)?);
    let type_name = server.get("type").and_then(Value::as_str).unwrap_or("");
    description.server_type = server_type(type_name)
        .ok_or_else(|| format!("field `{field}.type`: unknown server type {type_name:?}"))?;
    if let Some(rtt) = server.get("avg_rtt_ms") {
        description.round_trip_time = Some(millis(rtt, &format!("{field}.avg_rtt_ms"))?);
    }
    if let Some(tags) = server.get("tags") {
        description.tags = tag_set(tags, &format!("{field}.tags"))?;
    }
    if let Some(t) = server.get("lastUpdateTime") {
        description.last_update_time = Some(epoch + millis(t, &format!("{field}.lastUpdateTime"))?);
    }
    if let Some(date) = server.get("lastWrite").and_then(|w| w.get("lastWriteDate")) {
        let ms = int64(date)
            .ok_or_else(|| format!("field `{field}.lastWrite.lastWriteDate`: not an integer"))?;
        description.last_write_date = Some(bson::DateTime::from_millis(ms));
    }
    if description.server_type.is_known() {
        // The files omit wire versions unless they matter; a known server speaks ours.
        description.max_wire_version = server
            .get("maxWireVersion")
            .and_then(Value::as_i64)
            .and_then(|v| i32::try_from(v).ok())
            .unwrap_or(MAX_WIRE_VERSION);
    }
    Ok(description)
}

fn topology(json: &Value, epoch: Instant) -> Result<TopologyDescription, String> {
    let td = json
        .get("topology_description")
        .ok_or("field `topology_description` missing")?;
    let type_name = td.get("type").and_then(Value::as_str).unwrap_or("");
    let kind = topology_type(type_name).ok_or_else(|| {
        format!("field `topology_description.type`: unknown topology type {type_name:?}")
    })?;
    let mut servers = BTreeMap::new();
    for (i, s) in td
        .get("servers")
        .and_then(Value::as_array)
        .ok_or("field `topology_description.servers` missing")?
        .iter()
        .enumerate()
    {
        let description = server_description(s, &format!("servers[{i}]"), epoch)?;
        servers.insert(
            description.address.clone(),
            std::sync::Arc::new(description),
        );
    }
    // The initial description needs a seed; the file's servers then replace the seed list.
    let mut config = TopologyConfig::new([ServerAddress::tcp("seed.invalid", 27017)]);
    if let Some(hb) = json.get("heartbeatFrequencyMS") {
        config.heartbeat_frequency = millis(hb, "heartbeatFrequencyMS")?;
    }
    let mut description =
        TopologyDescription::new(&config).map_err(|e| format!("topology config: {e}"))?;
    description.topology_type = kind;
    description.servers = servers;
    description.refresh_derived_fields();
    Ok(description)
}

/// The test's read preference: `Err` for malformed JSON, `Ok(Err(..))` for a combination
/// the specification forbids whatever the topology (mode primary with tags or a staleness
/// bound).
fn read_preference(json: &Value) -> Result<Result<ReadPreference, ReadPreferenceError>, String> {
    let Some(rp) = json.get("read_preference") else {
        return Ok(Ok(ReadPreference::primary()));
    };
    let mode = match rp.get("mode").and_then(Value::as_str) {
        None => ReadPreferenceMode::Primary,
        Some(name) => ReadPreferenceMode::parse(name)
            .ok_or_else(|| format!("field `read_preference.mode`: unknown mode {name:?}"))?,
    };
    let mut tag_sets = Vec::new();
    if let Some(sets) = rp.get("tag_sets").and_then(Value::as_array) {
        tag_sets = sets
            .iter()
            .enumerate()
            .map(|(i, t)| tag_set(t, &format!("read_preference.tag_sets[{i}]")))
            .collect::<Result<_, _>>()?;
    }
    // -1 (or any negative) means "no maximum".
    let max_staleness = rp
        .get("maxStalenessSeconds")
        .and_then(Value::as_i64)
        .and_then(|ms| u64::try_from(ms).ok())
        .map(Duration::from_secs);
    Ok(ReadPreference::from_parts(mode, tag_sets, max_staleness))
}

fn addresses(json: &Value, field: &str) -> Result<Vec<ServerAddress>, String> {
    let Some(list) = json.get(field) else {
        return Ok(Vec::new());
    };
    let mut out = list
        .as_array()
        .ok_or_else(|| format!("field `{field}`: expected a list"))?
        .iter()
        .enumerate()
        .map(|(i, s)| address(s, &format!("{field}[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    out.sort();
    Ok(out)
}

fn sorted_addresses(servers: &[&ServerDescription]) -> Vec<ServerAddress> {
    let mut out: Vec<_> = servers.iter().map(|s| s.address.clone()).collect();
    out.sort();
    out
}

fn show(list: &[ServerAddress]) -> String {
    let names: Vec<String> = list.iter().map(ToString::to_string).collect();
    format!("[{}]", names.join(", "))
}

/// A `server_selection` or `max-staleness` file: suitable servers, latency window, and a full
/// selection whose result must lie in the window (or an error when `error: true`).
fn check_logic(json: &Value) -> Result<(), String> {
    let epoch = Instant::now();
    let topology = topology(json, epoch)?;
    let criteria = match json.get("operation").and_then(Value::as_str) {
        Some("write") => SelectionCriteria::Write,
        Some("read") | None => match read_preference(json)? {
            Ok(preference) => SelectionCriteria::ReadPreference(preference),
            // Invalid whatever the topology: the test passes if it expects an error.
            Err(_) if json.get("error").and_then(Value::as_bool) == Some(true) => {
                return Ok(());
            }
            Err(invalid) => return Err(format!("field `error`: no error expected, got {invalid}")),
        },
        Some(other) => return Err(format!("field `operation`: unknown value {other:?}")),
    };
    let deprioritized = addresses(json, "deprioritized_servers")?;
    let mut rng = StdRng::seed_from_u64(RNG_SEED);
    let verdict = select(&topology, &criteria, &deprioritized, |_| 0, &mut rng);
    if json.get("error").and_then(Value::as_bool) == Some(true) {
        return match verdict {
            Selection::Invalid(_) => Ok(()),
            other => Err(format!("field `error`: expected an error, got {other:?}")),
        };
    }
    let found = candidates(&topology, &criteria, &deprioritized)
        .map_err(|e| format!("field `error`: no error expected, got {e}"))?;
    let expected_suitable = addresses(json, "suitable_servers")?;
    let got = sorted_addresses(&found.suitable);
    if got != expected_suitable {
        return Err(format!(
            "field `suitable_servers`: expected {}, got {}",
            show(&expected_suitable),
            show(&got)
        ));
    }
    let expected_window = addresses(json, "in_latency_window")?;
    let got = sorted_addresses(&found.in_window);
    if got != expected_window {
        return Err(format!(
            "field `in_latency_window`: expected {}, got {}",
            show(&expected_window),
            show(&got)
        ));
    }
    match verdict {
        Selection::Selected(a) if expected_window.contains(&a) => Ok(()),
        Selection::NoneSuitable { .. } if expected_window.is_empty() => Ok(()),
        other => Err(format!(
            "select(): expected one of {}, got {other:?}",
            show(&expected_window)
        )),
    }
}

fn run_logic_file(file: &Path, report: &mut SuiteReport) {
    let Some(json) = parse_or_fail(file, report) else {
        return;
    };
    let outcome = match check_logic(&json) {
        Ok(()) => Outcome::Pass,
        Err(why) => Outcome::Fail(why),
    };
    report.record(file, &case_name(file, &json), outcome);
}

fn check_rtt(json: &Value) -> Result<(), String> {
    let mut estimator = match json.get("avg_rtt_ms") {
        Some(Value::String(s)) if s == "NULL" => RoundTripTimeEstimator::new(),
        Some(v) => RoundTripTimeEstimator::with_average(millis(v, "avg_rtt_ms")?),
        None => return Err("field `avg_rtt_ms` missing".into()),
    };
    let sample = millis(json.get("new_rtt_ms").unwrap_or(&Value::Null), "new_rtt_ms")?;
    let expected = millis(
        json.get("new_avg_rtt").unwrap_or(&Value::Null),
        "new_avg_rtt",
    )?;
    let got = estimator.add_sample(sample);
    // The expected values are decimal fractions of a millisecond; allow float rounding only.
    if got.abs_diff(expected) > Duration::from_nanos(10) {
        return Err(format!(
            "field `new_avg_rtt`: expected {expected:?}, got {got:?}"
        ));
    }
    Ok(())
}

fn run_rtt_file(file: &Path, report: &mut SuiteReport) {
    let Some(json) = parse_or_fail(file, report) else {
        return;
    };
    let outcome = match check_rtt(&json) {
        Ok(()) => Outcome::Pass,
        Err(why) => Outcome::Fail(why),
    };
    report.record(file, &case_name(file, &json), outcome);
}

/// An `in_window` file: `iterations` nearest-read selections with the mocked operation counts,
/// whose frequencies must lie within `outcome.tolerance` of the expected ones (exactly, for 0
/// and 1).
fn check_in_window(json: &Value) -> Result<(), String> {
    let topology = topology(json, Instant::now())?;
    let mut counts: HashMap<ServerAddress, u32> = HashMap::new();
    for (i, state) in json
        .get("mocked_topology_state")
        .and_then(Value::as_array)
        .ok_or("field `mocked_topology_state` missing")?
        .iter()
        .enumerate()
    {
        let field = format!("mocked_topology_state[{i}]");
        let count = state
            .get("operation_count")
            .and_then(Value::as_u64)
            .and_then(|c| u32::try_from(c).ok())
            .ok_or_else(|| format!("field `{field}.operation_count` invalid"))?;
        counts.insert(address(state, &field)?, count);
    }
    let iterations = json
        .get("iterations")
        .and_then(Value::as_u64)
        .ok_or("field `iterations` missing")?;
    let outcome = json.get("outcome").ok_or("field `outcome` missing")?;
    let tolerance = outcome
        .get("tolerance")
        .and_then(Value::as_f64)
        .ok_or("field `outcome.tolerance` missing")?;
    let expected = outcome
        .get("expected_frequencies")
        .and_then(Value::as_object)
        .ok_or("field `outcome.expected_frequencies` missing")?;

    let criteria =
        SelectionCriteria::ReadPreference(ReadPreference::with_mode(ReadPreferenceMode::Nearest));
    let mut rng = StdRng::seed_from_u64(RNG_SEED);
    let mut tally: HashMap<ServerAddress, u64> = HashMap::new();
    for _ in 0..iterations {
        let operation_count = |a: &ServerAddress| counts.get(a).copied().unwrap_or(0);
        match select(&topology, &criteria, &[], operation_count, &mut rng) {
            Selection::Selected(a) => *tally.entry(a).or_default() += 1,
            other => return Err(format!("select(): expected a server, got {other:?}")),
        }
    }
    for (name, want) in expected {
        let field = format!("outcome.expected_frequencies.{name}");
        let want = want
            .as_f64()
            .ok_or_else(|| format!("field `{field}`: not a number"))?;
        let addr = ServerAddress::parse(name).map_err(|e| format!("field `{field}`: {e}"))?;
        let got = tally.get(&addr).copied().unwrap_or(0) as f64 / iterations as f64;
        let exact = want == 0.0 || want == 1.0;
        let ok = if exact {
            got == want
        } else {
            (got - want).abs() <= tolerance
        };
        if !ok {
            return Err(format!(
                "field `{field}`: expected {want} (tolerance {}), got {got:.4}",
                if exact { 0.0 } else { tolerance }
            ));
        }
    }
    Ok(())
}

fn run_in_window_file(file: &Path, report: &mut SuiteReport) {
    let Some(json) = parse_or_fail(file, report) else {
        return;
    };
    let outcome = match check_in_window(&json) {
        Ok(()) => Outcome::Pass,
        Err(why) => Outcome::Fail(why),
    };
    report.record(file, &case_name(file, &json), outcome);
}
