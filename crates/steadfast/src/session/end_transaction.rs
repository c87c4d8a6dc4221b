//! commitTransaction and abortTransaction as operations: sent to `admin` with the
//! transaction's write concern (a majority one, with a `wtimeout`, once a commit is retried or
//! re-run), `maxTimeMS` from maxCommitTimeMS, and the mongos's `recoveryToken`; retried once as
//! retryable writes whatever retryWrites says. The executor adds `lsid`, `txnNumber` and
//! `autocommit`.

use std::time::Duration;

use bson::{Document, RawDocumentBuf, doc};
use steadfast_core::options::WriteConcern;
use steadfast_core::session::transaction::{TransactionCommand, commit_retry_write_concern};

use crate::conn::description::StreamDescription;
use crate::error::{Error, ReplyWriteErrors, Result};
use crate::operation::{Command, Operation, ReplyContext, Retryability};

/// Which end of a transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ending {
    Commit,
    Abort,
}

/// The command that ends a transaction.
#[derive(Debug)]
pub(crate) struct EndTransaction {
    ending: Ending,
    /// The transaction's write concern; replaced by the majority one on a retry.
    write_concern: Option<WriteConcern>,
    max_commit_time: Option<Duration>,
    recovery_token: Option<Document>,
    /// The next commit goes with a majority write concern: it re-runs a commit already
    /// attempted, or retries one that failed for a reason other than overload.
    majority: bool,
}

impl EndTransaction {
    /// A commitTransaction; `rerun` when a commit of this transaction was already attempted.
    pub(crate) fn commit(
        write_concern: Option<WriteConcern>,
        max_commit_time: Option<Duration>,
        recovery_token: Option<Document>,
        rerun: bool,
    ) -> Self {
        EndTransaction {
            ending: Ending::Commit,
            write_concern,
            max_commit_time,
            recovery_token,
            majority: rerun,
        }
    }

    /// An abortTransaction.
    pub(crate) fn abort(
        write_concern: Option<WriteConcern>,
        recovery_token: Option<Document>,
    ) -> Self {
        EndTransaction {
            ending: Ending::Abort,
            write_concern,
            max_commit_time: None,
            recovery_token,
            majority: false,
        }
    }
}

impl Operation for EndTransaction {
    type Output = ();

    fn name(&self) -> &str {
        match self.ending {
            Ending::Commit => "commitTransaction",
            Ending::Abort => "abortTransaction",
        }
    }

    fn build(&mut self, _description: &StreamDescription) -> Result<Command> {
        if self.majority && self.ending == Ending::Commit {
            self.write_concern = Some(commit_retry_write_concern(self.write_concern.as_ref()));
        }
        let name = self.name().to_string();
        let mut body = doc! { name.as_str(): 1 };
        if let Some(limit) = self.max_commit_time {
            body.insert(
                "maxTimeMS",
                i64::try_from(limit.as_millis()).unwrap_or(i64::MAX),
            );
        }
        if let Some(token) = &self.recovery_token {
            body.insert("recoveryToken", token.clone());
        }
        Ok(Command::new(name, "admin", body))
    }

    fn handle_reply(&mut self, reply: RawDocumentBuf, context: &ReplyContext<'_>) -> Result<()> {
        // An `ok: 1` reply may still carry a write concern error the executor did not retry:
        // the commit's outcome is then in doubt, which the caller must hear of.
        let document = Document::try_from(reply).map_err(|e| {
            Error::protocol("the reply is not valid BSON")
                .with_source(e)
                .with_address(context.address)
        })?;
        match ReplyWriteErrors::from_reply(&document).and_then(Error::from_write_concern_reply) {
            Some(error) => Err(error.with_address(context.address)),
            None => Ok(()),
        }
    }

    fn retryability(&self) -> Retryability {
        Retryability::Write
    }

    fn before_retry(&mut self, after_overload: bool) {
        // transactions, "Interaction with Client Backpressure": a retry after an overload
        // keeps the last attempt's write concern; any other retry of a commit asks for a
        // majority (and keeps asking once it has).
        if !after_overload {
            self.majority = true;
        }
    }

    fn write_concern(&self) -> Option<&WriteConcern> {
        self.write_concern.as_ref()
    }

    fn supports_read_concern(&self) -> bool {
        false
    }

    fn ends_transaction(&self) -> Option<TransactionCommand> {
        Some(match self.ending {
            Ending::Commit => TransactionCommand::Commit,
            // abortTransaction's failures get the labels of any other statement.
            Ending::Abort => TransactionCommand::Statement,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bson::{Bson, doc};
    use steadfast_core::options::{Acknowledgment, WriteConcern};

    use super::EndTransaction;
    use crate::operation::Operation;
    use crate::operation::crud_tests::default_description;

    fn w(n: u32) -> WriteConcern {
        WriteConcern::builder().w(Acknowledgment::Nodes(n)).build()
    }

    fn sent_w(op: &mut EndTransaction) -> Option<Acknowledgment> {
        op.build(&default_description()).expect("builds");
        op.write_concern().and_then(|wc| wc.w.clone())
    }

    #[test]
    fn a_commit_carries_its_token_and_time_limit_to_admin() {
        let token = doc! { "recoveryShardId": "s0" };
        let mut op = EndTransaction::commit(
            None,
            Some(Duration::from_millis(250)),
            Some(token.clone()),
            false,
        );
        let command = op.build(&default_description()).expect("builds");
        assert_eq!(command.database, "admin");
        assert_eq!(
            command.body.to_document(),
            doc! { "commitTransaction": 1, "maxTimeMS": 250_i64, "recoveryToken": token }
        );
    }

    #[test]
    fn a_retried_commit_asks_for_a_majority_unless_the_server_shed_it() {
        let mut op = EndTransaction::commit(Some(w(2)), None, None, false);
        assert_eq!(sent_w(&mut op), Some(Acknowledgment::Nodes(2)));
        op.before_retry(true);
        assert_eq!(
            sent_w(&mut op),
            Some(Acknowledgment::Nodes(2)),
            "an overload retry keeps the write concern"
        );
        op.before_retry(false);
        assert_eq!(sent_w(&mut op), Some(Acknowledgment::Majority));
        let wtimeout = op.write_concern().and_then(|wc| wc.w_timeout);
        assert_eq!(wtimeout, Some(Duration::from_secs(10)));
        op.before_retry(true);
        assert_eq!(sent_w(&mut op), Some(Acknowledgment::Majority));
    }

    #[test]
    fn a_rerun_commit_asks_for_a_majority_but_an_abort_never_does() {
        let mut rerun = EndTransaction::commit(None, None, None, true);
        assert_eq!(sent_w(&mut rerun), Some(Acknowledgment::Majority));
        let mut abort = EndTransaction::abort(Some(w(1)), None);
        abort.before_retry(false);
        assert_eq!(sent_w(&mut abort), Some(Acknowledgment::Nodes(1)));
        let body = abort
            .build(&default_description())
            .expect("builds")
            .body
            .to_document();
        assert_eq!(body.get("abortTransaction"), Some(&Bson::Int32(1)));
    }
}
