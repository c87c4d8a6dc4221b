//! PLAIN (RFC 4616): `saslStart` with `[authzid] NUL user NUL password`, finished in one step.
//!
//! blackpipe keeps no password, so PLAIN is checked against the user's stored SCRAM
//! credential: the password is run through the same derivation (salt and iteration count from
//! the credential) and the resulting StoredKey compared in constant time. Any user with a
//! SCRAM credential in the database the client names can therefore use PLAIN; real deployments
//! reach PLAIN users through LDAP on `$external`, which tests model as users defined there.

use bson::Document;

use super::error::AuthError;
use super::session::{ConnectionAuth, payload, step_reply};
use super::users::{Mechanism, Users};

/// The mechanism's name in `saslStart`.
pub(super) const MECHANISM: &str = "PLAIN";

/// The user and password of a PLAIN message. An authorization identity, if sent, must name
/// the user itself (the only form MongoDB accepts).
fn parse(message: &str) -> Result<(&str, &str), AuthError> {
    let mut parts = message.split('\0');
    let (Some(authzid), Some(user), Some(password), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(AuthError::malformed(
            "Incorrectly formatted PLAIN client message",
        ));
    };
    if user.is_empty() {
        return Err(AuthError::malformed("PLAIN user name must not be empty"));
    }
    if !authzid.is_empty() && authzid != user {
        return Err(AuthError::malformed(
            "SASL authorization identity must match authentication identity",
        ));
    }
    Ok((user, password))
}

/// Whether `password` is `db.user`'s: checked against SCRAM-SHA-256's credential when the user
/// has one (the password SASLprepped), else SCRAM-SHA-1's.
fn verify(users: &Users, db: &str, user: &str, password: &str) -> bool {
    [Mechanism::ScramSha256, Mechanism::ScramSha1]
        .into_iter()
        .find_map(|mechanism| {
            users
                .credential(db, user, mechanism)
                .map(|credential| credential.matches_password(mechanism, user, password))
        })
        .unwrap_or(false)
}

impl ConnectionAuth {
    /// Runs a PLAIN `saslStart` sent to `db`; returns the reply (done at once, or an error).
    pub(crate) fn plain(&mut self, users: &Users, db: &str, command: &Document) -> Document {
        self.plain_step(users, db, command)
            .unwrap_or_else(|error| error.to_reply())
    }

    fn plain_step(
        &mut self,
        users: &Users,
        db: &str,
        command: &Document,
    ) -> Result<Document, AuthError> {
        self.count_attempt()?;
        let message = payload(command)?;
        let (user, password) = parse(&message)?;
        if !verify(users, db, user, password) {
            return Err(AuthError::Failed);
        }
        self.set_user(db, user.to_owned());
        Ok(step_reply(true, b""))
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use bson::doc;

    use super::*;
    use crate::auth::User;

    fn start(user_password: &str, db: &str) -> Document {
        let users = Users::new(
            &[
                User::new("ldap", "pencil").with_db("$external"),
                User::new("old", "pw")
                    .with_db("$external")
                    .with_mechanisms(vec![Mechanism::ScramSha1]),
            ],
            &mut rand::rng(),
        )
        .unwrap();
        let payload = base64::engine::general_purpose::STANDARD.encode(user_password);
        let command = doc! { "saslStart": 1, "mechanism": "PLAIN", "payload": payload };
        ConnectionAuth::default().sasl_start(&users, db, &command, &mut rand::rng())
    }

    #[test]
    fn the_password_is_checked_against_either_scram_credential() {
        assert_eq!(
            start("\0ldap\0pencil", "$external").get_bool("done").ok(),
            Some(true)
        );
        assert_eq!(
            start("\0old\0pw", "$external").get_bool("done").ok(),
            Some(true)
        );
        assert_eq!(
            start("\0ldap\0crayon", "$external").get_i32("code").ok(),
            Some(18)
        );
        assert_eq!(
            start("\0ldap\0pencil", "admin").get_i32("code").ok(),
            Some(18)
        );
        assert_eq!(
            start("\0nobody\0pencil", "$external").get_i32("code").ok(),
            Some(18)
        );
        assert_eq!(start("garbage", "$external").get_i32("code").ok(), Some(2));
    }

    #[test]
    fn parses_both_forms_and_refuses_a_foreign_authorization_identity() {
        assert_eq!(parse("\0user\0pencil").unwrap(), ("user", "pencil"));
        assert_eq!(parse("user\0user\0pencil").unwrap(), ("user", "pencil"));
        assert!(parse("admin\0user\0pencil").is_err());
        assert!(parse("\0\0pencil").is_err());
        assert!(parse("user\0pencil").is_err());
        assert!(parse("\0user\0pencil\0extra").is_err());
    }
}
