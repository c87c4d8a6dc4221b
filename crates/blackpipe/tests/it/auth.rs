//! Authentication against an auth-enabled deployment: the official `mongodb` driver
//! authenticates with SCRAM-SHA-256 and SCRAM-SHA-1 (negotiated, explicit and speculative),
//! a wrong password fails, and a connection that has not authenticated is refused.

use blackpipe::auth::{Mechanism, User};
use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::spec::BinarySubtype;
use bson::{Binary, Document, doc};
use mongodb::Client;

use crate::support::{RawClient, within};

async fn start(config: DeploymentConfig) -> Deployment {
    let replica_set = config.kind == blackpipe::deployment::DeploymentKind::ReplicaSet;
    let config = config
        .with_seed(5)
        .with_user(User::new("app", "s3cret"))
        .with_user(User::new("old", "legacy").with_mechanisms(vec![Mechanism::ScramSha1]));
    let deployment = within(Deployment::start(config)).await.unwrap();
    if replica_set {
        within(deployment.wait_for_primary()).await;
    }
    deployment
}

/// The deployment's connection string with `user:password@` and extra options.
fn uri_with(deployment: &Deployment, credentials: &str, options: &str) -> String {
    let uri = deployment
        .uri()
        .replacen("mongodb://", &format!("mongodb://{credentials}"), 1);
    let separator = if uri.contains('?') { '&' } else { '?' };
    format!("{uri}{separator}serverSelectionTimeoutMS=5000{options}")
}

fn command_code(error: &mongodb::error::Error) -> Option<i32> {
    match &*error.kind {
        mongodb::error::ErrorKind::Command(command) => Some(command.code),
        _ => None,
    }
}

async fn insert_and_count(client: &Client) -> mongodb::error::Result<u64> {
    let collection = client.database("app").collection::<Document>("items");
    collection.insert_one(doc! { "x": 1 }).await?;
    collection.count_documents(doc! {}).await
}

#[tokio::test]
async fn the_official_driver_authenticates_with_each_scram_mechanism() {
    let deployment = start(DeploymentConfig::replica_set(3)).await;
    let cases = [
        ("app:s3cret@", ""),
        ("app:s3cret@", "&authMechanism=SCRAM-SHA-256"),
        ("app:s3cret@", "&authMechanism=SCRAM-SHA-1"),
        // Negotiated through saslSupportedMechs: this user has SCRAM-SHA-1 only.
        ("old:legacy@", ""),
    ];
    let mut expected = 0;
    for (credentials, options) in cases {
        let client = Client::with_uri_str(uri_with(&deployment, credentials, options))
            .await
            .unwrap();
        expected += 1;
        let count = within(insert_and_count(&client)).await;
        assert_eq!(count.ok(), Some(expected), "{credentials} {options}");
        let admin = client.database("admin");
        let status = within(admin.run_command(doc! { "connectionStatus": 1 }))
            .await
            .unwrap();
        let user = credentials.split(':').next().unwrap_or_default();
        let expected_users = bson::bson!([{ "user": user, "db": "admin" }]);
        let auth_info = status.get_document("authInfo").unwrap();
        assert_eq!(
            auth_info.get("authenticatedUsers"),
            Some(&expected_users),
            "{status}"
        );
        within(client.shutdown()).await;
    }
    deployment.stop().await;
}

#[tokio::test]
async fn a_wrong_password_fails_authentication() {
    let deployment = start(DeploymentConfig::standalone()).await;
    for credentials in ["app:wrong@", "nobody:s3cret@"] {
        let client = Client::with_uri_str(uri_with(&deployment, credentials, ""))
            .await
            .unwrap();
        let error = within(insert_and_count(&client)).await.unwrap_err();
        assert!(
            matches!(
                *error.kind,
                mongodb::error::ErrorKind::Authentication { .. }
            ),
            "{credentials}: {error}"
        );
        assert!(
            error.to_string().contains("Authentication failed."),
            "{error}"
        );
        within(client.shutdown()).await;
    }
    deployment.stop().await;
}

#[tokio::test]
async fn a_client_without_credentials_gets_unauthorized_except_for_handshake_commands() {
    let deployment = start(DeploymentConfig::standalone()).await;
    let client = Client::with_uri_str(uri_with(&deployment, "", ""))
        .await
        .unwrap();
    let admin = client.database("admin");
    within(admin.run_command(doc! { "ping": 1 })).await.unwrap();
    within(admin.run_command(doc! { "buildInfo": 1 }))
        .await
        .unwrap();
    for command in [
        doc! { "listDatabases": 1 },
        doc! { "configureFailPoint": "failCommand", "mode": "off" },
        doc! { "blackpipe": "status" },
    ] {
        let error = within(admin.run_command(command.clone()))
            .await
            .unwrap_err();
        assert_eq!(command_code(&error), Some(13), "{command}: {error}");
    }
    let items = client.database("app").collection::<Document>("items");
    let error = within(items.find_one(doc! {})).await.unwrap_err();
    assert_eq!(command_code(&error), Some(13), "{error}");
    within(client.shutdown()).await;
    deployment.stop().await;
}

#[tokio::test]
async fn sasl_errors_on_the_wire_carry_mongods_codes() {
    let deployment = start(DeploymentConfig::standalone()).await;
    let address = deployment.hosts()[0].parse().unwrap();
    let mut raw = RawClient::connect(address).await;
    let payload = |text: &str| Binary {
        subtype: BinarySubtype::Generic,
        bytes: text.as_bytes().to_vec(),
    };
    let unknown_user = raw
        .round_trip(doc! {
            "saslStart": 1, "mechanism": "SCRAM-SHA-256", "$db": "admin",
            "payload": payload("n,,n=nobody,r=abc"),
        })
        .await;
    assert_eq!(
        unknown_user.get_i32("code").ok(),
        Some(18),
        "{unknown_user}"
    );
    assert_eq!(
        unknown_user.get_str("errmsg").ok(),
        Some("Authentication failed.")
    );
    let garbage = raw
        .round_trip(doc! {
            "saslStart": 1, "mechanism": "SCRAM-SHA-256", "$db": "admin",
            "payload": payload("\u{0}\u{0},,,,"),
        })
        .await;
    assert_eq!(garbage.get_i32("code").ok(), Some(2), "{garbage}");
    let stray = raw
        .round_trip(doc! {
            "saslContinue": 1, "conversationId": 1, "$db": "admin", "payload": payload(""),
        })
        .await;
    assert_eq!(stray.get_i32("code").ok(), Some(17), "{stray}");
    let refused = raw.round_trip(doc! { "find": "items", "$db": "app" }).await;
    assert_eq!(refused.get_i32("code").ok(), Some(13), "{refused}");
    assert_eq!(refused.get_str("codeName").ok(), Some("Unauthorized"));
    deployment.stop().await;
}

#[tokio::test]
async fn users_info_lists_the_deployments_users() {
    let deployment = start(DeploymentConfig::standalone()).await;
    let client = Client::with_uri_str(uri_with(&deployment, "app:s3cret@", ""))
        .await
        .unwrap();
    let admin = client.database("admin");
    let all = within(admin.run_command(doc! { "usersInfo": 1 }))
        .await
        .unwrap();
    let users = all.get_array("users").unwrap();
    let names: Vec<&str> = users
        .iter()
        .filter_map(|user| user.as_document()?.get_str("user").ok())
        .collect();
    assert_eq!(names, ["app", "old"], "{all}");
    let old = within(admin.run_command(doc! { "usersInfo": { "user": "old", "db": "admin" } }))
        .await
        .unwrap();
    let old = old.get_array("users").unwrap()[0]
        .as_document()
        .unwrap()
        .clone();
    assert_eq!(old.get_str("_id").unwrap(), "admin.old");
    assert_eq!(old.get_array("mechanisms").unwrap().len(), 1, "{old}");
    // A user of another database, and no such user: an empty list, as mongod answers.
    let elsewhere = within(
        client
            .database("app")
            .run_command(doc! { "usersInfo": "app" }),
    )
    .await
    .unwrap();
    assert!(
        elsewhere.get_array("users").unwrap().is_empty(),
        "{elsewhere}"
    );
    let error = within(admin.run_command(doc! { "usersInfo": 5 }))
        .await
        .expect_err("a user is a name or {user, db}");
    assert_eq!(command_code(&error), Some(2));
}
