//! The command layer: one entry point that takes a command document and returns mongod's reply.

mod admin;
mod aggregate_write;
pub(crate) mod args;
mod bulk_write;
mod coll_mod;
pub(crate) mod coll_mod_index;
mod coll_stats;
mod collectionless;
mod default_collation;
mod explain;
mod find;
mod find_and_modify;
// Stages reading other collections (stages-multi).
mod foreign;
mod hint;
mod plan;
mod raw_request;
mod read;
pub(crate) mod tail;
mod validate;
mod view_reads;
pub(crate) mod views;
mod write;

use std::sync::Arc;

use bson::{Bson, DateTime, Document, Timestamp};

pub use self::raw_request::{MAX_BSON_DEPTH, RawRequestError, check_raw_request};

use super::Store;
use super::catalog::{CollectionHandle, lock, read, validate_database_name, write};
use super::cursor::InsertWait;
use super::errors::{CommandError, StoreResult};
use super::key::encode_key;
use super::oplog::{Change, OpTime, OplogOp, OplogWrite, WriteSession};
use super::replication::entry::RetryableStatement;
use super::retryable_writes::{SessionRecord, StatementOutcome};
use super::snapshot_read::{collection_at, majority_read_time, snapshot_read_time, stamp_reply};
use super::transaction::{OpenTransaction, transaction_fields};
use crate::code;

/// What a command needs from its caller besides the document.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CommandContext {
    /// The wall-clock time of the command (the simulated member's clock): stamped on writes'
    /// optimes, `$currentDate`, and generated ObjectIds.
    pub now: DateTime,
    /// The replica set's majority commit point, as the member running the command knows it:
    /// change streams show only the writes at or before it, and reads with `readConcern:
    /// {level: "majority"}` read as of it. `None` (the default): every write is visible.
    pub majority_committed: Option<Timestamp>,
    /// The `host:port` of the member running the command, as its hello's `me` names it
    /// (`$collStats` reports it); `None` (the default) leaves it out.
    pub host: Option<String>,
    /// Whether the command runs on a router (mongos) rather than on mongod: a router's
    /// `listIndexes` cursor is in the collection's own namespace (`<db>.<coll>`), where
    /// mongod's is `<db>.$cmd.listIndexes.<coll>`, and its `getMore`s name the collection.
    pub router: bool,
    /// The cluster time the member running the command knows (the `$clusterTime` it gossips):
    /// `$$CLUSTER_TIME` reads the later of it and the store's op-log clock, one value for the
    /// whole command. `None` (the default): the op-log clock alone.
    pub cluster_time: Option<Timestamp>,
    /// Whether the command runs on a standalone mongod, which has no cluster time:
    /// `$$CLUSTER_TIME` then fails (51144) as on mongod. `false` (the default): a replica set
    /// member.
    pub standalone: bool,
}

impl CommandContext {
    /// A context at wall-clock time `now`, on mongod.
    pub fn new(now: DateTime) -> CommandContext {
        CommandContext {
            now,
            majority_committed: None,
            host: None,
            router: false,
            cluster_time: None,
            standalone: false,
        }
    }

    /// Sets the cluster time the member knows (see [`CommandContext::cluster_time`]).
    #[must_use]
    pub fn with_cluster_time(mut self, ts: Timestamp) -> Self {
        self.cluster_time = Some(ts);
        self
    }

    /// Runs the command as a standalone mongod answers it (see
    /// [`CommandContext::standalone`]).
    #[must_use]
    pub fn on_standalone(mut self) -> Self {
        self.standalone = true;
        self
    }

    /// Names the member running the command (see [`CommandContext::host`]).
    #[must_use]
    pub fn with_host(mut self, host: impl Into<String>) -> Self {
        self.host = Some(host.into());
        self
    }

    /// Runs the command as a router (mongos) answers it (see [`CommandContext::router`]).
    #[must_use]
    pub fn on_router(mut self) -> Self {
        self.router = true;
        self
    }

    /// Sets the majority commit point `ts` (see [`CommandContext::majority_committed`]).
    #[must_use]
    pub fn with_majority_committed(mut self, ts: Timestamp) -> Self {
        self.majority_committed = Some(ts);
        self
    }
}

/// The reply to a command, plus what the deployment layer needs to know about it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CommandOutcome {
    /// The reply document exactly as mongod would build it (`ok: 1.0` or the error fields).
    pub reply: Document,
    /// The optime of the last write this command applied, if it applied any.
    pub last_write: Option<OpTime>,
    /// Set when the command is a tailable awaitData getMore that found nothing new: the caller
    /// may wait (up to the getMore's await time) for an insert, then run the getMore again.
    pub awaiting_inserts: Option<InsertWait>,
}

impl CommandOutcome {
    /// Whether the reply has `ok: 1` (write errors inside an ok reply still count as ok).
    pub fn is_ok(&self) -> bool {
        matches!(self.reply.get("ok"), Some(Bson::Double(ok)) if *ok == 1.0)
    }

    /// The top-level error code of a failed command.
    pub fn error_code(&self) -> Option<i32> {
        if self.is_ok() {
            return None;
        }
        match self.reply.get("code") {
            Some(Bson::Int32(code)) => Some(*code),
            _ => None,
        }
    }
}

/// The commands the store implements (first field of the command document). Public so that
/// tests and fuzzers aim their random bodies at real command handlers.
pub const COMMANDS: &[&str] = &[
    "insert",
    "update",
    "delete",
    "find",
    "getMore",
    "killCursors",
    "findAndModify",
    "findandmodify",
    "count",
    "distinct",
    "aggregate",
    "createIndexes",
    "listIndexes",
    "dropIndexes",
    "deleteIndexes",
    "listCollections",
    "listDatabases",
    "drop",
    "dropDatabase",
    "create",
    "dbStats",
    "renameCollection",
    "collMod",
    "endSessions",
    "commitTransaction",
    "abortTransaction",
    "bulkWrite",
    "explain",
    "validate",
];

/// The state of one command execution.
pub(crate) struct Exec<'a> {
    pub(crate) store: &'a Store,
    pub(crate) db: &'a str,
    pub(crate) now: DateTime,
    pub(crate) last_write: Option<OpTime>,
    /// See [`CommandOutcome::awaiting_inserts`].
    pub(crate) awaiting_inserts: Option<InsertWait>,
    /// The session of a retryable or transactional command, stamped on its op log entries.
    pub(crate) session: Option<WriteSession>,
    /// The open transaction the command runs in: it reads and writes the transaction's private
    /// collections, and its writes reach the op log only at commit.
    pub(crate) txn: Option<&'a mut OpenTransaction>,
    /// Outside a transaction, the cluster time a snapshot read (or a majority read behind the
    /// latest write) reads at.
    pub(crate) read_at: Option<Timestamp>,
    /// The retryable write's statement being executed, stamped on its document writes' op log
    /// entries so that a secondary records it too.
    pub(crate) statement: Option<RetryableStatement>,
    /// See [`CommandContext::majority_committed`].
    pub(crate) majority_committed: Option<Timestamp>,
    /// See [`CommandContext::host`].
    pub(crate) host: Option<&'a str>,
    /// See [`CommandContext::router`].
    pub(crate) router: bool,
    /// The command's `bypassDocumentValidation`: its writes skip the collections' validators.
    pub(crate) bypass_validation: bool,
}

impl Exec<'_> {
    /// Records an applied write in the op log: the one place a command makes entries (a
    /// transaction's commit makes its own from the same [`OplogWrite`]s). Document writes call
    /// this while still holding the collection lock, so op log order is apply order.
    ///
    /// Inside a transaction the write was applied to the transaction's private copy and is only
    /// noted there. Outside one, an open transaction that wrote the same document is aborted
    /// (see [`crate::transaction`]), after the write is in the op log; the version the
    /// write replaced is kept for reads at an earlier time ([`crate::history`]).
    pub(crate) fn record(&mut self, mut write: OplogWrite) {
        if let Some(txn) = self.txn.as_deref_mut() {
            txn.note_write(self.store, write);
            return;
        }
        let document_write = write.change.op() != OplogOp::Command;
        if let Some(statement) = self.statement.as_ref().filter(|_| document_write) {
            let document = match &write.change {
                Change::Insert(document) | Change::Replace(document) => Some(&**document),
                _ => write.apply.after.as_deref(),
            };
            write.apply.outcome_bytes =
                statement.outcome_bytes(document, write.previous.as_deref());
            write.apply.statement = Some(statement.clone());
        }
        let key = write.id.as_ref().filter(|_| document_write).map(encode_key);
        let (ns, previous) = (write.ns.clone(), write.previous.clone());
        let op_time = lock(&self.store.oplog).record(self.now, write, self.session.clone());
        self.last_write = Some(op_time);
        if let Some(key) = key {
            lock(&self.store.history).push(op_time, &ns, key.clone(), previous);
            self.store.transaction_registry.displace(&(ns, key));
        }
    }

    /// The collection `name` of the command's database as the command sees it: the shared one,
    /// or inside a transaction the transaction's copy.
    ///
    /// # Errors
    ///
    /// Inside a transaction, WriteConflict when the collection cannot be seen as of the
    /// transaction's snapshot.
    pub(crate) fn collection(&mut self, name: &str) -> StoreResult<Option<CollectionHandle>> {
        let built = match self.db {
            crate::local::LOCAL => self.store.local_collection(name),
            crate::local::CONFIG => self.store.config_collection(name),
            _ => None,
        };
        if built.is_some() {
            return Ok(built);
        }
        match self.txn.as_deref_mut() {
            Some(txn) => txn.collection(self.store, self.db, name),
            None => match self.read_at {
                Some(at) => collection_at(self.store, self.db, name, at),
                None => Ok(self.store.catalog.collection(self.db, name)),
            },
        }
    }

    /// Records a catalog change of `collection` (of this command's database).
    pub(crate) fn record_catalog(
        &mut self,
        collection: &str,
        uuid: Option<[u8; 16]>,
        change: Change,
    ) {
        let ns = self.ns(collection);
        self.record(OplogWrite::catalog(ns, uuid, change));
    }

    /// Starts the next statement of a command: statement `id` of a retryable write whose
    /// outcome is recorded (see [`Exec::statement`]; a findAndModify's outcome
    /// `returns_document`), or `None` for a statement that is not (no earlier statement's
    /// cell may stay on its entries).
    pub(crate) fn begin_statement(&mut self, id: Option<i32>, returns_document: bool) {
        self.statement = id.map(|id| RetryableStatement::new(id, returns_document));
    }

    /// Records the outcome of statement `id` in the session and in its op log entries' cell,
    /// before the command replies.
    pub(crate) fn end_statement(
        &mut self,
        record: &mut SessionRecord,
        id: i32,
        outcome: StatementOutcome,
    ) {
        if let Some(statement) = self.statement.take().filter(|statement| statement.id == id) {
            // Only this command fills the cell, once.
            let _filled = statement.outcome.set(outcome.clone());
        }
        record.record(id, outcome);
    }

    /// The same command's state, for writes into database `db` (a `$out`/`$merge` target
    /// elsewhere): no transaction, snapshot or statement of its own.
    pub(crate) fn in_database<'d>(&'d self, db: &'d str) -> Exec<'d> {
        Exec {
            store: self.store,
            db,
            now: self.now,
            last_write: self.last_write,
            awaiting_inserts: None,
            session: self.session.clone(),
            txn: None,
            read_at: None,
            statement: None,
            majority_committed: self.majority_committed,
            host: self.host,
            router: self.router,
            bypass_validation: self.bypass_validation,
        }
    }

    pub(crate) fn ns(&self, collection: &str) -> String {
        format!("{}.{collection}", self.db)
    }
}

/// The session of a command carrying `lsid` and `txnNumber` (a retryable write, or a
/// transaction's statement or commit when `autocommit: false`).
fn write_session(command: &Document) -> Option<WriteSession> {
    let lsid = command.get_document("lsid").ok()?;
    let txn_number = match command.get("txnNumber")? {
        Bson::Int64(number) => *number,
        Bson::Int32(number) => i64::from(*number),
        _ => return None,
    };
    let in_transaction = command.get("autocommit") == Some(&Bson::Boolean(false));
    Some(WriteSession {
        lsid: Arc::new(lsid.clone()),
        txn_number,
        in_transaction,
    })
}

impl Store {
    /// Executes one command against database `db` and returns mongod's reply.
    ///
    /// OP_MSG document sequences (`documents`, `updates`, `deletes`) must already be merged into
    /// `command` as arrays. Commands the store does not implement get a CommandNotFound (59)
    /// reply; [`Store::supports`] tells them apart beforehand. Write commands carrying `lsid` and
    /// `txnNumber` are retryable: a retry replays the recorded outcome of every statement that
    /// already succeeded instead of applying it twice.
    pub fn execute(
        &self,
        db: &str,
        command: &Document,
        context: &CommandContext,
    ) -> CommandOutcome {
        self.reap_if_due(context.now);
        let _random = crate::expr::rand::CommandRandom::enter(self.command_seed());
        let _time = crate::expr::system_vars::CommandTime::enter(
            context.now,
            self.command_cluster_time(context),
        );
        let mut exec = Exec {
            store: self,
            db,
            now: context.now,
            last_write: None,
            awaiting_inserts: None,
            session: write_session(command),
            txn: None,
            read_at: None,
            statement: None,
            majority_committed: context.majority_committed,
            host: context.host.as_deref(),
            router: context.router,
            bypass_validation: false,
        };
        // A commit holds the gate alone, so no command sees part of a transaction.
        let is_commit = command.keys().next().map(String::as_str) == Some("commitTransaction");
        let _shared;
        let _exclusive;
        if is_commit {
            _exclusive = write(&self.commit_gate);
        } else {
            _shared = read(&self.commit_gate);
        }
        let reply = match self.run_command(&mut exec, command) {
            Ok(reply) => reply,
            Err(error) => error.to_reply(),
        };
        CommandOutcome {
            reply,
            last_write: exec.last_write,
            awaiting_inserts: exec.awaiting_inserts,
        }
    }

    /// The command's `$$CLUSTER_TIME`: none on a standalone, else the later of the cluster time
    /// the caller knows and the op-log clock (which every member of a replica set shares).
    fn command_cluster_time(&self, context: &CommandContext) -> Option<Timestamp> {
        if context.standalone {
            return None;
        }
        let clock = lock(&self.oplog).clock().latest();
        Some(context.cluster_time.map_or(clock, |known| known.max(clock)))
    }

    /// Whether [`Store::execute`] implements the command named `name`.
    pub fn supports(name: &str) -> bool {
        COMMANDS.contains(&name)
    }

    /// Runs a command inside its transaction if its session fields say so, else directly.
    fn run_command(&self, exec: &mut Exec<'_>, command: &Document) -> StoreResult<Document> {
        let name = command.keys().next().map(String::as_str).unwrap_or("");
        self.cache_session(command, exec.now)?;
        match transaction_fields(command)? {
            Some(fields) if Store::supports(name) => {
                validate_database_name(exec.db)?;
                self.run_in_transaction(exec, command, name, &fields)
            }
            _ => {
                let snapshot_at = snapshot_read_time(self, name, command)?;
                exec.read_at = snapshot_at.or(majority_read_time(
                    self,
                    name,
                    command,
                    exec.majority_committed,
                )?);
                let mut reply = self.dispatch(exec, command)?;
                if let Some(at) = snapshot_at {
                    stamp_reply(&mut reply, at);
                }
                Ok(reply)
            }
        }
    }

    /// Records the session a command names in `lsid` in the session cache (mongod's logical
    /// session cache: every command with a session keeps it alive, retryable or not).
    ///
    /// # Errors
    /// A malformed `lsid`, as mongod parses it, and TooManyLogicalSessions.
    fn cache_session(&self, command: &Document, now: bson::DateTime) -> StoreResult<()> {
        let lsid = match command.get("lsid") {
            None => return Ok(()),
            Some(Bson::Document(lsid)) => lsid,
            Some(other) => {
                return Err(CommandError::type_mismatch(format!(
                    "BSON field 'OperationSessionInfo.lsid' is the wrong type '{}', expected type 'object'",
                    crate::errors::type_name(other)
                )));
            }
        };
        let key = crate::retryable_writes::session_key(lsid)?;
        self.retryable_writes.session(&key, now).map(drop)
    }

    pub(crate) fn dispatch(
        &self,
        exec: &mut Exec<'_>,
        command: &Document,
    ) -> StoreResult<Document> {
        let Some(name) = command.keys().next() else {
            return Err(CommandError::new(
                code::COMMAND_NOT_FOUND,
                "no such command: ''",
            ));
        };
        if !Store::supports(name) {
            return Err(CommandError::new(
                code::COMMAND_NOT_FOUND,
                format!("no such command: '{name}'"),
            ));
        }
        validate_database_name(exec.db)?;
        exec.bypass_validation =
            args::optional_bool(command, name, "bypassDocumentValidation")?.unwrap_or(false);
        let command = &*default_collation::apply(exec, name, command)?;
        match name.as_str() {
            "insert" => write::insert(exec, command),
            "bulkWrite" => bulk_write::bulk_write(exec, command),
            "update" => write::update(exec, command),
            "delete" => write::delete(exec, command),
            "find" => find::find(exec, command),
            "getMore" => find::get_more(exec, command),
            "killCursors" => find::kill_cursors(exec, command),
            "findAndModify" | "findandmodify" => {
                find_and_modify::find_and_modify(exec, command, name)
            }
            "count" => read::count(exec, command),
            "distinct" => read::distinct(exec, command),
            "aggregate" => read::aggregate(exec, command),
            "explain" => explain::explain(exec, command),
            "validate" => validate::validate(exec, command),
            "createIndexes" => admin::create_indexes(exec, command),
            "listIndexes" => admin::list_indexes(exec, command),
            "dropIndexes" | "deleteIndexes" => admin::drop_indexes(exec, command, name),
            "listCollections" => admin::list_collections(exec, command),
            "listDatabases" => admin::list_databases(exec, command),
            "drop" => admin::drop_collection(exec, command),
            "dropDatabase" => admin::drop_database(exec),
            "create" => admin::create(exec, command),
            "dbStats" => admin::db_stats(exec),
            "renameCollection" => admin::rename_collection(exec, command),
            "collMod" => coll_mod::coll_mod(exec, command),
            // Sessions live in the driver's pool; the store keeps no per-session state to end.
            "endSessions" => Ok(bson::doc! { "ok": 1.0 }),
            // With `autocommit: false` these run in `run_in_transaction`.
            "commitTransaction" | "abortTransaction" => Err(CommandError::new(
                code::INVALID_OPTIONS,
                format!("{name} must be run within a transaction"),
            )),
            other => Err(CommandError::new(
                code::COMMAND_NOT_FOUND,
                format!("no such command: '{other}'"),
            )),
        }
    }
}
