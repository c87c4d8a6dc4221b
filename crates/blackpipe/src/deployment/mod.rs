//! The simulated deployment: a standalone, a replica set or a sharded front end whose nodes
//! listen on their own 127.0.0.1 ports and answer like mongod/mongos.
//!
//! The deployment reads in three rooms over a foot:
//!
//! - `node/`: what one member does with a request. A context (the view of the deployment a
//!   request needs, and the reply helpers), then gates in mongod's order (arrival and
//!   admission, authentication and OIDC, the Stable API, Atlas Search, fail points,
//!   `maxTimeMS`, awaitable hello, replication state, change streams, standalone refusals,
//!   router transactions, the write concern), each a function of the context and the request
//!   that answers "go on" or the request's outcome and imports no other gate, then the store.
//!   A request enters the room once, through its pipeline, and leaves with its reply.
//! - `control/`: the `{blackpipe: ...}` commands and the mongod commands a node answers
//!   itself (`replSet*`, `configureFailPoint`, `shutdown`, ...), one command in one place,
//!   parsed into a value (see [`admin`]), then applied.
//! - `effects/`: launching members and their listeners, the model changes that publish every
//!   node's `topologyVersion` and schedule election timers, the [`load_balancer`] front end,
//!   and the [`Deployment`] handle.
//!
//! The foot holds the pure [`Topology`] model (with the vote count of elections), the
//! [`DeploymentConfig`], the [`capacity`] model, [`hello`] construction, the reply builders
//! ([`errors`]), the state the rooms share, the adapter to the store, and replication: in a
//! replica set each data-bearing member owns a store, and the secondaries pull the primary's
//! op log, wait out their lag, keep the majority commit point and roll back what diverged. Imports point down: effects launches the node
//! room's pipeline; the pipeline hands the control commands to control; control and the gates
//! import the node context and the foot (control asks for effects through the foot's `Effects`
//! trait, which the effects room implements); the foot imports no room, and no files import
//! each other in a circle. Handlers never hold a lock across an `.await`.
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

mod backend;
mod balanced;
pub mod capacity;
mod config;
mod control;
mod control_error;
mod effects;
pub mod errors;
pub mod hello;
mod in_progress;
mod log_verbosity;
mod member_options;
mod model;
mod node;
mod opcounters;
mod replication;
mod state;

#[cfg(test)]
mod tests;

pub use backend::WriteTime;
pub use capacity::{Capacity, CapacityChange, CapacityStats};
pub use config::DeploymentConfig;
pub use control::admin;
pub use control_error::ControlError;
pub use effects::blocking::BlockingDeployment;
pub use effects::handle::{Deployment, serve_forever, serve_forever_then};
pub use effects::load_balancer;
pub use model::{
    DeploymentKind, Health, MAX_MEMBERS, MAX_NODE_SLOTS, MAX_VOTING_MEMBERS, MemberOptions, Node,
    NodeIndex, Role, Topology, TopologyVersion,
};
pub use node::stable_api::server_parameters;
pub use replication::RolledBackWrite;
pub use state::NodeCounters;
