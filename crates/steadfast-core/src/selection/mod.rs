//! Server selection: read preferences, staleness, the latency window, operation-count choice.
//!
//! [`select`] is a pure decision over one topology snapshot: the caller supplies the operation
//! counts and the random number generator, and on [`Selection::NoneSuitable`] waits for the next
//! snapshot itself.

pub mod read_preference;
pub mod rtt;
mod select;
mod serde_impls;
pub mod staleness;
mod suitable;
pub mod window;
mod write_stage;

pub use read_preference::{
    HedgedReadOptions, ReadPreference, ReadPreferenceError, ReadPreferenceMode,
    ReadPreferenceOptions, TagSet,
};
pub use rtt::{MinRoundTripTime, RoundTripTimeEstimator};
pub use select::{
    Candidates, Predicate, Selection, SelectionCriteria, SelectionError, ServerInfo, candidates,
    select,
};
pub use suitable::tag_set_matches;
pub use window::{choose_in_window, within_latency_window};
pub use write_stage::{WRITE_STAGE_ON_SECONDARY_WIRE_VERSION, write_stage_criteria};

#[cfg(test)]
mod tests;
