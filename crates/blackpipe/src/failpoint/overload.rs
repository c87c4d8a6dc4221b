//! Simulated overload: the ingress request rate limiter of MongoDB 8.2+ rejecting commands.
//!
//! Not a mongod fail point (mongod has no test command for this); blackpipe's control API and
//! its `{blackpipe: "overload"}` admin command configure it. The rejection is shaped exactly as
//! the client-backpressure specification shows it.

use bson::{Bson, Document, doc};
use rand::Rng;

use super::mode::{ModeState, integral};
use super::{FailPointError, FailPointMode};
use blackpipe_store::code;

/// `IngressRequestRateLimitExceeded`.
pub const OVERLOAD_CODE: i32 = code::INGRESS_REQUEST_RATE_LIMIT_EXCEEDED;

/// A configured overload: which commands to reject and the backoff the server suggests.
#[derive(Debug, Clone)]
pub struct Overload {
    state: ModeState,
    base_backoff_ms: Option<i64>,
}

/// The rejection of one command by the overloaded server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverloadError {
    /// `baseBackoffMS` to put in the reply, if configured.
    pub base_backoff_ms: Option<i64>,
}

impl OverloadError {
    /// The reply document: code 462 with `SystemOverloadedError` and `RetryableError`.
    pub fn to_reply(&self) -> Document {
        let mut reply = doc! {
            "ok": 0.0,
            "errmsg": "Rate limiter 'ingressRequestRateLimiter' rate exceeded",
            "code": OVERLOAD_CODE,
            "codeName": "IngressRequestRateLimitExceeded",
            "errorLabels": ["SystemOverloadedError", "RetryableError"],
        };
        if let Some(base) = self.base_backoff_ms {
            reply.insert("baseBackoffMS", base);
        }
        reply
    }
}

impl Overload {
    /// Rejects commands as `mode` says, suggesting `base_backoff_ms` (if any).
    pub fn new(mode: FailPointMode, base_backoff_ms: Option<i64>) -> Self {
        Self {
            state: ModeState::new(mode),
            base_backoff_ms,
        }
    }

    /// Parses `{mode: <fail point mode>, baseBackoffMS?: n}` (the admin command's fields).
    ///
    /// # Errors
    ///
    /// As [`FailPointMode::parse`]; `TypeMismatch` for a non-integral `baseBackoffMS`.
    pub fn parse(command: &Document) -> Result<Self, FailPointError> {
        let mode = match command.get("mode") {
            Some(mode) => FailPointMode::parse(mode)?,
            None => FailPointMode::AlwaysOn,
        };
        let base_backoff_ms = match command.get("baseBackoffMS") {
            None | Some(Bson::Null) => None,
            Some(value) => Some(integral(value).ok_or_else(|| {
                FailPointError::type_mismatch("'baseBackoffMS' must be a number")
            })?),
        };
        Ok(Self::new(mode, base_backoff_ms))
    }

    /// Decides whether this command is rejected.
    pub fn evaluate(&mut self, rng: &mut impl Rng) -> Option<OverloadError> {
        if !self.state.is_active() {
            return None;
        }
        self.state.should_trigger(rng).then_some(OverloadError {
            base_backoff_ms: self.base_backoff_ms,
        })
    }

    /// How many commands were rejected so far.
    pub fn rejected(&self) -> i64 {
        self.state.times_entered()
    }

    /// True while it can still reject commands.
    pub fn is_active(&self) -> bool {
        self.state.is_active()
    }
}
