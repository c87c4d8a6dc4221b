//! # Retries: which operations are retried, when, and what the application sees
//!
//! steadfast retries in one place, the executor, with one fixed orchestrator that enforces the
//! MongoDB specifications and a pluggable [`RetryPolicy`] that may only narrow or delay what
//! the orchestrator allows — never widen it to something unsafe.
//!
//! ## What is retried (the default, [`SpecPolicy`])
//!
//! | operation | retried on | how many times |
//! |---|---|---|
//! | `insert_one`, `insert_many`, `update_one`, `replace_one`, `delete_one`, `find_one_and_*`, bulk writes whose batches hold no multi-document statement (retryable writes) | network errors, a cleared pool, and errors labelled `RetryableWriteError` (by servers from 4.4; before 4.4 the driver labels NotWritablePrimary, ShutdownInProgress, HostUnreachable and the other codes of the retryable-writes list, also in a write concern error) | once, or as long as `timeoutMS` leaves time |
//! | `find`, `aggregate` (without `$out`/`$merge`), `count_documents`, `distinct`, listings (retryable reads) | network errors, a cleared pool, the retryable codes above and ReadConcernMajorityNotAvailableYet | once, or as long as `timeoutMS` leaves time |
//! | every command, `update_many`, `delete_many`, getMore and `run_command` included | overload errors labelled both `SystemOverloadedError` and `RetryableError` (`run_command` only with both retryReads and retryWrites on) | up to `maxAdaptiveRetries` (2), with the backoff `jitter × min(10 s, base × 2^retry)`, `base` being the server's `baseBackoffMS` or 100 ms |
//!
//! Never retried: unacknowledged writes (`w: 0`, which carry no session), writes with
//! `retryWrites=false`, writes on a server without sessions (a standalone), multi-document
//! writes and other commands (except overload errors), getMore (except overload errors), and
//! every error that says the request itself is wrong. A retryable write carries one
//! `txnNumber` in its session; every retry resends the same one, so the server applies the
//! write once and answers a resend with the stored reply. Once an overload error was seen, no
//! retry of any kind goes beyond `maxAdaptiveRetries`.
//!
//! Each retry selects a server again. In a sharded cluster (and, with
//! `enableOverloadRetargeting`, after an overload error) the failed server is deprioritized, so
//! the retry goes to another mongos when there is one. Before a retry the driver applies SDAM's
//! error handling: a node that stepped down is marked Unknown and the retry waits for the new
//! primary (up to serverSelectionTimeoutMS). A delay never outlives the operation's deadline:
//! when it would, the operation stops at once.
//!
//! ## Policies and the retry budget
//!
//! Policies are set per client ([`ClientBuilder::retry_policy`](crate::ClientBuilder::retry_policy)),
//! database and collection (`retry_policy` in [`DatabaseOptions`](crate::options::DatabaseOptions)
//! and [`CollectionOptions`](crate::options::CollectionOptions)) and operation; the most
//! specific one wins.
//!
//! - [`SpecPolicy`] (default): exactly the table above.
//! - [`BestEffort`]: additionally retries every *safe* transient failure until the deadline
//!   (timeoutMS, or [`BestEffort::max_duration`] without one) — a request that was never sent,
//!   refused before it ran, deduplicated by the server (a retryable write), or idempotent (a
//!   read). Requests never sent follow the 1/10/50/100/500/1000 ms ladder; the others a
//!   jittered exponential backoff. A non-idempotent write that may have run is never resent.
//! - [`FailFast`]: never retries; every error reaches the application at once.
//! - [`AdaptivePolicy`]: the specifications' retries, plus client-side adaptive throttling: once
//!   a server sheds load, new requests to it are refused locally (never sent) with a probability
//!   that grows with the share of rejections, and overload retries are held to a fraction of
//!   first attempts. For applications that must keep goodput up when demand exceeds capacity;
//!   see its documentation for what it guarantees.
//!
//! A retry budget is off by default: the client makes every retry the specifications allow and
//! no more. Turned on with [`ClientBuilder::retry_budget`](crate::ClientBuilder::retry_budget),
//! one budget shared by the client's operations caps the retries a policy makes beyond the
//! specifications, and overload retries, at a share of the traffic
//! ([`RetryBudgetConfig::default`]: 10% plus 10 retries per second), so that a fleet of clients
//! does not turn an overload into a retry storm. (The client-backpressure specification defers
//! its own token bucket; this budget is steadfast's option, not part of the default.)
//!
//! ## What the application sees
//!
//! - A success, if any attempt succeeded. Each retry is visible as a
//!   [`RetryEvent`](crate::event::RetryEvent), a `tracing` event on the `steadfast::retry`
//!   target (operation, attempt, reason, delay, server), and a failed plus a new started
//!   command event; every attempt runs in a `command` span inside the operation's
//!   `operation` span (target `steadfast::operation`, OpenTelemetry field names; see the
//!   README).
//! - Otherwise one [`Error`](crate::Error), described in the [`error`](crate::error) module:
//!   the history of attempts, the outcome of the write
//!   ([`Outcome::NotApplied`], [`Outcome::Applied`], [`Outcome::PartlyApplied`] or
//!   [`Outcome::Ambiguous`], with the statement-by-statement
//!   [`partial_write`](crate::Error::partial_write) of a write) and its
//!   [`ErrorClass`](crate::error::ErrorClass): a transient error the driver did not retry, a
//!   persistent outage, or a command error.

pub use crate::adaptive::AdaptivePolicy;
pub use steadfast_core::retry::{
    AdaptiveConfig, Admission, Allowance, AttemptContext, BestEffort, Execution, FailFast,
    FailureFacts, FailureKind, Outcome, RetryBudgetConfig, RetryDecision, RetryPolicy, RetryReason,
    RetryTarget, Sent, SpecPolicy, StopReason,
};
