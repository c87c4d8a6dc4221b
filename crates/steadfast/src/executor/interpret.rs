//! The interpret stage of an attempt: the reply's `$clusterTime` and `operationTime`, an
//! `ok: 0` reply as a command error, a write concern error (retried only for a retryable
//! write), and otherwise the operation's own reading of the reply.

use std::sync::Arc;
use std::time::Duration;

use bson::raw::RawElement;
use bson::{Bson, Document, RawBsonRef, RawDocument, RawDocumentBuf};
use steadfast_core::TopologyType;
use steadfast_core::codes::ILLEGAL_OPERATION;
use steadfast_core::retry::{FailureKind, OperationKind, Sent};
use steadfast_core::sdam::ErrorPhase;
use steadfast_core::session::ClusterTime;

use super::Executor;
use super::attempt::{AttemptResult, Failure, HeldReply, On, Stage, deadline_status};
use super::exchange::Exchanged;
use super::monitoring;
use crate::conn::description::StreamDescription;
use crate::error::{CommandError, Error, ReplyWriteErrors};
use crate::operation::{Operation, ReplyContext};
use crate::pool::ConnectionGeneration;
use crate::session::ClientSession;

impl Executor {
    /// Reads the reply of an exchange into the attempt's result.
    pub(super) fn interpret<O: Operation>(
        &self,
        op: &mut O,
        stage: Stage<'_>,
        description: Arc<StreamDescription>,
        exchanged: Exchanged,
        session: Option<&mut ClientSession>,
    ) -> AttemptResult<O::Output> {
        let Exchanged {
            reply,
            identity,
            duration,
            generation,
        } = exchanged;
        let address = &stage.selected.address;
        // One pass over the reply's top level finds every field the attempt itself reads.
        let fields = ReplyFields::scan(&reply);
        self.observe_times(&fields, session);
        if !fields.is_ok() {
            let (error, base_backoff) = match server_error(&reply, stage.kind) {
                Ok((error, backoff)) => (error.with_address(address), backoff),
                Err(error) => (error.with_address(address), None),
            };
            if let Some(identity) = &identity {
                monitoring::failed(self.events(), identity, &error, duration);
            }
            let wire_version = description.max_wire_version;
            return self.server_failed(stage, error, generation, base_backoff, wire_version);
        }
        if let Some(identity) = &identity {
            monitoring::succeeded(self.events(), identity, &reply, duration);
        }
        let write_failure = if fields.has_write_concern_error() {
            write_concern_error(&reply)
        } else {
            None
        };
        if let Some(error) = write_failure {
            let error = error.with_address(address);
            let wire_version = description.max_wire_version;
            if let Some(failed) = self.write_concern_failed(stage, error, generation, wire_version)
            {
                // A deadline's failure ends as a timeout; any other keeps the reply for the
                // operation to read if the rules do not retry.
                let held = (failed.facts.kind != FailureKind::DeadlineExpired).then(|| HeldReply {
                    reply,
                    description,
                    address: address.clone(),
                });
                return AttemptResult::Failed(Box::new(Failure {
                    reply: held,
                    ..failed
                }));
            }
        }
        let context = ReplyContext {
            description: &description,
            address,
        };
        let result = op.handle_reply(reply, &context);
        AttemptResult::Completed {
            result,
            address: address.clone(),
        }
    }

    /// An `ok: 0` reply on a connection of `wire_version`: SDAM judges it, then the retry
    /// rules.
    fn server_failed<T>(
        &self,
        stage: Stage<'_>,
        error: Error,
        generation: ConnectionGeneration,
        base_backoff: Option<Duration>,
        wire_version: i32,
    ) -> AttemptResult<T> {
        self.topology().handle_connection_error(
            &stage.selected.address,
            &error,
            generation,
            ErrorPhase::AfterHandshake,
        );
        let on = On {
            server: Some(stage.selected),
            sent: Sent::Yes,
            base_backoff,
            deadline: deadline_status(stage.plan),
            wire_version: Some(wire_version),
        };
        self.failure(error, stage.kind, &on).into()
    }

    /// A write concern error: SDAM judges every one (a state-change code marks the server
    /// Unknown); only a retryable write may be retried on one, and then the failure is
    /// returned (its reply is for the caller to hold).
    fn write_concern_failed(
        &self,
        stage: Stage<'_>,
        error: Error,
        generation: ConnectionGeneration,
        wire_version: i32,
    ) -> Option<Failure> {
        self.topology().handle_connection_error(
            &stage.selected.address,
            &error,
            generation,
            ErrorPhase::AfterHandshake,
        );
        let on = On {
            server: Some(stage.selected),
            sent: Sent::Yes,
            base_backoff: None,
            deadline: deadline_status(stage.plan),
            wire_version: Some(wire_version),
        };
        let (facts, error) = self.facts(error, stage.kind, &on);
        let retryable = facts.is_retryable_write_error() || facts.is_retryable_overload();
        // MaxTimeMSExpired under timeoutMS is the deadline's: the operation fails with a
        // timeout error, not with the reply's write concern error (CSOT "Error
        // Transformations").
        let expired = facts.kind == FailureKind::DeadlineExpired;
        (expired || (stage.kind == OperationKind::RetryableWrite && retryable)).then(|| Failure {
            error,
            facts,
            server: Some(stage.selected.address.clone()),
            sharded: stage.selected.topology_type == TopologyType::Sharded,
            reply: None,
        })
    }

    /// Gossips `$clusterTime` (to the client and the session) and records `operationTime` in
    /// the session.
    fn observe_times(&self, reply: &ReplyFields<'_>, session: Option<&mut ClientSession>) {
        let cluster_time = match reply.value(&reply.cluster_time) {
            Some(RawBsonRef::Document(raw)) => Document::try_from(raw)
                .ok()
                .and_then(ClusterTime::from_document),
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
            observe_transaction_fields(reply, session);
        }
    }
}

/// A sharded transaction's latest `recoveryToken`, and a snapshot session's read time: the
/// `atClusterTime` of its first read (at the top level for distinct, in `cursor` for find and
/// aggregate).
fn observe_transaction_fields(reply: &ReplyFields<'_>, session: &mut ClientSession) {
    if session.in_transaction() {
        if let Some(RawBsonRef::Document(token)) = reply.value(&reply.recovery_token) {
            if let Ok(token) = Document::try_from(token) {
                session.transaction_mut().recovery_token = Some(token);
            }
        }
    }
    if session.is_snapshot() && session.snapshot_time().is_none() {
        let in_cursor = match reply.value(&reply.cursor) {
            Some(RawBsonRef::Document(cursor)) => match cursor.get("atClusterTime") {
                Ok(Some(RawBsonRef::Timestamp(time))) => Some(time),
                _ => None,
            },
            _ => None,
        };
        let at_top = match reply.value(&reply.at_cluster_time) {
            Some(RawBsonRef::Timestamp(time)) => Some(time),
            _ => None,
        };
        if let Some(time) = in_cursor.or(at_top) {
            session.record_snapshot_time(time);
        }
    }
}

/// The first element of each top-level name an attempt reads from a reply. Like a lookup by
/// name, a malformed element ends the search: nothing after it is found.
#[derive(Default)]
struct ReplyFields<'a> {
    ok: Option<RawElement<'a>>,
    cluster_time: Option<RawElement<'a>>,
    operation_time: Option<RawElement<'a>>,
    write_concern_error: Option<RawElement<'a>>,
    recovery_token: Option<RawElement<'a>>,
    at_cluster_time: Option<RawElement<'a>>,
    cursor: Option<RawElement<'a>>,
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
                "recoveryToken" => &mut fields.recovery_token,
                "atClusterTime" => &mut fields.at_cluster_time,
                "cursor" => &mut fields.cursor,
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
    let error = Error::from(CommandError::from_reply(&document)).with_server_response(reply);
    Ok((error, backoff))
}

/// The write concern error of an `ok: 1` reply that has a `writeConcernError` field.
fn write_concern_error(reply: &RawDocumentBuf) -> Option<Error> {
    let document = Document::try_from(reply.clone()).ok()?;
    ReplyWriteErrors::from_reply(&document).and_then(Error::from_write_concern_reply)
}

#[cfg(test)]
mod server_response_tests {
    use bson::{RawDocumentBuf, doc};

    use super::*;

    #[test]
    fn a_command_error_keeps_the_whole_reply() {
        let reply = doc! {
            "ok": 0.0, "code": 359, "codeName": "CannotConvertIndexToUnique",
            "errmsg": "duplicates", "violations": [{ "ids": [1, 2] }],
        };
        let raw = RawDocumentBuf::try_from(&reply).expect("valid BSON");
        let (error, _) = server_error(&raw, OperationKind::RetryableRead).expect("an error reply");
        let kept = error.server_response().expect("kept");
        assert_eq!(Document::try_from(kept.clone()).ok(), Some(reply));
    }
}
