//! [`AdaptivePolicy`]: the specifications' retries, plus client-side adaptive throttling and a
//! retry budget, for applications that must keep doing useful work when demand exceeds what
//! the deployment can serve.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use rand::RngCore;
use steadfast_core::ServerAddress;
use steadfast_core::retry::{
    AdaptiveConfig, AdaptiveThrottles, Admission, AttemptContext, RetryDecision, RetryPolicy,
    RetryTarget, StopReason,
};

/// The specifications' retries (as [`SpecPolicy`](crate::retries::SpecPolicy)), plus
/// client-side adaptive throttling after the Google SRE book, so that a client facing an
/// overloaded server sends about what the server can accept instead of storming it.
///
/// # When to use it
///
/// When demand can exceed the deployment's capacity (bursts, a lost member, a batch job beside
/// the interactive traffic) and the application would rather fail some requests fast than have
/// every request wait through rejections and retries. Its refusals are the application's cue to
/// shed load itself: fail the request, serve a degraded answer, or queue it.
///
/// # What it does
///
/// For each server, over a sliding window ([`AdaptiveConfig::window`], 2 s), it counts the
/// requests whose fate is known and the replies that were not overload rejections (errors
/// included: the server did the work). Before an operation's first attempt it refuses the
/// request locally with probability `max(0, (requests - K × accepts) / (requests + 1))`
/// (`K` is [`AdaptiveConfig::accept_multiplier`], 1.05 by default). Overload retries (those the
/// client-backpressure specification allows) are held to [`AdaptiveConfig::retry_ratio`] of the
/// first attempts sent to that server over the window (5%); other retries (elections, network
/// errors) are the specifications' own.
///
/// # What it guarantees
///
/// - It only ever refuses before sending, or declines a retry: it never retries anything the
///   specifications do not (the orchestrator would not let it).
/// - A refused operation fails at once with [`ErrorKind::Throttled`](crate::ErrorKind::Throttled),
///   of class [`ErrorClass::Overload`](crate::error::ErrorClass::Overload), whose
///   [`outcome`](crate::Error::outcome) is [`Outcome::NotApplied`](crate::retries::Outcome::NotApplied):
///   it was never sent.
/// - With `K ≥ 1` it never refuses anything until a server sheds load: requests are counted
///   when their reply arrives, so a burst of requests in flight is not mistaken for rejections.
///
/// # Sharing
///
/// The counts live in the policy and are shared by its clones: set one instance on the client
/// ([`ClientBuilder::retry_policy`](crate::ClientBuilder::retry_policy)), and clone it where an
/// operation, collection or database sets a policy of its own, so that all of them throttle on
/// the same evidence. Counts are kept per server address (an overloaded primary does not
/// throttle reads sent to healthy secondaries) behind one short-held lock.
#[derive(Clone, Debug)]
pub struct AdaptivePolicy {
    throttles: Arc<Mutex<AdaptiveThrottles>>,
}

impl Default for AdaptivePolicy {
    fn default() -> Self {
        AdaptivePolicy::new(AdaptiveConfig::default())
    }
}

impl AdaptivePolicy {
    /// A policy with its own, empty counts.
    pub fn new(config: AdaptiveConfig) -> Self {
        AdaptivePolicy {
            throttles: Arc::new(Mutex::new(AdaptiveThrottles::new(config))),
        }
    }

    /// The configuration.
    pub fn config(&self) -> AdaptiveConfig {
        *self.lock().config()
    }

    /// The probability that a request sent to `server` now is refused locally.
    pub fn refusal_probability(&self, server: &ServerAddress) -> f64 {
        let now = crate::runtime::now();
        self.lock()
            .server(server, now)
            .map_or(0.0, |throttle| throttle.refusal_probability(now))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, AdaptiveThrottles> {
        self.throttles
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether an overload retry after a failure on `server` fits the budget.
    fn take_retry(&self, server: Option<&ServerAddress>, now: Instant) -> bool {
        let Some(server) = server else {
            return true;
        };
        self.lock()
            .server(server, now)
            .is_none_or(|throttle| throttle.try_retry(now))
    }
}

impl RetryPolicy for AdaptivePolicy {
    fn decide(&self, context: &AttemptContext<'_>, _rng: &mut dyn RngCore) -> RetryDecision {
        let allowance = &context.allowance;
        if !allowance.spec_retry {
            return RetryDecision::Stop(StopReason::NotRetryable);
        }
        let server = context.history.last().and_then(|r| r.server.as_ref());
        if context.facts.is_overload() && !self.take_retry(server, context.now) {
            return RetryDecision::Stop(StopReason::BudgetExhausted);
        }
        let target = if allowance.avoid_failed_server {
            RetryTarget::AvoidFailedServer
        } else {
            RetryTarget::AnyServer
        };
        RetryDecision::Retry {
            after: allowance.min_delay,
            target,
        }
    }

    fn uses_budget(&self) -> bool {
        // It keeps its own budget; it retries nothing beyond the specifications.
        false
    }

    fn admit(&self, server: &ServerAddress, now: Instant, rng: &mut dyn RngCore) -> Admission {
        let draw = rand::Rng::random::<f64>(rng);
        self.lock()
            .server(server, now)
            .map_or(Admission::Send, |throttle| throttle.admit(now, draw))
    }

    fn observe_reply(&self, server: &ServerAddress, now: Instant, shed: bool) {
        if let Some(throttle) = self.lock().server(server, now) {
            throttle.record_reply(now, shed);
        }
    }
}
