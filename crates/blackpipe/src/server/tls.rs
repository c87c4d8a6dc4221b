//! TLS listeners: the server side of a TLS connection (rustls), configured from PEM text as
//! mongod is from `--tlsCertificateKeyFile` and `--tlsCAFile`, and the stream a connection
//! task reads and writes whether or not TLS is on.
//!
//! The handshake runs on the connection's own task, bounded by the server's read timeout: a
//! client that never finishes it, or sends garbage, loses only its own connection.

use std::fmt;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::RootCertStore;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// Whether clients must present a certificate signed by the configured CA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientCertificates {
    /// A client without a certificate is refused during the handshake (mongod's default when
    /// `--tlsCAFile` is given).
    Required,
    /// A client may connect without one (`--tlsAllowConnectionsWithoutCertificates`); one that
    /// presents a certificate must still present a valid one.
    Optional,
}

/// Why a TLS configuration was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsConfigError {
    /// The PEM text holds no certificate, no private key, or cannot be parsed.
    #[error("{0}")]
    Pem(String),
    /// rustls refused the certificate, key or CA.
    #[error("{what}: {source}")]
    Rustls {
        /// What was being configured.
        what: &'static str,
        /// rustls's reason.
        #[source]
        source: rustls::Error,
    },
}

/// A listener's TLS settings: its certificate chain and key, and optionally the CA that signs
/// client certificates. Cheap to clone (every node of a deployment shares one).
#[derive(Clone)]
pub struct ServerTls {
    chain: Vec<CertificateDer<'static>>,
    key: Arc<PrivateKeyDer<'static>>,
    client_ca: Option<(Arc<RootCertStore>, ClientCertificates)>,
    acceptor: TlsAcceptor,
    /// Connections that do not open with a TLS handshake are served in plain text.
    plaintext_allowed: bool,
}

impl fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The key never appears in output.
        f.debug_struct("ServerTls")
            .field("certificates", &self.chain.len())
            .field(
                "client_certificates",
                &self.client_ca.as_ref().map(|(_, p)| p),
            )
            .finish_non_exhaustive()
    }
}

impl ServerTls {
    /// Serves TLS with the certificate chain and private key in `certificate_key_pem` (one PEM
    /// text holding both, as mongod's `tlsCertificateKeyFile`); clients are not asked for a
    /// certificate.
    ///
    /// # Errors
    /// [`TlsConfigError`] when the text holds no certificate or no unencrypted key, or rustls
    /// refuses them.
    pub fn new(certificate_key_pem: &str) -> Result<Self, TlsConfigError> {
        let chain = certificates(certificate_key_pem)?;
        let key = rustls_pemfile::private_key(&mut certificate_key_pem.as_bytes())
            .map_err(|e| TlsConfigError::Pem(format!("the private key is not valid PEM: {e}")))?
            .ok_or_else(|| TlsConfigError::Pem("no unencrypted private key found".into()))?;
        let key = Arc::new(key);
        let acceptor = acceptor(&chain, &key, None)?;
        Ok(Self {
            chain,
            key,
            client_ca: None,
            acceptor,
            plaintext_allowed: false,
        })
    }

    /// Asks clients for a certificate signed by a CA in `ca_pem` (mongod's `tlsCAFile`),
    /// requiring one or not as `policy` says.
    ///
    /// # Errors
    /// [`TlsConfigError`] when the text holds no certificate or rustls refuses one.
    pub fn with_client_ca(
        self,
        ca_pem: &str,
        policy: ClientCertificates,
    ) -> Result<Self, TlsConfigError> {
        let mut roots = RootCertStore::empty();
        for certificate in certificates(ca_pem)? {
            roots
                .add(certificate)
                .map_err(|source| TlsConfigError::Rustls {
                    what: "the CA certificate",
                    source,
                })?;
        }
        let client_ca = Some((Arc::new(roots), policy));
        let acceptor = acceptor(&self.chain, &self.key, client_ca.as_ref())?;
        Ok(Self {
            client_ca,
            acceptor,
            ..self
        })
    }

    /// Also serves clients that connect without TLS, as mongod's `--tlsMode preferTLS` (and
    /// `allowTLS`) do: a connection whose first bytes are a TLS handshake record gets TLS, any
    /// other is read as plain MongoDB messages.
    #[must_use]
    pub fn allowing_plaintext(self) -> Self {
        Self {
            plaintext_allowed: true,
            ..self
        }
    }

    /// Whether clients without TLS are served too ([`ServerTls::allowing_plaintext`]).
    pub fn allows_plaintext(&self) -> bool {
        self.plaintext_allowed
    }

    /// The policy for client certificates; `None` when clients are not asked for one.
    pub fn client_certificates(&self) -> Option<ClientCertificates> {
        self.client_ca.as_ref().map(|(_, policy)| *policy)
    }
}

fn certificates(pem: &str) -> Result<Vec<CertificateDer<'static>>, TlsConfigError> {
    let certificates = rustls_pemfile::certs(&mut pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsConfigError::Pem(format!("a certificate is not valid PEM: {e}")))?;
    if certificates.is_empty() {
        return Err(TlsConfigError::Pem("no PEM certificate found".into()));
    }
    Ok(certificates)
}

fn acceptor(
    chain: &[CertificateDer<'static>],
    key: &PrivateKeyDer<'static>,
    client_ca: Option<&(Arc<RootCertStore>, ClientCertificates)>,
) -> Result<TlsAcceptor, TlsConfigError> {
    // An explicit provider, as the driver does: the process default may be ambiguous.
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|source| TlsConfigError::Rustls {
            what: "the protocol versions",
            source,
        })?;
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some((roots, policy)) => {
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::clone(roots), provider);
            let verifier = match policy {
                ClientCertificates::Required => verifier,
                ClientCertificates::Optional => verifier.allow_unauthenticated(),
            };
            let verifier = verifier
                .build()
                .map_err(|e| TlsConfigError::Pem(format!("the client CA is unusable: {e}")))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder
        .with_single_cert(chain.to_vec(), key.clone_key())
        .map_err(|source| TlsConfigError::Rustls {
            what: "the certificate and key",
            source,
        })?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// A connection's byte stream: plain TCP or TLS over TCP.
pub(super) enum Transport {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl Transport {
    /// The DER of the certificate the client presented (verified against the CA), if any.
    pub(super) fn client_certificate(&self) -> Option<Vec<u8>> {
        match self {
            Transport::Plain(_) => None,
            Transport::Tls(stream) => stream
                .get_ref()
                .1
                .peer_certificates()
                .and_then(<[CertificateDer<'_>]>::first)
                .map(|certificate| certificate.as_ref().to_vec()),
        }
    }
}

/// Runs the server side of the handshake when `tls` is set; the error ends this connection.
///
/// # Cancel safety
/// Cancel safe: dropping the future drops the socket.
pub(super) async fn accept(stream: TcpStream, tls: Option<&ServerTls>) -> io::Result<Transport> {
    match tls {
        None => Ok(Transport::Plain(stream)),
        Some(tls) if tls.plaintext_allowed && !opens_with_tls(&stream).await? => {
            Ok(Transport::Plain(stream))
        }
        Some(tls) => Ok(Transport::Tls(Box::new(tls.acceptor.accept(stream).await?))),
    }
}

/// How often [`opens_with_tls`] looks again at a header that arrived in part.
const PARTIAL_HEADER_POLL: std::time::Duration = std::time::Duration::from_millis(1);

/// Whether the client's first bytes are a TLS handshake record header (content type 22,
/// version 3.x). A MongoDB message starts with its length; one that began with these bytes
/// would be over 64 KiB, far more than any client's first message (its handshake).
async fn opens_with_tls(stream: &TcpStream) -> io::Result<bool> {
    let mut header = [0u8; 3];
    loop {
        let seen = stream.peek(&mut header).await?;
        if seen == 0 {
            return Ok(false);
        }
        if seen >= header.len() {
            return Ok(matches!(header, [0x16, 0x03, 0x00..=0x04]));
        }
        if header[0] != 0x16 || (seen == 2 && header[1] != 0x03) {
            return Ok(false);
        }
        // Part of the header arrived: wait for the rest. `peek` and `readable` return at once
        // while data is buffered, so poll on a short timer: a client that stops after one or
        // two bytes costs a wake-up per millisecond, never a spinning core, until the server's
        // read timeout closes it.
        tokio::time::sleep(PARTIAL_HEADER_POLL).await;
    }
}

impl AsyncRead for Transport {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(stream) => Pin::new(stream).poll_read(cx, buf),
            Transport::Tls(stream) => Pin::new(stream.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Transport {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Transport::Plain(stream) => Pin::new(stream).poll_write(cx, buf),
            Transport::Tls(stream) => Pin::new(stream.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(stream) => Pin::new(stream).poll_flush(cx),
            Transport::Tls(stream) => Pin::new(stream.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(stream) => Pin::new(stream).poll_shutdown(cx),
            Transport::Tls(stream) => Pin::new(stream.as_mut()).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use steadfast_test_support::pki::TestPki;
    use tokio::io::AsyncReadExt as _;

    use super::*;
    use crate::scripted::{ScriptedConfig, ScriptedServer};
    use crate::server::ServerConfig;

    #[test]
    fn pem_without_a_key_or_a_certificate_is_a_typed_error() {
        let pki = TestPki::new();
        let server = pki.server("127.0.0.1");
        assert!(ServerTls::new(&server.pem).is_ok());
        assert!(matches!(
            ServerTls::new(&pki.ca_pem()),
            Err(TlsConfigError::Pem(_))
        ));
        assert!(matches!(
            ServerTls::new("garbage"),
            Err(TlsConfigError::Pem(_))
        ));
        let tls = ServerTls::new(&server.pem).unwrap();
        assert!(
            tls.clone()
                .with_client_ca("garbage", ClientCertificates::Required)
                .is_err()
        );
        let tls = tls
            .with_client_ca(&pki.ca_pem(), ClientCertificates::Optional)
            .unwrap();
        assert_eq!(
            tls.client_certificates(),
            Some(ClientCertificates::Optional)
        );
        assert!(
            !format!("{tls:?}").contains("PRIVATE"),
            "the key is never shown"
        );
    }

    /// A client that connects and never starts the handshake is disconnected once the read
    /// timeout passes (time is paused: the runtime advances it when everything waits).
    #[tokio::test(start_paused = true)]
    async fn a_stalled_handshake_is_closed_after_the_read_timeout() {
        let pki = TestPki::new();
        let tls = ServerTls::new(&pki.server("127.0.0.1").pem).unwrap();
        let config = ScriptedConfig::default().with_server(
            ServerConfig::default()
                .with_tls(tls)
                .with_read_timeout(Duration::from_secs(5)),
        );
        let server = ScriptedServer::start_with(config).await.unwrap();
        let mut socket = TcpStream::connect(("127.0.0.1", server.port()))
            .await
            .unwrap();
        let mut rest = Vec::new();
        let read = socket.read_to_end(&mut rest).await;
        assert!(read.is_ok_and(|n| n == 0), "closed without a byte sent");
        server.server().wait_for_open_connections(0).await;
    }
}
