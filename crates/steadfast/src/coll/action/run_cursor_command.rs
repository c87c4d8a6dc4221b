//! `Database::run_cursor_command`: an application's cursor-opening command, with the options
//! its `getMore`s take and, after `.session(..)`, a session cursor.

use std::future::IntoFuture;
use std::time::Duration;

use bson::{Bson, Document};
use futures_util::future::BoxFuture;
use steadfast_core::selection::SelectionCriteria;

use super::{ExplicitSession, ImplicitSession};
use crate::coll::exec::{OperationOverrides, OperationSettings, open_cursor, open_session_cursor};
use crate::cursor::{Cursor, CursorSettings, SessionCursor};
use crate::db::Database;
use crate::error::Result;
use crate::operation::list::CursorCommand;
use crate::options::CursorType;
use crate::session::ClientSession;

impl Database {
    /// Runs a command that opens a cursor (`find`, `aggregate`, `listCollections`, ... written
    /// by the application) and returns the cursor over its results. The command is sent as
    /// [`Database::run_command`] sends it (no inherited read or write concern); its `getMore`s
    /// take `batch_size`, `max_time` (their `maxTimeMS`) and `comment` from the action. The
    /// command itself must ask for a tailable cursor if `cursor_type` says so. After
    /// `.session(..)` it runs in that session and awaiting returns a [`SessionCursor`].
    pub fn run_cursor_command(&self, command: Document) -> RunCursorCommand<'_> {
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

/// The action of [`Database::run_cursor_command`].
#[must_use = "an action does nothing until awaited"]
pub struct RunCursorCommand<'a, S = ImplicitSession> {
    db: &'a Database,
    command: Document,
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
        let op = CursorCommand::new(self.db.name(), self.command)?.with_criteria(self.criteria);
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
