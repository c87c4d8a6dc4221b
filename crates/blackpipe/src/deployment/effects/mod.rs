//! The effects room: everything that binds ports, closes connections or runs on a timer.
//! [`handle`] is the [`Deployment`](handle::Deployment) handle the Rust API drives; [`runtime`]
//! launches each member's listener with the node room's handler and carries out the model's
//! changes (publishing `topologyVersion`s, scheduling automatic elections, killing, restarting,
//! reconfiguring); [`operations`] holds the model changes the control commands ask for; and
//! [`load_balancer`] runs the balancers in front of the routers. The rooms below never import
//! this one.

pub(crate) mod handle;
pub mod load_balancer;
mod operations;
mod runtime;
