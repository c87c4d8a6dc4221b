//! PLAIN (RFC 4616), MongoDB's LDAP proxy authentication: one `saslStart` carrying
//! `NUL username NUL password` to the credential's source (`$external` unless the connection
//! string names a database or authSource). The authentication specification asks for no
//! SASLprep here, so the name and password are sent exactly as the application gave them; the
//! password crosses the network in clear inside the command, which is why PLAIN belongs on TLS.

use bson::doc;
use steadfast_core::IoLimit;

use super::{is_done, sasl_command};
use crate::conn::Connection;
use crate::conn::config::AuthSettings;
use crate::error::{Error, Result};

/// The mechanism's name in `saslStart`.
const MECHANISM: &str = "PLAIN";

/// The PLAIN message: an empty authorization identity, then the user and the password.
fn message(username: &str, password: &str) -> Vec<u8> {
    let mut message = Vec::with_capacity(username.len() + password.len() + 2);
    message.push(0);
    message.extend_from_slice(username.as_bytes());
    message.push(0);
    message.extend_from_slice(password.as_bytes());
    message
}

/// Authenticates `connection` with PLAIN.
///
/// # Errors
/// `Authentication` when the server refuses the credential or does not finish the
/// conversation in one step; network, timeout and protocol errors from the exchange.
///
/// # Cancel safety
/// Not cancel safe: a dropped future leaves the connection broken.
pub(crate) async fn authenticate(
    connection: &mut Connection,
    auth: &AuthSettings,
    limit: IoLimit,
) -> Result<()> {
    let command = doc! {
        "saslStart": 1,
        "mechanism": MECHANISM,
        "payload": crate::handshake::binary(message(&auth.username, &auth.password)),
        "autoAuthorize": 1,
    };
    let reply = sasl_command(connection, &auth.source, command, limit).await?;
    if !is_done(&reply) {
        return Err(Error::authentication(
            "the server did not finish the PLAIN conversation in one step",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::message;

    #[test]
    fn the_message_is_nul_user_nul_password_without_saslprep() {
        assert_eq!(message("user", "pencil"), b"\0user\0pencil");
        // U+00AD (soft hyphen) is one SASLprep would remove: PLAIN keeps it.
        assert_eq!(message("u", "a\u{ad}b"), "\0u\0a\u{ad}b".as_bytes());
    }
}
