//! A replica set member's configuration: priority, votes, hidden, arbiter, tags.

use super::control_error::ControlError;

/// A replica set member's configuration (the `members[i]` of a replica set config).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct MemberOptions {
    /// Election priority; 0 means never primary (the member is then a "passive").
    pub priority: f64,
    /// 1 for a voting member, 0 for a non-voting one.
    pub votes: u8,
    /// Hidden from `hosts`/`passives`; requires priority 0.
    pub hidden: bool,
    /// An arbiter: votes, holds no data, reported in `arbiters`.
    pub arbiter_only: bool,
    /// Replica set tags, reported in the member's own hello.
    pub tags: Vec<(String, String)>,
}

impl Default for MemberOptions {
    fn default() -> Self {
        Self {
            priority: 1.0,
            votes: 1,
            hidden: false,
            arbiter_only: false,
            tags: Vec::new(),
        }
    }
}

impl MemberOptions {
    /// An electable data-bearing member with priority 1.
    pub fn electable() -> Self {
        Self::default()
    }

    /// A priority-0 ("passive") member.
    pub fn passive() -> Self {
        Self {
            priority: 0.0,
            ..Self::default()
        }
    }

    /// A hidden member (priority 0).
    pub fn hidden() -> Self {
        Self {
            priority: 0.0,
            hidden: true,
            ..Self::default()
        }
    }

    /// An arbiter.
    pub fn arbiter() -> Self {
        Self {
            priority: 0.0,
            arbiter_only: true,
            ..Self::default()
        }
    }

    /// Sets the priority.
    #[must_use]
    pub fn with_priority(mut self, priority: f64) -> Self {
        self.priority = priority;
        self
    }

    /// Sets the number of votes (0 or 1).
    #[must_use]
    pub fn with_votes(mut self, votes: u8) -> Self {
        self.votes = votes;
        self
    }

    /// Adds a tag.
    #[must_use]
    pub fn with_tag(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.tags.push((key.into(), value.into()));
        self
    }

    /// Could this member ever be elected?
    pub fn is_electable(&self) -> bool {
        !self.arbiter_only && !self.hidden && self.priority > 0.0 && self.votes > 0
    }

    pub(crate) fn validate(&self, host: &str) -> Result<(), ControlError> {
        let invalid = |why: &str| ControlError::InvalidConfig(format!("member {host}: {why}"));
        if !(0.0..=1000.0).contains(&self.priority) {
            return Err(invalid("priority must be between 0 and 1000"));
        }
        if self.votes > 1 {
            return Err(invalid("votes must be 0 or 1"));
        }
        if self.hidden && self.priority > 0.0 {
            return Err(invalid("priority must be 0 when hidden=true"));
        }
        if self.arbiter_only && self.priority > 0.0 {
            return Err(invalid("priority must be 0 for an arbiter"));
        }
        if self.votes == 0 && self.priority > 0.0 {
            return Err(invalid("priority must be 0 when non-voting (votes:0)"));
        }
        Ok(())
    }
}
