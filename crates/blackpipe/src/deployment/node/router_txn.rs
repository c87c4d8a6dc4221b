//! What a router (mongos) adds to multi-document transactions: a `recoveryToken` in the replies
//! to a transaction's statements, and the answer to a commit of a transaction it did not route.
//!
//! Every router runs over the deployment's one store, so any router could commit any
//! transaction; a real mongos cannot. It commits only the transactions it routed; given a commit
//! for another (a driver retrying on a new mongos after a network error), it recovers the
//! outcome through the recovery token: a transaction that committed answers ok, one that did not
//! is aborted and the commit fails with NoSuchTransaction + TransientTransactionError, as
//! mongos's recovery does when no commit decision was made.

use bson::{Document, doc};

use super::context::NodeContext;
use crate::deployment::errors::{self, SessionFacts};
use crate::deployment::state::lock;
use blackpipe_store::code;
use blackpipe_store::{CommandContext, Store};

/// The shard name routers put in recovery tokens.
const RECOVERY_SHARD: &str = "blackpipe-shard";

/// `(lsid, txnNumber)` of a transaction command, as a key.
fn transaction_key(command: &Document) -> Option<String> {
    let lsid = command.get_document("lsid").ok()?;
    let txn_number = command.get_i64("txnNumber").ok()?;
    Some(format!("{lsid}/{txn_number}"))
}

/// On a router, the reply to a commit of a transaction it did not route and that did not
/// commit (see the module documentation); `None` to run the command as usual.
pub(crate) fn recover_commit(
    node: &NodeContext,
    name: &str,
    command: &Document,
    store: &Store,
) -> Option<Document> {
    if name != "commitTransaction" || !node.is_router() {
        return None;
    }
    let key = transaction_key(command)?;
    if lock(&node.process.routed_transactions).contains(&key)
        || store.transaction_committed(command)
    {
        return None;
    }
    let mut abort = command.clone();
    abort.remove("commitTransaction");
    let mut abort_command = doc! { "abortTransaction": 1 };
    abort_command.extend(abort);
    store.execute(
        "admin",
        &abort_command,
        &CommandContext::new(bson::DateTime::now()),
    );
    let mut reply = errors::error_reply(
        code::NO_SUCH_TRANSACTION,
        "Transaction was not committed: no commit decision was found through its recovery token",
    );
    reply.insert("errorLabels", vec!["TransientTransactionError"]);
    Some(reply)
}

/// On a router, notes a transaction statement as routed and adds the recovery token to its
/// successful reply.
pub(crate) fn note_statement(
    node: &NodeContext,
    session: SessionFacts,
    command: &Document,
    reply: &mut Document,
) {
    if !session.in_transaction || session.commit_or_abort || !node.is_router() {
        return;
    }
    if let Some(key) = transaction_key(command) {
        lock(&node.process.routed_transactions).insert(key);
    }
    if errors::reply_is_ok(reply) {
        reply.insert("recoveryToken", doc! { "recoveryShardId": RECOVERY_SHARD });
    }
}
