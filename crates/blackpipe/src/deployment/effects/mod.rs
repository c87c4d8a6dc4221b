//! The effects room: everything that binds ports, closes connections or runs on a timer.
//! [`handle`] is the [`Deployment`](handle::Deployment) handle the Rust API drives, and
//! [`blocking`] the same on a runtime of its own for blocking tests; [`runtime`]
//! launches each member's listener with the node room's handler and carries out the model's
//! changes (publishing `topologyVersion`s, scheduling automatic elections); [`operations`]
//! implements [`Effects`](crate::deployment::state::Effects), what the control commands ask
//! of this room (stepdown, election, partition, kill, restart, reconfig...); and
//! [`load_balancer`] runs the balancers in front of the routers. The rooms below never import
//! this one.

pub(crate) mod blocking;
pub(crate) mod handle;
pub mod load_balancer;
mod operations;
mod replication;
mod runtime;
