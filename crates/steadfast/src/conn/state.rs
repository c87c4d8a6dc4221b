//! A connection's life as one state with named transitions: idle, writing a request, awaiting
//! a reply, streaming more-to-come replies, owing and draining a late reply, broken.
//!
//! [`Connection`](super::Connection) changes its state only through the transitions below.
//! Each one `debug_assert!`s the states it may start from, so that a misuse fails loudly in
//! debug builds; in release builds an illegal transition leaves the connection broken rather
//! than reuse a stream in an unknown state.
//!
//! Cancel safety rests on this shape: an exchange moves the state forward before each await
//! and settles it after, so a future dropped midway leaves it writing, awaiting a reply or
//! draining, none of which may be reused or sent on. The connection is then closed.

use std::sync::atomic::{AtomicI32, Ordering};

/// Request ids are unique per process, so a reply can never be mistaken for another
/// connection's even in logs.
static NEXT_REQUEST_ID: AtomicI32 = AtomicI32::new(1);

fn next_request_id() -> i32 {
    // Wrapping is fine: ids only need to differ from the few requests in flight.
    NEXT_REQUEST_ID.fetch_add(1, Ordering::Relaxed)
}

/// Where a connection stands in its request/reply exchanges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConnState {
    /// No exchange under way: a request may be sent.
    Idle {
        /// The id the next request will carry, picked beforehand so that a command-started
        /// event can name it before anything is written ([`ConnState::reserve_request_id`]).
        reserved: Option<i32>,
    },
    /// A request is being written: the stream may hold part of it.
    Writing {
        /// The id the request carries.
        request_id: i32,
    },
    /// The request (or a reply that carried moreToCome) is answered by the reply being read.
    AwaitingReply {
        /// The request id the reply must name as its `responseTo`.
        to: i32,
    },
    /// The last reply carried moreToCome: the server sends the next one without a request
    /// (exhaust), so no request may be sent until the stream ends.
    Streaming {
        /// The request id of that last reply, which the next one answers.
        from: i32,
    },
    /// The operation's deadline (timeoutMS) left the reply to a request written whole unread:
    /// the stream is intact, and the connection may be reused once that reply has been drained.
    OwesLateReply {
        /// The request the late reply answers.
        to: i32,
    },
    /// The late reply is being read, to be discarded.
    DrainingLateReply {
        /// The request the late reply answers.
        to: i32,
    },
    /// A network, timeout or protocol error left the stream unusable: the connection must be
    /// discarded.
    Broken,
}

impl ConnState {
    /// A new connection: idle, nothing reserved.
    pub(crate) fn new() -> Self {
        Self::Idle { reserved: None }
    }

    /// Picks the request id the next request will carry, so that monitoring can report it
    /// before anything is written; calling it again replaces the reservation. Only an idle
    /// connection records it: in any other state no request can be sent (the send is refused,
    /// or must wait for a stream or a late reply to end), so the id merely names the command
    /// that is refused.
    pub(crate) fn reserve_request_id(&mut self) -> i32 {
        let id = next_request_id();
        if let Self::Idle { reserved } = self {
            *reserved = Some(id);
        }
        id
    }

    /// Idle -> writing: a request starts. Returns its id, the reserved one if any.
    pub(crate) fn start_writing(&mut self) -> i32 {
        debug_assert!(
            matches!(self, Self::Idle { .. }),
            "cannot write a request while {self:?}"
        );
        let Self::Idle { reserved } = *self else {
            *self = Self::Broken;
            return next_request_id();
        };
        let request_id = reserved.unwrap_or_else(next_request_id);
        *self = Self::Writing { request_id };
        request_id
    }

    /// Writing -> idle: the request could not be encoded, so nothing was written. Its id is
    /// spent (a reservation does not carry over to the next request).
    pub(crate) fn write_refused(&mut self) {
        self.expect_writing("refuse");
        *self = match self {
            Self::Writing { .. } => Self::new(),
            _ => Self::Broken,
        };
    }

    /// Writing -> awaiting its reply, or idle when the request said moreToCome (no reply).
    pub(crate) fn written(&mut self, expects_reply: bool) {
        self.expect_writing("finish");
        *self = match *self {
            Self::Writing { request_id } if expects_reply => Self::AwaitingReply { to: request_id },
            Self::Writing { .. } => Self::new(),
            _ => Self::Broken,
        };
    }

    /// Streaming -> awaiting the next streamed reply. Returns the id it answers (0, which no
    /// reply answers, after an illegal transition).
    pub(crate) fn read_streamed(&mut self) -> i32 {
        debug_assert!(
            matches!(self, Self::Streaming { .. }),
            "no streamed reply to read while {self:?}"
        );
        let Self::Streaming { from } = *self else {
            *self = Self::Broken;
            return 0;
        };
        *self = Self::AwaitingReply { to: from };
        from
    }

    /// Owing a late reply -> draining it. Returns the request it answers (0, which no reply
    /// answers, after an illegal transition).
    pub(crate) fn drain(&mut self) -> i32 {
        debug_assert!(
            matches!(self, Self::OwesLateReply { .. }),
            "no late reply to drain while {self:?}"
        );
        let Self::OwesLateReply { to } = *self else {
            *self = Self::Broken;
            return 0;
        };
        *self = Self::DrainingLateReply { to };
        to
    }

    /// A reply (request id `reply_id`) has been read. Awaiting -> streaming when it carried
    /// moreToCome, else idle. Draining -> idle; but a late reply that streams more cannot be
    /// told apart from the next command's replies, so then the connection is broken.
    pub(crate) fn replied(&mut self, reply_id: i32, more_to_come: bool) {
        debug_assert!(
            matches!(
                self,
                Self::AwaitingReply { .. } | Self::DrainingLateReply { .. }
            ),
            "a reply arrived while {self:?}"
        );
        *self = match (*self, more_to_come) {
            (Self::AwaitingReply { .. }, true) => Self::Streaming { from: reply_id },
            (Self::AwaitingReply { .. } | Self::DrainingLateReply { .. }, false) => Self::new(),
            _ => Self::Broken,
        };
    }

    /// The operation's deadline (timeoutMS) cut an exchange short. A request written whole
    /// whose reply is merely late leaves the stream intact: awaiting -> owing the late reply.
    /// A request cut off while being written leaves part of it on the stream: writing -> broken.
    pub(crate) fn deadline_passed(&mut self) {
        debug_assert!(
            matches!(self, Self::Writing { .. } | Self::AwaitingReply { .. }),
            "no exchange under way for a deadline to cut short while {self:?}"
        );
        *self = match *self {
            Self::AwaitingReply { to } => Self::OwesLateReply { to },
            _ => Self::Broken,
        };
    }

    /// Any state -> broken: an error left the stream unusable.
    pub(crate) fn close(&mut self) {
        *self = Self::Broken;
    }

    /// Whether the connection may carry no other command now: an error broke it, an exchange
    /// is under way (or was abandoned midway), or it owes a late reply. A streaming
    /// connection is not broken, but is not reusable either ([`ConnState::is_reusable`]).
    pub(crate) fn is_broken(self) -> bool {
        match self {
            Self::Idle { .. } | Self::Streaming { .. } => false,
            Self::Writing { .. }
            | Self::AwaitingReply { .. }
            | Self::OwesLateReply { .. }
            | Self::DrainingLateReply { .. }
            | Self::Broken => true,
        }
    }

    /// Whether an exchange was under way when the connection was let go: a request being
    /// written or its reply awaited, which only a future dropped midway leaves behind (every
    /// exchange that completes or fails settles the state).
    pub(crate) fn is_mid_exchange(self) -> bool {
        matches!(self, Self::Writing { .. } | Self::AwaitingReply { .. })
    }

    /// Whether another command may use the connection, which is what lets it go back to a
    /// pool: it is idle (no streamed reply waits unread, to be taken for the next reply).
    pub(crate) fn is_reusable(self) -> bool {
        match self {
            Self::Idle { .. } => true,
            Self::Writing { .. }
            | Self::AwaitingReply { .. }
            | Self::Streaming { .. }
            | Self::OwesLateReply { .. }
            | Self::DrainingLateReply { .. }
            | Self::Broken => false,
        }
    }

    /// Whether the connection owes a reply timeoutMS left unread and no drain is under way.
    pub(crate) fn owes_late_reply(self) -> bool {
        matches!(self, Self::OwesLateReply { .. })
    }

    /// Whether the last reply said more replies will follow without a request.
    pub(crate) fn is_streaming(self) -> bool {
        matches!(self, Self::Streaming { .. })
    }

    fn expect_writing(&self, what: &str) {
        debug_assert!(
            matches!(self, Self::Writing { .. }),
            "cannot {what} a write while {self:?}"
        );
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
