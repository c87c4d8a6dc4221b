//! blackpipe-store: the in-memory document store under blackpipe's simulated deployments. A
//! [`Store`] can be shared by the members of a deployment, or each member can own one and
//! replicate (see "Replication" below). blackpipe re-exports this crate as `blackpipe::store`.
//!
//! [`Store::execute`] takes a command document and returns the reply mongod would send. The store
//! is synchronous and does no I/O, and depends on no async runtime: blackpipe's server layer
//! calls it from its connection tasks, and an awaitData getMore hands back an [`InsertWait`] that
//! any executor can await. Time comes from the caller ([`CommandContext::now`], and the `now`
//! arguments of the reaping methods) and randomness from a generator seeded through
//! [`StoreOptions`], so runs are reproducible.
//!
//! # The door
//!
//! The crate's public API is what blackpipe and the tools on top of it use; everything else is
//! private to the crate.
//!
//! - [`Store`] and its [`StoreOptions`]: [`Store::execute`] and [`Store::supports`] for commands,
//!   and what a simulated member asks besides (optimes, the op log, cursors, sessions, open
//!   transactions, documents, reaping).
//! - [`CommandContext`] goes in with a command, [`CommandOutcome`] comes out, with an
//!   [`InsertWait`] when an awaitData getMore found nothing new.
//! - [`OpTime`], [`OplogEntry`], [`OplogOp`], [`Change`] and [`WriteSession`]: the op log, as
//!   [`Store::oplog_since`] returns it.
//! - [`Store::apply_oplog`] and its [`ApplyError`], [`Store::fork`], [`Store::oplog_contains`],
//!   [`Store::oplog_entries_after`] and the shared [`OpClock`]: replication between stores.
//! - [`check_raw_request`], [`RawRequestError`] and [`MAX_BSON_DEPTH`]: the bounds checked on a
//!   raw request before it is decoded.
//! - [`COMMANDS`]: the names of the commands the store answers; [`change_stream_stage`]: a
//!   pipeline's `$changeStream` stage, which the deployment checks before the store runs it.
//! - [`code`]: mongod's error codes by name, the one table of them (the store's and the
//!   server's); [`integer`]: reading an integer written as any BSON number, as mongod's
//!   parsers do (blackpipe's fail points read theirs with it too).
//!
//! Supported commands: `insert update delete find getMore killCursors findAndModify count
//! distinct aggregate createIndexes listIndexes dropIndexes listCollections listDatabases drop
//! dropDatabase create collMod renameCollection dbStats endSessions commitTransaction
//! abortTransaction`. Retryable writes (`lsid` + `txnNumber`) are recorded per statement in a
//! retryable-write table that lives with the store, so it survives stepdowns of the simulated
//! members that share it. Multi-document transactions (`autocommit: false`) run with snapshot
//! isolation and commit atomically (the `transaction` module describes how); reads with
//! `readConcern: {level: "snapshot"}` read at a cluster time through the store's recent
//! document versions (the `history` and `snapshot_read` modules). `let` variables (`let_vars`),
//! `$[]`/`$[<identifier>]` updates with `arrayFilters` (`update::positional`), `$out` and
//! `$merge` as a final stage (`commands::aggregate_write`) and ICU collations (`collation`:
//! comparison keys from the ICU4X collator, in filters, sorts, `distinct`, `$group` keys,
//! collated unique indexes and a collection's default collation) are modelled, and so are
//! regular expressions (`regex`), positional updates and projections, views (kept in
//! `system.views`, read through their pipeline: `commands::views`) and document validation
//! (`validation`, with `$jsonSchema` in `json_schema`). A hint must name an index
//! (`commands::hint`), though every query scans; `$text` and `$where` are refused as mongod
//! refuses them without a text index or a JavaScript engine.
//! Capped collections keep their `size`/`max` bounds and take tailable (`awaitData`) cursors;
//! an awaitData getMore that finds nothing new reports [`CommandOutcome::awaiting_inserts`] so
//! that the caller, not the store, waits for an insert.
//!
//! # The op log and change streams
//!
//! Every applied write makes one [`OplogEntry`], in apply order, from one shape (the command
//! layer's `Exec::record`, and a transaction's commit: one entry per document write of each of
//! its statements, under the commit's exclusive gate, all at the commit's one optime and told
//! apart by `txn_op_index`): its optime, namespace, collection UUID, the
//! [`Change`] (the inserted or replacement document, an update's description, or the catalog
//! change: create, createIndexes, dropIndexes, collMod, drop, rename, dropDatabase preceded by
//! its collections' drops), the document key, the pre-image (and an update's post-image) when the
//! collection has `changeStreamPreAndPostImages` enabled, and the `lsid`/`txnNumber` of a
//! retryable or transactional command. Change streams read it: `aggregate` with a first
//! `$changeStream` stage on a collection, a database (`aggregate: 1`) or the cluster (`admin`,
//! `allChangesForCluster`), with `fullDocument`, `fullDocumentBeforeChange`, `resumeAfter`,
//! `startAfter`, `startAtOperationTime` and `showExpandedEvents`, the rest of the pipeline
//! limited to the per-event stages. A stream's cursor is tailable-awaitData: every batch carries
//! `postBatchResumeToken`, and a getMore that finds nothing reports `awaiting_inserts` on the op
//! log. Resume tokens encode an op log position, so they work on any member sharing the store
//! or replicating it.
//! Collection streams end with `invalidate` at a drop or rename, database streams at a database
//! drop. A position older than the retained op log fails with ChangeStreamHistoryLost (286).
//!
//! # Replication
//!
//! Each data-bearing member of a simulated replica set may own a store. The primary executes
//! commands; a secondary applies the entries of its sync source's op log with
//! [`Store::apply_oplog`], at their optimes, so that its op log, data, indexes, history (snapshot
//! reads), retryable-write table and committed transactions match the source's, and change
//! streams and resume tokens behave the same on every member. A retry answered by a former
//! secondary after a failover replays the statements it replicated. Entries that do not continue
//! the store's op log (a gap, a divergence) fail with an [`ApplyError`]; such a member starts over
//! from [`Store::fork`], a consistent copy of its sync source ([`Store::oplog_contains`] tells
//! where two logs diverged). The members share an [`OpClock`] ([`StoreOptions::with_clock`]) so
//! that writes on divergent branches never share a timestamp. The caller tells a command the
//! replica set's majority commit point ([`CommandContext::with_majority_committed`]): change
//! streams then show only the writes it covers, and reads with `readConcern: {level:
//! "majority"}` read as of it; [`Store::wake_change_streams`] makes waiting streams look again
//! when it advances.
//!
//! # Bounds
//!
//! One request cannot make the store allocate without limit or overflow its stack. As in mongod:
//! write batches hold at most 100,000 statements and documents nest at most 200 levels
//! ([`check_raw_request`], on the raw request before decoding); an update pads an array by at
//! most 1,500,000 nulls (CannotBackfillArray, 34); expression values and stage outputs stay within
//! 16 MiB + 16 KiB (BSONObjectTooLarge, 10334); a `$group` `$push`/`$addToSet` holds at most
//! 100 MiB (ExceededMemoryLimit, 146); cursors idle for `cursorTimeoutMillis` (10 min) and
//! sessions idle for 30 min expire ([`Store::reap_idle_cursors`], [`Store::expire_idle_sessions`],
//! also run by [`Store::execute`] every 4 s of its callers' clock); at most 1,000,000 sessions
//! (TooManyLogicalSessions, 261). Because blackpipe materialises results that mongod streams,
//! it adds its own bounds: one aggregation stage builds at most 256 MiB of documents
//! (ExceededMemoryLimit, 146); open cursors own at most 1 GiB of results (the least recently used
//! are closed past it); the retryable-write table holds at most 32 MiB of outcomes per session and
//! 128 MiB in all, dropping the least recently used histories past it, after which a retry of the
//! dropped txnNumber fails with IncompleteTransactionHistory (217) rather than applying twice;
//! the op log retains at most 64 MiB of entries (documents and images included), oldest
//! dropped; a change-stream batch holds at most 16 MiB, and a getMore copies at most 1,024 op
//! log entries at a time out of the log's lock; document versions for snapshot reads are kept
//! for 300 s, at most 100,000 of them and 64 MiB (SnapshotTooOld, 239, past them); a
//! transaction writes at most 100,000 documents and 64 MiB (TransactionTooLarge, 334), at
//! most 10,000 hold state at once and their private copies reference at most 10,000,000
//! documents in all (ExceededMemoryLimit, 146).

mod aggregate;
mod arith;
mod capped;
mod catalog;
mod change_signal;
mod change_stream;
mod clustered;
pub mod code;
mod collation;
mod collection;
mod commands;
mod cursor;
mod decimal;
mod errors;
mod expr;
mod history;
mod index;
pub mod integer;
mod json_schema;
mod key;
mod latency;
mod let_vars;
mod local;
mod op_clock;
mod oplog;
mod path;
mod projection;
mod query;
mod regex;
mod replication;
mod retryable_writes;
mod snapshot_read;
mod sort;
mod transaction;
mod ttl;
mod update;
mod validation;
mod value_order;

#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use bson::oid::ObjectId;
use bson::{Bson, DateTime, Document};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use self::catalog::{Catalog, lock, read};
use self::cursor::CursorRegistry;
use self::history::History;
use self::oplog::Oplog;
use self::retryable_writes::RetryableWriteTable;
use self::transaction::{AbortReason, TransactionRegistry};

pub use self::change_stream::change_stream_stage;
pub use self::commands::{
    COMMANDS, CommandContext, CommandOutcome, MAX_BSON_DEPTH, RawRequestError, check_raw_request,
};
pub use self::cursor::InsertWait;
/// The mongod version blackpipe answers as (`buildInfo`, `serverStatus`, `explain`).
pub const SERVER_VERSION: &str = "8.0.0";

pub use self::errors::type_name;
pub use self::latency::LatencyClass;
pub use self::op_clock::OpClock;
pub use self::oplog::{Change, OpTime, OplogEntry, OplogOp, WriteSession};
pub use self::query::filter_matches;
pub use self::replication::ApplyError;
pub use self::transaction::blocking::TransactionWait;
pub use self::transaction::registry::TransactionCounts;

/// Options of a [`Store`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StoreOptions {
    /// Seed of the generator behind cursor ids, collection UUIDs and server-generated ObjectIds.
    pub seed: u64,
    /// How many recent writes the op log retains (for [`Store::op_time_at`] and
    /// [`Store::oplog_since`]); older entries are forgotten, counters are not. Whatever the
    /// capacity, the retained entries also hold at most 64 MiB (namespaces and `_id`s).
    pub oplog_capacity: usize,
    /// mongod's `cursorTimeoutMillis`: a cursor idle this long is closed (unless opened with
    /// `noCursorTimeout`). Default 10 minutes.
    pub cursor_timeout: Duration,
    /// mongod's `localLogicalSessionTimeoutMinutes`: a session idle this long expires with its
    /// retryable-write history. Default 30 minutes.
    pub session_timeout: Duration,
    /// The operation clock shared with the other members of a replica set (see [`OpClock`]);
    /// `None` (the default) gives the store a clock of its own.
    pub clock: Option<OpClock>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            seed: 0x00b1_ac6b_1be5_70e0,
            oplog_capacity: 100_000,
            cursor_timeout: Duration::from_secs(10 * 60),
            session_timeout: Duration::from_secs(30 * 60),
            clock: None,
        }
    }
}

impl StoreOptions {
    /// Sets the random seed.
    #[must_use]
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Sets how many op log entries are retained.
    #[must_use]
    pub fn with_oplog_capacity(mut self, capacity: usize) -> Self {
        self.oplog_capacity = capacity;
        self
    }

    /// Sets how long a cursor may stay idle (`cursorTimeoutMillis`).
    #[must_use]
    pub fn with_cursor_timeout(mut self, timeout: Duration) -> Self {
        self.cursor_timeout = timeout;
        self
    }

    /// Shares the operation clock `clock` with the other stores given it: no two writes on any
    /// of them get the same oplog timestamp.
    #[must_use]
    pub fn with_clock(mut self, clock: OpClock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Sets how long a logical session may stay idle (`localLogicalSessionTimeoutMinutes`).
    #[must_use]
    pub fn with_session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }
}

/// How often (in the callers' clock) [`Store::execute`] reaps idle cursors and sessions on its
/// own: mongod's cursor monitor runs every `clientCursorMonitorFrequencySecs` (4 s).
const REAP_INTERVAL_MILLIS: i64 = 4_000;

/// mongod's default `transactionLifetimeLimitSeconds` (60 s).
const DEFAULT_TRANSACTION_LIFETIME_MILLIS: i64 = 60_000;

/// Milliseconds of a duration, saturating (timeouts beyond 292 million years never fire).
fn millis_of(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// An in-memory MongoDB store: databases, collections, indexes, cursors, the retryable-write
/// table and the op log. `Send + Sync`; share it (e.g. in an `Arc`) between simulated members.
#[derive(Debug)]
pub struct Store {
    catalog: Catalog,
    oplog: Mutex<Oplog>,
    cursors: Mutex<CursorRegistry>,
    retryable_writes: RetryableWriteTable,
    rng: Mutex<SmallRng>,
    cursor_timeout_millis: i64,
    session_timeout_millis: i64,
    /// When (callers' clock, ms) the store last reaped idle cursors and sessions by itself.
    last_reap_millis: Mutex<Option<i64>>,
    /// Open multi-document transactions, reachable without their sessions' locks.
    transaction_registry: Arc<TransactionRegistry>,
    /// Recent document versions (after the op log in the lock order).
    history: Mutex<History>,
    /// Held shared by every command and exclusively by `commitTransaction`.
    commit_gate: RwLock<()>,
    /// `transactionLifetimeLimitSeconds`, in milliseconds.
    transaction_lifetime_millis: AtomicI64,
    /// The seed of the next command's `$rand` draws (moved on by a golden-ratio step per
    /// command, so that each command draws its own sequence from the store's seed).
    next_command_seed: AtomicU64,
    /// What `local.system.replset` holds ([`Store::set_replica_set_config`]).
    replica_set_config: Mutex<Option<Document>>,
    /// A router's `config` catalog ([`Store::set_config_catalog`]).
    config_catalog: Mutex<Option<local::BuiltCollections>>,
    /// Operation latencies per namespace ([`Store::record_latency`]).
    latencies: Mutex<latency::Latencies>,
}

impl Default for Store {
    fn default() -> Self {
        Store::new(StoreOptions::default())
    }
}

impl Store {
    /// An empty store.
    pub fn new(options: StoreOptions) -> Store {
        Store {
            catalog: Catalog::default(),
            oplog: Mutex::new(Oplog::new(
                options.oplog_capacity,
                options.clock.unwrap_or_default(),
            )),
            cursors: Mutex::new(CursorRegistry::default()),
            retryable_writes: RetryableWriteTable::default(),
            rng: Mutex::new(SmallRng::seed_from_u64(options.seed)),
            next_command_seed: AtomicU64::new(options.seed),
            cursor_timeout_millis: millis_of(options.cursor_timeout),
            session_timeout_millis: millis_of(options.session_timeout),
            last_reap_millis: Mutex::new(None),
            transaction_registry: Arc::default(),
            commit_gate: RwLock::new(()),
            history: Mutex::new(History::default()),
            transaction_lifetime_millis: AtomicI64::new(DEFAULT_TRANSACTION_LIFETIME_MILLIS),
            replica_set_config: Mutex::new(None),
            config_catalog: Mutex::new(None),
            latencies: Mutex::default(),
        }
    }

    /// Sets mongod's `transactionLifetimeLimitSeconds`: a transaction open longer (in the
    /// callers' clock) is aborted. Applies to transactions started afterwards. Default 60 s.
    pub fn set_transaction_lifetime(&self, lifetime: Duration) {
        self.transaction_lifetime_millis
            .store(millis_of(lifetime), Ordering::Relaxed);
    }

    /// mongod's `transactionLifetimeLimitSeconds` as set (60 s by default).
    pub fn transaction_lifetime(&self) -> Duration {
        Duration::from_millis(u64::try_from(self.transaction_lifetime_millis()).unwrap_or(0))
    }

    fn transaction_lifetime_millis(&self) -> i64 {
        self.transaction_lifetime_millis.load(Ordering::Relaxed)
    }

    /// Aborts every open multi-document transaction, as a primary does when it steps down or
    /// dies: a later statement or commit of one gets NoSuchTransaction labelled
    /// TransientTransactionError (a commit that already happened still answers ok). Returns how
    /// many were open.
    pub fn abort_open_transactions(&self) -> usize {
        self.transaction_registry
            .abort_all(AbortReason::SteppedDown)
    }

    /// How many multi-document transactions are open.
    pub fn open_transaction_count(&self) -> usize {
        self.transaction_registry.open_count()
    }

    /// Transactions started, committed and aborted since the store started.
    pub fn transaction_counts(&self) -> TransactionCounts {
        self.transaction_registry.counts()
    }

    /// Closes every cursor idle for the cursor timeout or longer at wall time `now` (cursors
    /// opened with `noCursorTimeout` excepted); a later getMore on one fails with
    /// CursorNotFound (43). Returns how many were closed. [`Store::execute`] also does this by
    /// itself every few seconds of its callers' clock; call it to reap without traffic.
    pub fn reap_idle_cursors(&self, now: DateTime) -> usize {
        lock(&self.cursors).reap_idle(now, self.cursor_timeout_millis)
    }

    /// Forgets every logical session idle for the session timeout or longer at wall time
    /// `now`, with its retryable-write history, as mongod does when a session expires. Sessions
    /// with a write in progress are kept. Returns how many were forgotten.
    pub fn expire_idle_sessions(&self, now: DateTime) -> usize {
        self.retryable_writes
            .expire_idle(now, self.session_timeout_millis)
    }

    /// The seed of a command's `$rand` draws (see [`expr::rand`]).
    fn command_seed(&self) -> u64 {
        /// 2^64 / φ: consecutive seeds spread over the whole range.
        const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;
        self.next_command_seed
            .fetch_add(GOLDEN_GAMMA, Ordering::Relaxed)
    }

    /// Reaps idle cursors and sessions if the last reaping is [`REAP_INTERVAL_MILLIS`] old.
    fn reap_if_due(&self, now: DateTime) {
        let now_millis = now.timestamp_millis();
        {
            let mut last = lock(&self.last_reap_millis);
            let due =
                last.is_none_or(|last| now_millis.saturating_sub(last) >= REAP_INTERVAL_MILLIS);
            if !due {
                return;
            }
            *last = Some(now_millis);
        }
        self.reap_idle_cursors(now);
        self.expire_idle_sessions(now);
        self.transaction_registry.abort_expired(now_millis);
        self.retryable_writes.release_aborted_transactions();
    }

    /// The optime of the last applied write ([`OpTime::ZERO`] before any): what a primary reports
    /// as `lastWrite`.
    pub fn op_time(&self) -> OpTime {
        lock(&self.oplog).last()
    }

    /// The optime of the newest write applied at or before wall time `wall`. A secondary lagging
    /// by `lag` reports `op_time_at(now - lag)` as its `lastWrite`. Writes older than the
    /// retained op log are unknown, in which case the answer is [`OpTime::ZERO`].
    pub fn op_time_at(&self, wall: DateTime) -> OpTime {
        lock(&self.oplog).at(wall)
    }

    /// The retained op log entries after `after` (all retained entries for [`OpTime::ZERO`]).
    pub fn oplog_since(&self, after: OpTime) -> Vec<OplogEntry> {
        lock(&self.oplog).since(after)
    }

    /// How many document writes (inserts, updates that changed a document, deletes) have been
    /// applied to namespace `ns` (`"db.collection"`). Replayed retries do not count, so tests
    /// can check that a retried write was applied exactly once.
    pub fn writes_applied(&self, ns: &str) -> u64 {
        lock(&self.oplog).applied(ns)
    }

    /// Whether `command` is a retryable write (`lsid` + `txnNumber`) whose every statement was
    /// already applied, so that [`Store::execute`] would answer it from the retryable-write table
    /// without applying anything.
    pub fn replays_entirely(&self, command: &Document) -> bool {
        self.retryable_writes.replays_entirely(command)
    }

    /// Whether cursor `id` is open.
    pub fn has_cursor(&self, id: i64) -> bool {
        lock(&self.cursors).contains(id)
    }

    /// Whether cursor `id` exists and was opened by a command with `maxTimeMS`: its getMores
    /// run under that limit, as mongod's do.
    pub fn cursor_is_time_limited(&self, id: i64) -> bool {
        lock(&self.cursors).is_time_limited(id)
    }

    /// How many cursors are open.
    pub fn open_cursor_count(&self) -> usize {
        lock(&self.cursors).len()
    }

    /// How many sessions have a retryable-write history.
    pub fn session_count(&self) -> usize {
        self.retryable_writes.len()
    }

    /// Names of the databases that hold at least one collection.
    pub fn database_names(&self) -> Vec<String> {
        self.catalog.database_names()
    }

    /// The document with `_id` equal to `id` (an index lookup, no scan).
    pub fn find_by_id(&self, db: &str, collection: &str, id: &Bson) -> Option<Document> {
        let handle = self.catalog.collection(db, collection)?;
        let collection = read(&handle);
        let record = collection.record_by_id(id)?;
        collection.get(record).map(|document| (**document).clone())
    }

    /// Every document of a collection in natural (insertion) order; empty if it does not exist.
    /// Waits for a commit in progress, so it never returns part of a transaction (never call
    /// it while executing a command: the commands hold the same gate).
    pub fn documents(&self, db: &str, collection: &str) -> Vec<Document> {
        let _no_commit_in_progress = read(&self.commit_gate);
        let Some(handle) = self.catalog.collection(db, collection) else {
            return Vec::new();
        };
        let collection = read(&handle);
        collection
            .documents()
            .map(|document| (**document).clone())
            .collect()
    }

    /// Registers a cursor under a fresh random id: positive, non-zero, not already open.
    fn register_cursor(&self, cursor: cursor::OpenCursor) -> i64 {
        loop {
            let id = lock(&self.rng).random::<i64>() & i64::MAX;
            let mut registry = lock(&self.cursors);
            if id != 0 && !registry.contains(id) {
                registry.insert(id, cursor);
                return id;
            }
        }
    }

    fn random_uuid(&self) -> [u8; 16] {
        let mut bytes: [u8; 16] = lock(&self.rng).random();
        // RFC 4122 version 4, variant 1.
        bytes[6] = (bytes[6] & 0x0f) | 0x40;
        bytes[8] = (bytes[8] & 0x3f) | 0x80;
        bytes
    }

    /// An ObjectId for a document inserted without `_id`: the creation second from the
    /// caller's clock, then random bytes.
    fn new_object_id(&self, now: DateTime) -> ObjectId {
        let seconds = u32::try_from(now.timestamp_millis().div_euclid(1000)).unwrap_or(0);
        let tail: [u8; 8] = lock(&self.rng).random();
        let mut bytes = [0u8; 12];
        bytes[..4].copy_from_slice(&seconds.to_be_bytes());
        bytes[4..].copy_from_slice(&tail);
        ObjectId::from_bytes(bytes)
    }
}
