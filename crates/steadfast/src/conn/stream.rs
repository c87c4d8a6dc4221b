//! Opening the byte stream under a connection: DNS, TCP (or a Unix socket), socket options, TLS.

#[cfg(feature = "dns-resolver")]
use std::sync::Arc;
use std::time::Duration;

use socket2::{SockRef, TcpKeepalive};
use steadfast_core::ServerAddress;
use steadfast_core::options::Socks5Proxy;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use super::{socks5, tls};
use crate::error::{Error, Result};

/// Anything a connection can talk through: TCP, TLS over TCP, a Unix socket, or (in unit tests)
/// an in-memory pipe.
pub(crate) trait AsyncStream: AsyncRead + AsyncWrite + Unpin + Send + Sync {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send + Sync> AsyncStream for T {}

/// A boxed stream: one indirection per read/write call, negligible next to a syscall.
pub(crate) type BoxedStream = Box<dyn AsyncStream>;

/// Idle time before the first keepalive probe. MongoDB's production notes recommend 120 s so
/// that firewalls and load balancers do not silently drop idle pooled connections.
const KEEPALIVE_TIME: Duration = Duration::from_secs(120);

/// How a server's host name becomes socket addresses.
#[derive(Clone, Default)]
pub(crate) enum HostResolver {
    /// The operating system's lookup (`getaddrinfo`: hosts file, then its DNS).
    #[default]
    System,
    /// The name servers of the client's `ResolverConfig` (A, then AAAA records). IP literals
    /// are used as they are.
    #[cfg(feature = "dns-resolver")]
    Dns(Arc<hickory_resolver::TokioResolver>),
}

impl std::fmt::Debug for HostResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            HostResolver::System => "System",
            #[cfg(feature = "dns-resolver")]
            HostResolver::Dns(_) => "Dns",
        })
    }
}

impl HostResolver {
    /// The socket addresses of `host`, in the order to try them.
    ///
    /// # Errors
    /// `Network` when the name cannot be resolved.
    async fn resolve(&self, host: &str, port: u16) -> Result<Vec<std::net::SocketAddr>> {
        match self {
            HostResolver::System => Ok(tokio::net::lookup_host((host, port))
                .await
                .map_err(|e| Error::network_io(format!("cannot resolve {host}"), e))?
                .collect()),
            #[cfg(feature = "dns-resolver")]
            HostResolver::Dns(resolver) => {
                if let Ok(ip) = host.parse::<std::net::IpAddr>() {
                    return Ok(vec![std::net::SocketAddr::new(ip, port)]);
                }
                // A fully qualified name: the configured name servers are asked for it as it
                // is, never with search domains appended.
                let name = format!("{}.", host.trim_end_matches('.'));
                let answer = resolver.lookup_ip(name).await.map_err(|e| {
                    Error::network(format!("cannot resolve {host}: {e}")).with_source(e)
                })?;
                Ok(answer
                    .iter()
                    .map(|ip| std::net::SocketAddr::new(ip, port))
                    .collect())
            }
        }
    }
}

/// Opens a stream to `address`, with TLS when `tls` is given, resolving its host name through
/// `resolver`. `connect_timeout` bounds the whole of DNS resolution, TCP connect and TLS
/// handshake (`None` = no limit).
///
/// # Errors
/// `Timeout` when the deadline passes, `Network` when no resolved address accepts the
/// connection, `InvalidTlsConfig` when the TLS handshake fails (e.g. the certificate is rejected).
///
/// # Cancel safety
/// Dropping the future abandons the half-open socket, which is closed on drop.
pub(crate) async fn open(
    address: &ServerAddress,
    route: &Route<'_>,
    connect_timeout: Option<Duration>,
) -> Result<BoxedStream> {
    let attempt = open_without_timeout(address, route);
    let result = match connect_timeout {
        Some(limit) => tokio::time::timeout(limit, attempt).await.map_err(|_| {
            Error::timeout(format!(
                "connecting (connectTimeoutMS {} ms)",
                limit.as_millis()
            ))
        })?,
        None => attempt.await,
    };
    result.map_err(|e| e.with_address(address))
}

async fn open_without_timeout(address: &ServerAddress, route: &Route<'_>) -> Result<BoxedStream> {
    let tls = route.tls;
    match address {
        ServerAddress::Tcp { host, port } => {
            let port = port.unwrap_or(steadfast_core::address::DEFAULT_PORT);
            let tcp = match route.proxy {
                Some(proxy) => socks5::connect(proxy, host, port, route.resolver).await?,
                None => connect_tcp(host, port, route.resolver).await?,
            };
            match tls {
                Some(config) => tls::handshake(config, host, tcp).await,
                None => Ok(Box::new(tcp)),
            }
        }
        ServerAddress::Unix { path } => open_unix(path, tls.is_some()).await,
    }
}

/// How a connection reaches its server: name resolution, an optional SOCKS5 proxy, and TLS.
pub(crate) struct Route<'a> {
    /// Resolves the server's host name, or the proxy's when there is one (the server's name
    /// then goes to the proxy as it is).
    pub(crate) resolver: &'a HostResolver,
    /// The SOCKS5 proxy, if any.
    pub(crate) proxy: Option<&'a Socks5Proxy>,
    /// TLS, when on (end to end with the server, through the proxy).
    pub(crate) tls: Option<&'a tls::TlsConfig>,
}

/// Opens a TCP connection to `host:port`, trying its resolved addresses in order.
///
/// # Errors
/// `Network` when no address accepts the connection or the name does not resolve.
pub(super) async fn connect_tcp(
    host: &str,
    port: u16,
    resolver: &HostResolver,
) -> Result<TcpStream> {
    let resolved = resolver.resolve(host, port).await?;
    let mut last_error = None;
    // Addresses are tried in resolver order; the first that accepts wins.
    for socket_address in resolved {
        match TcpStream::connect(socket_address).await {
            Ok(stream) => {
                configure(&stream)?;
                return Ok(stream);
            }
            Err(e) => last_error = Some(e),
        }
    }
    Err(match last_error {
        Some(e) => Error::network_io(format!("cannot connect to {host}:{port}"), e),
        None => Error::network(format!("{host} resolved to no address")),
    })
}

fn configure(stream: &TcpStream) -> Result<()> {
    // Commands are small request/response exchanges: Nagle's delay would add latency to each.
    stream
        .set_nodelay(true)
        .map_err(|e| Error::network_io("cannot set TCP_NODELAY", e))?;
    SockRef::from(stream)
        .set_tcp_keepalive(&TcpKeepalive::new().with_time(KEEPALIVE_TIME))
        .map_err(|e| Error::network_io("cannot enable TCP keepalive", e))
}

#[cfg(unix)]
async fn open_unix(path: &str, tls: bool) -> Result<BoxedStream> {
    if tls {
        return Err(Error::invalid_argument(format!(
            "TLS is not supported over the Unix domain socket {path}"
        )));
    }
    let stream = tokio::net::UnixStream::connect(path)
        .await
        .map_err(|e| Error::network_io(format!("cannot connect to {path}"), e))?;
    Ok(Box::new(stream))
}

#[cfg(not(unix))]
async fn open_unix(path: &str, _tls: bool) -> Result<BoxedStream> {
    Err(Error::invalid_argument(format!(
        "Unix domain sockets ({path}) are not supported on this platform"
    )))
}
