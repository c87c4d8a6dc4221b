//! The pure bookkeeping of a cursor: its buffered batch, where it lives, what the next
//! `getMore` asks for, and when it is finished.

use std::collections::VecDeque;
use std::time::Duration;

use bson::{Bson, RawDocumentBuf};
use steadfast_core::ServerAddress;

use super::reply::CursorReply;
use crate::namespace::Namespace;
use crate::operation::get_more::{GetMore, KillCursors};
use crate::pool::PinnedConnection;

/// How a cursor fetches its next batches, fixed when it is opened.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct CursorSettings {
    /// `batchSize` of every `getMore` (the server's default when `None` or 0).
    pub(crate) batch_size: Option<u32>,
    /// The total the cursor may return (`find`'s limit); `getMore`s never ask for more.
    pub(crate) limit: Option<u64>,
    /// `maxTimeMS` of `getMore` for tailable-await cursors.
    pub(crate) max_await_time: Option<Duration>,
    /// `maxTimeMS` of every `getMore`, whatever the cursor type (`run_cursor_command`'s
    /// `max_time`); a tailable await cursor's `max_await_time` takes precedence.
    pub(crate) get_more_max_time: Option<Duration>,
    /// The comment repeated on every `getMore`.
    pub(crate) comment: Option<Bson>,
    /// Whether an empty batch leaves the cursor open (tailable cursors).
    pub(crate) tailable: bool,
    /// Whether `getMore`s wait for data (tailable await cursors).
    pub(crate) await_data: bool,
    /// Whether the opening command writes (an aggregation with `$out` or `$merge`).
    pub(crate) writes: bool,
    /// The `timeoutMode` the caller asked for.
    pub(crate) timeout_mode: Option<crate::options::TimeoutMode>,
}

/// A cursor's position: the batch not yet handed out and the server cursor behind it.
#[derive(Debug)]
pub(crate) struct CursorState {
    id: i64,
    ns: Namespace,
    address: ServerAddress,
    buffer: VecDeque<RawDocumentBuf>,
    /// Documents received from the server so far (for the limit).
    received: u64,
    settings: CursorSettings,
    /// The connection the server cursor is reachable on, in load-balanced mode; checked back in
    /// once the server cursor is exhausted, or by whoever closes the cursor.
    pinned: Option<PinnedConnection>,
    /// Whether the buffer holds whole server replies, one per batch, instead of documents
    /// (a raw batch cursor).
    raw_batches: bool,
}

impl CursorState {
    /// The state after the opening command's reply, from `address`.
    pub(crate) fn new(
        reply: CursorReply,
        address: ServerAddress,
        settings: CursorSettings,
    ) -> Self {
        Self::open(reply, address, settings, false)
    }

    /// Like [`CursorState::new`], but the buffer holds each batch's whole server reply (its
    /// `cursor` document holding the `firstBatch` or `nextBatch`), one entry per batch, empty
    /// batches included: [`CursorState::pop`] then hands out whole batches.
    pub(crate) fn new_raw_batches(
        reply: CursorReply,
        address: ServerAddress,
        settings: CursorSettings,
    ) -> Self {
        Self::open(reply, address, settings, true)
    }

    fn open(
        reply: CursorReply,
        address: ServerAddress,
        settings: CursorSettings,
        raw_batches: bool,
    ) -> Self {
        let mut state = CursorState {
            id: 0,
            ns: reply.ns.clone(),
            address,
            buffer: VecDeque::new(),
            received: 0,
            settings,
            pinned: None,
            raw_batches,
        };
        state.absorb(reply);
        state
    }

    /// The state with its `getMore`s and `killCursors` pinned to `connection`.
    pub(crate) fn pinned_to(mut self, connection: Option<PinnedConnection>) -> Self {
        self.pinned = connection;
        self
    }

    /// Whether the cursor is pinned to a connection (load-balanced mode).
    pub(crate) fn is_pinned(&self) -> bool {
        self.pinned.is_some()
    }

    /// The connection `getMore` and `killCursors` must run on, if the cursor is pinned.
    pub(crate) fn pinned_mut(&mut self) -> Option<&mut PinnedConnection> {
        self.pinned.as_mut()
    }

    /// Takes the pinned connection, for the `killCursors` that closes the cursor (or, with
    /// nothing to kill, to check it in now by dropping it).
    pub(crate) fn take_pinned(&mut self) -> Option<PinnedConnection> {
        self.pinned.take()
    }

    /// Takes in a batch (the first one or a `getMore`'s).
    pub(crate) fn absorb(&mut self, reply: CursorReply) {
        self.id = reply.id;
        if self.id == 0 {
            // Drained: the pinned connection goes back to the pool now (load-balancers,
            // "Behaviour With Cursors"), not when the buffered documents are consumed.
            self.pinned = None;
        }
        self.ns = reply.ns;
        self.received = self
            .received
            .saturating_add(u64::try_from(reply.first_batch.len()).unwrap_or(u64::MAX));
        if self.raw_batches {
            // The whole reply is the batch; the documents parsed out of it are not needed.
            self.buffer.extend(reply.raw);
        } else if self.buffer.is_empty() {
            self.buffer = reply.first_batch;
        } else {
            self.buffer.extend(reply.first_batch);
        }
    }

    /// The next buffered document (the next whole batch's reply, for a raw batch cursor).
    pub(crate) fn pop(&mut self) -> Option<RawDocumentBuf> {
        self.buffer.pop_front()
    }

    /// How many documents are buffered.
    pub(crate) fn buffered(&self) -> usize {
        self.buffer.len()
    }

    /// The server cursor id (0 once the server closed it).
    pub(crate) fn id(&self) -> i64 {
        self.id
    }

    /// The server holding the cursor.
    pub(crate) fn address(&self) -> &ServerAddress {
        &self.address
    }

    /// Whether the limit was reached: no more documents may be asked for, even if the server
    /// left the cursor open (5.0+ does when a batch ends exactly at the limit).
    fn limit_reached(&self) -> bool {
        self.settings
            .limit
            .is_some_and(|limit| limit > 0 && self.received >= limit)
    }

    /// Whether no document will ever come again: the buffer is empty and the server cursor is
    /// closed or the limit was reached.
    pub(crate) fn is_exhausted(&self) -> bool {
        self.buffer.is_empty() && (self.id == 0 || self.limit_reached())
    }

    /// Whether an empty batch keeps the cursor alive.
    pub(crate) fn is_tailable(&self) -> bool {
        self.settings.tailable
    }

    /// The `getMore` for the next batch, or `None` when the cursor is closed or its limit was
    /// reached. Its `batchSize` never asks past the limit.
    pub(crate) fn get_more(&self) -> Option<GetMore> {
        if self.id == 0 || self.limit_reached() {
            return None;
        }
        let remaining = self
            .settings
            .limit
            .filter(|limit| *limit > 0)
            .map(|limit| limit - self.received);
        let batch_size = match (self.settings.batch_size.filter(|b| *b > 0), remaining) {
            (Some(batch), Some(remaining)) => {
                Some(u32::try_from(remaining).unwrap_or(u32::MAX).min(batch))
            }
            (None, Some(remaining)) => Some(u32::try_from(remaining).unwrap_or(u32::MAX)),
            (batch, None) => batch,
        };
        Some(GetMore::new(
            self.ns.clone(),
            self.id,
            self.address.clone(),
            batch_size,
            self.settings
                .max_await_time
                .filter(|_| self.settings.tailable)
                .or(self.settings.get_more_max_time),
            self.settings.comment.clone(),
        ))
    }

    /// The `killCursors` for the open server cursor, if one is open (the cursor keeps it).
    pub(crate) fn kill_op(&self) -> Option<KillCursors> {
        (self.id != 0)
            .then(|| KillCursors::new(self.ns.clone(), vec![self.id], self.address.clone()))
    }

    /// The `killCursors` for the open server cursor, and forgets it (so it is killed once).
    pub(crate) fn take_kill(&mut self) -> Option<KillCursors> {
        if self.id == 0 {
            return None;
        }
        let id = std::mem::replace(&mut self.id, 0);
        Some(KillCursors::new(
            self.ns.clone(),
            vec![id],
            self.address.clone(),
        ))
    }

    /// Marks the server cursor closed without killing it (after an error that killed it, e.g.
    /// CursorNotFound).
    pub(crate) fn forget_server_cursor(&mut self) {
        self.id = 0;
    }

    /// Moves the position out (server cursor and buffered documents), leaving this state
    /// with neither, so only the new owner kills the server cursor.
    pub(crate) fn take(&mut self) -> CursorState {
        CursorState {
            id: std::mem::replace(&mut self.id, 0),
            ns: self.ns.clone(),
            address: self.address.clone(),
            buffer: std::mem::take(&mut self.buffer),
            received: self.received,
            settings: self.settings.clone(),
            pinned: self.pinned.take(),
            raw_batches: self.raw_batches,
        }
    }
}
