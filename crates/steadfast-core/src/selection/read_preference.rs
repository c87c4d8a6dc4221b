//! Read preferences: which members an operation may read from.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

/// One tag set: a server matches when it carries every pair. The empty set matches any server.
pub type TagSet = BTreeMap<String, String>;

/// The smallest `maxStalenessSeconds` the specification allows (see max-staleness.md).
pub const SMALLEST_MAX_STALENESS: Duration = Duration::from_secs(90);

/// The five read preference modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ReadPreferenceMode {
    /// Only the primary.
    #[default]
    Primary,
    /// The primary if there is one, otherwise a secondary.
    PrimaryPreferred,
    /// Only secondaries.
    Secondary,
    /// A secondary if there is one, otherwise the primary.
    SecondaryPreferred,
    /// Any data-bearing member within the latency window.
    Nearest,
}

impl ReadPreferenceMode {
    /// The mode's name as it appears in connection strings and `$readPreference`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReadPreferenceMode::Primary => "primary",
            ReadPreferenceMode::PrimaryPreferred => "primaryPreferred",
            ReadPreferenceMode::Secondary => "secondary",
            ReadPreferenceMode::SecondaryPreferred => "secondaryPreferred",
            ReadPreferenceMode::Nearest => "nearest",
        }
    }

    /// Parses a mode name, ignoring ASCII case as connection strings allow.
    pub fn parse(name: &str) -> Option<Self> {
        [
            ReadPreferenceMode::Primary,
            ReadPreferenceMode::PrimaryPreferred,
            ReadPreferenceMode::Secondary,
            ReadPreferenceMode::SecondaryPreferred,
            ReadPreferenceMode::Nearest,
        ]
        .into_iter()
        .find(|m| m.as_str().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for ReadPreferenceMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A read preference: a mode plus, for every mode but primary, tag sets and a staleness bound.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ReadPreference {
    /// The mode.
    pub mode: ReadPreferenceMode,
    /// Tag sets tried in order; the first that matches any eligible server wins. Empty means
    /// "no tag constraint".
    pub tag_sets: Vec<TagSet>,
    /// The largest replication lag tolerated; `None` means no limit.
    pub max_staleness: Option<Duration>,
}

/// Why a read preference is invalid.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReadPreferenceError {
    /// Mode primary cannot carry tag sets.
    #[error("read preference mode primary cannot be combined with tag sets")]
    PrimaryWithTags,
    /// Mode primary cannot carry maxStalenessSeconds.
    #[error("read preference mode primary cannot be combined with maxStalenessSeconds")]
    PrimaryWithMaxStaleness,
    /// maxStalenessSeconds is below the allowed minimum for a replica set (see
    /// [`minimum_max_staleness`](super::staleness::minimum_max_staleness)).
    #[error("maxStalenessSeconds must be at least {minimum_secs} seconds, got {given_secs}")]
    MaxStalenessTooSmall {
        /// The value given, in seconds.
        given_secs: u64,
        /// The smallest value allowed for this topology, in seconds.
        minimum_secs: u64,
    },
}

impl ReadPreference {
    /// Mode primary: the default.
    pub fn primary() -> Self {
        ReadPreference::default()
    }

    /// A mode with no tags and no staleness bound.
    pub fn with_mode(mode: ReadPreferenceMode) -> Self {
        ReadPreference {
            mode,
            ..ReadPreference::default()
        }
    }

    /// Checks the combinations the server selection specification forbids whatever the
    /// topology. The lower bound on `max_staleness` (90 s and heartbeatFrequencyMS +
    /// idleWritePeriodMS) is not checked here: it applies only when selecting from a replica set
    /// (mongos checks it itself), so a client accepts `maxStalenessSeconds=1` and
    /// [`select`](super::select) reports it (max-staleness-tests.md, "No validation").
    ///
    /// # Errors
    /// [`ReadPreferenceError`] for mode primary with tag sets (other than empty sets) or with a
    /// staleness bound.
    pub fn validate(&self) -> Result<(), ReadPreferenceError> {
        if self.mode == ReadPreferenceMode::Primary {
            if self.tag_sets.iter().any(|t| !t.is_empty()) {
                return Err(ReadPreferenceError::PrimaryWithTags);
            }
            if self.max_staleness.is_some() {
                return Err(ReadPreferenceError::PrimaryWithMaxStaleness);
            }
        }
        Ok(())
    }

    /// Whether this preference allows reading from a non-primary (and so needs `secondaryOk`).
    pub fn allows_secondaries(&self) -> bool {
        self.mode != ReadPreferenceMode::Primary
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_names_round_trip_case_insensitively() {
        assert_eq!(
            ReadPreferenceMode::parse("SECONDARYpreferred"),
            Some(ReadPreferenceMode::SecondaryPreferred)
        );
        assert_eq!(ReadPreferenceMode::parse("bogus"), None);
    }

    #[test]
    fn primary_rejects_tags_and_staleness() {
        let mut rp = ReadPreference::primary();
        rp.tag_sets = vec![TagSet::from([("dc".into(), "ny".into())])];
        assert_eq!(rp.validate(), Err(ReadPreferenceError::PrimaryWithTags));
        let mut rp = ReadPreference::primary();
        rp.tag_sets = vec![TagSet::new()];
        assert_eq!(rp.validate(), Ok(()));
        rp.max_staleness = Some(Duration::from_secs(120));
        assert_eq!(
            rp.validate(),
            Err(ReadPreferenceError::PrimaryWithMaxStaleness)
        );
        // The staleness floor depends on the topology, so it is left to selection.
        let mut rp = ReadPreference::with_mode(ReadPreferenceMode::Nearest);
        rp.max_staleness = Some(Duration::from_secs(1));
        assert_eq!(rp.validate(), Ok(()));
    }
}
