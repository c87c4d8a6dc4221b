//! Change streams: `aggregate` with a first `$changeStream` stage, read from the op log.
//!
//! A stream is a position in the op log ([`token::Position`]) plus what it watches and how it
//! shapes events. The first batch and every getMore turn the entries after the position into
//! events ([`event::events_of`]), run the rest of the pipeline on each, and move the position
//! past what they examined, so a batch ends wherever its count or 16 MiB bound stops it and the
//! next continues exactly there. Every batch carries `postBatchResumeToken`, the position as a
//! resume token. A getMore that finds nothing reports how to wait for the next write
//! ([`InsertWait`] on the op log), and the caller waits holding no lock. The cursor is
//! tailable-awaitData: only an invalidate (or an error) closes it.

mod event;
mod options;
pub(crate) mod record;
mod token;

use std::sync::Arc;

use bson::{Bson, Document, Timestamp};

use self::event::events_of;
use self::options::{Scope, StartPoint, StreamSpec, first_stage, is_stage};
use self::token::{Position, ResumeToken};
use super::Store;
use super::aggregate::Pipeline;
use super::catalog::lock;
use super::change_signal::ChangeSubscription;
use super::commands::Exec;
use super::commands::args::cursor_batch_size;
use super::commands::tail::{await_time, cursor_not_found};
use super::cursor::{DEFAULT_FIRST_BATCH, InsertWait, MAX_BATCH_BYTES, OpenCursor, cursor_reply};
use super::errors::{CommandError, StoreResult, check_bson_size};
use super::oplog::packed;
use super::value_order::document_size;
use crate::code;

pub use self::options::first_stage as change_stream_stage;

/// How many op log entries one pass copies out of the log (under its lock) before turning them
/// into events without it.
const ENTRIES_PER_PASS: usize = 1024;

/// The state of an open change-stream cursor.
#[derive(Debug, Clone)]
pub(crate) struct StreamCursor {
    spec: Arc<StreamSpec>,
    pipeline: Arc<Pipeline>,
    /// Where the stream is: events after it are next. Its token is the batch's
    /// `postBatchResumeToken`.
    position: ResumeToken,
}

/// The error of a `$changeStream` that is not the pipeline's first stage.
pub(crate) fn not_first_stage() -> CommandError {
    CommandError::new(
        code::CHANGE_STREAM_NOT_FIRST_STAGE,
        "$changeStream is only valid as the first stage in a pipeline",
    )
}

/// Whether a pipeline has a `$changeStream` stage after its first.
pub(crate) fn has_later_change_stream(stages: &[Bson]) -> bool {
    stages
        .iter()
        .skip(1)
        .any(|stage| is_stage(stage, &["$changeStream"]))
}

/// Runs an `aggregate` whose first stage is `$changeStream`; `target` is the collection
/// named by the command, `None` for `{aggregate: 1}`.
///
/// # Errors
///
/// The stage's option errors; 40602 for a second `$changeStream`; IllegalOperation for stages
/// a change stream does not allow (`$out` and `$merge` included); InvalidResumeToken (260) for
/// `resumeAfter` an invalidate; ChangeStreamHistoryLost (286) when the start is older than
/// the op log still holds.
/// A change stream reads majority-committed changes only: a read concern other than
/// `majority` (none given is fine) is refused, as mongod refuses it.
fn check_read_concern(command: &Document) -> StoreResult<()> {
    let level = command
        .get_document("readConcern")
        .ok()
        .and_then(|concern| concern.get_str("level").ok());
    match level {
        None | Some("majority") => Ok(()),
        Some(level) => Err(CommandError::new(
            code::INVALID_OPTIONS,
            format!("Read concern level '{level}' is not supported by $changeStream"),
        )),
    }
}

pub(crate) fn aggregate(
    exec: &mut Exec<'_>,
    command: &Document,
    target: Option<&str>,
    stages: &[Bson],
) -> StoreResult<Document> {
    check_read_concern(command)?;
    let (spec, pipeline) = parse_stream(exec, target, stages)?;
    let batch_size = cursor_batch_size(command, "aggregate")?.unwrap_or(DEFAULT_FIRST_BATCH);
    let newest = visible_newest(lock(&exec.store.oplog).last().ts, exec.majority_committed);
    let start = ResumeToken {
        position: spec.start.position(newest),
        uuid: None,
    };
    let ns = cursor_namespace(&spec.scope);
    let mut stream = StreamCursor {
        spec: Arc::new(spec),
        pipeline: Arc::new(pipeline),
        position: start,
    };
    let filled = fill(exec.store, &stream, batch_size, exec.majority_committed)?;
    stream.position = filled.position;
    let id = if filled.invalidated {
        0
    } else {
        exec.store.register_cursor(OpenCursor {
            ns: ns.clone(),
            remaining: Default::default(),
            last_used: exec.now,
            no_timeout: false,
            tail: None,
            stream: Some(Box::new(stream)),
            time_limited: false,
        })
    };
    Ok(with_resume_token(
        cursor_reply("firstBatch", filled.events, id, &ns),
        filled.position,
    ))
}

/// Parses and checks a change stream's stages (see [`aggregate`] for the errors).
fn parse_stream(
    exec: &Exec<'_>,
    target: Option<&str>,
    stages: &[Bson],
) -> StoreResult<(StreamSpec, Pipeline)> {
    let stage = first_stage(stages).ok_or_else(not_first_stage)?;
    if exec.txn.is_some() {
        return Err(CommandError::new(
            code::OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
            "$changeStream cannot run in a multi-document transaction",
        ));
    }
    let scope = match target {
        Some(collection) => Scope::Collection {
            db: exec.db.to_owned(),
            collection: collection.to_owned(),
        },
        None if exec.db == "admin" => Scope::Cluster,
        None => Scope::Database {
            db: exec.db.to_owned(),
        },
    };
    let spec = StreamSpec::parse(stage, scope)?;
    if has_later_change_stream(stages) {
        return Err(not_first_stage());
    }
    let rest = stages.get(1..).unwrap_or_default();
    if rest
        .iter()
        .any(|stage| is_stage(stage, &["$out", "$merge"]))
    {
        return Err(CommandError::new(
            code::ILLEGAL_OPERATION,
            "$out and $merge cannot follow $changeStream",
        ));
    }
    let pipeline = Pipeline::parse_for_change_stream(rest)?;
    if let StartPoint::ResumeAfter(token) = spec.start
        && token.is_invalidate()
    {
        return Err(CommandError::new(
            code::INVALID_RESUME_TOKEN,
            "resumeAfter cannot resume a stream after its invalidate event; use startAfter",
        ));
    }
    Ok((spec, pipeline))
}

/// The namespace of a stream's cursor, as getMore and killCursors name it.
fn cursor_namespace(scope: &Scope) -> String {
    match scope {
        Scope::Collection { db, collection } => format!("{db}.{collection}"),
        Scope::Database { db } => format!("{db}.$cmd.aggregate"),
        Scope::Cluster => "admin.$cmd.aggregate".to_owned(),
    }
}

/// The getMore of change-stream cursor `id` (the caller has checked its namespace).
///
/// # Errors
///
/// CursorNotFound if the cursor was killed meanwhile; the errors of [`fill`], which close it.
pub(crate) fn get_more(
    exec: &mut Exec<'_>,
    id: i64,
    ns: &str,
    stream: StreamCursor,
    batch_size: Option<usize>,
    command: &Document,
) -> StoreResult<Document> {
    let max_count = batch_size.unwrap_or(usize::MAX);
    let filled = match fill(exec.store, &stream, max_count, exec.majority_committed) {
        Ok(filled) => filled,
        Err(error) => {
            lock(&exec.store.cursors).remove(id);
            return Err(error);
        }
    };
    let mut registry = lock(&exec.store.cursors);
    let cursor = registry.get_mut(id).ok_or_else(|| cursor_not_found(id))?;
    if let Some(open) = cursor.stream.as_mut() {
        open.position = filled.position;
    }
    let reply_id = if filled.invalidated {
        registry.remove(id);
        0
    } else {
        id
    };
    drop(registry);
    if filled.events.is_empty() {
        exec.awaiting_inserts = filled
            .wait
            .map(|changes| InsertWait::new(changes, await_time(command)));
    }
    Ok(with_resume_token(
        cursor_reply("nextBatch", filled.events, reply_id, ns),
        filled.position,
    ))
}

/// Adds `postBatchResumeToken` to a cursor reply.
fn with_resume_token(mut reply: Document, position: ResumeToken) -> Document {
    if let Ok(cursor) = reply.get_document_mut("cursor") {
        cursor.insert("postBatchResumeToken", position.to_document());
    }
    reply
}

/// One batch of a stream.
struct Filled {
    events: Vec<Arc<Document>>,
    /// Where the stream is after the batch.
    position: ResumeToken,
    /// The batch ends with an invalidate: the cursor closes.
    invalidated: bool,
    /// Subscribed to the op log when it was last read: sees every write after that.
    wait: Option<ChangeSubscription>,
}

/// The entries a pass copied out of the op log, with what it knew then.
struct Pass {
    entries: Vec<super::oplog::OplogEntry>,
    /// The pass reached the newest visible write.
    exhausted: bool,
    /// The newest visible write's timestamp.
    newest: Timestamp,
    lost_history: bool,
    changes: ChangeSubscription,
}

/// The newest timestamp a stream may show or pass: the newest write's, or the majority commit
/// point when the caller gave one and it is older.
fn visible_newest(newest: Timestamp, majority_committed: Option<Timestamp>) -> Timestamp {
    match majority_committed {
        Some(committed) if committed < newest => committed,
        _ => newest,
    }
}

/// Copies the next entries after `position` out of the op log, those at or before
/// `majority_committed` only when it is given.
fn read_pass(store: &Store, position: Position, majority_committed: Option<Timestamp>) -> Pass {
    let oplog = lock(&store.oplog);
    // The entry at the position itself may hold events after it (an invalidate).
    let mut entries = oplog.from(position.timestamp(), position.index, ENTRIES_PER_PASS);
    let mut exhausted = entries.len() < ENTRIES_PER_PASS;
    let newest = visible_newest(oplog.last().ts, majority_committed);
    if let Some(hidden) = entries.iter().position(|entry| entry.op_time.ts > newest) {
        entries.truncate(hidden);
        exhausted = true;
    }
    Pass {
        entries,
        exhausted,
        newest,
        lost_history: oplog
            .evicted_through()
            .is_some_and(|(ts, index)| (packed(ts), index) > (position.ts, position.index)),
        changes: oplog.subscribe(),
    }
}

/// Builds the next batch of at most `max_count` events after the stream's position.
///
/// # Errors
///
/// ChangeStreamHistoryLost (286) if the op log no longer holds the entries after the position;
/// ChangeStreamFatalError (280) if the pipeline changed an event's `_id`; NoMatchingDocument
/// (47) for a `required` image that is missing; BSONObjectTooLarge (10334) for an event past
/// 16 MiB; the pipeline's errors.
fn fill(
    store: &Store,
    stream: &StreamCursor,
    max_count: usize,
    majority_committed: Option<Timestamp>,
) -> StoreResult<Filled> {
    let lookup = |db: &str, collection: &str, id: &Bson| store.find_by_id(db, collection, id);
    let mut batch = Batch::new(stream.position, max_count);
    loop {
        let pass = read_pass(store, batch.position.position, majority_committed);
        if pass.lost_history {
            return Err(history_lost(batch.position));
        }
        for entry in &pass.entries {
            for event in events_of(entry, &stream.spec, &lookup)? {
                if event.position <= batch.position.position {
                    continue;
                }
                let token = ResumeToken {
                    position: event.position,
                    uuid: entry.uuid,
                };
                let output = run_pipeline(&stream.pipeline, event.document, token)?;
                if !batch.offer(output, token)? {
                    return Ok(batch.finish(false, None));
                }
                if event.invalidates {
                    return Ok(batch.finish(true, None));
                }
            }
            batch.pass_entry(entry.op_time.ts, entry.txn_op_index);
        }
        if pass.exhausted {
            // Everything up to the newest visible write was examined.
            batch.pass(pass.newest);
            return Ok(batch.finish(false, Some(pass.changes)));
        }
    }
}

/// A batch being built, and where the stream is.
struct Batch {
    events: Vec<Arc<Document>>,
    bytes: usize,
    max_count: usize,
    position: ResumeToken,
}

impl Batch {
    fn new(position: ResumeToken, max_count: usize) -> Batch {
        Batch {
            events: Vec::new(),
            bytes: 0,
            max_count,
            position,
        }
    }

    /// Takes the pipeline's output for the event at `token` and moves past it; `false`, taking
    /// nothing, when the output does not fit (it opens the next batch).
    ///
    /// # Errors
    ///
    /// BSONObjectTooLarge for an output document past 16 MiB.
    fn offer(&mut self, output: Vec<Arc<Document>>, token: ResumeToken) -> StoreResult<bool> {
        let mut size = 0usize;
        for document in &output {
            // As mongod: an event (a large document with its images) that no reply could
            // carry is an error, not an oversized batch.
            let event_size = document_size(document);
            check_bson_size(event_size)?;
            size = size.saturating_add(event_size);
        }
        let full = self.events.len() >= self.max_count
            || (!self.events.is_empty() && self.bytes.saturating_add(size) > MAX_BATCH_BYTES);
        if full && !output.is_empty() {
            return Ok(false);
        }
        self.bytes = self.bytes.saturating_add(size);
        self.events.extend(output);
        self.position = token;
        Ok(true)
    }

    /// Moves past the entry at (`ts`, `index`), examined whole; a position on one of its
    /// events stays, so a batch ending with an event keeps that event's token. Past an entry
    /// without events for this stream the position moves even inside a transaction's
    /// timestamp, so each pass of the log starts after the entries already examined.
    fn pass_entry(&mut self, ts: Timestamp, index: u32) {
        let past = Position::after_entry(ts, index);
        if (self.position.position.ts, self.position.position.index) < (past.ts, past.index) {
            self.position = ResumeToken {
                position: past,
                uuid: None,
            };
        }
    }

    /// Moves past everything at `ts` (the newest write, after every entry was examined); a
    /// position on an event of `ts` stays, so a batch ending with an event keeps that event's
    /// token.
    fn pass(&mut self, ts: Timestamp) {
        let past = Position::after_all_at(ts);
        if self.position.position.ts < past.ts {
            self.position = ResumeToken {
                position: past,
                uuid: None,
            };
        }
    }

    fn finish(self, invalidated: bool, wait: Option<ChangeSubscription>) -> Filled {
        Filled {
            events: self.events,
            position: self.position,
            invalidated,
            wait,
        }
    }
}

/// Runs the stages after `$changeStream` on one event; what comes out must keep the event's
/// `_id`, the resume token a driver resumes from.
fn run_pipeline(
    pipeline: &Pipeline,
    event: Document,
    token: ResumeToken,
) -> StoreResult<Vec<Arc<Document>>> {
    let output = pipeline.run(vec![Arc::new(event)], false)?;
    let expected = Bson::Document(token.to_document());
    if output
        .iter()
        .any(|document| document.get("_id") != Some(&expected))
    {
        let mut error = CommandError::new(
            code::CHANGE_STREAM_FATAL_ERROR,
            "the pipeline removed or changed an event's _id, its resume token; stages after $changeStream must keep _id as it is",
        );
        error
            .extra
            .insert("errorLabels", vec!["NonResumableChangeStreamError"]);
        return Err(error);
    }
    Ok(output)
}

fn history_lost(position: ResumeToken) -> CommandError {
    CommandError::new(
        code::CHANGE_STREAM_HISTORY_LOST,
        format!(
            "the op log no longer holds the entries after {}: the change stream cannot continue from there",
            position.position.timestamp()
        ),
    )
}

impl Store {
    /// Whether cursor `id` is an open change stream (the deployment labels errors of its
    /// getMores as resumable where mongod would).
    pub fn is_change_stream_cursor(&self, id: i64) -> bool {
        lock(&self.cursors)
            .get_mut(id)
            .is_some_and(|cursor| cursor.stream.is_some())
    }
}
