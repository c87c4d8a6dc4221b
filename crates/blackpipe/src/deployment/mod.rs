//! The simulated deployment: a standalone, a replica set or a sharded front end whose nodes
//! listen on their own 127.0.0.1 ports and answer like mongod/mongos.
//!
//! Pure state (the [`Topology`] model, hello construction, error labels, admin command
//! parsing, fail points in [`crate::failpoint`]) lives in plain modules with unit tests; a thin
//! effects layer binds the ports, wakes awaitable hellos through `watch` channels and runs
//! election timers. Handlers never hold a lock across an `.await`.
//!
//! See [`admin`] for the `{blackpipe: ...}` admin commands and the mongod commands the nodes
//! understand.

pub mod admin;
mod awaitable;
mod backend;
mod config;
mod control;
mod control_error;
pub mod errors;
mod handle;
pub mod hello;
mod member;
mod member_options;
mod model;
mod operations;
mod runtime;

#[cfg(test)]
mod tests;

pub use backend::WriteTime;
pub use config::DeploymentConfig;
pub use control_error::ControlError;
pub use handle::{Deployment, serve_forever};
pub use model::{
    DeploymentKind, Health, MemberOptions, Node, NodeIndex, Role, Topology, TopologyVersion,
};
pub use runtime::NodeCounters;
