//! MONGODB-AWS through the public API: credentials in the connection string (the access key id
//! as the username, the secret key as the password, the session token as a mechanism property)
//! against blackpipe, which recomputes the SigV4 signature with the test key's secret.
//! The other credential sources (environment, web identity, ECS, EC2) are tested in the
//! driver's unit tests, where their endpoints can be replaced.

use blackpipe::auth::AwsKey;
use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{Bson, doc};
use steadfast::Client;

/// Percent-encoded in the URIs below: '/' and '+' are common in real secret keys.
const SECRET: &str = "wJalr/K7+secret";
const SECRET_IN_URI: &str = "wJalr%2FK7%2Bsecret";

#[tokio::test]
async fn connection_string_credentials_authenticate_and_a_wrong_secret_is_refused() {
    let config = DeploymentConfig::standalone()
        .with_aws_key(AwsKey::new("AKIDLONG", SECRET, "arn:aws:iam::1:user/long"))
        .with_aws_key(
            AwsKey::new("ASIATEMP", SECRET, "arn:aws:iam::1:role/temp").with_session_token("tok"),
        );
    let deployment = Deployment::start(config).await.unwrap();
    let host = deployment.hosts()[0].clone();
    let uri = |credentials: &str, properties: &str| {
        format!(
            "mongodb://{credentials}@{host}/?directConnection=true&authMechanism=MONGODB-AWS{properties}"
        )
    };
    for (credentials, properties) in [
        (format!("AKIDLONG:{SECRET_IN_URI}"), ""),
        (
            format!("ASIATEMP:{SECRET_IN_URI}"),
            "&authMechanismProperties=AWS_SESSION_TOKEN:tok",
        ),
    ] {
        let client = Client::with_uri_str(&uri(&credentials, properties))
            .await
            .unwrap();
        let insert = doc! { "insert": "items", "documents": [{ "x": 1 }] };
        let reply = client.database("app").run_command(insert).await;
        let reply = reply.unwrap_or_else(|e| panic!("{credentials}: {e:?}"));
        assert!(
            matches!(reply.get("n"), Some(Bson::Int32(1) | Bson::Int64(1))),
            "{reply}"
        );
    }
    for (credentials, properties) in [
        ("AKIDLONG:wrong".to_owned(), ""),
        // Temporary credentials without their token.
        (format!("ASIATEMP:{SECRET_IN_URI}"), ""),
    ] {
        let client = Client::with_uri_str(&uri(&credentials, properties))
            .await
            .unwrap();
        let error = client
            .database("app")
            .run_command(doc! { "find": "items" })
            .await
            .unwrap_err();
        assert!(error.is_authentication_error(), "{credentials}: {error:?}");
    }
    deployment.stop().await;
}
