//! SOCKS5 proxies (socks5-tests.md's prose tests, on loopback): a blackpipe replica set behind
//! two proxies on 127.0.0.1, one requiring username/password authentication and one not. The
//! proxies map the unresolvable host `mapped.invalid:12345` to a member, so a connection to it
//! can only succeed if the driver hands the name to the proxy unresolved, as the specification
//! requires. Each connection string runs `hello`; each is also tried with the proxy given as
//! `ClientOptions::socks5_proxy` instead of URI options.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bson::doc;
use fast_socks5::server::{DnsResolveHelper as _, Socks5ServerProtocol, run_tcp_proxy};
use fast_socks5::util::target_addr::TargetAddr;
use fast_socks5::{ReplyError, Socks5Command};
use steadfast::options::{ClientOptions, Socks5Proxy};
use steadfast::{Client, Error};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::retry_support::{harness, replica_set, started, within};

/// The name only the proxies know.
const MAPPED: &str = "mapped.invalid:12345";
const USER: &str = "username";
const PASSWORD: &str = "p4ssw0rd";

/// A SOCKS5 proxy on 127.0.0.1 that records every target it is asked for.
struct Proxy {
    port: u16,
    targets: Arc<Mutex<Vec<String>>>,
    task: JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    /// Starts a proxy mapping [`MAPPED`] to `member`; with `authenticated` it accepts only
    /// [`USER`]/[`PASSWORD`], without it only "no authentication".
    async fn start(member: &str, authenticated: bool) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
        let port = listener.local_addr().expect("bound").port();
        let targets = Arc::new(Mutex::new(Vec::new()));
        let member: std::net::SocketAddr = member.parse().expect("a member at an IP address");
        let recorded = Arc::clone(&targets);
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let recorded = Arc::clone(&recorded);
                tokio::spawn(async move {
                    // A refused handshake or a dropped client ends this connection only.
                    let _ = serve(socket, authenticated, member, recorded).await;
                });
            }
        });
        Proxy {
            port,
            targets,
            task,
        }
    }

    fn targets(&self) -> Vec<String> {
        self.targets.lock().expect("not poisoned").clone()
    }
}

async fn serve(
    socket: TcpStream,
    authenticated: bool,
    member: std::net::SocketAddr,
    targets: Arc<Mutex<Vec<String>>>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let protocol = if authenticated {
        Socks5ServerProtocol::accept_password_auth(socket, |user, password| {
            user == USER && password == PASSWORD
        })
        .await?
        .0
    } else {
        Socks5ServerProtocol::accept_no_auth(socket).await?
    };
    let (protocol, command, target) = protocol.read_command().await?;
    targets
        .lock()
        .expect("not poisoned")
        .push(target.to_string());
    if command != Socks5Command::TCPConnect {
        protocol
            .reply_error(&ReplyError::CommandNotSupported)
            .await?;
        return Ok(());
    }
    let (protocol, _, target) = if target.to_string() == MAPPED {
        (protocol, command, TargetAddr::Ip(member))
    } else {
        (protocol, command, target).resolve_dns().await?
    };
    run_tcp_proxy(protocol, &target, Duration::from_secs(10), true).await?;
    Ok(())
}

/// Runs `hello` through a client for `uri` (proxy options in the URI, or moved into
/// `ClientOptions::socks5_proxy` when `in_code`).
async fn hello(uri: &str, in_code: bool) -> Result<(), Error> {
    let mut options = ClientOptions::parse(uri).await?;
    options.server_selection_timeout = Some(Duration::from_millis(500));
    if in_code {
        let proxy = options.socks5_proxy.take().expect("the URI names a proxy");
        options.socks5_proxy = Some(
            Socks5Proxy::builder()
                .host(proxy.host)
                .port(proxy.port)
                .authentication(proxy.authentication)
                .build(),
        );
    }
    let client = Client::with_options(options)?;
    let result = within(client.database("admin").run_command(doc! { "hello": 1 })).await;
    client.shutdown().await;
    result.map(|_| ())
}

/// socks5-tests.md's table: `<replicaset>` is every member, `<mappedhost>` [`MAPPED`]; 1080
/// is the proxy requiring authentication, 1081 the one that does not.
#[tokio::test]
async fn the_specifications_connection_strings_succeed_and_fail_as_required() {
    let deployment = replica_set().await;
    let members = deployment.uri();
    let members = members
        .trim_start_matches("mongodb://")
        .split('/')
        .next()
        .expect("hosts")
        .to_owned();
    let first = deployment.host(0).expect("a first member");
    let auth = Proxy::start(&first, true).await;
    let open = Proxy::start(&first, false).await;
    let (a, o) = (auth.port, open.port);
    let bad = "proxyUsername=nonexistentuser&proxyPassword=badauth";
    let good = format!("proxyUsername={USER}&proxyPassword={PASSWORD}");
    let direct = "directConnection=true";
    let cases = [
        (
            format!("{MAPPED}/?proxyHost=127.0.0.1&proxyPort={a}&{direct}"),
            false,
        ),
        (
            format!("{MAPPED}/?proxyHost=127.0.0.1&proxyPort={o}&{direct}"),
            true,
        ),
        (
            format!("{members}/?proxyHost=127.0.0.1&proxyPort={a}"),
            false,
        ),
        (
            format!("{members}/?proxyHost=127.0.0.1&proxyPort={o}"),
            true,
        ),
        (
            format!("{MAPPED}/?proxyHost=127.0.0.1&proxyPort={a}&{bad}&{direct}"),
            false,
        ),
        (
            format!("{MAPPED}/?proxyHost=127.0.0.1&proxyPort={o}&{bad}&{direct}"),
            true,
        ),
        (
            format!("{members}/?proxyHost=127.0.0.1&proxyPort={o}&{bad}"),
            true,
        ),
        (
            format!("{MAPPED}/?proxyHost=127.0.0.1&proxyPort={a}&{good}&{direct}"),
            true,
        ),
        (
            format!("{members}/?proxyHost=127.0.0.1&proxyPort={a}&{good}"),
            true,
        ),
    ];
    for in_code in [false, true] {
        for (hosts_and_options, succeeds) in &cases {
            let uri = format!("mongodb://{hosts_and_options}");
            let outcome = hello(&uri, in_code).await;
            assert_eq!(
                outcome.is_ok(),
                *succeeds,
                "{uri} (proxy set in code: {in_code}): {outcome:?}"
            );
        }
    }
    assert!(
        open.targets().iter().any(|t| t == MAPPED),
        "the mapped name reached the proxy unresolved: {:?}",
        open.targets()
    );
}

/// Command events name the server, never the proxy; every member is reached through the
/// proxy (monitoring and application connections alike); and a stepdown behind the proxy is
/// survived like any other.
#[tokio::test]
async fn a_replica_set_behind_a_proxy_fails_over_and_its_events_name_the_servers() {
    let deployment = replica_set().await;
    let first = deployment.host(0).expect("a first member");
    let proxy = Proxy::start(&first, true).await;
    let query = format!(
        "&proxyHost=127.0.0.1&proxyPort={}&proxyUsername={USER}&proxyPassword={PASSWORD}",
        proxy.port
    );
    let h = harness(&deployment.uri(), &query).await;
    let orders = h
        .client
        .database("shop")
        .collection::<bson::Document>("orders");
    within(orders.insert_one(doc! { "_id": 1 }))
        .await
        .expect("an insert through the proxy");

    let index = within(deployment.wait_for_primary()).await;
    deployment
        .step_down(Duration::from_secs(60))
        .expect("the primary steps down");
    within(orders.insert_one(doc! { "_id": 2 }))
        .await
        .expect("an insert after the stepdown, through the proxy");
    let new_index = within(deployment.wait_for_primary()).await;
    assert_ne!(index, new_index, "another member was elected");

    let inserts = started(&h.events, "insert");
    assert!(!inserts.is_empty());
    let proxy_address = format!("127.0.0.1:{}", proxy.port);
    for insert in &inserts {
        let server = insert.connection.address.to_string();
        assert_ne!(
            server, proxy_address,
            "events name the server, not the proxy"
        );
    }
    let targets = proxy.targets();
    for member in 0..3 {
        let host = deployment.host(member).expect("a member");
        assert!(
            targets.contains(&host),
            "{host} was reached through the proxy: {targets:?}"
        );
    }
    h.client.shutdown().await;
}
