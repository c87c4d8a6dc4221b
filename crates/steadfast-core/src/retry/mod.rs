//! The retry layer's decisions: which failures may be retried, when, where, and what the
//! application is told when they are not.
//!
//! One fixed orchestrator ([`RetryState`]) enforces the MongoDB specifications — retryable
//! writes (same `txnNumber` on every attempt, the `RetryableWriteError` label or the pre-4.4 code
//! list, `NoWritesPerformed` choosing the error to report), retryable reads, and client
//! backpressure (`SystemOverloadedError` + `RetryableError`, `maxAdaptiveRetries`, the jittered
//! exponential backoff honouring `baseBackoffMS`). A pluggable [`RetryPolicy`] then decides
//! within those bounds, following the Couchbase SDK's retry design: every failure carries a
//! [`RetryReason`] and an [`Execution`] that says whether the request could have run, so a
//! policy can retry what is safe and nothing else. [`SpecPolicy`] (the default), [`BestEffort`]
//! and [`FailFast`] ship here; an optional [`RetryBudget`] (off unless the application turns it
//! on) keeps retries from turning an overload into a storm. Time and randomness are arguments, so every rule is tested without sleeping.

pub mod adaptive;
pub mod backoff;
pub mod budget;
pub mod classify;
pub mod policy;
pub mod session;
pub mod state;
mod window;

pub use adaptive::{AdaptiveConfig, AdaptiveThrottle, AdaptiveThrottles, Admission};
pub use budget::{RetryBudget, RetryBudgetConfig};
pub use classify::{Execution, FailureFacts, FailureKind, RetryReason, Sent, labels};
pub use policy::{
    Allowance, AttemptContext, BestEffort, FailFast, RetryDecision, RetryPolicy, RetryTarget,
    SpecPolicy, StopReason,
};
pub use session::{AttemptFailure, FinalError, RetrySession};
pub use state::{
    AttemptRecord, Observed, OperationKind, OperationProfile, Outcome, RetryState, Timing,
};

#[cfg(test)]
mod report_tests;
#[cfg(test)]
mod tests;
