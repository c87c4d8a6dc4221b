//! One server selection attempt over a topology snapshot: validation, suitable servers (with
//! deprioritized servers set aside), the latency window, and the operation-count choice.

use std::fmt;
use std::sync::Arc;

use rand::Rng;

use super::read_preference::{ReadPreference, ReadPreferenceError};
use super::staleness::check_max_staleness;
use super::suitable::{StalenessReference, suitable_for_read, suitable_for_write};
use super::window::{choose_in_window, within_latency_window};
use crate::address::ServerAddress;
use std::time::Duration;

use super::read_preference::TagSet;
use crate::description::{ServerDescription, ServerType, TopologyDescription, TopologyType};

/// A function choosing the servers an operation may use, given what is known about each.
pub type Predicate = Arc<dyn Fn(&ServerInfo<'_>) -> bool + Send + Sync>;

/// What a [`Predicate`] is shown of one server: a read-only view of its description.
#[derive(Clone, Copy, Debug)]
pub struct ServerInfo<'a> {
    description: &'a ServerDescription,
}

impl<'a> ServerInfo<'a> {
    /// A view of `description`.
    pub fn new(description: &'a ServerDescription) -> Self {
        ServerInfo { description }
    }
}

/// The accessors of the official driver's `ServerInfo`, over the description's own.
impl<'a> ServerInfo<'a> {
    /// The server's address.
    pub fn address(&self) -> &'a ServerAddress {
        self.description.address()
    }

    /// Its type (primary, secondary, mongos, ...).
    pub fn server_type(&self) -> ServerType {
        self.description.server_type()
    }

    /// Its replica set tags; `None` when it has none.
    pub fn tags(&self) -> Option<&'a TagSet> {
        self.description.tags()
    }

    /// Its average round-trip time, once measured.
    pub fn average_round_trip_time(&self) -> Option<Duration> {
        self.description.average_round_trip_time()
    }

    /// Its replica set's name, if it is a member of one.
    pub fn replica_set_name(&self) -> Option<&'a str> {
        self.description.replica_set_name()
    }

    /// Its replica set configuration version, if it reported one.
    pub fn replica_set_version(&self) -> Option<i64> {
        self.description.replica_set_version()
    }

    /// The highest wire version it speaks, once known.
    pub fn max_wire_version(&self) -> Option<i32> {
        self.description.max_wire_version()
    }

    /// The lowest wire version it speaks, once known.
    pub fn min_wire_version(&self) -> Option<i32> {
        self.description.min_wire_version()
    }

    /// The error that made it unknown, if one did (its message).
    pub fn error(&self) -> Option<&'a str> {
        self.description.error()
    }
}

/// `{ Address: ..., Type: ..., ... }`, the fields a reader needs to see which server it is.
impl std::fmt::Display for ServerInfo<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{{ Address: {}, Type: {:?}",
            self.address(),
            self.server_type()
        )?;
        if let Some(rtt) = self.average_round_trip_time() {
            write!(f, ", Average RTT: {rtt:?}")?;
        }
        if let Some(name) = self.replica_set_name() {
            write!(f, ", Replica set name: {name}")?;
        }
        if let Some(error) = self.error() {
            write!(f, ", Error: {error}")?;
        }
        f.write_str(" }")
    }
}

/// The rest of the description is reachable through it too.
impl std::ops::Deref for ServerInfo<'_> {
    type Target = ServerDescription;

    fn deref(&self) -> &ServerDescription {
        self.description
    }
}

/// What an operation needs from the server it is sent to.
#[derive(Clone)]
#[non_exhaustive]
pub enum SelectionCriteria {
    /// A read, routed by this read preference.
    ReadPreference(ReadPreference),
    /// Any available data-bearing server for which the predicate returns true (then the
    /// latency window applies, as for a read preference).
    Predicate(Predicate),
    /// A write: only a server that accepts writes is suitable.
    Write,
}

impl fmt::Debug for SelectionCriteria {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SelectionCriteria::ReadPreference(rp) => {
                f.debug_tuple("ReadPreference").field(rp).finish()
            }
            SelectionCriteria::Predicate(_) => f.write_str("Predicate"),
            SelectionCriteria::Write => f.write_str("Write"),
        }
    }
}

/// Two predicates are equal only when they are the same function object.
impl PartialEq for SelectionCriteria {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (SelectionCriteria::ReadPreference(a), SelectionCriteria::ReadPreference(b)) => a == b,
            (SelectionCriteria::Predicate(a), SelectionCriteria::Predicate(b)) => Arc::ptr_eq(a, b),
            (SelectionCriteria::Write, SelectionCriteria::Write) => true,
            _ => false,
        }
    }
}

impl From<ReadPreference> for SelectionCriteria {
    fn from(read_preference: ReadPreference) -> Self {
        SelectionCriteria::ReadPreference(read_preference)
    }
}

impl SelectionCriteria {
    /// A read with read preference mode primary.
    pub fn primary_read() -> Self {
        SelectionCriteria::ReadPreference(ReadPreference::primary())
    }

    /// The read preference, when the criteria are one.
    pub fn as_read_pref(&self) -> Option<&ReadPreference> {
        match self {
            SelectionCriteria::ReadPreference(rp) => Some(rp),
            SelectionCriteria::Predicate(_) | SelectionCriteria::Write => None,
        }
    }
}

impl fmt::Display for SelectionCriteria {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SelectionCriteria::Write => f.write_str("write"),
            SelectionCriteria::Predicate(_) => f.write_str("a custom predicate"),
            SelectionCriteria::ReadPreference(rp) => write!(f, "read with ReadPreference {rp}"),
        }
    }
}

/// Why a selection can never succeed as asked, however long the caller waits.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectionError {
    /// Some server's wire-version range does not overlap the driver's.
    #[error("{0}")]
    IncompatibleTopology(String),
    /// The read preference is invalid, either in itself or for this topology.
    #[error(transparent)]
    InvalidReadPreference(#[from] ReadPreferenceError),
}

/// The verdict of one selection attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    /// Send the operation to this server (and count it as one more operation in flight there).
    Selected(ServerAddress),
    /// No server is suitable now; the caller requests an immediate check and waits for the next
    /// topology snapshot, until the selection timeout.
    NoneSuitable {
        /// A readable explanation, naming the criteria and the servers' last errors.
        reason: String,
    },
    /// Waiting cannot help: report this error at once.
    Invalid(SelectionError),
}

/// The intermediate results of selection that the specification tests inspect.
#[derive(Clone, Debug, Default)]
pub struct Candidates<'a> {
    /// Every server meeting the criteria, after deprioritized servers were set aside (or
    /// brought back because nothing else was suitable).
    pub suitable: Vec<&'a ServerDescription>,
    /// The suitable servers within `localThresholdMS` of the fastest one.
    pub in_window: Vec<&'a ServerDescription>,
    /// Whether `suitable` had to fall back on deprioritized servers.
    pub used_deprioritized: bool,
}

/// Rejects criteria that no topology change can make valid: an incompatible server, a read
/// preference that is invalid in itself (mode primary with tags or staleness), or, against a
/// replica set, a `maxStalenessSeconds` below the minimum for the heartbeat frequency.
fn validate(
    topology: &TopologyDescription,
    criteria: &SelectionCriteria,
) -> Result<(), SelectionError> {
    if let Some(why) = &topology.compatibility_error {
        return Err(SelectionError::IncompatibleTopology(why.clone()));
    }
    let SelectionCriteria::ReadPreference(preference) = criteria else {
        return Ok(());
    };
    // Sharded, Single and LoadBalanced deployments pass the bound on to mongos, which checks
    // it; only replica-set selection depends on it here.
    if let Some(max_staleness) = preference.max_staleness()
        && topology.topology_type.is_replica_set()
    {
        check_max_staleness(max_staleness, topology.heartbeat_frequency)?;
    }
    Ok(())
}

/// Computes the suitable servers and the latency window for `criteria`.
///
/// Deprioritized servers (those that failed an earlier attempt of the same operation) are set
/// aside first; if that leaves nothing suitable, they are considered again, so a retry prefers
/// another server but never fails only because the one it has is the failed one. This applies to
/// every topology type (server-selection.md, 2025-12-08).
///
/// # Errors
/// [`SelectionError`] when the topology is incompatible or the read preference is invalid.
pub fn candidates<'a>(
    topology: &'a TopologyDescription,
    criteria: &SelectionCriteria,
    deprioritized: &[ServerAddress],
) -> Result<Candidates<'a>, SelectionError> {
    validate(topology, criteria)?;
    let reference = match criteria {
        SelectionCriteria::ReadPreference(rp) if rp.max_staleness().is_some() => {
            Some(StalenessReference::of(topology))
        }
        _ => None,
    };
    let suitable_among = |pool: &[&'a ServerDescription]| match criteria {
        SelectionCriteria::Write => suitable_for_write(topology, pool),
        // A direct connection's one server is offered whatever its type.
        SelectionCriteria::Predicate(predicate) => pool
            .iter()
            .copied()
            .filter(|s| {
                (topology.topology_type == TopologyType::Single || s.server_type.is_data_bearing())
                    && predicate(&ServerInfo::new(s))
            })
            .collect(),
        SelectionCriteria::ReadPreference(rp) => suitable_for_read(
            topology,
            pool,
            rp,
            // Only consulted when a staleness bound is set.
            reference.unwrap_or(StalenessReference::FreshestSecondary(None)),
        ),
    };
    let everyone: Vec<&ServerDescription> = topology.servers.values().map(AsRef::as_ref).collect();
    let mut used_deprioritized = false;
    let suitable = if deprioritized.is_empty() {
        suitable_among(&everyone)
    } else {
        let preferred: Vec<_> = everyone
            .iter()
            .copied()
            .filter(|s| !deprioritized.contains(&s.address))
            .collect();
        let first = suitable_among(&preferred);
        if first.is_empty() {
            used_deprioritized = true;
            suitable_among(&everyone)
        } else {
            first
        }
    };
    let in_window = within_latency_window(
        suitable.clone(),
        |s| s.round_trip_time,
        topology.local_threshold,
    );
    Ok(Candidates {
        suitable,
        in_window,
        used_deprioritized,
    })
}

/// One selection attempt (steps 2 to 8 of the multi-threaded algorithm in server-selection.md).
///
/// `operation_counts` reports how many operations each server is currently running; between
/// two random servers of the latency window the less busy one wins. The caller increments the
/// count of the server returned. `rng` is the only source of randomness.
pub fn select(
    topology: &TopologyDescription,
    criteria: &SelectionCriteria,
    deprioritized: &[ServerAddress],
    operation_counts: impl Fn(&ServerAddress) -> u32,
    rng: &mut impl Rng,
) -> Selection {
    let found = match candidates(topology, criteria, deprioritized) {
        Ok(found) => found,
        Err(error) => return Selection::Invalid(error),
    };
    match choose_in_window(&found.in_window, |s| operation_counts(&s.address), rng) {
        Some(server) => Selection::Selected(server.address.clone()),
        None => Selection::NoneSuitable {
            reason: no_suitable_reason(topology, criteria),
        },
    }
}

/// The explanation of an empty selection, following the spec's advice: name the criteria, and
/// when no server is available at all, the errors that made them unavailable.
fn no_suitable_reason(topology: &TopologyDescription, criteria: &SelectionCriteria) -> String {
    let mut reason = format!(
        "no server is suitable for {criteria} in a {} topology",
        topology.topology_type
    );
    if topology.has_known_servers() {
        return reason;
    }
    let mut errors: Vec<String> = topology
        .servers
        .values()
        .filter_map(|s| s.error.as_ref().map(|e| format!("{}: {e}", s.address)))
        .collect();
    errors.dedup();
    if errors.is_empty() {
        reason.push_str("; no server has been reached yet");
    } else {
        reason.push_str("; ");
        reason.push_str(&errors.join(", "));
    }
    reason
}
