//! What an operation runs with besides its command: the timeoutMS and retry policy resolved
//! from the handle levels and the action's own overrides ([`OperationSettings`],
//! [`OperationOverrides`]), and the read concern, write concern and selection criteria an
//! action inherits from its collection or database (and, through them, the client)
//! ([`Inherited`]), resolved against the action's own options when it runs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use steadfast_core::options::{ReadConcern, WriteConcern};
use steadfast_core::retry::RetryPolicy;
use steadfast_core::selection::SelectionCriteria;

use crate::client::Client;
use crate::executor::ExecutionContext;
use crate::options::CollectionOptions;
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
    /// A fixed deadline over the timeout (the `getMore`s of a cursor in cursor-lifetime mode).
    pub(crate) deadline: Option<Instant>,
    /// The command gets no `maxTimeMS` even under a timeout (see `CursorTiming`).
    pub(crate) omit_max_time: bool,
}

impl OperationSettings {
    /// These settings with an action's own timeout and retry policy over them.
    pub(crate) fn overridden_by(mut self, overrides: &OperationOverrides) -> Self {
        if overrides.timeout.is_some() {
            self.operation_timeout = overrides.timeout;
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

    /// The execution context of one run in `session`.
    pub(crate) fn context<'s>(
        &self,
        session: Option<&'s mut ClientSession>,
    ) -> ExecutionContext<'s> {
        let timeout = self.timeout_in(session.as_deref());
        // Inside a withTransaction callback under timeoutMS, every operation shares the
        // transaction's deadline (CSOT, "Convenient Transactions API").
        let transaction_deadline = session
            .as_deref()
            .and_then(ClientSession::convenient_deadline);
        ExecutionContext {
            session,
            timeout,
            retry_policy: self.retry_policy.clone(),
            deadline: transaction_deadline.or(self.deadline),
            omit_max_time: self.omit_max_time,
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
}

/// What an operation falls back to for each setting it does not set itself.
#[derive(Clone, Debug)]
pub(crate) struct Inherited {
    read_concern: Option<ReadConcern>,
    write_concern: Option<WriteConcern>,
    criteria: SelectionCriteria,
    /// timeoutMS and retry policy.
    pub(crate) settings: OperationSettings,
}

impl Inherited {
    /// `handle`'s settings over the client's.
    pub(crate) fn new(client: &Client, handle: &CollectionOptions) -> Self {
        let client_options = client.options();
        Inherited {
            read_concern: handle
                .read_concern
                .clone()
                .or_else(|| client_options.read_concern.clone()),
            write_concern: handle
                .write_concern
                .clone()
                .or_else(|| Some(client_options.write_concern.clone()))
                .filter(|wc| !wc.is_empty()),
            criteria: handle.selection_criteria.clone().unwrap_or_else(|| {
                SelectionCriteria::ReadPreference(client_options.read_preference.clone())
            }),
            settings: OperationSettings {
                timeout: handle.timeout.or(client_options.timeout),
                operation_timeout: None,
                deadline: None,
                omit_max_time: false,
                retry_policy: handle.retry_policy.clone(),
            },
        }
    }

    /// The same settings without the read and write concern (for commands that must not send
    /// any, such as the search index commands).
    pub(crate) fn without_concerns(mut self) -> Self {
        self.read_concern = None;
        self.write_concern = None;
        self
    }

    /// The operation's read concern, else the inherited one.
    pub(crate) fn read_concern(&self, op: Option<ReadConcern>) -> Option<ReadConcern> {
        op.or_else(|| self.read_concern.clone())
    }

    /// The operation's write concern, else the inherited one.
    pub(crate) fn write_concern(&self, op: Option<WriteConcern>) -> Option<WriteConcern> {
        op.filter(|wc| !wc.is_empty())
            .or_else(|| self.write_concern.clone())
    }

    /// The operation's selection criteria, else the inherited ones.
    pub(crate) fn criteria(&self, op: Option<SelectionCriteria>) -> SelectionCriteria {
        op.unwrap_or_else(|| self.criteria.clone())
    }
}
