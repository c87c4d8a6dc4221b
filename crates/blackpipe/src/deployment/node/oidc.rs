//! A node's MONGODB-OIDC hooks (the conversation itself is in [`crate::auth::oidc`]):
//! `saslStart` / `saslContinue` for the mechanism, the speculative attempt inside `hello`,
//! and ReauthenticationRequired (391) once the token a connection authenticated with has
//! expired. The `{blackpipe: "mintOidcToken"}` command that hands a test a token is a control
//! command.

use bson::Document;

use super::context::NodeContext;
use crate::auth::ConnectionAuth;
use crate::auth::oidc::{EXTERNAL_DB, MECHANISM, OidcConnection, OidcIssuer, Step};
use crate::deployment::errors::{self, SessionFacts};
use crate::server::{ConnectionContext, Outcome};
use blackpipe_store::code;

/// Runs `step` on the connection's OIDC state and records the user it authenticated.
fn with_state(
    connection: &mut ConnectionContext,
    step: impl FnOnce(&mut OidcConnection) -> Step,
) -> Document {
    let extensions = connection.extensions_mut();
    let mut state = extensions.remove::<OidcConnection>().unwrap_or_default();
    let step = step(&mut state);
    extensions.insert(state);
    if let Some(principal) = step.principal {
        let mut auth = extensions.remove::<ConnectionAuth>().unwrap_or_default();
        auth.authenticate_as(EXTERNAL_DB, &principal);
        extensions.insert(auth);
    }
    step.reply
}

/// Whether `command` (a `saslStart` or a speculative one) asks for MONGODB-OIDC.
fn is_oidc(command: &Document) -> bool {
    command.get_str("mechanism").ok() == Some(MECHANISM)
}

/// The issuer, or the reply mongod gives when OIDC is not configured.
fn issuer(node: &NodeContext) -> Result<&OidcIssuer, Document> {
    node.inner.oidc.as_deref().ok_or_else(|| {
        crate::auth::AuthError::UnsupportedMechanism(MECHANISM.to_owned()).to_reply()
    })
}

/// Answers `saslStart` for MONGODB-OIDC and `saslContinue` of an OIDC conversation; `None`
/// for anything else (SCRAM goes on as before).
pub(crate) fn run_sasl(
    node: &NodeContext,
    name: &str,
    command: &Document,
    connection: &mut ConnectionContext,
) -> Option<Outcome> {
    let reply = match name {
        "saslStart" if is_oidc(command) => match issuer(node) {
            Ok(issuer) => with_state(connection, |state| state.start(issuer, command)),
            Err(refusal) => refusal,
        },
        "saslContinue" => {
            let awaiting = connection
                .extensions()
                .get::<OidcConnection>()
                .is_some_and(OidcConnection::is_awaiting_jwt);
            let issuer = node.inner.oidc.as_deref().filter(|_| awaiting)?;
            with_state(connection, |state| state.proceed(issuer, command))
        }
        _ => return None,
    };
    Some(node.finish(reply, SessionFacts::default(), None))
}

/// The `speculativeAuthenticate` reply for an OIDC attempt in `hello`: `Some` only when the
/// token was accepted (mongod leaves the field out otherwise).
pub(crate) fn speculative(
    node: &NodeContext,
    hello: &Document,
    connection: &mut ConnectionContext,
) -> Option<Document> {
    let request = hello.get_document("speculativeAuthenticate").ok()?;
    if !is_oidc(request) {
        return None;
    }
    let issuer = node.inner.oidc.as_deref()?;
    let reply = with_state(connection, |state| state.start(issuer, request));
    errors::reply_is_ok(&reply).then_some(reply)
}

/// ReauthenticationRequired for a command on a connection whose OIDC token has expired by the
/// deployment's clock; `None` when the command may run.
pub(crate) fn expired(
    node: &NodeContext,
    connection: &ConnectionContext,
    session: SessionFacts,
) -> Option<Outcome> {
    let issuer = node.inner.oidc.as_deref()?;
    let state = connection.extensions().get::<OidcConnection>()?;
    if !state.is_expired(issuer.now()) {
        return None;
    }
    let reply = errors::error_reply(
        code::REAUTHENTICATION_REQUIRED,
        "the OIDC access token of this connection has expired; reauthenticate",
    );
    Some(node.finish(reply, session, None))
}
