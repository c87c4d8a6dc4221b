//! A member's capacity: how much work it admits before it sheds load the way mongod's ingress
//! admission control and ingress request rate limiter do.
//!
//! # What it models
//!
//! - **A rate** (`opsPerSec`): a token bucket refilled from the deployment's clock at that rate,
//!   holding at most `burstSecs` worth of it (at least one operation), full when configured, as
//!   mongod's `ingressRequestRateLimiterRatePerSec` with its burst in seconds of the rate.
//!   Each admitted command takes one token.
//! - **A concurrency** (`concurrent`): how many commands may be in progress on the member at
//!   once, from admission until the reply is built (a slow command holds its place for as long
//!   as it runs).
//! - **The cost of saying no.** A rejected command is not free for a real server: it parses the
//!   message, checks the limiter and builds an error. Each rejection takes `rejectCost` (a
//!   fraction of one admitted command, default 0.05) from the same token bucket, which may go
//!   into debt down to minus one burst: a client that storms a saturated member with retries
//!   leaves less for admitted work, down to none, as congestion collapse does. With a
//!   concurrency limit alone there is no bucket to take it from: the cost is only counted.
//!
//! Past either limit the member answers `IngressRequestRateLimitExceeded` (462) with the labels
//! `SystemOverloadedError` and `RetryableError`, and `baseBackoffMS` when configured: the same
//! reply as the random `overload` fault.
//!
//! # Which commands count
//!
//! Every command a client sends, except those the client-backpressure specification tells
//! drivers never to retry on overload, which mongod's admission control lets through so that a
//! loaded server can still be monitored and connected to: the handshake and monitoring
//! (`hello`, `isMaster`, and `ping`, which RTT monitors and health checks send), and
//! authentication (`saslStart`, `saslContinue`, `authenticate`, `getnonce`, `logout`). The
//! `{blackpipe: ...}` and `configureFailPoint` admin commands are never limited either: they are
//! the test's hands on the server, not load.
//!
//! # Ingress order
//!
//! ingress (partition, slowness, shutdown) -> authentication gate -> admin commands ->
//! the `overload` fault (random rejection, no cost) -> the capacity check -> `failCommand` ->
//! the rest of the pipeline. A command the `overload` fault rejects never reaches the capacity
//! check, so it is neither admitted nor counted as a capacity rejection.
//!
//! # What it does not model
//!
//! - Queueing: mongod's ingress admission control makes a command wait for a ticket; blackpipe
//!   rejects at once, as a queue with no room would. Latency under load comes from
//!   `slowCommands`, not from the capacity.
//! - Work proportional to the command: every admitted command costs one token, whatever it
//!   does (a 100,000-document insert costs what a point read costs).
//! - Connection establishment limits (`maxIncomingConnections`, connection rate limits).
//! - Shared capacity: each member has its own budget; reads on secondaries do not load the
//!   primary.
//!
//! Deterministic: no randomness, and time only from the caller (the deployment passes tokio's
//! clock, so a test with a paused clock controls the refill). State is a few numbers per member.
//!
//! # Example
//!
//! A primary that admits 1,000 commands per second, with a backoff hint in its rejections,
//! then lifted after reading its counters:
//!
//! ```
//! use blackpipe::deployment::{Capacity, Deployment, DeploymentConfig};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let deployment = Deployment::start(DeploymentConfig::replica_set(3)).await?;
//! let capacity = Capacity::unlimited()
//!     .with_ops_per_sec(1000.0)?
//!     .with_base_backoff_ms(50);
//! deployment.set_capacity(0, Some(capacity))?;
//! // ... run the workload ...
//! let stats = deployment.capacity_stats(0)?;
//! assert_eq!((stats.admitted, stats.rejected), (0, 0));
//! deployment.set_capacity(0, None)?;
//! # Ok(())
//! # }
//! ```
//!
//! The same over the wire, on any member's `admin` database:
//! `{blackpipe: "capacity", member: 0, opsPerSec: 1000, baseBackoffMS: 50}`, then
//! `{blackpipe: "capacityStats", member: 0}` and `{blackpipe: "capacity", member: 0, off: true}`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use bson::{Bson, Document, doc};

use super::control_error::ControlError;
use crate::failpoint::OverloadError;

/// What a rejection costs by default, as a fraction of one admitted command.
pub const DEFAULT_REJECT_COST: f64 = 0.05;
/// How much of the rate the bucket holds by default.
pub const DEFAULT_BURST: Duration = Duration::from_millis(100);
/// The highest rate accepted, in operations per second.
pub const MAX_OPS_PER_SEC: f64 = 1.0e9;
/// The highest concurrency limit accepted.
pub const MAX_CONCURRENT: u32 = 1_000_000;
/// The longest burst accepted.
pub const MAX_BURST: Duration = Duration::from_secs(3600);

/// A member's capacity: a rate and/or a concurrency limit, what a rejection costs, and the
/// backoff the member suggests. [`Capacity::unlimited`] admits everything (and counts it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Capacity {
    ops_per_sec: Option<f64>,
    concurrent: Option<u32>,
    reject_cost: f64,
    burst: Duration,
    base_backoff_ms: Option<u32>,
}

impl Default for Capacity {
    fn default() -> Self {
        Self::unlimited()
    }
}

fn bad(message: impl Into<String>) -> ControlError {
    ControlError::BadArgument(message.into())
}

impl Capacity {
    /// No limit: every command is admitted (and counted).
    pub const fn unlimited() -> Self {
        Self {
            ops_per_sec: None,
            concurrent: None,
            reject_cost: DEFAULT_REJECT_COST,
            burst: DEFAULT_BURST,
            base_backoff_ms: None,
        }
    }

    /// Admits at most `rate` commands per second (0: no rate limit).
    ///
    /// # Errors
    ///
    /// `BadArgument` for a negative, non-finite or larger than [`MAX_OPS_PER_SEC`] rate.
    pub fn with_ops_per_sec(mut self, rate: f64) -> Result<Self, ControlError> {
        if !(rate.is_finite() && (0.0..=MAX_OPS_PER_SEC).contains(&rate)) {
            return Err(bad(format!(
                "'opsPerSec' must be a number from 0 to {MAX_OPS_PER_SEC}"
            )));
        }
        self.ops_per_sec = (rate > 0.0).then_some(rate);
        Ok(self)
    }

    /// Admits at most `limit` commands in progress at once (0: no concurrency limit).
    ///
    /// # Errors
    ///
    /// `BadArgument` above [`MAX_CONCURRENT`].
    pub fn with_concurrent(mut self, limit: u32) -> Result<Self, ControlError> {
        if limit > MAX_CONCURRENT {
            return Err(bad(format!(
                "'concurrent' must be an integer from 0 to {MAX_CONCURRENT}"
            )));
        }
        self.concurrent = (limit > 0).then_some(limit);
        Ok(self)
    }

    /// Each rejection takes `cost` (a fraction of one admitted command) from the rate budget.
    ///
    /// # Errors
    ///
    /// `BadArgument` outside 0..=1 or for NaN.
    pub fn with_reject_cost(mut self, cost: f64) -> Result<Self, ControlError> {
        if !(0.0..=1.0).contains(&cost) {
            return Err(bad("'rejectCost' must be a number from 0 to 1"));
        }
        self.reject_cost = cost;
        Ok(self)
    }

    /// The bucket holds `burst` worth of the rate (at least one command).
    ///
    /// # Errors
    ///
    /// `BadArgument` for zero or more than [`MAX_BURST`].
    pub fn with_burst(mut self, burst: Duration) -> Result<Self, ControlError> {
        if burst.is_zero() || burst > MAX_BURST {
            return Err(bad(format!(
                "'burstSecs' must be more than 0 and at most {}",
                MAX_BURST.as_secs()
            )));
        }
        self.burst = burst;
        Ok(self)
    }

    /// Rejections carry `baseBackoffMS: ms` (0: no hint).
    #[must_use]
    pub fn with_base_backoff_ms(mut self, ms: u32) -> Self {
        self.base_backoff_ms = (ms > 0).then_some(ms);
        self
    }

    /// The rate limit, if any.
    pub fn ops_per_sec(&self) -> Option<f64> {
        self.ops_per_sec
    }

    /// The concurrency limit, if any.
    pub fn concurrent(&self) -> Option<u32> {
        self.concurrent
    }

    /// What one rejection costs, as a fraction of one admitted command.
    pub fn reject_cost(&self) -> f64 {
        self.reject_cost
    }

    /// How much of the rate the bucket holds.
    pub fn burst(&self) -> Duration {
        self.burst
    }

    /// The `baseBackoffMS` hint rejections carry, if any.
    pub fn base_backoff_ms(&self) -> Option<u32> {
        self.base_backoff_ms
    }

    /// The bucket's size in commands: `burst` of the rate, at least one.
    fn bucket_size(&self, rate: f64) -> f64 {
        (rate * self.burst.as_secs_f64()).max(1.0)
    }

    /// The capacity as a document (the `capacity` field of `capacityStats`).
    pub fn to_document(&self) -> Document {
        let mut document = doc! {
            "opsPerSec": self.ops_per_sec.unwrap_or(0.0),
            "concurrent": i64::from(self.concurrent.unwrap_or(0)),
            "rejectCost": self.reject_cost,
            "burstSecs": self.burst.as_secs_f64(),
        };
        if let Some(ms) = self.base_backoff_ms {
            document.insert("baseBackoffMS", i64::from(ms));
        }
        document
    }
}

/// A `{blackpipe: "capacity", ...}` command's change.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CapacityChange {
    /// Install this capacity (its counters start from zero).
    Set(Capacity),
    /// Remove the capacity (`off: true`); the counters keep their values.
    Off,
}

/// The fields `{blackpipe: "capacity"}` reads; anything else that is not a generic command
/// field (`$db`, `lsid`...) is refused, so a misspelt limit cannot silently mean "unlimited".
const CAPACITY_FIELDS: [&str; 8] = [
    "blackpipe",
    "member",
    "opsPerSec",
    "concurrent",
    "rejectCost",
    "burstSecs",
    "baseBackoffMS",
    "off",
];

/// Fields a driver adds to any command.
fn is_generic_field(name: &str) -> bool {
    name.starts_with('$')
        || matches!(
            name,
            "lsid" | "txnNumber" | "apiVersion" | "apiStrict" | "apiDeprecationErrors" | "comment"
        )
}

/// A finite number (int32, int64 or double), or `None` for other types.
fn number(value: &Bson) -> Option<f64> {
    match value {
        Bson::Int32(v) => Some(f64::from(*v)),
        // Precision loss above 2^53 is irrelevant: such values are refused by range.
        #[allow(clippy::cast_precision_loss)]
        Bson::Int64(v) => Some(*v as f64),
        Bson::Double(v) => Some(*v),
        _ => None,
    }
}

fn field_number(command: &Document, field: &str) -> Result<Option<f64>, ControlError> {
    match command.get(field) {
        None | Some(Bson::Null) => Ok(None),
        Some(value) => number(value)
            .map(Some)
            .ok_or_else(|| bad(format!("'{field}' must be a number"))),
    }
}

/// An integral value of `field` in 0..=`max`.
fn field_u32(command: &Document, field: &str, max: u32) -> Result<Option<u32>, ControlError> {
    let Some(value) = field_number(command, field)? else {
        return Ok(None);
    };
    if value.fract() != 0.0 || !(0.0..=f64::from(max)).contains(&value) {
        return Err(bad(format!("'{field}' must be an integer from 0 to {max}")));
    }
    // Checked above: integral and within u32.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok(Some(value as u32))
}

/// Parses the fields of `{blackpipe: "capacity", opsPerSec?, concurrent?, rejectCost?,
/// burstSecs?, baseBackoffMS?, off?}` (`member` is the admin command's).
///
/// # Errors
///
/// `BadArgument` for an unknown field, a value of the wrong type, or one out of range.
pub fn parse_change(command: &Document) -> Result<CapacityChange, ControlError> {
    if let Some(unknown) = command
        .keys()
        .find(|key| !CAPACITY_FIELDS.contains(&key.as_str()) && !is_generic_field(key))
    {
        return Err(bad(format!("unknown 'capacity' field '{unknown}'")));
    }
    match command.get("off") {
        None | Some(Bson::Null | Bson::Boolean(false)) => {}
        Some(Bson::Boolean(true)) => return Ok(CapacityChange::Off),
        Some(_) => return Err(bad("'off' must be a boolean")),
    }
    let mut capacity = Capacity::unlimited();
    if let Some(rate) = field_number(command, "opsPerSec")? {
        capacity = capacity.with_ops_per_sec(rate)?;
    }
    if let Some(limit) = field_u32(command, "concurrent", MAX_CONCURRENT)? {
        capacity = capacity.with_concurrent(limit)?;
    }
    if let Some(cost) = field_number(command, "rejectCost")? {
        capacity = capacity.with_reject_cost(cost)?;
    }
    if let Some(secs) = field_number(command, "burstSecs")? {
        let burst = Duration::try_from_secs_f64(secs)
            .map_err(|_| bad("'burstSecs' must be a positive number"))?;
        capacity = capacity.with_burst(burst)?;
    }
    let max_backoff = u32::try_from(i32::MAX).unwrap_or(u32::MAX);
    if let Some(ms) = field_u32(command, "baseBackoffMS", max_backoff)? {
        capacity = capacity.with_base_backoff_ms(ms);
    }
    Ok(CapacityChange::Set(capacity))
}

/// What a member's capacity did since it was last configured.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[non_exhaustive]
pub struct CapacityStats {
    /// Commands admitted under a capacity.
    pub admitted: u64,
    /// Commands rejected with 462 by the capacity (not by the `overload` fault).
    pub rejected: u64,
    /// What the rejections cost, in admitted commands (`rejected` times `rejectCost`).
    pub rejection_cost: f64,
    /// Limited commands in progress now.
    pub in_progress: u32,
}

impl CapacityStats {
    /// The counters as `{admitted, rejected, rejectionCost, inProgress}`.
    pub fn to_document(&self) -> Document {
        doc! {
            "admitted": i64::try_from(self.admitted).unwrap_or(i64::MAX),
            "rejected": i64::try_from(self.rejected).unwrap_or(i64::MAX),
            "rejectionCost": self.rejection_cost,
            "inProgress": i64::from(self.in_progress),
        }
    }
}

/// One member's capacity at run time: its limits, token bucket, commands in progress and
/// counters. Decisions take the time as an argument.
#[derive(Debug)]
pub(crate) struct MemberCapacity {
    limits: Option<Capacity>,
    /// Tokens left; negative when rejections ran the bucket into debt.
    tokens: f64,
    refilled_at: Instant,
    /// Counted for every limited command, with or without a capacity, so that a limit set
    /// while commands run sees them.
    in_progress: Arc<AtomicU32>,
    stats: CapacityStats,
}

/// An admitted command's place: dropping it (the command finished, or its connection closed)
/// frees the place for the concurrency limit.
#[derive(Debug)]
pub(crate) struct Admission {
    in_progress: Arc<AtomicU32>,
}

impl Drop for Admission {
    fn drop(&mut self) {
        // Never below zero: every Admission incremented it once.
        let _ = self
            .in_progress
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }
}

impl MemberCapacity {
    /// A member with `limits` (or none), its bucket full at `now`.
    pub(crate) fn new(limits: Option<Capacity>, now: Instant) -> Self {
        let mut capacity = Self {
            limits: None,
            tokens: 0.0,
            refilled_at: now,
            in_progress: Arc::new(AtomicU32::new(0)),
            stats: CapacityStats::default(),
        };
        capacity.configure(limits.map_or(CapacityChange::Off, CapacityChange::Set), now);
        capacity
    }

    /// Installs a capacity (bucket full, counters from zero) or removes it (counters kept).
    pub(crate) fn configure(&mut self, change: CapacityChange, now: Instant) {
        match change {
            CapacityChange::Set(limits) => {
                self.tokens = limits
                    .ops_per_sec
                    .map_or(0.0, |rate| limits.bucket_size(rate));
                self.refilled_at = now;
                self.stats = CapacityStats::default();
                self.limits = Some(limits);
            }
            CapacityChange::Off => self.limits = None,
        }
    }

    /// The installed capacity, if any.
    pub(crate) fn limits(&self) -> Option<Capacity> {
        self.limits
    }

    /// The counters, with the commands in progress now.
    pub(crate) fn stats(&self) -> CapacityStats {
        CapacityStats {
            in_progress: self.in_progress.load(Ordering::Acquire),
            ..self.stats
        }
    }

    fn refill(&mut self, rate: f64, size: f64, now: Instant) {
        if now > self.refilled_at {
            let elapsed = now.duration_since(self.refilled_at).as_secs_f64();
            self.tokens = (self.tokens + elapsed * rate).min(size);
            self.refilled_at = now;
        }
    }

    fn enter(&self) -> Admission {
        // A member never has u32::MAX commands in progress (connections are bounded); if it
        // did, the count saturates rather than wraps.
        let _ = self
            .in_progress
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_add(1));
        Admission {
            in_progress: Arc::clone(&self.in_progress),
        }
    }

    /// Admits a command arriving at `now`, or rejects it as overloaded (charging the rejection
    /// to the rate budget).
    pub(crate) fn admit(&mut self, now: Instant) -> Result<Admission, OverloadError> {
        let Some(limits) = self.limits else {
            return Ok(self.enter());
        };
        let bucket = limits.ops_per_sec.map(|rate| {
            let size = limits.bucket_size(rate);
            self.refill(rate, size, now);
            size
        });
        let place_free = limits
            .concurrent
            .is_none_or(|limit| self.in_progress.load(Ordering::Acquire) < limit);
        let token = bucket.is_none() || self.tokens >= 1.0;
        if place_free && token {
            if bucket.is_some() {
                self.tokens -= 1.0;
            }
            self.stats.admitted = self.stats.admitted.saturating_add(1);
            return Ok(self.enter());
        }
        if let Some(size) = bucket {
            self.tokens = (self.tokens - limits.reject_cost).max(-size);
        }
        self.stats.rejected = self.stats.rejected.saturating_add(1);
        self.stats.rejection_cost += limits.reject_cost;
        Err(OverloadError {
            base_backoff_ms: limits.base_backoff_ms.map(i64::from),
        })
    }
}

/// Whether a command bypasses the capacity (see the module documentation for why).
pub(crate) fn is_exempt(name: &str) -> bool {
    matches!(
        name,
        "hello"
            | "isMaster"
            | "ping"
            | "saslStart"
            | "saslContinue"
            | "authenticate"
            | "getnonce"
            | "logout"
            | "blackpipe"
            | "configureFailPoint"
    )
}

/// The reply of `{blackpipe: "capacityStats"}`: the totals over `members` at the top level
/// (`admitted`, `rejected`, `rejectionCost`) and each member's counters and capacity.
pub(crate) fn stats_reply(
    members: &[(usize, String, Option<Capacity>, CapacityStats)],
) -> Document {
    let mut total = CapacityStats::default();
    let mut listed = Vec::with_capacity(members.len());
    for (index, host, capacity, stats) in members {
        total.admitted = total.admitted.saturating_add(stats.admitted);
        total.rejected = total.rejected.saturating_add(stats.rejected);
        total.rejection_cost += stats.rejection_cost;
        total.in_progress = total.in_progress.saturating_add(stats.in_progress);
        let mut entry = doc! {
            "member": i64::try_from(*index).unwrap_or(i64::MAX),
            "host": host.as_str(),
        };
        entry.extend(stats.to_document());
        entry.insert(
            "capacity",
            capacity.map_or(Bson::Null, |c| Bson::Document(c.to_document())),
        );
        listed.push(Bson::Document(entry));
    }
    let mut reply = total.to_document();
    reply.insert("members", listed);
    reply
}
