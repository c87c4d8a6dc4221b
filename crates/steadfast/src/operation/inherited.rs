//! Settings an action inherits from its collection or database (and, through them, the
//! client), resolved against the action's own options when it runs.

use steadfast_core::options::{ReadConcern, WriteConcern};
use steadfast_core::selection::SelectionCriteria;

use super::settings::OperationSettings;
use crate::client::Client;
use crate::options::CollectionOptions;

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
                operation_id: None,
                trace: None,
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
