//! SOCKS5 when the `socks5-proxy` feature is off.

use steadfast_core::options::Socks5Proxy;
use tokio::net::TcpStream;

use super::stream::HostResolver;
use crate::error::{Error, Result};

/// # Errors
/// Always `InvalidArgument`, naming the feature (the client refuses a proxy at creation, so
/// this is reached only by a configuration that skipped that check).
pub(super) async fn connect(
    _proxy: &Socks5Proxy,
    _host: &str,
    _port: u16,
    _resolver: &HostResolver,
) -> Result<TcpStream> {
    Err(Error::invalid_argument(crate::features::missing(
        "a SOCKS5 proxy (proxyHost)",
        "socks5-proxy",
    )))
}
