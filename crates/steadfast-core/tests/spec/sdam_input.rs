//! Reading SDAM test inputs: the connection string of a test file, extended JSON values as
//! BSON, addresses and topology versions.

use bson::oid::ObjectId;
use bson::{Bson, Document};
use serde_json::Value;

use steadfast_core::ServerAddress;
use steadfast_core::description::{TopologyConfig, TopologyVersion};

/// The topology settings of a test's `uri` (only what SDAM tests use: hosts, replicaSet,
/// directConnection, loadBalanced).
pub(crate) fn config_from_uri(uri: &str) -> Result<TopologyConfig, String> {
    let rest = uri
        .strip_prefix("mongodb://")
        .ok_or_else(|| format!("uri {uri:?}: not a mongodb:// connection string"))?;
    let (hosts, query) = match rest.split_once('/') {
        Some((hosts, tail)) => (hosts, tail.strip_prefix('?').unwrap_or(tail)),
        None => match rest.split_once('?') {
            Some((hosts, query)) => (hosts, query),
            None => (rest, ""),
        },
    };
    let seeds = hosts
        .split(',')
        .map(|h| ServerAddress::parse(h).map_err(|e| format!("uri {uri:?}: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let mut config = TopologyConfig::new(seeds);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("uri {uri:?}: option {pair:?} without a value"))?;
        let flag = || match value {
            "true" => Ok(true),
            "false" => Ok(false),
            other => Err(format!("uri {uri:?}: {key}={other} is not a boolean")),
        };
        match key.to_ascii_lowercase().as_str() {
            "replicaset" => config.replica_set = Some(value.to_string()),
            "directconnection" => config.direct_connection = Some(flag()?),
            "loadbalanced" => config.load_balanced = flag()?,
            other => return Err(format!("uri {uri:?}: option {other} not understood")),
        }
    }
    Ok(config)
}

/// Converts (relaxed or canonical) extended JSON into BSON: `$oid`, `$numberLong`,
/// `$numberInt`, `$numberDouble`, `$date` and plain values.
pub(crate) fn to_bson(value: &Value) -> Result<Bson, String> {
    Ok(match value {
        Value::Null => Bson::Null,
        Value::Bool(b) => Bson::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => match i32::try_from(i) {
                Ok(small) => Bson::Int32(small),
                Err(_) => Bson::Int64(i),
            },
            None => Bson::Double(n.as_f64().ok_or_else(|| format!("number {n}"))?),
        },
        Value::String(s) => Bson::String(s.clone()),
        Value::Array(items) => Bson::Array(items.iter().map(to_bson).collect::<Result<_, _>>()?),
        Value::Object(map) => {
            if map.len() == 1 {
                let (key, inner) = map.iter().next().ok_or("empty object")?;
                let text = inner.as_str();
                match (key.as_str(), text) {
                    ("$oid", Some(hex)) => {
                        return ObjectId::parse_str(hex)
                            .map(Bson::ObjectId)
                            .map_err(|e| format!("$oid {hex}: {e}"));
                    }
                    ("$numberLong", Some(digits)) => {
                        return digits
                            .parse()
                            .map(Bson::Int64)
                            .map_err(|e| format!("$numberLong {digits}: {e}"));
                    }
                    ("$numberInt", Some(digits)) => {
                        return digits
                            .parse()
                            .map(Bson::Int32)
                            .map_err(|e| format!("$numberInt {digits}: {e}"));
                    }
                    ("$numberDouble", Some(digits)) => {
                        return digits
                            .parse()
                            .map(Bson::Double)
                            .map_err(|e| format!("$numberDouble {digits}: {e}"));
                    }
                    ("$date", _) => {
                        let millis = match inner {
                            Value::Object(o) => o
                                .get("$numberLong")
                                .and_then(Value::as_str)
                                .and_then(|d| d.parse().ok()),
                            Value::Number(n) => n.as_i64(),
                            _ => None,
                        }
                        .ok_or_else(|| format!("$date {inner}"))?;
                        return Ok(Bson::DateTime(bson::DateTime::from_millis(millis)));
                    }
                    _ => {}
                }
            }
            let mut document = Document::new();
            for (key, inner) in map {
                document.insert(key.clone(), to_bson(inner)?);
            }
            Bson::Document(document)
        }
    })
}

/// Converts a JSON object into a BSON document.
pub(crate) fn to_document(value: &Value) -> Result<Document, String> {
    match to_bson(value)? {
        Bson::Document(d) => Ok(d),
        other => Err(format!("expected a document, got {other}")),
    }
}

/// Parses an address string of a test file.
pub(crate) fn address(text: &Value) -> Result<ServerAddress, String> {
    let text = text
        .as_str()
        .ok_or_else(|| format!("address {text} is not a string"))?;
    ServerAddress::parse(text).map_err(|e| format!("address {text:?}: {e}"))
}

/// An expected ObjectId (`{"$oid": ...}`) or null.
pub(crate) fn object_id(value: &Value) -> Result<Option<ObjectId>, String> {
    match to_bson(value)? {
        Bson::Null => Ok(None),
        Bson::ObjectId(id) => Ok(Some(id)),
        other => Err(format!("expected an ObjectId or null, got {other}")),
    }
}

/// An expected integer (plain or `$numberLong`) or null.
pub(crate) fn integer(value: &Value) -> Result<Option<i64>, String> {
    match to_bson(value)? {
        Bson::Null => Ok(None),
        Bson::Int32(n) => Ok(Some(i64::from(n))),
        Bson::Int64(n) => Ok(Some(n)),
        other => Err(format!("expected an integer or null, got {other}")),
    }
}

/// An expected topologyVersion document or null.
pub(crate) fn topology_version(value: &Value) -> Result<Option<TopologyVersion>, String> {
    if value.is_null() {
        return Ok(None);
    }
    let document = to_document(value)?;
    let process_id = document
        .get_object_id("processId")
        .map_err(|e| format!("topologyVersion.processId: {e}"))?;
    let counter = match document.get("counter") {
        Some(Bson::Int64(n)) => *n,
        Some(Bson::Int32(n)) => i64::from(*n),
        other => return Err(format!("topologyVersion.counter: {other:?}")),
    };
    Ok(Some(TopologyVersion {
        process_id,
        counter,
    }))
}
