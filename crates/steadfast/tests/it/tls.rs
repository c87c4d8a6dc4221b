//! TLS: a listener in the test terminates TLS (with certificates from the shared test CA) and
//! forwards the plaintext to a scripted server.

use std::path::PathBuf;
use std::sync::Arc;

use blackpipe::scripted::ScriptedServer;
use bson::doc;
use rcgen::DnType;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use steadfast::{Client, ErrorKind};
use steadfast_test_support::pki::{Identity, TestPki};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::server;

/// One test's certificates: a CA, a server certificate signed by it, a client certificate.
struct Pki {
    ca: TestPki,
    ca_file: PathBuf,
    server: Identity,
    client_file: PathBuf,
}

/// Generates a CA and a server certificate whose only subject alternative name is `server_san`.
fn pki(server_san: &str) -> Pki {
    let ca = TestPki::new();
    let server = ca.server(server_san);
    let client = ca.client(&[(DnType::CommonName, "steadfast test client")]);
    Pki {
        ca_file: ca.ca_file().to_path_buf(),
        server,
        client_file: client.file,
        ca,
    }
}

/// A TLS-terminating forwarder to `backend`; aborted when dropped.
struct TlsProxy {
    port: u16,
    task: JoinHandle<()>,
}

impl Drop for TlsProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn tls_proxy(pki: &Pki, backend: &ScriptedServer, require_client_cert: bool) -> TlsProxy {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = if require_client_cert {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(pki.ca.ca_pem().as_bytes()).unwrap())
            .unwrap();
        let verifier =
            rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .unwrap();
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    let config = builder
        .with_single_cert(
            vec![CertificateDer::from(pki.server.der.clone())],
            PrivateKeyDer::from_pem_slice(pki.server.pem.as_bytes()).unwrap(),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let backend_port = backend.port();
    let task = tokio::spawn(async move {
        loop {
            let Ok((socket, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                // A rejected handshake just ends this connection; the client reports it.
                let Ok(mut tls) = acceptor.accept(socket).await else {
                    return;
                };
                let Ok(mut plain) = TcpStream::connect(("127.0.0.1", backend_port)).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    TlsProxy { port, task }
}

async fn ping_via(proxy: &TlsProxy, query: &str) -> steadfast::Result<bson::Document> {
    let client = Client::with_uri_str(&format!(
        "mongodb://127.0.0.1:{}/?tls=true&{query}",
        proxy.port
    ))
    .await?;
    client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
}

fn ca(pki: &Pki) -> String {
    format!("tlsCAFile={}", pki.ca_file.display())
}

#[tokio::test]
async fn verified_with_the_ca_file() {
    let backend = server().await;
    let pki = pki("127.0.0.1");
    let proxy = tls_proxy(&pki, &backend, false).await;
    ping_via(&proxy, &ca(&pki)).await.unwrap();
    assert_eq!(
        backend.requests()[0].command_name(),
        "isMaster",
        "the handshake went through TLS"
    );
}

/// Whether `error` reports a TLS failure: the monitor's TLS handshake failed, so selection
/// gave up with the TLS error as the server's.
fn is_tls_failure(error: &steadfast::Error) -> bool {
    match error.kind() {
        ErrorKind::InvalidTlsConfig { .. } => true,
        ErrorKind::ServerSelection { message, .. } => message.contains("TLS error"),
        _ => false,
    }
}

/// Fails fast when no server can be selected.
const FAIL_FAST: &str = "serverSelectionTimeoutMS=1000";

#[tokio::test]
async fn rejected_without_the_ca_file() {
    let backend = server().await;
    let pki = pki("127.0.0.1");
    let proxy = tls_proxy(&pki, &backend, false).await;
    let error = ping_via(&proxy, FAIL_FAST).await.unwrap_err();
    assert!(is_tls_failure(&error), "{error:?}");
    assert!(backend.requests().is_empty(), "nothing reached the server");
}

#[tokio::test]
async fn allowed_with_tls_allow_invalid_certificates() {
    let backend = server().await;
    let pki = pki("127.0.0.1");
    let proxy = tls_proxy(&pki, &backend, false).await;
    ping_via(&proxy, "tlsAllowInvalidCertificates=true")
        .await
        .unwrap();
}

#[tokio::test]
async fn hostname_mismatch_rejected_unless_allowed() {
    let backend = server().await;
    let pki = pki("db.example.invalid");
    let proxy = tls_proxy(&pki, &backend, false).await;
    let error = ping_via(&proxy, &format!("{}&{FAIL_FAST}", ca(&pki)))
        .await
        .unwrap_err();
    assert!(is_tls_failure(&error), "{error:?}");
    ping_via(
        &proxy,
        &format!("{}&tlsAllowInvalidHostnames=true", ca(&pki)),
    )
    .await
    .unwrap();
    // Ignoring the name does not mean ignoring the chain.
    let error = ping_via(
        &proxy,
        &format!("tlsAllowInvalidHostnames=true&{FAIL_FAST}"),
    )
    .await
    .unwrap_err();
    assert!(is_tls_failure(&error), "{error:?}");
}

#[tokio::test]
async fn client_certificate_from_the_key_file() {
    let backend = server().await;
    let pki = pki("127.0.0.1");
    let proxy = tls_proxy(&pki, &backend, true).await;
    let with_cert = format!(
        "{}&tlsCertificateKeyFile={}",
        ca(&pki),
        pki.client_file.display()
    );
    ping_via(&proxy, &with_cert).await.unwrap();
    assert!(
        ping_via(&proxy, &ca(&pki)).await.is_err(),
        "the proxy requires a client certificate"
    );
}

#[tokio::test]
async fn missing_ca_file_is_an_io_error_naming_the_file() {
    let error =
        Client::with_uri_str("mongodb://127.0.0.1:1/?tls=true&tlsCAFile=/nonexistent/ca.pem")
            .await
            .unwrap_err();
    assert!(matches!(*error.kind, ErrorKind::Io(_)), "{error:?}");
    assert!(error.to_string().contains("/nonexistent/ca.pem"), "{error}");
}
