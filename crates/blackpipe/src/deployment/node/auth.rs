//! A node's authentication hooks: the gate that refuses commands on connections that have not
//! authenticated (when the deployment requires authentication), `saslStart` /
//! `saslContinue`, and what `hello` adds (`saslSupportedMechs`, `speculativeAuthenticate`).
//! The SCRAM logic itself is in [`crate::auth`]; the connection's state lives in its
//! extensions. MONGODB-OIDC has its own gate; the pipeline hands its answers in here.

use bson::Document;

use super::context::NodeContext;
use crate::auth::{ConnectionAuth, requires_authentication};
use crate::deployment::errors::{self, SessionFacts};
use crate::server::{ConnectionContext, Outcome, Reaction};
use blackpipe_store::code;

/// Runs `step` on the connection's authentication state, creating it on first use.
fn with_state<T>(
    connection: &mut ConnectionContext,
    step: impl FnOnce(&mut ConnectionAuth) -> T,
) -> T {
    let extensions = connection.extensions_mut();
    let mut state = extensions.remove::<ConnectionAuth>().unwrap_or_default();
    let result = step(&mut state);
    extensions.insert(state);
    result
}

/// The Unauthorized (13) reply mongod gives when the deployment requires authentication and
/// this connection has not authenticated; `None` when the command may run. Where
/// authentication is required, `expired` (the OIDC gate's verdict on the connection's token)
/// answers first.
pub(crate) fn refusal(
    node: &NodeContext,
    name: &str,
    connection: &ConnectionContext,
    session: SessionFacts,
    expired: impl FnOnce() -> Option<Outcome>,
) -> Option<Outcome> {
    if !node.inner.auth_required || !requires_authentication(name) {
        return None;
    }
    if let Some(expired) = expired() {
        return Some(expired);
    }
    let authenticated = connection
        .extensions()
        .get::<ConnectionAuth>()
        .is_some_and(ConnectionAuth::is_authenticated);
    if authenticated {
        return None;
    }
    let reply = errors::error_reply(
        code::UNAUTHORIZED,
        format!("Command {name} requires authentication"),
    );
    Some(node.finish(reply, session, None))
}

/// Answers `saslStart`, `saslContinue` and `authenticate` (after the OIDC gate had its
/// turn); `None` for any other command. Users can authenticate whether or not the deployment
/// requires it, as with mongod.
pub(crate) fn run_sasl(
    node: &NodeContext,
    name: &str,
    db: &str,
    command: &Document,
    connection: &mut ConnectionContext,
) -> Option<Outcome> {
    let users = &node.inner.users;
    let reply = match name {
        "saslStart" => with_state(connection, |auth| {
            auth.sasl_start(users, db, command, &mut rand::rng())
        }),
        "saslContinue" => with_state(connection, |auth| auth.sasl_continue(command)),
        "authenticate" => {
            let certificate = connection.client_certificate().map(<[u8]>::to_vec);
            with_state(connection, |auth| {
                auth.authenticate(users, db, command, certificate.as_deref())
            })
        }
        _ => return None,
    };
    Some(node.finish(reply, SessionFacts::default(), None))
}

/// Adds `saslSupportedMechs` and `speculativeAuthenticate` to a successful `hello` reply
/// when the request asked for them and there is something to say. `oidc` is the OIDC gate's
/// speculative attempt, tried before SCRAM and X.509.
pub(crate) fn decorate_hello(
    node: &NodeContext,
    command: &Document,
    connection: &mut ConnectionContext,
    outcome: Outcome,
    oidc: impl FnOnce(&mut ConnectionContext) -> Option<Document>,
) -> Outcome {
    let mechanisms_of = command.get_str("saslSupportedMechs").ok();
    if mechanisms_of.is_none() && !command.contains_key("speculativeAuthenticate") {
        return outcome;
    }
    let Outcome::React(Reaction::Reply(mut reply)) = outcome else {
        return outcome;
    };
    if !errors::reply_is_ok(&reply) {
        return Reaction::Reply(reply).into();
    }
    let users = &node.inner.users;
    if let Some(mechanisms) = mechanisms_of.and_then(|user| users.supported_mechanisms(user)) {
        reply.insert("saslSupportedMechs", mechanisms);
    }
    let certificate = connection.client_certificate().map(<[u8]>::to_vec);
    let speculative = oidc(connection).or_else(|| {
        with_state(connection, |auth| {
            auth.speculative(users, command, &mut rand::rng())
                .or_else(|| auth.speculative_x509(users, command, certificate.as_deref()))
        })
    });
    if let Some(first_step) = speculative {
        reply.insert("speculativeAuthenticate", first_step);
    }
    Reaction::Reply(reply).into()
}
