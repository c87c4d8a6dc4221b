//! Checking what the application was told against what the deployment holds afterwards.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::durability::Durability;
use super::ledger::{IncrementTally, InsertBook, Ledger};

/// The writes rollbacks discarded in one namespace, and the write concern the workers used:
/// together they say which known-applied writes may be missing.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rollbacks<'a> {
    /// `_id` -> how many of its writes rollbacks discarded.
    pub(crate) discarded: &'a BTreeMap<String, u64>,
    /// The workers' write concern.
    pub(crate) durability: Durability,
}

/// No rollback: every known-applied write must be there.
const NO_DISCARDED: &BTreeMap<String, u64> = &BTreeMap::new();

impl Rollbacks<'_> {
    /// A deployment that rolled nothing back.
    pub(crate) fn none() -> Rollbacks<'static> {
        Rollbacks {
            discarded: NO_DISCARDED,
            durability: Durability::Majority,
        }
    }

    fn of(&self, id: &str) -> u64 {
        self.discarded.get(id).copied().unwrap_or(0)
    }
}

/// One counter whose final value is not what the acknowledgements say.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct CounterMismatch {
    /// The counter's `_id`.
    pub(crate) key: String,
    /// Increments known to be applied (acknowledged, or applied despite an error).
    pub(crate) certainly_applied: u64,
    /// Increments whose outcome the application was told is unknown.
    pub(crate) ambiguous: u64,
    /// The counter's final value.
    pub(crate) actual: i64,
    /// Increments of this counter that rollbacks discarded.
    pub(crate) rolled_back: u64,
    /// How many of the known-applied increments may be among them: with `w: 1` every
    /// acknowledged one, with `w: "majority"` only those that failed on their write concern.
    pub(crate) loss_allowed: u64,
}

impl CounterMismatch {
    /// Whether the difference is explained by increments whose outcome was ambiguous, or
    /// by increments rollbacks discarded that the write concern did not protect.
    pub(crate) fn within_ambiguity(&self) -> bool {
        let known = i128::from(self.certainly_applied);
        let low = known - i128::from(self.loss_allowed);
        let high = known + i128::from(self.ambiguous);
        (low..=high).contains(&i128::from(self.actual))
    }

    /// Known-applied increments missing and explained by the rollbacks (the least number: an
    /// ambiguous increment that was applied may stand in for a lost one).
    pub(crate) fn lost_to_rollback(&self) -> u64 {
        let missing = i128::from(self.certainly_applied) - i128::from(self.actual);
        if self.within_ambiguity() && missing > 0 {
            u64::try_from(missing).unwrap_or(0)
        } else {
            0
        }
    }

    /// What went wrong, in a sentence.
    pub(crate) fn describe(&self) -> String {
        let low = i128::from(self.certainly_applied);
        let actual = i128::from(self.actual);
        if actual < low && self.within_ambiguity() {
            format!(
                "counter {}: {} increments known to be applied, it holds {}: {} of them were among the {} increments rollbacks discarded",
                self.key,
                self.certainly_applied,
                self.actual,
                low - actual,
                self.rolled_back
            )
        } else if actual < low {
            format!(
                "counter {}: {} increments acknowledged but it holds {}: {} acknowledged increments lost",
                self.key,
                self.certainly_applied,
                self.actual,
                low - actual
            ) + &if self.rolled_back > 0 {
                format!(
                    " (rollbacks discarded {} of its increments, {} of which the write concern allowed)",
                    self.rolled_back, self.loss_allowed
                )
            } else {
                String::new()
            }
        } else if self.within_ambiguity() {
            format!(
                "counter {}: {} increments acknowledged, it holds {}: {} of the {} increments reported as failed with an unknown outcome were applied",
                self.key,
                self.certainly_applied,
                self.actual,
                actual - low,
                self.ambiguous
            )
        } else {
            format!(
                "counter {}: {} increments acknowledged (+{} ambiguous) but it holds {}: {} increments applied twice",
                self.key,
                self.certainly_applied,
                self.ambiguous,
                self.actual,
                actual - low - i128::from(self.ambiguous)
            )
        }
    }
}

/// The counters, checked.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct CounterCheck {
    /// Counters incremented at least once.
    pub(crate) counters: usize,
    /// Acknowledged increments over every counter.
    pub(crate) acknowledged: u64,
    /// Failed increments the driver reported as applied anyway.
    pub(crate) applied_despite_error: u64,
    /// Failed increments the driver reported as not applied.
    pub(crate) not_applied: u64,
    /// Failed increments with an unknown outcome.
    pub(crate) ambiguous: u64,
    /// The sum of the counters' final values.
    pub(crate) final_total: i64,
    /// Counters whose final value differs from the increments known to be applied.
    pub(crate) mismatches: Vec<CounterMismatch>,
    /// Increments rollbacks discarded, over every counter.
    pub(crate) rolled_back: u64,
    /// Known-applied increments lost to those rollbacks (allowed by the write concern), over
    /// every counter.
    pub(crate) lost_to_rollback: u64,
}

impl CounterCheck {
    /// Every counter holds exactly the increments known to be applied.
    pub(crate) fn exact(&self) -> bool {
        self.mismatches.is_empty()
    }

    /// No counter lost an acknowledged increment or holds more than every increment that may
    /// have been applied: the driver kept its promises, even if some outcomes were unknown.
    pub(crate) fn within_bounds(&self) -> bool {
        self.mismatches
            .iter()
            .all(CounterMismatch::within_ambiguity)
    }
}

/// Compares the ledger's increments with the counters' final values (`finals`: `_id` ->
/// `counter`; a counter missing from `finals` holds 0), with no rollback.
pub(crate) fn check_counters(ledger: &Ledger, finals: &BTreeMap<String, i64>) -> CounterCheck {
    check_counters_after(ledger, finals, Rollbacks::none())
}

/// [`check_counters`] where `rollbacks` discarded some increments: a counter may then hold
/// fewer than its known-applied increments by at most those the write concern allowed to
/// be discarded (none acknowledged with `w: "majority"`).
pub(crate) fn check_counters_after(
    ledger: &Ledger,
    finals: &BTreeMap<String, i64>,
    rollbacks: Rollbacks<'_>,
) -> CounterCheck {
    let mut check = CounterCheck {
        final_total: finals.values().sum(),
        rolled_back: rollbacks.discarded.values().sum(),
        ..CounterCheck::default()
    };
    let keys: BTreeSet<&String> = ledger.increments.keys().chain(finals.keys()).collect();
    for key in keys {
        let tally = ledger.increments.get(key).copied().unwrap_or_default();
        let IncrementTally {
            acknowledged,
            applied_despite_error,
            not_applied,
            ambiguous,
        } = tally;
        check.counters += 1;
        check.acknowledged += acknowledged;
        check.applied_despite_error += applied_despite_error;
        check.not_applied += not_applied;
        check.ambiguous += ambiguous;
        let actual = finals.get(key).copied().unwrap_or(0);
        if i128::from(actual) != i128::from(tally.certainly_applied()) {
            let rolled_back = rollbacks.of(key);
            let exposed = if rollbacks.durability.acknowledged_may_roll_back() {
                tally.certainly_applied()
            } else {
                applied_despite_error
            };
            let mismatch = CounterMismatch {
                key: key.clone(),
                certainly_applied: tally.certainly_applied(),
                ambiguous,
                actual,
                rolled_back,
                loss_allowed: rolled_back.min(exposed),
            };
            check.lost_to_rollback += mismatch.lost_to_rollback();
            check.mismatches.push(mismatch);
        }
    }
    check
}

/// The discarded inserts the ledger cannot account for: an `_id` never sent, or one whose
/// insert the application was told was not applied (it was: a rollback discarded it).
fn unexplained_rollbacks(book: &InsertBook, rollbacks: Rollbacks<'_>) -> Vec<String> {
    let sent: BTreeSet<&String> = book
        .acknowledged
        .iter()
        .chain(&book.applied_despite_error)
        .chain(&book.ambiguous)
        .chain(&book.duplicate_key)
        .collect();
    let not_applied: BTreeSet<&String> = book.not_applied.iter().collect();
    let (mut misreported, mut strangers) = (Vec::new(), Vec::new());
    for id in rollbacks.discarded.keys() {
        if not_applied.contains(id) {
            misreported.push(id);
        } else if !sent.contains(id) {
            strangers.push(id);
        }
    }
    let mut sentences = Vec::new();
    if !misreported.is_empty() {
        sentences.push(format!(
            "{} inserts reported as not applied were applied and rolled back: {}",
            misreported.len(),
            name_some(&misreported)
        ));
    }
    if !strangers.is_empty() {
        sentences.push(format!(
            "{} rolled-back inserts were never sent by the workload: {}",
            strangers.len(),
            name_some(&strangers)
        ));
    }
    sentences
}

/// The inserts, checked.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct InsertCheck {
    /// Inserts attempted.
    pub(crate) attempted: usize,
    /// Acknowledged.
    pub(crate) acknowledged: usize,
    /// Reported as not applied.
    pub(crate) not_applied: usize,
    /// Outcome unknown to the application.
    pub(crate) ambiguous: usize,
    /// Of those, how many the deployment holds.
    pub(crate) ambiguous_present: usize,
    /// Documents the collection holds.
    pub(crate) stored: usize,
    /// Acknowledged inserts that are missing, one sentence.
    pub(crate) lost: Vec<String>,
    /// Inserts the server received or stored twice.
    pub(crate) duplicated: Vec<String>,
    /// Documents whose presence contradicts what the application was told.
    pub(crate) misreported: Vec<String>,
    /// `_id`s of this collection whose insert a rollback discarded.
    pub(crate) rolled_back: usize,
    /// Known-applied inserts missing because a rollback discarded them, as the write concern
    /// allows (`w: 1`, or a write concern error): every `_id`, named.
    pub(crate) lost_to_rollback: Vec<String>,
    /// Inserts a rollback discarded that are present all the same: the driver's retry applied
    /// them again on the new primary.
    pub(crate) reapplied_after_rollback: usize,
    /// Discarded inserts the ledger cannot account for: never sent by the workload, or
    /// reported to the application as not applied.
    pub(crate) unexplained_rollbacks: Vec<String>,
}

/// How many of a list of `_id`s to name in one violation before summarising.
const NAMED_IDS: usize = 5;

fn name_some(ids: &[&String]) -> String {
    let named: Vec<&str> = ids.iter().take(NAMED_IDS).map(|id| id.as_str()).collect();
    if ids.len() > NAMED_IDS {
        format!("{} and {} more", named.join(", "), ids.len() - NAMED_IDS)
    } else {
        named.join(", ")
    }
}

/// Compares the ledger's inserts with the collection's content (`stored`: `_id` -> how many
/// documents carry it) where `rollbacks` discarded some inserts. The known-applied inserts that
/// are missing must be exactly those a rollback discarded and the write concern did not
/// protect: one missing and not discarded is lost; one acknowledged with `w: "majority"` and
/// discarded is lost too; a discarded one the ledger does not know as sent and possibly
/// applied is unexplained.
pub(crate) fn check_inserts(
    book: &InsertBook,
    stored: &BTreeMap<String, usize>,
    rollbacks: Rollbacks<'_>,
) -> InsertCheck {
    let mut check = InsertCheck {
        attempted: book.attempted(),
        acknowledged: book.acknowledged.len(),
        not_applied: book.not_applied.len(),
        ambiguous: book.ambiguous.len(),
        stored: stored.values().sum(),
        ..InsertCheck::default()
    };
    let count = |id: &String| stored.get(id).copied().unwrap_or(0);
    let mut must_be_there: Vec<&String> = book.acknowledged.iter().collect();
    must_be_there.extend(&book.applied_despite_error);
    must_be_there.extend(&book.duplicate_key);
    let exposed: BTreeSet<&String> = if rollbacks.durability.acknowledged_may_roll_back() {
        must_be_there.iter().copied().collect()
    } else {
        book.applied_despite_error.iter().collect()
    };
    let (rolled_back, lost): (Vec<&String>, Vec<&String>) = must_be_there
        .iter()
        .copied()
        .filter(|id| count(id) == 0)
        .partition(|id| rollbacks.of(id) > 0 && exposed.contains(id));
    check.lost_to_rollback = rolled_back.into_iter().cloned().collect();
    check.rolled_back = rollbacks.discarded.len();
    check.reapplied_after_rollback = rollbacks
        .discarded
        .keys()
        .filter(|id| count(id) > 0)
        .count();
    check.unexplained_rollbacks = unexplained_rollbacks(book, rollbacks);
    let protected: Vec<&String> = lost
        .iter()
        .copied()
        .filter(|id| rollbacks.of(id) > 0)
        .collect();
    if !protected.is_empty() {
        check.lost.push(format!(
            "{} inserts acknowledged with w: majority were rolled back: {}",
            protected.len(),
            name_some(&protected)
        ));
    }
    let lost: Vec<&String> = lost
        .into_iter()
        .filter(|id| rollbacks.of(id) == 0)
        .collect();
    if !lost.is_empty() {
        check.lost.push(format!(
            "{} acknowledged inserts are missing: {}",
            lost.len(),
            name_some(&lost)
        ));
    }
    let phantom: Vec<&String> = book.not_applied.iter().filter(|id| count(id) > 0).collect();
    if !phantom.is_empty() {
        check.misreported.push(format!(
            "{} inserts reported as not applied are present: {}",
            phantom.len(),
            name_some(&phantom)
        ));
    }
    if !book.duplicate_key.is_empty() {
        let ids: Vec<&String> = book.duplicate_key.iter().collect();
        check.duplicated.push(format!(
            "{} inserts of a fresh _id failed with a duplicate key error, so the server received them twice: {}",
            ids.len(),
            name_some(&ids)
        ));
    }
    let doubled: Vec<&String> = stored
        .iter()
        .filter(|(_, copies)| **copies > 1)
        .map(|(id, _)| id)
        .collect();
    if !doubled.is_empty() {
        check.duplicated.push(format!(
            "{} _ids are stored more than once: {}",
            doubled.len(),
            name_some(&doubled)
        ));
    }
    check.ambiguous_present = book.ambiguous.iter().filter(|id| count(id) > 0).count();
    let attempted: BTreeSet<&String> = must_be_there
        .iter()
        .copied()
        .chain(&book.not_applied)
        .chain(&book.ambiguous)
        .collect();
    let strangers: Vec<&String> = stored.keys().filter(|id| !attempted.contains(id)).collect();
    if !strangers.is_empty() {
        check.misreported.push(format!(
            "{} stored documents were never inserted by the workload: {}",
            strangers.len(),
            name_some(&strangers)
        ));
    }
    check
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::ledger::{WorkerLog, WriteFate};

    fn ledger_with(increments: &[(&str, WriteFate)]) -> Ledger {
        let mut log = WorkerLog::default();
        for (key, fate) in increments {
            log.increment(key, *fate);
        }
        let mut ledger = Ledger::default();
        ledger.absorb(log);
        ledger
    }

    fn finals(values: &[(&str, i64)]) -> BTreeMap<String, i64> {
        values.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
    }

    #[test]
    fn acknowledged_increments_equal_to_the_counter_are_exact() {
        use WriteFate::*;
        let ledger = ledger_with(&[("a", Acknowledged), ("a", Acknowledged), ("b", NotApplied)]);
        let check = check_counters(&ledger, &finals(&[("a", 2)]));
        assert!(check.exact(), "{check:?}");
        assert_eq!(
            (check.acknowledged, check.not_applied, check.final_total),
            (2, 1, 2)
        );
    }

    #[test]
    fn a_lost_increment_is_out_of_bounds() {
        let ledger = ledger_with(&[
            ("a", WriteFate::Acknowledged),
            ("a", WriteFate::Acknowledged),
        ]);
        let check = check_counters(&ledger, &finals(&[("a", 1)]));
        assert!(!check.exact());
        assert!(!check.within_bounds());
        assert!(
            check.mismatches[0]
                .describe()
                .contains("1 acknowledged increments lost")
        );
    }

    #[test]
    fn a_double_increment_is_out_of_bounds() {
        let ledger = ledger_with(&[("a", WriteFate::Acknowledged), ("a", WriteFate::Ambiguous)]);
        let check = check_counters(&ledger, &finals(&[("a", 3)]));
        assert!(!check.within_bounds());
        assert!(check.mismatches[0].describe().contains("applied twice"));
    }

    #[test]
    fn an_applied_ambiguous_increment_is_within_bounds_but_not_exact() {
        let ledger = ledger_with(&[("a", WriteFate::Acknowledged), ("a", WriteFate::Ambiguous)]);
        let check = check_counters(&ledger, &finals(&[("a", 2)]));
        assert!(!check.exact());
        assert!(check.within_bounds());
        let unapplied = check_counters(&ledger, &finals(&[("a", 1)]));
        assert!(unapplied.exact());
    }

    #[test]
    fn a_counter_nobody_incremented_is_a_mismatch() {
        let check = check_counters(&Ledger::default(), &finals(&[("ghost", 4)]));
        assert!(!check.within_bounds());
    }

    fn stored(ids: &[(&str, usize)]) -> BTreeMap<String, usize> {
        ids.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
    }

    fn book() -> InsertBook {
        let mut book = InsertBook::default();
        book.record("ack".into(), WriteFate::Acknowledged);
        book.record("gone".into(), WriteFate::NotApplied);
        book.record("maybe".into(), WriteFate::Ambiguous);
        book
    }

    #[test]
    fn inserts_as_promised_pass() {
        let check = check_inserts(
            &book(),
            &stored(&[("ack", 1), ("maybe", 1)]),
            Rollbacks::none(),
        );
        assert!(
            check.lost.is_empty() && check.duplicated.is_empty() && check.misreported.is_empty(),
            "{check:?}"
        );
        assert_eq!(
            (check.attempted, check.ambiguous_present, check.stored),
            (3, 1, 2)
        );
    }

    #[test]
    fn every_broken_insert_promise_is_reported() {
        let mut book = book();
        book.duplicate_key.push("dup".into());
        let check = check_inserts(
            &book,
            &stored(&[("gone", 1), ("maybe", 2), ("dup", 1), ("stranger", 1)]),
            Rollbacks::none(),
        );
        let all: Vec<&str> = check
            .lost
            .iter()
            .chain(&check.duplicated)
            .chain(&check.misreported)
            .map(String::as_str)
            .collect();
        let all = all.join("\n");
        assert_eq!(
            (
                check.lost.len(),
                check.duplicated.len(),
                check.misreported.len()
            ),
            (1, 2, 2)
        );
        assert!(
            all.contains("acknowledged inserts are missing: ack"),
            "{all}"
        );
        assert!(all.contains("not applied are present: gone"), "{all}");
        assert!(all.contains("received them twice: dup"), "{all}");
        assert!(all.contains("stored more than once: maybe"), "{all}");
        assert!(
            all.contains("never inserted by the workload: stranger"),
            "{all}"
        );
    }

    fn discarded(ids: &[(&str, u64)]) -> BTreeMap<String, u64> {
        ids.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
    }

    fn w1(discarded: &BTreeMap<String, u64>) -> Rollbacks<'_> {
        Rollbacks {
            discarded,
            durability: Durability::W1,
        }
    }

    fn majority(discarded: &BTreeMap<String, u64>) -> Rollbacks<'_> {
        Rollbacks {
            discarded,
            durability: Durability::Majority,
        }
    }

    /// w:1: the acknowledged insert that is missing is exactly the one rolled back.
    #[test]
    fn w1_losses_that_rollbacks_list_are_accounted_not_lost() {
        let listed = discarded(&[("ack", 1)]);
        let check = check_inserts(&book(), &stored(&[]), w1(&listed));
        assert!(check.lost.is_empty(), "{check:?}");
        assert_eq!(check.lost_to_rollback, ["ack"]);
        assert!(check.unexplained_rollbacks.is_empty(), "{check:?}");
    }

    /// A missing acknowledged insert that no rollback lists is lost, whatever the write
    /// concern.
    #[test]
    fn a_loss_no_rollback_lists_is_lost() {
        let listed = discarded(&[("maybe", 1)]);
        let check = check_inserts(&book(), &stored(&[]), w1(&listed));
        assert_eq!(check.lost.len(), 1, "{check:?}");
        assert!(check.lost[0].contains("missing: ack"), "{check:?}");
        assert!(check.lost_to_rollback.is_empty());
    }

    /// A listed write the ledger cannot place (never sent, or reported not applied) is
    /// unexplained; one the driver re-applied after its rollback is present and fine.
    #[test]
    fn a_listed_write_the_checker_cannot_find_is_unexplained() {
        let listed = discarded(&[("ack", 1), ("gone", 1), ("stranger", 2)]);
        let check = check_inserts(&book(), &stored(&[("ack", 1)]), w1(&listed));
        assert!(check.lost.is_empty(), "{check:?}");
        assert_eq!(check.reapplied_after_rollback, 1);
        let unexplained = check.unexplained_rollbacks.join("\n");
        assert!(
            unexplained.contains("reported as not applied were applied and rolled back: gone"),
            "{unexplained}"
        );
        assert!(
            unexplained.contains("never sent by the workload: stranger"),
            "{unexplained}"
        );
    }

    /// w: majority: an acknowledged write must never roll back; one that failed on its write
    /// concern may.
    #[test]
    fn majority_acknowledged_writes_may_not_roll_back() {
        let mut book = book();
        book.record("wce".into(), WriteFate::AppliedDespiteError);
        let listed = discarded(&[("ack", 1), ("wce", 1)]);
        let check = check_inserts(&book, &stored(&[]), majority(&listed));
        assert_eq!(check.lost_to_rollback, ["wce"]);
        assert_eq!(check.lost.len(), 1, "{check:?}");
        assert!(
            check.lost[0].contains("acknowledged with w: majority were rolled back: ack"),
            "{check:?}"
        );
    }

    #[test]
    fn counters_allow_exactly_the_rolled_back_acknowledged_increments_with_w1() {
        use WriteFate::*;
        let ledger = ledger_with(&[
            ("a", Acknowledged),
            ("a", Acknowledged),
            ("a", Acknowledged),
        ]);
        let listed = discarded(&[("a", 1)]);
        let one_lost = check_counters_after(&ledger, &finals(&[("a", 2)]), w1(&listed));
        assert!(one_lost.within_bounds(), "{one_lost:?}");
        assert_eq!((one_lost.rolled_back, one_lost.lost_to_rollback), (1, 1));
        assert!(
            one_lost.mismatches[0]
                .describe()
                .contains("1 of them were among the 1 increments rollbacks discarded"),
            "{one_lost:?}"
        );
        let two_lost = check_counters_after(&ledger, &finals(&[("a", 1)]), w1(&listed));
        assert!(!two_lost.within_bounds(), "one more lost than rolled back");
        assert_eq!(two_lost.lost_to_rollback, 0);
        let majority_lost = check_counters_after(&ledger, &finals(&[("a", 2)]), majority(&listed));
        assert!(
            !majority_lost.within_bounds(),
            "w: majority allows no acknowledged loss"
        );
        assert!(
            check_counters_after(&ledger, &finals(&[("a", 3)]), w1(&listed)).exact(),
            "a rolled-back increment the retry applied again"
        );
    }

    #[test]
    fn counters_allow_rolled_back_write_concern_failures_with_majority() {
        use WriteFate::*;
        let ledger = ledger_with(&[("a", Acknowledged), ("a", AppliedDespiteError)]);
        let listed = discarded(&[("a", 2)]);
        let check = check_counters_after(&ledger, &finals(&[("a", 1)]), majority(&listed));
        assert!(check.within_bounds(), "{check:?}");
        assert_eq!(check.mismatches[0].loss_allowed, 1);
        let both = check_counters_after(&ledger, &finals(&[("a", 0)]), majority(&listed));
        assert!(!both.within_bounds(), "{both:?}");
    }
}
