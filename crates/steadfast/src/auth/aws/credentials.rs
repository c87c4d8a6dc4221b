//! Where MONGODB-AWS credentials come from, in the auth specification's order: the connection
//! string, then (for temporary credentials already fetched) the cache, the environment,
//! `AssumeRoleWithWebIdentity`, the ECS endpoint, the EC2 instance metadata service. Fetched
//! credentials are cached until five minutes before they expire; environment credentials
//! never are, as the specification requires.

use std::fmt;
use std::sync::{Mutex, PoisonError};

use serde::Deserialize;

use super::sigv4::parse_utc_timestamp;
use crate::error::{Error, Result};

/// Credentials are reused only while more than this many seconds from expiring.
const EXPIRY_MARGIN_SECONDS: u64 = 5 * 60;

/// A secret access key: never shown by `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct SecretKey(String);

impl SecretKey {
    pub(crate) fn new(secret: String) -> Self {
        Self(secret)
    }

    /// The key itself, for signing.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// One set of AWS credentials.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AwsCredential {
    pub(crate) access_key_id: String,
    pub(crate) secret_access_key: SecretKey,
    /// Present for temporary credentials.
    pub(crate) session_token: Option<String>,
    /// Seconds since the Unix epoch; `None` for credentials that do not expire.
    pub(crate) expiration: Option<u64>,
}

impl AwsCredential {
    /// Whether cached credentials may still be used at `now` (seconds since the Unix epoch):
    /// more than five minutes before they expire.
    pub(crate) fn usable_at(&self, now: u64) -> bool {
        self.expiration
            .is_none_or(|expiry| expiry.saturating_sub(now) > EXPIRY_MARGIN_SECONDS)
    }
}

/// Reads environment variables. The process environment in production; a map in tests, so
/// that tests never change the process environment under each other.
pub(crate) trait AwsEnvironment: Send + Sync + fmt::Debug {
    /// The variable's value, if set and not empty.
    fn var(&self, name: &str) -> Option<String>;
}

/// The running process's environment, read at every authentication (the specification
/// requires reading it dynamically: the application may refresh the variables).
#[derive(Debug, Default)]
pub(crate) struct ProcessEnvironment;

impl AwsEnvironment for ProcessEnvironment {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|value| !value.is_empty())
    }
}

/// The credentials of the last fetch from an AWS endpoint, shared by a client's connections.
/// Written and read atomically; never locked across a request (the specification forbids a
/// lock around fetching, which would serialize connection establishment).
#[derive(Debug, Default)]
pub(crate) struct CredentialCache(Mutex<Option<AwsCredential>>);

impl CredentialCache {
    /// The cached credentials, if still usable at `now`.
    pub(crate) fn get(&self, now: u64) -> Option<AwsCredential> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .filter(|credential| credential.usable_at(now))
    }

    /// Replaces the cached credentials.
    pub(crate) fn put(&self, credential: AwsCredential) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(credential);
    }

    /// Forgets the cached credentials (after any failed authentication).
    pub(crate) fn clear(&self) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

/// The credentials in the environment variables Lambda sets, if both keys are present.
pub(crate) fn from_environment(environment: &dyn AwsEnvironment) -> Option<AwsCredential> {
    Some(AwsCredential {
        access_key_id: environment.var("AWS_ACCESS_KEY_ID")?,
        secret_access_key: SecretKey::new(environment.var("AWS_SECRET_ACCESS_KEY")?),
        session_token: environment.var("AWS_SESSION_TOKEN"),
        expiration: None,
    })
}

/// A credentials document from STS, ECS or EC2: the same fields, except that STS calls the
/// token `SessionToken` and gives the expiration as seconds since the epoch.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct CredentialsJson {
    access_key_id: String,
    secret_access_key: String,
    #[serde(alias = "SessionToken")]
    token: Option<String>,
    expiration: Option<serde_json::Value>,
}

/// The `AssumeRoleWithWebIdentity` JSON reply, as STS nests it.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct WebIdentityJson {
    assume_role_with_web_identity_response: WebIdentityResponse,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct WebIdentityResponse {
    assume_role_with_web_identity_result: WebIdentityResult,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct WebIdentityResult {
    credentials: CredentialsJson,
}

/// Parses an ECS or EC2 credentials document.
///
/// # Errors
/// `Authentication` when the body is not such a document or its expiration is unreadable.
pub(crate) fn parse_endpoint_credentials(body: &str, source: &str) -> Result<AwsCredential> {
    let json: CredentialsJson = serde_json::from_str(body).map_err(|e| {
        Error::authentication(format!("the {source} credentials are not readable: {e}"))
    })?;
    credential_from_json(json, source)
}

/// Parses the `AssumeRoleWithWebIdentity` reply (the nested form STS sends, or a bare
/// `{"Credentials": ...}`).
///
/// # Errors
/// `Authentication` when the body holds no credentials.
pub(crate) fn parse_web_identity_credentials(body: &str) -> Result<AwsCredential> {
    const SOURCE: &str = "AssumeRoleWithWebIdentity";
    #[derive(Deserialize)]
    #[serde(rename_all = "PascalCase")]
    struct Bare {
        credentials: CredentialsJson,
    }
    let credentials = match serde_json::from_str::<WebIdentityJson>(body) {
        Ok(nested) => {
            nested
                .assume_role_with_web_identity_response
                .assume_role_with_web_identity_result
                .credentials
        }
        Err(_) => {
            serde_json::from_str::<Bare>(body)
                .map_err(|e| {
                    Error::authentication(format!("the {SOURCE} reply is not readable: {e}"))
                })?
                .credentials
        }
    };
    credential_from_json(credentials, SOURCE)
}

fn credential_from_json(json: CredentialsJson, source: &str) -> Result<AwsCredential> {
    let expiration = match json.expiration {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(text)) => {
            Some(parse_utc_timestamp(&text).ok_or_else(|| {
                Error::authentication(format!(
                    "the {source} expiration {text:?} is not a UTC time"
                ))
            })?)
        }
        Some(serde_json::Value::Number(number)) => number
            .as_f64()
            .filter(|seconds| seconds.is_finite() && *seconds >= 0.0)
            // Truncation is the intent: whole seconds are enough to decide on reuse.
            .map(|seconds| seconds as u64)
            .map(Some)
            .ok_or_else(|| {
                Error::authentication(format!("the {source} expiration is not a time"))
            })?,
        Some(_) => {
            return Err(Error::authentication(format!(
                "the {source} expiration is not a time"
            )));
        }
    };
    if json.access_key_id.is_empty() || json.secret_access_key.is_empty() {
        return Err(Error::authentication(format!(
            "the {source} credentials have an empty key"
        )));
    }
    Ok(AwsCredential {
        access_key_id: json.access_key_id,
        secret_access_key: SecretKey::new(json.secret_access_key),
        session_token: json.token.filter(|token| !token.is_empty()),
        expiration,
    })
}
