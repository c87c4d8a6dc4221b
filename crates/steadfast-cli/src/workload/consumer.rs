//! The change stream consumer role: one task watching the collection the writers write to,
//! as an event-driven application would, through every fault; and a tap on blackpipe's op
//! log, the truth its events are checked against ([`super::stream_check`]).
//!
//! The consumer relies on the driver's automatic resume. Only when the driver gives up and
//! returns an error does it do what an application must: open a new stream with
//! `resume_after` the last token it holds. Such restarts are counted and reported.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use blackpipe::deployment::RolledBackWrite;
use blackpipe::store::{OpTime, OplogEntry, OplogOp, Store};
use bson::{Bson, Document, Timestamp};
use steadfast::Collection;
use steadfast::change_stream::ChangeStream;
use steadfast::change_stream::event::{ChangeStreamEvent, OperationType, ResumeToken};
use tokio::sync::watch;

use super::progress::LiveCounters;
use super::stream_check::{Change, ChangeOp, LogPosition, name_some};
use super::worker::HANG_LIMIT;

/// How long the consumer waits on the server for new events per `getMore`.
const MAX_AWAIT: Duration = Duration::from_millis(200);
/// How long the consumer may take, once the writers stopped, to receive the last write.
const DRAIN_LIMIT: Duration = Duration::from_secs(30);
/// The pause before opening a stream again after an error the driver returned.
const REOPEN_PAUSE: Duration = Duration::from_millis(50);
/// How often the op log tap collects: the op log retains far more than a period's writes.
const TAP_PERIOD: Duration = Duration::from_millis(100);
/// How many error messages the consumer keeps.
const KEPT_ERRORS: usize = 5;

/// What the consumer saw.
#[derive(Debug, Default)]
pub(crate) struct ConsumerLog {
    /// Every event, in the order received.
    pub(crate) received: Vec<Change>,
    /// Streams the consumer opened again after the driver returned an error.
    pub(crate) restarts: u64,
    /// The first few errors the driver returned.
    pub(crate) errors: Vec<String>,
    /// Why the consumer did not reach the end of the op log, if it did not.
    pub(crate) stalled: Option<String>,
    /// Events the check cannot place (no `clusterTime` or no `_id`).
    pub(crate) malformed: Vec<String>,
}

/// Where the watched namespace's op log ends once the writers stopped: its last position and
/// how many of the tap's changes sit there (a committed transaction's writes share one
/// position, so reaching the position is not yet receiving all of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LogEnd {
    pub(crate) at: LogPosition,
    pub(crate) changes: usize,
}

/// Watches `collection`, counting events in `live`, until the end sent on `end` has been received (or
/// [`DRAIN_LIMIT`] after it was sent). The stream is open when `opened` fires: writes after
/// that are all expected.
///
/// # Cancel safety
///
/// Not cancel safe: dropping the future loses the log.
pub(crate) async fn consume(
    collection: Collection<Document>,
    live: Arc<LiveCounters>,
    opened: tokio::sync::oneshot::Sender<Result<(), String>>,
    mut end: watch::Receiver<Option<LogEnd>>,
) -> ConsumerLog {
    let mut log = ConsumerLog::default();
    let mut stream = match open(&collection, None).await {
        Ok(stream) => Some(stream),
        Err(error) => {
            let _ = opened.send(Err(format!("opening the change stream: {error}")));
            log.stalled = Some(format!("the change stream never opened: {error}"));
            return log;
        }
    };
    let _ = opened.send(Ok(()));
    live.watching.store(true, Ordering::Relaxed);
    let mut token: Option<ResumeToken> = None;
    let mut ending: Option<(LogEnd, Instant)> = None;
    loop {
        if ending.is_none() {
            ending = (*end.borrow_and_update()).map(|end| (end, Instant::now()));
        }
        if let Some((last, since)) = ending {
            if log.reached(last) || last.at == LogPosition::ZERO {
                return log;
            }
            if since.elapsed() > DRAIN_LIMIT {
                log.stalled = Some(stall(&log, last.at));
                return log;
            }
        }
        let Some(open_stream) = stream.as_mut() else {
            // The driver gave up on the stream: open a new one after the last token, once
            // per turn, so that the drain limit above still ends the run.
            log.restarts += 1;
            tokio::time::sleep(REOPEN_PAUSE).await;
            match open(&collection, token.clone()).await {
                Ok(reopened) => stream = Some(reopened),
                Err(error) => log.error(format!("reopening: {error}")),
            }
            continue;
        };
        match tokio::time::timeout(HANG_LIMIT, open_stream.next_if_any()).await {
            Ok(Ok(Some(event))) => {
                log.record(&event);
                live.events.fetch_add(1, Ordering::Relaxed);
            }
            Ok(Ok(None)) => {}
            Ok(Err(error)) => {
                log.error(error.to_string());
                token = open_stream.resume_token().or(token);
                stream = None;
                continue;
            }
            Err(_) => {
                log.stalled = Some(format!(
                    "a getMore on the change stream hung for {} s",
                    HANG_LIMIT.as_secs()
                ));
                return log;
            }
        }
        token = open_stream.resume_token().or(token);
    }
}

async fn open(
    collection: &Collection<Document>,
    token: Option<ResumeToken>,
) -> steadfast::error::Result<ChangeStream<ChangeStreamEvent<Document>>> {
    collection
        .watch()
        .max_await_time(MAX_AWAIT)
        .resume_after(token)
        .await
}

fn stall(log: &ConsumerLog, last: LogPosition) -> String {
    let reached = log
        .received
        .last()
        .map_or("nothing".to_owned(), |change| position_text(change.at));
    format!(
        "{} s after the writers stopped the consumer had received up to {reached}, not {}",
        DRAIN_LIMIT.as_secs(),
        position_text(last)
    )
}

fn position_text(position: LogPosition) -> String {
    format!("({}, {})", position.time, position.increment)
}

impl ConsumerLog {
    /// Whether the events received reach `end`: as many at its position (or later) as the
    /// op log holds there.
    fn reached(&self, end: LogEnd) -> bool {
        let at_end = self
            .received
            .iter()
            .rev()
            .take_while(|change| change.at >= end.at)
            .count();
        at_end > 0 && at_end >= end.changes
    }

    fn error(&mut self, message: String) {
        if self.errors.len() < KEPT_ERRORS {
            self.errors.push(message);
        }
    }

    fn record(&mut self, event: &ChangeStreamEvent<Document>) {
        let id = event
            .document_key
            .as_ref()
            .and_then(|key| key.get("_id"))
            .map(id_text);
        match (event.cluster_time, id) {
            (Some(at), Some(id)) => self.received.push(Change {
                at: position(at),
                op: change_op(&event.operation_type),
                id,
            }),
            _ => self.malformed.push(format!(
                "{:?} event without clusterTime or documentKey._id",
                event.operation_type
            )),
        }
    }
}

fn change_op(operation: &OperationType) -> ChangeOp {
    match operation {
        OperationType::Insert => ChangeOp::Insert,
        OperationType::Update | OperationType::Replace => ChangeOp::Update,
        OperationType::Delete => ChangeOp::Delete,
        _ => ChangeOp::Other,
    }
}

fn timestamp(at: LogPosition) -> Timestamp {
    Timestamp {
        time: at.time,
        increment: at.increment,
    }
}

fn position(ts: Timestamp) -> LogPosition {
    LogPosition {
        time: ts.time,
        increment: ts.increment,
    }
}

/// An `_id` as text: a string as itself, anything else in its extended JSON form.
pub(crate) fn id_text(id: &Bson) -> String {
    match id {
        Bson::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// Where the tap reads: the current primary's store, asked for at every collection (an
/// election moves the primary, a rollback replaces a member's store). `None` once the
/// deployment is gone.
pub(crate) type StoreSource = Box<dyn Fn() -> Option<Arc<Store>> + Send>;

/// Collects the op-log entries of one namespace as they are written, so that the check does
/// not depend on the op log retaining a whole run. It follows the primary: when another
/// member's store becomes the primary's, the changes collected from the old one that the new
/// one's branch does not hold are set aside as abandoned (a rollback discards them), and
/// collection resumes on the new branch from the last change both hold.
pub(crate) struct OplogTap {
    source: StoreSource,
    store: Arc<Store>,
    ns: String,
    /// The primary's newest op-log timestamp when the tap started.
    start: Timestamp,
    /// The timestamp collection resumes after.
    last: Timestamp,
    /// Document writes the store had applied to `ns` when the tap started.
    applied_at_start: u64,
    pub(crate) changes: Vec<Change>,
    /// Changes collected from a former primary that its successor's branch does not hold.
    pub(crate) abandoned: Vec<Change>,
}

impl OplogTap {
    /// A tap on `ns` (`db.collection`) from the current position of `store`, following the
    /// stores `source` returns.
    pub(crate) fn new(store: Arc<Store>, source: StoreSource, ns: String) -> OplogTap {
        let start = store.op_time().ts;
        let applied_at_start = store.writes_applied(&ns);
        OplogTap {
            source,
            store,
            ns,
            start,
            last: start,
            applied_at_start,
            changes: Vec::new(),
            abandoned: Vec::new(),
        }
    }

    /// Collects the entries written since the last call, on the current primary's store.
    pub(crate) fn collect(&mut self) {
        if let Some(current) = (self.source)() {
            if !Arc::ptr_eq(&current, &self.store) {
                self.switch_to(current);
            }
        }
        let after = OpTime {
            ts: self.last,
            wall: bson::DateTime::from_millis(0),
        };
        for entry in self.store.oplog_since(after) {
            self.last = entry.op_time.ts;
            if entry.ns == self.ns {
                if let Some(change) = entry_change(&entry) {
                    self.changes.push(change);
                }
            }
        }
    }

    /// Moves to `store`: the collected changes after the last one its branch holds are
    /// abandoned, and collection resumes after that one.
    fn switch_to(&mut self, store: Arc<Store>) {
        let after = OpTime {
            ts: self.start,
            wall: bson::DateTime::from_millis(0),
        };
        let branch: HashSet<Change> = store
            .oplog_since(after)
            .iter()
            .filter(|entry| entry.ns == self.ns)
            .filter_map(entry_change)
            .collect();
        let held = |change: &Change| {
            branch.contains(change) || store.oplog_contains(timestamp(change.at)).is_none()
        };
        let common = self
            .changes
            .iter()
            .position(|change| !held(change))
            .unwrap_or(self.changes.len());
        self.abandoned.extend(self.changes.drain(common..));
        self.last = self.changes.last().map_or(self.start, |c| timestamp(c.at));
        self.store = store;
    }

    /// Where the collected changes end, for the consumer to drain to.
    pub(crate) fn end(&self) -> LogEnd {
        let at = self.changes.last().map_or(LogPosition::ZERO, |c| c.at);
        let changes = self
            .changes
            .iter()
            .rev()
            .take_while(|change| change.at == at)
            .count();
        LogEnd { at, changes }
    }

    /// Why the collected entries are not the whole history of the namespace since the tap
    /// started, if they are not (the op log forgot entries before they were collected).
    pub(crate) fn incomplete(&self) -> Option<String> {
        let applied = self
            .store
            .writes_applied(&self.ns)
            .saturating_sub(self.applied_at_start);
        let collected = u64::try_from(self.changes.len()).unwrap_or(u64::MAX);
        (applied != collected).then(|| {
            format!(
                "the store applied {applied} writes to {} but the op log tap collected {collected}{}",
                self.ns,
                self.uncollected()
            )
        })
    }

    /// Names the entries of the namespace the store's op log still holds that the tap did
    /// not collect (saying which of them it had abandoned at a change of primary).
    fn uncollected(&self) -> String {
        let collected: HashSet<&Change> = self.changes.iter().collect();
        let abandoned: HashSet<&Change> = self.abandoned.iter().collect();
        let after = OpTime {
            ts: self.start,
            wall: bson::DateTime::from_millis(0),
        };
        let missing: Vec<Change> = self
            .store
            .oplog_since(after)
            .iter()
            .filter(|entry| entry.ns == self.ns)
            .filter_map(entry_change)
            .filter(|change| !collected.contains(change))
            .collect();
        if missing.is_empty() {
            return String::new();
        }
        let were_abandoned = missing.iter().filter(|c| abandoned.contains(c)).count();
        let named: Vec<&Change> = missing.iter().collect();
        format!(
            "; the op log holds {} it did not collect ({were_abandoned} abandoned at a change of primary): {}",
            missing.len(),
            name_some(&named)
        )
    }
}

/// Runs `tap` every [`TAP_PERIOD`] until `stop` turns true, then once more; returns it.
///
/// # Cancel safety
///
/// Not cancel safe: dropping the future loses the collected entries.
pub(crate) async fn run_tap(mut tap: OplogTap, mut stop: watch::Receiver<bool>) -> OplogTap {
    loop {
        tap.collect();
        match tokio::time::timeout(TAP_PERIOD, stop.changed()).await {
            Ok(Ok(())) if !*stop.borrow_and_update() => {}
            // Told to stop, or the sender is gone: one last collection.
            Ok(_) => {
                tap.collect();
                return tap;
            }
            Err(_period_over) => {}
        }
    }
}

/// The writes to `ns` among those rollbacks discarded, as changes.
pub(crate) fn rolled_back_changes(writes: &[RolledBackWrite], ns: &str) -> Vec<Change> {
    writes
        .iter()
        .filter(|write| write.ns == ns)
        .filter_map(|write| {
            let op = change_op_of(write.op)?;
            Some(Change {
                at: position(write.op_time.ts),
                op,
                id: write.id.as_ref().map_or_else(String::new, id_text),
            })
        })
        .collect()
}

fn change_op_of(op: OplogOp) -> Option<ChangeOp> {
    match op {
        OplogOp::Insert => Some(ChangeOp::Insert),
        OplogOp::Update => Some(ChangeOp::Update),
        OplogOp::Delete => Some(ChangeOp::Delete),
        OplogOp::Command => None,
    }
}

fn entry_change(entry: &OplogEntry) -> Option<Change> {
    let op = change_op_of(entry.op)?;
    Some(Change {
        at: position(entry.op_time.ts),
        op,
        id: entry.id.as_ref().map_or_else(String::new, id_text),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(increment: u32, id: &str) -> Change {
        Change {
            at: LogPosition { time: 7, increment },
            op: ChangeOp::Update,
            id: id.to_owned(),
        }
    }

    #[test]
    fn the_consumer_drains_every_change_of_a_transaction_at_the_logs_end() {
        let end = LogEnd {
            at: LogPosition {
                time: 7,
                increment: 2,
            },
            changes: 2,
        };
        let mut log = ConsumerLog {
            received: vec![change(1, "a"), change(2, "b")],
            ..ConsumerLog::default()
        };
        assert!(
            !log.reached(end),
            "one of the transaction's two writes is missing"
        );
        log.received.push(change(2, "c"));
        assert!(log.reached(end));
    }

    fn insert(store: &Store, id: &str) {
        let context = blackpipe::store::CommandContext::new(bson::DateTime::now());
        let command = bson::doc! { "insert": "c", "documents": [{ "_id": id }] };
        store.execute("db", &command, &context);
    }

    fn ids(changes: &[Change]) -> Vec<&str> {
        changes.iter().map(|change| change.id.as_str()).collect()
    }

    /// An election moves the primary to a member whose branch lacks what the old primary
    /// wrote alone: the tap sets that aside as abandoned and follows the new branch.
    #[test]
    fn the_tap_follows_the_primary_and_sets_aside_what_its_branch_lacks() {
        use blackpipe::store::StoreOptions;
        use std::sync::Mutex;
        let old = Arc::new(Store::new(StoreOptions::default()));
        let primary = Arc::new(Mutex::new(Arc::clone(&old)));
        let current = Arc::clone(&primary);
        let source: StoreSource =
            Box::new(move || current.lock().ok().map(|store| Arc::clone(&store)));
        let mut tap = OplogTap::new(Arc::clone(&old), source, "db.c".to_owned());
        insert(&old, "replicated");
        let new = Arc::new(old.fork(StoreOptions::default()));
        insert(&old, "isolated");
        tap.collect();
        assert_eq!(ids(&tap.changes), ["replicated", "isolated"]);
        insert(&new, "after the election");
        *primary.lock().unwrap() = Arc::clone(&new);
        tap.collect();
        assert_eq!(ids(&tap.changes), ["replicated", "after the election"]);
        assert_eq!(ids(&tap.abandoned), ["isolated"]);
        assert_eq!(tap.incomplete(), None, "the new branch's count agrees");
    }
}
