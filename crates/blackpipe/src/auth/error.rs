//! What can go wrong while authenticating, and the mongod error each becomes.

use bson::Document;

use crate::deployment::errors::error_reply;

use blackpipe_store::code::{
    AUTHENTICATION_FAILED, BAD_VALUE, MECHANISM_UNAVAILABLE, PROTOCOL_ERROR,
};

/// Why an authentication step or a user definition was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// Unknown user, wrong password, or a user without credentials for the mechanism: one
    /// variant, so that the reply never tells which.
    #[error("Authentication failed.")]
    Failed,
    /// The client's message does not follow SCRAM (RFC 5802) or the command is malformed.
    #[error("{0}")]
    Malformed(String),
    /// A mechanism blackpipe does not offer.
    #[error("Received authentication for mechanism {0} which is not enabled")]
    UnsupportedMechanism(String),
    /// MONGODB-X509 on a connection without a verified client certificate.
    #[error("No verified subject name available from client")]
    NoClientCertificate,
    /// MONGODB-X509 sent to a database other than `$external`.
    #[error("X.509 authentication must always use the $external database.")]
    X509OutsideExternal,
    /// MONGODB-X509 naming a user other than the certificate's subject.
    #[error("There is no x.509 client certificate matching the user.")]
    X509UserMismatch,
    /// `saslContinue` without a conversation in progress, or with another id.
    #[error("No SASL session state found")]
    NoConversation,
    /// The connection started more conversations than [`super::MAX_CONVERSATIONS_PER_CONNECTION`].
    #[error("too many authentication attempts on this connection")]
    TooManyConversations,
    /// A user definition that cannot be stored (empty name, password SASLprep rejects...).
    #[error("invalid user {user}: {reason}")]
    InvalidUser {
        /// `db.name` of the user.
        user: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl AuthError {
    /// The mongod error code a client sees.
    pub fn code(&self) -> i32 {
        match self {
            AuthError::Failed | AuthError::NoClientCertificate | AuthError::X509UserMismatch => {
                AUTHENTICATION_FAILED
            }
            AuthError::X509OutsideExternal => PROTOCOL_ERROR,
            AuthError::Malformed(_) | AuthError::InvalidUser { .. } => BAD_VALUE,
            AuthError::UnsupportedMechanism(_) => MECHANISM_UNAVAILABLE,
            AuthError::NoConversation => PROTOCOL_ERROR,
            AuthError::TooManyConversations => AUTHENTICATION_FAILED,
        }
    }

    /// The command error reply `{ok: 0, errmsg, code, codeName}`.
    pub fn to_reply(&self) -> Document {
        error_reply(self.code(), self.to_string())
    }

    pub(crate) fn malformed(message: impl Into<String>) -> Self {
        AuthError::Malformed(message.into())
    }
}
