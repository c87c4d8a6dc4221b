//! Connection strings (`mongodb://`, `mongodb+srv://`) and client options.
//!
//! [`ConnectionString::parse`] reads the syntax and types every option, collecting warnings for
//! what the specifications say to ignore; [`ClientOptions::parse`] turns a `mongodb://` string
//! into validated options directly, and hands back the [`ConnectionString`] of a
//! `mongodb+srv://` one so that the caller can resolve DNS and finish with
//! [`ConnectionString::resolve_srv`].

use std::fmt;

pub mod auth;
pub mod client;
pub mod compression;
pub mod concern;
mod error;
pub mod oidc;
pub mod proxy;
pub mod srv;
pub mod tls;
pub mod uri;
pub mod uri_options;

#[cfg(test)]
mod tests;

pub use auth::{AuthMechanism, Credential, CredentialBuilder};
pub use client::{ClientOptions, ParsedUri, ServerMonitoringMode};
pub use compression::Compressor;
pub use concern::{Acknowledgment, ReadConcern, ReadConcernLevel, WriteConcern};
pub use error::OptionsError;
pub use proxy::{Socks5Proxy, UriProxyOptions};
pub use srv::{SrvHost, SrvLookup, SrvRecord, SrvResolution};
pub use tls::{Tls, UriTlsOptions};
pub use uri::{ConnectionString, HostInfo, UserInfo};
pub use uri_options::UriOptions;

/// Debug-prints a secret as `<redacted>` (or `None` when absent) without exposing it.
pub(crate) fn redacted(secret: &Option<String>) -> &'static dyn fmt::Debug {
    match secret {
        Some(_) => &Redacted,
        None => &None::<()>,
    }
}

struct Redacted;

impl fmt::Debug for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}
