//! Server and topology descriptions: immutable values describing what the driver knows.

mod hello;
pub mod public;
pub mod server;
pub mod topology;

pub use hello::topology_version_of;
pub use server::{
    MAX_WIRE_VERSION, MIN_SERVER_VERSION, MIN_WIRE_VERSION, ServerDescription, ServerType,
    TopologyVersion,
};
pub use topology::{TopologyConfig, TopologyConfigError, TopologyDescription, TopologyType};

#[cfg(test)]
mod tests;
