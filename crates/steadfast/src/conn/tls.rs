//! TLS client configuration with rustls: trust roots, client certificates, and the two relaxed
//! verification modes the URI options allow (`tlsAllowInvalidCertificates`,
//! `tlsAllowInvalidHostnames`).

use std::io::BufReader;
use std::path::Path;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

use steadfast_core::options::Tls;

use super::stream::BoxedStream;
use crate::error::{Error, Result};

/// A client's TLS configuration, built once from its options and shared by its connections.
pub(crate) type TlsConfig = Arc<ClientConfig>;

/// Runs the TLS handshake over an open TCP stream to `host`.
///
/// # Errors
/// `InvalidTlsConfig` when the handshake fails on a certificate (rustls reports those as
/// `InvalidData`), a network error when the connection fails during it.
pub(crate) async fn handshake(
    config: &TlsConfig,
    host: &str,
    tcp: tokio::net::TcpStream,
) -> Result<BoxedStream> {
    let name = server_name(host)?;
    let connector = tokio_rustls::TlsConnector::from(Arc::clone(config));
    let stream = connector.connect(name, tcp).await.map_err(|e| {
        if e.kind() == std::io::ErrorKind::InvalidData {
            Error::tls("the TLS handshake failed").with_source(e)
        } else {
            Error::network_io("the connection failed during the TLS handshake", e)
        }
    })?;
    Ok(Box::new(stream))
}

/// Builds the rustls configuration once per client: files are read here, not per connection.
///
/// # Errors
/// `Io` when a file cannot be read, `InvalidTlsConfig` when it holds no usable certificate or key, or
/// rustls rejects the configuration.
pub(crate) fn client_config(settings: &Tls) -> Result<TlsConfig> {
    if settings.cert_key_password.is_some() {
        return Err(Error::invalid_argument(
            "tlsCertificateKeyFilePassword is not supported: provide an unencrypted key file",
        ));
    }
    // An explicit provider: the process-wide default may be ambiguous when another crate in the
    // build enables a second rustls backend.
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::tls("no TLS protocol version is available").with_source(e))?;

    let mut roots = RootCertStore::empty();
    match &settings.ca_file {
        Some(path) => {
            let certs = read_certificates(path)?;
            if certs.is_empty() {
                return Err(Error::tls(format!(
                    "tlsCAFile {} contains no PEM certificate",
                    path.display()
                )));
            }
            for cert in certs {
                roots.add(cert).map_err(|e| {
                    Error::tls(format!(
                        "tlsCAFile {} holds an invalid certificate",
                        path.display()
                    ))
                    .with_source(e)
                })?;
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let roots = Arc::new(roots);
    let algorithms = provider.signature_verification_algorithms;

    let verifier: Arc<dyn ServerCertVerifier> = if settings.accepts_invalid_certificates() {
        Arc::new(AcceptAnyCertificate { algorithms })
    } else {
        let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
            .build()
            .map_err(|e| Error::tls("cannot build the certificate verifier").with_source(e))?;
        if settings.accepts_invalid_hostnames() {
            Arc::new(IgnoreHostname { inner: webpki })
        } else {
            webpki
        }
    };
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier);

    let config = match &settings.cert_key_file {
        Some(path) => {
            let certs = read_certificates(path)?;
            if certs.is_empty() {
                return Err(Error::tls(format!(
                    "tlsCertificateKeyFile {} contains no PEM certificate",
                    path.display()
                )));
            }
            let key = read_private_key(path)?;
            builder.with_client_auth_cert(certs, key).map_err(|e| {
                Error::tls(format!(
                    "tlsCertificateKeyFile {}: the certificate and key do not form a usable identity",
                    path.display()
                ))
                .with_source(e)
            })?
        }
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// The name the server certificate must match: a DNS name or an IP literal.
///
/// # Errors
/// `InvalidTlsConfig` when the host is neither.
fn server_name(host: &str) -> Result<ServerName<'static>> {
    ServerName::try_from(host.to_string())
        .map_err(|e| Error::tls(format!("{host:?} is not a valid TLS server name")).with_source(e))
}

fn open(path: &Path, what: &str) -> Result<BufReader<std::fs::File>> {
    std::fs::File::open(path)
        .map(BufReader::new)
        .map_err(|e| Error::io(format!("cannot read {what} {}", path.display()), e))
}

fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let mut reader = open(path, "certificate file")?;
    rustls_pemfile::certs(&mut reader)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| {
            Error::tls(format!("{} is not a valid PEM file", path.display())).with_source(e)
        })
}

fn read_private_key(path: &Path) -> Result<PrivateKeyDer<'static>> {
    let mut reader = open(path, "tlsCertificateKeyFile")?;
    // The key's bytes never reach an error message: only the path does.
    match rustls_pemfile::private_key(&mut reader) {
        Ok(Some(key)) => Ok(key),
        Ok(None) => Err(Error::tls(format!(
            "tlsCertificateKeyFile {} contains no unencrypted private key",
            path.display()
        ))),
        Err(e) => Err(Error::tls(format!(
            "tlsCertificateKeyFile {} is not a valid PEM file",
            path.display()
        ))
        .with_source(e)),
    }
}

/// `tlsAllowInvalidCertificates`: any certificate is accepted, but handshake signatures are
/// still checked against it (so the peer at least holds the key of what it presented).
#[derive(Debug)]
struct AcceptAnyCertificate {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// `tlsAllowInvalidHostnames`: the full web PKI check, except that a certificate valid for
/// another name is accepted. webpki checks the chain before the name, so a name error can only
/// come from a certificate whose chain already verified.
#[derive(Debug)]
struct IgnoreHostname {
    inner: Arc<WebPkiServerVerifier>,
}

impl ServerCertVerifier for IgnoreHostname {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}
