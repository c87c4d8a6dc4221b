//! Connections through a SOCKS5 proxy (socks5.md): TCP to the proxy, then its handshake
//! (RFC 1928, with RFC 1929 username/password when configured) asking it to connect to the
//! server by the name the application gave; TLS, if on, then runs end to end over the tunnel.

use steadfast_core::options::Socks5Proxy;
use tokio::net::TcpStream;
use tokio_socks::tcp::Socks5Stream;

use super::stream::{HostResolver, connect_tcp};
use crate::error::{Error, Result};

/// A TCP stream to `host:port` through `proxy`. The proxy's own name is resolved with
/// `resolver`; the server's never is here (the proxy resolves it), as the specification
/// requires.
///
/// # Errors
/// `Network` when the proxy cannot be reached, refuses the credentials or the connection, or
/// breaks the protocol: a network error like any refused connection (never an overload).
///
/// # Cancel safety
/// Dropping the future closes the half-open stream.
pub(super) async fn connect(
    proxy: &Socks5Proxy,
    host: &str,
    port: u16,
    resolver: &HostResolver,
) -> Result<TcpStream> {
    let proxy_port = proxy.port_or_default();
    let tcp = connect_tcp(&proxy.host, proxy_port, resolver).await?;
    // The name as it is: an IP literal goes as an address, anything else as a domain name.
    let target = (host, port);
    let tunnel = match &proxy.authentication {
        Some((user, password)) => {
            Socks5Stream::connect_with_password_and_socket(tcp, target, user, password).await
        }
        None => Socks5Stream::connect_with_socket(tcp, target).await,
    };
    let tunnel = tunnel.map_err(|e| {
        Error::network(format!(
            "the SOCKS5 proxy {}:{proxy_port} did not connect to {host}:{port}: {e}",
            proxy.host
        ))
        .with_source(e)
    })?;
    Ok(tunnel.into_inner())
}
