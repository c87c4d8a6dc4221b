//! The simulated deployment: a standalone, a replica set or a sharded front end whose nodes
//! listen on their own 127.0.0.1 ports and answer like mongod/mongos.

mod control_error;
pub mod errors;
pub mod hello;
mod model;

#[cfg(test)]
mod tests;

pub use control_error::ControlError;
pub use model::{
    DeploymentKind, Health, MemberOptions, Node, NodeIndex, Role, Topology, TopologyVersion,
};
