//! Authentication as mongod does it: users stored as SCRAM credentials (never their
//! passwords), the `saslStart` / `saslContinue` conversation for SCRAM-SHA-1 and
//! SCRAM-SHA-256, PLAIN (checked against those credentials), MONGODB-X509 (`authenticate` on
//! `$external` with the TLS client certificate's subject as the user), speculative
//! authentication inside `hello`, `saslSupportedMechs`, and the list of commands a connection
//! may run before it has authenticated.
//!
//! Everything here is pure: randomness (salts, server nonces) is passed in, and the
//! per-connection state ([`ConnectionAuth`]) lives with the connection. Authenticated users
//! may run every command: roles are not modelled.
//!
//! # Example
//!
//! ```
//! use blackpipe::auth::{Mechanism, User};
//! use blackpipe::deployment::DeploymentConfig;
//!
//! let config = DeploymentConfig::standalone()
//!     .with_user(User::new("app", "s3cret"))
//!     .with_user(User::new("legacy", "pw").with_mechanisms(vec![Mechanism::ScramSha1]));
//! assert!(config.auth);
//! ```

pub mod aws;
mod error;
pub mod oidc;
mod plain;
mod scram;
mod session;
mod users;
mod x509;

#[cfg(test)]
mod tests;

pub use aws::AwsKey;
pub use error::AuthError;
pub use oidc::{OidcConfig, OidcIssuer};
pub use session::{ConnectionAuth, requires_authentication};
pub use users::{EXTERNAL_DB, Mechanism, User, Users};
pub use x509::subject_name;

/// The most bytes a client's SCRAM message may have. Real ones are about a hundred bytes
/// plus the user name; anything longer is refused before it is parsed.
pub const MAX_PAYLOAD_BYTES: usize = 4096;

/// How many conversations one connection may start. A driver needs one (two after a failed
/// speculative attempt); the bound keeps one socket from guessing passwords forever.
pub const MAX_CONVERSATIONS_PER_CONNECTION: u32 = 16;
