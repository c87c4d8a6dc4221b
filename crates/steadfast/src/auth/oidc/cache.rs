//! The client's OIDC token cache (auth.md, "Credential Caching"): the most recent access token
//! and when the token source was last called. Pure: the caller passes the time and holds the
//! lock that makes "check, call, store" one step.

use std::time::{Duration, Instant};

/// The least time between two calls of a token source (auth.md: at least 100 ms, so that a
/// burst of failing authentications does not hammer the callback or the identity provider).
pub(crate) const MIN_CALL_INTERVAL: Duration = Duration::from_millis(100);

/// The *Client Cache* of auth.md.
#[derive(Default)]
pub(crate) struct TokenCache {
    access_token: Option<String>,
    last_call: Option<Instant>,
}

impl std::fmt::Debug for TokenCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token is a bearer credential: never printed.
        f.debug_struct("TokenCache")
            .field(
                "access_token",
                &self.access_token.as_ref().map(|_| "<redacted>"),
            )
            .field("last_call", &self.last_call)
            .finish()
    }
}

impl TokenCache {
    /// The cached access token, if any.
    pub(crate) fn access_token(&self) -> Option<&str> {
        self.access_token.as_deref()
    }

    /// The earliest time the token source may be called again: `None` when it may be called
    /// at once (never called, or called at least [`MIN_CALL_INTERVAL`] before `now`).
    pub(crate) fn wait_until(&self, now: Instant) -> Option<Instant> {
        let earliest = self.last_call?.checked_add(MIN_CALL_INTERVAL)?;
        (earliest > now).then_some(earliest)
    }

    /// Records that the token source is being called at `at`.
    pub(crate) fn record_call(&mut self, at: Instant) {
        self.last_call = Some(at);
    }

    /// Caches a fresh access token.
    pub(crate) fn store(&mut self, access_token: String) {
        self.access_token = Some(access_token);
    }

    /// Forgets `access_token` if it is still the cached one; a token that another connection
    /// already replaced stays replaced. Returns whether the cache was cleared.
    pub(crate) fn invalidate(&mut self, access_token: &str) -> bool {
        if self.access_token.as_deref() == Some(access_token) {
            self.access_token = None;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalidation_clears_only_the_token_it_names() {
        let mut cache = TokenCache::default();
        cache.store("new".into());
        assert!(
            !cache.invalidate("old"),
            "a stale token must not clear a newer one"
        );
        assert_eq!(cache.access_token(), Some("new"));
        assert!(cache.invalidate("new"));
        assert_eq!(cache.access_token(), None);
    }

    #[test]
    fn calls_are_spaced_by_the_minimum_interval() {
        let start = crate::runtime::now();
        let mut cache = TokenCache::default();
        assert_eq!(
            cache.wait_until(start),
            None,
            "the first call waits for nothing"
        );
        cache.record_call(start);
        let soon = start + Duration::from_millis(30);
        assert_eq!(cache.wait_until(soon), Some(start + MIN_CALL_INTERVAL));
        assert_eq!(cache.wait_until(start + MIN_CALL_INTERVAL), None);
    }
}
