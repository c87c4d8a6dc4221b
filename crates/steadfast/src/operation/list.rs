//! `listIndexes`, `listCollections` (cursors) and `listDatabases` (one reply).

use bson::{Bson, Document, RawBsonRef, RawDocumentBuf};
use steadfast_core::selection::SelectionCriteria;

use super::fields::put;
use super::{Command, Operation, ReplyContext, Retryability};
use crate::conn::description::StreamDescription;
use crate::cursor::CursorReply;
use crate::error::{Error, Result};

/// A listing command that opens a cursor (`listIndexes`, `listCollections`); a retryable read
/// on the primary.
#[derive(Debug)]
pub(crate) struct ListCursor {
    name: &'static str,
    db: String,
    body: Document,
}

impl ListCursor {
    /// `listIndexes` of `db.coll`.
    pub(crate) fn indexes(
        db: &str,
        coll: &str,
        batch_size: Option<u32>,
        max_time: Option<std::time::Duration>,
        comment: Option<Bson>,
    ) -> Self {
        let mut body = Document::new();
        body.insert("listIndexes", coll);
        body.insert("cursor", cursor_field(batch_size));
        super::fields::put_max_time(&mut body, max_time);
        put(&mut body, "comment", comment);
        ListCursor {
            name: "listIndexes",
            db: db.to_string(),
            body,
        }
    }

    /// `listCollections` of `db`.
    pub(crate) fn collections(
        db: &str,
        filter: Option<Document>,
        name_only: bool,
        authorized_collections: Option<bool>,
        batch_size: Option<u32>,
        comment: Option<Bson>,
    ) -> Self {
        let mut body = Document::new();
        body.insert("listCollections", 1);
        put(&mut body, "filter", filter);
        if name_only {
            body.insert("nameOnly", true);
        }
        put(&mut body, "authorizedCollections", authorized_collections);
        body.insert("cursor", cursor_field(batch_size));
        put(&mut body, "comment", comment);
        ListCursor {
            name: "listCollections",
            db: db.to_string(),
            body,
        }
    }
}

fn cursor_field(batch_size: Option<u32>) -> Document {
    let mut cursor = Document::new();
    put(&mut cursor, "batchSize", batch_size.map(i64::from));
    cursor
}

impl Operation for ListCursor {
    type Output = CursorReply;

    fn name(&self) -> &str {
        self.name
    }

    fn build(&mut self, _description: &StreamDescription) -> Result<Command> {
        Ok(Command::new(self.name, self.db.clone(), self.body.clone()))
    }

    fn handle_reply(
        &mut self,
        reply: RawDocumentBuf,
        _context: &ReplyContext<'_>,
    ) -> Result<CursorReply> {
        CursorReply::parse(&reply, self.name).map(|cursor| cursor.with_raw(reply))
    }

    fn selection_criteria(&self) -> SelectionCriteria {
        SelectionCriteria::primary_read()
    }

    fn retryability(&self) -> Retryability {
        Retryability::Read
    }
}

/// A command of the application's that opens a cursor (`Database::run_cursor_command`): sent
/// as given, retried only as `run_command` is.
#[derive(Debug)]
pub(crate) struct CursorCommand {
    name: String,
    db: String,
    body: Document,
    /// Where it runs (primary unless the application said otherwise).
    criteria: Option<SelectionCriteria>,
}

impl CursorCommand {
    /// `body` against `db`.
    ///
    /// # Errors
    /// `InvalidArgument` for an empty command.
    pub(crate) fn new(db: &str, body: Document) -> Result<Self> {
        let Some(name) = body.keys().next().cloned() else {
            return Err(Error::invalid_argument("the command document is empty"));
        };
        Ok(CursorCommand {
            name,
            db: db.to_string(),
            body,
            criteria: None,
        })
    }

    /// Runs it where `criteria` selects instead of on the primary.
    pub(crate) fn with_criteria(mut self, criteria: Option<SelectionCriteria>) -> Self {
        self.criteria = criteria;
        self
    }
}

impl Operation for CursorCommand {
    type Output = CursorReply;

    fn name(&self) -> &str {
        &self.name
    }

    fn build(&mut self, _description: &StreamDescription) -> Result<Command> {
        Ok(Command::new(
            self.name.clone(),
            self.db.clone(),
            self.body.clone(),
        ))
    }

    fn handle_reply(
        &mut self,
        reply: RawDocumentBuf,
        _context: &ReplyContext<'_>,
    ) -> Result<CursorReply> {
        CursorReply::parse(&reply, &self.name).map(|cursor| cursor.with_raw(reply))
    }

    fn selection_criteria(&self) -> SelectionCriteria {
        self.criteria
            .clone()
            .unwrap_or_else(SelectionCriteria::primary_read)
    }

    fn retryability(&self) -> Retryability {
        Retryability::RunCommand
    }

    fn has_own_read_preference(&self) -> bool {
        self.criteria.is_some()
    }

    fn supports_read_concern(&self) -> bool {
        // Like runCommand, the application's command is never extended.
        false
    }
}

/// `listDatabases` on `admin`: the `databases` array of its single reply.
#[derive(Debug)]
pub(crate) struct ListDatabases {
    body: Document,
}

impl ListDatabases {
    /// Lists the databases matching `filter`.
    pub(crate) fn new(
        filter: Option<Document>,
        name_only: bool,
        authorized_databases: Option<bool>,
        comment: Option<Bson>,
    ) -> Self {
        let mut body = Document::new();
        body.insert("listDatabases", 1);
        put(&mut body, "filter", filter);
        if name_only {
            body.insert("nameOnly", true);
        }
        put(&mut body, "authorizedDatabases", authorized_databases);
        put(&mut body, "comment", comment);
        ListDatabases { body }
    }
}

impl Operation for ListDatabases {
    type Output = Vec<RawDocumentBuf>;

    fn name(&self) -> &str {
        "listDatabases"
    }

    fn build(&mut self, _description: &StreamDescription) -> Result<Command> {
        Ok(Command::new("listDatabases", "admin", self.body.clone()))
    }

    fn handle_reply(
        &mut self,
        reply: RawDocumentBuf,
        _context: &ReplyContext<'_>,
    ) -> Result<Vec<RawDocumentBuf>> {
        let malformed =
            || Error::protocol("the listDatabases reply has no `databases` array of documents");
        let databases = reply.get_array("databases").map_err(|_| malformed())?;
        databases
            .into_iter()
            .map(|entry| match entry {
                Ok(RawBsonRef::Document(doc)) => Ok(doc.to_owned()),
                _ => Err(malformed()),
            })
            .collect()
    }

    fn selection_criteria(&self) -> SelectionCriteria {
        SelectionCriteria::primary_read()
    }

    fn retryability(&self) -> Retryability {
        Retryability::Read
    }
}
