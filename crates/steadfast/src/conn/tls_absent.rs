//! TLS when the `rustls-tls` feature is off: a configuration cannot be built, so no connection
//! ever reaches a handshake.

use steadfast_core::options::Tls;

use super::stream::BoxedStream;
use crate::error::{Error, Result};

/// No TLS configuration exists in this build (the type has no values).
#[derive(Debug, Clone)]
pub(crate) enum TlsConfig {}

/// # Errors
/// Always `InvalidArgument`: TLS needs the `rustls-tls` feature.
pub(crate) fn client_config(_settings: &Tls) -> Result<TlsConfig> {
    Err(Error::invalid_argument(crate::features::missing(
        "TLS (tls=true, tlsCAFile, mongodb+srv://)",
        "rustls-tls",
    )))
}

/// Unreachable: `config` has no values.
pub(crate) async fn handshake(
    config: &TlsConfig,
    _host: &str,
    _tcp: tokio::net::TcpStream,
) -> Result<BoxedStream> {
    match *config {}
}
