//! A router's side of load-balanced mode (see
//! [`load_balancer`](crate::deployment::load_balancer)): the first hello of a balancer
//! connection must declare `loadBalanced: true` and gets `serviceId` in its reply; on every
//! port, a `loadBalanced` that is neither a boolean nor null is a `TypeMismatch`.

use bson::{Bson, Document};

use super::context::NodeContext;
use crate::deployment::balanced::BalancedConnection;
use crate::deployment::errors;
use crate::server::{ConnectionContext, Outcome, Reaction};
use blackpipe_store::code;

/// What a hello's `loadBalanced` says: `Err` with the `TypeMismatch` reply for a value that is
/// neither a boolean nor null.
fn load_balanced_flag(command: &Document) -> Result<bool, Document> {
    match command.get("loadBalanced") {
        None | Some(Bson::Null) => Ok(false),
        Some(Bson::Boolean(flag)) => Ok(*flag),
        Some(other) => Err(errors::error_reply(
            code::TYPE_MISMATCH,
            format!(
                "BSON field 'hello.loadBalanced' is the wrong type '{:?}', expected type 'bool'",
                other.element_type()
            ),
        )),
    }
}

/// The error a hello gets before it is answered: a malformed `loadBalanced` anywhere, or, on
/// a balancer connection's first hello, a missing `loadBalanced: true`.
pub(crate) fn hello_refusal(
    command: &Document,
    connection: &ConnectionContext,
) -> Option<Document> {
    let affirmed = match load_balanced_flag(command) {
        Ok(affirmed) => affirmed,
        Err(reply) => return Some(reply),
    };
    let balanced = connection.extensions().get::<BalancedConnection>()?;
    (!balanced.greeted && !affirmed).then(|| {
        errors::error_reply(
            code::LOAD_BALANCER_SUPPORT_MISMATCH,
            "The server is being accessed through a load balancer, but the client did not \
             declare load-balanced mode in its hello (loadBalanced: true)",
        )
    })
}

/// Adds `serviceId` to the first successful hello reply of a balancer connection.
pub(crate) fn decorate_hello(
    node: &NodeContext,
    connection: &mut ConnectionContext,
    outcome: Outcome,
) -> Outcome {
    let Some(balanced) = connection.extensions().get::<BalancedConnection>().copied() else {
        return outcome;
    };
    if balanced.greeted {
        return outcome;
    }
    let Outcome::React(Reaction::Reply(mut reply)) = outcome else {
        return outcome;
    };
    let service = node
        .inner
        .load_balancer
        .get()
        .zip(node.view())
        .and_then(|(balancer, view)| {
            balancer.service_id(balanced.binding.backend, view.version.process_id)
        });
    if let (true, Some(service)) = (errors::reply_is_ok(&reply), service) {
        reply.insert("serviceId", service);
        connection.extensions_mut().insert(BalancedConnection {
            greeted: true,
            ..balanced
        });
    }
    Reaction::Reply(reply).into()
}
