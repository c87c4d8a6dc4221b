//! A run in time: what the deployment did, what the driver saw, and how the application's
//! operations fared, one under the other on one time axis.

pub(crate) mod render;

pub use render::{MAX_SCATTER_POINTS, RETRY_BIN_MS, THROUGHPUT_BIN_MS, render};

/// Everything a run's report shows. Times are milliseconds from the start of the run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunTimeline {
    /// The page's heading ("steadfast demo").
    pub title: String,
    /// Under the heading: the command, the seed, the deployment.
    pub subtitle: String,
    /// How long the run lasted.
    pub duration_ms: f64,
    /// The members, one row each, in this order.
    pub members: Vec<String>,
    /// Each member's state whenever it changed (the first change of a member sets its initial
    /// state; before it the member is shown as unknown).
    pub member_changes: Vec<StateChange>,
    /// Writes rolled back on a member, as markers on its row.
    pub rollbacks: Vec<Marker>,
    /// The faults injected.
    pub faults: Vec<FaultMark>,
    /// The servers as the driver names them, one row each, in this order.
    pub servers: Vec<String>,
    /// The type the driver gave each server whenever it changed.
    pub server_changes: Vec<StateChange>,
    /// The driver's pool clears, as markers on the server's row.
    pub pool_clears: Vec<Marker>,
    /// Every operation the application ran (downsampled for the scatter when drawn; throughput
    /// and retries are counted from all of them).
    pub operations: Vec<OpPoint>,
    /// The run's invariants and checks.
    pub checks: Vec<CheckRow>,
}

/// A row's new state at a moment.
#[derive(Clone, Debug, PartialEq)]
pub struct StateChange {
    /// When.
    pub at_ms: f64,
    /// The row (a member's or a server's name).
    pub row: String,
    /// The state from then on.
    pub state: State,
}

/// What a member is (as the deployment knows it) or what the driver believes a server is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum State {
    /// Accepts writes.
    Primary,
    /// Replicates from the primary.
    Secondary,
    /// A standalone server.
    Standalone,
    /// A mongos router.
    Router,
    /// Any other replica-set state (arbiter, ghost, other, removed).
    Other,
    /// Killed, or not reachable by the driver.
    Down,
    /// Cut off from the network: connections accepted, never answered.
    Partitioned,
    /// Shutting down.
    ShuttingDown,
    /// Not known (the driver's `Unknown` server type, or before the first observation).
    Unknown,
}

impl State {
    /// The fill colour of the state's bars.
    pub fn colour(self) -> &'static str {
        match self {
            State::Primary => "#2e7d32",
            State::Secondary => "#64b5f6",
            State::Standalone => "#26a69a",
            State::Router => "#7e57c2",
            State::Other => "#ce93d8",
            State::Down => "#424242",
            State::Partitioned => "#ff9800",
            State::ShuttingDown => "#a1887f",
            State::Unknown => "#e0e0e0",
        }
    }

    /// The state's name in legends and tooltips.
    pub fn name(self) -> &'static str {
        match self {
            State::Primary => "primary",
            State::Secondary => "secondary",
            State::Standalone => "standalone",
            State::Router => "router",
            State::Other => "other",
            State::Down => "down",
            State::Partitioned => "partitioned",
            State::ShuttingDown => "shutting down",
            State::Unknown => "unknown",
        }
    }
}

/// A point event on a row (a rollback, a pool clear).
#[derive(Clone, Debug, PartialEq)]
pub struct Marker {
    /// When.
    pub at_ms: f64,
    /// The row it belongs to.
    pub row: String,
    /// What happened, for the tooltip.
    pub label: String,
}

/// One injected fault.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultMark {
    /// When it was injected.
    pub at_ms: f64,
    /// How long it lasted (0 for an instant fault such as a stepdown).
    pub duration_ms: f64,
    /// Its kind (`stepdown`, `partition`...).
    pub kind: String,
    /// What it did, for the tooltip.
    pub description: String,
}

/// One application operation.
#[derive(Clone, Debug, PartialEq)]
pub struct OpPoint {
    /// When it was sent.
    pub at_ms: f64,
    /// How long until its outcome.
    pub latency_ms: f64,
    /// Its kind (`increment`, `read`...).
    pub kind: &'static str,
    /// How it ended.
    pub outcome: Outcome,
    /// How many times the driver retried it.
    pub retries: u32,
}

/// How an operation ended, as the application saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    /// Succeeded at the first attempt.
    Ok,
    /// Succeeded after the driver retried it.
    RetriedOk,
    /// Failed, and the driver knows it was not applied.
    NotApplied,
    /// Failed, and it may or may not have been applied.
    Ambiguous,
    /// Failed, although it was applied.
    AppliedDespiteError,
    /// A read (or other operation without a write's fate) that failed.
    Failed,
}

impl Outcome {
    /// Every outcome, in legend order.
    pub const ALL: [Outcome; 6] = [
        Outcome::Ok,
        Outcome::RetriedOk,
        Outcome::NotApplied,
        Outcome::Ambiguous,
        Outcome::AppliedDespiteError,
        Outcome::Failed,
    ];

    /// The colour of its points.
    pub fn colour(self) -> &'static str {
        match self {
            Outcome::Ok => "#43a047",
            Outcome::RetriedOk => "#1e88e5",
            Outcome::NotApplied => "#fb8c00",
            Outcome::Ambiguous => "#8e24aa",
            Outcome::AppliedDespiteError => "#e53935",
            Outcome::Failed => "#616161",
        }
    }

    /// Its name in the legend.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::RetriedOk => "retried, then ok",
            Outcome::NotApplied => "failed: NotApplied",
            Outcome::Ambiguous => "failed: Ambiguous",
            Outcome::AppliedDespiteError => "failed: Applied",
            Outcome::Failed => "failed (read)",
        }
    }

    /// The CSS class of its points (the legend toggles it).
    pub fn class(self) -> &'static str {
        match self {
            Outcome::Ok => "op-ok",
            Outcome::RetriedOk => "op-retried",
            Outcome::NotApplied => "op-not-applied",
            Outcome::Ambiguous => "op-ambiguous",
            Outcome::AppliedDespiteError => "op-applied",
            Outcome::Failed => "op-failed",
        }
    }
}

/// One invariant or check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckRow {
    /// Its name.
    pub name: String,
    /// Whether it held.
    pub verdict: Verdict,
    /// The counts behind it.
    pub detail: String,
}

/// What became of an invariant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It held.
    Held,
    /// It was violated.
    Violated,
    /// The run could not check it (with the reason in the detail).
    NotChecked,
}

/// Consecutive spans of one row's state: `(start, end, state)`, from its changes (in any
/// order) up to `end_ms`. Before the first change the row is `Unknown`.
pub fn spans(changes: &[&StateChange], end_ms: f64) -> Vec<(f64, f64, State)> {
    let mut sorted: Vec<&StateChange> = changes.to_vec();
    sorted.sort_by(|a, b| a.at_ms.total_cmp(&b.at_ms));
    let mut out = Vec::new();
    let mut start = 0.0;
    let mut state = State::Unknown;
    for change in sorted {
        let at = change.at_ms.clamp(0.0, end_ms);
        if change.state == state {
            continue;
        }
        if at > start {
            out.push((start, at, state));
        }
        start = at;
        state = change.state;
    }
    if end_ms > start {
        out.push((start, end_ms, state));
    }
    out
}
