//! `Database::run_command` and `Database::run_cursor_command`: commands the application
//! writes itself; the cursor command's `getMore`s take the action's options and, after
//! `.session(..)`, it returns a session cursor.

use std::future::IntoFuture;
use std::time::Duration;

use bson::{Bson, Document};
use futures_util::future::{BoxFuture, Either};
use steadfast_core::selection::SelectionCriteria;

use super::run::{execute, open_cursor, open_session_cursor};
use super::{ExplicitSession, ImplicitSession};
use crate::cursor::{Cursor, CursorSettings, SessionCursor};
use crate::db::Database;
use crate::error::Result;
use crate::executor::run_command::RunCommand as RunCommandOp;
use crate::operation::list::CursorCommand;
use crate::operation::settings::{OperationOverrides, OperationSettings};
use crate::options::CursorType;
use crate::session::ClientSession;

impl Database {
    /// Runs a database command; awaiting the action returns the server's reply document.
    ///
    /// The command is sent as given, on the primary (or, in a Single topology, on the one
    /// server), with `$db` set to this database (replacing any `$db` in `command`) and the
    /// fields every command carries: `lsid` of an implicit session (or the explicit one given
    /// with `.session(..)`), `$clusterTime`, the Stable API fields when the client declared a
    /// version, and `maxTimeMS` under timeoutMS (the operation's `.timeout(..)`, else the
    /// session's default, else the database's, else the client's). Under timeoutMS a
    /// `maxTimeMS` in `command` is replaced by the one the deadline leaves (or removed when
    /// timeoutMS is zero). It is never given a `txnNumber`, and it is retried only after an
    /// overload error (`SystemOverloadedError` + `RetryableError`), and only with both
    /// retryReads and retryWrites on (client-backpressure specification).
    ///
    /// # Errors
    /// `InvalidArgument` for an empty or unencodable command, or a session of another client;
    /// a command error ([`ErrorKind::Command`](crate::ErrorKind::Command), with code,
    /// codeName, errmsg and the server's labels) when the reply has `ok: 0`; server
    /// selection, network, timeout, protocol, TLS and authentication errors. The error carries
    /// the retry history.
    ///
    /// # Cancel safety
    /// Dropping the future midway abandons the command: the connection it used is closed, and
    /// the command may or may not have run.
    pub fn run_command(&self, command: Document) -> RunCommand<'_> {
        RunCommand::new(self, Ok(command))
    }

    /// [`Database::run_command`] with the command given as raw BSON (as read from the wire
    /// or a file).
    ///
    /// # Errors
    /// As [`Database::run_command`]; `InvalidArgument` when `command` is not well-formed BSON.
    pub fn run_raw_command(&self, command: bson::RawDocumentBuf) -> RunCommand<'_> {
        RunCommand::new(self, raw_command(&command))
    }

    /// [`Database::run_command`] in an explicit session: the command carries the session's
    /// `lsid`, and its `$clusterTime` and `operationTime` advance the session's.
    ///
    /// # Errors
    /// As [`Database::run_command`]; `InvalidArgument` when the session belongs to another
    /// client, or the deployment does not support sessions.
    ///
    /// # Cancel safety
    /// As [`Database::run_command`].
    pub async fn run_command_with_session(
        &self,
        command: Document,
        session: &mut ClientSession,
    ) -> Result<Document> {
        self.run_command(command).session(session).await
    }

    /// Runs a command that opens a cursor (`find`, `aggregate`, `listCollections`, ... written
    /// by the application) and returns the cursor over its results. The command is sent as
    /// [`Database::run_command`] sends it (no inherited read or write concern); its `getMore`s
    /// take `batch_size`, `max_time` (their `maxTimeMS`) and `comment` from the action. The
    /// command itself must ask for a tailable cursor if `cursor_type` says so. After
    /// `.session(..)` it runs in that session and awaiting returns a [`SessionCursor`].
    pub fn run_cursor_command(&self, command: Document) -> RunCursorCommand<'_> {
        self.cursor_command(Ok(command))
    }

    /// [`Database::run_cursor_command`] with the command given as raw BSON.
    ///
    /// # Errors
    /// As [`Database::run_cursor_command`]; `InvalidArgument` when `command` is not well-formed
    /// BSON.
    pub fn run_raw_cursor_command(&self, command: bson::RawDocumentBuf) -> RunCursorCommand<'_> {
        self.cursor_command(raw_command(&command))
    }

    fn cursor_command(&self, command: Result<Document>) -> RunCursorCommand<'_> {
        RunCursorCommand {
            db: self,
            command,
            criteria: None,
            batch_size: None,
            cursor_type: CursorType::NonTailable,
            max_time: None,
            comment: None,
            overrides: OperationOverrides::default(),
            session: ImplicitSession,
        }
    }
}

/// The action of [`Database::run_command`].
#[must_use = "an action does nothing until awaited"]
pub struct RunCommand<'a> {
    db: &'a Database,
    /// The command, or why the raw one given could not be read.
    command: Result<Document>,
    overrides: OperationOverrides,
    session: Option<&'a mut ClientSession>,
    criteria: Option<SelectionCriteria>,
}

impl<'a> RunCommand<'a> {
    fn new(db: &'a Database, command: Result<Document>) -> Self {
        RunCommand {
            db,
            command,
            overrides: OperationOverrides::default(),
            session: None,
            criteria: None,
        }
    }

    operation_overrides!();

    /// Runs the command in an explicit session.
    pub fn session(mut self, session: &'a mut ClientSession) -> Self {
        self.session = Some(session);
        self
    }

    /// Replaces every option at once ([`RunCommandOptions`](crate::options::RunCommandOptions);
    /// `None`: the defaults).
    pub fn with_options(
        mut self,
        options: impl Into<Option<crate::options::RunCommandOptions>>,
    ) -> Self {
        self.criteria = options
            .into()
            .and_then(|options| options.selection_criteria);
        self
    }

    /// Where the command runs (default: the primary). The command is sent as written: a read
    /// preference other than primary makes it eligible for secondaries, and the driver adds
    /// `$readPreference` where the topology needs it.
    pub fn selection_criteria(mut self, criteria: impl Into<SelectionCriteria>) -> Self {
        self.criteria = Some(criteria.into());
        self
    }

    /// Builds the operation before the future is made, so that the future is the executor's
    /// alone (holding the operation boxed), not the action's, the operation's and the settings'
    /// around it: every call copies its future once, into a box.
    fn execute(self) -> impl Future<Output = Result<Document>> + 'a {
        let RunCommand {
            db,
            command,
            overrides,
            session,
            criteria,
        } = self;
        let explicit = criteria.is_some();
        let criteria = criteria.unwrap_or_else(SelectionCriteria::primary_read);
        let op = match command.and_then(|command| RunCommandOp::new(db.name(), command, criteria)) {
            Ok(op) => op.run_by_application().with_explicit_criteria(explicit),
            Err(error) => return Either::Left(std::future::ready(Err(error))),
        };
        let settings = db.inherited().settings.overridden_by(&overrides);
        Either::Right(execute(db.client(), op, session, &settings))
    }
}

action_future!(RunCommand<'a> => Document);

/// The action of [`Database::run_cursor_command`].
#[must_use = "an action does nothing until awaited"]
pub struct RunCursorCommand<'a, S = ImplicitSession> {
    db: &'a Database,
    /// The command, or why the raw one given could not be read.
    command: Result<Document>,
    criteria: Option<SelectionCriteria>,
    batch_size: Option<u32>,
    cursor_type: CursorType,
    max_time: Option<Duration>,
    comment: Option<Bson>,
    overrides: OperationOverrides,
    session: S,
}

impl<'a, S> RunCursorCommand<'a, S> {
    operation_overrides!();
    timeout_mode_setter!();

    /// Where the command runs (default: the primary).
    pub fn selection_criteria(mut self, criteria: impl Into<SelectionCriteria>) -> Self {
        self.criteria = Some(criteria.into());
        self
    }

    /// Replaces every option at once
    /// ([`RunCursorCommandOptions`](crate::options::RunCursorCommandOptions); `None`: the
    /// defaults).
    pub fn with_options(
        mut self,
        options: impl Into<Option<crate::options::RunCursorCommandOptions>>,
    ) -> Self {
        let options = options.into().unwrap_or_default();
        self.criteria = options.selection_criteria;
        self.cursor_type = options.cursor_type.unwrap_or(CursorType::NonTailable);
        self.batch_size = options.batch_size;
        self.max_time = options.max_time;
        self.comment = options.comment;
        self
    }

    /// The `batchSize` of the cursor's `getMore`s.
    pub fn batch_size(mut self, batch_size: u32) -> Self {
        self.batch_size = Some(batch_size);
        self
    }

    /// The kind of cursor the command opens (it decides which timeout modes apply and whether
    /// an empty batch ends the cursor).
    pub fn cursor_type(mut self, cursor_type: CursorType) -> Self {
        self.cursor_type = cursor_type;
        self
    }

    /// The `maxTimeMS` of the cursor's `getMore`s (the command's own is in the command).
    pub fn max_time(mut self, max_time: Duration) -> Self {
        self.max_time = Some(max_time);
        self
    }

    /// The `comment` of the cursor's `getMore`s.
    pub fn comment(mut self, comment: impl Into<Bson>) -> Self {
        self.comment = Some(comment.into());
        self
    }

    /// The command, the cursor's settings and the operation's settings.
    fn prepare(self) -> Result<(CursorCommand, CursorSettings, OperationSettings, S)> {
        let op = CursorCommand::new(self.db.name(), self.command?)?.with_criteria(self.criteria);
        let cursor_settings = CursorSettings {
            batch_size: self.batch_size,
            get_more_max_time: self.max_time,
            comment: self.comment,
            tailable: self.cursor_type != CursorType::NonTailable,
            await_data: self.cursor_type == CursorType::TailableAwait,
            timeout_mode: self.overrides.timeout_mode,
            ..CursorSettings::default()
        };
        let settings = self.db.inherited().settings.overridden_by(&self.overrides);
        Ok((op, cursor_settings, settings, self.session))
    }
}

impl<'a> RunCursorCommand<'a, ImplicitSession> {
    /// Runs the command, and its `getMore`s, in an explicit session; awaiting then returns a
    /// [`SessionCursor`].
    pub fn session(
        self,
        session: &'a mut ClientSession,
    ) -> RunCursorCommand<'a, ExplicitSession<'a>> {
        RunCursorCommand {
            db: self.db,
            command: self.command,
            criteria: self.criteria,
            batch_size: self.batch_size,
            cursor_type: self.cursor_type,
            max_time: self.max_time,
            comment: self.comment,
            overrides: self.overrides,
            session: ExplicitSession(session),
        }
    }
}

impl<'a> IntoFuture for RunCursorCommand<'a, ImplicitSession> {
    type Output = Result<Cursor<Document>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let client = self.db.client();
            let (op, cursor_settings, settings, _) = self.prepare()?;
            open_cursor(client, Box::new(op), settings, cursor_settings).await
        })
    }
}

impl<'a> IntoFuture for RunCursorCommand<'a, ExplicitSession<'a>> {
    type Output = Result<SessionCursor<Document>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let client = self.db.client();
            let (op, cursor_settings, settings, ExplicitSession(session)) = self.prepare()?;
            open_session_cursor(client, Box::new(op), session, settings, cursor_settings).await
        })
    }
}

/// A raw command as a document, or `InvalidArgument` saying why it is not well-formed BSON.
pub(crate) fn raw_command(command: &bson::RawDocumentBuf) -> Result<Document> {
    Document::try_from(command.as_ref()).map_err(|error| {
        crate::error::Error::invalid_argument(format!("the raw command is not valid BSON: {error}"))
    })
}

impl RunCursorCommand<'_, ImplicitSession> {
    /// Runs the command and returns a [`RawBatchCursor`](crate::raw_batch_cursor::RawBatchCursor): the same cursor
    /// awaiting the action opens, handing out whole server batches, unparsed, instead of
    /// documents.
    ///
    /// # Errors
    /// As awaiting the action.
    pub async fn batch(self) -> Result<crate::raw_batch_cursor::RawBatchCursor> {
        let client = self.db.client();
        let (op, cursor_settings, settings, _) = self.prepare()?;
        super::run::open_raw_batch_cursor(client, Box::new(op), settings, cursor_settings).await
    }
}

impl<'a> RunCursorCommand<'a, ExplicitSession<'a>> {
    /// Runs the command in the explicit session and returns a
    /// [`SessionRawBatchCursor`](crate::raw_batch_cursor::SessionRawBatchCursor): the same cursor awaiting the
    /// action opens, handing out whole server batches, unparsed, instead of documents.
    ///
    /// # Errors
    /// As awaiting the action.
    pub async fn batch(self) -> Result<crate::raw_batch_cursor::SessionRawBatchCursor> {
        let client = self.db.client();
        let (op, cursor_settings, settings, ExplicitSession(session)) = self.prepare()?;
        super::run::open_raw_batch_session_cursor(
            client,
            Box::new(op),
            session,
            settings,
            cursor_settings,
        )
        .await
    }
}
