//! `getMore` and `killCursors`: they run on the server that holds the cursor.

use std::time::Duration;

use bson::{Bson, Document, RawDocumentBuf};
use steadfast_core::ServerAddress;
use steadfast_core::selection::SelectionCriteria;

use super::fields::{put, put_max_time};
use super::{Command, Operation, ReplyContext, Retryability};
use crate::conn::description::StreamDescription;
use crate::cursor::CursorReply;
use crate::error::{Error, Result};
use crate::namespace::Namespace;

/// `getMore`: the next batch of a cursor. Never retried by retryable reads.
#[derive(Debug)]
pub(crate) struct GetMore {
    ns: Namespace,
    id: i64,
    address: ServerAddress,
    batch_size: Option<u32>,
    /// `maxTimeMS`: only for tailable-await cursors (their `maxAwaitTimeMS`).
    max_await_time: Option<Duration>,
    comment: Option<Bson>,
}

impl GetMore {
    /// A `getMore` of cursor `id` in `ns`, held by `address`.
    pub(crate) fn new(
        ns: Namespace,
        id: i64,
        address: ServerAddress,
        batch_size: Option<u32>,
        max_await_time: Option<Duration>,
        comment: Option<Bson>,
    ) -> Self {
        GetMore {
            ns,
            id,
            address,
            batch_size,
            max_await_time,
            comment,
        }
    }
}

impl Operation for GetMore {
    type Output = CursorReply;

    fn name(&self) -> &str {
        "getMore"
    }

    fn build(&mut self, description: &StreamDescription) -> Result<Command> {
        let mut body = Document::new();
        body.insert("getMore", self.id);
        body.insert("collection", self.ns.coll.clone());
        put(
            &mut body,
            "batchSize",
            self.batch_size.filter(|n| *n > 0).map(i64::from),
        );
        put_max_time(&mut body, self.max_await_time);
        // Servers before 4.4 (wire version 9) reject a comment on getMore.
        if description.max_wire_version >= 9 {
            put(&mut body, "comment", self.comment.clone());
        }
        Ok(Command::new("getMore", self.ns.db.clone(), body))
    }

    fn handle_reply(
        &mut self,
        reply: RawDocumentBuf,
        _context: &ReplyContext<'_>,
    ) -> Result<CursorReply> {
        let cursor = CursorReply::parse(&reply, "getMore")?;
        if cursor.id != 0 && cursor.id != self.id {
            return Err(Error::protocol(format!(
                "getMore of cursor {} answered for cursor {}",
                self.id, cursor.id
            )));
        }
        // The cursor's namespace is fixed when it opens: a reply that moves it would send the
        // next getMore (or killCursors) to a namespace the application never asked for.
        if cursor.ns != self.ns {
            return Err(Error::protocol(format!(
                "getMore of cursor {} in {} answered for namespace {}",
                self.id, self.ns, cursor.ns
            )));
        }
        Ok(cursor.with_raw(reply))
    }

    fn selection_criteria(&self) -> SelectionCriteria {
        SelectionCriteria::primary_read()
    }

    fn target(&self) -> Option<&ServerAddress> {
        Some(&self.address)
    }

    fn retryability(&self) -> Retryability {
        Retryability::GetMore
    }
}

/// `killCursors`: closes cursors the application stopped reading before they were exhausted.
#[derive(Debug)]
pub(crate) struct KillCursors {
    ns: Namespace,
    ids: Vec<i64>,
    address: ServerAddress,
}

impl KillCursors {
    /// Kills `ids` in `ns` on `address`.
    pub(crate) fn new(ns: Namespace, ids: Vec<i64>, address: ServerAddress) -> Self {
        KillCursors { ns, ids, address }
    }
}

impl Operation for KillCursors {
    type Output = ();

    fn name(&self) -> &str {
        "killCursors"
    }

    fn build(&mut self, _description: &StreamDescription) -> Result<Command> {
        let mut body = Document::new();
        body.insert("killCursors", self.ns.coll.clone());
        body.insert(
            "cursors",
            self.ids
                .iter()
                .copied()
                .map(Bson::Int64)
                .collect::<Vec<_>>(),
        );
        Ok(Command::new("killCursors", self.ns.db.clone(), body))
    }

    fn handle_reply(&mut self, _reply: RawDocumentBuf, _context: &ReplyContext<'_>) -> Result<()> {
        // cursorsNotFound/cursorsAlive are informational: the cursor is gone either way.
        Ok(())
    }

    fn selection_criteria(&self) -> SelectionCriteria {
        SelectionCriteria::primary_read()
    }

    fn target(&self) -> Option<&ServerAddress> {
        Some(&self.address)
    }

    fn retryability(&self) -> Retryability {
        Retryability::None
    }

    fn idempotent(&self) -> bool {
        // Killing a cursor twice is harmless (the second reports it not found).
        true
    }
}
