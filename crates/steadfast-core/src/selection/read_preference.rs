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

/// A read preference: which members a read may go to. Every mode but primary may carry
/// [`ReadPreferenceOptions`] (tag sets, a staleness bound).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
#[allow(
    missing_docs,
    reason = "the modes are documented on ReadPreferenceMode"
)]
pub enum ReadPreference {
    #[default]
    Primary,
    Secondary {
        options: Option<ReadPreferenceOptions>,
    },
    PrimaryPreferred {
        options: Option<ReadPreferenceOptions>,
    },
    SecondaryPreferred {
        options: Option<ReadPreferenceOptions>,
    },
    Nearest {
        options: Option<ReadPreferenceOptions>,
    },
}

/// What a non-primary read preference may add to its mode.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadPreferenceOptions {
    /// Tag sets tried in order; the first that matches any eligible server wins. `None` or
    /// empty means "no tag constraint".
    pub tag_sets: Option<Vec<TagSet>>,
    /// The largest replication lag tolerated (`maxStalenessSeconds`); `None` means no limit.
    pub max_staleness: Option<Duration>,
    /// Hedged reads for sharded clusters (deprecated by MongoDB 8.0, which ignores it).
    pub hedge: Option<HedgedReadOptions>,
}

/// Whether mongos may send a read to two members at once (`hedge` of a read preference).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HedgedReadOptions {
    /// Hedged reads on or off.
    pub enabled: bool,
}

impl HedgedReadOptions {
    /// Hedged reads on (`true`) or off.
    pub fn new(enabled: bool) -> Self {
        HedgedReadOptions { enabled }
    }

    /// A builder, starting with hedged reads off.
    pub fn builder() -> HedgedReadOptionsBuilder {
        HedgedReadOptionsBuilder::default()
    }
}

/// Builds [`HedgedReadOptions`].
#[derive(Clone, Copy, Debug, Default)]
#[must_use]
pub struct HedgedReadOptionsBuilder {
    enabled: bool,
}

impl HedgedReadOptionsBuilder {
    /// Sets [`HedgedReadOptions::enabled`].
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }

    /// The options.
    pub fn build(self) -> HedgedReadOptions {
        HedgedReadOptions::new(self.enabled)
    }
}

impl ReadPreferenceOptions {
    /// A builder, starting from no tags, no staleness bound, no hedging.
    pub fn builder() -> ReadPreferenceOptionsBuilder {
        ReadPreferenceOptionsBuilder::default()
    }
}

/// Builds [`ReadPreferenceOptions`]; each setter takes the value or an `Option`.
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct ReadPreferenceOptionsBuilder {
    options: ReadPreferenceOptions,
}

impl ReadPreferenceOptionsBuilder {
    /// Sets [`ReadPreferenceOptions::tag_sets`].
    pub fn tag_sets(mut self, tag_sets: impl Into<Option<Vec<TagSet>>>) -> Self {
        self.options.tag_sets = tag_sets.into();
        self
    }

    /// Sets [`ReadPreferenceOptions::max_staleness`].
    pub fn max_staleness(mut self, max_staleness: impl Into<Option<Duration>>) -> Self {
        self.options.max_staleness = max_staleness.into();
        self
    }

    /// Sets [`ReadPreferenceOptions::hedge`].
    pub fn hedge(mut self, hedge: impl Into<Option<HedgedReadOptions>>) -> Self {
        self.options.hedge = hedge.into();
        self
    }

    /// The options.
    pub fn build(self) -> ReadPreferenceOptions {
        self.options
    }
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
        ReadPreference::Primary
    }

    /// Mode secondary (reads go to secondaries only) with `options`.
    pub fn secondary(options: impl Into<Option<ReadPreferenceOptions>>) -> Self {
        ReadPreference::Secondary {
            options: options.into(),
        }
    }

    /// Mode primaryPreferred (the primary when there is one, else a secondary) with `options`.
    pub fn primary_preferred(options: impl Into<Option<ReadPreferenceOptions>>) -> Self {
        ReadPreference::PrimaryPreferred {
            options: options.into(),
        }
    }

    /// Mode secondaryPreferred (a secondary when there is one, else the primary) with
    /// `options`.
    pub fn secondary_preferred(options: impl Into<Option<ReadPreferenceOptions>>) -> Self {
        ReadPreference::SecondaryPreferred {
            options: options.into(),
        }
    }

    /// Mode nearest (any member within the latency window) with `options`.
    pub fn nearest(options: impl Into<Option<ReadPreferenceOptions>>) -> Self {
        ReadPreference::Nearest {
            options: options.into(),
        }
    }

    /// A mode with no options.
    pub fn with_mode(mode: ReadPreferenceMode) -> Self {
        let options = None;
        match mode {
            ReadPreferenceMode::Primary => ReadPreference::Primary,
            ReadPreferenceMode::PrimaryPreferred => ReadPreference::PrimaryPreferred { options },
            ReadPreferenceMode::Secondary => ReadPreference::Secondary { options },
            ReadPreferenceMode::SecondaryPreferred => {
                ReadPreference::SecondaryPreferred { options }
            }
            ReadPreferenceMode::Nearest => ReadPreference::Nearest { options },
        }
    }

    /// A read preference from its parts, as a connection string or a test file spells them.
    /// Empty tag sets and no staleness bound leave the options `None`.
    ///
    /// # Errors
    /// [`ReadPreferenceError`] for mode primary with tag sets (other than empty sets) or with
    /// a staleness bound: the server selection specification forbids both.
    pub fn from_parts(
        mode: ReadPreferenceMode,
        tag_sets: Vec<TagSet>,
        max_staleness: Option<Duration>,
    ) -> Result<Self, ReadPreferenceError> {
        if mode == ReadPreferenceMode::Primary {
            if tag_sets.iter().any(|t| !t.is_empty()) {
                return Err(ReadPreferenceError::PrimaryWithTags);
            }
            if max_staleness.is_some() {
                return Err(ReadPreferenceError::PrimaryWithMaxStaleness);
            }
        }
        let options = ReadPreferenceOptions {
            tag_sets: (!tag_sets.is_empty()).then_some(tag_sets),
            max_staleness,
            hedge: None,
        };
        Ok(ReadPreference::with_mode(mode).with_options(options))
    }

    /// This mode with `options` (mode primary takes none and stays as it is).
    #[must_use]
    pub fn with_options(self, options: ReadPreferenceOptions) -> Self {
        let options = (options != ReadPreferenceOptions::default()).then_some(options);
        match self {
            ReadPreference::Primary => ReadPreference::Primary,
            ReadPreference::PrimaryPreferred { .. } => ReadPreference::PrimaryPreferred { options },
            ReadPreference::Secondary { .. } => ReadPreference::Secondary { options },
            ReadPreference::SecondaryPreferred { .. } => {
                ReadPreference::SecondaryPreferred { options }
            }
            ReadPreference::Nearest { .. } => ReadPreference::Nearest { options },
        }
    }

    /// The mode.
    pub fn mode(&self) -> ReadPreferenceMode {
        match self {
            ReadPreference::Primary => ReadPreferenceMode::Primary,
            ReadPreference::PrimaryPreferred { .. } => ReadPreferenceMode::PrimaryPreferred,
            ReadPreference::Secondary { .. } => ReadPreferenceMode::Secondary,
            ReadPreference::SecondaryPreferred { .. } => ReadPreferenceMode::SecondaryPreferred,
            ReadPreference::Nearest { .. } => ReadPreferenceMode::Nearest,
        }
    }

    /// The options, if the mode has any.
    pub fn options(&self) -> Option<&ReadPreferenceOptions> {
        match self {
            ReadPreference::Primary => None,
            ReadPreference::PrimaryPreferred { options }
            | ReadPreference::Secondary { options }
            | ReadPreference::SecondaryPreferred { options }
            | ReadPreference::Nearest { options } => options.as_ref(),
        }
    }

    /// The tag sets (empty: no tag constraint).
    pub fn tag_sets(&self) -> &[TagSet] {
        self.options()
            .and_then(|o| o.tag_sets.as_deref())
            .unwrap_or_default()
    }

    /// The staleness bound, if any.
    pub fn max_staleness(&self) -> Option<Duration> {
        self.options().and_then(|o| o.max_staleness)
    }

    /// The hedged-read setting, if any.
    pub fn hedge(&self) -> Option<HedgedReadOptions> {
        self.options().and_then(|o| o.hedge)
    }

    /// Whether this preference allows reading from a non-primary (and so needs `secondaryOk`).
    pub fn allows_secondaries(&self) -> bool {
        self.mode() != ReadPreferenceMode::Primary
    }
}

impl fmt::Display for ReadPreference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.mode())?;
        if !self.tag_sets().is_empty() {
            write!(f, ", tag sets {:?}", self.tag_sets())?;
        }
        if let Some(staleness) = self.max_staleness() {
            write!(f, ", maxStalenessSeconds {}", staleness.as_secs())?;
        }
        Ok(())
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
        let tags = vec![TagSet::from([("dc".into(), "ny".into())])];
        let primary = ReadPreferenceMode::Primary;
        assert_eq!(
            ReadPreference::from_parts(primary, tags.clone(), None),
            Err(ReadPreferenceError::PrimaryWithTags)
        );
        assert_eq!(
            ReadPreference::from_parts(primary, vec![TagSet::new()], None),
            Ok(ReadPreference::Primary)
        );
        assert_eq!(
            ReadPreference::from_parts(primary, Vec::new(), Some(Duration::from_secs(120))),
            Err(ReadPreferenceError::PrimaryWithMaxStaleness)
        );
        // The staleness floor depends on the topology, so it is left to selection.
        let nearest = ReadPreference::from_parts(
            ReadPreferenceMode::Nearest,
            tags.clone(),
            Some(Duration::from_secs(1)),
        )
        .unwrap();
        assert_eq!(nearest.tag_sets(), tags.as_slice());
        assert_eq!(nearest.max_staleness(), Some(Duration::from_secs(1)));
    }

    #[test]
    fn options_without_content_are_none() {
        let secondary = ReadPreference::from_parts(ReadPreferenceMode::Secondary, vec![], None);
        assert_eq!(secondary, Ok(ReadPreference::Secondary { options: None }));
        let options = ReadPreferenceOptions::builder()
            .max_staleness(Duration::from_secs(90))
            .build();
        let nearest = ReadPreference::Nearest {
            options: Some(options),
        };
        assert_eq!(nearest.mode(), ReadPreferenceMode::Nearest);
        assert_eq!(nearest.max_staleness(), Some(Duration::from_secs(90)));
        assert!(nearest.tag_sets().is_empty());
    }
}
