//! Opening the byte stream under a connection: DNS, TCP (or a Unix socket), socket options, TLS.

use std::sync::Arc;
use std::time::Duration;

use socket2::{SockRef, TcpKeepalive};
use steadfast_core::ServerAddress;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use super::tls;
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

/// Opens a stream to `address`, with TLS when `tls` is given. `connect_timeout` bounds the
/// whole of DNS resolution, TCP connect and TLS handshake (`None` = no limit).
///
/// # Errors
/// `Timeout` when the deadline passes, `Network` when no resolved address accepts the
/// connection, `InvalidTlsConfig` when the TLS handshake fails (e.g. the certificate is rejected).
///
/// # Cancel safety
/// Dropping the future abandons the half-open socket, which is closed on drop.
pub(crate) async fn open(
    address: &ServerAddress,
    tls: Option<&Arc<rustls::ClientConfig>>,
    connect_timeout: Option<Duration>,
) -> Result<BoxedStream> {
    let attempt = open_without_timeout(address, tls);
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

async fn open_without_timeout(
    address: &ServerAddress,
    tls: Option<&Arc<rustls::ClientConfig>>,
) -> Result<BoxedStream> {
    match address {
        ServerAddress::Tcp { host, port } => {
            let tcp =
                connect_tcp(host, port.unwrap_or(steadfast_core::address::DEFAULT_PORT)).await?;
            match tls {
                Some(config) => {
                    let name = tls::server_name(host)?;
                    let connector = tokio_rustls::TlsConnector::from(config.clone());
                    let stream = connector.connect(name, tcp).await.map_err(|e| {
                        // rustls reports certificate problems as InvalidData I/O errors.
                        if e.kind() == std::io::ErrorKind::InvalidData {
                            Error::tls("the TLS handshake failed").with_source(e)
                        } else {
                            Error::network_io("the connection failed during the TLS handshake", e)
                        }
                    })?;
                    Ok(Box::new(stream))
                }
                None => Ok(Box::new(tcp)),
            }
        }
        ServerAddress::Unix { path } => open_unix(path, tls.is_some()).await,
    }
}

async fn connect_tcp(host: &str, port: u16) -> Result<TcpStream> {
    let resolved: Vec<_> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| Error::network_io(format!("cannot resolve {host}"), e))?
        .collect();
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
