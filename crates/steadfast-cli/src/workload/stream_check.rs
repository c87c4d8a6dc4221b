//! The change stream consumer's check: the events it received, in order, against the op log
//! of the namespace it watched. Plain values, no driver, no I/O.
//!
//! A change stream that resumes correctly through every fault delivers each op-log entry of
//! its namespace exactly once, in op-log order, and nothing else. Entries are matched by their
//! position (the event's `clusterTime`, the entry's timestamp), operation and `_id`, which
//! together name one entry; so a resume that replays an event shows as a duplicate, one that
//! skips ahead as a missing entry, and an event the store never applied as a phantom.
//! Writes the application saw acknowledged are checked on top: each must be in what was
//! received (an unacknowledged write that was applied is in the op log, so it must be there
//! too, once; one that was not applied must not).

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;

use super::report::{Check, Verdict};

/// A position in the op log: its timestamp's seconds, then increment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub(crate) struct LogPosition {
    pub(crate) time: u32,
    pub(crate) increment: u32,
}

impl LogPosition {
    /// Before any write.
    pub(crate) const ZERO: LogPosition = LogPosition {
        time: 0,
        increment: 0,
    };
}

/// What an event or op-log entry did to its document.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub(crate) enum ChangeOp {
    Insert,
    /// An update or a replacement (the op log does not tell them apart).
    Update,
    Delete,
    /// Anything else (drop, rename, invalidate...): never written by the workload.
    Other,
}

/// One change: an op-log entry, or an event as received.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Change {
    pub(crate) at: LogPosition,
    pub(crate) op: ChangeOp,
    /// The document's `_id`, rendered as text.
    pub(crate) id: String,
}

/// The consumer's stream, checked. Each list holds one sentence per kind of violation found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct StreamCheck {
    /// Op-log entries of the watched namespace while the stream was open.
    pub(crate) log_entries: usize,
    /// Events received.
    pub(crate) received: usize,
    /// Streams the consumer opened again after the driver returned an error (the driver's own
    /// resumes are invisible to it).
    pub(crate) restarts: u64,
    /// The first errors the driver returned to the consumer.
    pub(crate) errors: Vec<String>,
    /// Why the consumer did not read up to the end of the op log, if it did not.
    pub(crate) stalled: Option<String>,
    /// Op-log entries never received, and acknowledged writes not among the events.
    pub(crate) missing: Vec<String>,
    /// Entries received more than once.
    pub(crate) duplicated: Vec<String>,
    /// Entries received after a later one.
    pub(crate) out_of_order: Vec<String>,
    /// Events matching no op-log entry.
    pub(crate) phantom: Vec<String>,
    /// Events of writes a rollback later discarded: a change stream returns only
    /// majority-committed events, which are never rolled back.
    pub(crate) rolled_back: Vec<String>,
}

/// How many changes to name in one sentence before summarising.
const NAMED: usize = 5;

pub(crate) fn name_some(changes: &[&Change]) -> String {
    let shown: Vec<String> = changes
        .iter()
        .take(NAMED)
        .map(|c| format!("{:?} {} at ({}, {})", c.op, c.id, c.at.time, c.at.increment))
        .collect();
    let shown = shown.join(", ");
    match changes.len().checked_sub(NAMED) {
        Some(more) if more > 0 => format!("{shown} and {more} more"),
        _ => shown,
    }
}

/// Compares the events `received`, in the order received, with the `log` entries of the
/// watched namespace (in op-log order, the surviving branch only) and the `_id`s of the
/// inserts the application saw acknowledged (and not rolled back). Rollbacks discarded the
/// writes `rolled_back` (off the log): an event of one of them is reported as such rather
/// than as a phantom.
pub(crate) fn check_stream(
    log: &[Change],
    received: &[Change],
    acknowledged_inserts: &[String],
    rolled_back: &[Change],
) -> StreamCheck {
    let discarded: BTreeSet<&Change> = rolled_back.iter().collect();
    let mut check = StreamCheck {
        log_entries: log.len(),
        received: received.len(),
        ..StreamCheck::default()
    };
    let index: HashMap<&Change, usize> = log
        .iter()
        .enumerate()
        .map(|(position, change)| (change, position))
        .collect();
    let mut times_seen = vec![0u32; log.len()];
    let mut latest: Option<usize> = None;
    let (mut doubled, mut late, mut phantom) = (Vec::new(), Vec::new(), Vec::new());
    let mut discarded_events = Vec::new();
    for event in received {
        let Some(&position) = index.get(event) else {
            if discarded.contains(event) {
                discarded_events.push(event);
            } else {
                phantom.push(event);
            }
            continue;
        };
        let Some(seen) = times_seen.get_mut(position) else {
            continue;
        };
        *seen = seen.saturating_add(1);
        if *seen > 1 {
            doubled.push(event);
        } else if latest.is_some_and(|latest| position < latest) {
            late.push(event);
        }
        latest = latest.max(Some(position));
    }
    let unseen: Vec<&Change> = log
        .iter()
        .zip(&times_seen)
        .filter(|(_, seen)| **seen == 0)
        .map(|(change, _)| change)
        .collect();
    describe(&mut check.missing, &unseen, "op-log entries never received");
    describe(&mut check.duplicated, &doubled, "events received twice");
    describe(
        &mut check.out_of_order,
        &late,
        "events received after a later one",
    );
    describe(&mut check.phantom, &phantom, "events match no op-log entry");
    describe(
        &mut check.rolled_back,
        &discarded_events,
        "events were of writes a rollback later discarded",
    );
    let inserted: BTreeSet<&str> = received
        .iter()
        .filter(|event| event.op == ChangeOp::Insert)
        .map(|event| event.id.as_str())
        .collect();
    let absent: Vec<&str> = acknowledged_inserts
        .iter()
        .map(String::as_str)
        .filter(|id| !inserted.contains(id))
        .collect();
    if !absent.is_empty() {
        let named: Vec<&str> = absent.iter().take(NAMED).copied().collect();
        check.missing.push(format!(
            "{} acknowledged inserts have no insert event: {}",
            absent.len(),
            named.join(", ")
        ));
    }
    check
}

fn describe(into: &mut Vec<String>, changes: &[&Change], what: &str) {
    if !changes.is_empty() {
        into.push(format!("{} {what}: {}", changes.len(), name_some(changes)));
    }
}

/// The invariants' names, in report order.
pub(crate) const STREAM_INVARIANTS: [&str; 4] = [
    "change stream delivered every applied write exactly once",
    "change stream events in op-log order",
    "change stream showed nothing that was not applied",
    "change stream showed no write later rolled back",
];

impl StreamCheck {
    /// The consumer's invariants as report checks ([`STREAM_INVARIANTS`] order); with nothing
    /// written to the namespace they are not checked.
    pub(crate) fn checks(&self) -> Vec<Check> {
        let proven = self.log_entries > 0;
        let mut missing = self.missing.clone();
        missing.extend(self.stalled.iter().cloned());
        let mut once = missing;
        once.extend(self.duplicated.iter().cloned());
        vec![
            verdict(
                STREAM_INVARIANTS[0],
                &once,
                format!(
                    "{} op-log entries, {} events, each once; the application reopened the stream {} times",
                    self.log_entries, self.received, self.restarts
                ),
                proven,
            ),
            verdict(
                STREAM_INVARIANTS[1],
                &self.out_of_order,
                "every event after the one before it in the op log".to_owned(),
                proven,
            ),
            verdict(
                STREAM_INVARIANTS[2],
                &self.phantom,
                "every event is an op-log entry".to_owned(),
                proven,
            ),
            verdict(
                STREAM_INVARIANTS[3],
                &self.rolled_back,
                "no event is of a write a rollback discarded".to_owned(),
                proven,
            ),
        ]
    }
}

fn verdict(name: &'static str, violations: &[String], fine: String, proven: bool) -> Check {
    let (verdict, detail) = match (violations.is_empty(), proven) {
        (false, _) => (Verdict::Violated, violations.join("; ")),
        (true, true) => (Verdict::Held, fine),
        (true, false) => (
            Verdict::NotChecked,
            "not checked: nothing was written to the watched collection".to_owned(),
        ),
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

    fn change(increment: u32, op: ChangeOp, id: &str) -> Change {
        Change {
            at: LogPosition { time: 7, increment },
            op,
            id: id.into(),
        }
    }

    fn log() -> Vec<Change> {
        vec![
            change(1, ChangeOp::Insert, "x"),
            change(2, ChangeOp::Update, "acct-1"),
            change(3, ChangeOp::Update, "acct-1"),
            change(4, ChangeOp::Insert, "y"),
        ]
    }

    fn violated(check: &StreamCheck) -> Vec<&'static str> {
        check
            .checks()
            .into_iter()
            .filter(|c| c.verdict == Verdict::Violated)
            .map(|c| c.name)
            .collect()
    }

    fn acked() -> Vec<String> {
        vec!["x".into(), "y".into()]
    }

    #[test]
    fn the_whole_log_in_order_holds() {
        let check = check_stream(&log(), &log(), &acked(), &[]);
        assert!(violated(&check).is_empty(), "{check:?}");
        assert_eq!((check.log_entries, check.received), (4, 4));
    }

    /// A resume that restarts from an older token replays what was already delivered.
    #[test]
    fn a_replayed_event_is_a_duplicate() {
        let mut received = log();
        received.insert(3, change(2, ChangeOp::Update, "acct-1"));
        let check = check_stream(&log(), &received, &acked(), &[]);
        assert_eq!(violated(&check), [STREAM_INVARIANTS[0]]);
        assert!(
            check.duplicated[0].starts_with("1 events received twice: Update acct-1 at (7, 2)"),
            "{check:?}"
        );
    }

    /// A resume that skips ahead loses events, whether or not they were acknowledged.
    #[test]
    fn a_skipped_entry_is_missing() {
        let received = vec![log()[0].clone(), log()[1].clone()];
        let check = check_stream(&log(), &received, &acked(), &[]);
        assert_eq!(violated(&check), [STREAM_INVARIANTS[0]]);
        let missing = check.missing.join("\n");
        assert!(
            missing.contains("2 op-log entries never received"),
            "{missing}"
        );
        assert!(
            missing.contains("1 acknowledged inserts have no insert event: y"),
            "{missing}"
        );
    }

    #[test]
    fn events_out_of_order_are_reported() {
        let mut received = log();
        received.swap(1, 2);
        let check = check_stream(&log(), &received, &acked(), &[]);
        assert_eq!(violated(&check), [STREAM_INVARIANTS[1]]);
        assert!(
            check.out_of_order[0].contains("Update acct-1 at (7, 2)"),
            "{check:?}"
        );
    }

    /// The same document and operation at another position is not the entry it resembles.
    #[test]
    fn an_event_the_log_does_not_hold_is_a_phantom() {
        let mut received = log();
        received.push(change(9, ChangeOp::Update, "acct-1"));
        received.push(change(10, ChangeOp::Delete, "x"));
        let check = check_stream(&log(), &received, &acked(), &[]);
        assert_eq!(violated(&check), [STREAM_INVARIANTS[2]]);
        assert!(
            check.phantom[0].starts_with("2 events match no op-log entry"),
            "{check:?}"
        );
    }

    #[test]
    fn a_stalled_consumer_fails_even_if_what_it_saw_was_right() {
        let mut check = check_stream(&log(), &log(), &acked(), &[]);
        check.stalled = Some("the consumer stopped at (7, 3)".into());
        assert_eq!(violated(&check), [STREAM_INVARIANTS[0]]);
    }

    #[test]
    fn an_empty_log_proves_nothing() {
        let check = check_stream(&[], &[], &[], &[]);
        assert!(
            check
                .checks()
                .iter()
                .all(|c| c.verdict == Verdict::NotChecked)
        );
    }

    /// A stream that delivered a write the isolated primary took and then rolled back broke
    /// the majority-commit promise.
    #[test]
    fn an_event_of_a_rolled_back_write_is_reported_as_such() {
        let discarded = change(5, ChangeOp::Insert, "w1-lost");
        let mut received = log();
        received.push(discarded.clone());
        let check = check_stream(&log(), &received, &acked(), &[discarded]);
        assert_eq!(violated(&check), [STREAM_INVARIANTS[3]]);
        assert!(check.phantom.is_empty(), "{check:?}");
        assert!(
            check.rolled_back[0].contains("Insert w1-lost at (7, 5)"),
            "{check:?}"
        );
        let clean = check_stream(
            &log(),
            &log(),
            &acked(),
            &[change(5, ChangeOp::Insert, "w1-lost")],
        );
        assert!(violated(&clean).is_empty(), "{clean:?}");
    }
}
