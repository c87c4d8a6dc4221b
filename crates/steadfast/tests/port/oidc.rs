//! MONGODB-OIDC with a machine callback, written as for the official driver: the callback
//! returns `IdpServerResponse::builder()...build()` from an async block boxed with
//! `FutureExt::boxed`, errors travel with `?`, and the callback is set through the credential's
//! builder or its field.

use std::sync::Arc;
use std::time::{Duration, Instant};

use blackpipe::auth::{OidcConfig, OidcIssuer};
use blackpipe::deployment::{Deployment, DeploymentConfig};
use futures_util::FutureExt;
use steadfast::Client;
use steadfast::bson::doc;
use steadfast::error::Error;
use steadfast::options::oidc::{Callback, CallbackContext, IdpServerResponse};
use steadfast::options::{AuthMechanism, ClientOptions, Credential};

/// What an application's token fetch looks like: an async function with the driver's error.
async fn fetch_token(issuer: Arc<OidcIssuer>, context: CallbackContext) -> Result<String, Error> {
    assert_eq!(context.version, 1);
    assert!(context.timeout.is_some(), "the driver bounds the callback");
    Ok(issuer.mint("port", Duration::from_secs(600)))
}

#[tokio::test]
async fn a_machine_callback_authenticates_as_with_the_official_driver() {
    let deployment =
        Deployment::start(DeploymentConfig::standalone().with_oidc(OidcConfig::default()))
            .await
            .expect("the deployment starts");
    let issuer = deployment.oidc_issuer().expect("an issuer");
    let uri = format!("{}&authMechanism=MONGODB-OIDC", deployment.uri());
    let mut options = ClientOptions::parse(&uri)
        .await
        .expect("a valid connection string");
    let callback_issuer = Arc::clone(&issuer);
    options
        .credential
        .as_mut()
        .expect("the URI names a mechanism")
        .oidc_callback = Callback::machine(move |context: CallbackContext| {
        let issuer = Arc::clone(&callback_issuer);
        async move {
            let access_token = fetch_token(issuer, context).await?;
            Ok(IdpServerResponse::builder()
                .access_token(access_token)
                .expires(Instant::now() + Duration::from_secs(600))
                .build())
        }
        .boxed()
    });
    let client = Client::with_options(options).expect("valid options");
    client
        .database("app")
        .collection::<steadfast::bson::Document>("items")
        .insert_one(doc! { "x": 1 })
        .await
        .expect("authenticated with the callback's token");

    // The builder form of the same credential.
    let credential = Credential::builder()
        .mechanism(AuthMechanism::MongoDbOidc)
        .oidc_callback(Callback::machine(move |_| {
            let token = issuer.mint("port", Duration::from_secs(600));
            async move { Ok(IdpServerResponse::builder().access_token(token).build()) }.boxed()
        }))
        .build();
    let mut options = ClientOptions::parse(deployment.uri())
        .await
        .expect("a valid connection string");
    options.credential = Some(credential);
    let client = Client::with_options(options).expect("valid options");
    client
        .database("app")
        .run_command(doc! { "ping": 1 })
        .await
        .expect("ping");
    deployment.stop().await;
}
