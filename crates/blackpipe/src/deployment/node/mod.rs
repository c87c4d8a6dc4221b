//! The node room: what one member does with a request. A request enters through
//! [`pipeline::MemberHandler`] once and leaves with its reply: the pipeline runs the gates in
//! mongod's order, then the store. Each gate is a function of the [`context`] (the view of the
//! deployment a request needs, and the reply helpers) and the request that answers
//! [`Gate`](context::Gate): go on, or the request's outcome. Gates import the context and the
//! foot of `deployment/`, never each other; only the pipeline knows their order, and it hands
//! the control commands to the control room.

pub(crate) mod context;
pub(crate) mod pipeline;
pub(crate) mod stable_api;

mod auth;
mod awaitable;
mod change_streams;
mod fail_points;
mod ingress;
mod load_balanced;
mod max_time;
mod oidc;
mod read_concern;
mod role;
mod router_txn;
mod search;
mod standalone;
mod write_concern;
mod write_wait;
