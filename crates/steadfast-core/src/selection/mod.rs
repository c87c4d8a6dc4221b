//! Server selection: read preferences, staleness, the latency window, operation-count choice.

pub mod read_preference;
pub mod rtt;
pub mod staleness;
pub mod window;

pub use read_preference::{ReadPreference, ReadPreferenceError, ReadPreferenceMode, TagSet};
pub use rtt::{MinRoundTripTime, RoundTripTimeEstimator};
pub use window::{DEFAULT_LOCAL_THRESHOLD, choose_in_window, within_latency_window};
