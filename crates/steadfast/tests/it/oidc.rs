//! MONGODB-OIDC end to end against blackpipe's test issuer: the machine callback's token is
//! cached per client and reused by new connections (speculatively, in the handshake), a
//! ReauthenticationRequired (391) reauthenticates the connection and resends the command
//! once, an expired token makes the callback run again, and a callback's error reaches the
//! application.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use blackpipe::auth::{OidcConfig, OidcIssuer, User};
use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{Document, doc};
use futures_util::FutureExt as _;
use steadfast::Client;
use steadfast::event::{CommandEvent, Event, EventRecorder};
use steadfast::options::oidc::{Callback, IdpServerResponse};
use steadfast::options::{AuthMechanism, ClientOptions, Credential};

/// How long the tokens the callback mints are valid.
const TOKEN_LIFETIME: Duration = Duration::from_secs(600);

/// An OIDC deployment, a client whose machine callback mints tokens from its issuer, and
/// how many times the callback ran.
struct Harness {
    deployment: Deployment,
    issuer: Arc<OidcIssuer>,
    client: Client,
    /// A SCRAM client (another appName) that sets fail points without opening connections
    /// of `client`'s.
    admin: Client,
    calls: Arc<AtomicUsize>,
    events: Arc<EventRecorder>,
}

async fn harness(query: &str) -> Harness {
    let config = DeploymentConfig::standalone()
        .with_user(User::new("admin", "pw"))
        .with_oidc(OidcConfig::default());
    let deployment = Deployment::start(config).await.unwrap();
    let host = deployment.hosts()[0].clone();
    let admin = Client::with_uri_str(format!("mongodb://admin:pw@{host}/?directConnection=true"))
        .await
        .unwrap();
    let issuer = deployment
        .oidc_issuer()
        .expect("the deployment has an issuer");
    let calls = Arc::new(AtomicUsize::new(0));
    let callback = {
        let (issuer, calls) = (Arc::clone(&issuer), Arc::clone(&calls));
        Callback::machine(move |_context| {
            calls.fetch_add(1, Ordering::SeqCst);
            let token = issuer.mint("app", TOKEN_LIFETIME);
            async move { Ok(IdpServerResponse::builder().access_token(token).build()) }.boxed()
        })
    };
    let events = Arc::new(EventRecorder::new());
    let client = client_with(&deployment, query, callback, Arc::clone(&events)).await;
    Harness {
        deployment,
        issuer,
        client,
        admin,
        calls,
        events,
    }
}

/// A client of `deployment` that authenticates with `callback` and records its events.
async fn client_with(
    deployment: &Deployment,
    query: &str,
    callback: Callback,
    events: Arc<EventRecorder>,
) -> Client {
    let host = deployment.hosts()[0].clone();
    let uri = format!("mongodb://{host}/?directConnection=true&appName=oidc-it{query}");
    let mut options = ClientOptions::parse(&uri).await.unwrap();
    options.credential = Some(
        Credential::builder()
            .mechanism(AuthMechanism::MongoDbOidc)
            .oidc_callback(callback)
            .build(),
    );
    options.event_listeners.push(events);
    Client::with_options(options).unwrap()
}

fn items(client: &Client) -> steadfast::Collection<Document> {
    client.database("app").collection("items")
}

/// Sets a `failCommand` fail point for this test's client (by its appName), once.
async fn fail_once(client: &Client, data: Document) {
    let mut data = data;
    data.insert("appName", "oidc-it");
    client
        .database("admin")
        .run_command(doc! {
            "configureFailPoint": "failCommand",
            "mode": { "times": 1 },
            "data": data,
        })
        .await
        .unwrap();
}

/// The names of the commands started and whether each succeeded, in order.
fn command_outcomes(events: &EventRecorder, name: &str) -> Vec<&'static str> {
    events
        .events()
        .into_iter()
        .filter_map(|event| match event {
            Event::Command(CommandEvent::Started(e)) if e.command_name == name => Some("started"),
            Event::Command(CommandEvent::Succeeded(e)) if e.command_name == name => {
                Some("succeeded")
            }
            Event::Command(CommandEvent::Failed(e)) if e.command_name == name => Some("failed"),
            _ => None,
        })
        .collect()
}

/// One callback call serves every connection: after the first connection is closed, the next
/// one authenticates in its handshake with the cached token. The saslStart refusal armed
/// before it opens proves the handshake carried the token: a saslStart with the cached token
/// would be refused with 18, which invalidates the token and calls the callback again.
#[tokio::test]
async fn the_callback_runs_once_and_new_connections_reuse_its_token_speculatively() {
    let h = harness("&retryWrites=false").await;
    items(&h.client)
        .insert_one(doc! { "_id": 1 })
        .await
        .unwrap();
    assert_eq!(h.calls.load(Ordering::SeqCst), 1);
    fail_once(
        &h.admin,
        doc! { "failCommands": ["insert"], "closeConnection": true },
    )
    .await;
    let closed = items(&h.client).insert_one(doc! { "_id": 2 }).await;
    assert!(closed.unwrap_err().is_network_error());
    // Only one failCommand fail point exists at a time: this one replaces the spent one.
    fail_once(
        &h.admin,
        doc! { "failCommands": ["saslStart"], "errorCode": 18 },
    )
    .await;
    items(&h.client)
        .insert_one(doc! { "_id": 2 })
        .await
        .unwrap();
    assert_eq!(
        h.calls.load(Ordering::SeqCst),
        1,
        "the new connection must reuse the cached token without calling the callback"
    );
    h.deployment.stop().await;
}

/// ReauthenticationRequired on a read with retryable reads off: the driver reauthenticates
/// (a fresh token: the old one is invalidated) and sends the find once more, as the auth
/// specification requires whatever the operation's retryability.
#[tokio::test]
async fn reauthentication_required_reauthenticates_and_resends_the_command_once() {
    let h = harness("&retryReads=false").await;
    items(&h.client)
        .insert_one(doc! { "_id": 1 })
        .await
        .unwrap();
    fail_once(
        &h.client,
        doc! { "failCommands": ["find"], "errorCode": 391 },
    )
    .await;
    let found = items(&h.client).find_one(doc! {}).await.unwrap();
    assert_eq!(found, Some(doc! { "_id": 1 }));
    assert_eq!(
        h.calls.load(Ordering::SeqCst),
        2,
        "reauthentication fetches a new token"
    );
    assert_eq!(
        command_outcomes(&h.events, "find"),
        ["started", "failed", "started", "succeeded"]
    );
    h.deployment.stop().await;
}

/// A connection whose token expired (by the deployment's clock) is told to reauthenticate;
/// the callback runs again and the operation succeeds with the new token.
#[tokio::test]
async fn an_expired_token_is_replaced_through_the_callback() {
    let h = harness("").await;
    items(&h.client)
        .insert_one(doc! { "_id": 1 })
        .await
        .unwrap();
    h.issuer
        .advance_clock(TOKEN_LIFETIME + Duration::from_secs(1));
    items(&h.client)
        .insert_one(doc! { "_id": 2 })
        .await
        .unwrap();
    assert_eq!(h.calls.load(Ordering::SeqCst), 2);
    assert_eq!(
        command_outcomes(&h.events, "insert"),
        [
            "started",
            "succeeded",
            "started",
            "failed",
            "started",
            "succeeded"
        ]
    );
    h.deployment.stop().await;
}

/// The callback's own error type, to find in the driver error's sources.
#[derive(Debug)]
struct IdentityProviderDown;

impl std::fmt::Display for IdentityProviderDown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the identity provider is down")
    }
}

impl std::error::Error for IdentityProviderDown {}

#[tokio::test]
async fn a_callback_error_reaches_the_application_as_an_authentication_error() {
    let deployment =
        Deployment::start(DeploymentConfig::standalone().with_oidc(OidcConfig::default()))
            .await
            .unwrap();
    let callback = Callback::machine(|_| async { Err(IdentityProviderDown.into()) }.boxed());
    let client = client_with(&deployment, "", callback, Arc::new(EventRecorder::new())).await;
    let error = items(&client)
        .insert_one(doc! { "_id": 1 })
        .await
        .unwrap_err();
    assert!(error.is_authentication_error(), "{error:?}");
    let mut source = std::error::Error::source(&error);
    let mut found = false;
    while let Some(cause) = source {
        found |= cause.downcast_ref::<IdentityProviderDown>().is_some();
        source = cause.source();
    }
    assert!(
        found,
        "the callback's error is among the sources: {error:?}"
    );
    deployment.stop().await;
}

/// A token the server refuses (here: signed by another issuer) is an authentication error
/// with the server's code, 18.
#[tokio::test]
async fn a_refused_token_is_authentication_failed() {
    let deployment =
        Deployment::start(DeploymentConfig::standalone().with_oidc(OidcConfig::default()))
            .await
            .unwrap();
    let stranger = Arc::new(OidcIssuer::new(OidcConfig::default()).unwrap());
    let callback = Callback::machine(move |_| {
        let token = stranger.mint("app", TOKEN_LIFETIME);
        async move { Ok(IdpServerResponse::builder().access_token(token).build()) }.boxed()
    });
    let client = client_with(&deployment, "", callback, Arc::new(EventRecorder::new())).await;
    let error = items(&client)
        .insert_one(doc! { "_id": 1 })
        .await
        .unwrap_err();
    assert!(error.is_authentication_error(), "{error:?}");
    assert_eq!(error.code(), Some(18), "{error:?}");
    deployment.stop().await;
}
