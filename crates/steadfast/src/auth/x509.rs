//! MONGODB-X509: the server takes the user from the client certificate presented in the TLS
//! handshake. One `authenticate` command on `$external`, naming the user only when the
//! application gave one; it can ride in the handshake as `speculativeAuthenticate`, and a
//! reply carrying that field means the connection is already authenticated.

use bson::{Document, doc};
use steadfast_core::IoLimit;
use steadfast_core::options::Tls;
use steadfast_core::options::auth::EXTERNAL_SOURCE;

use super::sasl_command;
use crate::conn::Connection;
use crate::conn::config::AuthSettings;
use crate::error::{Error, Result};

/// The mechanism's name in `authenticate`.
const MECHANISM: &str = "MONGODB-X509";

/// The `authenticate` command; `user` only when the application named one (an empty
/// username means none).
pub(crate) fn authenticate_command(auth: &AuthSettings) -> Document {
    let mut command = doc! { "authenticate": 1, "mechanism": MECHANISM };
    if !auth.username.is_empty() {
        command.insert("user", auth.username.clone());
    }
    command
}

/// The handshake's `speculativeAuthenticate` document: the command plus its database.
pub(crate) fn speculative_command(auth: &AuthSettings) -> Document {
    let mut command = authenticate_command(auth);
    command.insert("db", EXTERNAL_SOURCE);
    command
}

/// MONGODB-X509 needs a client certificate, so TLS with `tlsCertificateKeyFile`.
///
/// # Errors
/// `InvalidArgument` when TLS is off or no certificate is configured.
pub(crate) fn check_tls(tls: &Tls) -> Result<()> {
    if tls.enabled && tls.cert_key_file.is_some() {
        return Ok(());
    }
    Err(Error::invalid_argument(
        "MONGODB-X509 authenticates with the client certificate: it needs tls=true and \
         tlsCertificateKeyFile",
    ))
}

/// Authenticates `connection`, unless the handshake already did (`speculative_done`: its
/// reply carried `speculativeAuthenticate`).
///
/// # Errors
/// `Authentication` when the server refuses the certificate or the named user; network,
/// timeout and protocol errors from the exchange.
///
/// # Cancel safety
/// Not cancel safe: a dropped future leaves the connection broken.
pub(crate) async fn authenticate(
    connection: &mut Connection,
    auth: &AuthSettings,
    speculative_done: bool,
    limit: IoLimit,
) -> Result<()> {
    if speculative_done {
        return Ok(());
    }
    sasl_command(
        connection,
        EXTERNAL_SOURCE,
        authenticate_command(auth),
        limit,
    )
    .await
    .map(drop)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bson::doc;

    use super::*;
    use crate::conn::config::MechanismChoice;

    fn settings(username: &str) -> AuthSettings {
        AuthSettings {
            username: username.to_owned(),
            password: String::new(),
            source: EXTERNAL_SOURCE.to_owned(),
            mechanism: MechanismChoice::X509,
            cache: Arc::default(),
            aws: None,
            oidc: None,
        }
    }

    #[test]
    fn the_user_is_sent_only_when_named() {
        assert_eq!(
            authenticate_command(&settings("")),
            doc! { "authenticate": 1, "mechanism": "MONGODB-X509" }
        );
        assert_eq!(
            speculative_command(&settings("CN=app")),
            doc! {
                "authenticate": 1, "mechanism": "MONGODB-X509", "user": "CN=app",
                "db": "$external",
            }
        );
    }

    #[test]
    fn tls_with_a_client_certificate_is_required() {
        let mut tls = Tls::default();
        assert!(check_tls(&tls).is_err());
        tls.enabled = true;
        assert!(check_tls(&tls).is_err());
        tls.cert_key_file = Some("client.pem".into());
        assert!(check_tls(&tls).is_ok());
    }
}
