//! The operation and command spans, as a `tracing` subscriber (and so `tracing-opentelemetry`)
//! sees them: names, parentage and the OpenTelemetry database-client fields.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use blackpipe::scripted::Matcher;
use blackpipe::server::Reaction;
use bson::{Document, doc};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Subscriber, subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;

use crate::crud_wire::{client_for, cursor_reply};
use crate::server;

/// The target steadfast's spans are under.
const SPAN_TARGET: &str = "steadfast::operation";

/// One span as recorded: its name, its parent's name, and every field that received a value.
#[derive(Clone, Debug, Default)]
struct SpanRecord {
    name: &'static str,
    parent: Option<&'static str>,
    fields: HashMap<String, String>,
}

impl SpanRecord {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

/// Keeps the fields of steadfast's spans, in the order they were opened.
#[derive(Clone, Default)]
struct Capture {
    spans: Arc<Mutex<Vec<(Id, SpanRecord)>>>,
}

impl Capture {
    fn spans(&self) -> Vec<SpanRecord> {
        let spans = self.spans.lock().unwrap();
        spans.iter().map(|(_, record)| record.clone()).collect()
    }

    fn named(&self, name: &str) -> Vec<SpanRecord> {
        self.spans()
            .into_iter()
            .filter(|span| span.name == name)
            .collect()
    }

    fn update(&self, id: &Id, values: impl FnOnce(&mut SpanRecord)) {
        let mut spans = self.spans.lock().unwrap();
        if let Some((_, record)) = spans.iter_mut().find(|(known, _)| known == id) {
            values(record);
        }
    }
}

struct Fields<'a>(&'a mut HashMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().to_string(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attributes: &Attributes<'_>, id: &Id, context: Context<'_, S>) {
        if attributes.metadata().target() != SPAN_TARGET {
            return;
        }
        let mut record = SpanRecord {
            name: attributes.metadata().name(),
            parent: context
                .span(id)
                .and_then(|span| span.parent())
                .map(|parent| parent.name()),
            fields: HashMap::new(),
        };
        attributes.record(&mut Fields(&mut record.fields));
        self.spans.lock().unwrap().push((id.clone(), record));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _context: Context<'_, S>) {
        self.update(id, |record| values.record(&mut Fields(&mut record.fields)));
    }
}

#[tokio::test]
async fn a_find_opens_an_operation_span_and_a_command_span_with_the_semantic_fields() {
    let server = server().await;
    server
        .rule(
            Matcher::command("find"),
            cursor_reply("firstBatch", 0..2, 42),
        )
        .always();
    let capture = Capture::default();
    let _guard = subscriber::set_default(tracing_subscriber::registry().with(capture.clone()));
    // A callsite first reached by another test's thread while this dispatcher was being set
    // up may have cached "no interest": ask every callsite again now that it exists.
    tracing::callsite::rebuild_interest_cache();
    let client = client_for(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let _cursor = items.find(doc! {}).batch_size(2).await.unwrap();

    let operations = capture.named("operation");
    let commands = capture.named("command");
    assert_eq!(operations.len(), 1, "{:?}", capture.spans());
    assert_eq!(commands.len(), 1, "{:?}", capture.spans());
    let (operation, command) = (&operations[0], &commands[0]);
    assert_eq!(command.parent, Some("operation"));
    let port = server.port().to_string();
    // The OpenTelemetry specification's names: the operation's span after the operation and
    // its namespace, the command's after the command.
    assert_eq!(operation.field("otel.name"), Some("find db.items"));
    assert_eq!(
        operation.field("db.operation.summary"),
        Some("find db.items")
    );
    assert_eq!(command.field("otel.name"), Some("find"));
    assert_eq!(command.field("db.command.name"), Some("find"));
    assert_eq!(command.field("db.query.summary"), Some("find db.items"));
    for span in [operation, command] {
        assert_eq!(span.field("otel.kind"), Some("client"));
        assert_eq!(span.field("db.system.name"), Some("mongodb"));
        assert_eq!(span.field("db.operation.name"), Some("find"));
        assert_eq!(span.field("db.namespace"), Some("db"));
        assert_eq!(span.field("db.collection.name"), Some("items"));
        assert_eq!(span.field("server.address"), Some("127.0.0.1"));
        assert_eq!(span.field("server.port"), Some(port.as_str()));
        assert_eq!(span.field("network.transport"), Some("tcp"));
        assert_eq!(span.field("db.mongodb.cursor_id"), Some("42"));
        let lsid = span.field("db.mongodb.lsid").expect("an implicit session");
        assert_eq!(lsid.len(), 32, "a UUID in hex: {lsid}");
        assert_eq!(span.field("error.type"), None);
        assert_eq!(span.field("otel.status_code"), None);
    }
    assert_eq!(command.field("db.mongodb.attempt"), Some("0"));
    assert!(command.field("db.mongodb.driver_connection_id").is_some());
}

#[tokio::test]
async fn a_command_error_marks_both_spans_with_its_type_and_code() {
    let server = server().await;
    server
        .rule(
            Matcher::command("aggregate"),
            Reaction::error(16436, "Location16436", "Unrecognized pipeline stage"),
        )
        .always();
    let capture = Capture::default();
    let _guard = subscriber::set_default(tracing_subscriber::registry().with(capture.clone()));
    // A callsite first reached by another test's thread while this dispatcher was being set
    // up may have cached "no interest": ask every callsite again now that it exists.
    tracing::callsite::rebuild_interest_cache();
    let client = client_for(&server).await;
    let items = client.database("db").collection::<Document>("items");
    items.aggregate([doc! { "$nope": {} }]).await.unwrap_err();

    let operations = capture.named("operation");
    let commands = capture.named("command");
    assert_eq!(
        (operations.len(), commands.len()),
        (1, 1),
        "{:?}",
        capture.spans()
    );
    assert_eq!(operations[0].field("otel.name"), Some("aggregate db.items"));
    assert_eq!(commands[0].field("otel.name"), Some("aggregate"));
    for span in [&operations[0], &commands[0]] {
        assert_eq!(span.field("otel.status_code"), Some("ERROR"));
        assert_eq!(span.field("error.type"), Some("Command"));
        assert_eq!(span.field("db.response.status_code"), Some("16436"));
    }
}
