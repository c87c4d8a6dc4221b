//! MONGODB-AWS (auth specification): the client proves who it is to the server by signing an
//! STS `GetCallerIdentity` request with its AWS credentials; the server sends that request to
//! STS. Credentials come from the connection string, the environment, web identity, ECS or
//! EC2 ([`credentials`], [`fetch`]); the messages are in [`conversation`], the signing in
//! [`sigv4`].

pub(crate) mod conversation;
pub(crate) mod credentials;
pub(crate) mod fetch;
pub(crate) mod sigv4;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use bson::doc;
use steadfast_core::IoLimit;
use steadfast_core::options::Credential;

use self::conversation::{MECHANISM, NONCE_BYTES};
use self::credentials::{
    AwsCredential, AwsEnvironment, CredentialCache, ProcessEnvironment, SecretKey,
};
use self::fetch::{AwsEndpoints, REQUEST_TIMEOUT};
use crate::conn::Connection;
use crate::error::{Error, Result};

/// The MONGODB-AWS state of one client: where credentials come from, and the temporary
/// credentials fetched last (shared by all the client's connections).
#[derive(Debug)]
pub(crate) struct AwsAuth {
    /// Credentials given in the connection string or options; when present, the only source.
    given: Option<AwsCredential>,
    environment: Arc<dyn AwsEnvironment>,
    endpoints: AwsEndpoints,
    cache: CredentialCache,
}

impl AwsAuth {
    /// The state for `credential`: its username and password (with the `AWS_SESSION_TOKEN`
    /// property) when given, else the process environment and AWS's endpoints.
    ///
    /// # Errors
    /// `InvalidArgument` when only one of the username and the password is given.
    pub(crate) fn from_credential(credential: &Credential) -> Result<Self> {
        let given = match (&credential.username, &credential.password) {
            (None, None) => None,
            (Some(access_key_id), Some(secret)) if !access_key_id.is_empty() => {
                Some(AwsCredential {
                    access_key_id: access_key_id.clone(),
                    secret_access_key: SecretKey::new(secret.clone()),
                    session_token: credential.property("AWS_SESSION_TOKEN").map(str::to_owned),
                    expiration: None,
                })
            }
            _ => {
                return Err(Error::invalid_argument(
                    "MONGODB-AWS needs both the access key id (username) and the secret key \
                     (password), or neither",
                ));
            }
        };
        Ok(Self::with_sources(
            given,
            Arc::new(ProcessEnvironment),
            AwsEndpoints::default(),
        ))
    }

    /// The state with explicit sources (tests replace the environment and the endpoints).
    pub(crate) fn with_sources(
        given: Option<AwsCredential>,
        environment: Arc<dyn AwsEnvironment>,
        endpoints: AwsEndpoints,
    ) -> Self {
        Self {
            given,
            environment,
            endpoints,
            cache: CredentialCache::default(),
        }
    }

    /// Credentials in the specification's order: given ones, cached temporary ones still
    /// usable, the environment's, then fetched ones (which are cached).
    async fn credential(&self, limit: IoLimit) -> Result<AwsCredential> {
        if let Some(given) = &self.given {
            return Ok(given.clone());
        }
        if let Some(cached) = self.cache.get(crate::runtime::unix_seconds()) {
            return Ok(cached);
        }
        if let Some(from_environment) = credentials::from_environment(&*self.environment) {
            return Ok(from_environment);
        }
        let timeout = match limit.instant() {
            None => REQUEST_TIMEOUT,
            Some(deadline) => deadline
                .checked_duration_since(crate::runtime::now())
                .filter(|left| !left.is_zero())
                .ok_or_else(|| Error::timeout("no time left to fetch AWS credentials"))?
                .min(REQUEST_TIMEOUT),
        };
        let environment = Arc::clone(&self.environment);
        let endpoints = self.endpoints.clone();
        let fetched =
            crate::runtime::run_blocking(move || fetch::fetch(&*environment, &endpoints, timeout))
                .await
                .ok_or_else(|| {
                    Error::authentication("the runtime shut down while fetching AWS credentials")
                })??;
        self.cache.put(fetched.clone());
        Ok(fetched)
    }
}

/// Authenticates `connection` with MONGODB-AWS against `source` (`$external`). Any failure
/// clears the cached credentials, as the specification requires, so the next attempt fetches
/// fresh ones.
///
/// # Errors
/// `Authentication` when no credentials can be obtained, the server's messages fail the
/// specification's checks, or the server refuses the signature; network, timeout and
/// protocol errors from the exchange as such.
///
/// # Cancel safety
/// Not cancel safe: a dropped future leaves the connection broken.
pub(crate) async fn authenticate(
    connection: &mut Connection,
    aws: &AwsAuth,
    source: &str,
    limit: IoLimit,
) -> Result<()> {
    let result = converse(connection, aws, source, limit).await;
    if result.is_err() {
        aws.cache.clear();
    }
    result
}

async fn converse(
    connection: &mut Connection,
    aws: &AwsAuth,
    source: &str,
    limit: IoLimit,
) -> Result<()> {
    let credential = aws.credential(limit).await?;
    let nonce: [u8; NONCE_BYTES] = crate::runtime::secure_random_bytes();
    let start = doc! {
        "saslStart": 1,
        "mechanism": MECHANISM,
        "payload": crate::handshake::binary(conversation::client_first(&nonce)?),
    };
    let server_first = super::sasl_command(connection, source, start, limit).await?;
    let conversation_id = server_first
        .get("conversationId")
        .cloned()
        .ok_or_else(|| Error::authentication("the SASL reply has no conversationId"))?;
    if super::is_done(&server_first) {
        return Err(Error::authentication(
            "the server ended the MONGODB-AWS conversation before the signature",
        ));
    }
    let server = conversation::parse_server_first(&super::payload(&server_first)?, &nonce)?;
    let date = sigv4::amz_date(crate::runtime::unix_seconds());
    let second = conversation::client_second(&server, &credential, &date)?;
    let command = doc! {
        "saslContinue": 1,
        "conversationId": conversation_id,
        "payload": crate::handshake::binary(second),
    };
    let reply = super::sasl_command(connection, source, command, limit).await?;
    if !super::is_done(&reply) {
        return Err(Error::authentication(
            "the server did not finish the MONGODB-AWS conversation",
        ));
    }
    Ok(())
}
