//! MONGODB-AWS end to end: real connections to blackpipe (which recomputes the signature with
//! its own code and the test key's secret), with credentials from the connection string, the
//! environment, and ECS, EC2 and web identity endpoints served by a tiny HTTP server here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use blackpipe::auth::AwsKey;
use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{RawDocumentBuf, doc};
use steadfast_core::{IoLimit, ServerAddress};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

use super::super::AwsAuth;
use super::super::credentials::{AwsCredential, AwsEnvironment, SecretKey};
use super::super::fetch::AwsEndpoints;
use crate::conn::Connection;
use crate::conn::config::{AuthSettings, ConnectionConfig, MechanismChoice};
use crate::error::Result;
use crate::runtime::unix_seconds;

const KEY_ID: &str = "AKIDTEST";
const SECRET: &str = "test/SECRET+key";
const TOKEN: &str = "session-token";
const ARN: &str = "arn:aws:iam::123456789012:role/test";

/// A fixed environment, so no test changes the process's.
#[derive(Debug, Default)]
struct MapEnvironment(HashMap<String, String>);

impl MapEnvironment {
    fn with(pairs: &[(&str, &str)]) -> Arc<Self> {
        Arc::new(Self(
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        ))
    }
}

impl AwsEnvironment for MapEnvironment {
    fn var(&self, name: &str) -> Option<String> {
        self.0.get(name).cloned()
    }
}

/// One request the HTTP server received.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    headers: String,
    body: String,
}

/// A local HTTP/1.1 server answering each request with `route(request)` (status, body).
struct Endpoint {
    base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Endpoint {
    async fn start(route: impl Fn(&Seen) -> (u16, String) + Send + Sync + 'static) -> Endpoint {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let Some(request) = read_request(&mut socket).await else {
                    continue;
                };
                log.lock().unwrap().push(request.clone());
                let (status, body) = route(&request);
                let response = format!(
                    "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
            }
        });
        Endpoint { base, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Seen> {
    let mut data = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&data).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let head = &text[..end];
            let length = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().to_owned())
                })
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0);
            if data.len() >= end + 4 + length {
                let mut first = head.lines().next()?.split(' ');
                return Some(Seen {
                    method: first.next()?.to_owned(),
                    path: first.next()?.to_owned(),
                    headers: head.to_ascii_lowercase(),
                    body: text[end + 4..].to_owned(),
                });
            }
        }
        let read = socket.read(&mut buffer).await.ok()?;
        if read == 0 {
            return None;
        }
        data.extend_from_slice(&buffer[..read]);
    }
}

/// An ISO 8601 UTC time `seconds_from_now` seconds away.
fn expiring_in(seconds_from_now: u64) -> String {
    let compact = super::super::sigv4::amz_date(unix_seconds() + seconds_from_now);
    format!(
        "{}-{}-{}T{}:{}:{}Z",
        &compact[..4],
        &compact[4..6],
        &compact[6..8],
        &compact[9..11],
        &compact[11..13],
        &compact[13..15]
    )
}

/// The ECS/EC2 credentials document for the test key, as temporary credentials.
fn credentials_json(secret: &str, expires_in: u64) -> String {
    format!(
        r#"{{"Code":"Success","Type":"AWS-HMAC","AccessKeyId":"{KEY_ID}","SecretAccessKey":"{secret}","Token":"{TOKEN}","Expiration":"{}"}}"#,
        expiring_in(expires_in)
    )
}

async fn deployment() -> Deployment {
    let config = DeploymentConfig::standalone()
        .with_aws_key(AwsKey::new(KEY_ID, SECRET, ARN).with_session_token(TOKEN))
        .with_aws_key(AwsKey::new(
            "AKIDLONG",
            SECRET,
            "arn:aws:iam::123456789012:user/long",
        ));
    Deployment::start(config).await.expect("deployment starts")
}

fn endpoints(base: &str) -> AwsEndpoints {
    AwsEndpoints {
        sts: base.to_owned(),
        ecs: base.to_owned(),
        ec2: base.to_owned(),
    }
}

fn config(aws: &Arc<AwsAuth>) -> ConnectionConfig {
    ConnectionConfig {
        metadata: doc! { "driver": { "name": "steadfast", "version": "0" } },
        appended_metadata: Default::default(),
        compressors: Vec::new(),
        connect_timeout: None,
        socket_timeout: None,
        tls: None,
        auth: Some(Arc::new(AuthSettings {
            username: String::new(),
            password: String::new(),
            source: "$external".into(),
            mechanism: MechanismChoice::Aws,
            cache: Arc::default(),
            aws: Some(Arc::clone(aws)),
            oidc: None,
        })),
        server_api: None,
        load_balanced: false,
        host_resolver: Default::default(),
        proxy: None,
    }
}

/// Connects, authenticates, and runs a command only an authenticated connection may run.
async fn authenticate_and_find(deployment: &Deployment, aws: &Arc<AwsAuth>) -> Result<()> {
    let address = ServerAddress::parse(&deployment.host(0).unwrap()).unwrap();
    let route = crate::conn::stream::Route {
        resolver: &crate::conn::stream::HostResolver::System,
        proxy: None,
        tls: None,
    };
    let stream = crate::conn::stream::open(&address, &route, None).await?;
    let mut connection = Connection::new(1, address, stream, None);
    crate::handshake::perform(&mut connection, &config(aws), IoLimit::SocketTimeout(None)).await?;
    let find = RawDocumentBuf::try_from(&doc! { "find": "c", "$db": "test" }).unwrap();
    let reply = bson::Document::try_from(
        connection
            .send_command(find, IoLimit::SocketTimeout(None))
            .await?,
    )
    .unwrap();
    assert_eq!(reply.get_f64("ok").ok(), Some(1.0), "{reply}");
    Ok(())
}

fn given(secret: &str, token: Option<&str>) -> Option<AwsCredential> {
    Some(AwsCredential {
        access_key_id: if token.is_some() { KEY_ID } else { "AKIDLONG" }.to_owned(),
        secret_access_key: SecretKey::new(secret.to_owned()),
        session_token: token.map(str::to_owned),
        expiration: None,
    })
}

fn unreachable_endpoints() -> AwsEndpoints {
    // Port 9 (discard) on loopback: nothing listens, so any fetch would fail the test.
    endpoints("http://127.0.0.1:9")
}

#[tokio::test]
async fn connection_string_credentials_with_and_without_a_session_token() {
    let deployment = deployment().await;
    for token in [None, Some(TOKEN)] {
        let aws = Arc::new(AwsAuth::with_sources(
            given(SECRET, token),
            MapEnvironment::with(&[]),
            unreachable_endpoints(),
        ));
        authenticate_and_find(&deployment, &aws).await.unwrap();
    }
}

#[tokio::test]
async fn a_wrong_secret_is_refused_by_the_server() {
    let deployment = deployment().await;
    let aws = Arc::new(AwsAuth::with_sources(
        given("not-the-secret", None),
        MapEnvironment::with(&[]),
        unreachable_endpoints(),
    ));
    let error = authenticate_and_find(&deployment, &aws).await.unwrap_err();
    assert!(error.is_authentication_error(), "{error:?}");
}

#[tokio::test]
async fn environment_credentials_are_read_and_not_cached() {
    let deployment = deployment().await;
    let aws = Arc::new(AwsAuth::with_sources(
        None,
        MapEnvironment::with(&[
            ("AWS_ACCESS_KEY_ID", KEY_ID),
            ("AWS_SECRET_ACCESS_KEY", SECRET),
            ("AWS_SESSION_TOKEN", TOKEN),
        ]),
        unreachable_endpoints(),
    ));
    authenticate_and_find(&deployment, &aws).await.unwrap();
    assert_eq!(aws.cache.get(0), None);
}

#[tokio::test]
async fn ecs_credentials_are_fetched_from_the_relative_uri_and_cached() {
    let deployment = deployment().await;
    let endpoint = Endpoint::start(|_| (200, credentials_json(SECRET, 3600))).await;
    let aws = Arc::new(AwsAuth::with_sources(
        None,
        MapEnvironment::with(&[(
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
            "/v2/credentials/x",
        )]),
        endpoints(&endpoint.base),
    ));
    authenticate_and_find(&deployment, &aws).await.unwrap();
    authenticate_and_find(&deployment, &aws).await.unwrap();
    let seen = endpoint.seen();
    assert_eq!(
        seen.len(),
        1,
        "the second authentication used the cache: {seen:?}"
    );
    assert_eq!(
        (seen[0].method.as_str(), seen[0].path.as_str()),
        ("GET", "/v2/credentials/x")
    );
}

#[tokio::test]
async fn credentials_within_five_minutes_of_expiry_are_fetched_again() {
    let deployment = deployment().await;
    let endpoint = Endpoint::start(|_| (200, credentials_json(SECRET, 120))).await;
    let aws = Arc::new(AwsAuth::with_sources(
        None,
        MapEnvironment::with(&[("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/creds")]),
        endpoints(&endpoint.base),
    ));
    authenticate_and_find(&deployment, &aws).await.unwrap();
    authenticate_and_find(&deployment, &aws).await.unwrap();
    assert_eq!(endpoint.seen().len(), 2);
}

#[tokio::test]
async fn a_failed_authentication_clears_the_cache() {
    let deployment = deployment().await;
    let endpoint = Endpoint::start(|_| (200, credentials_json("stale-secret", 3600))).await;
    let aws = Arc::new(AwsAuth::with_sources(
        None,
        MapEnvironment::with(&[("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/creds")]),
        endpoints(&endpoint.base),
    ));
    assert!(authenticate_and_find(&deployment, &aws).await.is_err());
    assert_eq!(aws.cache.get(0), None);
    assert!(authenticate_and_find(&deployment, &aws).await.is_err());
    assert_eq!(endpoint.seen().len(), 2, "each attempt fetched afresh");
}

#[tokio::test]
async fn ec2_credentials_come_through_an_imdsv2_session() {
    let deployment = deployment().await;
    let endpoint =
        Endpoint::start(
            |request| match (request.method.as_str(), request.path.as_str()) {
                ("PUT", "/latest/api/token") => (200, "imds-token".to_owned()),
                ("GET", "/latest/meta-data/iam/security-credentials/") => {
                    (200, "test-role\n".to_owned())
                }
                ("GET", "/latest/meta-data/iam/security-credentials/test-role") => {
                    (200, credentials_json(SECRET, 3600))
                }
                _ => (404, String::new()),
            },
        )
        .await;
    let aws = Arc::new(AwsAuth::with_sources(
        None,
        MapEnvironment::with(&[]),
        endpoints(&endpoint.base),
    ));
    authenticate_and_find(&deployment, &aws).await.unwrap();
    let seen = endpoint.seen();
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(
        seen[0]
            .headers
            .contains("x-aws-ec2-metadata-token-ttl-seconds: 30")
    );
    for later in &seen[1..] {
        assert!(
            later
                .headers
                .contains("x-aws-ec2-metadata-token: imds-token"),
            "{later:?}"
        );
    }
}

#[tokio::test]
async fn web_identity_exchanges_the_token_file_with_sts() {
    let deployment = deployment().await;
    let endpoint = Endpoint::start(|_| {
        let body = format!(
            r#"{{"AssumeRoleWithWebIdentityResponse":{{"AssumeRoleWithWebIdentityResult":{{"Credentials":{{"AccessKeyId":"{KEY_ID}","SecretAccessKey":"{SECRET}","SessionToken":"{TOKEN}","Expiration":{}}}}}}}}}"#,
            unix_seconds() + 3600
        );
        (200, body)
    })
    .await;
    let token_file = std::env::temp_dir().join(format!(
        "steadfast-web-identity-{}-{}",
        std::process::id(),
        unix_seconds()
    ));
    std::fs::write(&token_file, "oidc-token\n").unwrap();
    let aws = Arc::new(AwsAuth::with_sources(
        None,
        MapEnvironment::with(&[
            ("AWS_WEB_IDENTITY_TOKEN_FILE", token_file.to_str().unwrap()),
            ("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/web"),
            ("AWS_ROLE_SESSION_NAME", "session-1"),
            // Ignored: web identity comes first.
            ("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/creds"),
        ]),
        endpoints(&endpoint.base),
    ));
    let result = authenticate_and_find(&deployment, &aws).await;
    let _ = std::fs::remove_file(&token_file);
    result.unwrap();
    let seen = endpoint.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(
        (seen[0].method.as_str(), seen[0].path.as_str()),
        ("POST", "/")
    );
    assert!(seen[0].headers.contains("accept: application/json"));
    for field in [
        "Action=AssumeRoleWithWebIdentity",
        "RoleSessionName=session-1",
        "RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Fweb",
        "WebIdentityToken=oidc-token",
        "Version=2011-06-15",
    ] {
        assert!(seen[0].body.contains(field), "{field} in {}", seen[0].body);
    }
}
