//! `replSetGetStatus`: the set as one member sees it (pure: the topology, the commit point
//! and the time come in as arguments).

use bson::{Bson, Document, doc};

use crate::deployment::model::{Health, NodeIndex, Role, Topology};

/// mongod's member states, as `replSetGetStatus` numbers them.
pub(super) mod member_state {
    /// `STARTUP`: not yet a member of a set.
    pub(super) const STARTUP: i32 = 0;
    /// `PRIMARY`.
    pub(super) const PRIMARY: i32 = 1;
    /// `SECONDARY`.
    pub(super) const SECONDARY: i32 = 2;
    /// `ARBITER`.
    pub(super) const ARBITER: i32 = 7;
    /// `DOWN`: not reachable or not healthy.
    pub(super) const DOWN: i32 = 8;
    /// `REMOVED`: no longer in the config.
    pub(super) const REMOVED: i32 = 10;
}

pub(super) fn state_of(role: Role, health: Health) -> (i32, &'static str) {
    match (health, role) {
        (Health::Down | Health::Partitioned, _) => (member_state::DOWN, "(not reachable/healthy)"),
        (_, Role::Primary) => (member_state::PRIMARY, "PRIMARY"),
        (_, Role::Secondary) => (member_state::SECONDARY, "SECONDARY"),
        (_, Role::Arbiter) => (member_state::ARBITER, "ARBITER"),
        (_, Role::Removed) => (member_state::REMOVED, "REMOVED"),
        (_, Role::Standalone | Role::Router) => (member_state::STARTUP, "STARTUP"),
    }
}

/// `{ts, t}` and the wall time of an optime, as `replSetGetStatus` shows them (the wall time is
/// the timestamp's second: the model keeps positions, not wall clocks).
pub(super) fn op_time_fields(ts: bson::Timestamp, term: i64) -> (Document, bson::DateTime) {
    let wall = bson::DateTime::from_millis(i64::from(ts.time).saturating_mul(1000));
    (doc! { "ts": ts, "t": term }, wall)
}

/// mongod's default `heartbeatIntervalMillis`: what `replSetGetStatus` reports.
const HEARTBEAT_INTERVAL_MS: i64 = 2000;

/// The reply of `replSetGetStatus` at wall time `now`: the set, term, counts of voters and
/// majorities, the receiver's sync source and `optimes` (its applied optime and the majority
/// commit point it knows), and each member's state, optimes, config version, sync source and,
/// for the others, heartbeats. blackpipe's members see each other's state at once, so a member
/// the receiver can reach was heard from now; one it cannot has never been (the epoch, as
/// mongod shows a member it never reached).
pub fn status_reply(
    topology: &Topology,
    receiver: NodeIndex,
    committed: bson::Timestamp,
    now: bson::DateTime,
) -> Document {
    let term = topology.term().max(1);
    let members: Vec<Bson> = topology
        .nodes()
        .iter()
        .enumerate()
        .filter(|(_, node)| node.role() != Role::Removed)
        .map(|(index, _)| Bson::Document(member_status(topology, index, receiver, term, now)))
        .collect();
    let (my_state, _) = topology
        .node(receiver)
        .map_or((member_state::STARTUP, ""), |node| {
            state_of(node.role(), node.health())
        });
    let applied = topology
        .node(receiver)
        .map(|node| node.applied())
        .unwrap_or(committed);
    let (applied, applied_date) = op_time_fields(applied, term);
    let (committed, committed_date) = op_time_fields(committed, term);
    let voters = topology
        .nodes()
        .iter()
        .filter(|node| node.role() != Role::Removed && node.options().votes > 0)
        .count();
    let writable_voters = topology
        .nodes()
        .iter()
        .filter(|node| {
            node.role() != Role::Removed && node.options().votes > 0 && !node.options().arbiter_only
        })
        .count();
    let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    let (sync_host, sync_id) = sync_source(topology, receiver);
    doc! {
        "set": topology.set_name(),
        "date": now,
        "myState": my_state,
        "term": topology.term(),
        "syncSourceHost": sync_host,
        "syncSourceId": sync_id,
        "heartbeatIntervalMillis": HEARTBEAT_INTERVAL_MS,
        "majorityVoteCount": count(voters / 2 + 1),
        "writeMajorityCount": count((voters / 2 + 1).min(writable_voters)),
        "votingMembersCount": count(voters),
        "writableVotingMembersCount": count(writable_voters),
        "optimes": {
            "lastCommittedOpTime": committed,
            "lastCommittedWallTime": committed_date,
            "appliedOpTime": applied.clone(),
            "durableOpTime": applied,
            "lastAppliedWallTime": applied_date,
            "lastDurableWallTime": applied_date,
        },
        "members": members,
        "ok": 1.0,
    }
}

/// One member's entry in `replSetGetStatus`, as `receiver` sees it.
fn member_status(
    topology: &Topology,
    index: NodeIndex,
    receiver: NodeIndex,
    term: i64,
    now: bson::DateTime,
) -> Document {
    let Some(node) = topology.node(index) else {
        return Document::new();
    };
    let (state, state_str) = state_of(node.role(), node.health());
    let mut member = doc! {
        "_id": i64::try_from(index).unwrap_or(i64::MAX),
        "name": node.host(),
        "health": if node.health() == Health::Up { 1.0 } else { 0.0 },
        "state": state,
        "stateStr": state_str,
    };
    if node.role() != Role::Arbiter {
        let (optime, date) = op_time_fields(node.applied(), term);
        member.insert("optime", optime.clone());
        member.insert("optimeDurable", optime);
        member.insert("optimeDate", date);
        member.insert("optimeDurableDate", date);
        member.insert("lastAppliedWallTime", date);
        member.insert("lastDurableWallTime", date);
    }
    let (sync_host, sync_id) = sync_source(topology, index);
    member.insert("syncSourceHost", sync_host);
    member.insert("syncSourceId", sync_id);
    member.insert("infoMessage", "");
    member.insert("configVersion", topology.set_version());
    member.insert("configTerm", topology.term());
    if index == receiver {
        member.insert("self", true);
    } else {
        let heard = if topology.is_linked(receiver, index) {
            now
        } else {
            bson::DateTime::from_millis(0)
        };
        member.insert("lastHeartbeat", heard);
        member.insert("lastHeartbeatRecv", heard);
        member.insert("pingMs", 0_i64);
    }
    member
}

/// Where `index` replicates from: the primary, when it is a secondary that reaches it (`""`
/// and -1 otherwise, as mongod reports no sync source).
fn sync_source(topology: &Topology, index: NodeIndex) -> (String, i64) {
    let is_secondary = topology
        .node(index)
        .is_some_and(|node| node.role() == Role::Secondary && node.health() == Health::Up);
    match topology.primary() {
        Some(primary) if is_secondary && topology.is_linked(index, primary) => (
            topology
                .node(primary)
                .map(|node| node.host().to_owned())
                .unwrap_or_default(),
            i64::try_from(primary).unwrap_or(-1),
        ),
        _ => (String::new(), -1),
    }
}
