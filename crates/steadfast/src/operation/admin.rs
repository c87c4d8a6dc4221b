//! Commands that change the catalog: `create`, `drop`, `dropDatabase`, `createIndexes`,
//! `dropIndexes`. They take a write concern, are not retryable writes, and report nothing but
//! success (a write concern error in an `ok: 1` reply is still a failure).

use bson::{Document, RawDocumentBuf};
use steadfast_core::options::WriteConcern;

use super::find_and_modify::check_write_concern;
use super::{Command, Operation, ReplyContext, Retryability};
use crate::conn::description::StreamDescription;
use crate::error::{Error, Result};

/// One catalog command with a ready body.
#[derive(Debug)]
pub(crate) struct CatalogCommand {
    name: &'static str,
    db: String,
    body: Document,
    write_concern: Option<WriteConcern>,
}

impl CatalogCommand {
    /// `body` (whose first key must be `name`) against `db`.
    ///
    /// # Errors
    /// `InvalidArgument` when the body does not start with the command name (a driver bug, but
    /// better reported than sent).
    pub(crate) fn new(
        name: &'static str,
        db: impl Into<String>,
        body: Document,
        write_concern: Option<WriteConcern>,
    ) -> Result<Self> {
        if body.keys().next().map(String::as_str) != Some(name) {
            return Err(Error::invalid_argument(format!(
                "the {name} command body must start with `{name}`"
            )));
        }
        Ok(CatalogCommand {
            name,
            db: db.into(),
            body,
            write_concern,
        })
    }
}

impl Operation for CatalogCommand {
    type Output = ();

    fn name(&self) -> &str {
        self.name
    }

    fn operation_name(&self) -> &str {
        match self.name {
            "create" => "createCollection",
            "drop" => "dropCollection",
            other => other,
        }
    }

    fn build(&mut self, _description: &StreamDescription) -> Result<Command> {
        Ok(Command::new(self.name, self.db.clone(), self.body.clone()))
    }

    fn handle_reply(&mut self, reply: RawDocumentBuf, _context: &ReplyContext<'_>) -> Result<()> {
        check_write_concern(&reply, self.name)
    }

    fn retryability(&self) -> Retryability {
        Retryability::None
    }

    fn write_concern(&self) -> Option<&WriteConcern> {
        self.write_concern.as_ref()
    }
}
