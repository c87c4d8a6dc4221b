//! What a router behind the load balancers and the balancers share: the binding a balancer
//! connection carries in its extensions (the router's handler reads it to number the connection
//! and to add `serviceId` to its first hello), and [`Balancers`], the balancers as the members
//! and the control commands see them. The balancers themselves (their ports, their round robin)
//! are effects.

use bson::oid::ObjectId;

use super::control_error::ControlError;
use super::model::NodeIndex;
use crate::server::ConnectionContext;

/// Which router a balancer connection goes to, and its number there.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Binding {
    /// The router.
    pub(crate) backend: NodeIndex,
    /// The connection's number on that router (its `connectionId`).
    pub(crate) number: i64,
}

/// The state a balancer connection carries in its extensions (seen by the router's handler).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BalancedConnection {
    /// The router and the connection's number there.
    pub(crate) binding: Binding,
    /// The first hello succeeded (with `serviceId`); later hellos are ordinary.
    pub(crate) greeted: bool,
}

/// The load balancers in front of the routers, as the members and the control commands use
/// them.
pub(crate) trait Balancers: Send + Sync {
    /// Takes `backend` out of (or puts it back into) both balancers; returns how many
    /// balancer connections were closed.
    ///
    /// # Errors
    /// `UnknownMember` for an unknown router.
    fn set_down(&self, backend: NodeIndex, down: bool) -> Result<usize, ControlError>;

    /// The `serviceId` of `backend` while it runs as `process`: a new one for a new process.
    fn service_id(&self, backend: NodeIndex, process: ObjectId) -> Option<ObjectId>;
}

/// The `connectionId` hello reports: the router's own number for a balancer connection.
pub(crate) fn connection_number(connection: &ConnectionContext) -> i64 {
    match connection.extensions().get::<BalancedConnection>() {
        Some(balanced) => balanced.binding.number,
        None => i64::try_from(connection.id().get()).unwrap_or(i64::MAX),
    }
}
