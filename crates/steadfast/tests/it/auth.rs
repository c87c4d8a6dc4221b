//! SCRAM conversations in which the test plays the server, computing its side with the
//! RustCrypto primitives directly (independently of the driver's SCRAM code).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use blackpipe::scripted::{
    DefaultResponders, Matcher, PendingRequest, ScriptedConfig, ScriptedServer, standalone_hello,
};
use bson::spec::BinarySubtype;
use bson::{Binary, Bson, Document, doc};
use hmac::{Hmac, Mac};
use md5::Digest as _;
use sha1::Sha1;
use sha2::Sha256;
use steadfast::Client;
use tokio::task::JoinHandle;

use crate::server_with;

#[derive(Clone, Copy)]
enum Hash {
    Sha1,
    Sha256,
}

fn hmac(hash: Hash, key: &[u8], data: &[u8]) -> Vec<u8> {
    match hash {
        Hash::Sha1 => {
            let mut mac = Hmac::<Sha1>::new_from_slice(key).unwrap();
            mac.update(data);
            mac.finalize().into_bytes().to_vec()
        }
        Hash::Sha256 => {
            let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap();
            mac.update(data);
            mac.finalize().into_bytes().to_vec()
        }
    }
}

fn digest(hash: Hash, data: &[u8]) -> Vec<u8> {
    match hash {
        Hash::Sha1 => Sha1::digest(data).to_vec(),
        Hash::Sha256 => Sha256::digest(data).to_vec(),
    }
}

/// The server side of one SCRAM conversation.
struct ScramServer {
    hash: Hash,
    salted: Vec<u8>,
    client_first_bare: String,
    server_first: String,
}

impl ScramServer {
    /// Reads the client-first message and produces the server-first one.
    fn start(hash: Hash, user: &str, password: &str, client_first: &[u8]) -> Self {
        let client_first = std::str::from_utf8(client_first).unwrap();
        let bare = client_first
            .strip_prefix("n,,")
            .expect("no channel binding")
            .to_string();
        assert!(bare.starts_with(&format!("n={user},r=")), "{bare}");
        let client_nonce = bare.split_once(",r=").unwrap().1;
        let salt = b"blackpipe-salt-16";
        let iterations = 4096;
        let secret = match hash {
            // MongoDB's SCRAM-SHA-1 uses the hex MD5 of "user:mongo:password" as the password.
            Hash::Sha1 => md5::Md5::digest(format!("{user}:mongo:{password}"))
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>(),
            Hash::Sha256 => password.to_string(),
        };
        let mut salted = vec![0u8; if matches!(hash, Hash::Sha1) { 20 } else { 32 }];
        match hash {
            Hash::Sha1 => {
                pbkdf2::pbkdf2_hmac::<Sha1>(secret.as_bytes(), salt, iterations, &mut salted)
            }
            Hash::Sha256 => {
                pbkdf2::pbkdf2_hmac::<Sha256>(secret.as_bytes(), salt, iterations, &mut salted)
            }
        }
        let server_first = format!(
            "r={client_nonce}ServerPart,s={},i={iterations}",
            B64.encode(salt)
        );
        ScramServer {
            hash,
            salted,
            client_first_bare: bare,
            server_first,
        }
    }

    /// Checks the client proof; returns the server-final message (with a correct or a
    /// deliberately wrong signature).
    fn finish(&self, client_final: &[u8], sign_correctly: bool) -> Vec<u8> {
        let client_final = std::str::from_utf8(client_final).unwrap();
        let (without_proof, proof) = client_final.rsplit_once(",p=").unwrap();
        let auth_message = format!(
            "{},{},{without_proof}",
            self.client_first_bare, self.server_first
        );
        let client_key = hmac(self.hash, &self.salted, b"Client Key");
        let stored_key = digest(self.hash, &client_key);
        let signature = hmac(self.hash, &stored_key, auth_message.as_bytes());
        let proof = B64.decode(proof).unwrap();
        let recovered: Vec<u8> = proof.iter().zip(&signature).map(|(p, s)| p ^ s).collect();
        assert_eq!(
            digest(self.hash, &recovered),
            stored_key,
            "the client proof verifies"
        );
        let server_key = hmac(self.hash, &self.salted, b"Server Key");
        let mut server_signature = hmac(self.hash, &server_key, auth_message.as_bytes());
        if !sign_correctly {
            server_signature[0] ^= 0xFF;
        }
        format!("v={}", B64.encode(server_signature)).into_bytes()
    }
}

fn binary(bytes: Vec<u8>) -> Bson {
    Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes,
    })
}

fn payload_of(command: &Document) -> Vec<u8> {
    match command.get("payload") {
        Some(Bson::Binary(b)) => b.bytes.clone(),
        other => panic!("payload should be binary: {other:?}"),
    }
}

/// A server whose handshakes the test answers itself, except the monitor's first check: the
/// client's monitor connects first (selection waits for it) and never authenticates, so the
/// next hello is the application connection's handshake.
async fn manual_hello_server() -> ScriptedServer {
    let server = server_with(
        ScriptedConfig::default().with_defaults(DefaultResponders::default().with_hello(false)),
    )
    .await;
    server.rule(Matcher::hello(), standalone_hello()).once();
    server
}

/// Pings `server` in a task from a new client with `credentials` (`user:password`) and the
/// URI `path` (`/db?options`); returns the task and the hello of the connection's handshake,
/// for the test to answer.
async fn ping_through_handshake(
    server: &ScriptedServer,
    credentials: &str,
    path: &str,
) -> (JoinHandle<steadfast::Result<Document>>, PendingRequest) {
    let uri = format!("mongodb://{credentials}@127.0.0.1:{}{path}", server.port());
    let client = Client::with_uri_str(&uri).await.unwrap();
    let db = client.database("app");
    let run = tokio::spawn(async move { db.run_command(doc! { "ping": 1 }).await });
    let hello = server.next_request(Matcher::hello()).await.unwrap();
    (run, hello)
}

/// Speculative SCRAM-SHA-256 inside the handshake, finished with one saslContinue.
async fn speculative_conversation(sign_correctly: bool) -> steadfast::Result<Document> {
    let server = manual_hello_server().await;
    let (run, hello) = ping_through_handshake(&server, "user:pencil", "/").await;
    let command = hello.command().clone();
    assert_eq!(
        command.get_str("saslSupportedMechs").ok(),
        Some("admin.user")
    );
    let speculative = command.get_document("speculativeAuthenticate").unwrap();
    assert_eq!(speculative.get_str("mechanism").ok(), Some("SCRAM-SHA-256"));
    assert_eq!(speculative.get_str("db").ok(), Some("admin"));
    assert_eq!(
        speculative.get_document("options").unwrap(),
        &doc! { "skipEmptyExchange": true }
    );
    let scram = ScramServer::start(Hash::Sha256, "user", "pencil", &payload_of(speculative));
    let mut reply = standalone_hello();
    reply.insert("saslSupportedMechs", vec!["SCRAM-SHA-256", "SCRAM-SHA-1"]);
    reply.insert(
        "speculativeAuthenticate",
        doc! { "conversationId": 1, "done": false, "payload": binary(scram.server_first.clone().into_bytes()) },
    );
    hello.reply(reply).unwrap();

    let next = server
        .next_request(Matcher::command("saslContinue"))
        .await
        .unwrap();
    assert_eq!(next.database(), "admin");
    assert_eq!(next.command().get_i32("conversationId").ok(), Some(1));
    let server_final = scram.finish(&payload_of(next.command()), sign_correctly);
    next.reply(
        doc! { "conversationId": 1, "done": true, "payload": binary(server_final), "ok": 1 },
    )
    .unwrap();
    let result = run.await.unwrap();
    let sasl_starts = server
        .requests()
        .into_iter()
        .filter(|r| r.command_name() == "saslStart")
        .count();
    assert_eq!(
        sasl_starts, 0,
        "speculative authentication saved the saslStart round trip"
    );
    result
}

#[tokio::test]
async fn speculative_scram_sha256_authenticates() {
    let reply = speculative_conversation(true).await.unwrap();
    assert_eq!(reply.get_f64("ok").ok(), Some(1.0));
}

#[tokio::test]
async fn wrong_server_signature_is_rejected() {
    let error = speculative_conversation(false).await.unwrap_err();
    assert!(error.is_authentication_error(), "{error:?}");
    assert!(error.to_string().contains("signature"), "{error}");
    assert!(!error.to_string().contains("pencil"));
}

#[tokio::test]
async fn negotiated_scram_sha1_with_the_extra_empty_exchange() {
    let server = manual_hello_server().await;
    let (run, hello) = ping_through_handshake(&server, "user:pencil", "/src").await;
    assert_eq!(
        hello.command().get_str("saslSupportedMechs").ok(),
        Some("src.user")
    );
    // An older server: it ignores speculativeAuthenticate and only offers SCRAM-SHA-1.
    let mut reply = standalone_hello();
    reply.insert("saslSupportedMechs", vec!["SCRAM-SHA-1"]);
    hello.reply(reply).unwrap();

    let start = server
        .next_request(Matcher::command("saslStart"))
        .await
        .unwrap();
    assert_eq!(
        start.database(),
        "src",
        "the URI database is the auth source"
    );
    assert_eq!(
        start.command().get_str("mechanism").ok(),
        Some("SCRAM-SHA-1")
    );
    assert_eq!(
        start.command().get_document("options").unwrap(),
        &doc! { "skipEmptyExchange": true }
    );
    let scram = ScramServer::start(Hash::Sha1, "user", "pencil", &payload_of(start.command()));
    start
        .reply(doc! { "conversationId": 7, "done": false, "payload": binary(scram.server_first.clone().into_bytes()), "ok": 1 })
        .unwrap();
    let proof = server
        .next_request(Matcher::command("saslContinue"))
        .await
        .unwrap();
    let server_final = scram.finish(&payload_of(proof.command()), true);
    // Not done yet: this server wants the empty exchange that skipEmptyExchange avoids.
    proof
        .reply(
            doc! { "conversationId": 7, "done": false, "payload": binary(server_final), "ok": 1 },
        )
        .unwrap();
    let empty = server
        .next_request(Matcher::command("saslContinue"))
        .await
        .unwrap();
    assert!(payload_of(empty.command()).is_empty());
    empty
        .reply(doc! { "conversationId": 7, "done": true, "payload": binary(Vec::new()), "ok": 1 })
        .unwrap();
    run.await.unwrap().unwrap();
}

#[tokio::test]
async fn rejected_credential_is_an_authentication_error() {
    let server = manual_hello_server().await;
    let (run, hello) =
        ping_through_handshake(&server, "user:wrong", "/?authMechanism=SCRAM-SHA-256").await;
    assert!(
        !hello.command().contains_key("saslSupportedMechs"),
        "mechanism given: no negotiation"
    );
    hello.reply(standalone_hello()).unwrap();
    let start = server
        .next_request(Matcher::command("saslStart"))
        .await
        .unwrap();
    start
        .reply_error(18, "AuthenticationFailed", "Authentication failed.", &[])
        .unwrap();
    let error = run.await.unwrap().unwrap_err();
    assert!(error.is_authentication_error(), "{error:?}");
    assert!(
        error.to_string().contains("AuthenticationFailed"),
        "{error}"
    );
    assert!(
        !error.to_string().contains("wrong"),
        "no password in messages: {error}"
    );
}

#[tokio::test]
async fn a_failed_handshake_with_a_credential_is_an_authentication_error() {
    let server = manual_hello_server().await;
    let (run, hello) = ping_through_handshake(&server, "ghost:pw", "/").await;
    hello
        .reply_error(
            11,
            "UserNotFound",
            "Could not find user \"ghost\"",
            &["SystemOverloadedError"],
        )
        .unwrap();
    let error = run.await.unwrap().unwrap_err();
    assert!(error.is_authentication_error(), "{error:?}");
    assert!(error.to_string().contains("UserNotFound"), "{error}");
    assert!(
        error.has_label("SystemOverloadedError"),
        "server labels survive"
    );
}

#[tokio::test]
async fn a_failed_handshake_without_a_credential_is_a_command_error() {
    let server = manual_hello_server().await;
    let client = crate::client(&server, "").await;
    let db = client.database("app");
    let run = tokio::spawn(async move { db.run_command(doc! { "ping": 1 }).await });
    let hello = server.next_request(Matcher::hello()).await.unwrap();
    hello
        .reply_error(91, "ShutdownInProgress", "shutting down", &[])
        .unwrap();
    let error = run.await.unwrap().unwrap_err();
    assert_eq!(error.code(), Some(91), "{error:?}");
    assert!(error.is_shutting_down());
}

/// The driver against blackpipe's own SCRAM implementation rather than a script: negotiated
/// (speculative) and explicit mechanisms authenticate, a wrong password is an authentication
/// error, and a client without credentials is refused with Unauthorized.
#[tokio::test]
async fn the_driver_authenticates_against_an_auth_enabled_deployment() {
    use blackpipe::deployment::{Deployment, DeploymentConfig};
    let config =
        DeploymentConfig::standalone().with_user(blackpipe::auth::User::new("app", "s3cret"));
    let deployment = Deployment::start(config).await.unwrap();
    let host = deployment.hosts()[0].clone();
    let uri = |credentials: &str, options: &str| {
        format!("mongodb://{credentials}{host}/?directConnection=true{options}")
    };
    for options in [
        "",
        "&authMechanism=SCRAM-SHA-256",
        "&authMechanism=SCRAM-SHA-1",
    ] {
        let client = Client::with_uri_str(&uri("app:s3cret@", options))
            .await
            .unwrap();
        let insert = doc! { "insert": "items", "documents": [{ "x": 1 }] };
        let reply = client.database("app").run_command(insert).await;
        let reply = reply.unwrap_or_else(|e| panic!("{options}: {e:?}"));
        assert!(
            matches!(reply.get("n"), Some(Bson::Int32(1) | Bson::Int64(1))),
            "{reply}"
        );
    }
    let wrong = Client::with_uri_str(&uri("app:nope@", "")).await.unwrap();
    let error = wrong
        .database("app")
        .run_command(doc! { "ping": 1 })
        .await
        .unwrap_err();
    assert!(error.is_authentication_error(), "{error:?}");
    assert!(
        error.to_string().contains("AuthenticationFailed"),
        "{error}"
    );
    let anonymous = Client::with_uri_str(&uri("", "")).await.unwrap();
    let error = anonymous
        .database("app")
        .run_command(doc! { "find": "items" })
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(13), "{error:?}");
    deployment.stop().await;
}
