//! Server sessions: the client-side pool of logical session ids, transaction numbers for
//! retryable writes, and cluster-time gossip.
//!
//! A server session is only an id (a random v4 UUID generated here from an injected rng), the
//! last time it was sent, a transaction-number counter and a dirty flag. The pool follows the
//! driver-sessions specification: LIFO reuse, sessions within a minute of the server's
//! `logicalSessionTimeoutMinutes` are discarded rather than reused, and sessions that saw a
//! network error are never pooled again.

mod cluster_time;
pub mod transaction;

pub use cluster_time::{ClusterTime, advance_cluster_time, newest_cluster_time};

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bson::raw::{RawBinaryRef, cstr};
use bson::{Binary, Document, RawDocument, RawDocumentBuf, doc, spec::BinarySubtype};
use rand::Rng;

/// How close to expiry a session may be and still be reused.
pub const EXPIRY_MARGIN: Duration = Duration::from_secs(60);

/// One server session.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerSession {
    id: [u8; 16],
    /// `lsid` as sent: encoded once, since every command of the session carries it.
    encoded: RawDocumentBuf,
    last_use: Instant,
    txn_number: i64,
    dirty: bool,
}

impl ServerSession {
    /// A new session with a random version-4 UUID, last used `now`.
    pub fn new(rng: &mut impl Rng, now: Instant) -> Self {
        let mut id: [u8; 16] = rng.random();
        // RFC 4122 section 4.4: version 4, variant 10xx.
        id[6] = (id[6] & 0x0f) | 0x40;
        id[8] = (id[8] & 0x3f) | 0x80;
        let mut encoded = RawDocumentBuf::new();
        let uuid = RawBinaryRef {
            subtype: BinarySubtype::Uuid,
            bytes: &id,
        };
        encoded.append(cstr!("id"), uuid);
        ServerSession {
            id,
            encoded,
            last_use: now,
            txn_number: 0,
            dirty: false,
        }
    }

    /// The raw UUID bytes.
    pub fn id_bytes(&self) -> &[u8; 16] {
        &self.id
    }

    /// The `lsid` document sent with commands: `{ id: UUID }` (binary subtype 4).
    pub fn lsid(&self) -> Document {
        lsid_document(&self.id)
    }

    /// The `lsid` document, encoded (what [`ServerSession::lsid`] builds, without building it).
    pub fn encoded_lsid(&self) -> &RawDocument {
        &self.encoded
    }

    /// Records that the id was sent to a server at `now`.
    pub fn touch(&mut self, now: Instant) {
        self.last_use = now;
    }

    /// When the id was last sent.
    pub fn last_use(&self) -> Instant {
        self.last_use
    }

    /// Advances and returns the transaction number for a new retryable write. Every attempt of
    /// that write reuses the returned number.
    pub fn next_txn_number(&mut self) -> i64 {
        self.txn_number += 1;
        self.txn_number
    }

    /// The last transaction number handed out (0 before any).
    pub fn txn_number(&self) -> i64 {
        self.txn_number
    }

    /// Marks the session as having seen a network error: it will not return to the pool.
    pub fn mark_dirty(&mut self) {
        self.dirty = true;
    }

    /// Whether a network error was seen with this session.
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// Whether the server may consider this session expired within [`EXPIRY_MARGIN`] of `now`.
    /// `timeout` is the topology's `logicalSessionTimeoutMinutes`; `None` (unknown) counts as
    /// about to expire, so nothing stale is ever reused.
    pub fn is_about_to_expire(&self, timeout: Option<Duration>, now: Instant) -> bool {
        match timeout {
            None => true,
            Some(timeout) => {
                let idle = now.saturating_duration_since(self.last_use);
                idle + EXPIRY_MARGIN >= timeout
            }
        }
    }
}

/// The `lsid` document of the session whose UUID is `id`: `{ id: UUID }` (binary subtype 4).
pub fn lsid_document(id: &[u8; 16]) -> Document {
    doc! { "id": Binary { subtype: BinarySubtype::Uuid, bytes: id.to_vec() } }
}

/// The client's pool of server sessions.
#[derive(Debug, Default)]
pub struct SessionPool {
    /// Front: most recently returned.
    sessions: VecDeque<ServerSession>,
}

impl SessionPool {
    /// An empty pool.
    pub fn new() -> Self {
        SessionPool::default()
    }

    /// Takes the most recently returned session that is not about to expire, discarding the
    /// ones that are; creates a new one if none is left. In load-balanced mode expiry is not
    /// checked (`timeout` is ignored), as the load-balancer specification says.
    pub fn acquire(
        &mut self,
        timeout: Option<Duration>,
        load_balanced: bool,
        rng: &mut impl Rng,
        now: Instant,
    ) -> ServerSession {
        while let Some(session) = self.sessions.pop_front() {
            if load_balanced || !session.is_about_to_expire(timeout, now) {
                return session;
            }
        }
        ServerSession::new(rng, now)
    }

    /// Returns a session: first prunes expiring sessions from the back, then keeps the session at
    /// the front unless it is dirty or about to expire.
    pub fn release(&mut self, session: ServerSession, timeout: Option<Duration>, now: Instant) {
        while self
            .sessions
            .back()
            .is_some_and(|s| s.is_about_to_expire(timeout, now))
        {
            self.sessions.pop_back();
        }
        if !session.is_dirty() && !session.is_about_to_expire(timeout, now) {
            self.sessions.push_front(session);
        }
    }

    /// Returns a session in load-balanced mode: there is no `logicalSessionTimeoutMinutes` to
    /// judge expiry by, and the load-balancer specification forbids pruning, so the session is
    /// kept unless it is dirty.
    pub fn release_load_balanced(&mut self, session: ServerSession) {
        if !session.is_dirty() {
            self.sessions.push_front(session);
        }
    }

    /// Sessions waiting in the pool.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Whether the pool is empty.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Empties the pool, returning the `lsid` documents to send in `endSessions` batches of at
    /// most 10,000 ids (the server's limit per command).
    pub fn drain_for_end_sessions(&mut self) -> Vec<Vec<Document>> {
        let ids: Vec<Document> = self.sessions.drain(..).map(|s| s.lsid()).collect();
        ids.chunks(10_000).map(<[Document]>::to_vec).collect()
    }
}

#[cfg(test)]
mod tests;
