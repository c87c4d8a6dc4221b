//! Parsing of the control commands: blackpipe's own `{blackpipe: <action>, ...}` admin
//! command and mongod's `replSetStepDown`, `replSetFreeze`, `replSetReconfig`; and the
//! documents `replSetGetConfig` / `replSetGetStatus` / `{blackpipe: "status"}` return.
//!
//! # The `blackpipe` admin command
//!
//! Sent to the `admin` database of any running node. `member` names the target: an integer
//! index (0-based, in configuration order) or a `"host:port"` string; when omitted the target
//! is the node receiving the command (for `stepDown`: the current primary). Durations are in
//! milliseconds.
//!
//! | command | effect |
//! |---|---|
//! | `{blackpipe: "status"}` | kind, set name, version, term, primary, each node's host, role, health and topologyVersion; in a replica set also the majority commit point and each member's applied and majority optimes, replication pause and cut links (`replication`) |
//! | `{blackpipe: "stepDown", member?, secs?: 60, force?: false}` | the primary steps down, frozen for `secs` |
//! | `{blackpipe: "elect", member, delayMS?: 0}` | `member` becomes primary in a new term, after `delayMS` (replies at once when delayed) |
//! | `{blackpipe: "freeze", member?, secs}` | keep a secondary out of automatic elections (`secs: 0` unfreezes) |
//! | `{blackpipe: "kill", member?}` | the node's port refuses connections; open connections drop |
//! | `{blackpipe: "restart", member}` | a killed node listens again as a new process (new `processId`) |
//! | `{blackpipe: "partition", member?}` | the node accepts connections but answers nothing: requests it receives are held, unprocessed |
//! | `{blackpipe: "partition", member, from: [members]}` | cut only the links between `member` and the listed members; clients still reach every node. A primary cut off from the majority keeps taking writes until the majority side elects another member; its writes that no majority received are then rolled back when it rejoins |
//! | `{blackpipe: "heal", member}` | ends a partition and restores the member's cut links: held requests on still-open connections are processed and answered in order, as TCP would deliver them late; a member that diverged rolls back |
//! | `{blackpipe: "pauseReplication", member?}` / `{blackpipe: "resumeReplication", member?}` | the member (omitted: every member) stops (resumes) applying the op log; clients still reach it |
//! | `{blackpipe: "rollbacks"}` | `rollbacks` (how many ran) and `writes`: every write a rollback discarded, oldest first, with `member`, `host`, `ns`, `op`, `_id`, `ts`, `wall` and the `document` as the member held it |
//! | `{blackpipe: "shutdown", member?, quiesceMS?: 0}` | answer `ShutdownInProgress` for `quiesceMS`, then die |
//! | `{blackpipe: "slow", member?, delayMS}` | delay every reply of the node (`0` restores); a command's `maxTimeMS` cuts the delay short with `MaxTimeMSExpired` |
//! | `{blackpipe: "slowCommands", member?, delayMS}` | each command the store runs (CRUD, cursors, indexes...) takes `delayMS` to execute, hello and handshakes staying fast (`0` restores); interrupted with `MaxTimeMSExpired` at the command's `maxTimeMS` |
//! | `{blackpipe: "overload", member?, mode?: "alwaysOn", baseBackoffMS?}` | reject commands with code 462 (`mode` as in `configureFailPoint`; `"off"` stops) |
//! | `{blackpipe: "capacity", member?, opsPerSec?, concurrent?, rejectCost?: 0.05, burstSecs?: 0.1, baseBackoffMS?}` | give the member (omitted: every data-bearing member; the reply lists them in `members`) a capacity: past `opsPerSec` or `concurrent` commands in progress it rejects with 462, each rejection costing `rejectCost` of an admitted command (see [`capacity`]); 0 or absent means no limit; counters restart from zero |
//! | `{blackpipe: "capacity", member?, off: true}` | remove the capacity (counters kept) |
//! | `{blackpipe: "capacityStats", member?}` | `admitted`, `rejected`, `rejectionCost` (totals over the members), and `members`: each one's counters, `inProgress` and `capacity` |
//! | `{blackpipe: "replicationLag", lagMS, member?}` | secondaries (or the one member) apply the op log this far behind the primary: their reads are this stale and `w: "majority"` waits for them |
//! | `{blackpipe: "transactionLifetime", secs}` | mongod's `transactionLifetimeLimitSeconds`: transactions started afterwards are aborted once open this long (default 60) |
//! | `{blackpipe: "autoFailover", enabled, electionDelayMS?}` | elect a successor automatically when the set loses its primary |
//! | `{blackpipe: "addMember", priority?, votes?, hidden?, arbiterOnly?}` | reconfigure with one more member on a new port |
//! | `{blackpipe: "lbBackend", backend, down}` | load-balanced mode: take router `backend` out of the load balancers (`down: true`: its balancer connections close, new ones skip it) or put it back (see [`load_balancer`](crate::deployment::load_balancer)) |
//!
//! Errors use mongod's codes where mongod has the same situation (e.g. 10107 for stepping down
//! a secondary), `BadValue` (2) for malformed commands, `CommandFailed` (125) otherwise.

use std::time::{Duration, Instant};

use bson::{Bson, Document, doc};

use crate::deployment::capacity::{self, CapacityChange};
use crate::deployment::control_error::ControlError;
use crate::deployment::hello::version_document;
use crate::deployment::model::{DeploymentKind, Health, MemberOptions, NodeIndex, Role, Topology};
use crate::failpoint::Overload;

/// A replica set config's members: each host with its options.
pub type MemberList = Vec<(String, MemberOptions)>;

/// Which node a control command targets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemberRef {
    /// The node that received the command.
    Receiver,
    /// By index.
    Index(NodeIndex),
    /// By `host:port`.
    Host(String),
}

impl MemberRef {
    /// Resolves to an index, `receiver` being the node that received the command.
    ///
    /// # Errors
    ///
    /// `UnknownMember` if no node matches.
    pub fn resolve(
        &self,
        topology: &Topology,
        receiver: NodeIndex,
    ) -> Result<NodeIndex, ControlError> {
        match self {
            Self::Receiver => Ok(receiver),
            Self::Index(index) if *index < topology.nodes().len() => Ok(*index),
            Self::Index(index) => Err(ControlError::UnknownMember(index.to_string())),
            Self::Host(host) => topology
                .index_of(host)
                .ok_or_else(|| ControlError::UnknownMember(host.clone())),
        }
    }
}

/// A parsed `{blackpipe: ...}` command.
#[derive(Debug, Clone)]
pub enum AdminRequest {
    /// Describe the deployment.
    Status,
    /// Step the primary (or `member`) down.
    StepDown {
        /// Target; `None` means the current primary.
        member: Option<MemberRef>,
        /// How long it may not be re-elected automatically.
        freeze_for: Duration,
        /// Step down even without an electable successor.
        force: bool,
    },
    /// Elect `member`, possibly after a delay.
    Elect {
        /// Target.
        member: MemberRef,
        /// Delay before the election.
        after: Duration,
    },
    /// Freeze (or with zero, unfreeze) a member.
    Freeze {
        /// Target.
        member: MemberRef,
        /// How long.
        duration: Duration,
    },
    /// Kill a node.
    Kill {
        /// Target.
        member: MemberRef,
    },
    /// Restart a killed node.
    Restart {
        /// Target.
        member: MemberRef,
    },
    /// Partition a node: from every client and member, or with `from` cut only its links to
    /// those members (clients still reach every node).
    Partition {
        /// Target.
        member: MemberRef,
        /// The members cut off from `member`; `None` partitions it from everyone.
        from: Option<Vec<MemberRef>>,
    },
    /// Stop (`paused`) or resume applying the op log on a member, or on every member.
    PauseReplication {
        /// Target; `None` means every member.
        member: Option<MemberRef>,
        /// Stop (`true`) or resume.
        paused: bool,
    },
    /// List the writes rollbacks discarded.
    Rollbacks,
    /// End a partition.
    Heal {
        /// Target.
        member: MemberRef,
    },
    /// Shut a node down after a quiesce period.
    Shutdown {
        /// Target.
        member: MemberRef,
        /// How long it answers `ShutdownInProgress` before dying.
        quiesce: Duration,
    },
    /// Delay every reply of a node.
    Slow {
        /// Target.
        member: MemberRef,
        /// The delay (zero restores full speed).
        delay: Duration,
    },
    /// Give each command a node's store runs this execution time.
    SlowCommands {
        /// Target.
        member: MemberRef,
        /// The execution time (zero restores instant execution).
        delay: Duration,
    },
    /// Reject a node's commands with code 462.
    Overload {
        /// Target.
        member: MemberRef,
        /// What to reject.
        overload: Overload,
    },
    /// Install or remove a capacity.
    Capacity {
        /// Target; `None` means every data-bearing member.
        member: Option<MemberRef>,
        /// What to do.
        change: CapacityChange,
    },
    /// Report capacity counters.
    CapacityStats {
        /// Target; `None` means every data-bearing member.
        member: Option<MemberRef>,
    },
    /// Set how far behind the primary secondaries apply the op log.
    ReplicationLag {
        /// The lag.
        lag: Duration,
        /// Target; `None` means every secondary.
        member: Option<MemberRef>,
    },
    /// Set `transactionLifetimeLimitSeconds`.
    TransactionLifetime {
        /// The limit.
        lifetime: Duration,
    },
    /// Turn automatic elections on or off.
    AutoFailover {
        /// On or off.
        enabled: bool,
        /// New delay before an automatic election, if given.
        election_delay: Option<Duration>,
    },
    /// Add a member on a new port.
    AddMember {
        /// Its configuration.
        options: MemberOptions,
    },
}

fn bad(message: impl Into<String>) -> ControlError {
    ControlError::BadArgument(message.into())
}

fn integer(value: &Bson) -> Option<i64> {
    match value {
        Bson::Int32(v) => Some(i64::from(*v)),
        Bson::Int64(v) => Some(*v),
        Bson::Double(v) if v.fract() == 0.0 && v.abs() < 9.0e15 => {
            // Checked above: integral and well inside i64's exact range.
            #[allow(clippy::cast_possible_truncation)]
            Some(*v as i64)
        }
        _ => None,
    }
}

/// The longest duration a control command accepts: `i32::MAX` seconds (about 68 years), the
/// range of mongod's own integer seconds fields. Longer values are refused with `BadValue`
/// while parsing, before anything changes, so no deadline computed from one can overflow.
pub const MAX_CONTROL_DURATION: Duration = Duration::from_secs(2_147_483_647);

/// `duration` if it is within [`MAX_CONTROL_DURATION`].
fn bounded(duration: Duration, field: &str) -> Result<Duration, ControlError> {
    if duration <= MAX_CONTROL_DURATION {
        Ok(duration)
    } else {
        Err(bad(format!(
            "'{field}' must be at most {} seconds",
            MAX_CONTROL_DURATION.as_secs()
        )))
    }
}

fn millis(command: &Document, field: &str, default: Option<u64>) -> Result<Duration, ControlError> {
    let duration = match command.get(field) {
        None | Some(Bson::Null) => default
            .map(Duration::from_millis)
            .ok_or_else(|| bad(format!("'{field}' is required")))?,
        Some(value) => integer(value)
            .and_then(|ms| u64::try_from(ms).ok())
            .map(Duration::from_millis)
            .ok_or_else(|| bad(format!("'{field}' must be a non-negative integer")))?,
    };
    bounded(duration, field)
}

fn seconds(value: Option<&Bson>, field: &str, default: u64) -> Result<Duration, ControlError> {
    let not_a_duration = || bad(format!("'{field}' must be a non-negative number"));
    let duration = match value {
        None | Some(Bson::Null) => Duration::from_secs(default),
        // `try_from_secs_f64` refuses negative, NaN, infinite and too-large values that
        // `from_secs_f64` would panic on.
        Some(Bson::Double(secs)) => {
            Duration::try_from_secs_f64(*secs).map_err(|_| not_a_duration())?
        }
        Some(value) => integer(value)
            .and_then(|secs| u64::try_from(secs).ok())
            .map(Duration::from_secs)
            .ok_or_else(not_a_duration)?,
    };
    bounded(duration, field)
}

fn flag(command: &Document, field: &str) -> Result<bool, ControlError> {
    match command.get(field) {
        None | Some(Bson::Null) => Ok(false),
        Some(Bson::Boolean(value)) => Ok(*value),
        Some(value) => integer(value)
            .map(|n| n != 0)
            .ok_or_else(|| bad(format!("'{field}' must be a boolean"))),
    }
}

fn member_ref(command: &Document) -> Result<Option<MemberRef>, ControlError> {
    match command.get("member") {
        None | Some(Bson::Null) => Ok(None),
        Some(Bson::String(host)) => Ok(Some(MemberRef::Host(host.clone()))),
        Some(value) => integer(value)
            .and_then(|index| usize::try_from(index).ok())
            .map(|index| Some(MemberRef::Index(index)))
            .ok_or_else(|| bad("'member' must be an index or a \"host:port\" string")),
    }
}

/// Reads `field` as a list of members (indexes or `"host:port"` strings), if present.
fn member_list(command: &Document, field: &str) -> Result<Option<Vec<MemberRef>>, ControlError> {
    let Some(value) = command.get(field) else {
        return Ok(None);
    };
    let Bson::Array(items) = value else {
        return Err(bad(format!("'{field}' must be an array of members")));
    };
    items
        .iter()
        .map(|item| {
            member_ref(&doc! { "member": item.clone() })?
                .ok_or_else(|| bad(format!("'{field}' must not hold null")))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// Parses `{blackpipe: <action>, ...}`.
///
/// # Errors
///
/// `BadArgument` for an unknown action or malformed fields.
pub fn parse_admin(command: &Document) -> Result<AdminRequest, ControlError> {
    let action = command
        .get_str("blackpipe")
        .map_err(|_| bad("'blackpipe' must name an action"))?;
    let member = member_ref(command)?;
    let target = || member.clone().unwrap_or(MemberRef::Receiver);
    let required = || {
        member
            .clone()
            .ok_or_else(|| bad(format!("'{action}' needs a 'member'")))
    };
    Ok(match action {
        "status" => AdminRequest::Status,
        "stepDown" => AdminRequest::StepDown {
            member: member.clone(),
            freeze_for: seconds(command.get("secs"), "secs", 60)?,
            force: flag(command, "force")?,
        },
        "elect" => AdminRequest::Elect {
            member: required()?,
            after: millis(command, "delayMS", Some(0))?,
        },
        "freeze" => AdminRequest::Freeze {
            member: target(),
            duration: seconds(
                Some(
                    command
                        .get("secs")
                        .ok_or_else(|| bad("'secs' is required"))?,
                ),
                "secs",
                0,
            )?,
        },
        "kill" => AdminRequest::Kill { member: target() },
        "restart" => AdminRequest::Restart {
            member: required()?,
        },
        "partition" => AdminRequest::Partition {
            member: target(),
            from: member_list(command, "from")?,
        },
        "pauseReplication" | "resumeReplication" => AdminRequest::PauseReplication {
            member: member.clone(),
            paused: action == "pauseReplication",
        },
        "rollbacks" => AdminRequest::Rollbacks,
        "heal" => AdminRequest::Heal {
            member: required()?,
        },
        "shutdown" => AdminRequest::Shutdown {
            member: target(),
            quiesce: millis(command, "quiesceMS", Some(0))?,
        },
        "slow" => AdminRequest::Slow {
            member: target(),
            delay: millis(command, "delayMS", None)?,
        },
        "slowCommands" => AdminRequest::SlowCommands {
            member: target(),
            delay: millis(command, "delayMS", None)?,
        },
        "overload" => AdminRequest::Overload {
            member: target(),
            overload: Overload::parse(command).map_err(|error| bad(error.message))?,
        },
        "capacity" => AdminRequest::Capacity {
            member: member.clone(),
            change: capacity::parse_change(command)?,
        },
        "capacityStats" => AdminRequest::CapacityStats {
            member: member.clone(),
        },
        "replicationLag" => AdminRequest::ReplicationLag {
            lag: millis(command, "lagMS", None)?,
            member: member.clone(),
        },
        "transactionLifetime" => AdminRequest::TransactionLifetime {
            lifetime: match command.get("secs") {
                None => return Err(bad("'secs' is required")),
                value => seconds(value, "secs", 60)?,
            },
        },
        "autoFailover" => AdminRequest::AutoFailover {
            enabled: match command.get("enabled") {
                Some(Bson::Boolean(enabled)) => *enabled,
                _ => return Err(bad("'enabled' must be a boolean")),
            },
            election_delay: match command.get("electionDelayMS") {
                None => None,
                Some(_) => Some(millis(command, "electionDelayMS", None)?),
            },
        },
        "addMember" => AdminRequest::AddMember {
            options: member_options(command)?,
        },
        other => return Err(bad(format!("unknown blackpipe action '{other}'"))),
    })
}

/// Reads `priority`, `votes`, `hidden`, `arbiterOnly`, `tags` of a member document (defaults:
/// priority 1, votes 1, hidden/arbiter false; arbiters and hidden members default to
/// priority 0).
///
/// # Errors
///
/// `BadArgument` for fields of the wrong type.
pub fn member_options(member: &Document) -> Result<MemberOptions, ControlError> {
    let hidden = flag(member, "hidden")?;
    let arbiter_only = flag(member, "arbiterOnly")?;
    let priority = match member.get("priority") {
        None => {
            if hidden || arbiter_only {
                0.0
            } else {
                1.0
            }
        }
        Some(Bson::Double(priority)) => *priority,
        Some(value) => {
            let priority = integer(value).ok_or_else(|| bad("'priority' must be a number"))?;
            i32::try_from(priority)
                .map(f64::from)
                .map_err(|_| bad("'priority' is out of range"))?
        }
    };
    let votes = match member.get("votes") {
        None => 1,
        Some(value) => integer(value)
            .and_then(|votes| u8::try_from(votes).ok())
            .ok_or_else(|| bad("'votes' must be 0 or 1"))?,
    };
    let mut options = MemberOptions {
        priority,
        votes,
        hidden,
        arbiter_only,
        tags: Vec::new(),
    };
    if let Ok(tags) = member.get_document("tags") {
        for (key, value) in tags {
            let value = value
                .as_str()
                .ok_or_else(|| bad("tag values must be strings"))?;
            options.tags.push((key.clone(), value.to_owned()));
        }
    }
    Ok(options)
}

/// Parses `{replSetStepDown: secs, secondaryCatchUpPeriodSecs?: 10, force?: false}` into the
/// freeze period and `force`.
///
/// # Errors
///
/// `BadArgument` for a non-numeric period or one not longer than the catch-up period.
pub fn parse_step_down(command: &Document) -> Result<(Duration, bool), ControlError> {
    let freeze_for = match command.get("replSetStepDown") {
        Some(Bson::Boolean(true)) => Duration::from_secs(60),
        other => seconds(other, "replSetStepDown", 60)?,
    };
    let force = flag(command, "force")?;
    // As mongod: a forced stepdown waits for no secondary to catch up by default.
    let catch_up = seconds(
        command.get("secondaryCatchUpPeriodSecs"),
        "secondaryCatchUpPeriodSecs",
        if force { 0 } else { 10 },
    )?;
    if freeze_for < catch_up {
        return Err(bad(
            "stepdown period must be longer than secondaryCatchUpPeriodSecs",
        ));
    }
    Ok((freeze_for, force))
}

/// Parses `{replSetFreeze: secs}`.
///
/// # Errors
///
/// `BadArgument` for a non-numeric value.
pub fn parse_freeze(command: &Document) -> Result<Duration, ControlError> {
    seconds(command.get("replSetFreeze"), "replSetFreeze", 0)
}

/// Parses `{replSetReconfig: {_id, version, members: [{_id, host, ...}]}}` into the member
/// list and the new version.
///
/// # Errors
///
/// `BadArgument` for a malformed config; `InvalidConfig` for the wrong set name.
pub fn parse_reconfig(
    command: &Document,
    set_name: &str,
) -> Result<(MemberList, Option<i64>), ControlError> {
    let config = command
        .get_document("replSetReconfig")
        .map_err(|_| bad("'replSetReconfig' must be a config document"))?;
    if let Ok(id) = config.get_str("_id") {
        if id != set_name {
            return Err(ControlError::InvalidConfig(format!(
                "New and old configurations differ in replica set name; old was {set_name}, \
                 and new is {id}"
            )));
        }
    }
    let version = config.get("version").and_then(integer);
    let members = config
        .get_array("members")
        .map_err(|_| bad("'members' must be an array"))?;
    let mut parsed = Vec::with_capacity(members.len());
    for member in members {
        let member = member
            .as_document()
            .ok_or_else(|| bad("each member must be a document"))?;
        let host = member
            .get_str("host")
            .map_err(|_| bad("each member needs a 'host'"))?;
        parsed.push((host.to_owned(), member_options(member)?));
    }
    Ok((parsed, version))
}

fn member_document(index: NodeIndex, topology: &Topology) -> Document {
    let Some(node) = topology.node(index) else {
        return Document::new();
    };
    let options = node.options();
    let tags: Document = options
        .tags
        .iter()
        .map(|(key, value)| (key.clone(), Bson::String(value.clone())))
        .collect();
    doc! {
        "_id": i64::try_from(index).unwrap_or(i64::MAX),
        "host": node.host(),
        "arbiterOnly": options.arbiter_only,
        "buildIndexes": true,
        "hidden": options.hidden,
        "priority": options.priority,
        "tags": tags,
        "secondaryDelaySecs": 0_i64,
        "votes": i32::from(options.votes),
    }
}

/// The reply of `replSetGetConfig`.
pub fn config_reply(topology: &Topology) -> Document {
    let members: Vec<Bson> = (0..topology.nodes().len())
        .filter(|&index| {
            topology
                .node(index)
                .is_some_and(|n| n.role() != Role::Removed)
        })
        .map(|index| Bson::Document(member_document(index, topology)))
        .collect();
    doc! {
        "config": {
            "_id": topology.set_name(),
            "version": topology.set_version(),
            "term": topology.term(),
            "members": members,
            "protocolVersion": 1_i64,
            "writeConcernMajorityJournalDefault": true,
            "settings": {"electionTimeoutMillis": 10_000_i64, "heartbeatIntervalMillis": 2_000_i64},
        },
        "ok": 1.0,
    }
}

pub use super::repl_status::status_reply;

/// The reply of `{blackpipe: "status"}`.
pub fn blackpipe_status(topology: &Topology, now: Instant) -> Document {
    let kind = match topology.kind() {
        DeploymentKind::Standalone => "standalone",
        DeploymentKind::ReplicaSet => "replicaSet",
        DeploymentKind::Sharded => "sharded",
    };
    let nodes: Vec<Bson> = topology
        .nodes()
        .iter()
        .map(|node| {
            let role = match node.role() {
                Role::Standalone => "standalone",
                Role::Router => "mongos",
                Role::Primary => "primary",
                Role::Secondary => "secondary",
                Role::Arbiter => "arbiter",
                Role::Removed => "removed",
            };
            let health = match node.health() {
                Health::Up => "up",
                Health::Down => "down",
                Health::Partitioned => "partitioned",
                Health::ShuttingDown => "shuttingDown",
            };
            Bson::Document(doc! {
                "host": node.host(),
                "role": role,
                "health": health,
                "frozen": node.is_frozen(now),
                "topologyVersion": version_document(node.topology_version()),
            })
        })
        .collect();
    let mut reply = doc! { "kind": kind };
    if topology.kind() == DeploymentKind::ReplicaSet {
        reply.insert("setName", topology.set_name());
        reply.insert("setVersion", topology.set_version());
        reply.insert("term", topology.term());
        if let Some(primary) = topology.primary().and_then(|index| topology.node(index)) {
            reply.insert("primary", primary.host());
        }
    }
    reply.insert("nodes", nodes);
    reply.insert("ok", 1.0);
    reply
}
