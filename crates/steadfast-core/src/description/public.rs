//! The accessors, `Display` and serde shapes through which applications read descriptions
//! (as the official driver's `event::sdam::TopologyDescription` offers them), and the serde
//! helpers for addresses and server descriptions that steadfast's monitoring events share.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use bson::oid::ObjectId;
use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::server::{ServerDescription, ServerType};
use super::topology::{TopologyDescription, TopologyType};
use crate::address::ServerAddress;
use crate::selection::{ReadPreference, SelectionCriteria, ServerInfo, candidates};

impl TopologyDescription {
    /// The kind of deployment this description is of.
    pub fn topology_type(&self) -> TopologyType {
        self.topology_type
    }

    /// The replica set's name, when known (configured or reported by a member).
    pub fn set_name(&self) -> Option<&String> {
        self.set_name.as_ref()
    }

    /// The largest `setVersion` a primary has reported. Servers keep it as a 32-bit integer;
    /// a value outside that range (which no server sends) reads as `None`.
    pub fn max_set_version(&self) -> Option<i32> {
        self.max_set_version.and_then(|v| i32::try_from(v).ok())
    }

    /// The largest `electionId` a primary has reported.
    pub fn max_election_id(&self) -> Option<ObjectId> {
        self.max_election_id
    }

    /// Why the deployment cannot be used, when a server's wire versions do not overlap the
    /// driver's.
    pub fn compatibility_error(&self) -> Option<&String> {
        self.compatibility_error.as_ref()
    }

    /// Every server of the topology, by address.
    pub fn servers(&self) -> HashMap<&ServerAddress, ServerInfo<'_>> {
        self.servers
            .iter()
            .map(|(address, server)| (address, ServerInfo::new(server)))
            .collect()
    }

    /// Whether server selection for `selection_criteria` (the primary when `None`) would find
    /// a server right now, latency window included.
    pub fn has_readable_server(&self, selection_criteria: Option<SelectionCriteria>) -> bool {
        let criteria = selection_criteria
            .unwrap_or_else(|| SelectionCriteria::ReadPreference(ReadPreference::primary()));
        candidates(self, &criteria, &[]).is_ok_and(|found| !found.in_window.is_empty())
    }

    /// Whether a write could be sent now: a replica set needs a known primary, a single
    /// server or sharded cluster a server that has answered a check, and a load balancer is
    /// always writable.
    pub fn has_writable_server(&self) -> bool {
        match self.topology_type {
            TopologyType::Unknown | TopologyType::ReplicaSetNoPrimary => false,
            TopologyType::Single | TopologyType::Sharded => self.has_known_servers(),
            TopologyType::ReplicaSetWithPrimary | TopologyType::LoadBalanced => true,
        }
    }
}

/// One line: the type, the replica-set facts that are known, then each server's address and
/// type, e.g. `{ Type: ReplicaSetWithPrimary, Set Name: rs0, Servers: [ { Address: a:27017,
/// Type: RSPrimary } ] }`.
impl fmt::Display for TopologyDescription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{ Type: {}", self.topology_type)?;
        if let Some(name) = &self.set_name {
            write!(f, ", Set Name: {name}")?;
        }
        if let Some(version) = self.max_set_version {
            write!(f, ", Max Set Version: {version}")?;
        }
        if let Some(id) = self.max_election_id {
            write!(f, ", Max Election ID: {id}")?;
        }
        if let Some(error) = &self.compatibility_error {
            write!(f, ", Compatibility Error: {error}")?;
        }
        if !self.servers.is_empty() {
            f.write_str(", Servers: [ ")?;
            for (i, server) in self.servers.values().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write_server(f, server)?;
            }
            f.write_str(" ]")?;
        }
        f.write_str(" }")
    }
}

fn write_server(f: &mut fmt::Formatter<'_>, server: &ServerDescription) -> fmt::Result {
    write!(
        f,
        "{{ Address: {}, Type: {}",
        server.address, server.server_type
    )?;
    match &server.error {
        Some(error) => write!(f, ", Error: {error}")?,
        None => {
            if let Some(rtt) = server.round_trip_time {
                write!(f, ", Average RTT: {rtt:?}")?;
            }
            if let Some(name) = &server.set_name {
                write!(f, ", Replica Set Name: {name}")?;
            }
        }
    }
    f.write_str(" }")
}

/// The official driver's field names (snake case): `topology_type`, `set_name`,
/// `max_set_version`, `max_election_id`, `compatibility_error`, `logical_session_timeout`
/// (serde's `Duration` shape) and `servers`, a map from each address (as `host:port`, since
/// serialization formats need string keys) to the server's description (see
/// [`SerializeServerDescription`]).
impl Serialize for TopologyDescription {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut state = serializer.serialize_struct("TopologyDescription", 7)?;
        state.serialize_field("topology_type", &self.topology_type)?;
        state.serialize_field("set_name", &self.set_name)?;
        state.serialize_field("max_set_version", &self.max_set_version())?;
        state.serialize_field("max_election_id", &self.max_election_id)?;
        state.serialize_field("compatibility_error", &self.compatibility_error)?;
        let session_timeout = self
            .logical_session_timeout_minutes
            .and_then(|m| u64::try_from(m).ok())
            .map(|m| Duration::from_secs(m.saturating_mul(60)));
        state.serialize_field("logical_session_timeout", &session_timeout)?;
        state.serialize_field("servers", &ServersByAddress(self))?;
        state.end()
    }
}

struct ServersByAddress<'a>(&'a TopologyDescription);

impl Serialize for ServersByAddress<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.servers.len()))?;
        for (address, server) in &self.0.servers {
            map.serialize_entry(&address.to_string(), &SerializeServerDescription(server))?;
        }
        map.end()
    }
}

/// Serializes a [`ServerDescription`] in the official driver's shape: `address` (see
/// [`serialize_address`]), `server_type` (`"RSPrimary"`, ...), `average_round_trip_time`
/// (serde's `Duration` shape) and `reply`: `{"Err": message}` after a failed check,
/// `{"Ok": null}` before the first one, else `{"Ok": {"command_response": {...}}}` holding the
/// hello fields the description keeps (camel case, as the server sent them).
#[doc(hidden)]
pub struct SerializeServerDescription<'a>(pub &'a ServerDescription);

impl Serialize for SerializeServerDescription<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let server = self.0;
        let mut state = serializer.serialize_struct("ServerDescription", 4)?;
        state.serialize_field("address", &AddressShape(&server.address))?;
        state.serialize_field("server_type", server.server_type.spec_name())?;
        state.serialize_field("average_round_trip_time", &server.round_trip_time)?;
        state.serialize_field("reply", &ReplyShape(server))?;
        state.end()
    }
}

struct ReplyShape<'a>(&'a ServerDescription);

impl Serialize for ReplyShape<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let server = self.0;
        let mut map = serializer.serialize_map(Some(1))?;
        match &server.error {
            Some(error) => map.serialize_entry("Err", error)?,
            None if server.server_type == ServerType::Unknown => {
                map.serialize_entry("Ok", &Option::<()>::None)?;
            }
            None => map.serialize_entry(
                "Ok",
                &bson::doc! { "command_response": hello_fields(server) },
            )?,
        }
        map.end()
    }
}

/// The hello fields a description keeps, named as the server names them; absent ones left out.
fn hello_fields(server: &ServerDescription) -> bson::Document {
    let addresses = |set: &std::collections::BTreeSet<ServerAddress>| {
        set.iter().map(ToString::to_string).collect::<Vec<_>>()
    };
    let mut doc = bson::doc! {
        "minWireVersion": server.min_wire_version,
        "maxWireVersion": server.max_wire_version,
    };
    let optional: [(&str, Option<bson::Bson>); 9] = [
        ("setName", server.set_name.clone().map(Into::into)),
        ("setVersion", server.set_version.map(Into::into)),
        ("electionId", server.election_id.map(Into::into)),
        (
            "primary",
            server.primary.as_ref().map(|a| a.to_string().into()),
        ),
        ("me", server.me.as_ref().map(|a| a.to_string().into())),
        ("hosts", non_empty(addresses(&server.hosts))),
        ("passives", non_empty(addresses(&server.passives))),
        ("arbiters", non_empty(addresses(&server.arbiters))),
        (
            "logicalSessionTimeoutMinutes",
            server.logical_session_timeout_minutes.map(Into::into),
        ),
    ];
    for (key, value) in optional {
        if let Some(value) = value {
            doc.insert(key, value);
        }
    }
    if !server.tags.is_empty() {
        let tags: bson::Document = server
            .tags
            .iter()
            .map(|(k, v)| (k.clone(), bson::Bson::from(v.as_str())))
            .collect();
        doc.insert("tags", tags);
    }
    if let Some(id) = server.connection_id {
        doc.insert("connectionId", id);
    }
    doc
}

fn non_empty(values: Vec<String>) -> Option<bson::Bson> {
    (!values.is_empty()).then(|| values.into())
}

/// The official driver's address shape: `{"Tcp": {"host": h, "port": p}}` or
/// `{"Unix": {"path": p}}`.
struct AddressShape<'a>(&'a ServerAddress);

impl Serialize for AddressShape<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serialize_address(self.0, serializer)
    }
}

/// Serializes an address as the official driver does: `{"Tcp": {"host": h, "port": p}}` (the
/// port `null` when left out) or `{"Unix": {"path": p}}`. For `#[serde(serialize_with)]`.
///
/// # Errors
/// Whatever `serializer` reports.
#[doc(hidden)]
pub fn serialize_address<S: Serializer>(
    address: &ServerAddress,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    enum Shape<'a> {
        Tcp { host: &'a str, port: Option<u16> },
        Unix { path: &'a str },
    }
    match address {
        ServerAddress::Tcp { host, port } => Shape::Tcp { host, port: *port },
        ServerAddress::Unix { path } => Shape::Unix { path },
    }
    .serialize(serializer)
}

/// Reads an address as the official driver does: a `"host:port"` string (parsed as in a
/// connection string) or an object `{"host": h, "port": p}`. For `#[serde(deserialize_with)]`.
///
/// # Errors
/// When the value is neither, or the string is not a valid address.
#[doc(hidden)]
pub fn deserialize_address<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<ServerAddress, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Shape {
        Text(String),
        Parts { host: String, port: Option<u16> },
    }
    match Shape::deserialize(deserializer)? {
        Shape::Text(text) => ServerAddress::parse(&text).map_err(serde::de::Error::custom),
        Shape::Parts { host, .. } if host.ends_with(".sock") => {
            Ok(ServerAddress::Unix { path: host })
        }
        Shape::Parts { host, port } => Ok(ServerAddress::Tcp {
            host: host.to_ascii_lowercase(),
            port,
        }),
    }
}
