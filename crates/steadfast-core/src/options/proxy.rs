//! SOCKS5 proxies (socks5.md): the `proxyHost`, `proxyPort`, `proxyUsername` and
//! `proxyPassword` options and their combination rules.

use std::fmt;

use typed_builder::TypedBuilder;

use super::{OptionsError, redacted};

/// The port a SOCKS5 proxy listens on when `proxyPort` is not given.
pub const DEFAULT_PROXY_PORT: u16 = 1080;

/// The proxy options exactly as a connection string gave them.
#[derive(Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct UriProxyOptions {
    /// `proxyHost`.
    pub host: Option<String>,
    /// `proxyPort`.
    pub port: Option<u16>,
    /// `proxyUsername`.
    pub username: Option<String>,
    /// `proxyPassword` (never shown by `Debug`).
    pub password: Option<String>,
}

impl fmt::Debug for UriProxyOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UriProxyOptions")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("username", &self.username)
            .field("password", redacted(&self.password))
            .finish()
    }
}

/// A SOCKS5 proxy every connection of a client goes through (application and monitoring
/// connections alike). The proxy is given the servers' host names as they are: the driver
/// never resolves them itself.
#[derive(Clone, PartialEq, Eq, TypedBuilder, serde::Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct Socks5Proxy {
    /// The host name or IP address the proxy listens on (`proxyHost`).
    #[builder(!default)]
    pub host: String,
    /// The port it listens on (`proxyPort`); `None` means 1080.
    pub port: Option<u16>,
    /// The username and password to authenticate to the proxy with (`proxyUsername`,
    /// `proxyPassword`); `None` offers no authentication only.
    pub authentication: Option<(String, String)>,
}

impl Socks5Proxy {
    /// The port to connect to.
    #[must_use]
    pub fn port_or_default(&self) -> u16 {
        self.port.unwrap_or(DEFAULT_PROXY_PORT)
    }

    /// The proxy a connection string's options name, if any.
    ///
    /// # Errors
    /// [`OptionsError::Conflict`] for `proxyPort`, `proxyUsername` or `proxyPassword` without
    /// `proxyHost`, and for a username without a password or the reverse.
    pub fn from_uri(uri: &UriProxyOptions) -> Result<Option<Self>, OptionsError> {
        let Some(host) = uri.host.clone() else {
            let given = [
                ("proxyPort", uri.port.is_some()),
                ("proxyUsername", uri.username.is_some()),
                ("proxyPassword", uri.password.is_some()),
            ];
            return match given.into_iter().find(|(_, given)| *given) {
                Some((option, _)) => Err(OptionsError::Conflict {
                    first: option,
                    second: "proxyHost",
                    reason: "a proxy option needs proxyHost",
                }),
                None => Ok(None),
            };
        };
        let authentication = match (&uri.username, &uri.password) {
            (Some(user), Some(password)) => Some((user.clone(), password.clone())),
            (None, None) => None,
            _ => {
                return Err(OptionsError::Conflict {
                    first: "proxyUsername",
                    second: "proxyPassword",
                    reason: "each needs the other",
                });
            }
        };
        Ok(Some(Socks5Proxy {
            host,
            port: uri.port,
            authentication,
        }))
    }
}

impl fmt::Debug for Socks5Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Socks5Proxy")
            .field("host", &self.host)
            .field("port", &self.port)
            .field(
                "authentication",
                &self
                    .authentication
                    .as_ref()
                    .map(|(user, _)| (user, "<redacted>")),
            )
            .finish()
    }
}
