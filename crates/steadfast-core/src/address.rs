//! Server addresses: `host:port` pairs and Unix domain sockets.

use std::fmt;

/// The default port of a MongoDB server.
pub const DEFAULT_PORT: u16 = 27017;

/// The address of one server, normalised as the SDAM specification requires: host names are
/// lower-cased, so `A:27017` and `a:27017` are the same server.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ServerAddress {
    /// A TCP endpoint. IPv6 literals are stored without their brackets.
    Tcp {
        /// Host name or IP literal, lower-cased.
        host: String,
        /// TCP port.
        port: u16,
    },
    /// A Unix domain socket path (a host ending in `.sock` in a connection string).
    Unix {
        /// Absolute or relative socket path, already percent-decoded.
        path: String,
    },
}

/// Why a string could not be read as a server address.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    /// The host part was empty.
    #[error("empty host in address {0:?}")]
    EmptyHost(String),
    /// The port was not a number between 1 and 65535.
    #[error("invalid port in address {0:?}: must be a number from 1 to 65535")]
    InvalidPort(String),
    /// An IPv6 literal was missing its closing bracket or had junk after it.
    #[error("invalid IPv6 literal in address {0:?}")]
    InvalidIpv6(String),
}

impl ServerAddress {
    /// A TCP address; the host is lower-cased.
    pub fn tcp(host: impl AsRef<str>, port: u16) -> Self {
        ServerAddress::Tcp {
            host: host.as_ref().to_ascii_lowercase(),
            port,
        }
    }

    /// Parses `host`, `host:port`, `[v6]` or `[v6]:port`; a path ending in `.sock` is a Unix
    /// socket. The port defaults to 27017.
    ///
    /// # Errors
    /// [`AddressError`] naming the whole input when the host is empty, the port is not in
    /// 1..=65535, or an IPv6 literal is malformed.
    pub fn parse(input: &str) -> Result<Self, AddressError> {
        if input.ends_with(".sock") {
            return Ok(ServerAddress::Unix {
                path: input.to_string(),
            });
        }
        let (host, port) = if let Some(rest) = input.strip_prefix('[') {
            let close = rest
                .find(']')
                .ok_or_else(|| AddressError::InvalidIpv6(input.to_string()))?;
            let host = &rest[..close];
            let after = &rest[close + 1..];
            let port = match after {
                "" => None,
                p if p.starts_with(':') => Some(&p[1..]),
                _ => return Err(AddressError::InvalidIpv6(input.to_string())),
            };
            (host, port)
        } else {
            match input.rsplit_once(':') {
                Some((h, _)) if h.contains(':') => {
                    // An unbracketed IPv6 literal is ambiguous with a port; refuse it.
                    return Err(AddressError::InvalidIpv6(input.to_string()));
                }
                Some((h, p)) => (h, Some(p)),
                None => (input, None),
            }
        };
        if host.is_empty() {
            return Err(AddressError::EmptyHost(input.to_string()));
        }
        let port = match port {
            None => DEFAULT_PORT,
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 && p.chars().all(|c| c.is_ascii_digit()) => n,
                _ => return Err(AddressError::InvalidPort(input.to_string())),
            },
        };
        Ok(ServerAddress::tcp(host, port))
    }

    /// The host (or socket path).
    pub fn host(&self) -> &str {
        match self {
            ServerAddress::Tcp { host, .. } => host,
            ServerAddress::Unix { path } => path,
        }
    }

    /// The TCP port, or `None` for a Unix socket.
    pub fn port(&self) -> Option<u16> {
        match self {
            ServerAddress::Tcp { port, .. } => Some(*port),
            ServerAddress::Unix { .. } => None,
        }
    }
}

impl fmt::Display for ServerAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerAddress::Tcp { host, port } if host.contains(':') => write!(f, "[{host}]:{port}"),
            ServerAddress::Tcp { host, port } => write!(f, "{host}:{port}"),
            ServerAddress::Unix { path } => f.write_str(path),
        }
    }
}

impl std::str::FromStr for ServerAddress {
    type Err = AddressError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ServerAddress::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_normalises() {
        assert_eq!(
            ServerAddress::parse("A.example:1").unwrap(),
            ServerAddress::tcp("a.example", 1)
        );
        assert_eq!(ServerAddress::parse("host").unwrap().port(), Some(27017));
        let v6 = ServerAddress::parse("[::1]:27018").unwrap();
        assert_eq!(v6.host(), "::1");
        assert_eq!(v6.to_string(), "[::1]:27018");
        assert!(matches!(
            ServerAddress::parse("/tmp/m.sock"),
            Ok(ServerAddress::Unix { .. })
        ));
    }

    #[test]
    fn rejects_bad_input() {
        assert!(matches!(
            ServerAddress::parse(":1"),
            Err(AddressError::EmptyHost(_))
        ));
        assert!(matches!(
            ServerAddress::parse("h:0"),
            Err(AddressError::InvalidPort(_))
        ));
        assert!(matches!(
            ServerAddress::parse("h:70000"),
            Err(AddressError::InvalidPort(_))
        ));
        assert!(matches!(
            ServerAddress::parse("h:+1"),
            Err(AddressError::InvalidPort(_))
        ));
        assert!(matches!(
            ServerAddress::parse("[::1"),
            Err(AddressError::InvalidIpv6(_))
        ));
        assert!(matches!(
            ServerAddress::parse("::1"),
            Err(AddressError::InvalidIpv6(_))
        ));
    }
}
