//! The operations the client itself runs: a generic database command (`run_command`) and
//! `endSessions` at shutdown.

use bson::{Bson, Document, RawDocumentBuf};
use steadfast_core::selection::{ReadPreference, ReadPreferenceMode, SelectionCriteria};

use crate::conn::description::StreamDescription;
use crate::error::{Error, Result};
use crate::operation::write::encode;
use crate::operation::{Command, Operation, ReplyContext, Retryability};

/// A command the application wrote: sent as given (the executor adds `$db`, `lsid`,
/// `$clusterTime`, `$readPreference` and the Stable API fields, never `txnNumber`), and only
/// retried on overload errors, with both retryReads and retryWrites on (client-backpressure).
#[derive(Debug)]
pub(crate) struct RunCommand {
    name: String,
    database: String,
    command: Document,
    criteria: SelectionCriteria,
    /// The application chose the read preference (a transaction's does not replace it).
    explicit_criteria: bool,
    /// The application's `runCommand` (its span is named so), not a driver helper's command.
    from_application: bool,
}

impl RunCommand {
    /// Marks the command as the application's `runCommand` (rather than a helper's, such as
    /// `createSearchIndexes`), as its OpenTelemetry span is named.
    pub(crate) fn run_by_application(mut self) -> Self {
        self.from_application = true;
        self
    }

    /// Marks the read preference as the application's own choice.
    pub(crate) fn with_explicit_criteria(mut self, explicit: bool) -> Self {
        self.explicit_criteria = explicit;
        self
    }

    /// `command` against `database`, on a server chosen by `criteria`.
    ///
    /// # Errors
    /// `InvalidArgument` for an empty command.
    pub(crate) fn new(
        database: &str,
        command: Document,
        criteria: SelectionCriteria,
    ) -> Result<Self> {
        let Some(name) = command.keys().next().cloned() else {
            return Err(Error::invalid_argument("the command document is empty"));
        };
        Ok(RunCommand {
            name,
            database: database.to_string(),
            command,
            criteria,
            explicit_criteria: false,
            from_application: false,
        })
    }
}

impl Operation for RunCommand {
    type Output = Document;

    fn name(&self) -> &str {
        &self.name
    }

    fn operation_name(&self) -> &str {
        if self.from_application {
            "runCommand"
        } else {
            &self.name
        }
    }

    fn build(&mut self, _description: &StreamDescription) -> Result<Command> {
        // Encoded straight from the application's document, never cloned.
        Ok(Command::raw(
            self.name.clone(),
            self.database.clone(),
            encode(&self.command)?,
        ))
    }

    fn handle_reply(
        &mut self,
        reply: RawDocumentBuf,
        context: &ReplyContext<'_>,
    ) -> Result<Document> {
        Document::try_from(reply).map_err(|e| {
            Error::protocol("the reply is not valid BSON")
                .with_source(e)
                .with_address(context.address)
        })
    }

    fn selection_criteria(&self) -> SelectionCriteria {
        self.criteria.clone()
    }

    fn retryability(&self) -> Retryability {
        Retryability::RunCommand
    }

    fn supports_read_concern(&self) -> bool {
        // runCommand never inspects or extends the application's command.
        false
    }

    fn has_own_read_preference(&self) -> bool {
        self.explicit_criteria
    }
}

/// `endSessions` with up to 10,000 session ids: sent once at shutdown, never with a session of
/// its own, errors ignored by the caller.
#[derive(Debug)]
pub(crate) struct EndSessions {
    ids: Vec<Document>,
}

impl EndSessions {
    pub(crate) fn new(ids: Vec<Document>) -> Self {
        EndSessions { ids }
    }
}

impl Operation for EndSessions {
    type Output = ();

    fn name(&self) -> &str {
        "endSessions"
    }

    fn build(&mut self, _description: &StreamDescription) -> Result<Command> {
        let ids: Vec<Bson> = self.ids.iter().cloned().map(Bson::Document).collect();
        let mut body = Document::new();
        body.insert("endSessions", ids);
        Ok(Command::new("endSessions", "admin", body))
    }

    fn handle_reply(&mut self, _reply: RawDocumentBuf, _context: &ReplyContext<'_>) -> Result<()> {
        Ok(())
    }

    fn selection_criteria(&self) -> SelectionCriteria {
        // The primary if there is one, else any secondary (driver-sessions, endSessions).
        SelectionCriteria::ReadPreference(ReadPreference::with_mode(
            ReadPreferenceMode::PrimaryPreferred,
        ))
    }

    fn retryability(&self) -> Retryability {
        Retryability::None
    }

    fn supports_sessions(&self) -> bool {
        false
    }
}
