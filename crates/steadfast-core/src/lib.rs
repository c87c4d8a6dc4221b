//! Pure decisions of the steadfast MongoDB driver.
//!
//! Nothing in this crate performs I/O, reads a clock, sleeps, spawns a task or draws global
//! randomness: time arrives as an `Instant` argument and randomness as `&mut impl Rng`. Every
//! decision is a value (`TopologyChange`, `SdamActions`, `Selection`, `RetryDecision`) that the
//! async `steadfast` crate carries out. That keeps every rule of the MongoDB specifications unit
//! testable without a runtime, and lets the official JSON suites run against this crate alone.
#![cfg_attr(
    test,
    allow(
        clippy::disallowed_methods,
        reason = "tests drive the clock, tasks and randomness themselves"
    )
)]

pub mod address;
pub mod change_stream;
pub mod codes;
pub mod deadline;
pub mod description;
pub mod labels;
pub mod options;
pub mod pool;
pub mod reply;
pub mod retry;
pub mod sdam;
pub mod selection;
#[doc(hidden)]
pub mod serde_util;
pub mod session;

pub use address::ServerAddress;
pub use deadline::{Deadline, IoLimit, NotEnoughTime};
pub use description::{ServerDescription, ServerType, TopologyDescription, TopologyType};
pub use labels::{ErrorLabels, Label};
pub use options::{ClientOptions, ConnectionString, OptionsError};
pub use reply::reply_is_ok;
