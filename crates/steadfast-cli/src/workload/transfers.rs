//! The transfer workload's bookkeeping and its checks: plain values, no driver, no I/O.
//!
//! Each transfer moves `amount` from one account to another in one transaction that writes
//! three documents: both balances (`$inc`) and a transfer record `{_id, from, to, amount}`.
//! The record makes every transaction visible on its own, so that afterwards, reading the
//! store directly:
//! - the balances must sum to what they summed to at the start;
//! - every transfer the application saw commit has exactly one record, every transfer it saw
//!   fail has none, and one whose outcome it was told is unknown has at most one;
//! - every account must hold its opening balance plus what the stored records moved in and
//!   out: a transaction that updated a balance without writing its record (or the reverse, or
//!   only one of the two balances) breaks that equation for some account.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::report::{Check, Verdict};

/// One transfer, as the application planned it (and as its record stores it).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Transfer {
    /// The transfer record's `_id`, unique per run.
    pub(crate) id: String,
    /// The account debited.
    pub(crate) from: String,
    /// The account credited.
    pub(crate) to: String,
    /// How much moves.
    pub(crate) amount: i64,
}

/// How a transfer ended, from the application's point of view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub(crate) enum TransferFate {
    /// The transaction committed: the application was told so.
    Committed,
    /// The transaction failed and the driver's error says it did not commit (it failed before
    /// the commit, or with `TransientTransactionError`, or a commit error without
    /// `UnknownTransactionCommitResult`).
    NotCommitted,
    /// The commit's outcome is unknown (`UnknownTransactionCommitResult`, or the transfer hung
    /// and was abandoned).
    Unknown,
}

/// Every transfer the workers attempted, with its fate.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TransferBook {
    pub(crate) transfers: Vec<(Transfer, TransferFate)>,
    /// Transfers whose record was already stored when an attempt inserted it: an earlier
    /// attempt committed, and the convenient API ran the callback again.
    pub(crate) reapplied: u64,
    /// Times the convenient API ran a transfer's callback, over every transfer.
    pub(crate) callback_runs: u64,
    /// The error each failed transfer returned, by transfer id: a violation names it.
    pub(crate) errors: BTreeMap<String, String>,
}

impl TransferBook {
    /// Records how `transfer` ended.
    pub(crate) fn record(&mut self, transfer: Transfer, fate: TransferFate) {
        self.transfers.push((transfer, fate));
    }

    /// Adds another worker's book.
    pub(crate) fn absorb(&mut self, other: TransferBook) {
        self.transfers.extend(other.transfers);
        self.reapplied += other.reapplied;
        self.callback_runs += other.callback_runs;
        self.errors.extend(other.errors);
    }

    fn count(&self, fate: TransferFate) -> usize {
        self.transfers.iter().filter(|(_, f)| *f == fate).count()
    }
}

/// What the store holds at the end: every account's balance and every transfer record (a
/// record stored twice appears twice).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct StoredTransfers {
    pub(crate) balances: BTreeMap<String, i64>,
    pub(crate) records: Vec<Transfer>,
}

/// The transfers, checked. Each list holds one sentence per kind of violation found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct TransferCheck {
    pub(crate) accounts: usize,
    pub(crate) opening_total: i128,
    pub(crate) final_total: i128,
    pub(crate) committed: usize,
    pub(crate) not_committed: usize,
    pub(crate) unknown: usize,
    /// Of the transfers with an unknown outcome, how many the store holds.
    pub(crate) unknown_applied: usize,
    pub(crate) records_stored: usize,
    /// Committed transfers whose last attempt found its record already stored.
    pub(crate) reapplied: u64,
    /// Times the convenient API ran a callback, over every transfer.
    pub(crate) callback_runs: u64,
    /// Committed transfers without a record.
    pub(crate) lost: Vec<String>,
    /// Records stored more than once.
    pub(crate) doubled: Vec<String>,
    /// Records of transfers reported as not committed, or never attempted, or stored with
    /// other content than planned.
    pub(crate) misreported: Vec<String>,
    /// Accounts whose balance disagrees with the stored records.
    pub(crate) half_applied: Vec<String>,
}

/// How many ids or accounts to name in one sentence before summarising.
const NAMED: usize = 5;

fn name_some<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.into_iter().collect();
    let shown = names
        .iter()
        .take(NAMED)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    match names.len().checked_sub(NAMED) {
        Some(more) if more > 0 => format!("{shown} and {more} more"),
        _ => shown,
    }
}

/// Compares the application's `book` with what the store holds, given every account's
/// `opening` balance.
pub(crate) fn check_transfers(
    book: &TransferBook,
    opening: &BTreeMap<String, i64>,
    stored: &StoredTransfers,
) -> TransferCheck {
    let mut check = TransferCheck {
        accounts: opening.len(),
        opening_total: opening.values().map(|b| i128::from(*b)).sum(),
        final_total: stored.balances.values().map(|b| i128::from(*b)).sum(),
        committed: book.count(TransferFate::Committed),
        not_committed: book.count(TransferFate::NotCommitted),
        unknown: book.count(TransferFate::Unknown),
        records_stored: stored.records.len(),
        ..TransferCheck::default()
    };
    let mut copies: BTreeMap<&str, Vec<&Transfer>> = BTreeMap::new();
    for record in &stored.records {
        copies.entry(record.id.as_str()).or_default().push(record);
    }
    compare_fates(book, &copies, &mut check);
    check_records_content(book, &copies, &mut check);
    check_balances(opening, stored, &mut check);
    check
}

/// Committed: one record; not committed: none; unknown: at most one.
fn compare_fates(
    book: &TransferBook,
    copies: &BTreeMap<&str, Vec<&Transfer>>,
    check: &mut TransferCheck,
) {
    let stored = |id: &str| copies.get(id).map_or(0, Vec::len);
    let with_fate = |fate: TransferFate, present: bool| -> Vec<&str> {
        book.transfers
            .iter()
            .filter(|(t, f)| *f == fate && (stored(&t.id) > 0) == present)
            .map(|(t, _)| t.id.as_str())
            .collect()
    };
    let lost = with_fate(TransferFate::Committed, false);
    if !lost.is_empty() {
        check.lost.push(format!(
            "{} committed transfers have no record: {}",
            lost.len(),
            name_some(lost)
        ));
    }
    let phantom = with_fate(TransferFate::NotCommitted, true);
    if let Some(first) = phantom.first() {
        let error = book.errors.get(*first).map_or("", String::as_str);
        check.misreported.push(format!(
            "{} transfers reported as not committed are stored: {} ({first} failed with: {error})",
            phantom.len(),
            name_some(phantom.iter().copied())
        ));
    }
    check.unknown_applied = with_fate(TransferFate::Unknown, true).len();
    let doubled: Vec<&str> = copies
        .iter()
        .filter(|(_, records)| records.len() > 1)
        .map(|(id, _)| *id)
        .collect();
    if !doubled.is_empty() {
        check.doubled.push(format!(
            "{} transfer records are stored more than once: {}",
            doubled.len(),
            name_some(doubled)
        ));
    }
}

/// Every stored record was planned by the application, with the same accounts and amount.
fn check_records_content(
    book: &TransferBook,
    copies: &BTreeMap<&str, Vec<&Transfer>>,
    check: &mut TransferCheck,
) {
    let planned: BTreeMap<&str, &Transfer> = book
        .transfers
        .iter()
        .map(|(t, _)| (t.id.as_str(), t))
        .collect();
    let mut strangers = Vec::new();
    let mut altered = Vec::new();
    for (id, records) in copies {
        match planned.get(id) {
            None => strangers.push(*id),
            Some(plan) if records.iter().any(|record| record != plan) => altered.push(*id),
            Some(_) => {}
        }
    }
    if !strangers.is_empty() {
        check.misreported.push(format!(
            "{} stored transfer records were never attempted: {}",
            strangers.len(),
            name_some(strangers)
        ));
    }
    if !altered.is_empty() {
        check.misreported.push(format!(
            "{} stored transfer records differ from what was sent: {}",
            altered.len(),
            name_some(altered)
        ));
    }
}

/// Each account holds its opening balance plus the stored records' movements, and no account
/// appeared or vanished.
fn check_balances(
    opening: &BTreeMap<String, i64>,
    stored: &StoredTransfers,
    check: &mut TransferCheck,
) {
    let mut expected: BTreeMap<&str, i128> = opening
        .iter()
        .map(|(account, balance)| (account.as_str(), i128::from(*balance)))
        .collect();
    for record in &stored.records {
        let amount = i128::from(record.amount);
        *expected.entry(record.from.as_str()).or_default() -= amount;
        *expected.entry(record.to.as_str()).or_default() += amount;
    }
    let accounts: BTreeSet<&str> = expected
        .keys()
        .copied()
        .chain(stored.balances.keys().map(String::as_str))
        .collect();
    let mut wrong = Vec::new();
    for account in accounts {
        let want = expected.get(account).copied().unwrap_or(0);
        let holds = stored.balances.get(account).map(|b| i128::from(*b));
        if holds != Some(want) && !(holds.is_none() && want == 0 && !opening.contains_key(account))
        {
            wrong.push(match holds {
                Some(holds) => format!("{account} holds {holds}, its records give {want}"),
                None => format!("{account} is missing, its records give {want}"),
            });
        }
    }
    if !wrong.is_empty() {
        check.half_applied.push(format!(
            "{} accounts disagree with the stored transfer records (a transaction applied in part): {}",
            wrong.len(),
            name_some(wrong.iter().map(String::as_str))
        ));
    }
}

/// The invariants' names, in report order.
pub(crate) const TRANSFER_INVARIANTS: [&str; 4] = [
    TOTAL,
    "every committed transfer applied exactly once",
    "no failed transfer applied",
    "no transaction half applied",
];
const TOTAL: &str = "total balance unchanged";

impl TransferCheck {
    /// The transfer invariants as report checks ([`TRANSFER_INVARIANTS`] order). Without a
    /// committed transfer the run proved nothing about commits: those two are not checked.
    pub(crate) fn checks(&self) -> Vec<Check> {
        let proven = self.committed > 0;
        vec![
            verdict(
                TOTAL,
                self.opening_total == self.final_total,
                format!(
                    "{} accounts: {} at the start, {} at the end",
                    self.accounts, self.opening_total, self.final_total
                ),
                true,
            ),
            verdict(
                TRANSFER_INVARIANTS[1],
                self.lost.is_empty() && self.doubled.is_empty(),
                self.explain(
                    &[&self.lost, &self.doubled],
                    format!(
                        "{} committed transfers each stored once ({} callback runs for {} transfers; {} found their record from an earlier attempt)",
                        self.committed,
                        self.callback_runs,
                        self.committed + self.not_committed + self.unknown,
                        self.reapplied
                    ),
                ),
                proven,
            ),
            verdict(
                TRANSFER_INVARIANTS[2],
                self.misreported.is_empty(),
                self.explain(
                    &[&self.misreported],
                    format!(
                        "none of {} failed transfers stored; {} of {} with an unknown outcome were applied",
                        self.not_committed, self.unknown_applied, self.unknown
                    ),
                ),
                true,
            ),
            verdict(
                TRANSFER_INVARIANTS[3],
                self.half_applied.is_empty(),
                self.explain(
                    &[&self.half_applied],
                    format!(
                        "every balance equals its opening balance plus the {} stored records' movements",
                        self.records_stored
                    ),
                ),
                proven,
            ),
        ]
    }

    fn explain(&self, violations: &[&Vec<String>], fine: String) -> String {
        let all: Vec<&str> = violations
            .iter()
            .flat_map(|list| list.iter().map(String::as_str))
            .collect();
        if all.is_empty() { fine } else { all.join("; ") }
    }
}

/// A check that held or not; one that held without evidence (`proven` false) is not checked.
fn verdict(name: &'static str, held: bool, detail: String, proven: bool) -> Check {
    let verdict = match (held, proven) {
        (false, _) => Verdict::Violated,
        (true, true) => Verdict::Held,
        (true, false) => Verdict::NotChecked,
    };
    Check {
        name,
        verdict,
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transfer(id: &str, from: &str, to: &str, amount: i64) -> Transfer {
        Transfer {
            id: id.into(),
            from: from.into(),
            to: to.into(),
            amount,
        }
    }

    fn opening() -> BTreeMap<String, i64> {
        [("a", 100), ("b", 100), ("c", 100)]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect()
    }

    /// The store after applying `records` whole to the opening balances.
    fn applied(records: &[Transfer]) -> StoredTransfers {
        let mut balances = opening();
        for r in records {
            *balances.entry(r.from.clone()).or_default() -= r.amount;
            *balances.entry(r.to.clone()).or_default() += r.amount;
        }
        StoredTransfers {
            balances,
            records: records.to_vec(),
        }
    }

    fn book(entries: &[(Transfer, TransferFate)]) -> TransferBook {
        TransferBook {
            transfers: entries.to_vec(),
            reapplied: 0,
            callback_runs: 0,
            errors: BTreeMap::new(),
        }
    }

    fn violated(check: &TransferCheck) -> Vec<&'static str> {
        check
            .checks()
            .into_iter()
            .filter(|c| c.verdict == Verdict::Violated)
            .map(|c| c.name)
            .collect()
    }

    #[test]
    fn transfers_as_reported_hold_every_invariant() {
        use TransferFate::*;
        let t1 = transfer("t1", "a", "b", 10);
        let t2 = transfer("t2", "b", "c", 5);
        let t3 = transfer("t3", "c", "a", 7);
        let t4 = transfer("t4", "a", "c", 1);
        let book = book(&[
            (t1.clone(), Committed),
            (t2, NotCommitted),
            (t3.clone(), Unknown),
            (t4, Unknown),
        ]);
        let check = check_transfers(&book, &opening(), &applied(&[t1, t3]));
        let held: Vec<_> = check
            .checks()
            .into_iter()
            .filter(|c| c.verdict == Verdict::Held)
            .map(|c| c.name)
            .collect();
        assert_eq!(held, TRANSFER_INVARIANTS, "{check:?}");
        assert_eq!(
            (
                check.committed,
                check.not_committed,
                check.unknown,
                check.unknown_applied
            ),
            (1, 1, 2, 1)
        );
    }

    #[test]
    fn a_lost_committed_transfer_is_reported() {
        let t1 = transfer("t1", "a", "b", 10);
        let check = check_transfers(
            &book(&[(t1, TransferFate::Committed)]),
            &opening(),
            &applied(&[]),
        );
        assert_eq!(violated(&check), [TRANSFER_INVARIANTS[1]]);
        assert!(check.lost[0].contains("have no record: t1"), "{check:?}");
    }

    #[test]
    fn a_transfer_applied_twice_is_reported() {
        let t1 = transfer("t1", "a", "b", 10);
        let check = check_transfers(
            &book(&[(t1.clone(), TransferFate::Unknown)]),
            &opening(),
            &applied(&[t1.clone(), t1]),
        );
        assert_eq!(violated(&check), [TRANSFER_INVARIANTS[1]]);
        assert!(check.doubled[0].contains("more than once: t1"), "{check:?}");
    }

    #[test]
    fn a_failed_transfer_that_was_applied_is_reported_with_its_error() {
        let t1 = transfer("t1", "a", "b", 10);
        let mut book = book(&[(t1.clone(), TransferFate::NotCommitted)]);
        book.errors.insert("t1".into(), "overloaded (462)".into());
        let check = check_transfers(&book, &opening(), &applied(&[t1]));
        assert_eq!(violated(&check), [TRANSFER_INVARIANTS[2]]);
        assert!(
            check.misreported[0].ends_with("stored: t1 (t1 failed with: overloaded (462))"),
            "{check:?}"
        );
    }

    #[test]
    fn a_record_nobody_sent_or_altered_is_reported() {
        let t1 = transfer("t1", "a", "b", 10);
        let altered = transfer("t1", "a", "b", 11);
        let check = check_transfers(
            &book(&[(t1, TransferFate::Committed)]),
            &opening(),
            &applied(&[altered, transfer("x", "b", "c", 1)]),
        );
        assert_eq!(violated(&check), [TRANSFER_INVARIANTS[2]]);
        let all = check.misreported.join("\n");
        assert!(all.contains("never attempted: x"), "{all}");
        assert!(all.contains("differ from what was sent: t1"), "{all}");
    }

    /// One balance update applied without the other: the total and the accounts both show it.
    #[test]
    fn a_debit_without_its_credit_is_half_applied_and_changes_the_total() {
        let t1 = transfer("t1", "a", "b", 10);
        let mut stored = applied(std::slice::from_ref(&t1));
        stored.balances.insert("b".into(), 100);
        let check = check_transfers(&book(&[(t1, TransferFate::Committed)]), &opening(), &stored);
        assert_eq!(violated(&check), [TOTAL, TRANSFER_INVARIANTS[3]]);
        assert!(
            check.half_applied[0].contains("b holds 100, its records give 110"),
            "{check:?}"
        );
    }

    /// Both balances moved but the record is missing: the total holds, the accounts do not.
    #[test]
    fn balances_moved_without_a_record_are_half_applied() {
        let t1 = transfer("t1", "a", "b", 10);
        let mut stored = applied(std::slice::from_ref(&t1));
        stored.records.clear();
        let check = check_transfers(&book(&[(t1, TransferFate::Unknown)]), &opening(), &stored);
        assert_eq!(violated(&check), [TRANSFER_INVARIANTS[3]]);
        assert!(
            check.half_applied[0].starts_with("2 accounts disagree"),
            "{check:?}"
        );
    }

    #[test]
    fn a_vanished_or_new_account_is_reported() {
        let mut stored = applied(&[]);
        stored.balances.remove("c");
        stored.balances.insert("z".into(), 5);
        let check = check_transfers(&TransferBook::default(), &opening(), &stored);
        let detail = &check.half_applied[0];
        assert!(
            detail.contains("c is missing, its records give 100"),
            "{detail}"
        );
        assert!(detail.contains("z holds 5, its records give 0"), "{detail}");
    }

    #[test]
    fn without_a_committed_transfer_the_commit_checks_are_not_checked() {
        let check = check_transfers(&TransferBook::default(), &opening(), &applied(&[]));
        let unchecked: Vec<_> = check
            .checks()
            .into_iter()
            .filter(|c| c.verdict == Verdict::NotChecked)
            .map(|c| c.name)
            .collect();
        assert_eq!(unchecked, [TRANSFER_INVARIANTS[1], TRANSFER_INVARIANTS[3]]);
    }
}
