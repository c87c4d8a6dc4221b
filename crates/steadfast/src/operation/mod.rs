//! Operations: what one driver call sends and how it reads the reply.
//!
//! An [`Operation`] is a value describing one command — its body, where it may run, whether it
//! may be retried — and the function that turns the server's reply into the caller's result.
//! The executor (`crate::executor`) does everything that is the same for every command:
//! selecting a server, checking out a connection, adding `$db`, `lsid`, `txnNumber`,
//! `$clusterTime`, `readConcern`, `$readPreference`, `maxTimeMS` and the Stable API fields,
//! sending, turning `ok: 0` and retryable write-concern errors into errors, SDAM error handling,
//! events, and the retry loop. Operations never do I/O.

pub(crate) mod admin;
pub(crate) mod aggregate;
pub(crate) mod change_stream;
pub(crate) mod count;
#[cfg(test)]
pub(crate) mod crud_tests;
pub(crate) mod fields;
pub(crate) mod find;
pub(crate) mod find_and_modify;
pub(crate) mod get_more;
pub(crate) mod inherited;
pub(crate) mod list;
pub(crate) mod settings;
pub(crate) mod write;
pub(crate) mod write_reply;

use bson::{Document, RawDocumentBuf};
use steadfast_core::ServerAddress;
use steadfast_core::options::{ReadConcern, WriteConcern};
use steadfast_core::selection::SelectionCriteria;
use steadfast_wire::DocumentSequence;

use crate::conn::description::StreamDescription;
use crate::error::Result;

/// A command ready to be sent, before the executor adds the fields common to all commands.
#[derive(Clone, Debug)]
#[allow(dead_code)] // Read by the executor, which lands next.
pub(crate) struct Command {
    /// The command name (the body's first key).
    pub(crate) name: String,
    /// The database it runs against (sent as `$db`).
    pub(crate) database: String,
    /// The body, command name first.
    pub(crate) body: CommandBody,
    /// OP_MSG kind-1 sections (`documents`, `updates`, `deletes`), kept out of the body so that
    /// large batches are not re-encoded into one nested document.
    pub(crate) sequences: Vec<DocumentSequence>,
}

impl Command {
    /// A command with a body and no document sequences.
    #[allow(dead_code)] // Used by the operations as they land.
    pub(crate) fn new(
        name: impl Into<String>,
        database: impl Into<String>,
        body: Document,
    ) -> Self {
        Command {
            name: name.into(),
            database: database.into(),
            body: CommandBody::Document(body),
            sequences: Vec::new(),
        }
    }

    /// A command whose body the operation wrote as BSON itself (the hot commands: no map is
    /// built only to be encoded).
    pub(crate) fn raw(
        name: impl Into<String>,
        database: impl Into<String>,
        body: RawDocumentBuf,
    ) -> Self {
        Command {
            name: name.into(),
            database: database.into(),
            body: CommandBody::Raw(body),
            sequences: Vec::new(),
        }
    }
}

/// A command's body as its operation built it: a document the executor encodes, or BSON.
#[derive(Clone, Debug)]
pub(crate) enum CommandBody {
    /// A document, encoded once by the executor.
    Document(Document),
    /// Already BSON.
    Raw(RawDocumentBuf),
}

impl CommandBody {
    /// The body as BSON.
    ///
    /// # Errors
    /// `InvalidArgument` when the document cannot be encoded (a key with a NUL byte, say).
    pub(crate) fn into_raw(self) -> Result<RawDocumentBuf> {
        match self {
            CommandBody::Document(document) => write::encode(&document),
            CommandBody::Raw(raw) => Ok(raw),
        }
    }

    /// The body as a document, as a test reads it.
    #[cfg(test)]
    pub(crate) fn to_document(&self) -> Document {
        match self {
            CommandBody::Document(document) => document.clone(),
            CommandBody::Raw(raw) => Document::try_from(raw.as_ref()).expect("valid BSON"),
        }
    }
}

/// Which retry rules apply to an operation (see `steadfast_core::retry::OperationKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(dead_code)] // Variants are used by the operations as they land.
pub(crate) enum Retryability {
    /// A read in the retryable-reads list.
    Read,
    /// A write that may carry a txnNumber (insertOne/Many, updateOne, replaceOne, deleteOne,
    /// findAndModify, bulk writes without multi-document statements).
    Write,
    /// Never retried by retryable reads or writes (updateMany, deleteMany, most admin commands);
    /// only overload retries apply.
    None,
    /// getMore.
    GetMore,
    /// A generic runCommand.
    RunCommand,
}

/// What the executor knows about the attempt that produced a reply.
#[derive(Debug)]
#[allow(dead_code)] // Fields are read by the operations as they land.
pub(crate) struct ReplyContext<'a> {
    /// The connection's view of its server.
    pub(crate) description: &'a StreamDescription,
    /// The server that answered.
    pub(crate) address: &'a ServerAddress,
}

/// One command of the driver: see the module documentation.
#[allow(dead_code)] // Default methods are overridden by the operations as they land.
pub(crate) trait Operation: Send + Sync {
    /// The caller's result.
    type Output: Send;

    /// The command name, for events, tracing and retry decisions.
    fn name(&self) -> &str;

    /// The driver operation's name, as the OpenTelemetry specification names the operation
    /// span (`dropCollection` for a `drop` command, `runCommand` for any command run as is);
    /// the command name for most operations.
    fn operation_name(&self) -> &str {
        self.name()
    }

    /// Builds the command for this connection. Called once per attempt (a retry may go to a
    /// server with a different wire version); the executor then adds the common fields.
    fn build(&mut self, description: &StreamDescription) -> Result<Command>;

    /// Reads a reply whose `ok` is 1 (the executor has already turned `ok: 0` into an error).
    /// A write concern error that the executor did not retry is still present in `reply`.
    fn handle_reply(
        &mut self,
        reply: RawDocumentBuf,
        context: &ReplyContext<'_>,
    ) -> Result<Self::Output>;

    /// Which servers may run it.
    fn selection_criteria(&self) -> SelectionCriteria {
        SelectionCriteria::Write
    }

    /// Whether it is an aggregation with a write stage (`$out`, `$merge`): its read preference
    /// then holds only when every available server is 5.0+, judged at each selection
    /// ([`steadfast_core::selection::write_stage_criteria`]).
    fn has_write_stage(&self) -> bool {
        false
    }

    /// A server it must run on (getMore and killCursors go where their cursor lives).
    fn target(&self) -> Option<&ServerAddress> {
        None
    }

    /// Which retry rules apply.
    fn retryability(&self) -> Retryability;

    /// Whether running it twice has the same effect as once (lets BestEffort retry it even when
    /// an attempt may have executed). Not a getMore: each one advances its cursor.
    fn idempotent(&self) -> bool {
        self.retryability() == Retryability::Read
    }

    /// The write concern to send, if any.
    fn write_concern(&self) -> Option<&WriteConcern> {
        None
    }

    /// The read concern to send, if the command takes one.
    fn read_concern(&self) -> Option<&ReadConcern> {
        None
    }

    /// Whether the write is acknowledged; unacknowledged (w:0) writes carry no session and are
    /// never retried.
    fn is_acknowledged(&self) -> bool {
        self.write_concern()
            .and_then(|wc| wc.w.as_ref())
            .is_none_or(|w| *w != steadfast_core::options::Acknowledgment::Nodes(0))
    }

    /// Whether the command may carry an `lsid` (false for killCursors-like exceptions and for
    /// unacknowledged writes, which the executor checks separately).
    fn supports_sessions(&self) -> bool {
        true
    }

    /// Whether the command takes a `readConcern`: the executor then sends the operation's read
    /// concern and, in a causally consistent session, `afterClusterTime`. By default the read
    /// commands that accept one (find, aggregate, count, distinct).
    fn supports_read_concern(&self) -> bool {
        matches!(self.name(), "find" | "aggregate" | "count" | "distinct")
    }

    /// For commitTransaction and abortTransaction, which command of a transaction it is:
    /// the executor then retries it as a retryable write whatever retryWrites says, and sends
    /// `autocommit: false` without `startTransaction` or a read concern.
    fn ends_transaction(&self) -> Option<steadfast_core::session::transaction::TransactionCommand> {
        None
    }

    /// Whether the application gave the operation its own read preference, which a
    /// transaction's does not replace (it must be primary all the same).
    fn has_own_read_preference(&self) -> bool {
        false
    }

    /// Whether the application gave the operation its own read concern (not one inherited
    /// from its collection, database or client): refused inside a transaction, whose read
    /// concern is the only one its commands may carry.
    fn has_own_read_concern(&self) -> bool {
        false
    }

    /// Whether the application gave the operation its own write concern (not an inherited
    /// one): refused inside a transaction, which is acknowledged only at commit.
    fn has_own_write_concern(&self) -> bool {
        false
    }

    /// Called before the executor retries the operation; `after_overload` when the failed
    /// attempt was shed by an overloaded server (then the command goes again unchanged).
    fn before_retry(&mut self, after_overload: bool) {
        let _ = after_overload;
    }

    /// Whether the executor may add `maxTimeMS` under timeoutMS. Not for getMore, whose
    /// `maxTimeMS` means the await time of a tailable cursor (killCursors gets one: CSOT
    /// bounds a cursor's close by a refreshed timeoutMS).
    fn accepts_max_time(&self) -> bool {
        self.retryability() != Retryability::GetMore
    }
}
