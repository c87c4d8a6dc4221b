//! Connection-string errors and secret redaction.

use bson::doc;
use steadfast::{Client, ErrorKind};

#[tokio::test]
async fn invalid_uris_name_the_bad_part() {
    for (uri, part) in [
        ("mongodb://127.0.0.1:99999/", "99999"),
        (
            "mongodb://127.0.0.1/?tlsInsecure=true&tlsAllowInvalidCertificates=true",
            "tlsInsecure",
        ),
        ("postgres://127.0.0.1/", "postgres"),
        (
            "mongodb://127.0.0.1/?loadBalanced=true&directConnection=true",
            "directConnection",
        ),
    ] {
        let Err(error) = Client::with_uri_str(uri).await else {
            panic!("{uri} should be rejected");
        };
        assert!(
            matches!(error.kind(), ErrorKind::InvalidArgument { .. }),
            "{uri}: {error:?}"
        );
        assert!(
            error
                .to_string()
                .to_lowercase()
                .contains(&part.to_lowercase()),
            "{uri}: {error} should name {part}"
        );
    }
}

#[tokio::test]
async fn several_hosts_are_seeds_for_discovery() {
    let client = Client::with_uri_str("mongodb://127.0.0.1:1,127.0.0.1:2/")
        .await
        .expect("a seed list is accepted without I/O");
    assert_eq!(client.options().hosts.len(), 2);
    // directConnection=true with several hosts is the one combination refused.
    let error = Client::with_uri_str("mongodb://127.0.0.1:1,127.0.0.1:2/?directConnection=true")
        .await
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::InvalidArgument { .. }),
        "{error}"
    );
}

#[tokio::test]
async fn unsupported_mechanism_is_a_configuration_error() {
    // GSSAPI: the one mechanism left unsupported (no pure-Rust Kerberos).
    let error = Client::with_uri_str("mongodb://u%40REALM@127.0.0.1/?authMechanism=GSSAPI")
        .await
        .unwrap_err();
    assert!(error.to_string().contains("GSSAPI"), "{error}");
}

#[tokio::test]
async fn secrets_never_appear_in_debug_or_errors() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let client = Client::with_uri_str(&format!(
        "mongodb://alice:s3cr3t-pw@127.0.0.1:{port}/?serverSelectionTimeoutMS=200"
    ))
    .await
    .unwrap();
    let debug = format!("{client:?} {:?}", client.options());
    assert!(!debug.contains("s3cr3t-pw"), "{debug}");
    assert!(debug.contains("alice"), "the user name is not a secret");
    let credential = client.options().credential.clone().unwrap();
    assert!(!format!("{credential:?}").contains("s3cr3t-pw"));
    let error = client
        .database("db")
        .run_command(doc! { "ping": 1 })
        .await
        .unwrap_err();
    assert!(!format!("{error} {error:?}").contains("s3cr3t-pw"));
}
