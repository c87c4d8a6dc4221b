//! Checking what the application was told against what the deployment holds afterwards.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::ledger::{IncrementTally, InsertBook, Ledger};

/// One counter whose final value is not what the acknowledgements say.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct CounterMismatch {
    /// The counter's `_id`.
    pub(crate) key: String,
    /// Increments known to be applied (acknowledged, or applied despite an error).
    pub(crate) certainly_applied: u64,
    /// Increments whose outcome the application was told is unknown.
    pub(crate) ambiguous: u64,
    /// The counter's final value.
    pub(crate) actual: i64,
}

impl CounterMismatch {
    /// Whether the difference is explained by increments whose outcome was ambiguous.
    pub(crate) fn within_ambiguity(&self) -> bool {
        let low = i128::from(self.certainly_applied);
        let high = low + i128::from(self.ambiguous);
        (low..=high).contains(&i128::from(self.actual))
    }

    /// What went wrong, in a sentence.
    pub(crate) fn describe(&self) -> String {
        let low = i128::from(self.certainly_applied);
        let actual = i128::from(self.actual);
        if actual < low {
            format!(
                "counter {}: {} increments acknowledged but it holds {}: {} acknowledged increments lost",
                self.key,
                self.certainly_applied,
                self.actual,
                low - actual
            )
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
/// `counter`; a counter missing from `finals` holds 0).
pub(crate) fn check_counters(ledger: &Ledger, finals: &BTreeMap<String, i64>) -> CounterCheck {
    let mut check = CounterCheck {
        final_total: finals.values().sum(),
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
            check.mismatches.push(CounterMismatch {
                key: key.clone(),
                certainly_applied: tally.certainly_applied(),
                ambiguous,
                actual,
            });
        }
    }
    check
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
/// documents carry it).
pub(crate) fn check_inserts(book: &InsertBook, stored: &BTreeMap<String, usize>) -> InsertCheck {
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
    let lost: Vec<&String> = must_be_there
        .iter()
        .copied()
        .filter(|id| count(id) == 0)
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
        let check = check_inserts(&book(), &stored(&[("ack", 1), ("maybe", 1)]));
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
}
