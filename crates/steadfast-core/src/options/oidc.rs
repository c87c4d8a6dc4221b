//! MONGODB-OIDC callbacks (auth.md, "OIDC Callback"): the function an application gives to
//! obtain access tokens, what the driver tells it, and what it returns.
//!
//! The callback lives on [`Credential`](super::Credential), so its type lives here beside it;
//! the driver calls it (with a timeout), caches its tokens and runs the SASL conversation.
//! The callback's error is any error type: the driver hands back one of its own errors
//! unchanged and wraps anything else as an authentication error whose source it is.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use typed_builder::TypedBuilder;

/// A boxed, sendable future: what a callback returns (the same type as `futures`'
/// `BoxFuture`, so `.boxed()` produces it).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a callback's future resolves to. Any error type converts into the error side with
/// `?`; a driver error returned here reaches the application unchanged.
pub type CallbackResult = Result<IdpServerResponse, Box<dyn std::error::Error + Send + Sync>>;

/// The version of the callback API the driver passes in [`CallbackContext::version`].
pub const CALLBACK_API_VERSION: u32 = 1;

type CallbackFunction = dyn Fn(CallbackContext) -> BoxFuture<'static, CallbackResult> + Send + Sync;

/// Whether a callback runs without a person (machine) or drives an interactive login (human).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallbackKind {
    /// Machine (workload) flow: returns an access token without interaction.
    Machine,
    /// Human (workforce) flow: receives the identity provider's details and a refresh token.
    Human,
}

/// The function that obtains OIDC access tokens. The default is no callback (a built-in
/// `ENVIRONMENT` or none at all); build one with [`Callback::machine`] or [`Callback::human`].
/// Clones share the function. Two callbacks are equal when they are the same function.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct Callback {
    inner: Option<(Arc<CallbackFunction>, CallbackKind)>,
}

impl Callback {
    /// A machine callback: called with a [`CallbackContext`] whenever the driver needs a new
    /// access token, at most one call at a time per client and at least 100 ms apart.
    pub fn machine<F>(function: F) -> Callback
    where
        F: Fn(CallbackContext) -> BoxFuture<'static, CallbackResult> + Send + Sync + 'static,
    {
        Callback {
            inner: Some((Arc::new(function), CallbackKind::Machine)),
        }
    }

    /// A human callback: called with the identity provider's details (and a refresh token
    /// when one is cached) to run an interactive login.
    pub fn human<F>(function: F) -> Callback
    where
        F: Fn(CallbackContext) -> BoxFuture<'static, CallbackResult> + Send + Sync + 'static,
    {
        Callback {
            inner: Some((Arc::new(function), CallbackKind::Human)),
        }
    }

    /// Whether an application gave a callback.
    pub fn is_set(&self) -> bool {
        self.inner.is_some()
    }

    /// The kind of the callback, if one is set.
    pub fn kind(&self) -> Option<CallbackKind> {
        self.inner.as_ref().map(|(_, kind)| *kind)
    }

    /// Starts a call of the callback; `None` when no callback is set.
    pub fn call(&self, context: CallbackContext) -> Option<BoxFuture<'static, CallbackResult>> {
        self.inner.as_ref().map(|(function, _)| function(context))
    }
}

impl PartialEq for Callback {
    fn eq(&self, other: &Self) -> bool {
        match (&self.inner, &other.inner) {
            (None, None) => true,
            (Some((a, ka)), Some((b, kb))) => Arc::ptr_eq(a, b) && ka == kb,
            _ => false,
        }
    }
}

impl Eq for Callback {}

impl fmt::Debug for Callback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind() {
            Some(kind) => write!(f, "Callback({kind:?})"),
            None => f.write_str("Callback(None)"),
        }
    }
}

/// What the identity provider told the server about itself (the human flow's first step).
#[derive(Clone, Debug, PartialEq, Eq, TypedBuilder, serde::Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct IdpServerInfo {
    /// The issuer: the URL of the authorization server.
    pub issuer: String,
    /// The client id to present to the identity provider.
    pub client_id: Option<String>,
    /// Extra scopes to request.
    pub request_scopes: Option<Vec<String>>,
}

/// What the driver passes to a callback. More fields may be added.
#[derive(Clone, Debug, TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct CallbackContext {
    /// When the callback should give up and return an error.
    pub timeout: Option<Instant>,
    /// The callback API version ([`CALLBACK_API_VERSION`]).
    pub version: u32,
    /// The cached refresh token (human callbacks only).
    pub refresh_token: Option<String>,
    /// The identity provider's details (human callbacks only).
    pub idp_info: Option<IdpServerInfo>,
    /// The credential's username, if it has one.
    pub username: Option<String>,
}

/// What a callback returns: an access token, when it expires, and a refresh token.
#[derive(Clone, TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct IdpServerResponse {
    /// The access token (a JWT) the driver sends to the server.
    #[builder(!default)]
    pub access_token: String,
    /// When the access token expires, if known.
    pub expires: Option<Instant>,
    /// A refresh token for the next human login, if the identity provider gave one.
    pub refresh_token: Option<String>,
}

impl fmt::Debug for IdpServerResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Tokens are bearer credentials: never printed.
        f.debug_struct("IdpServerResponse")
            .field("access_token", &"<redacted>")
            .field("expires", &self.expires)
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::options::{AuthMechanism, Credential};

    fn machine() -> Callback {
        Callback::machine(|_| {
            Box::pin(async { Ok(IdpServerResponse::builder().access_token("t").build()) })
        })
    }

    fn oidc(properties: &[(&str, &str)], callback: Callback) -> Credential {
        let properties: BTreeMap<String, String> = properties
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Credential::builder()
            .mechanism(AuthMechanism::MongoDbOidc)
            .mechanism_properties(properties)
            .oidc_callback(callback)
            .build()
    }

    #[test]
    fn a_callback_excludes_an_environment_and_other_mechanisms() {
        assert_eq!(oidc(&[], machine()).validate(), Ok(()));
        assert_eq!(
            oidc(&[("ENVIRONMENT", "k8s")], Callback::default()).validate(),
            Ok(())
        );
        let both = oidc(&[("ENVIRONMENT", "k8s")], machine()).validate();
        assert!(both.unwrap_err().to_string().contains("not both"));
        let scram = Credential::builder()
            .username("u".to_owned())
            .password("p".to_owned())
            .mechanism(AuthMechanism::ScramSha256)
            .oidc_callback(machine())
            .build();
        assert!(
            scram
                .validate()
                .unwrap_err()
                .to_string()
                .contains("MONGODB-OIDC only")
        );
    }

    #[test]
    fn callbacks_compare_by_identity_and_tokens_never_print() {
        let callback = machine();
        assert_eq!(callback.clone(), callback);
        assert_ne!(machine(), callback);
        assert_eq!(Callback::default(), Callback::default());
        assert_eq!(format!("{callback:?}"), "Callback(Machine)");
        let response = IdpServerResponse::builder()
            .access_token("secret-token")
            .refresh_token("secret-refresh".to_owned())
            .build();
        let shown = format!("{response:?}");
        assert!(!shown.contains("secret"), "{shown}");
    }
}
