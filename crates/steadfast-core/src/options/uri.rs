//! Connection string syntax (connection-string-spec.md): scheme, user information, hosts,
//! auth database and options.

use std::fmt;

use percent_encoding::percent_decode_str;

use super::client::ClientOptions;
use super::srv::SrvHost;
use super::uri_options::UriOptions;
use super::{OptionsError, redacted};
use crate::address::{AddressError, DEFAULT_PORT, ServerAddress};

const SCHEME: &str = "mongodb://";
const SRV_SCHEME: &str = "mongodb+srv://";

/// Characters MongoDB forbids in a database name (the period is allowed, for namespaces).
const FORBIDDEN_DATABASE_CHARS: &[char] = &['/', '\\', ' ', '"', '$'];

/// The host part of a connection string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostInfo {
    /// `mongodb://`: the seed list as written.
    Seeds(Vec<ServerAddress>),
    /// `mongodb+srv://`: one host name to resolve through DNS.
    Srv(SrvHost),
}

/// The user information of a connection string, percent-decoded. The `Debug` output never
/// shows the password.
#[derive(Clone, PartialEq, Eq)]
pub struct UserInfo {
    /// The user name (possibly empty: an `@` alone still asks for authentication).
    pub username: String,
    /// The password, when a `:` follows the user name (possibly empty).
    pub password: Option<String>,
}

impl fmt::Debug for UserInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserInfo")
            .field("username", &self.username)
            .field("password", &redacted(&self.password))
            .finish()
    }
}

/// A parsed connection string: every part decoded and every option typed, nothing resolved.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ConnectionString {
    /// The hosts, or the SRV name for `mongodb+srv://`.
    pub host_info: HostInfo,
    /// The user information, if the string has an `@`.
    pub user_info: Option<UserInfo>,
    /// The database after the hosts, percent-decoded.
    pub default_database: Option<String>,
    /// The options exactly as given.
    pub options: UriOptions,
    /// Unknown options and unusable values that were ignored, one message each.
    pub warnings: Vec<String>,
}

impl ConnectionString {
    /// Parses and checks a connection string. Every rule that the string alone can decide is
    /// applied here, including the combination rules; for `mongodb+srv://` the rules that need
    /// the resolved hosts run again in [`ConnectionString::resolve_srv`].
    ///
    /// # Errors
    /// [`OptionsError`] naming the offending part: the scheme, a host, the user information,
    /// the database, an option, or a forbidden combination of options.
    pub fn parse(uri: &str) -> Result<Self, OptionsError> {
        let (is_srv, rest) = if let Some(rest) = uri.strip_prefix(SCHEME) {
            (false, rest)
        } else if let Some(rest) = uri.strip_prefix(SRV_SCHEME) {
            (true, rest)
        } else {
            // Only the scheme is echoed: the rest may hold a password.
            let scheme = uri.split_once("://").map_or("", |(scheme, _)| scheme);
            return Err(OptionsError::InvalidScheme(scheme.to_string()));
        };
        // The host information ends at the first '/' or '?': neither may appear in it unescaped.
        let host_end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, after_hosts) = rest.split_at(host_end);
        // Without an '@' before the first '/' or '?', an '@' after it means a '/' or '?' inside
        // the user information cut it short: refuse here, before the password's pieces could be
        // reported as a host, a database or an option (or `user:1234` taken for a host). So a
        // string without credentials must write an '@' in its options as %40.
        if !authority.contains('@') && after_hosts.contains('@') {
            return Err(OptionsError::InvalidUserInfo(
                "it contains an unescaped '/' or '?' (or, without credentials, an '@' follows the hosts)",
            ));
        }
        let (user_info, hosts_text) = match authority.rfind('@') {
            Some(at) => (
                Some(parse_user_info(&authority[..at])?),
                &authority[at + 1..],
            ),
            None => (None, authority),
        };
        let (path, query) = match after_hosts.split_once('?') {
            Some((path, query)) => (path, query),
            None => (after_hosts, ""),
        };
        if hosts_text.is_empty() {
            if path.contains(".sock") {
                return Err(OptionsError::UnescapedSocketPath(path.to_string()));
            }
            return Err(OptionsError::MissingHost);
        }
        let default_database = parse_database(path.strip_prefix('/').unwrap_or(path))?;
        let host_info = if is_srv {
            HostInfo::Srv(SrvHost::parse(hosts_text)?)
        } else {
            HostInfo::Seeds(
                hosts_text
                    .split(',')
                    .map(parse_host)
                    .collect::<Result<_, _>>()?,
            )
        };
        let mut warnings = Vec::new();
        let options = UriOptions::parse(query, &mut warnings)?;
        let parsed = ConnectionString {
            host_info,
            user_info,
            default_database,
            options,
            warnings,
        };
        parsed.check_rules()?;
        Ok(parsed)
    }

    /// The credential the string asks for (user information and the `auth*` options), with
    /// its source filled in as the authentication specification defaults it; `None` when the
    /// string names neither a user nor a mechanism.
    pub fn credential(&self) -> Option<super::Credential> {
        super::client::build_credential(
            self.user_info.as_ref(),
            self.default_database.as_deref(),
            &self.options,
        )
    }

    /// Whether this is a `mongodb+srv://` string.
    pub fn is_srv(&self) -> bool {
        matches!(self.host_info, HostInfo::Srv(_))
    }

    /// Runs the combination rules on what the string says. For an SRV string the hosts are not
    /// known yet, so only the host-independent rules run (TXT records can only add options that
    /// the string lacks, so a conflict found here cannot disappear later).
    fn check_rules(&self) -> Result<(), OptionsError> {
        match &self.host_info {
            HostInfo::Seeds(seeds) => ClientOptions::from_parts(
                seeds.clone(),
                None,
                self.user_info.as_ref(),
                self.default_database.as_deref(),
                &self.options,
            )?
            .validate(),
            HostInfo::Srv(srv) => ClientOptions::from_parts(
                Vec::new(),
                Some(srv.clone()),
                self.user_info.as_ref(),
                self.default_database.as_deref(),
                &self.options,
            )?
            .validate_without_hosts(),
        }
    }
}

/// Splits and decodes `user[:password]`, refusing what must have been percent-encoded.
fn parse_user_info(text: &str) -> Result<UserInfo, OptionsError> {
    if text.contains('@') {
        return Err(OptionsError::InvalidUserInfo(
            "it contains an unescaped '@'",
        ));
    }
    if text.matches(':').count() > 1 {
        return Err(OptionsError::InvalidUserInfo(
            "it contains more than one unescaped ':'",
        ));
    }
    if !is_percent_encoding_valid(text) {
        return Err(OptionsError::InvalidUserInfo(
            "it contains a '%' not followed by two hex digits",
        ));
    }
    let decode = |part: &str| {
        percent_decode_str(part)
            .decode_utf8()
            .map(|s| s.into_owned())
            .map_err(|_| OptionsError::InvalidUserInfo("it does not decode to UTF-8"))
    };
    Ok(match text.split_once(':') {
        Some((user, password)) => UserInfo {
            username: decode(user)?,
            password: Some(decode(password)?),
        },
        None => UserInfo {
            username: decode(text)?,
            password: None,
        },
    })
}

/// Whether every '%' starts a `%XX` escape.
fn is_percent_encoding_valid(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let escape = bytes.get(i + 1..i + 3);
            if !escape.is_some_and(|e| e.iter().all(u8::is_ascii_hexdigit)) {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    true
}

fn parse_database(text: &str) -> Result<Option<String>, OptionsError> {
    if text.is_empty() {
        return Ok(None);
    }
    let name = percent_decode_str(text)
        .decode_utf8()
        .map_err(|_| OptionsError::InvalidDatabase {
            name: text.to_string(),
            forbidden: '%',
        })?
        .into_owned();
    match name.chars().find(|c| FORBIDDEN_DATABASE_CHARS.contains(c)) {
        Some(forbidden) => Err(OptionsError::InvalidDatabase { name, forbidden }),
        None => Ok(Some(name)),
    }
}

/// Parses one host identifier: `host`, `host:port`, `[v6]`, `[v6]:port`, or a percent-encoded
/// Unix socket path ending in `.sock`.
fn parse_host(text: &str) -> Result<ServerAddress, OptionsError> {
    let invalid = |reason: AddressError| OptionsError::InvalidHost {
        host: text.to_string(),
        reason,
    };
    if text.is_empty() {
        return Err(invalid(AddressError::EmptyHost(String::new())));
    }
    if text.starts_with('[') {
        // An IP literal is never percent-encoded; ServerAddress knows the bracket syntax.
        return ServerAddress::parse(text).map_err(invalid);
    }
    let decoded = percent_decode_str(text)
        .decode_utf8()
        .map_err(|_| OptionsError::UnsupportedHost(text.to_string()))?;
    if decoded.contains('/') {
        if decoded.ends_with(".sock") {
            return Ok(ServerAddress::Unix {
                path: decoded.into_owned(),
            });
        }
        return Err(OptionsError::UnsupportedHost(decoded.into_owned()));
    }
    let (host, port) = match decoded.rsplit_once(':') {
        Some((host, _)) if host.contains(':') => {
            return Err(invalid(AddressError::InvalidIpv6(text.to_string())));
        }
        Some((host, port)) => (host, Some(port)),
        None => (decoded.as_ref(), None),
    };
    if host.is_empty() {
        return Err(invalid(AddressError::EmptyHost(text.to_string())));
    }
    let port = match port {
        None => DEFAULT_PORT,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 && p.bytes().all(|b| b.is_ascii_digit()) => n,
            _ => return Err(invalid(AddressError::InvalidPort(text.to_string()))),
        },
    };
    // Built directly rather than through ServerAddress::parse, which would read a host name
    // such as `mongodb-27017.sock` as a socket path.
    Ok(ServerAddress::tcp(host, port))
}
