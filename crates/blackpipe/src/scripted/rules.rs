//! Declarative rules: a matcher, a responder, and how many times the rule may fire.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use bson::Document;
use tokio::sync::watch;

use super::matcher::Matcher;
use super::state::Script;
use crate::server::{CommandError, ConnectionInfo, Outcome, Reaction, ReplyStream, Request};

/// Remaining-count value of a rule that never runs out.
const UNLIMITED: u64 = u64::MAX;

type ResponderFn = dyn Fn(&Request, &ConnectionInfo) -> Outcome + Send + Sync;

/// What a rule answers with: a fixed [`Reaction`] (cloned for each request) or a function of
/// the request, for replies that echo it (cursor ids, `n`, ...).
#[derive(Clone)]
pub struct Responder(Arc<ResponderFn>);

impl Responder {
    /// A responder computed from each request.
    pub fn from_fn<F>(respond: F) -> Self
    where
        F: Fn(&Request, &ConnectionInfo) -> Outcome + Send + Sync + 'static,
    {
        Self(Arc::new(respond))
    }

    /// A responder that answers every request with a fresh stream of these replies.
    pub fn stream(replies: Vec<Document>) -> Self {
        Self::from_fn(move |_, _| Outcome::Stream(ReplyStream::from_replies(replies.clone())))
    }

    /// The outcome for one request.
    pub fn respond(&self, request: &Request, connection: &ConnectionInfo) -> Outcome {
        (self.0)(request, connection)
    }
}

impl From<Reaction> for Responder {
    fn from(reaction: Reaction) -> Self {
        Self::from_fn(move |_, _| Outcome::React(reaction.clone()))
    }
}

impl From<Document> for Responder {
    fn from(document: Document) -> Self {
        Self::from(Reaction::Reply(document))
    }
}

impl From<CommandError> for Responder {
    fn from(error: CommandError) -> Self {
        Self::from(Reaction::Error(error))
    }
}

impl fmt::Debug for Responder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Responder(..)")
    }
}

/// An installed rule.
pub(crate) struct Rule {
    pub(crate) matcher: Matcher,
    pub(crate) responder: Responder,
    remaining: AtomicU64,
    removed: AtomicBool,
    hits: watch::Sender<u64>,
}

impl Rule {
    /// Claims one use of the rule if it has any left.
    pub(crate) fn try_take(&self) -> bool {
        if self.removed.load(Ordering::SeqCst) {
            return false;
        }
        let took = self
            .remaining
            .fetch_update(
                Ordering::SeqCst,
                Ordering::SeqCst,
                |remaining| match remaining {
                    UNLIMITED => Some(UNLIMITED),
                    0 => None,
                    n => Some(n - 1),
                },
            )
            .is_ok();
        if took {
            self.hits.send_modify(|hits| *hits += 1);
        }
        took
    }

    /// Whether the rule can still fire.
    pub(crate) fn is_live(&self) -> bool {
        !self.removed.load(Ordering::SeqCst) && self.remaining.load(Ordering::SeqCst) != 0
    }
}

/// A rule being built; it takes effect when [`RuleBuilder::times`], [`RuleBuilder::once`] or
/// [`RuleBuilder::always`] installs it. Rules are evaluated in installation order, before the
/// default responders and before the test's waiters.
#[must_use = "a rule takes effect only once `.times(n)`, `.once()` or `.always()` installs it"]
#[derive(Debug)]
pub struct RuleBuilder {
    script: Arc<Script>,
    matcher: Matcher,
    responder: Responder,
}

impl RuleBuilder {
    pub(crate) fn new(script: Arc<Script>, matcher: Matcher, responder: Responder) -> Self {
        Self {
            script,
            matcher,
            responder,
        }
    }

    /// Installs the rule for the next `count` matching requests.
    pub fn times(self, count: u64) -> RuleHandle {
        self.install(count.min(UNLIMITED - 1))
    }

    /// Installs the rule for the next matching request only.
    pub fn once(self) -> RuleHandle {
        self.install(1)
    }

    /// Installs the rule for every matching request until removed.
    pub fn always(self) -> RuleHandle {
        self.install(UNLIMITED)
    }

    fn install(self, remaining: u64) -> RuleHandle {
        let rule = Arc::new(Rule {
            matcher: self.matcher,
            responder: self.responder,
            remaining: AtomicU64::new(remaining),
            removed: AtomicBool::new(false),
            hits: watch::Sender::new(0),
        });
        self.script.add_rule(Arc::clone(&rule));
        RuleHandle { rule }
    }
}

/// Observes and controls an installed rule.
#[derive(Clone)]
pub struct RuleHandle {
    rule: Arc<Rule>,
}

impl RuleHandle {
    /// How many requests the rule has answered.
    pub fn hits(&self) -> u64 {
        *self.rule.hits.borrow()
    }

    /// Uses left, or `None` for a rule installed with `always`.
    pub fn remaining(&self) -> Option<u64> {
        match self.rule.remaining.load(Ordering::SeqCst) {
            UNLIMITED => None,
            n => Some(n),
        }
    }

    /// Whether the rule will not fire again (used up or removed).
    pub fn is_exhausted(&self) -> bool {
        !self.rule.is_live()
    }

    /// Stops the rule from firing again.
    pub fn remove(&self) {
        self.rule.removed.store(true, Ordering::SeqCst);
    }

    /// Resolves once the rule has answered at least `hits` requests.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn wait_for_hits(&self, hits: u64) {
        let mut receiver = self.rule.hits.subscribe();
        // The sender lives in the rule this handle keeps alive, so this cannot fail.
        let _ = receiver.wait_for(|count| *count >= hits).await;
    }
}

impl fmt::Debug for RuleHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuleHandle")
            .field("matcher", &self.rule.matcher)
            .field("hits", &self.hits())
            .field("remaining", &self.remaining())
            .finish()
    }
}
