//! Client construction, options, event handlers and sessions, written as for the official
//! driver.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use blackpipe::deployment::{Deployment, DeploymentConfig};
use steadfast::bson::{Document, doc};
use steadfast::event::EventHandler;
use steadfast::event::cmap::CmapEvent;
use steadfast::event::command::CommandEvent;
use steadfast::event::sdam::SdamEvent;
use steadfast::options::{
    AuthMechanism, ClientOptions, Compressor, Credential, DriverInfo, ReadPreference,
    ReadPreferenceOptions, SelectionCriteria, ServerAddress, ServerApi, ServerApiVersion,
    ServerInfo, SessionOptions, Tls, TlsOptions,
};
use steadfast::{Client, ServerType};

async fn standalone() -> Deployment {
    Deployment::start(DeploymentConfig::standalone())
        .await
        .expect("the deployment starts")
}

#[tokio::test]
async fn parse_fills_the_official_field_names() {
    let uri = "mongodb://db1.example.com:27018,db2.example.com/inventory?replicaSet=rs0\
               &appName=port&heartbeatFrequencyMS=1500&maxPoolSize=7&minPoolSize=1\
               &serverSelectionTimeoutMS=2500&connectTimeoutMS=3000&retryWrites=false\
               &readPreference=secondaryPreferred&w=majority&directConnection=false";
    let options = ClientOptions::parse(uri)
        .await
        .expect("a valid connection string");

    assert_eq!(
        options.hosts,
        vec![
            ServerAddress::Tcp {
                host: "db1.example.com".to_string(),
                port: Some(27018),
            },
            ServerAddress::Tcp {
                host: "db2.example.com".to_string(),
                port: None,
            },
        ]
    );
    assert_eq!(options.repl_set_name.as_deref(), Some("rs0"));
    assert_eq!(options.app_name.as_deref(), Some("port"));
    assert_eq!(options.heartbeat_freq, Some(Duration::from_millis(1500)));
    assert_eq!(options.max_pool_size, Some(7));
    assert_eq!(options.min_pool_size, Some(1));
    assert_eq!(
        options.server_selection_timeout,
        Some(Duration::from_millis(2500))
    );
    assert_eq!(options.connect_timeout, Some(Duration::from_secs(3)));
    assert_eq!(options.retry_writes, Some(false));
    assert_eq!(options.direct_connection, Some(false));
    assert_eq!(options.default_database.as_deref(), Some("inventory"));
    assert!(matches!(
        options.selection_criteria,
        Some(SelectionCriteria::ReadPreference(
            ReadPreference::SecondaryPreferred { options: None }
        ))
    ));
    assert!(options.write_concern.is_some());
    assert!(options.command_event_handler.is_none());
    let client = Client::with_options(options).expect("valid options");
    assert!(client.write_concern().is_some_and(|wc| !wc.is_empty()));
}

#[tokio::test]
async fn parse_rejects_an_invalid_string() {
    let error = ClientOptions::parse("mongodb://host:99999")
        .await
        .expect_err("the port is out of range");
    assert!(error.to_string().contains("port"), "{error}");
}

#[tokio::test]
async fn compressors_carry_their_levels() {
    let parsed = ClientOptions::parse(
        "mongodb://db.example.com/?compressors=zlib,snappy&zlibCompressionLevel=4",
    )
    .await
    .expect("valid");
    assert_eq!(
        parsed.compressors,
        Some(vec![
            Compressor::Zlib { level: Some(4) },
            Compressor::Snappy
        ])
    );

    let deployment = standalone().await;
    let mut options = ClientOptions::parse(deployment.uri()).await.expect("valid");
    options.compressors = Some(vec![
        Compressor::Zstd { level: Some(5) },
        Compressor::Zlib { level: None },
    ]);
    let client = Client::with_options(options.clone()).expect("valid options");
    client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .expect("ping");

    options.compressors = Some(vec![Compressor::Zstd { level: Some(99) }]);
    let error = Client::with_options(options).expect_err("zstd has no level 99");
    assert!(error.to_string().contains("zstd"), "{error}");
}

#[tokio::test]
async fn tls_is_an_enum_of_options() {
    let options = ClientOptions::parse(
        "mongodb://db.example.com/?tls=true&tlsCAFile=%2Fetc%2Fca.pem&tlsAllowInvalidHostnames=true",
    )
    .await
    .expect("valid");
    let Some(Tls::Enabled(tls)) = &options.tls else {
        panic!("tls=true turns TLS on: {:?}", options.tls);
    };
    assert_eq!(
        tls.ca_file_path.as_deref(),
        Some(std::path::Path::new("/etc/ca.pem"))
    );
    assert_eq!(tls.allow_invalid_hostnames, Some(true));

    let plain = ClientOptions::parse("mongodb://db.example.com/")
        .await
        .expect("valid");
    assert_eq!(plain.tls, Some(Tls::Disabled));

    let built = TlsOptions::builder()
        .ca_file_path(std::path::PathBuf::from("/etc/ca.pem"))
        .tls_certificate_key_file_password(b"hunter2".to_vec())
        .build();
    let options = ClientOptions::builder().tls(Tls::Enabled(built)).build();
    assert!(
        !format!("{options:?}").contains("hunter2"),
        "the password is redacted"
    );
}

#[tokio::test]
async fn builder_options_make_a_working_client() {
    let deployment = standalone().await;
    let hosts = ClientOptions::parse(deployment.uri())
        .await
        .expect("valid")
        .hosts;
    let options = ClientOptions::builder()
        .hosts(hosts)
        .app_name("port-builder".to_string())
        .driver_info(
            DriverInfo::builder()
                .name("port-wrapper")
                .version("1.0".to_string())
                .build(),
        )
        .server_selection_timeout(Duration::from_secs(30))
        .retry_writes(true)
        .tracing_max_document_length_bytes(2000)
        .build();
    assert_eq!(options.app_name.as_deref(), Some("port-builder"));
    assert_eq!(options.tracing_max_document_length_bytes, Some(2000));

    let client = Client::with_options(options).expect("valid options");
    let reply = client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .expect("ping");
    assert_eq!(reply.get_f64("ok").ok(), Some(1.0));
}

#[tokio::test]
async fn a_declared_server_api_and_a_built_credential() {
    let deployment = standalone().await;
    let mut options = ClientOptions::parse(deployment.uri()).await.expect("valid");
    let api = ServerApi::builder()
        .version(ServerApiVersion::V1)
        .strict(false)
        .build();
    options.server_api = Some(api);
    let client = Client::with_options(options).expect("valid options");
    client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .expect("ping with apiVersion 1");

    let credential = Credential::builder()
        .username("app".to_string())
        .password("s3cret".to_string())
        .source("admin".to_string())
        .mechanism(AuthMechanism::ScramSha256)
        .build();
    let options = ClientOptions::builder().credential(credential).build();
    let credential = options.credential.as_ref().expect("set");
    assert_eq!(credential.username.as_deref(), Some("app"));
    assert!(
        !format!("{options:?}").contains("s3cret"),
        "the password is redacted"
    );
}

#[tokio::test]
async fn with_uri_str_takes_an_owned_string() {
    let deployment = standalone().await;
    let uri: String = deployment.uri();
    let client = Client::with_uri_str(uri).await.expect("valid uri");
    assert!(client.read_concern().is_none());
    assert!(client.write_concern().is_none());
    client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .expect("ping");
}

#[tokio::test]
async fn a_command_callback_counts_each_insert() {
    let deployment = standalone().await;
    let started = Arc::new(AtomicUsize::new(0));
    let succeeded = Arc::new(AtomicUsize::new(0));
    let (started_count, succeeded_count) = (Arc::clone(&started), Arc::clone(&succeeded));

    let mut options = ClientOptions::parse(deployment.uri()).await.expect("valid");
    options.command_event_handler = Some(EventHandler::callback(move |event| match event {
        CommandEvent::Started(e) if e.command_name == "insert" => {
            assert_eq!(e.db, "port");
            started_count.fetch_add(1, Ordering::SeqCst);
        }
        CommandEvent::Succeeded(e) if e.command_name == "insert" => {
            succeeded_count.fetch_add(1, Ordering::SeqCst);
        }
        _ => {}
    }));
    let client = Client::with_options(options).expect("valid options");
    let collection = client.database("port").collection::<Document>("events");
    collection
        .insert_one(doc! { "x": 1 })
        .await
        .expect("insert");
    collection
        .insert_one(doc! { "x": 2 })
        .await
        .expect("insert");

    // The callback runs before the operation returns, so the counts are final here.
    assert_eq!(started.load(Ordering::SeqCst), 2);
    assert_eq!(succeeded.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_cmap_channel_receives_the_checkout() {
    let deployment = standalone().await;
    let (sender, mut receiver) = tokio::sync::mpsc::channel(1024);
    let hosts = ClientOptions::parse(deployment.uri())
        .await
        .expect("valid")
        .hosts;
    let options = ClientOptions::builder()
        .hosts(hosts)
        .cmap_event_handler(sender)
        .build();
    let client = Client::with_options(options).expect("valid options");
    client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .expect("ping");

    let mut created = false;
    loop {
        match receiver
            .recv()
            .await
            .expect("the client still holds the sender")
        {
            CmapEvent::PoolCreated(_) => created = true,
            CmapEvent::ConnectionCheckedOut(event) => {
                assert!(created, "the pool is created before any checkout");
                assert_eq!(event.address.port(), deployment_port(&deployment));
                break;
            }
            _ => {}
        }
    }
}

#[tokio::test]
async fn an_undrained_channel_does_not_hold_up_shutdown() {
    let deployment = standalone().await;
    // Room for one event, and nobody reads: every later delivery waits forever.
    let (sender, _receiver) = tokio::sync::mpsc::channel::<CmapEvent>(1);
    let mut options = ClientOptions::parse(deployment.uri()).await.expect("valid");
    options.cmap_event_handler = Some(EventHandler::from(sender));
    let client = Client::with_options(options).expect("valid options");
    client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .expect("ping");
    client.shutdown().await;
}

#[tokio::test]
async fn an_async_sdam_callback_sees_the_server_described() {
    let deployment = standalone().await;
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let mut options = ClientOptions::parse(deployment.uri()).await.expect("valid");
    options.sdam_event_handler = Some(EventHandler::async_callback(move |event: SdamEvent| {
        let sender = sender.clone();
        Box::pin(async move {
            // The test may have finished listening; the event is then of no use.
            let _ = sender.send(event);
        })
    }));
    let _client = Client::with_options(options).expect("valid options");

    loop {
        let event = receiver.recv().await.expect("the client is alive");
        if let SdamEvent::ServerDescriptionChanged(change) = event
            && change.new_description.server_type() == ServerType::Standalone
        {
            assert_eq!(change.address.port(), deployment_port(&deployment));
            assert_eq!(change.new_description.address(), &change.address);
            assert_eq!(
                change.previous_description.server_type(),
                ServerType::Unknown
            );
            break;
        }
    }
}

#[tokio::test]
async fn sessions_start_with_official_options() {
    let deployment = standalone().await;
    let client = Client::with_uri_str(deployment.uri()).await.expect("valid");
    let collection = client.database("port").collection::<Document>("sessions");

    let mut session = client
        .start_session()
        .causal_consistency(true)
        .await
        .expect("session");
    collection
        .insert_one(doc! { "x": 1 })
        .session(&mut session)
        .await
        .expect("insert in session");
    assert!(session.id().contains_key("id"));
    assert!(session.is_causally_consistent());

    let options = SessionOptions::builder().causal_consistency(false).build();
    let other = client
        .start_session()
        .with_options(options)
        .await
        .expect("session");
    assert_eq!(other.options().causal_consistency, Some(false));
    assert!(!other.is_causally_consistent());

    let default = client.start_session().await.expect("session");
    assert!(default.is_causally_consistent());
}

#[tokio::test]
async fn criteria_route_commands_to_the_servers_they_accept() {
    let deployment = Deployment::start(DeploymentConfig::replica_set(3))
        .await
        .expect("the deployment starts");
    let primary = deployment
        .primary()
        .and_then(|index| deployment.host(index))
        .expect("a primary");
    let pinged = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&pinged);
    let mut options = ClientOptions::parse(deployment.uri()).await.expect("valid");
    options.command_event_handler = Some(EventHandler::callback(move |event| {
        if let CommandEvent::Started(e) = event
            && e.command_name == "ping"
        {
            seen.lock().unwrap().push(e.connection.address.to_string());
        }
    }));
    let client = Client::with_options(options).expect("valid options");
    let admin = client.database("admin");

    let secondaries_only = SelectionCriteria::Predicate(Arc::new(|server: &ServerInfo| {
        server.server_type() == ServerType::RsSecondary
    }));
    let stale_enough = ReadPreferenceOptions::builder()
        .max_staleness(Duration::from_secs(120))
        .build();
    let secondary = SelectionCriteria::ReadPreference(ReadPreference::Secondary {
        options: Some(stale_enough),
    });
    let primary_only = SelectionCriteria::ReadPreference(ReadPreference::Primary);
    for criteria in [secondaries_only, secondary, primary_only] {
        admin
            .run_command(doc! { "ping": 1 })
            .selection_criteria(criteria)
            .await
            .expect("ping");
    }

    let pinged = pinged.lock().unwrap().clone();
    assert_eq!(pinged.len(), 3);
    assert_ne!(pinged[0], primary, "the predicate accepts secondaries only");
    assert_ne!(pinged[1], primary, "mode secondary");
    assert_eq!(pinged[2], primary, "mode primary");
}

#[tokio::test]
async fn a_client_default_must_be_a_read_preference() {
    let mut options = ClientOptions::parse("mongodb://127.0.0.1:1")
        .await
        .expect("valid");
    options.selection_criteria = Some(SelectionCriteria::Predicate(Arc::new(|_| true)));
    let error = Client::with_options(options).expect_err("a predicate is per operation");
    assert!(error.to_string().contains("predicate"), "{error}");

    let mut options = ClientOptions::parse("mongodb://127.0.0.1:1")
        .await
        .expect("valid");
    options.selection_criteria = Some(ReadPreference::Nearest { options: None }.into());
    let client = Client::with_options(options).expect("a read preference is a valid default");
    assert_eq!(
        client.options().read_preference,
        ReadPreference::Nearest { options: None }
    );
}

#[tokio::test]
async fn warming_fills_the_pool_to_min_pool_size() {
    let deployment = standalone().await;
    // Every reply takes 100 ms and connections are made one at a time, so the background
    // fill is still far from 5 connections when the first ping returns: only warming waits
    // for it.
    deployment
        .slow(0, Duration::from_millis(100))
        .expect("node 0 exists");
    let ready = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&ready);
    let mut options = ClientOptions::parse(deployment.uri()).await.expect("valid");
    options.min_pool_size = Some(5);
    options.max_connecting = Some(1);
    options.cmap_event_handler = Some(EventHandler::callback(move |event| {
        if let CmapEvent::ConnectionReady(_) = event {
            counter.fetch_add(1, Ordering::SeqCst);
        }
    }));
    let client = Client::with_options(options).expect("valid options");
    // The first operation waits for the server to be discovered, which readies its pool.
    client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .expect("ping");

    client.warm_connection_pool().await;
    assert!(ready.load(Ordering::SeqCst) >= 5);
}

#[tokio::test]
async fn warming_does_not_wait_for_an_unreachable_server() {
    // Port 1 refuses connections: the pool stays paused, so there is nothing to warm.
    let client = Client::with_uri_str("mongodb://127.0.0.1:1/?minPoolSize=2")
        .await
        .expect("valid");
    client.warm_connection_pool().await;
    // And with no minPoolSize, warming is a no-op.
    let client = Client::with_uri_str("mongodb://127.0.0.1:1")
        .await
        .expect("valid");
    client.warm_connection_pool().await;
}

/// The port the deployment's only node listens on.
fn deployment_port(deployment: &Deployment) -> Option<u16> {
    let host = deployment.host(0).expect("node 0");
    host.rsplit_once(':')
        .and_then(|(_, port)| port.parse().ok())
}
