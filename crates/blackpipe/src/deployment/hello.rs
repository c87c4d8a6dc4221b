//! Building hello / legacy hello replies exactly as mongod and mongos shape them for each role,
//! and validating the awaitable-hello arguments.

use bson::{Bson, DateTime, Document, Timestamp, doc};

use super::model::{DeploymentKind, Health, NodeIndex, Role, Topology, TopologyVersion};
use blackpipe_store::code;

/// `maxBsonObjectSize` of mongod 8.0.
pub const MAX_BSON_OBJECT_SIZE: i32 = 16 * 1024 * 1024;
/// `maxMessageSizeBytes` of mongod 8.0.
pub const MAX_MESSAGE_SIZE_BYTES: i32 = 48_000_000;
pub use blackpipe_store::SERVER_VERSION;
/// `maxWriteBatchSize` of mongod 8.0.
pub const MAX_WRITE_BATCH_SIZE: i32 = 100_000;
/// `logicalSessionTimeoutMinutes` (mongod's default).
pub const LOGICAL_SESSION_TIMEOUT_MINUTES: i32 = 30;
/// `minWireVersion`.
pub const MIN_WIRE_VERSION: i32 = 0;
/// `maxWireVersion` of MongoDB 8.0.
pub const MAX_WIRE_VERSION: i32 = 25;

/// The optime a node reports in `lastWrite` (and the term it was written in).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpTime {
    /// The oplog timestamp.
    pub ts: Timestamp,
    /// The term it was written in.
    pub term: i64,
    /// Its wall-clock time.
    pub wall: DateTime,
}

impl OpTime {
    fn to_document(self) -> Document {
        doc! { "ts": self.ts, "t": self.term }
    }
}

/// Everything besides the topology that goes into one hello reply.
#[derive(Debug, Clone)]
pub struct HelloFacts {
    /// The command was `isMaster`/`ismaster` (the reply says `ismaster`) rather than `hello`.
    pub legacy: bool,
    /// The request carried `helloOk: true` (echoed back).
    pub hello_ok: bool,
    /// The id of the connection, as mongod numbers them.
    pub connection_id: i64,
    /// `localTime`.
    pub local_time: DateTime,
    /// What this node has replicated (replica set data-bearing members only).
    pub last_write: Option<OpTime>,
    /// What a majority has replicated.
    pub majority_write: Option<OpTime>,
}

/// Builds the hello reply `node` sends. Replica set members and routers append `$clusterTime`
/// and `operationTime` separately (see [`append_cluster_time`]), as they do to every reply.
pub fn hello_reply(topology: &Topology, node: NodeIndex, facts: &HelloFacts) -> Document {
    let Some(me) = topology.node(node) else {
        return doc! { "ok": 0.0, "errmsg": "unknown node", "code": code::UNKNOWN_ERROR, "codeName": "UnknownError" };
    };
    let writable_key = if facts.legacy {
        "ismaster"
    } else {
        "isWritablePrimary"
    };
    let mut reply = Document::new();
    match topology.kind() {
        DeploymentKind::Standalone => {
            reply.insert(writable_key, true);
            reply.insert("topologyVersion", version_document(me.topology_version()));
        }
        DeploymentKind::Sharded => {
            reply.insert(writable_key, true);
            reply.insert("msg", "isdbgrid");
            reply.insert("topologyVersion", version_document(me.topology_version()));
        }
        DeploymentKind::ReplicaSet if me.role() == Role::Removed => {
            reply.insert("topologyVersion", version_document(me.topology_version()));
            reply.insert(writable_key, false);
            reply.insert("secondary", false);
            reply.insert("info", "Does not have a valid replica set config");
            reply.insert("isreplicaset", true);
        }
        DeploymentKind::ReplicaSet => replica_set_fields(topology, node, facts, &mut reply),
    }
    reply.insert("maxBsonObjectSize", MAX_BSON_OBJECT_SIZE);
    reply.insert("maxMessageSizeBytes", MAX_MESSAGE_SIZE_BYTES);
    reply.insert("maxWriteBatchSize", MAX_WRITE_BATCH_SIZE);
    reply.insert("localTime", facts.local_time);
    reply.insert(
        "logicalSessionTimeoutMinutes",
        LOGICAL_SESSION_TIMEOUT_MINUTES,
    );
    reply.insert("connectionId", facts.connection_id);
    reply.insert("minWireVersion", MIN_WIRE_VERSION);
    reply.insert("maxWireVersion", MAX_WIRE_VERSION);
    if topology.kind() != DeploymentKind::Sharded {
        reply.insert("readOnly", false);
    }
    if facts.hello_ok {
        reply.insert("helloOk", true);
    }
    reply.insert("ok", 1.0);
    reply
}

fn replica_set_fields(
    topology: &Topology,
    node: NodeIndex,
    facts: &HelloFacts,
    reply: &mut Document,
) {
    let Some(me) = topology.node(node) else {
        return;
    };
    let mut hosts = Vec::new();
    let mut passives = Vec::new();
    let mut arbiters = Vec::new();
    for member in topology.nodes() {
        let options = member.options();
        // Hidden and removed members are in no list; arbiters in `arbiters`; priority-0
        // members in `passives`; everyone else in `hosts`.
        if member.role() == Role::Removed || options.hidden {
            continue;
        }
        let host = Bson::String(member.host().to_owned());
        if options.arbiter_only {
            arbiters.push(host);
        } else if options.priority > 0.0 {
            hosts.push(host);
        } else {
            passives.push(host);
        }
    }
    reply.insert("topologyVersion", version_document(me.topology_version()));
    reply.insert("hosts", hosts);
    if !passives.is_empty() {
        reply.insert("passives", passives);
    }
    if !arbiters.is_empty() {
        reply.insert("arbiters", arbiters);
    }
    reply.insert("setName", topology.set_name());
    reply.insert("setVersion", topology.set_version());
    let writable_key = if facts.legacy {
        "ismaster"
    } else {
        "isWritablePrimary"
    };
    let is_primary = me.role() == Role::Primary && me.health() == Health::Up;
    reply.insert(writable_key, is_primary);
    reply.insert("secondary", me.role() == Role::Secondary);
    if let Some(primary) = topology.primary().and_then(|index| topology.node(index)) {
        reply.insert("primary", primary.host());
    }
    let options = me.options();
    if options.arbiter_only {
        reply.insert("arbiterOnly", true);
    } else if options.priority == 0.0 {
        reply.insert("passive", true);
    }
    if options.hidden {
        reply.insert("hidden", true);
    }
    if !options.tags.is_empty() {
        let tags: Document = options
            .tags
            .iter()
            .map(|(key, value)| (key.clone(), Bson::String(value.clone())))
            .collect();
        reply.insert("tags", tags);
    }
    reply.insert("me", me.host());
    if is_primary {
        reply.insert("electionId", topology.election_id());
    }
    if !options.arbiter_only {
        if let Some(last) = facts.last_write {
            let majority = facts.majority_write.unwrap_or(last);
            reply.insert(
                "lastWrite",
                doc! {
                    "opTime": last.to_document(),
                    "lastWriteDate": last.wall,
                    "majorityOpTime": majority.to_document(),
                    "majorityWriteDate": majority.wall,
                },
            );
        }
    }
}

/// `{processId, counter}`.
pub fn version_document(version: TopologyVersion) -> Document {
    doc! { "processId": version.process_id, "counter": version.counter }
}

/// Appends `$clusterTime` (with the all-zero signature mongod sends when auth is off) and
/// `operationTime`, as replica set members and routers do to every reply.
pub fn append_cluster_time(reply: &mut Document, cluster_time: Timestamp) {
    reply.insert(
        "$clusterTime",
        doc! {
            "clusterTime": cluster_time,
            "signature": {
                "hash": bson::Binary {
                    subtype: bson::spec::BinarySubtype::Generic,
                    bytes: vec![0; 20],
                },
                "keyId": 0_i64,
            },
        },
    );
    reply.insert("operationTime", cluster_time);
}

/// What an awaitable hello asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AwaitRequest {
    /// The topologyVersion the client last saw.
    pub seen: TopologyVersion,
    /// `maxAwaitTimeMS`.
    pub max_await_ms: u64,
}

/// Why a hello's awaitable arguments are invalid (mongod's location codes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelloArgumentError {
    /// The error code.
    pub code: i32,
    /// The message.
    pub message: &'static str,
}

impl HelloArgumentError {
    /// The error as a command reply (`codeName` is `Location<code>`, as mongod names its
    /// location codes).
    pub fn to_reply(&self) -> Document {
        doc! {
            "ok": 0.0,
            "errmsg": self.message,
            "code": self.code,
            "codeName": format!("Location{}", self.code),
        }
    }
}

/// Reads `topologyVersion` + `maxAwaitTimeMS`: `Ok(None)` for a regular hello, `Ok(Some)` for
/// an awaitable one.
///
/// # Errors
///
/// One of the two fields without the other, a negative `maxAwaitTimeMS`, or a malformed
/// `topologyVersion`.
pub fn parse_await(command: &Document) -> Result<Option<AwaitRequest>, HelloArgumentError> {
    let version = command.get("topologyVersion");
    let max_await = command.get("maxAwaitTimeMS");
    let (version, max_await) = match (version, max_await) {
        (None, None) => return Ok(None),
        (Some(_), None) => {
            return Err(HelloArgumentError {
                code: code::TOPOLOGY_VERSION_WITHOUT_MAX_AWAIT,
                message: "A request with a 'topologyVersion' must include 'maxAwaitTimeMS'",
            });
        }
        (None, Some(_)) => {
            return Err(HelloArgumentError {
                code: code::MAX_AWAIT_WITHOUT_TOPOLOGY_VERSION,
                message: "A request with 'maxAwaitTimeMS' must include a 'topologyVersion'",
            });
        }
        (Some(version), Some(max_await)) => (version, max_await),
    };
    let max_await_ms = match max_await {
        Bson::Int32(ms) => i64::from(*ms),
        Bson::Int64(ms) => *ms,
        Bson::Double(ms) if ms.fract() == 0.0 && ms.abs() < 9.0e15 => {
            // Checked above: integral and well inside i64's exact range.
            #[allow(clippy::cast_possible_truncation)]
            let ms = *ms as i64;
            ms
        }
        _ => -1,
    };
    let max_await_ms = u64::try_from(max_await_ms).map_err(|_| HelloArgumentError {
        code: code::NEGATIVE_MAX_AWAIT,
        message: "maxAwaitTimeMS must be a non-negative integer",
    })?;
    let malformed = HelloArgumentError {
        code: code::MALFORMED_TOPOLOGY_VERSION,
        message: "topologyVersion must be a document with 'processId' and 'counter'",
    };
    let Bson::Document(version) = version else {
        return Err(malformed);
    };
    let process_id = version
        .get_object_id("processId")
        .map_err(|_| malformed.clone())?;
    let counter = match version.get("counter") {
        Some(Bson::Int64(counter)) => *counter,
        Some(Bson::Int32(counter)) => i64::from(*counter),
        _ => return Err(malformed),
    };
    Ok(Some(AwaitRequest {
        seen: TopologyVersion {
            process_id,
            counter,
        },
        max_await_ms,
    }))
}

/// What a node does with an awaitable hello given its current topologyVersion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AwaitDecision {
    /// Reply now (another process, or the counter already moved).
    ReplyNow,
    /// Wait for the counter to pass the client's, or for `maxAwaitTimeMS`.
    Wait,
    /// The client claims a counter from this process's future: mongod rejects it.
    FutureCounter,
}

/// Compares the client's topologyVersion with the node's.
pub fn await_decision(current: TopologyVersion, seen: TopologyVersion) -> AwaitDecision {
    if current.process_id != seen.process_id || current.counter > seen.counter {
        AwaitDecision::ReplyNow
    } else if current.counter == seen.counter {
        AwaitDecision::Wait
    } else {
        AwaitDecision::FutureCounter
    }
}

/// The error mongod sends for [`AwaitDecision::FutureCounter`].
pub fn future_counter_error() -> HelloArgumentError {
    HelloArgumentError {
        code: code::FUTURE_TOPOLOGY_VERSION,
        message: "Received a topology version with the same process ID and a higher counter \
                  than the current server topologyVersion",
    }
}
