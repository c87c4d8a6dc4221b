//! Command log messages as an application's `tracing` subscriber sees them: the logging
//! specification's field names, `topologyId`, truncation (the command logging suite's prose
//! tests 1 and 2), redaction, and no messages for handshakes.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use blackpipe::scripted::Matcher;
use bson::{Document, doc};
use futures_util::TryStreamExt as _;
use steadfast::Client;
use steadfast::event::sdam::SdamEvent;
use steadfast::event::{CommandEvent, EventHandler};
use steadfast::options::ClientOptions;
use tracing::field::{Field, Visit};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt as _};

use crate::{server, uri};

/// A field value as the subscriber received it.
#[derive(Clone, Debug, PartialEq)]
enum Value {
    Text(String),
    Int(i64),
    Float(f64),
}

impl Value {
    fn text(&self) -> &str {
        match self {
            Value::Text(text) => text,
            other => panic!("expected text, got {other:?}"),
        }
    }
}

/// One event: target, level and fields.
#[derive(Clone, Debug)]
struct Message {
    target: String,
    level: tracing::Level,
    fields: BTreeMap<String, Value>,
}

impl Message {
    fn get(&self, name: &str) -> &Value {
        self.fields
            .get(name)
            .unwrap_or_else(|| panic!("no field {name} in {self:?}"))
    }
}

/// Records every event of steadfast's command component.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Message>>>);

impl Recorder {
    fn messages(&self) -> Vec<Message> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn with_text(&self, message: &str) -> Vec<Message> {
        self.messages()
            .into_iter()
            .filter(|m| m.get("message") == &Value::Text(message.to_owned()))
            .collect()
    }
}

impl<S: tracing::Subscriber> Layer<S> for Recorder {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        if event.metadata().target() != steadfast::logging::COMMAND {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Message {
                target: event.metadata().target().to_owned(),
                level: *event.metadata().level(),
                fields: fields.0,
            });
    }
}

#[derive(Default)]
struct Fields(BTreeMap<String, Value>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().to_owned(), Value::Text(format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0
            .insert(field.name().to_owned(), Value::Text(value.to_owned()));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), Value::Int(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        let value = i64::try_from(value).expect("test values fit in i64");
        self.0.insert(field.name().to_owned(), Value::Int(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().to_owned(), Value::Float(value));
    }
}

/// Installs a recorder for this thread (the test's current-thread runtime runs the
/// operations, and so logs, on it).
fn record() -> (Recorder, tracing::subscriber::DefaultGuard) {
    let recorder = Recorder::default();
    let subscriber = tracing_subscriber::registry().with(recorder.clone());
    let guard = tracing::subscriber::set_default(subscriber);
    // Callsites cache whether anyone listens; one first reached on another test's thread
    // (where no subscriber is set) could stay cached as "never" for this one. Recompute now
    // that this thread has a subscriber.
    tracing::callsite::rebuild_interest_cache();
    (recorder, guard)
}

async fn client_with(options: ClientOptions) -> Client {
    Client::with_options(options).expect("valid options")
}

async fn options_for(server: &blackpipe::scripted::ScriptedServer) -> ClientOptions {
    ClientOptions::parse(uri(server, ""))
        .await
        .expect("valid connection string")
}

#[tokio::test]
async fn command_messages_carry_the_specification_field_names() {
    let (recorder, _guard) = record();
    let server = server().await;
    let client = client_with(options_for(&server).await).await;
    client
        .database("inventory")
        .run_command(doc! { "ping": 1 })
        .await
        .unwrap();

    let started = recorder.with_text("Command started");
    let succeeded = recorder.with_text("Command succeeded");
    assert_eq!(
        (started.len(), succeeded.len()),
        (1, 1),
        "no handshake or heartbeat messages"
    );
    let (started, succeeded) = (&started[0], &succeeded[0]);
    for message in [started, succeeded] {
        assert_eq!(message.target, "steadfast::command");
        assert_eq!(message.level, tracing::Level::DEBUG);
        assert_eq!(message.get("commandName"), &Value::Text("ping".into()));
        assert_eq!(
            message.get("databaseName"),
            &Value::Text("inventory".into())
        );
        assert_eq!(message.get("serverHost"), &Value::Text("127.0.0.1".into()));
        assert_eq!(
            message.get("serverPort"),
            &Value::Int(i64::from(server.port()))
        );
        assert_eq!(
            message.get("topologyId"),
            &Value::Text(client.topology_id().to_hex())
        );
        assert!(matches!(message.get("requestId"), Value::Int(_)));
        assert!(matches!(message.get("operationId"), Value::Int(_)));
        assert!(matches!(message.get("driverConnectionId"), Value::Int(_)));
        // Absent, not null: the connection is not load balanced.
        assert!(!message.fields.contains_key("serviceId"));
    }
    assert_eq!(started.get("requestId"), succeeded.get("requestId"));
    let command: serde_json::Value = serde_json::from_str(started.get("command").text()).unwrap();
    assert_eq!(command["ping"], serde_json::json!(1));
    assert_eq!(command["$db"], serde_json::json!("inventory"));
    assert!(matches!(succeeded.get("durationMS"), Value::Float(_)));
    let reply: serde_json::Value = serde_json::from_str(succeeded.get("reply").text()).unwrap();
    assert_eq!(reply["ok"], serde_json::json!(1.0));
    client.shutdown().await;
}

/// Prose test 1: the default limit is 1000 bytes (plus the ellipsis).
#[tokio::test]
async fn documents_are_truncated_to_1000_bytes_by_default() {
    let (recorder, _guard) = record();
    let server = server().await;
    server
        .rule(Matcher::command("insert"), doc! { "n": 100, "ok": 1 })
        .always();
    let batch: Vec<Document> = (0..100).map(|i| doc! { "_id": i, "x": "y" }).collect();
    server
        .rule(
            Matcher::command("find"),
            doc! { "cursor": { "id": 0_i64, "ns": "db.c", "firstBatch": batch }, "ok": 1 },
        )
        .always();
    let client = client_with(options_for(&server).await).await;
    let collection = client.database("db").collection::<Document>("c");
    let docs: Vec<Document> = (0..100).map(|_| doc! { "x": "y" }).collect();
    collection.insert_many(docs).await.unwrap();
    let started = recorder.with_text("Command started");
    assert_eq!(started[0].get("command").text().len(), 1000 + 3);
    let succeeded = recorder.with_text("Command succeeded");
    assert!(succeeded[0].get("reply").text().len() <= 1000 + 3);

    let found: Vec<Document> = collection
        .find(doc! {})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(found.len(), 100);
    let succeeded = recorder.with_text("Command succeeded");
    let find_reply = succeeded[1].get("reply").text();
    assert_eq!(find_reply.len(), 1000 + 3);
    assert!(find_reply.ends_with("..."));
    client.shutdown().await;
}

/// Prose test 2: an explicit limit of 5 bytes.
#[tokio::test]
async fn an_explicit_limit_truncates_command_and_reply() {
    let (recorder, _guard) = record();
    let server = server().await;
    let mut options = options_for(&server).await;
    options.tracing_max_document_length_bytes = Some(5);
    let client = client_with(options).await;
    client
        .database("admin")
        .run_command(doc! { "hello": true })
        .await
        .unwrap();
    let started = recorder.with_text("Command started");
    assert_eq!(started[0].get("command").text(), "{\"hel...");
    let succeeded = recorder.with_text("Command succeeded");
    assert_eq!(succeeded[0].get("reply").text().len(), 5 + 3);
    client.shutdown().await;
}

/// A sensitive command's server error keeps only its code, code name and labels, in the log
/// message and in the command failed event alike.
#[tokio::test]
async fn a_sensitive_commands_server_error_is_redacted() {
    let (recorder, _guard) = record();
    let server = server().await;
    server
        .rule(
            Matcher::command("saslStart"),
            doc! { "ok": 0, "code": 18, "codeName": "AuthenticationFailed",
            "errmsg": "secret detail", "errorLabels": ["SomeLabel"] },
        )
        .always();
    let failures = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&failures);
    let mut options = options_for(&server).await;
    options.command_event_handler = Some(EventHandler::callback(move |event| {
        if let CommandEvent::Failed(failed) = event {
            seen.lock().unwrap().push(failed.failure.to_string());
        }
    }));
    let client = client_with(options).await;
    let error = client
        .database("admin")
        .run_command(doc! { "saslStart": 1, "mechanism": "PLAIN", "payload": "c2VjcmV0" })
        .await
        .unwrap_err();
    assert_eq!(
        error.code(),
        Some(18),
        "the application still gets the whole error"
    );

    let started = recorder.with_text("Command started");
    assert_eq!(started[0].get("command").text(), "{}");
    let failed = recorder.with_text("Command failed");
    let failure = failed[0].get("failure").text();
    assert!(
        failure.starts_with(steadfast::logging::REDACTED_FAILURE_PREFIX),
        "{failure}"
    );
    assert!(
        failure.contains("AuthenticationFailed") && failure.contains("18"),
        "{failure}"
    );
    assert!(failure.contains("SomeLabel"), "{failure}");
    assert!(!failure.contains("secret detail"), "{failure}");
    let event_failures = failures.lock().unwrap().clone();
    assert_eq!(event_failures.len(), 1);
    assert!(
        !event_failures[0].contains("secret detail"),
        "{event_failures:?}"
    );
    assert!(
        event_failures[0].contains("AuthenticationFailed"),
        "{event_failures:?}"
    );
    client.shutdown().await;
}

/// `topologyId` is the id the client's SDAM events carry, so logs and events line up.
#[tokio::test]
async fn the_topology_id_is_the_one_sdam_events_carry() {
    let server = server().await;
    let (sender, mut receiver) = tokio::sync::mpsc::channel(64);
    let mut options = options_for(&server).await;
    options.sdam_event_handler = Some(EventHandler::TokioMpsc(sender));
    let client = client_with(options).await;
    let opening = loop {
        match receiver
            .recv()
            .await
            .expect("the client opens its topology")
        {
            SdamEvent::TopologyOpening(opening) => break opening,
            _ => continue,
        }
    };
    assert_eq!(opening.topology_id, client.topology_id());
    client.shutdown().await;
}
