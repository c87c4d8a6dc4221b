//! The first stages of an attempt: select a server (the retryable-write support check with it)
//! and check a connection out of its pool.

use std::sync::Arc;

use steadfast_core::description::ServerType;
use steadfast_core::retry::{OperationKind, RetrySession};
use steadfast_core::selection::{SelectionCriteria, write_stage_criteria};
use steadfast_core::{Deadline, TopologyType};

use super::Executor;
use super::OperationPlan;
use super::attempt::{Interrupt, Stage, not_sent};
use crate::conn::description::StreamDescription;
use crate::error::Error;
use crate::pool::PooledConnection;
use crate::runtime;
use crate::sdam::{SelectedServer, SelectionFor};

/// A selected server and the limit of the check-out from its pool: under timeoutMS it counts
/// from when selection began (without timeoutMS there is no such limit, and the clock is not
/// read).
pub(super) struct Selection {
    pub(super) server: SelectedServer,
    pub(super) checkout: Deadline,
    /// The criteria selection used when they differ from the plan's (a write-stage
    /// aggregation's, resolved against the topology).
    pub(super) criteria: Option<SelectionCriteria>,
}

impl Executor {
    /// Selects the server for this attempt: the operation's target, or one matching its
    /// criteria, avoiding the servers the retry rules deprioritized. A retryable write on a
    /// server without retryable-write support becomes non-retryable on its first attempt and
    /// cannot be retried on later ones.
    pub(super) async fn select(
        &self,
        plan: &OperationPlan,
        retry: &mut RetrySession<Error>,
    ) -> Result<Selection, Interrupt> {
        let checkout = if plan.deadline.is_csot() {
            plan.deadline
                .checkout_limit(runtime::now(), self.options().server_selection_timeout)
        } else {
            Deadline::None
        };
        // A retry of commitTransaction or abortTransaction may go to another mongos
        // (transactions, "Mongos Pinning").
        let unpinned_retry =
            plan.transaction.as_ref().is_some_and(|t| t.ends) && !retry.is_first_attempt();
        let target = plan.target.as_ref().filter(|_| !unpinned_retry);
        let criteria = plan
            .write_stage
            .then(|| write_stage_criteria(&self.topology().snapshot(), &plan.criteria));
        let selected = match target {
            Some(address) => self.topology().select_address(address),
            None => {
                let operation = SelectionFor {
                    operation: &plan.name,
                    operation_id: plan.operation_id,
                };
                self.topology()
                    .select_server_for(
                        criteria.as_ref().unwrap_or(&plan.criteria),
                        retry.deprioritized(),
                        plan.deadline,
                        Some(operation),
                    )
                    .await
            }
        };
        let kind = retry.profile().kind;
        let server = selected.map_err(|error| self.failure(error, kind, &not_sent(None, plan)))?;
        // commitTransaction and abortTransaction are retryable whatever the selected server's
        // description says: the transaction proves the deployment supports them, and a pinned
        // mongos just marked Unknown (say, by a state-change write concern error) has no
        // description to judge by. Downgrading them there would forbid the unpinned retry the
        // transactions specification requires.
        let ends_transaction = plan.transaction.as_ref().is_some_and(|t| t.ends);
        if kind == OperationKind::RetryableWrite
            && !ends_transaction
            && !supports_retryable_writes(&server)
        {
            if !retry.is_first_attempt() {
                return Err(Interrupt::CannotRetry);
            }
            retry.set_kind(OperationKind::NonRetryableWrite);
        }
        Ok(Selection {
            server,
            checkout,
            criteria,
        })
    }

    /// Checks a connection out of the selected server's pool within `checkout` (see
    /// [`Selection::checkout`]: under timeoutMS what is left of min(serverSelectionTimeoutMS,
    /// timeoutMS) since selection began, CSOT "Server Selection").
    pub(super) async fn check_out(
        &self,
        stage: Stage<'_>,
        checkout: Deadline,
    ) -> Result<(PooledConnection, Arc<StreamDescription>), Interrupt> {
        let Stage {
            plan,
            selected,
            kind,
            ..
        } = stage;
        let fail = |error| self.failure(error, kind, &not_sent(Some(selected), plan));
        let connection = selected.pool.check_out(checkout).await.map_err(fail)?;
        let Some(description) = connection.shared_description() else {
            let error = Error::protocol("a pooled connection has no handshake description")
                .with_address(&selected.address);
            return Err(fail(error));
        };
        Ok((connection, description))
    }
}

/// retryable-writes: a load balancer, or a non-standalone server that supports sessions.
fn supports_retryable_writes(selected: &SelectedServer) -> bool {
    let server = &selected.description;
    selected.topology_type == TopologyType::LoadBalanced
        || (server.server_type != ServerType::Standalone
            && server.logical_session_timeout_minutes.is_some())
}
