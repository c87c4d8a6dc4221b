//! Links between members and the vote count of an election: who can reach whom when a
//! partition cuts some links but not others, and who would grant a candidate its vote. A voter
//! grants its vote to a candidate it can reach whose op log is at least as new as its own (an
//! arbiter, which holds no op log, to any candidate it can reach), as mongod's voters do; a
//! candidate wins with the votes of a majority of the voting members.

use bson::Timestamp;

use super::{Health, NodeIndex, Role, Topology};
use crate::deployment::control_error::ControlError;

impl Topology {
    /// Whether `a` and `b` can talk to each other: both up and their link not cut (a member
    /// always reaches itself while up).
    pub fn is_linked(&self, a: NodeIndex, b: NodeIndex) -> bool {
        let up = |index: NodeIndex| {
            self.nodes
                .get(index)
                .is_some_and(|node| node.health == Health::Up)
        };
        up(a) && up(b) && (a == b || !self.cut_links.contains(&ordered(a, b)))
    }

    /// The links `partition ... from` cut, as `(lower index, higher index)` pairs.
    pub fn cut_links(&self) -> impl Iterator<Item = (NodeIndex, NodeIndex)> + '_ {
        self.cut_links.iter().copied()
    }

    /// Records the newest op log entry `index` has applied. Not visible in hello, so no
    /// topology change; elections read it.
    pub fn set_applied(&mut self, index: NodeIndex, applied: Timestamp) {
        if let Some(node) = self.nodes.get_mut(index) {
            node.applied = applied;
        }
    }

    /// Cuts the links between `member` and each of `from` (clients still reach every node).
    /// The primary keeps its role until another member is elected, as mongod's does until
    /// it notices.
    ///
    /// # Errors
    ///
    /// If a member is unknown, or `from` names `member` itself.
    pub fn cut(&mut self, member: NodeIndex, from: &[NodeIndex]) -> Result<(), ControlError> {
        self.node_mut(member)?;
        for &other in from {
            self.node_mut(other)?;
            if other == member {
                return Err(ControlError::BadArgument(
                    "a member cannot be partitioned from itself".into(),
                ));
            }
        }
        let before = self.cut_links.len();
        self.cut_links
            .extend(from.iter().map(|&other| ordered(member, other)));
        if self.cut_links.len() != before {
            self.bump_all();
        }
        Ok(())
    }

    /// Restores every link of `member`; returns whether any was cut.
    pub(super) fn restore_links(&mut self, member: NodeIndex) -> bool {
        let before = self.cut_links.len();
        self.cut_links.retain(|&(a, b)| a != member && b != member);
        self.cut_links.len() != before
    }

    fn voters(&self) -> usize {
        self.nodes.iter().filter(|node| node.is_voter()).count()
    }

    /// How many voting members would grant `candidate` their vote now.
    pub fn votes_for(&self, candidate: NodeIndex) -> usize {
        let Some(applied) = self.nodes.get(candidate).map(|node| node.applied) else {
            return 0;
        };
        self.nodes
            .iter()
            .enumerate()
            .filter(|(voter, node)| {
                node.is_voter()
                    && self.is_linked(candidate, *voter)
                    && (node.role == Role::Arbiter || node.applied <= applied)
            })
            .count()
    }

    /// Whether `candidate` would collect the votes of a majority of the voting members.
    pub fn can_win(&self, candidate: NodeIndex) -> bool {
        self.votes_for(candidate) > self.voters() / 2
    }

    /// How many members a `w: "majority"` write needs: a majority of the voting members, but
    /// no more than there are voting data-bearing members (mongod's `writeMajorityCount`).
    pub fn write_majority_count(&self) -> usize {
        let data_bearing_voters = self
            .nodes
            .iter()
            .filter(|node| node.is_voter() && node.role != Role::Arbiter)
            .count();
        (self.voters() / 2 + 1).min(data_bearing_voters)
    }

    /// The newest position at least [`Topology::write_majority_count`] of `positions` (the
    /// applied positions of voting data-bearing members on the primary's branch) have reached.
    pub fn majority_point(&self, positions: &mut [Timestamp]) -> Option<Timestamp> {
        positions.sort_unstable_by(|a, b| b.cmp(a));
        let needed = self.write_majority_count().max(1);
        positions.get(needed - 1).copied()
    }

    /// Whether the primary reaches a majority of the voting members over uncut links (a
    /// primary that does not is replaced by an automatic election on the majority side).
    pub fn primary_sees_majority(&self) -> bool {
        self.primary.is_some_and(|primary| {
            let reached = self
                .nodes
                .iter()
                .enumerate()
                .filter(|(index, node)| node.is_voter() && self.is_linked(primary, *index))
                .count();
            reached > self.voters() / 2
        })
    }

    /// The member an election would choose now among those that can win it: the newest op
    /// log first (a staler candidate would roll the others back), then the highest priority,
    /// then the lowest index; frozen members sit out when `unfrozen_at` is given.
    pub(super) fn best_winner(&self, unfrozen_at: Option<std::time::Instant>) -> Option<NodeIndex> {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(index, node)| {
                node.is_reachable()
                    && node.options.is_electable()
                    && matches!(node.role, Role::Secondary | Role::Primary)
                    && !unfrozen_at.is_some_and(|now| node.is_frozen(now))
                    && self.can_win(*index)
            })
            .max_by(|(a_index, a), (b_index, b)| {
                a.applied
                    .cmp(&b.applied)
                    .then(a.options.priority.total_cmp(&b.options.priority))
                    .then(b_index.cmp(a_index))
            })
            .map(|(index, _)| index)
    }
}

impl Topology {
    /// The member that would take over from the primary now by priority, as mongod's priority
    /// takeover does: a secondary the primary reaches, with a higher priority than the
    /// primary's, caught up with it (its op log as new), not frozen, that would win; the
    /// highest priority first.
    pub fn priority_takeover_candidate(&self, now: std::time::Instant) -> Option<NodeIndex> {
        let primary = self.primary?;
        let leader = self.nodes.get(primary)?;
        self.nodes
            .iter()
            .enumerate()
            .filter(|(index, node)| {
                node.role == Role::Secondary
                    && node.options.is_electable()
                    && node.options.priority > leader.options.priority
                    && node.applied >= leader.applied
                    && !node.is_frozen(now)
                    && self.is_linked(primary, *index)
                    && self.can_win(*index)
            })
            .max_by(|(a_index, a), (b_index, b)| {
                a.options
                    .priority
                    .total_cmp(&b.options.priority)
                    .then(b_index.cmp(a_index))
            })
            .map(|(index, _)| index)
    }
}

fn ordered(a: NodeIndex, b: NodeIndex) -> (NodeIndex, NodeIndex) {
    (a.min(b), a.max(b))
}
