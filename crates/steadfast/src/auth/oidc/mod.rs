//! MONGODB-OIDC (auth.md), machine flow: a token from the application's callback or a built-in
//! environment, cached per client, sent in a one-step `saslStart` (or in the handshake's
//! `speculativeAuthenticate` when the cache has one), and replaced when the server refuses it
//! (error 18 on a cached token) or asks for reauthentication (391).
//!
//! The human flow (IdP info, refresh tokens) is not implemented: a human callback is refused
//! when the client is built.

mod cache;
pub(crate) mod environment;
mod metadata;

use std::time::{Duration, Instant};

use bson::{Document, doc};
use steadfast_core::IoLimit;
use steadfast_core::options::Credential;
use steadfast_core::options::oidc::{
    CALLBACK_API_VERSION, Callback, CallbackContext, CallbackKind,
};

use self::cache::TokenCache;
use self::environment::{BuiltIn, EnvLookup};
use crate::conn::Connection;
use crate::error::{Error, Result};
use crate::runtime;

/// The mechanism's name on the wire.
pub(crate) const MECHANISM: &str = "MONGODB-OIDC";

/// How long a machine callback may take when nothing shorter bounds it (auth.md: one minute
/// when CSOT does not apply).
const MACHINE_CALLBACK_TIMEOUT: Duration = Duration::from_secs(60);

/// mongod's AuthenticationFailed: the server refused the token.
const AUTHENTICATION_FAILED: i32 = 18;

/// Where access tokens come from.
#[derive(Debug)]
enum TokenSource {
    /// The application's machine callback.
    Callback(Callback),
    /// A built-in environment, reading variables through `env`.
    BuiltIn(BuiltIn, EnvLookup),
}

/// One client's OIDC state: the token source and the *Client Cache*. The cache's lock is held
/// while the source runs, so that at most one call is under way per client (auth.md), and
/// never during a SASL exchange.
#[derive(Debug)]
pub(crate) struct OidcAuthenticator {
    source: TokenSource,
    username: Option<String>,
    cache: tokio::sync::Mutex<TokenCache>,
}

impl OidcAuthenticator {
    /// The authenticator for `credential` (mechanism MONGODB-OIDC).
    ///
    /// # Errors
    /// `InvalidArgument` when neither a callback nor `ENVIRONMENT` is given, when both are, or
    /// for a human callback (the human flow is not supported).
    pub(crate) fn from_credential(credential: &Credential) -> Result<Self> {
        Self::with_env(credential, environment::process_env)
    }

    /// [`OidcAuthenticator::from_credential`] reading environment variables through `env`.
    ///
    /// # Errors
    /// As [`OidcAuthenticator::from_credential`].
    pub(crate) fn with_env(credential: &Credential, env: EnvLookup) -> Result<Self> {
        let built_in = BuiltIn::from_credential(credential)?;
        let callback = &credential.oidc_callback;
        let source = match (callback.kind(), built_in) {
            (Some(_), Some(_)) => {
                return Err(Error::invalid_argument(
                    "MONGODB-OIDC: give either an OIDC callback or ENVIRONMENT, not both",
                ));
            }
            (Some(CallbackKind::Machine), None) => TokenSource::Callback(callback.clone()),
            (Some(_), None) => {
                return Err(Error::invalid_argument(
                    "MONGODB-OIDC: the human (interactive) flow is not supported yet; use a machine callback",
                ));
            }
            (None, Some(built_in)) => TokenSource::BuiltIn(built_in, env),
            (None, None) => {
                return Err(Error::invalid_argument(
                    "MONGODB-OIDC needs an OIDC callback (Credential::oidc_callback) or the ENVIRONMENT mechanism property",
                ));
            }
        };
        Ok(OidcAuthenticator {
            source,
            username: credential.username.clone(),
            cache: tokio::sync::Mutex::new(TokenCache::default()),
        })
    }

    /// The cached access token, unless the cache is busy (a token source call is under way):
    /// speculative authentication never waits for one.
    pub(crate) fn cached_token(&self) -> Option<String> {
        self.cache
            .try_lock()
            .ok()
            .and_then(|cache| cache.access_token().map(str::to_owned))
    }

    /// The cached token (`true`) or a fresh one from the source (`false`), waiting out the
    /// minimum interval between calls.
    async fn token(&self, limit: IoLimit) -> Result<(String, bool)> {
        let mut cache = self.cache.lock().await;
        if let Some(token) = cache.access_token() {
            return Ok((token.to_owned(), true));
        }
        if let Some(wait) = cache.wait_until(runtime::now()) {
            runtime::sleep_until(wait).await;
        }
        let now = runtime::now();
        cache.record_call(now);
        let callback_limit = now + MACHINE_CALLBACK_TIMEOUT;
        let call_deadline = limit
            .instant()
            .map_or(callback_limit, |at| at.min(callback_limit));
        let token = self.call_source(call_deadline).await?;
        cache.store(token.clone());
        Ok((token, false))
    }

    /// Calls the token source, bounded by `deadline`.
    async fn call_source(&self, deadline: Instant) -> Result<String> {
        let call = async {
            match &self.source {
                TokenSource::BuiltIn(built_in, env) => built_in.fetch(*env, deadline).await,
                TokenSource::Callback(callback) => self.call_callback(callback, deadline).await,
            }
        };
        tokio::select! {
            token = call => token,
            () = runtime::sleep_until(deadline) => Err(Error::timeout(
                "the OIDC callback did not return an access token in time",
            )),
        }
    }

    async fn call_callback(&self, callback: &Callback, deadline: Instant) -> Result<String> {
        let context = CallbackContext::builder()
            .timeout(deadline)
            .version(CALLBACK_API_VERSION)
            .username(self.username.clone())
            .build();
        let future = callback
            .call(context)
            .ok_or_else(|| Error::invalid_argument("MONGODB-OIDC: no OIDC callback is set"))?;
        let response = future.await.map_err(callback_error)?;
        if response.access_token.is_empty() {
            return Err(Error::authentication(
                "the OIDC callback returned an empty access token",
            ));
        }
        Ok(response.access_token)
    }

    /// Forgets `token` if it is still the cached one.
    async fn invalidate(&self, token: &str) {
        self.cache.lock().await.invalidate(token);
    }
}

/// The application's callback error: a driver error unchanged, anything else wrapped as an
/// authentication error whose source it is.
fn callback_error(error: Box<dyn std::error::Error + Send + Sync>) -> Error {
    match error.downcast::<Error>() {
        Ok(driver_error) => *driver_error,
        Err(other) => Error::authentication(format!("the OIDC callback failed: {other}"))
            .with_source(CallbackFailure(other)),
    }
}

/// A callback's own error, kept as the source of the driver's.
#[derive(Debug)]
struct CallbackFailure(Box<dyn std::error::Error + Send + Sync>);

impl std::fmt::Display for CallbackFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for CallbackFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.0.as_ref())
    }
}

/// The one-step `saslStart` carrying `token` (also the body of `speculativeAuthenticate`,
/// which adds `db`).
pub(crate) fn jwt_step_command(token: &str) -> Document {
    let payload = doc! { "jwt": token };
    let mut bytes = Vec::new();
    // A document of one string encodes; were it ever to fail, the server would refuse the
    // empty payload with an authentication error, which is what the caller reports.
    let _ = payload.to_writer(&mut bytes);
    doc! {
        "saslStart": 1,
        "mechanism": MECHANISM,
        "payload": crate::handshake::binary(bytes),
    }
}

/// The `speculativeAuthenticate` document for the handshake and the token it carries; `None`
/// when the client has no cached token (auth.md: never speculate without one).
pub(crate) fn speculative_start(
    oidc: &OidcAuthenticator,
    source: &str,
) -> Option<(Document, String)> {
    let token = oidc.cached_token()?;
    let mut command = jwt_step_command(&token);
    command.insert("db", source);
    Some((command, token))
}

/// Finishes authentication after the handshake: done if the speculative attempt with `token`
/// succeeded (`speculative_reply` says `done`), otherwise the standard conversation.
///
/// # Errors
/// As [`authenticate`].
///
/// # Cancel safety
/// Not cancel safe: a dropped future leaves the connection broken.
pub(crate) async fn finish_handshake(
    connection: &mut Connection,
    oidc: &OidcAuthenticator,
    source: &str,
    speculative: Option<(String, Option<Document>)>,
    limit: IoLimit,
) -> Result<()> {
    if let Some((token, Some(reply))) = speculative
        && reply.get_bool("done").unwrap_or(false)
    {
        connection.set_oidc_token(Some(token));
        return Ok(());
    }
    // A failed speculative attempt does not invalidate the cached token (auth.md).
    connection.set_oidc_token(None);
    authenticate(connection, oidc, source, limit).await
}

/// Authenticates `connection` with the cached token, or a fresh one. A cached token the
/// server refuses (18) is invalidated and replaced once.
///
/// # Errors
/// `Authentication` (with the server's code) when the server refuses the token; the token
/// source's error (a callback's own, a timeout, an unreadable token file) when it fails.
///
/// # Cancel safety
/// Not cancel safe: a dropped future leaves the connection broken.
pub(crate) async fn authenticate(
    connection: &mut Connection,
    oidc: &OidcAuthenticator,
    source: &str,
    limit: IoLimit,
) -> Result<()> {
    let (token, cached) = oidc.token(limit).await?;
    connection.set_oidc_token(Some(token.clone()));
    let error = match one_step(connection, source, &token, limit).await {
        Ok(()) => return Ok(()),
        Err(error) => error,
    };
    if !cached || error.code() != Some(AUTHENTICATION_FAILED) {
        connection.set_oidc_token(None);
        return Err(error);
    }
    oidc.invalidate(&token).await;
    let (token, _) = oidc.token(limit).await?;
    connection.set_oidc_token(Some(token.clone()));
    one_step(connection, source, &token, limit).await
}

/// Reauthenticates `connection` after the server answered ReauthenticationRequired (391):
/// the connection's token is invalidated, then the standard conversation runs again (no
/// `hello`, no speculative authentication).
///
/// # Errors
/// As [`authenticate`].
///
/// # Cancel safety
/// Not cancel safe: a dropped future leaves the connection broken.
pub(crate) async fn reauthenticate(
    connection: &mut Connection,
    oidc: &OidcAuthenticator,
    source: &str,
    limit: IoLimit,
) -> Result<()> {
    if let Some(token) = connection.oidc_token().map(str::to_owned) {
        oidc.invalidate(&token).await;
    }
    connection.set_oidc_token(None);
    authenticate(connection, oidc, source, limit).await
}

/// The one-step conversation: `saslStart` with `{jwt}`, which the server must finish at once.
async fn one_step(
    connection: &mut Connection,
    source: &str,
    token: &str,
    limit: IoLimit,
) -> Result<()> {
    let reply = super::sasl_command(connection, source, jwt_step_command(token), limit).await?;
    if !reply.get_bool("done").unwrap_or(false) {
        return Err(Error::authentication(
            "the server did not accept the OIDC access token in one step",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
