//! What an operation runs with besides its command: the timeoutMS and retry policy resolved
//! from the handle levels ([`OperationSettings`]) and the action's own overrides
//! ([`OperationOverrides`]). What an action inherits from its handle is in `inherited`.

use std::sync::Arc;
use std::time::Duration;

use steadfast_core::Deadline;
use steadfast_core::retry::RetryPolicy;

use crate::executor::ExecutionContext;
use crate::runtime;
use crate::session::ClientSession;

/// The per-operation settings resolved from the handle levels.
#[derive(Clone, Debug, Default)]
pub(crate) struct OperationSettings {
    /// timeoutMS inherited from the collection, database or client (`None`: unset).
    pub(crate) timeout: Option<Duration>,
    /// The operation's own timeoutMS, which beats an explicit session's `default_timeout`
    /// (the inherited one does not).
    pub(crate) operation_timeout: Option<Duration>,
    /// The retry policy (`None`: the client's).
    pub(crate) retry_policy: Option<Arc<dyn RetryPolicy>>,
    /// A deadline started earlier that the operation shares instead of starting its own (the
    /// `getMore`s of a cursor in cursor-lifetime mode, the batches of a bulk write).
    pub(crate) deadline: Option<Deadline>,
    /// The command gets no `maxTimeMS` even under a timeout (see `CursorTiming`).
    pub(crate) omit_max_time: bool,
    /// The operation id that the commands of one bulk write share (command monitoring,
    /// "Bulk Writes"); `None`: each run gets its own.
    pub(crate) operation_id: Option<i64>,
    /// The OpenTelemetry span the commands of one bulk write share (joined handles); `None`:
    /// each run opens its own.
    pub(crate) trace: Option<crate::otel::OperationTrace>,
}

impl OperationSettings {
    /// These settings with an action's own timeout (or shared deadline) and retry policy over
    /// them.
    pub(crate) fn overridden_by(mut self, overrides: &OperationOverrides) -> Self {
        if overrides.timeout.is_some() {
            self.operation_timeout = overrides.timeout;
        }
        if overrides.deadline.is_some() {
            self.deadline = overrides.deadline;
        }
        if let Some(policy) = &overrides.retry_policy {
            self.retry_policy = Some(Arc::clone(policy));
        }
        self
    }

    /// timeoutMS for one run in `session`: the operation's own, else the session's
    /// `default_timeout`, else the inherited one (CSOT's order of precedence).
    pub(crate) fn timeout_in(&self, session: Option<&ClientSession>) -> Option<Duration> {
        self.operation_timeout
            .or_else(|| session.and_then(ClientSession::default_timeout))
            .or(self.timeout)
    }

    /// The execution context of one run in `session`, called where the operation is: its
    /// deadline starts now unless it shares one.
    pub(crate) fn context<'s>(
        &self,
        session: Option<&'s mut ClientSession>,
    ) -> ExecutionContext<'s> {
        // Inside a withTransaction callback under timeoutMS, every operation shares the
        // transaction's deadline (CSOT, "Convenient Transactions API").
        let transaction_deadline = session
            .as_deref()
            .and_then(ClientSession::convenient_deadline);
        let deadline = transaction_deadline
            .or(self.deadline)
            .unwrap_or_else(|| runtime::start_deadline(self.timeout_in(session.as_deref())));
        ExecutionContext {
            session,
            retry_policy: self.retry_policy.clone(),
            deadline,
            omit_max_time: self.omit_max_time,
            operation_id: self.operation_id,
            trace: self.trace.clone(),
            overrides_transaction_timeout: transaction_deadline.is_some()
                && self.operation_timeout.is_some(),
            pinned: None,
        }
    }
}

/// What an action may set for itself over its handle's settings: `.timeout(..)` and
/// `.retry_policy(..)`.
#[derive(Clone, Debug, Default)]
pub(crate) struct OperationOverrides {
    /// timeoutMS for this operation (`Duration::ZERO`: no limit).
    pub(crate) timeout: Option<Duration>,
    /// The retry policy for this operation.
    pub(crate) retry_policy: Option<Arc<dyn RetryPolicy>>,
    /// How timeoutMS applies to the cursor the operation opens.
    pub(crate) timeout_mode: Option<crate::options::TimeoutMode>,
    /// A deadline the operation shares with the one it is part of (a GridFS operation's
    /// commands), instead of starting its own: a cursor it opens shares it for its life.
    pub(crate) deadline: Option<Deadline>,
}
