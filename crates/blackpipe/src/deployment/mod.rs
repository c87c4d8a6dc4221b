//! The simulated deployment: a standalone, a replica set or a sharded front end whose nodes
//! listen on their own 127.0.0.1 ports and answer like mongod/mongos.
//!
//! Pure state (the [`Topology`] model, hello construction, error labels, admin command
//! parsing, fail points in [`crate::failpoint`]) lives in plain modules with unit tests; a thin
//! effects layer binds the ports, wakes awaitable hellos through `watch` channels and runs
//! election timers. Handlers never hold a lock across an `.await`.
//!
//! See [`admin`] for the `{blackpipe: ...}` admin commands and the mongod commands the nodes
//! understand, and [`crate::failpoint`] for `configureFailPoint`.
//!
//! # Example
//!
//! A three-member replica set whose primary steps down; with automatic failover (the default)
//! another member is elected, and every node's `topologyVersion` moves, waking the streaming
//! monitors of any connected driver.
//!
//! ```
//! use std::time::Duration;
//!
//! use blackpipe::deployment::{Deployment, DeploymentConfig};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let deployment = Deployment::start(DeploymentConfig::replica_set(3)).await?;
//! assert!(deployment.uri().ends_with("?replicaSet=rs0"));
//! assert_eq!(deployment.primary(), Some(0));
//!
//! deployment.step_down(Duration::from_secs(60))?;
//! let new_primary = deployment.wait_for_primary().await;
//! assert_ne!(new_primary, 0, "the stepped-down member sits out the election");
//! assert_eq!(deployment.topology().term(), 2);
//! # Ok(())
//! # }
//! ```

mod auth_gate;
mod awaitable;
mod backend;
mod balanced;
pub mod capacity;
mod change_streams;
mod config;
mod control;
mod control_error;
mod effects;
pub mod errors;
pub mod hello;
mod ingress;
mod load_balanced;
mod max_time;
mod member;
mod member_options;
mod model;
mod oidc_gate;
mod router_txn;
mod search_gate;
mod stable_api;
mod standalone;
mod state;
mod write_concern;

#[cfg(test)]
mod tests;

pub use backend::WriteTime;
pub use capacity::{Capacity, CapacityChange, CapacityStats};
pub use config::DeploymentConfig;
pub use control::admin;
pub use control_error::ControlError;
pub use effects::handle::{Deployment, serve_forever, serve_forever_then};
pub use effects::load_balancer;
pub use model::{
    DeploymentKind, Health, MAX_MEMBERS, MAX_NODE_SLOTS, MAX_VOTING_MEMBERS, MemberOptions, Node,
    NodeIndex, Role, Topology, TopologyVersion,
};
pub use stable_api::server_parameters;
pub use state::NodeCounters;
