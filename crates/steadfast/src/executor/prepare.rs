//! The prepare stage of an attempt: the operation's command for this connection, the fields
//! every command carries (`$db`, `lsid`, `txnNumber`, `$clusterTime`, concerns, read
//! preference, `maxTimeMS`, Stable API), framed as an OP_MSG.

use std::time::Duration;

use bson::Document;
use steadfast_core::NotEnoughTime;
use steadfast_core::session::newest_cluster_time;
use steadfast_wire::{MsgFlags, OpMsg};

use super::Executor;
use super::attempt::{Interrupt, On, Stage, not_sent};
use super::classify::DeadlineStatus;
use super::fields::{
    CommonFields, TransactionFields, read_concern_document, read_preference_document,
    write_concern_document,
};
use super::session::AttemptSession;
use super::transaction::{first_command_read_concern, snapshot_read_concern};
use crate::conn::description::StreamDescription;
use crate::error::Error;
use crate::operation::{Command, Operation, Retryability};

/// Snapshot reads need MongoDB 5.0 (snapshot-sessions).
const SNAPSHOT_WIRE_VERSION: i32 = 13;
use crate::runtime;
use crate::session::ClientSession;

/// A command ready to send.
#[derive(Clone)]
pub(super) struct Prepared {
    /// The command's name, for events.
    pub(super) name: String,
    /// Its database, for events.
    pub(super) database: String,
    /// The message to send (its body, with the common fields, is what events show).
    pub(super) message: OpMsg,
}

impl Executor {
    /// Builds the attempt's message. Under timeoutMS, `maxTimeMS` is what is left minus the
    /// server's minimum round trip; when nothing is left the command is not sent at all (CSOT
    /// "Command Execution").
    pub(super) fn prepare<O: Operation>(
        &self,
        op: &mut O,
        stage: Stage<'_>,
        description: &StreamDescription,
        session: &AttemptSession<'_>,
    ) -> Result<Prepared, Interrupt> {
        let Stage {
            plan,
            selected,
            criteria,
            kind,
        } = stage;
        let fail = |error| self.failure(error, kind, &not_sent(Some(selected), plan));
        let Command {
            name,
            database,
            body,
            sequences,
        } = op.build(description).map_err(fail)?;
        let body = body
            .into_raw()
            .map_err(|error| fail(error.with_address(&selected.address)))?;
        // The clock is read only when there is a deadline to measure against.
        let budget = match plan.deadline.instant() {
            None => None,
            Some(_) => match plan.deadline.max_time_ms(
                runtime::now(),
                selected.description.min_round_trip_time.unwrap_or_default(),
            ) {
                Ok(budget) => budget,
                Err(not_enough) => return Err(self.not_enough_time(stage, not_enough)),
            },
        };
        let max_time = budget.and_then(|budget| {
            if op.accepts_max_time() && !plan.omit_max_time {
                Some(budget)
            } else {
                // A tailable await getMore's maxAwaitTimeMS never outlasts the deadline (CSOT).
                own_max_time(&body).map(|own| own.min(budget))
            }
        });
        let txn_number = session.txn_number;
        let session = session.session.as_deref();
        if session.is_some_and(ClientSession::is_snapshot)
            && description.max_wire_version < SNAPSHOT_WIRE_VERSION
        {
            let error = Error::invalid_argument("Snapshot reads require MongoDB 5.0 or later")
                .with_address(&selected.address);
            return Err(fail(error));
        }
        let cluster_time = self.cluster_time(session);
        let after_cluster_time = session
            .filter(|s| s.is_causally_consistent())
            .and_then(ClientSession::operation_time);
        let (read_concern, write_concern) = match (&plan.transaction, session) {
            (Some(transaction), _) => {
                // Read concern on the first command only; write concern only on commit/abort.
                let read_concern = transaction
                    .first
                    .then(|| first_command_read_concern(transaction, after_cluster_time))
                    .flatten();
                let write_concern = op
                    .write_concern()
                    .filter(|_| transaction.ends)
                    .and_then(|wc| write_concern_document(wc, plan.deadline.is_csot()));
                (read_concern, write_concern)
            }
            (None, session) => {
                let read_concern = match session.filter(|s| s.is_snapshot()) {
                    // Every command of a snapshot session but getMore carries it, so that the
                    // server refuses the ones that cannot run at a snapshot (writes).
                    Some(snapshot) => (op.retryability() != Retryability::GetMore)
                        .then(|| snapshot_read_concern(snapshot)),
                    None if op.supports_read_concern() => {
                        read_concern_document(op.read_concern(), after_cluster_time)
                    }
                    // Writes in a causally consistent session wait for the session's last
                    // operation too (read-write-concern, afterClusterTime).
                    None if takes_after_cluster_time(&name) => {
                        read_concern_document(None, after_cluster_time)
                    }
                    None => None,
                };
                let write_concern = op
                    .write_concern()
                    .and_then(|wc| write_concern_document(wc, plan.deadline.is_csot()));
                (read_concern, write_concern)
            }
        };
        let fields = CommonFields {
            database: &database,
            lsid: session.and_then(ClientSession::encoded_id),
            txn_number,
            transaction: plan
                .transaction
                .as_ref()
                .map(|t| TransactionFields { first: t.first }),
            cluster_time: cluster_time.as_ref(),
            read_concern,
            write_concern,
            read_preference: read_preference_document(
                criteria,
                selected.topology_type,
                selected.description.server_type,
            ),
            max_time,
            server_api: self.server_api(),
            // Under timeoutMS the operation's own maxTimeMS option is ignored (CSOT).
            without_own_max_time: plan.deadline.is_csot() && op.accepts_max_time(),
        };
        let raw = fields.encode(body).map_err(|e| {
            let error = Error::invalid_argument("the command cannot be encoded as BSON")
                .with_source(e)
                .with_address(&selected.address);
            fail(error)
        })?;
        let mut message = OpMsg::new(raw);
        if !plan.acknowledged {
            message = message.with_flags(MsgFlags::MORE_TO_COME);
        }
        for sequence in sequences {
            message = message.with_sequence(sequence);
        }
        Ok(Prepared {
            name,
            database,
            message,
        })
    }

    /// The highest `$clusterTime` known to the client and the session.
    fn cluster_time(&self, session: Option<&ClientSession>) -> Option<Document> {
        let client_time = self.topology().cluster_time();
        let session_time = session.and_then(ClientSession::cluster_time_value);
        newest_cluster_time(client_time.as_ref(), session_time).map(|c| c.as_document().clone())
    }

    /// The failure of a command that was not sent because the deadline left too little time.
    fn not_enough_time(&self, stage: Stage<'_>, not_enough: NotEnoughTime) -> Interrupt {
        let NotEnoughTime { remaining, min_rtt } = not_enough;
        let error = Error::timeout(format!(
            "before sending {}: {} ms of timeoutMS left, not more than the server's minimum round trip time of {} ms",
            stage.plan.name,
            remaining.as_millis(),
            min_rtt.as_millis()
        ))
        .with_address(&stage.selected.address);
        let on = On {
            deadline: DeadlineStatus::Expired,
            ..not_sent(Some(stage.selected), stage.plan)
        };
        self.failure(error, stage.kind, &on)
    }
}

/// The write commands that accept a read concern of only `afterClusterTime`.
fn takes_after_cluster_time(name: &str) -> bool {
    matches!(
        name,
        "insert"
            | "update"
            | "delete"
            | "findAndModify"
            | "bulkWrite"
            | "create"
            | "createIndexes"
            | "drop"
            | "dropDatabase"
            | "dropIndexes"
    )
}

/// The `maxTimeMS` an operation put in its own command (a getMore's maxAwaitTimeMS).
fn own_max_time(body: &bson::RawDocument) -> Option<Duration> {
    let millis = match body.get("maxTimeMS").ok()?? {
        bson::RawBsonRef::Int32(n) => i64::from(n),
        bson::RawBsonRef::Int64(n) => n,
        _ => return None,
    };
    u64::try_from(millis).ok().map(Duration::from_millis)
}
