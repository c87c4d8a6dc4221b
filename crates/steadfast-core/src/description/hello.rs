//! Building a [`ServerDescription`] from a hello (or legacy hello) reply.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use bson::{Bson, Document};

use super::server::{
    DEFAULT_MAX_BSON_OBJECT_SIZE, DEFAULT_MAX_MESSAGE_SIZE_BYTES, DEFAULT_MAX_WRITE_BATCH_SIZE,
    ServerDescription, ServerType, TopologyVersion,
};
use crate::address::ServerAddress;
use crate::selection::TagSet;

/// Why a hello reply could not be read; it becomes the error of an Unknown description.
#[derive(Debug)]
struct MalformedHello(String);

impl ServerDescription {
    /// The description a successful check produces from the server's hello reply.
    ///
    /// `round_trip_time` is the caller's averaged RTT including this sample and
    /// `min_round_trip_time` the minimum over recent samples; `now` is the caller's monotonic
    /// time of the check. Host names in `me`, `hosts`, `passives`, `arbiters` and `primary`
    /// are lower-cased. A reply without `ok: 1`, or with a field of the wrong shape, yields an
    /// Unknown description carrying the reason as its error (and no RTT).
    pub fn from_hello(
        address: ServerAddress,
        reply: &Document,
        round_trip_time: Duration,
        min_round_trip_time: Duration,
        now: Instant,
    ) -> Self {
        match parse_hello(address.clone(), reply) {
            Ok(mut description) => {
                description.last_update_time = Some(now);
                if description.server_type.is_known() {
                    description.round_trip_time = Some(round_trip_time);
                    description.min_round_trip_time = Some(min_round_trip_time);
                }
                description
            }
            Err(MalformedHello(why)) => {
                let mut description = ServerDescription::from_error(address, why, None);
                description.last_update_time = Some(now);
                description
            }
        }
    }
}

fn parse_hello(
    address: ServerAddress,
    reply: &Document,
) -> Result<ServerDescription, MalformedHello> {
    let mut d = ServerDescription::unknown(address);
    // The topologyVersion is kept even on a failed reply: it still orders the information.
    d.topology_version = topology_version(reply)?;
    if !is_ok(reply) {
        let message = reply
            .get_str("errmsg")
            .unwrap_or("hello reply without ok: 1");
        d.error = Some(format!("hello failed: {message}"));
        return Ok(d);
    }

    d.min_wire_version = int_field(reply, "minWireVersion")?.map_or(0, saturate_i32);
    d.max_wire_version = int_field(reply, "maxWireVersion")?.map_or(0, saturate_i32);
    d.set_name = str_field(reply, "setName")?;
    d.set_version = int_field(reply, "setVersion")?;
    d.election_id = match reply.get("electionId") {
        None | Some(Bson::Null) => None,
        Some(Bson::ObjectId(id)) => Some(*id),
        Some(other) => return Err(wrong_type("electionId", other)),
    };
    d.me = address_field(reply, "me")?;
    d.primary = address_field(reply, "primary")?;
    d.hosts = address_list(reply, "hosts")?;
    d.passives = address_list(reply, "passives")?;
    d.arbiters = address_list(reply, "arbiters")?;
    d.tags = tags(reply)?;
    d.logical_session_timeout_minutes = int_field(reply, "logicalSessionTimeoutMinutes")?;
    d.hello_ok = bool_field(reply, "helloOk");
    d.iscryptd = bool_field(reply, "iscryptd");
    d.compressors = match reply.get("compression") {
        None | Some(Bson::Null) => Vec::new(),
        Some(Bson::Array(items)) => items
            .iter()
            .map(|b| match b {
                Bson::String(s) => Ok(s.clone()),
                other => Err(wrong_type("compression", other)),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(wrong_type("compression", other)),
    };
    d.service_id = match reply.get("serviceId") {
        None | Some(Bson::Null) => None,
        Some(Bson::ObjectId(id)) => Some(*id),
        Some(other) => return Err(wrong_type("serviceId", other)),
    };
    let limits = AdvertisedLimits {
        max_bson_object_size: int_field(reply, "maxBsonObjectSize")?,
        max_message_size_bytes: int_field(reply, "maxMessageSizeBytes")?,
        max_write_batch_size: int_field(reply, "maxWriteBatchSize")?,
    };
    limits.apply_to(&mut d);
    d.connection_id = int_field(reply, "connectionId")?;
    if let Some(last_write) = doc_field(reply, "lastWrite")? {
        d.last_write_date = match last_write.get("lastWriteDate") {
            None | Some(Bson::Null) => None,
            Some(Bson::DateTime(t)) => Some(*t),
            Some(other) => return Err(wrong_type("lastWrite.lastWriteDate", other)),
        };
        d.op_time = last_write.get("opTime").cloned();
    }
    d.server_type = server_type(reply, d.set_name.is_some());
    Ok(d)
}

/// Room a command may take beyond `maxBsonObjectSize` for its own fields (the CRUD
/// specification's 16 KiB allowance), so that a message can always carry the largest document.
const COMMAND_OVERHEAD: i64 = 16 * 1024;

/// The size limits a hello reply advertises, as sent. A server is trusted to lower them, never
/// to raise them past what MongoDB has ever used, and a zero or negative value is ignored: a
/// hostile or broken server must not make the driver accept 2 GiB frames or split a batch into
/// single statements forever.
struct AdvertisedLimits {
    max_bson_object_size: Option<i64>,
    max_message_size_bytes: Option<i64>,
    max_write_batch_size: Option<i64>,
}

impl AdvertisedLimits {
    fn apply_to(&self, d: &mut ServerDescription) {
        // A tiny document limit only makes the driver refuse documents: no floor needed.
        d.max_bson_object_size =
            clamp_limit(self.max_bson_object_size, DEFAULT_MAX_BSON_OBJECT_SIZE, 1);
        // A message must hold the largest document plus the command around it; the upper
        // bound is the wire crate's frame limit (MongoDB's 48 MB).
        d.max_message_size_bytes = clamp_limit(
            self.max_message_size_bytes,
            DEFAULT_MAX_MESSAGE_SIZE_BYTES,
            d.max_bson_object_size.saturating_add(COMMAND_OVERHEAD),
        );
        d.max_write_batch_size =
            clamp_limit(self.max_write_batch_size, DEFAULT_MAX_WRITE_BATCH_SIZE, 1);
    }
}

/// `advertised` kept within `floor..=default`; absent or non-positive means `default`.
/// `default` is MongoDB's own value for each limit, which no server has ever exceeded.
fn clamp_limit(advertised: Option<i64>, default: i64, floor: i64) -> i64 {
    match advertised {
        Some(value) if value > 0 => value.clamp(floor.min(default), default),
        _ => default,
    }
}

/// The type rules of SDAM "Parsing a hello response", in their precedence order.
fn server_type(reply: &Document, has_set_name: bool) -> ServerType {
    // Legacy hello says `ismaster`; hello says `isWritablePrimary`, which wins when present.
    let writable = match reply.get("isWritablePrimary") {
        Some(value) => truthy(value),
        None => bool_field(reply, "ismaster"),
    };
    if bool_field(reply, "isreplicaset") {
        ServerType::RsGhost
    } else if has_set_name {
        if bool_field(reply, "hidden") {
            ServerType::RsOther
        } else if writable {
            ServerType::RsPrimary
        } else if bool_field(reply, "secondary") {
            ServerType::RsSecondary
        } else if bool_field(reply, "arbiterOnly") {
            ServerType::RsArbiter
        } else {
            ServerType::RsOther
        }
    } else if reply.get_str("msg").is_ok_and(|m| m == "isdbgrid") {
        ServerType::Mongos
    } else {
        ServerType::Standalone
    }
}

/// `ok` may arrive as a double, an integer or a boolean.
fn is_ok(reply: &Document) -> bool {
    reply.get("ok").is_some_and(truthy)
}

fn truthy(value: &Bson) -> bool {
    match value {
        Bson::Boolean(b) => *b,
        Bson::Int32(n) => *n != 0,
        Bson::Int64(n) => *n != 0,
        Bson::Double(n) => *n != 0.0,
        _ => false,
    }
}

fn bool_field(reply: &Document, key: &str) -> bool {
    reply.get(key).is_some_and(truthy)
}

fn wrong_type(key: &str, value: &Bson) -> MalformedHello {
    MalformedHello(format!(
        "malformed hello reply: field {key} has unexpected type {:?}",
        value.element_type()
    ))
}

fn saturate_i32(n: i64) -> i32 {
    i32::try_from(n).unwrap_or(if n < 0 { i32::MIN } else { i32::MAX })
}

/// An integer field that servers send as int32, int64 or (rarely) an integral double.
fn int_field(reply: &Document, key: &str) -> Result<Option<i64>, MalformedHello> {
    match reply.get(key) {
        None | Some(Bson::Null) => Ok(None),
        Some(Bson::Int32(n)) => Ok(Some(i64::from(*n))),
        Some(Bson::Int64(n)) => Ok(Some(*n)),
        // The range check makes the cast exact.
        Some(Bson::Double(f)) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(Some(*f as i64)),
        Some(other) => Err(wrong_type(key, other)),
    }
}

fn str_field(reply: &Document, key: &str) -> Result<Option<String>, MalformedHello> {
    match reply.get(key) {
        None | Some(Bson::Null) => Ok(None),
        Some(Bson::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(wrong_type(key, other)),
    }
}

fn doc_field<'a>(reply: &'a Document, key: &str) -> Result<Option<&'a Document>, MalformedHello> {
    match reply.get(key) {
        None | Some(Bson::Null) => Ok(None),
        Some(Bson::Document(d)) => Ok(Some(d)),
        Some(other) => Err(wrong_type(key, other)),
    }
}

fn parse_address(key: &str, text: &str) -> Result<ServerAddress, MalformedHello> {
    ServerAddress::parse(text)
        .map_err(|e| MalformedHello(format!("malformed hello reply: field {key}: {e}")))
}

fn address_field(reply: &Document, key: &str) -> Result<Option<ServerAddress>, MalformedHello> {
    str_field(reply, key)?
        .map(|text| parse_address(key, &text))
        .transpose()
}

fn address_list(reply: &Document, key: &str) -> Result<BTreeSet<ServerAddress>, MalformedHello> {
    match reply.get(key) {
        None | Some(Bson::Null) => Ok(BTreeSet::new()),
        Some(Bson::Array(items)) => items
            .iter()
            .map(|item| match item {
                Bson::String(text) => parse_address(key, text),
                other => Err(wrong_type(key, other)),
            })
            .collect(),
        Some(other) => Err(wrong_type(key, other)),
    }
}

fn tags(reply: &Document) -> Result<TagSet, MalformedHello> {
    let Some(tags) = doc_field(reply, "tags")? else {
        return Ok(TagSet::new());
    };
    tags.iter()
        .map(|(k, v)| match v {
            Bson::String(s) => Ok((k.clone(), s.clone())),
            other => Err(wrong_type("tags", other)),
        })
        .collect()
}

fn topology_version(reply: &Document) -> Result<Option<TopologyVersion>, MalformedHello> {
    let Some(tv) = doc_field(reply, "topologyVersion")? else {
        return Ok(None);
    };
    let process_id = match tv.get("processId") {
        Some(Bson::ObjectId(id)) => *id,
        Some(other) => return Err(wrong_type("topologyVersion.processId", other)),
        None => {
            return Err(MalformedHello(
                "malformed hello reply: topologyVersion without processId".into(),
            ));
        }
    };
    let counter = int_field(tv, "counter")?.ok_or_else(|| {
        MalformedHello("malformed hello reply: topologyVersion without counter".into())
    })?;
    Ok(Some(TopologyVersion {
        process_id,
        counter,
    }))
}

/// Reads a `topologyVersion` subdocument from a server reply (hello or a State Change Error),
/// or `None` when it is absent or malformed: a malformed version orders nothing.
pub fn topology_version_of(reply: &Document) -> Option<TopologyVersion> {
    topology_version(reply).ok().flatten()
}
