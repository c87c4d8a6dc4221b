//! A member's load shedding at ingress, in mongod's order: the random `overload` fault (the
//! rate limiter firing regardless of load, a fault the torture plays), then the member's
//! [capacity](super::capacity). Both reject with `IngressRequestRateLimitExceeded` (462).
//! Runs after the authentication gate and the admin commands, before `failCommand`.

use super::capacity::{self, Admission};
use super::member::NodeContext;
use super::state::lock;
use crate::failpoint::OverloadError;

/// Admits the command `name` (hello-family when `is_hello`), or rejects it as overloaded.
/// `Ok(Some(_))` holds the command's place under the capacity until dropped; `Ok(None)` for
/// commands the capacity does not count.
pub(crate) fn admit(
    node: &NodeContext,
    name: &str,
    is_hello: bool,
) -> Result<Option<Admission>, OverloadError> {
    if is_hello {
        return Ok(None);
    }
    let exempt = capacity::is_exempt(name);
    // Read before the lock: the clock the deployment runs on (tokio's, pausable in tests).
    let now = tokio::time::Instant::now().into_std();
    let mut state = lock(&node.inner.state);
    let Some(slot) = state.slots.get_mut(node.index) else {
        return Ok(None);
    };
    if let Some(overload) = slot.overload.as_mut() {
        if let Some(rejection) = overload.evaluate(&mut *lock(&node.inner.rng)) {
            return Err(rejection);
        }
    }
    if exempt {
        return Ok(None);
    }
    slot.capacity.admit(now).map(Some)
}
