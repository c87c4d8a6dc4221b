//! The demo's retry policy: the default ([`SpecPolicy`]) until the overload burst that shows
//! the adaptive policy switches it to [`AdaptivePolicy`], then back. One client, one workload:
//! the two bursts differ only in the policy.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use rand::RngCore;
use steadfast::ServerAddress;
use steadfast::retries::{
    AdaptivePolicy, Admission, AttemptContext, RetryDecision, RetryPolicy, SpecPolicy,
};

/// [`SpecPolicy`], or [`AdaptivePolicy`] while switched on.
#[derive(Debug, Default)]
pub(crate) struct SwitchablePolicy {
    adaptive_on: AtomicBool,
    adaptive: AdaptivePolicy,
}

impl SwitchablePolicy {
    /// Turns the adaptive policy on or off. It observes replies only while on, so each time
    /// it starts from what it sees then, not from an earlier burst.
    pub(crate) fn set_adaptive(&self, on: bool) {
        self.adaptive_on.store(on, Ordering::Release);
    }

    fn adaptive(&self) -> Option<&AdaptivePolicy> {
        self.adaptive_on
            .load(Ordering::Acquire)
            .then_some(&self.adaptive)
    }
}

impl RetryPolicy for SwitchablePolicy {
    fn decide(&self, context: &AttemptContext<'_>, rng: &mut dyn RngCore) -> RetryDecision {
        match self.adaptive() {
            Some(adaptive) => adaptive.decide(context, rng),
            None => SpecPolicy.decide(context, rng),
        }
    }

    fn uses_budget(&self) -> bool {
        self.adaptive()
            .map_or_else(|| SpecPolicy.uses_budget(), RetryPolicy::uses_budget)
    }

    fn admit(&self, server: &ServerAddress, now: Instant, rng: &mut dyn RngCore) -> Admission {
        match self.adaptive() {
            Some(adaptive) => adaptive.admit(server, now, rng),
            None => Admission::Send,
        }
    }

    fn observe_reply(&self, server: &ServerAddress, now: Instant, shed: bool) {
        if let Some(adaptive) = self.adaptive() {
            adaptive.observe_reply(server, now, shed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shed_everything(policy: &SwitchablePolicy, server: &ServerAddress, now: Instant) {
        for _ in 0..100 {
            policy.observe_reply(server, now, true);
        }
    }

    #[test]
    fn only_the_switched_on_policy_sees_replies_and_throttles() {
        let policy = SwitchablePolicy::default();
        let server = ServerAddress::parse("primary:27017").expect("an address");
        let now = Instant::now();
        // Off: the default policy, which never refuses; the adaptive one learns nothing.
        shed_everything(&policy, &server, now);
        let mut rng = rand::rng();
        assert!(matches!(
            policy.admit(&server, now, &mut rng),
            Admission::Send
        ));
        policy.set_adaptive(true);
        assert_eq!(policy.adaptive.refusal_probability(&server), 0.0);
        // On: rejections make it refuse before sending.
        shed_everything(&policy, &server, now);
        assert!(policy.adaptive.refusal_probability(&server) > 0.5);
        policy.set_adaptive(false);
        assert!(matches!(
            policy.admit(&server, now, &mut rng),
            Admission::Send
        ));
    }
}
