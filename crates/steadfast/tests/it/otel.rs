//! The OpenTelemetry spans (feature `opentelemetry`) where the open-telemetry suite leaves
//! gaps: every attempt of a retried operation, errors, cursors, sensitive commands, the query
//! text's length, and tracing left off. Spans are recorded by an SDK tracer provider given to
//! the client, so each test sees its own client's spans only.

use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use blackpipe::scripted::Matcher;
use blackpipe::server::Reaction;
use bson::{Document, doc};
use opentelemetry::trace::{SpanId, Status};
use opentelemetry::{Context, Value};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, Span, SpanData, SpanProcessor};
use steadfast::Client;
use steadfast::options::ClientOptions;
use steadfast::otel::OpentelemetryOptions;

use crate::crud_wire::{acknowledge_writes, cursor_reply};
use crate::{server, uri};

/// Keeps every finished span.
#[derive(Clone, Debug, Default)]
struct Recorded(Arc<Mutex<Vec<SpanData>>>);

impl SpanProcessor for Recorded {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        self.0.lock().unwrap().push(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }
}

impl Recorded {
    fn spans(&self) -> Vec<SpanData> {
        self.0.lock().unwrap().clone()
    }

    /// The finished root spans named `name`.
    fn roots(&self, name: &str) -> Vec<SpanData> {
        self.spans()
            .into_iter()
            .filter(|s| s.parent_span_id == SpanId::INVALID && s.name == name)
            .collect()
    }

    /// The children of `parent`, in the order they ended.
    fn children(&self, parent: &SpanData) -> Vec<SpanData> {
        let id = parent.span_context.span_id();
        self.spans()
            .into_iter()
            .filter(|s| s.parent_span_id == id)
            .collect()
    }
}

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

fn string(span: &SpanData, key: &str) -> Option<String> {
    attribute(span, key).map(|v| v.as_str().into_owned())
}

fn integer(span: &SpanData, key: &str) -> Option<i64> {
    match attribute(span, key) {
        Some(Value::I64(n)) => Some(*n),
        _ => None,
    }
}

/// A client of `server` whose spans `tracing` (with the recorder's provider) configures.
async fn traced_client(
    server: &blackpipe::scripted::ScriptedServer,
    tracing: impl FnOnce(SdkTracerProvider) -> OpentelemetryOptions,
) -> (Client, Recorded) {
    let recorded = Recorded::default();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(recorded.clone())
        .build();
    let mut options = ClientOptions::parse(uri(server, "serverSelectionTimeoutMS=5000"))
        .await
        .unwrap();
    options.tracing = Some(tracing(provider));
    (Client::with_options(options).unwrap(), recorded)
}

fn enabled(provider: SdkTracerProvider) -> OpentelemetryOptions {
    OpentelemetryOptions::builder()
        .enabled(true)
        .tracer_provider(provider)
        .build()
}

#[tokio::test]
async fn a_retried_find_has_a_command_span_per_attempt_under_one_operation_span() {
    let server = server().await;
    server
        .rule(
            Matcher::command("find"),
            Reaction::error(89, "NetworkTimeout", "timed out"),
        )
        .once();
    server
        .rule(
            Matcher::command("find"),
            cursor_reply("firstBatch", 0..2, 42),
        )
        .always();
    let (client, recorded) = traced_client(&server, enabled).await;
    let items = client.database("db").collection::<Document>("items");
    let _cursor = items.find(doc! {}).batch_size(2).await.unwrap();

    let operations = recorded.roots("find db.items");
    assert_eq!(operations.len(), 1, "{:#?}", recorded.spans());
    let operation = &operations[0];
    assert_eq!(
        string(operation, "db.operation.name").as_deref(),
        Some("find")
    );
    assert_eq!(
        string(operation, "db.operation.summary").as_deref(),
        Some("find db.items")
    );
    assert_eq!(string(operation, "db.namespace").as_deref(), Some("db"));
    assert_eq!(
        string(operation, "db.collection.name").as_deref(),
        Some("items")
    );
    assert_eq!(operation.status, Status::Unset);

    let attempts = recorded.children(operation);
    assert_eq!(attempts.len(), 2, "{attempts:#?}");
    let (failed, succeeded) = (&attempts[0], &attempts[1]);
    for span in [failed, succeeded] {
        assert_eq!(span.name, "find");
        assert_eq!(string(span, "db.command.name").as_deref(), Some("find"));
        assert_eq!(
            string(span, "db.query.summary").as_deref(),
            Some("find db.items")
        );
        assert_eq!(integer(span, "server.port"), Some(i64::from(server.port())));
        assert_eq!(string(span, "network.transport").as_deref(), Some("tcp"));
        assert!(string(span, "db.mongodb.lsid").is_some_and(|l| l.contains("$binary")));
        assert!(integer(span, "db.mongodb.driver_connection_id").is_some());
        // No query text unless a length is set.
        assert_eq!(string(span, "db.query.text"), None);
    }
    assert_eq!(
        string(failed, "db.response.status_code").as_deref(),
        Some("89")
    );
    assert_eq!(string(failed, "exception.type").as_deref(), Some("Command"));
    assert!(string(failed, "exception.message").is_some_and(|m| m.contains("timed out")));
    assert!(string(failed, "exception.stacktrace").is_some());
    assert!(matches!(failed.status, Status::Error { .. }));
    assert_eq!(integer(failed, "db.mongodb.cursor_id"), None);
    assert_eq!(succeeded.status, Status::Unset);
    assert_eq!(string(succeeded, "exception.message"), None);
    assert_eq!(integer(succeeded, "db.mongodb.cursor_id"), Some(42));
}

#[tokio::test]
async fn the_batches_of_an_insert_many_are_commands_of_one_operation_span() {
    let server = server().await;
    server.patch_hello(doc! { "maxWriteBatchSize": 3 });
    acknowledge_writes(&server);
    let (client, recorded) = traced_client(&server, enabled).await;
    let items = client.database("db").collection::<Document>("items");
    items
        .insert_many((0..7).map(|i| doc! { "i": i }))
        .await
        .unwrap();

    let operations = recorded.roots("insert db.items");
    assert_eq!(operations.len(), 1, "{:#?}", recorded.spans());
    let batches = recorded.children(&operations[0]);
    assert_eq!(batches.len(), 3, "{batches:#?}");
    assert!(batches.iter().all(|span| span.name == "insert"));
    assert_eq!(
        recorded.spans().len(),
        4,
        "nothing else: {:#?}",
        recorded.spans()
    );
}

#[tokio::test]
async fn a_failed_operation_records_the_exception_on_its_span_and_the_code_on_its_command() {
    let server = server().await;
    server
        .rule(
            Matcher::command("aggregate"),
            Reaction::error(16436, "Location16436", "Unrecognized pipeline stage"),
        )
        .always();
    let (client, recorded) = traced_client(&server, enabled).await;
    let items = client.database("db").collection::<Document>("items");
    items.aggregate([doc! { "$nope": {} }]).await.unwrap_err();

    let operations = recorded.roots("aggregate db.items");
    assert_eq!(operations.len(), 1, "{:#?}", recorded.spans());
    let operation = &operations[0];
    assert!(matches!(operation.status, Status::Error { .. }));
    assert_eq!(
        string(operation, "exception.type").as_deref(),
        Some("Command")
    );
    assert!(
        string(operation, "exception.message")
            .is_some_and(|m| m.contains("Unrecognized pipeline stage"))
    );
    let commands = recorded.children(operation);
    assert_eq!(commands.len(), 1, "{commands:#?}");
    assert_eq!(
        string(&commands[0], "db.response.status_code").as_deref(),
        Some("16436")
    );
    assert!(matches!(commands[0].status, Status::Error { .. }));
}

#[tokio::test]
async fn a_get_more_span_names_the_cursor_it_continues() {
    let server = server().await;
    server
        .rule(
            Matcher::command("find"),
            cursor_reply("firstBatch", 0..1, 42),
        )
        .once();
    server
        .rule(
            Matcher::command("getMore"),
            cursor_reply("nextBatch", 1..2, 0),
        )
        .once();
    let (client, recorded) = traced_client(&server, enabled).await;
    let items = client.database("db").collection::<Document>("items");
    let mut cursor = items.find(doc! {}).batch_size(1).await.unwrap();
    while cursor.advance().await.unwrap() {}

    let get_mores = recorded.roots("getMore db.items");
    assert_eq!(get_mores.len(), 1, "{:#?}", recorded.spans());
    let commands = recorded.children(&get_mores[0]);
    assert_eq!(commands.len(), 1);
    assert_eq!(integer(&commands[0], "db.mongodb.cursor_id"), Some(42));
    assert_eq!(
        string(&commands[0], "db.query.summary").as_deref(),
        Some("getMore db.items")
    );
}

#[tokio::test]
async fn a_sensitive_command_has_an_operation_span_but_no_command_span() {
    let server = server().await;
    server
        .rule(
            Matcher::command("saslStart"),
            Reaction::reply(doc! { "ok": 1 }),
        )
        .always();
    let (client, recorded) = traced_client(&server, enabled).await;
    client
        .database("admin")
        .run_command(doc! { "saslStart": 1, "payload": "secret" })
        .await
        .unwrap();

    let operations = recorded.roots("runCommand admin");
    assert_eq!(operations.len(), 1, "{:#?}", recorded.spans());
    assert!(recorded.children(&operations[0]).is_empty());
}

#[tokio::test]
async fn the_query_text_is_cut_to_its_maximum_length() {
    let server = server().await;
    server
        .rule(
            Matcher::command("find"),
            cursor_reply("firstBatch", 0..1, 0),
        )
        .always();
    let (client, recorded) = traced_client(&server, |provider| {
        OpentelemetryOptions::builder()
            .enabled(true)
            .query_text_max_length(12)
            .tracer_provider(provider)
            .build()
    })
    .await;
    let items = client.database("db").collection::<Document>("items");
    let _cursor = items.find(doc! { "x": 1 }).await.unwrap();

    let operations = recorded.roots("find db.items");
    let commands = recorded.children(&operations[0]);
    let text = string(&commands[0], "db.query.text").expect("the query text");
    assert_eq!(text, r#"{"find":"ite..."#);
}

#[tokio::test]
async fn a_client_with_tracing_disabled_records_no_span() {
    let server = server().await;
    server
        .rule(
            Matcher::command("find"),
            cursor_reply("firstBatch", 0..1, 0),
        )
        .always();
    let (client, recorded) = traced_client(&server, |provider| {
        OpentelemetryOptions::builder()
            .enabled(false)
            .tracer_provider(provider)
            .build()
    })
    .await;
    let items = client.database("db").collection::<Document>("items");
    let _cursor = items.find(doc! {}).await.unwrap();
    assert!(recorded.spans().is_empty(), "{:#?}", recorded.spans());
}

/// What the child run of [`environment_child`] must see, set by its parent.
const CHILD_EXPECTS: &str = "STEADFAST_OTEL_CHILD_EXPECTS";

/// The open-telemetry suite's prose tests 1 and 2: with tracing left unset in the options,
/// `OTEL_RUST_INSTRUMENTATION_MONGODB_ENABLED` turns spans on or off, and
/// `OTEL_RUST_INSTRUMENTATION_MONGODB_QUERY_TEXT_MAX_LENGTH` adds `db.query.text`. The
/// variables are read when a client is created; each case runs in a child process of this
/// test binary with its own environment (changing the environment of this multi-threaded
/// process is unsound).
#[test]
fn tracing_follows_the_environment_variables_when_the_options_leave_it_unset() {
    use steadfast::otel::{ENABLED_VARIABLE, QUERY_TEXT_MAX_LENGTH_VARIABLE};
    let cases: [(&[(&str, &str)], &str); 4] = [
        (&[(ENABLED_VARIABLE, "false")], "no spans"),
        (&[(ENABLED_VARIABLE, "true")], "spans without query text"),
        (
            &[
                (ENABLED_VARIABLE, "yes"),
                (QUERY_TEXT_MAX_LENGTH_VARIABLE, "1024"),
            ],
            "spans with query text",
        ),
        (&[(QUERY_TEXT_MAX_LENGTH_VARIABLE, "1024")], "no spans"),
    ];
    let binary = std::env::current_exe().unwrap();
    for (variables, expects) in cases {
        let output = Command::new(&binary)
            .args(["--exact", "otel::environment_child", "--ignored"])
            .env_remove(ENABLED_VARIABLE)
            .env_remove(QUERY_TEXT_MAX_LENGTH_VARIABLE)
            .envs(variables.iter().copied())
            .env(CHILD_EXPECTS, expects)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("1 passed"),
            "{variables:?} should give {expects}: {stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// One case of [`tracing_follows_the_environment_variables_when_the_options_leave_it_unset`],
/// in the environment its parent set.
#[tokio::test]
#[ignore = "run by tracing_follows_the_environment_variables_when_the_options_leave_it_unset, in a child process with the environment of each case"]
async fn environment_child() {
    let expects = std::env::var(CHILD_EXPECTS).expect("run by its parent test");
    let server = server().await;
    server
        .rule(
            Matcher::command("find"),
            cursor_reply("firstBatch", 0..1, 0),
        )
        .always();
    // Only the provider is set: `enabled` and `query_text_max_length` come from the
    // environment.
    let (client, recorded) = traced_client(&server, |provider| {
        OpentelemetryOptions::builder()
            .tracer_provider(provider)
            .build()
    })
    .await;
    let items = client.database("db").collection::<Document>("items");
    let _cursor = items.find(doc! { "x": 1 }).await.unwrap();

    let operations = recorded.roots("find db.items");
    if expects == "no spans" {
        assert!(recorded.spans().is_empty(), "{:#?}", recorded.spans());
        return;
    }
    assert_eq!(operations.len(), 1, "{:#?}", recorded.spans());
    let commands = recorded.children(&operations[0]);
    let text = string(&commands[0], "db.query.text");
    match expects.as_str() {
        "spans with query text" => {
            assert_eq!(
                text.as_deref(),
                Some(r#"{"find":"items","filter":{"x":1}}"#)
            );
        }
        "spans without query text" => assert_eq!(text, None),
        other => panic!("unknown expectation {other:?}"),
    }
}
