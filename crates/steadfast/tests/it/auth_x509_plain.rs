//! MONGODB-X509 and PLAIN over real TLS connections to blackpipe: the driver's TLS client and
//! mechanisms against blackpipe's TLS listener and server side, with certificates from the
//! shared test CA.

use blackpipe::auth::User;
use blackpipe::deployment::{Deployment, DeploymentConfig};
use blackpipe::server::{ClientCertificates, ServerTls};
use bson::{Document, doc};
use rcgen::DnType;
use steadfast::{Client, ErrorKind};
use steadfast_test_support::pki::{Identity, TestPki};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// The client certificate's subject in RFC 2253 form: the last attribute encoded comes first.
const SUBJECT: &str = "CN=client,OU=drivers,O=steadfast";
/// [`SUBJECT`] percent-encoded for the user part of a connection string.
const SUBJECT_IN_URI: &str = "CN%3Dclient%2COU%3Ddrivers%2CO%3Dsteadfast";
/// Fails fast when no server can be selected (the TLS handshake never succeeds).
const FAIL_FAST: &str = "&serverSelectionTimeoutMS=1000";

struct Fixture {
    pki: TestPki,
    client: Identity,
    deployment: Deployment,
}

impl Fixture {
    /// A standalone requiring authentication, serving TLS with a server certificate for
    /// 127.0.0.1; client certificates are asked for as `client_certificates` says (`None`:
    /// not asked for). Users: the X.509 subject in `$external` and `ldap:pencil` there too.
    async fn start(client_certificates: Option<ClientCertificates>) -> Self {
        let pki = TestPki::new();
        let server = pki.server("127.0.0.1");
        let mut tls = ServerTls::new(&server.pem).unwrap();
        if let Some(policy) = client_certificates {
            tls = tls.with_client_ca(&pki.ca_pem(), policy).unwrap();
        }
        let client = pki.client(&[
            (DnType::OrganizationName, "steadfast"),
            (DnType::OrganizationalUnitName, "drivers"),
            (DnType::CommonName, "client"),
        ]);
        let config = DeploymentConfig::standalone()
            .with_tls(tls)
            .with_auth(true)
            .with_user(User::external(SUBJECT))
            .with_user(User::new("ldap", "pencil").with_db("$external"));
        let deployment = Deployment::start(config).await.unwrap();
        Self {
            pki,
            client,
            deployment,
        }
    }

    /// A URI for the standalone over TLS trusting the test CA, presenting the client
    /// certificate when `with_certificate`.
    fn uri(&self, credentials: &str, with_certificate: bool, options: &str) -> String {
        let host = self.deployment.hosts()[0].clone();
        let certificate = if with_certificate {
            format!("&tlsCertificateKeyFile={}", self.client.file.display())
        } else {
            String::new()
        };
        format!(
            "mongodb://{credentials}{host}/?directConnection=true&tls=true&tlsCAFile={}{certificate}{options}",
            self.pki.ca_file().display()
        )
    }
}

/// Runs a command that needs authentication, then returns who the connection is.
async fn authenticated_users(uri: &str) -> steadfast::Result<Document> {
    let client = Client::with_uri_str(uri).await?;
    let db = client.database("app");
    db.run_command(doc! { "insert": "items", "documents": [{ "x": 1 }] })
        .await?;
    let status = db.run_command(doc! { "connectionStatus": 1 }).await?;
    let info = status.get_document("authInfo").unwrap();
    Ok(info.get_array("authenticatedUsers").unwrap()[0]
        .as_document()
        .unwrap()
        .clone())
}

#[tokio::test]
async fn x509_authenticates_as_the_certificate_subject_with_or_without_the_user_named() {
    let fixture = Fixture::start(Some(ClientCertificates::Required)).await;
    let expected = doc! { "user": SUBJECT, "db": "$external" };
    let unnamed = fixture.uri("", true, "&authMechanism=MONGODB-X509");
    assert_eq!(authenticated_users(&unnamed).await.unwrap(), expected);
    let named = fixture.uri(
        &format!("{SUBJECT_IN_URI}@"),
        true,
        "&authMechanism=MONGODB-X509",
    );
    assert_eq!(authenticated_users(&named).await.unwrap(), expected);
    fixture.deployment.stop().await;
}

#[tokio::test]
async fn x509_naming_another_user_is_refused() {
    let fixture = Fixture::start(Some(ClientCertificates::Required)).await;
    let uri = fixture.uri("CN%3Dsomeone-else@", true, "&authMechanism=MONGODB-X509");
    let error = authenticated_users(&uri).await.unwrap_err();
    assert!(error.is_authentication_error(), "{error:?}");
    assert!(error.to_string().contains("matching the user"), "{error}");
    fixture.deployment.stop().await;
}

#[tokio::test]
async fn x509_without_a_certificate_the_server_verified_is_refused() {
    // The server asks for no client certificate, so none reaches it even though the client
    // has one configured.
    let fixture = Fixture::start(None).await;
    let uri = fixture.uri("", true, "&authMechanism=MONGODB-X509");
    let error = authenticated_users(&uri).await.unwrap_err();
    assert!(error.is_authentication_error(), "{error:?}");
    assert!(
        error.to_string().contains("No verified subject name"),
        "{error}"
    );
    fixture.deployment.stop().await;
}

#[tokio::test]
async fn x509_without_a_client_certificate_is_refused_when_the_client_is_built() {
    let fixture = Fixture::start(Some(ClientCertificates::Optional)).await;
    let error = Client::with_uri_str(&fixture.uri("", false, "&authMechanism=MONGODB-X509"))
        .await
        .unwrap_err();
    assert!(
        matches!(*error.kind, ErrorKind::InvalidArgument { .. }),
        "{error:?}"
    );
    fixture.deployment.stop().await;
}

#[tokio::test]
async fn a_server_requiring_client_certificates_refuses_a_client_without_one() {
    let fixture = Fixture::start(Some(ClientCertificates::Required)).await;
    let uri = fixture.uri(
        "ldap:pencil@",
        false,
        &format!("&authMechanism=PLAIN{FAIL_FAST}"),
    );
    let error = authenticated_users(&uri).await.unwrap_err();
    assert!(!error.is_authentication_error(), "{error:?}");
    assert!(
        matches!(*error.kind, ErrorKind::ServerSelection { .. }),
        "the TLS handshake fails: {error:?}"
    );
    fixture.deployment.stop().await;
}

#[tokio::test]
async fn plain_authenticates_with_the_right_password_only() {
    let fixture = Fixture::start(None).await;
    let good = fixture.uri("ldap:pencil@", false, "&authMechanism=PLAIN");
    assert_eq!(
        authenticated_users(&good).await.unwrap(),
        doc! { "user": "ldap", "db": "$external" }
    );
    let wrong = fixture.uri("ldap:crayon@", false, "&authMechanism=PLAIN");
    let error = authenticated_users(&wrong).await.unwrap_err();
    assert!(error.is_authentication_error(), "{error:?}");
    assert!(
        error.to_string().contains("AuthenticationFailed"),
        "{error}"
    );
    fixture.deployment.stop().await;
}

#[tokio::test]
async fn a_server_certificate_from_an_untrusted_ca_is_refused() {
    let fixture = Fixture::start(None).await;
    let stranger = TestPki::new();
    let host = fixture.deployment.hosts()[0].clone();
    let uri = format!(
        "mongodb://ldap:pencil@{host}/?directConnection=true&tls=true&tlsCAFile={}&authMechanism=PLAIN{FAIL_FAST}",
        stranger.ca_file().display()
    );
    let error = authenticated_users(&uri).await.unwrap_err();
    assert!(
        matches!(*error.kind, ErrorKind::ServerSelection { ref message, .. } if message.contains("TLS")),
        "{error:?}"
    );
    fixture.deployment.stop().await;
}

#[tokio::test]
async fn garbage_instead_of_a_tls_handshake_closes_only_that_connection() {
    let fixture = Fixture::start(None).await;
    let host = fixture.deployment.hosts()[0].clone();
    let mut socket = tokio::net::TcpStream::connect(&host).await.unwrap();
    // A plaintext wire-protocol header where a TLS ClientHello belongs.
    socket
        .write_all(&[0x3a, 0, 0, 0, 1, 2, 3, 4])
        .await
        .unwrap();
    let mut rest = Vec::new();
    // The server answers with (at most) a TLS alert, then closes: the read reaches EOF.
    let _ = socket.read_to_end(&mut rest).await;
    let good = fixture.uri("ldap:pencil@", false, "&authMechanism=PLAIN");
    authenticated_users(&good).await.unwrap();
    fixture.deployment.stop().await;
}
