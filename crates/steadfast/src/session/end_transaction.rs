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
    /// Whether the next build is a retry (or a re-run of a commit already attempted).
    retrying: bool,
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
            retrying: rerun,
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
            retrying: false,
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
        if self.retrying && self.ending == Ending::Commit {
            self.write_concern = Some(commit_retry_write_concern(self.write_concern.as_ref()));
        }
        // Every later build is a retry.
        self.retrying = true;
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
