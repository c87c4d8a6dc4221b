//! MONGODB-AWS written as for the official driver (its `aws-auth` feature): an access key id
//! and secret key given as the credential's username and password.

use blackpipe::auth::AwsKey;
use blackpipe::deployment::{Deployment, DeploymentConfig};
use steadfast::Client;
use steadfast::bson::doc;
use steadfast::options::{AuthMechanism, ClientOptions, Credential, ServerAddress};

#[tokio::test]
async fn an_aws_credential_built_in_code_authenticates() {
    let config = DeploymentConfig::standalone().with_aws_key(AwsKey::new(
        "AKIDPORT",
        "port-secret",
        "arn:aws:iam::1:user/port",
    ));
    let deployment = Deployment::start(config)
        .await
        .expect("the deployment starts");
    let credential = Credential::builder()
        .username("AKIDPORT".to_string())
        .password("port-secret".to_string())
        .mechanism(AuthMechanism::MongoDbAws)
        .build();
    let address = ServerAddress::parse(&deployment.hosts()[0]).expect("valid host");
    let options = ClientOptions::builder()
        .hosts(vec![address])
        .direct_connection(true)
        .credential(credential)
        .build();
    let client = Client::with_options(options).expect("valid options");
    client
        .database("app")
        .collection::<steadfast::bson::Document>("items")
        .insert_one(doc! { "x": 1 })
        .await
        .expect("authenticated insert");
    deployment.stop().await;
}
