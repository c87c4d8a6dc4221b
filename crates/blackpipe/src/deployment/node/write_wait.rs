//! A write outside a transaction to a document an open transaction has written waits until that
//! transaction commits or aborts, or until its own `maxTimeMS` runs out (MaxTimeMSExpired), as
//! on mongod; the store says when and on what ([`blackpipe_store::Store::write_blocker`]).
//! A transaction left open is aborted when its lifetime (`transactionLifetimeLimitSeconds`)
//! ends, which frees the write: the wait looks for expired transactions once a second, as
//! mongod's reaper runs on a period.

use std::ops::ControlFlow;
use std::time::Duration;

use bson::{DateTime, Document};

use super::context::time;
use super::context::{Gate, NodeContext};
use crate::deployment::errors::SessionFacts;

/// How often a waiting write asks the store to abort expired transactions.
const REAPER_PERIOD: Duration = Duration::from_secs(1);

/// Waits, if `command` must, for the transactions holding documents it would write.
///
/// # Cancel safety
///
/// Cancel safe: the wait changes nothing.
pub(crate) async fn wait_for_transactions(
    node: &NodeContext,
    db: &str,
    command: &Document,
    limit: Option<Duration>,
    session: SessionFacts,
) -> Gate {
    let store = node.store();
    let deadline = limit.map(|limit| tokio::time::Instant::now() + limit);
    loop {
        let Some(mut wait) = store.write_blocker(db, command) else {
            return ControlFlow::Continue(());
        };
        let expired = async {
            match deadline {
                Some(deadline) => tokio::time::sleep_until(deadline).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            () = wait.ended() => {}
            () = expired => {
                return ControlFlow::Break(node.finish(time::expired_reply(), session, None));
            }
            () = tokio::time::sleep(REAPER_PERIOD) => {
                store.abort_expired_transactions(DateTime::now());
            }
        }
    }
}
