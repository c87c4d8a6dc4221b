//! Server addresses: `host:port` pairs and Unix domain sockets.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

/// The default port of a MongoDB server.
pub const DEFAULT_PORT: u16 = 27017;

/// The address of one server, normalised as the SDAM specification requires: host names are
/// lower-cased (by [`ServerAddress::tcp`] and [`ServerAddress::parse`]), so `A:27017` and
/// `a:27017` are the same server, and a missing port is 27017 (`a` and `a:27017` are equal,
/// hash alike and sort together).
#[derive(Clone, Debug)]
pub enum ServerAddress {
    /// A TCP endpoint. IPv6 literals are stored without their brackets.
    Tcp {
        /// Host name or IP literal, lower-cased.
        host: String,
        /// TCP port; `None` means 27017.
        port: Option<u16>,
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
            port: Some(port),
        }
    }

    /// The parts that identify the server: equality, hashing and order use these, so that a
    /// port left out and port 27017 are the same.
    fn identity(&self) -> (&str, u16) {
        match self {
            ServerAddress::Tcp { host, port } => (host, port.unwrap_or(DEFAULT_PORT)),
            // A socket path has no port; 0 is never a TCP port, so the two kinds never meet.
            ServerAddress::Unix { path } => (path, 0),
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
            ServerAddress::Tcp { port, .. } => Some(port.unwrap_or(DEFAULT_PORT)),
            ServerAddress::Unix { .. } => None,
        }
    }
}

impl fmt::Display for ServerAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerAddress::Tcp { host, .. } => {
                let port = self.port().unwrap_or(DEFAULT_PORT);
                if host.contains(':') {
                    write!(f, "[{host}]:{port}")
                } else {
                    write!(f, "{host}:{port}")
                }
            }
            ServerAddress::Unix { path } => f.write_str(path),
        }
    }
}

impl PartialEq for ServerAddress {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for ServerAddress {}

impl Hash for ServerAddress {
    fn hash<H: Hasher>(&self, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        self.identity().hash(state);
    }
}

impl PartialOrd for ServerAddress {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ServerAddress {
    fn cmp(&self, other: &Self) -> Ordering {
        let kind = |address: &ServerAddress| matches!(address, ServerAddress::Unix { .. });
        kind(self)
            .cmp(&kind(other))
            .then_with(|| self.identity().cmp(&other.identity()))
    }
}

impl std::str::FromStr for ServerAddress {
    type Err = AddressError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ServerAddress::parse(s)
    }
}

impl Default for ServerAddress {
    /// `localhost:27017`.
    fn default() -> Self {
        ServerAddress::Tcp {
            host: "localhost".to_string(),
            port: None,
        }
    }
}

impl From<std::net::SocketAddr> for ServerAddress {
    fn from(address: std::net::SocketAddr) -> Self {
        ServerAddress::Tcp {
            host: address.ip().to_string(),
            port: Some(address.port()),
        }
    }
}

/// The serialized shape of a [`ServerAddress`]: `{ "Tcp": { host, port } }` or
/// `{ "Unix": { path } }`, as the official driver writes it.
#[derive(serde::Serialize)]
enum AddressForm<'a> {
    Tcp { host: &'a str, port: Option<u16> },
    Unix { path: &'a str },
}

impl serde::Serialize for ServerAddress {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ServerAddress::Tcp { host, port } => AddressForm::Tcp { host, port: *port },
            ServerAddress::Unix { path } => AddressForm::Unix { path },
        }
        .serialize(serializer)
    }
}

/// What a [`ServerAddress`] is read from: `"host:port"`, `{ host, port? }`, or the tagged form
/// it is written in.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum AddressInput {
    Text(String),
    Fields { host: String, port: Option<u16> },
    Tagged(TaggedAddress),
}

#[derive(serde::Deserialize)]
enum TaggedAddress {
    Tcp { host: String, port: Option<u16> },
    Unix { path: String },
}

impl<'de> serde::Deserialize<'de> for ServerAddress {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let tcp = |host: String, port: Option<u16>| match port {
            Some(port) => ServerAddress::tcp(host, port),
            None => ServerAddress::Tcp {
                host: host.to_ascii_lowercase(),
                port: None,
            },
        };
        Ok(match AddressInput::deserialize(deserializer)? {
            AddressInput::Text(text) => {
                ServerAddress::parse(&text).map_err(serde::de::Error::custom)?
            }
            AddressInput::Fields { host, port }
            | AddressInput::Tagged(TaggedAddress::Tcp { host, port }) => tcp(host, port),
            AddressInput::Tagged(TaggedAddress::Unix { path }) => ServerAddress::Unix { path },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_forms_and_defaults() {
        let tcp = ServerAddress::tcp("db", 27018);
        let written = bson::serialize_to_bson(&tcp).unwrap();
        assert_eq!(
            written,
            bson::Bson::Document(bson::doc! { "Tcp": { "host": "db", "port": 27018 } })
        );
        assert_eq!(
            bson::deserialize_from_bson::<ServerAddress>(written).unwrap(),
            tcp
        );
        let text: ServerAddress =
            bson::deserialize_from_bson(bson::Bson::String("DB:27018".into())).unwrap();
        assert_eq!(text, tcp);
        let fields: ServerAddress =
            bson::deserialize_from_bson(bson::Bson::Document(bson::doc! { "host": "db" })).unwrap();
        assert_eq!(fields, ServerAddress::tcp("db", 27017));
        assert!(
            bson::deserialize_from_bson::<ServerAddress>(bson::Bson::String("h:0".into())).is_err()
        );
        assert_eq!(
            ServerAddress::default(),
            ServerAddress::tcp("localhost", 27017)
        );
        let socket: std::net::SocketAddr = "127.0.0.1:5".parse().unwrap();
        assert_eq!(
            ServerAddress::from(socket),
            ServerAddress::tcp("127.0.0.1", 5)
        );
    }

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
    fn a_missing_port_is_the_default_port() {
        use std::collections::hash_map::DefaultHasher;
        let implicit = ServerAddress::Tcp {
            host: "a".into(),
            port: None,
        };
        let explicit = ServerAddress::tcp("a", 27017);
        assert_eq!(implicit, explicit);
        assert_eq!(implicit.cmp(&explicit), Ordering::Equal);
        let hash = |address: &ServerAddress| {
            let mut hasher = DefaultHasher::new();
            address.hash(&mut hasher);
            hasher.finish()
        };
        assert_eq!(hash(&implicit), hash(&explicit));
        assert_eq!(implicit.to_string(), "a:27017");
        assert_eq!(implicit.port(), Some(27017));
        assert_ne!(implicit, ServerAddress::tcp("a", 27018));
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
