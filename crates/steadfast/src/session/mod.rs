//! Client sessions (driver-sessions specification).
//!
//! A [`ClientSession`] wraps one pooled server session (its `lsid` and transaction-number
//! counter) together with the session's own view of time: the highest `$clusterTime` and the
//! last `operationTime` it saw. The executor attaches the `lsid` to every command run in the
//! session, gossips the cluster time, and, for causally consistent sessions, makes reads wait
//! for the session's last operation (`readConcern.afterClusterTime`).
//!
//! Operations run without a session use an *implicit* one: the executor takes a server session
//! from the pool only once it has a connection (so there are never more sessions in use than
//! connections), keeps it for every retry of the operation, and returns it right after —
//! or, for a cursor, once the cursor is exhausted or dropped.
//!
//! A session that saw a network error is *dirty*: the server may still be running its last
//! command, so the session id is never reused once the session ends. So is a session whose
//! command was interrupted by dropping the operation's future after it was sent: the reply
//! never came back, and the server may still be running it.

mod convenient;
mod end_transaction;
#[cfg(test)]
mod tests;
mod transaction;

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bson::{Document, RawDocument, Timestamp};
pub use steadfast_core::session::transaction::TransactionState;
use steadfast_core::session::{ServerSession, advance_cluster_time, lsid_document};

pub use steadfast_core::session::ClusterTime;
use steadfast_core::{Deadline, ServerAddress};

use crate::client::Client;
use crate::error::{Error, Result};
use crate::executor::Executor;
use crate::options::TransactionOptions;

pub(crate) use end_transaction::EndTransaction;
pub use transaction::{AbortTransaction, CommitTransaction, StartTransaction};

/// How a session started with [`Client::start_session`] behaves.
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct SessionOptions {
    /// Whether reads in the session observe the session's earlier operations
    /// (`readConcern.afterClusterTime`); `None` means yes, the specification's default.
    pub causal_consistency: Option<bool>,
    /// defaultTimeoutMS: the timeoutMS of operations run in the session that do not set their
    /// own, over the collection's, database's and client's (`Duration::ZERO`: no limit; `None`:
    /// inherit as usual).
    #[serde(
        rename = "defaultTimeoutMS",
        with = "steadfast_core::serde_util::duration_ms"
    )]
    pub default_timeout: Option<Duration>,
    /// The options of transactions started in the session that do not set their own (before
    /// the client's).
    pub default_transaction_options: Option<TransactionOptions>,
    /// A snapshot session: every read sees the data as of one point in time, the cluster time
    /// of the session's first read (`readConcern: {level: "snapshot", atClusterTime}`).
    /// Incompatible with `causal_consistency: Some(true)` and with transactions.
    pub snapshot: Option<bool>,
    /// A snapshot session's read time, instead of its first read's `atClusterTime`; only
    /// with `snapshot: Some(true)`.
    pub snapshot_time: Option<Timestamp>,
}

impl SessionOptions {
    /// A builder, starting from the defaults.
    pub fn builder() -> SessionOptionsBuilder {
        SessionOptionsBuilder::default()
    }

    /// Sets [`SessionOptions::causal_consistency`].
    #[must_use]
    pub fn causal_consistency(mut self, on: bool) -> Self {
        self.causal_consistency = Some(on);
        self
    }

    /// Sets [`SessionOptions::default_timeout`].
    #[must_use]
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = Some(timeout);
        self
    }

    /// Sets [`SessionOptions::default_transaction_options`].
    #[must_use]
    pub fn default_transaction_options(mut self, options: TransactionOptions) -> Self {
        self.default_transaction_options = Some(options);
        self
    }

    /// Sets [`SessionOptions::snapshot`].
    #[must_use]
    pub fn snapshot(mut self, on: bool) -> Self {
        self.snapshot = Some(on);
        self
    }

    /// Sets [`SessionOptions::snapshot_time`].
    #[must_use]
    pub fn snapshot_time(mut self, time: Timestamp) -> Self {
        self.snapshot_time = Some(time);
        self
    }

    /// Refuses contradictory options.
    ///
    /// # Errors
    /// `InvalidArgument` for a snapshot session that asks for causal consistency.
    pub(crate) fn validate(&self) -> Result<()> {
        if self.snapshot == Some(true) && self.causal_consistency == Some(true) {
            return Err(Error::invalid_argument(
                "a session cannot be both a snapshot session and causally consistent",
            ));
        }
        if self.snapshot_time.is_some() && self.snapshot != Some(true) {
            return Err(Error::invalid_argument(
                "snapshot_time is only for snapshot sessions (snapshot: true)",
            ));
        }
        Ok(())
    }
}

/// Builds [`SessionOptions`] by chained setters; each takes the value or an `Option`.
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct SessionOptionsBuilder {
    options: SessionOptions,
}

impl SessionOptionsBuilder {
    /// Sets [`SessionOptions::causal_consistency`].
    pub fn causal_consistency(mut self, on: impl Into<Option<bool>>) -> Self {
        self.options.causal_consistency = on.into();
        self
    }

    /// Sets [`SessionOptions::default_timeout`].
    pub fn default_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.options.default_timeout = timeout.into();
        self
    }

    /// Sets [`SessionOptions::default_transaction_options`].
    pub fn default_transaction_options(
        mut self,
        options: impl Into<Option<TransactionOptions>>,
    ) -> Self {
        self.options.default_transaction_options = options.into();
        self
    }

    /// Sets [`SessionOptions::snapshot`].
    pub fn snapshot(mut self, on: impl Into<Option<bool>>) -> Self {
        self.options.snapshot = on.into();
        self
    }

    /// Sets [`SessionOptions::snapshot_time`].
    pub fn snapshot_time(mut self, time: impl Into<Option<Timestamp>>) -> Self {
        self.options.snapshot_time = time.into();
        self
    }

    /// The options.
    pub fn build(self) -> SessionOptions {
        self.options
    }
}

/// A logical session: operations run in it share one server session id, and, when causally
/// consistent, each read observes the session's earlier writes.
///
/// Start one with [`Client::start_session`]; pass it to operations (`.session(&mut session)`
/// on the CRUD builders, [`crate::Database::run_command_with_session`]). Dropping it ends it:
/// its server session goes back to the client's pool (unless it saw a network error, or an
/// operation's future was dropped after sending its command) to be reused by a later session. A session is not thread safe in the specification's sense: use it
/// for one operation at a time, which `&mut` enforces.
///
/// A session that waits more than about a minute short of the server's
/// `logicalSessionTimeoutMinutes` (30 minutes by default) between operations risks the server
/// forgetting it.
pub struct ClientSession {
    /// The executor of the client that started the session.
    executor: Arc<Executor>,
    /// `Some` until dropped.
    server_session: Option<ServerSession>,
    /// The server session's UUID.
    uuid: [u8; 16],
    /// `lsid` as a document, built the first time it is asked for: commands carry the
    /// server session's encoded copy, so most sessions (implicit ones) never need it.
    lsid: OnceLock<Document>,
    cluster_time: Option<ClusterTime>,
    operation_time: Option<Timestamp>,
    options: SessionOptions,
    implicit: bool,
    /// Set while a command of this session is on the wire. If the operation's future is
    /// dropped before the reply is read, it stays set and the session counts as dirty.
    exchange_pending: bool,
    /// The transaction, if any: its state, options, mongos pin and recovery token.
    transaction: Transaction,
    /// A snapshot session's read time, from its first read's reply.
    snapshot_time: Option<Timestamp>,
    /// While the convenient API runs under timeoutMS: the deadline every operation of the
    /// transaction shares.
    convenient_deadline: Option<Deadline>,
}

/// The session's transaction.
#[derive(Debug, Default)]
pub(crate) struct Transaction {
    pub(crate) state: TransactionState,
    /// The options the current (or last) transaction was started with, resolved.
    pub(crate) options: TransactionOptions,
    /// The mongos a sharded transaction runs on.
    pub(crate) pinned: Option<ServerAddress>,
    /// The connection a load-balanced transaction runs on (load-balancers, "Behaviour With
    /// Transactions"); dropping it checks the connection back in.
    pub(crate) connection: Option<crate::pool::PinnedConnection>,
    /// The last `recoveryToken` a mongos sent in this transaction.
    pub(crate) recovery_token: Option<Document>,
    /// The transaction's OpenTelemetry span, from its start to its commit or abort.
    pub(crate) trace: crate::otel::TransactionTrace,
}

impl fmt::Debug for ClientSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientSession")
            .field("id", self.id())
            .field("implicit", &self.implicit)
            .field("dirty", &self.is_dirty())
            .field(
                "cluster_time",
                &self.cluster_time.as_ref().map(ClusterTime::timestamp),
            )
            .field("operation_time", &self.operation_time)
            .field("options", &self.options)
            .field("transaction", &self.transaction.state)
            .field("snapshot_time", &self.snapshot_time)
            .finish()
    }
}

impl ClientSession {
    /// A session of the client `executor` runs for, on a server session from its pool.
    pub(crate) fn new(executor: Arc<Executor>, options: SessionOptions, implicit: bool) -> Self {
        let server_session = executor.acquire_server_session();
        ClientSession {
            uuid: *server_session.id_bytes(),
            lsid: OnceLock::new(),
            server_session: Some(server_session),
            executor,
            cluster_time: None,
            operation_time: None,
            implicit,
            exchange_pending: false,
            transaction: Transaction::default(),
            snapshot_time: options.snapshot_time,
            convenient_deadline: None,
            options,
        }
    }

    /// A handle to the client that started the session.
    pub fn client(&self) -> Client {
        Client::from_executor(Arc::clone(&self.executor))
    }

    /// The session id, as sent in `lsid`: `{ id: <UUID> }`.
    pub fn id(&self) -> &Document {
        self.lsid.get_or_init(|| lsid_document(&self.uuid))
    }

    /// The session id encoded, as the executor appends it to commands (`None` only while the
    /// session is being dropped).
    pub(crate) fn encoded_id(&self) -> Option<&RawDocument> {
        self.server_session
            .as_ref()
            .map(ServerSession::encoded_lsid)
    }

    /// The options the session was started with.
    pub fn options(&self) -> &SessionOptions {
        &self.options
    }

    /// The session's defaultTimeoutMS, used by operations run in it that set no timeout.
    pub(crate) fn default_timeout(&self) -> Option<Duration> {
        self.options.default_timeout
    }

    /// Whether reads in this session wait for its earlier operations (never so for a snapshot
    /// session, whose reads all see one point in time).
    pub fn is_causally_consistent(&self) -> bool {
        !self.implicit && !self.is_snapshot() && self.options.causal_consistency.unwrap_or(true)
    }

    /// Whether this is a snapshot session ([`SessionOptions::snapshot`]).
    pub fn is_snapshot(&self) -> bool {
        self.options.snapshot == Some(true)
    }

    /// A snapshot session's read time: the `atClusterTime` of its first read, sent with every
    /// later read. `None` before the first read, and for other sessions.
    pub fn snapshot_time(&self) -> Option<Timestamp> {
        self.snapshot_time
    }

    /// Records a snapshot session's read time, from its first read.
    pub(crate) fn record_snapshot_time(&mut self, time: Timestamp) {
        if self.is_snapshot() && self.snapshot_time.is_none() {
            self.snapshot_time = Some(time);
        }
    }

    /// The span the operations of the session's transaction nest in.
    pub(crate) fn transaction_trace(&self) -> &crate::otel::TransactionTrace {
        &self.transaction.trace
    }

    /// Whether a transaction is starting or in progress.
    pub fn in_transaction(&self) -> bool {
        self.transaction.state.is_active()
    }

    /// Where the session stands with its transactions (a steadfast addition, for tests and
    /// diagnostics).
    pub fn transaction_state(&self) -> TransactionState {
        self.transaction.state
    }

    /// The mongos a sharded transaction of this session is pinned to, if any (a steadfast
    /// addition, for tests and diagnostics).
    pub fn pinned_mongos(&self) -> Option<&ServerAddress> {
        self.transaction.pinned.as_ref()
    }

    /// Whether the session's transaction is pinned: to a mongos in a sharded cluster (see
    /// [`ClientSession::pinned_mongos`]), or to a connection in load-balanced mode, where only
    /// that connection reaches the service running the transaction (a steadfast addition, for
    /// tests and diagnostics).
    pub fn is_pinned(&self) -> bool {
        self.transaction.pinned.is_some() || self.transaction.connection.is_some()
    }

    /// The deadline of the convenient API's transaction, while one runs under timeoutMS.
    pub(crate) fn convenient_deadline(&self) -> Option<Deadline> {
        self.convenient_deadline
    }

    /// Sets (or clears) the convenient API's deadline.
    pub(crate) fn set_convenient_deadline(&mut self, deadline: Option<Deadline>) {
        self.convenient_deadline = deadline;
    }

    /// The transaction state, for the executor.
    pub(crate) fn transaction(&self) -> &Transaction {
        &self.transaction
    }

    /// The transaction state, for the executor to move.
    pub(crate) fn transaction_mut(&mut self) -> &mut Transaction {
        &mut self.transaction
    }

    /// The transaction number of the session's current transaction (the last one handed out).
    pub(crate) fn current_txn_number(&self) -> Option<i64> {
        self.server_session.as_ref().map(ServerSession::txn_number)
    }

    /// Drops the session's mongos pin, and checks its pinned connection back in.
    pub(crate) fn unpin(&mut self) {
        self.transaction.pinned = None;
        self.transaction.connection = None;
    }

    /// The highest `$clusterTime` this session has seen (from replies to its operations or
    /// [`ClientSession::advance_cluster_time`]); `None` until it has seen one.
    pub fn cluster_time(&self) -> Option<&ClusterTime> {
        self.cluster_time.as_ref()
    }

    /// Sets the session's cluster time to `to` if the session has none yet or `to` is newer
    /// (typically the cluster time of another session, for causal consistency across them).
    /// Only this session sends it; the client's own cluster time only ever comes from servers.
    pub fn advance_cluster_time(&mut self, to: &ClusterTime) {
        advance_cluster_time(&mut self.cluster_time, to);
    }

    /// The `operationTime` of the last operation run in this session (or given to
    /// [`ClientSession::advance_operation_time`]).
    pub fn operation_time(&self) -> Option<Timestamp> {
        self.operation_time
    }

    /// Advances the session's operation time to `operation_time` if it is later, so that the
    /// session's next read observes what that time covers (for example, an operation of
    /// another session).
    pub fn advance_operation_time(&mut self, operation_time: Timestamp) {
        if self
            .operation_time
            .is_none_or(|current| ts_key(operation_time) > ts_key(current))
        {
            self.operation_time = Some(operation_time);
        }
    }

    /// Whether the session saw a network error, or an operation of it was cancelled after
    /// sending its command (its id will not be reused).
    pub fn is_dirty(&self) -> bool {
        self.exchange_pending
            || self
                .server_session
                .as_ref()
                .is_some_and(ServerSession::is_dirty)
    }

    pub(crate) fn is_implicit(&self) -> bool {
        self.implicit
    }

    /// Whether `executor` runs the operations of the client this session belongs to.
    pub(crate) fn belongs_to(&self, executor: &Arc<Executor>) -> bool {
        Arc::ptr_eq(&self.executor, executor)
    }

    /// The session's own cluster time, for gossip.
    pub(crate) fn cluster_time_value(&self) -> Option<&ClusterTime> {
        self.cluster_time.as_ref()
    }

    /// Records a `$clusterTime` received from a server.
    pub(crate) fn observe_cluster_time(&mut self, cluster_time: &ClusterTime) {
        advance_cluster_time(&mut self.cluster_time, cluster_time);
    }

    /// Marks the server session dirty after a network error.
    pub(crate) fn mark_dirty(&mut self) {
        if let Some(session) = &mut self.server_session {
            session.mark_dirty();
        }
    }

    /// Hands out the transaction number of a new retryable write.
    pub(crate) fn next_txn_number(&mut self) -> Option<i64> {
        self.server_session
            .as_mut()
            .map(ServerSession::next_txn_number)
    }

    /// Records that the session id is being sent now, in a command whose reply is pending
    /// until [`ClientSession::end_exchange`].
    pub(crate) fn begin_exchange(&mut self) {
        if self.exchange_pending {
            // The previous command's future was dropped before its reply was read.
            self.mark_dirty();
        }
        self.exchange_pending = true;
        if let Some(session) = &mut self.server_session {
            session.touch(crate::runtime::now());
        }
    }

    /// Records that the exchange begun by [`ClientSession::begin_exchange`] finished, with a
    /// reply or an error (a network error marks the session dirty on its own).
    pub(crate) fn end_exchange(&mut self) {
        self.exchange_pending = false;
    }
}

impl Drop for ClientSession {
    fn drop(&mut self) {
        if self.exchange_pending {
            self.mark_dirty();
        }
        let Some(session) = self.server_session.take() else {
            return;
        };
        if self.transaction.state == TransactionState::InProgress
            && self.executor.ensure_open().is_ok()
        {
            // driver-sessions / transactions "endSession changes": ending a session aborts its
            // transaction, errors ignored. A background task does it, holding the server
            // session until the abort is done so that nothing else reuses it meanwhile.
            let mut ending = ClientSession {
                executor: Arc::clone(&self.executor),
                uuid: self.uuid,
                lsid: self.lsid.clone(),
                server_session: Some(session),
                cluster_time: self.cluster_time.take(),
                operation_time: self.operation_time,
                options: self.options.clone(),
                implicit: self.implicit,
                exchange_pending: false,
                transaction: std::mem::take(&mut self.transaction),
                snapshot_time: None,
                convenient_deadline: None,
            };
            self.executor.spawn(async move {
                let deadline = ending.end_transaction_deadline(None);
                let _ = ending.abort_now(deadline).await;
            });
            return;
        }
        self.executor.release_server_session(session);
    }
}

fn ts_key(ts: Timestamp) -> (u32, u32) {
    (ts.time, ts.increment)
}
