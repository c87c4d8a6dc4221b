//! One attempt of an operation: select a server, check out a connection, take the implicit
//! session, build the command with the common fields, send it, and read the reply into a
//! result or a classified failure (after SDAM error handling and command events).

use std::time::Duration;

use bson::raw::RawElement;
use bson::{Bson, Document, RawBsonRef, RawDocument, RawDocumentBuf, rawdoc};
use steadfast_core::description::ServerType;
use steadfast_core::retry::{FailureFacts, FailureKind, OperationKind, Sent};
use steadfast_core::sdam::ErrorPhase;
use steadfast_core::session::ClusterTime;
use steadfast_core::{ServerAddress, TopologyType};
use steadfast_wire::{MsgFlags, OpMsg};

use super::classify::{Circumstances, classify};
use super::fields::{
    CommonFields, read_concern_document, read_preference_document, write_concern_document,
};
use super::monitoring::{self, CommandIdentity};
use super::{OperationPlan, Progress};
use crate::client::Client;
use crate::conn::description::StreamDescription;
use crate::error::{CommandError, Error, ErrorKind, WriteFailure};
use crate::event::ConnectionInfo;
use crate::operation::{Operation, ReplyContext};
use crate::pool::{PoolFailure, failure_of};
use crate::runtime;
use crate::sdam::SelectedServer;
use crate::session::ClientSession;

/// IllegalOperation: a server without retryable-write support received a `txnNumber`.
const ILLEGAL_OPERATION: i32 = 20;

/// How an attempt ended.
pub(super) enum AttemptResult<T> {
    /// The server answered and the operation read the reply (into a result or an error that
    /// no retry can fix).
    Completed {
        result: crate::error::Result<T>,
        address: ServerAddress,
    },
    /// The attempt failed; the retry rules decide what happens next.
    Failed(Box<Failure>),
    /// A retry is impossible: the server selected for it does not support retryable writes
    /// (retryable-writes: raise the previous attempt's error).
    CannotRetry,
}

/// A failed attempt.
pub(super) struct Failure {
    pub(super) error: Error,
    pub(super) facts: FailureFacts,
    pub(super) server: Option<ServerAddress>,
    pub(super) sharded: bool,
    /// An `ok: 1` reply whose write concern error may be retried; if it is not, the operation
    /// reads it as its result.
    pub(super) reply: Option<HeldReply>,
}

/// A reply kept for [`Operation::handle_reply`] with what its context needs.
pub(super) struct HeldReply {
    pub(super) reply: RawDocumentBuf,
    pub(super) description: StreamDescription,
    pub(super) address: ServerAddress,
}

/// The server an attempt is on, for classifying its failures.
struct On<'a> {
    server: Option<&'a SelectedServer>,
    sent: Sent,
    base_backoff: Option<Duration>,
    deadline_passed: bool,
}

impl Client {
    /// Runs one attempt of `op`.
    ///
    /// # Cancel safety
    /// Dropping the future midway releases the selected server and returns (or, mid-exchange,
    /// closes) the connection; the command may or may not have run.
    pub(super) async fn attempt<O: Operation>(
        &self,
        op: &mut O,
        plan: &OperationPlan,
        progress: &mut Progress<'_>,
    ) -> AttemptResult<O::Output> {
        let first = progress.retry.history().is_empty();
        let selection_started = runtime::now();
        let selected = match &plan.target {
            Some(address) => self.topology().select_address(address),
            None => {
                self.topology()
                    .select_server(
                        &plan.criteria,
                        progress.retry.deprioritized(),
                        plan.deadline,
                    )
                    .await
            }
        };
        let selected = match selected {
            Ok(selected) => selected,
            Err(error) => {
                return self.failure(
                    error,
                    plan,
                    progress.retry.profile().kind,
                    &not_sent(None, plan),
                );
            }
        };
        let address = selected.address.clone();
        let server = &selected.description;

        if progress.retry.profile().kind == OperationKind::RetryableWrite {
            let supported = selected.topology_type == TopologyType::LoadBalanced
                || (server.server_type != ServerType::Standalone
                    && server.logical_session_timeout_minutes.is_some());
            if !supported {
                if !first {
                    return AttemptResult::CannotRetry;
                }
                progress.retry.set_kind(OperationKind::NonRetryableWrite);
            }
        }

        // Under timeoutMS, check-out gets what is left of min(serverSelectionTimeoutMS,
        // timeoutMS) since selection began (CSOT "Server Selection").
        let checkout_deadline = if plan.csot {
            let selection_limit = selection_started + self.options().server_selection_timeout;
            Some(
                plan.deadline
                    .map_or(selection_limit, |d| d.min(selection_limit)),
            )
        } else {
            None
        };
        let mut connection = match selected.pool.check_out(checkout_deadline).await {
            Ok(connection) => connection,
            Err(error) => {
                let kind = progress.retry.profile().kind;
                return self.failure(error, plan, kind, &not_sent(Some(&selected), plan));
            }
        };
        let Some(description) = connection.description().cloned() else {
            let error = Error::protocol("a pooled connection has no handshake description")
                .with_address(&address);
            let kind = progress.retry.profile().kind;
            return self.failure(error, plan, kind, &not_sent(Some(&selected), plan));
        };

        // Sessions: an implicit one only now that a connection is checked out (so that no
        // more server sessions are in use than connections), and only if the server supports
        // them; an explicit one must be supported.
        let sessions_supported = description.logical_session_timeout_minutes.is_some()
            || selected.topology_type == TopologyType::LoadBalanced;
        if plan.takes_session {
            if progress.explicit.is_some() && !sessions_supported {
                let error = Error::invalid_argument(
                    "the operation runs in a session, but the server does not support sessions",
                )
                .with_address(&address);
                let kind = progress.retry.profile().kind;
                return self.failure(error, plan, kind, &not_sent(Some(&selected), plan));
            }
            if progress.explicit.is_none() && progress.implicit.is_none() && sessions_supported {
                progress.implicit = Some(ClientSession::new(
                    self.clone(),
                    crate::session::SessionOptions::default(),
                    true,
                ));
            }
        }
        let Progress {
            retry,
            explicit,
            implicit,
            txn_number,
        } = &mut *progress;
        let mut session = if plan.takes_session && sessions_supported {
            explicit.as_deref_mut().or(implicit.as_mut())
        } else {
            None
        };

        if retry.profile().kind == OperationKind::RetryableWrite && txn_number.is_none() {
            // One transaction number for the operation, reused by every retry.
            match session
                .as_deref_mut()
                .and_then(ClientSession::next_txn_number)
            {
                Some(number) => *txn_number = Some(number),
                None if first => retry.set_kind(OperationKind::NonRetryableWrite),
                None => return AttemptResult::CannotRetry,
            }
        }
        let kind = retry.profile().kind;

        let mut command = match op.build(&description) {
            Ok(command) => command,
            Err(error) => {
                return self.failure(error, plan, kind, &not_sent(Some(&selected), plan));
            }
        };
        let cluster_time = {
            let client_time = self.topology().cluster_time();
            let session_time = session
                .as_deref()
                .and_then(ClientSession::cluster_time_value);
            ClusterTime::max(client_time.as_ref(), session_time).map(|c| c.document.clone())
        };
        let after_cluster_time = session
            .as_deref()
            .filter(|s| s.is_causally_consistent())
            .and_then(ClientSession::operation_time);
        let read_concern = if op.supports_read_concern() {
            read_concern_document(op.read_concern(), after_cluster_time)
        } else {
            None
        };
        let mut fields = CommonFields {
            database: &command.database,
            lsid: session.as_deref().map(ClientSession::id),
            txn_number: (kind == OperationKind::RetryableWrite)
                .then_some(*txn_number)
                .flatten(),
            cluster_time: cluster_time.as_ref(),
            read_concern,
            write_concern: op
                .write_concern()
                .and_then(|wc| write_concern_document(wc, plan.csot)),
            read_preference: read_preference_document(
                &plan.criteria,
                selected.topology_type,
                server.server_type,
            ),
            max_time: None,
            server_api: self.server_api(),
        };
        if let Some(deadline) = plan.deadline {
            // maxTimeMS = what is left minus the server's minimum round trip; if nothing is
            // left the command is not sent at all (CSOT "Command Execution").
            let remaining = deadline.saturating_duration_since(runtime::now());
            let rtt = server.min_round_trip_time.unwrap_or_default();
            if remaining <= rtt {
                let error = Error::timeout(format!(
                    "before sending {}: {} ms of timeoutMS left, not more than the server's minimum round trip time of {} ms",
                    plan.name,
                    remaining.as_millis(),
                    rtt.as_millis()
                ))
                .with_address(&address);
                let on = On {
                    deadline_passed: true,
                    ..not_sent(Some(&selected), plan)
                };
                return self.failure(error, plan, kind, &on);
            }
            if op.accepts_max_time() && !plan.omit_max_time {
                fields.max_time = Some(remaining - rtt);
            } else if let Some(own) = own_max_time(&command.body) {
                // A tailable await getMore's maxAwaitTimeMS never outlasts the deadline (CSOT).
                fields.max_time = Some(own.min(remaining - rtt));
            }
        }
        let mut body = std::mem::take(&mut command.body);
        if plan.csot && op.accepts_max_time() && fields.max_time.is_none() {
            // Under timeoutMS the operation's own maxTimeMS option is ignored (CSOT).
            body.remove("maxTimeMS");
        }
        fields.apply(&mut body);
        let raw = match RawDocumentBuf::try_from(&body) {
            Ok(raw) => raw,
            Err(e) => {
                let error = Error::invalid_argument("the command cannot be encoded as BSON")
                    .with_source(e)
                    .with_address(&address);
                return self.failure(error, plan, kind, &not_sent(Some(&selected), plan));
            }
        };
        let mut message = OpMsg::new(raw);
        if !plan.acknowledged {
            message = message.with_flags(MsgFlags::MORE_TO_COME);
        }
        for sequence in std::mem::take(&mut command.sequences) {
            message = message.with_sequence(sequence);
        }

        let identity = self.monitoring_active().then(|| CommandIdentity {
            name: command.name.clone(),
            database: command.database.clone(),
            request_id: connection.reserve_request_id(),
            operation_id: plan.operation_id,
            connection: ConnectionInfo {
                address: address.clone(),
                id: connection.id(),
                server_id: description.server_connection_id,
            },
            sensitive: monitoring::is_sensitive(&command.name, &body),
        });
        if let Some(identity) = &identity {
            monitoring::started(self.events(), identity, &body, &message.sequences);
        }
        if let Some(session) = session.as_deref_mut() {
            session.begin_exchange();
        }
        // Under timeoutMS the deprecated socketTimeoutMS gives way to the deadline (CSOT).
        let socket_timeout = connection.socket_timeout();
        if plan.csot {
            connection.set_socket_timeout(None);
        }
        let sent_at = runtime::now();
        let exchange = connection.send_message(message, plan.deadline).await;
        if let Some(session) = session.as_deref_mut() {
            session.end_exchange();
        }
        connection.set_socket_timeout(socket_timeout);
        let duration = runtime::now().saturating_duration_since(sent_at);
        let generation = connection.generation();

        let reply = match exchange {
            Ok(reply) if plan.acknowledged => reply.body,
            Ok(_) => rawdoc! { "ok": 1 },
            Err(error) => {
                if let Some(identity) = &identity {
                    monitoring::failed(self.events(), identity, &error, duration);
                }
                let interrupted =
                    matches!(failure_of(&error), Some(PoolFailure::Interrupted { .. }));
                if error.is_network_error() {
                    if let Some(session) = session.as_deref_mut() {
                        session.mark_dirty();
                    }
                }
                if !interrupted {
                    self.topology().handle_application_error(
                        &address,
                        &error,
                        generation,
                        ErrorPhase::AfterHandshake,
                    );
                }
                let sent = if matches!(error.kind(), ErrorKind::InvalidArgument { .. }) {
                    Sent::No
                } else {
                    Sent::Yes
                };
                let on = On {
                    server: Some(&selected),
                    sent,
                    base_backoff: None,
                    deadline_passed: deadline_passed(plan),
                };
                return self.failure(error, plan, kind, &on);
            }
        };

        // One pass over the reply's top level finds every field the attempt itself reads.
        let fields = ReplyFields::scan(&reply);
        self.observe_times(&fields, session);
        let has_write_concern_error = fields.has_write_concern_error();
        if !fields.is_ok() {
            let mut error = match server_error(&reply, kind) {
                Ok((error, backoff)) => (error.with_address(&address), backoff),
                Err(error) => (error.with_address(&address), None),
            };
            if let Some(identity) = &identity {
                monitoring::failed(self.events(), identity, &error.0, duration);
            }
            self.topology().handle_application_error(
                &address,
                &error.0,
                generation,
                ErrorPhase::AfterHandshake,
            );
            let on = On {
                server: Some(&selected),
                sent: Sent::Yes,
                base_backoff: error.1.take(),
                deadline_passed: deadline_passed(plan),
            };
            return self.failure(error.0, plan, kind, &on);
        }
        if let Some(identity) = &identity {
            monitoring::succeeded(self.events(), identity, &reply, duration);
        }
        let write_failure = if has_write_concern_error {
            write_concern_error(&reply)
        } else {
            None
        };
        if let Some(failure) = write_failure {
            // SDAM judges every write concern error (a state-change code marks the server
            // Unknown); only a retryable write may be retried on one.
            let error = Error::from(failure).with_address(&address);
            self.topology().handle_application_error(
                &address,
                &error,
                generation,
                ErrorPhase::AfterHandshake,
            );
            let on = On {
                server: Some(&selected),
                sent: Sent::Yes,
                base_backoff: None,
                deadline_passed: deadline_passed(plan),
            };
            let circumstances = self.circumstances(plan, kind, &on);
            let (facts, error) = classify(error, &circumstances);
            let retryable = facts.is_retryable_write_error() || facts.is_retryable_overload();
            // MaxTimeMSExpired under timeoutMS is the deadline's: the operation fails with a
            // timeout error, not with the reply's write concern error (CSOT "Error
            // Transformations").
            let expired = facts.kind == FailureKind::DeadlineExpired;
            if expired || (kind == OperationKind::RetryableWrite && retryable) {
                return AttemptResult::Failed(Box::new(Failure {
                    error,
                    facts,
                    server: Some(address.clone()),
                    sharded: selected.topology_type == TopologyType::Sharded,
                    reply: (!expired).then_some(HeldReply {
                        reply,
                        description,
                        address,
                    }),
                }));
            }
        }
        let context = ReplyContext {
            description: &description,
            address: &address,
        };
        let result = op.handle_reply(reply, &context);
        drop(connection);
        AttemptResult::Completed { result, address }
    }

    /// Classifies a failure of this attempt.
    fn failure<T>(
        &self,
        error: Error,
        plan: &OperationPlan,
        kind: OperationKind,
        on: &On<'_>,
    ) -> AttemptResult<T> {
        let circumstances = self.circumstances(plan, kind, on);
        let (facts, error) = classify(error, &circumstances);
        AttemptResult::Failed(Box::new(Failure {
            error,
            facts,
            server: on.server.map(|s| s.address.clone()),
            sharded: on
                .server
                .is_some_and(|s| s.topology_type == TopologyType::Sharded),
            reply: None,
        }))
    }

    fn circumstances(
        &self,
        plan: &OperationPlan,
        kind: OperationKind,
        on: &On<'_>,
    ) -> Circumstances {
        Circumstances {
            kind,
            retry_writes: self.options().retry_writes,
            max_wire_version: on.server.map_or(0, |s| s.description.max_wire_version),
            mongos: on
                .server
                .is_some_and(|s| s.description.server_type == ServerType::Mongos),
            csot: plan.csot,
            deadline_passed: on.deadline_passed,
            sent: on.sent,
            base_backoff: on.base_backoff,
        }
    }

    /// Gossips `$clusterTime` (to the client and the session) and records `operationTime` in
    /// the session.
    fn observe_times(&self, reply: &ReplyFields<'_>, session: Option<&mut ClientSession>) {
        let cluster_time = match reply.value(&reply.cluster_time) {
            Some(RawBsonRef::Document(raw)) => Document::try_from(raw).ok().and_then(|document| {
                let timestamp = document.get_timestamp("clusterTime").ok()?;
                Some(ClusterTime {
                    timestamp,
                    document,
                })
            }),
            _ => None,
        };
        if let Some(cluster_time) = &cluster_time {
            self.topology().advance_cluster_time(cluster_time);
        }
        if let Some(session) = session {
            if let Some(cluster_time) = &cluster_time {
                session.observe_cluster_time(cluster_time);
            }
            if let Some(RawBsonRef::Timestamp(operation_time)) = reply.value(&reply.operation_time)
            {
                session.advance_operation_time(operation_time);
            }
        }
    }
}

/// A failure before anything was sent.
fn not_sent<'a>(server: Option<&'a SelectedServer>, plan: &OperationPlan) -> On<'a> {
    On {
        server,
        sent: Sent::No,
        base_backoff: None,
        deadline_passed: deadline_passed(plan),
    }
}

fn deadline_passed(plan: &OperationPlan) -> bool {
    plan.deadline
        .is_some_and(|deadline| runtime::now() >= deadline)
}

/// The first element of each top-level name an attempt reads from a reply. Like a lookup by
/// name, a malformed element ends the search: nothing after it is found.
#[derive(Default)]
struct ReplyFields<'a> {
    ok: Option<RawElement<'a>>,
    cluster_time: Option<RawElement<'a>>,
    operation_time: Option<RawElement<'a>>,
    write_concern_error: Option<RawElement<'a>>,
}

impl<'a> ReplyFields<'a> {
    fn scan(reply: &'a RawDocument) -> Self {
        let mut fields = ReplyFields::default();
        for element in reply.iter_elements() {
            let Ok(element) = element else { break };
            let slot = match element.key().as_str() {
                "ok" => &mut fields.ok,
                "$clusterTime" => &mut fields.cluster_time,
                "operationTime" => &mut fields.operation_time,
                "writeConcernError" => &mut fields.write_concern_error,
                _ => continue,
            };
            if slot.is_none() {
                *slot = Some(element);
            }
        }
        fields
    }

    /// The value of `field`, if it is present and readable.
    fn value(&self, field: &Option<RawElement<'a>>) -> Option<RawBsonRef<'a>> {
        field.as_ref().and_then(|e| e.value().ok())
    }

    /// `ok` is 1 (any numeric type) or true.
    fn is_ok(&self) -> bool {
        match self.value(&self.ok) {
            Some(RawBsonRef::Double(v)) => v == 1.0,
            Some(RawBsonRef::Int32(v)) => v == 1,
            Some(RawBsonRef::Int64(v)) => v == 1,
            Some(RawBsonRef::Boolean(v)) => v,
            _ => false,
        }
    }

    /// A readable `writeConcernError` field is present.
    fn has_write_concern_error(&self) -> bool {
        self.value(&self.write_concern_error).is_some()
    }
}

/// The command error of an `ok: 0` reply, and the server's `baseBackoffMS`.
fn server_error(
    reply: &RawDocumentBuf,
    kind: OperationKind,
) -> crate::error::Result<(Error, Option<Duration>)> {
    let mut document = Document::try_from(reply.clone())
        .map_err(|e| Error::protocol("the error reply is not valid BSON").with_source(e))?;
    let is_old_server_refusing_txn_numbers = kind == OperationKind::RetryableWrite
        && document.get_i32("code").ok() == Some(ILLEGAL_OPERATION)
        && document
            .get_str("errmsg")
            .is_ok_and(|m| m.starts_with("Transaction numbers"));
    if is_old_server_refusing_txn_numbers {
        // retryable-writes: replace the server's puzzling message with an actionable one.
        document.insert(
            "errmsg",
            "This MongoDB deployment does not support retryable writes. Please add retryWrites=false to your connection string.",
        );
    }
    let backoff = match document.get("baseBackoffMS") {
        Some(Bson::Int32(ms)) if *ms > 0 => u64::try_from(*ms).ok(),
        Some(Bson::Int64(ms)) if *ms > 0 => u64::try_from(*ms).ok(),
        Some(Bson::Double(ms)) if *ms > 0.0 && ms.is_finite() => Some(ms.round() as u64),
        _ => None,
    }
    .map(Duration::from_millis);
    Ok((Error::from(CommandError::from_reply(&document)), backoff))
}

/// The write concern error of an `ok: 1` reply that has a `writeConcernError` field.
fn write_concern_error(reply: &RawDocumentBuf) -> Option<WriteFailure> {
    let document = Document::try_from(reply.clone()).ok()?;
    WriteFailure::from_reply(&document).filter(|f| f.write_concern_error.is_some())
}

/// The `maxTimeMS` an operation put in its own command (a getMore's maxAwaitTimeMS).
fn own_max_time(body: &bson::Document) -> Option<Duration> {
    let millis = match body.get("maxTimeMS")? {
        bson::Bson::Int32(n) => i64::from(*n),
        bson::Bson::Int64(n) => *n,
        _ => return None,
    };
    u64::try_from(millis).ok().map(Duration::from_millis)
}
