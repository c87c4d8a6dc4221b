//! Comparing published SDAM events with a monitoring test's expected events.

use std::collections::BTreeSet;

use serde_json::Value;

use steadfast_core::ServerAddress;
use steadfast_core::description::{ServerDescription, TopologyDescription};
use steadfast_core::sdam::SdamEvent;

use crate::sdam_input::address;

/// Checks `actual` against the expected list, in order; `topologyId` is not compared (the
/// driver assigns it when publishing).
pub(crate) fn check_events(expected: &Value, actual: &[SdamEvent]) -> Result<(), String> {
    let expected = expected.as_array().ok_or("events: not an array")?;
    let names = || {
        actual
            .iter()
            .map(SdamEvent::spec_name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    if expected.len() != actual.len() {
        return Err(format!(
            "events: expected {} events, got {} [{}]",
            expected.len(),
            actual.len(),
            names()
        ));
    }
    for (index, (want, got)) in expected.iter().zip(actual).enumerate() {
        let (name, body) = want
            .as_object()
            .and_then(|o| o.iter().next())
            .ok_or_else(|| format!("events[{index}]: malformed expectation"))?;
        if name != got.spec_name() {
            return Err(format!(
                "events[{index}]: expected {name}, got {} [{}]",
                got.spec_name(),
                names()
            ));
        }
        check_event(body, got).map_err(|e| format!("events[{index}] {name}.{e}"))?;
    }
    Ok(())
}

fn check_event(expected: &Value, actual: &SdamEvent) -> Result<(), String> {
    if let (Some(text), Some(got)) = (expected.get("address"), actual.address()) {
        let want = address(text)?;
        if &want != got {
            return Err(format!("address: expected {want}, got {got}"));
        }
    }
    match actual {
        SdamEvent::ServerDescriptionChanged { previous, new, .. } => {
            check_server(&expected["previousDescription"], previous)
                .map_err(|e| format!("previousDescription.{e}"))?;
            check_server(&expected["newDescription"], new)
                .map_err(|e| format!("newDescription.{e}"))
        }
        SdamEvent::TopologyDescriptionChanged { previous, new } => {
            check_topology(&expected["previousDescription"], previous)
                .map_err(|e| format!("previousDescription.{e}"))?;
            check_topology(&expected["newDescription"], new)
                .map_err(|e| format!("newDescription.{e}"))
        }
        _ => Ok(()),
    }
}

fn check_topology(expected: &Value, actual: &TopologyDescription) -> Result<(), String> {
    if let Some(kind) = expected["topologyType"].as_str()
        && kind != actual.topology_type.spec_name()
    {
        return Err(format!(
            "topologyType: expected {kind}, got {}",
            actual.topology_type
        ));
    }
    if let Some(name) = expected.get("setName")
        && name.as_str() != actual.set_name.as_deref()
    {
        return Err(format!(
            "setName: expected {name}, got {:?}",
            actual.set_name
        ));
    }
    let Some(servers) = expected.get("servers").and_then(Value::as_array) else {
        return Ok(());
    };
    if servers.len() != actual.servers.len() {
        return Err(format!(
            "servers: expected {}, got {}",
            servers.len(),
            actual.servers.len()
        ));
    }
    for server in servers {
        let at = address(&server["address"])?;
        let description = actual
            .server(&at)
            .ok_or_else(|| format!("servers: {at} expected but missing"))?;
        check_server(server, description).map_err(|e| format!("servers[{at}].{e}"))?;
    }
    Ok(())
}

fn address_set(expected: &Value, field: &str) -> Result<Option<BTreeSet<ServerAddress>>, String> {
    let Some(list) = expected.get(field) else {
        return Ok(None);
    };
    let list = list
        .as_array()
        .ok_or_else(|| format!("{field}: not an array"))?;
    list.iter()
        .map(address)
        .collect::<Result<BTreeSet<_>, _>>()
        .map(Some)
}

fn check_server(expected: &Value, actual: &ServerDescription) -> Result<(), String> {
    if let Some(text) = expected.get("address") {
        let want = address(text)?;
        if want != actual.address {
            return Err(format!("address: expected {want}, got {}", actual.address));
        }
    }
    if let Some(kind) = expected["type"].as_str()
        && kind != actual.server_type.spec_name()
    {
        return Err(format!("type: expected {kind}, got {}", actual.server_type));
    }
    for (field, got) in [
        ("hosts", &actual.hosts),
        ("passives", &actual.passives),
        ("arbiters", &actual.arbiters),
    ] {
        if let Some(want) = address_set(expected, field)?
            && &want != got
        {
            return Err(format!("{field}: expected {want:?}, got {got:?}"));
        }
    }
    if let Some(primary) = expected.get("primary") {
        let want = if primary.is_null() {
            None
        } else {
            Some(address(primary)?)
        };
        if want != actual.primary {
            return Err(format!(
                "primary: expected {want:?}, got {:?}",
                actual.primary
            ));
        }
    }
    if let Some(name) = expected.get("setName")
        && name.as_str() != actual.set_name.as_deref()
    {
        return Err(format!(
            "setName: expected {name}, got {:?}",
            actual.set_name
        ));
    }
    Ok(())
}
