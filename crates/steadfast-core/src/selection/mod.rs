//! Server selection: read preferences, staleness, the latency window, operation-count choice.

pub mod read_preference;

pub use read_preference::{ReadPreference, ReadPreferenceError, ReadPreferenceMode, TagSet};
