//! The replica-set subroutines of SDAM: updateRSFromPrimary, updateRSWithoutPrimary and
//! updateRSWithPrimaryFromMember.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::Arc;

use bson::oid::ObjectId;

use super::apply::Update;
use crate::address::ServerAddress;
use crate::description::{ServerDescription, ServerType, TopologyType};

/// The first wire version (MongoDB 6.0) whose primaries are ordered by electionId before
/// setVersion.
const ELECTION_ID_FIRST_WIRE_VERSION: i32 = 17;

/// Renders an (electionId, setVersion) pair for stale-primary error messages.
fn tuple_text(election_id: Option<ObjectId>, set_version: Option<i64>) -> String {
    let mut text = String::from("(");
    match election_id {
        Some(id) => {
            let _ = write!(text, "{id}");
        }
        None => text.push_str("null"),
    }
    text.push_str(", ");
    match set_version {
        Some(v) => {
            let _ = write!(text, "{v}");
        }
        None => text.push_str("null"),
    }
    text.push(')');
    text
}

impl Update {
    /// Marks the member that claims `primary` as PossiblePrimary if nothing is known of it
    /// yet (kept for spec fidelity; asynchronous clients treat it like Unknown).
    fn note_possible_primary(&mut self, primary: Option<&ServerAddress>) {
        let Some(primary) = primary else { return };
        if let Some(server) = self.topology.servers.get_mut(primary)
            && server.server_type == ServerType::Unknown
        {
            Arc::make_mut(server).server_type = ServerType::PossiblePrimary;
        }
    }

    /// Checks the reported set name against the topology's, adopting it if none is known.
    /// Returns false (and removes the server) on a mismatch.
    fn adopt_or_match_set_name(
        &mut self,
        address: &ServerAddress,
        reported: Option<&String>,
    ) -> bool {
        match (&self.topology.set_name, reported) {
            (None, Some(name)) => {
                self.topology.set_name = Some(name.clone());
                true
            }
            (Some(expected), Some(name)) if expected == name => true,
            // A replica-set member type always carries a set name; anything else mismatches.
            _ => {
                self.remove(address);
                false
            }
        }
    }

    /// SDAM "updateRSFromPrimary".
    pub(super) fn update_rs_from_primary(&mut self, address: &ServerAddress) {
        let Some(primary) = self.topology.servers.get(address).cloned() else {
            return;
        };
        if !self.adopt_or_match_set_name(address, primary.set_name.as_ref()) {
            self.check_if_has_primary();
            return;
        }
        if let Err(why) = self.record_election(&primary) {
            self.topology.servers.insert(
                address.clone(),
                Arc::new(ServerDescription::from_error(address.clone(), why, None)),
            );
            self.check_if_has_primary();
            return;
        }

        let older_primaries: Vec<ServerAddress> = self
            .topology
            .servers
            .values()
            .filter(|s| s.address != *address && s.server_type == ServerType::RsPrimary)
            .map(|s| s.address.clone())
            .collect();
        for old in older_primaries {
            // The pool of the old primary is kept (its connections may serve a secondary);
            // an immediate check learns its new role.
            let invalidated = ServerDescription::from_error(
                old.clone(),
                "primary marked stale due to discovery of newer primary",
                None,
            );
            self.topology
                .servers
                .insert(old.clone(), Arc::new(invalidated));
            self.check_now.push(old);
        }

        let members: BTreeSet<ServerAddress> = primary.all_members().cloned().collect();
        for member in &members {
            self.add_unknown(member);
        }
        let strangers: Vec<ServerAddress> = self
            .topology
            .servers
            .keys()
            .filter(|a| !members.contains(*a))
            .cloned()
            .collect();
        for stranger in &strangers {
            self.remove(stranger);
        }
        self.check_if_has_primary();
    }

    /// Updates maxElectionId / maxSetVersion from a primary, or returns the stale-primary
    /// error when the primary's (electionId, setVersion) is older than the maxima.
    fn record_election(&mut self, primary: &ServerDescription) -> Result<(), String> {
        let topology = &mut self.topology;
        let incoming = (primary.election_id, primary.set_version);
        let maxima = (topology.max_election_id, topology.max_set_version);
        let stale = || {
            format!(
                "primary marked stale due to electionId/setVersion mismatch, {} is stale \
                 compared to {}",
                tuple_text(incoming.0, incoming.1),
                tuple_text(maxima.0, maxima.1)
            )
        };
        if primary.max_wire_version >= ELECTION_ID_FIRST_WIRE_VERSION {
            // 6.0+: electionId first, then setVersion; absent values order before any value,
            // which is exactly how `Option` orders.
            if incoming >= maxima {
                topology.max_election_id = incoming.0;
                topology.max_set_version = incoming.1;
                return Ok(());
            }
            return Err(stale());
        }
        // Before 6.0: setVersion first, and only primaries reporting both are compared.
        if let (Some(set_version), Some(election_id)) = (incoming.1, incoming.0) {
            if let (Some(max_set_version), Some(max_election_id)) = (maxima.1, maxima.0)
                && (max_set_version > set_version
                    || (max_set_version == set_version && max_election_id > election_id))
            {
                return Err(stale());
            }
            topology.max_election_id = Some(election_id);
        }
        if let Some(set_version) = incoming.1
            && topology.max_set_version.is_none_or(|max| set_version > max)
        {
            topology.max_set_version = Some(set_version);
        }
        Ok(())
    }

    /// SDAM "updateRSWithoutPrimary".
    pub(super) fn update_rs_without_primary(&mut self, address: &ServerAddress) {
        let Some(member) = self.topology.servers.get(address).cloned() else {
            return;
        };
        if !self.adopt_or_match_set_name(address, member.set_name.as_ref()) {
            return;
        }
        for reported in member.all_members() {
            self.add_unknown(reported);
        }
        self.note_possible_primary(member.primary.as_ref());
        if member.me.as_ref().is_some_and(|me| me != address) {
            self.remove(address);
        }
    }

    /// SDAM "updateRSWithPrimaryFromMember".
    pub(super) fn update_rs_with_primary_from_member(&mut self, address: &ServerAddress) {
        let Some(member) = self.topology.servers.get(address).cloned() else {
            return;
        };
        let set_name_matches = self.topology.set_name.is_some()
            && self.topology.set_name.as_ref() == member.set_name.as_ref();
        let me_matches = member.me.as_ref().is_none_or(|me| me == address);
        if !set_name_matches || !me_matches {
            self.remove(address);
            self.check_if_has_primary();
            return;
        }
        // Had this member been the primary?
        if self.topology.primary().is_none() {
            self.topology.topology_type = TopologyType::ReplicaSetNoPrimary;
            self.note_possible_primary(member.primary.as_ref());
        }
    }
}
