//! The command layer: one entry point that takes a command document and returns mongod's reply.

mod admin;
pub(crate) mod args;
mod coll_mod;
mod collectionless;
mod find;
mod find_and_modify;
mod raw_request;
mod read;
pub(crate) mod tail;
mod write;

use bson::{Bson, DateTime, Document};

pub use self::raw_request::{MAX_BSON_DEPTH, RawRequestError, check_raw_request};

use super::Store;
use super::catalog::{lock, validate_database_name};
use super::cursor::InsertWait;
use super::errors::{CommandError, StoreResult, code};
use super::oplog::{Change, OpTime, OplogWrite, WriteSession};

/// What a command needs from its caller besides the document.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct CommandContext {
    /// The wall-clock time of the command (the simulated member's clock): stamped on writes'
    /// optimes, `$currentDate`, and generated ObjectIds.
    pub now: DateTime,
}

impl CommandContext {
    /// A context at wall-clock time `now`.
    pub fn new(now: DateTime) -> CommandContext {
        CommandContext { now }
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
}

impl Exec<'_> {
    /// Records an applied write in the op log: the one place entries are made. Document
    /// writes call this while still holding the collection lock, so op log order is apply
    /// order.
    pub(crate) fn record(&mut self, write: OplogWrite) {
        let op_time = lock(&self.store.oplog).record(self.now, write, self.session.clone());
        self.last_write = Some(op_time);
    }

    /// Records a catalog change of `collection` (of this command's database).
    pub(crate) fn record_catalog(
        &mut self,
        collection: &str,
        uuid: Option<[u8; 16]>,
        change: Change,
    ) {
        let ns = self.ns(collection);
        self.record(OplogWrite {
            ns,
            uuid,
            id: None,
            change,
            pre_image: None,
        });
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
        lsid: std::sync::Arc::new(lsid.clone()),
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
        let mut exec = Exec {
            store: self,
            db,
            now: context.now,
            last_write: None,
            awaiting_inserts: None,
            session: write_session(command),
        };
        let reply = match self.dispatch(&mut exec, command) {
            Ok(reply) => reply,
            Err(error) => error.to_reply(),
        };
        CommandOutcome {
            reply,
            last_write: exec.last_write,
            awaiting_inserts: exec.awaiting_inserts,
        }
    }

    /// Whether [`Store::execute`] implements the command named `name`.
    pub fn supports(name: &str) -> bool {
        COMMANDS.contains(&name)
    }

    fn dispatch(&self, exec: &mut Exec<'_>, command: &Document) -> StoreResult<Document> {
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
        if command.contains_key("startTransaction") || command.contains_key("autocommit") {
            return Err(CommandError::new(
                code::ILLEGAL_OPERATION,
                "blackpipe does not support multi-document transactions",
            ));
        }
        match name.as_str() {
            "insert" => write::insert(exec, command),
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
            other => Err(CommandError::new(
                code::COMMAND_NOT_FOUND,
                format!("no such command: '{other}'"),
            )),
        }
    }
}
