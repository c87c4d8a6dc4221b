//! Load-balanced connection pinning (load-balancers, "Connection Pinning"): where an attempt
//! gets its connection — the cursor's pinned one, the transaction's pinned one, or the pool —
//! and where the connection goes afterwards: back to its pin, into a new pin (a transaction's
//! first command, a cursor that stays open), or back to the pool.

use std::sync::Arc;
use steadfast_core::Deadline;
use steadfast_core::retry::RetrySession;

use super::attempt::{Interrupt, Stage, not_sent};
use super::{Executor, OperationPlan, Progress};
use crate::conn::description::StreamDescription;
use crate::error::Error;
use crate::pool::{PinPurpose, PinnedConnection, PooledConnection};

/// Where an attempt's connection came from, hence where it goes back to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Origin {
    /// Checked out of the pool for this attempt.
    Pool,
    /// Leased from the cursor's pin.
    Cursor,
    /// Leased from the session's transaction pin.
    Transaction,
}

/// An attempt's connection, with its handshake description and origin.
pub(super) struct Acquired {
    pub(super) connection: PooledConnection,
    pub(super) description: Arc<StreamDescription>,
    pub(super) origin: Origin,
}

impl Executor {
    /// The attempt's connection: the cursor's pinned connection for a cursor's `getMore` or
    /// `killCursors`; the transaction's pinned one for a command of a load-balanced
    /// transaction (except a retried commit or abort, which may run anywhere); else one
    /// checked out of the selected server's pool.
    ///
    /// # Cancel safety
    /// Cancel safe: a pinned connection is leased only once the future completes.
    pub(super) async fn acquire(
        &self,
        stage: Stage<'_>,
        checkout: Deadline,
        progress: &mut Progress<'_>,
    ) -> Result<Acquired, Interrupt> {
        let fail = |error| {
            self.failure(
                error,
                stage.kind,
                &not_sent(Some(stage.selected), stage.plan),
            )
        };
        if let Some(pin) = progress.cursor_pin.as_deref_mut() {
            let connection = pin.lease().ok_or_else(|| fail(lost_pin("cursor")))?;
            return described(connection, Origin::Cursor).map_err(fail);
        }
        if self.uses_transaction_pin(stage.plan, &progress.retry) {
            let pin = progress
                .explicit
                .as_deref_mut()
                .and_then(|session| session.transaction_mut().connection.as_mut());
            if let Some(pin) = pin {
                let connection = pin.lease().ok_or_else(|| fail(lost_pin("transaction")))?;
                return described(connection, Origin::Transaction).map_err(fail);
            }
        }
        let (connection, description) = self.check_out(stage, checkout).await?;
        Ok(Acquired {
            connection,
            description,
            origin: Origin::Pool,
        })
    }

    /// Where the attempt's connection goes once the attempt is over. A cursor's connection
    /// returns to its pin even when broken: the cursor releases it when it is closed. A
    /// transaction's returns to the session's pin while it can carry commands; a broken one
    /// is checked in (and closed), which unpins the transaction. A connection from the pool
    /// becomes the transaction's pin after the transaction's first command (not after a
    /// commit or abort, which never pin), or is kept for the cursor the operation opened.
    pub(super) fn release(
        &self,
        connection: PooledConnection,
        origin: Origin,
        plan: &OperationPlan,
        progress: &mut Progress<'_>,
        completed: bool,
    ) {
        let reusable = connection.is_reusable() && !connection.is_interrupted();
        match origin {
            Origin::Cursor => {
                if let Some(pin) = progress.cursor_pin.as_deref_mut() {
                    pin.restore(connection);
                }
            }
            Origin::Transaction => {
                let Some(session) = progress.explicit.as_deref_mut() else {
                    return;
                };
                let transaction = session.transaction_mut();
                match transaction.connection.as_mut() {
                    Some(pin) if reusable => pin.restore(connection),
                    _ => transaction.connection = None,
                }
            }
            Origin::Pool => {
                let starts_pin = self.options().load_balanced
                    && reusable
                    && plan.transaction.as_ref().is_some_and(|t| !t.ends);
                if starts_pin {
                    if let Some(session) = progress.explicit.as_deref_mut() {
                        session.transaction_mut().connection =
                            Some(PinnedConnection::new(connection, PinPurpose::Transaction));
                        return;
                    }
                }
                if progress.keep_connection && completed && reusable {
                    progress.kept = Some(connection);
                }
            }
        }
    }

    /// Whether this attempt runs on the transaction's pinned connection: in load-balanced
    /// mode, every command of a transaction except a retry of commitTransaction or
    /// abortTransaction (transactions, "When to unpin").
    fn uses_transaction_pin(&self, plan: &OperationPlan, retry: &RetrySession<Error>) -> bool {
        self.options().load_balanced
            && plan
                .transaction
                .as_ref()
                .is_some_and(|t| !t.ends || retry.is_first_attempt())
    }
}

/// A pinned connection with its handshake description.
fn described(connection: PooledConnection, origin: Origin) -> Result<Acquired, Error> {
    let Some(description) = connection.shared_description() else {
        return Err(Error::protocol(
            "a pinned connection has no handshake description",
        ));
    };
    Ok(Acquired {
        connection,
        description,
        origin,
    })
}

/// The error of a command whose pinned connection was lost: an earlier command on it was
/// abandoned mid-exchange, which closed it. Running elsewhere could reach another service,
/// which does not know the cursor or the transaction.
fn lost_pin(owner: &str) -> Error {
    Error::network(format!(
        "the connection pinned to this {owner} was closed when an earlier command on it was abandoned"
    ))
}
