//! Span capture for `observeTracingMessages` / `expectTracingMessages` (the open-telemetry
//! suite).
//!
//! A client entity that observes tracing messages gets its own OpenTelemetry SDK tracer
//! provider, passed to the driver as `ClientOptions::tracing.tracer_provider` (so spans are
//! routed by client without any global state), whose one span processor keeps every finished
//! span with the order spans were started in. The check ([`check`]) rebuilds the span trees
//! from parent links and matches them against the expected spans: names exactly, attributes
//! with the runner's matcher (as a root document, so unlisted attributes are allowed), and the
//! `nested` spans as the children of each, in start order, with no extra spans at any level
//! unless `ignoreExtraSpans`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bson::{Bson, Document};
use opentelemetry::trace::{Span as _, SpanId};
use opentelemetry::{Context, Value};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, Span, SpanData, SpanProcessor};
use steadfast::otel::OpentelemetryOptions;
use tokio::sync::Notify;

use crate::matcher::{EntityValues, match_root};

/// `db.query.text`'s length when a client observes command payloads (as the official driver's
/// runner: long enough for every command of the suite).
const QUERY_TEXT_MAX_LENGTH: usize = 1000;

/// How long the check waits for expected spans still open (a bound for a broken test only: it
/// ends as soon as the spans are there).
const LATE_SPAN_LIMIT: Duration = Duration::from_secs(5);

/// The spans one client entity produced.
#[derive(Clone)]
pub(crate) struct ClientTracing {
    recorder: Arc<Recorder>,
    /// Kept so that the provider (and its processor) live as long as the entity.
    _provider: SdkTracerProvider,
}

impl ClientTracing {
    /// The capture for a client entity's `observeTracingMessages`, and the tracing options
    /// that send its spans there.
    pub(crate) fn new(observe: &Document) -> Result<(Self, OpentelemetryOptions), String> {
        for key in observe.keys() {
            if key != "enableCommandPayload" {
                return Err(format!("observeTracingMessages: unknown field {key:?}"));
            }
        }
        let recorder = Arc::new(Recorder::default());
        let provider = SdkTracerProvider::builder()
            .with_span_processor(Processor(Arc::clone(&recorder)))
            .build();
        let payload = observe.get_bool("enableCommandPayload").unwrap_or(false);
        let options = OpentelemetryOptions::builder()
            .enabled(true)
            // 0 leaves `db.query.text` out (and overrides the environment variable).
            .query_text_max_length(if payload { QUERY_TEXT_MAX_LENGTH } else { 0 })
            .tracer_provider(provider.clone())
            .build();
        let tracing = ClientTracing {
            recorder,
            _provider: provider,
        };
        Ok((tracing, options))
    }
}

/// Every finished span, with the order it was started in.
#[derive(Debug, Default)]
struct Recorder {
    next: AtomicUsize,
    started: Mutex<HashMap<SpanId, usize>>,
    finished: Mutex<Vec<(usize, SpanData)>>,
    arrived: Notify,
}

impl Recorder {
    /// The finished spans, in start order.
    fn spans(&self) -> Vec<SpanData> {
        let mut finished = lock(&self.finished).clone();
        finished.sort_by_key(|(order, _)| *order);
        finished.into_iter().map(|(_, span)| span).collect()
    }
}

/// The span processor: it records, exports nothing.
#[derive(Debug)]
struct Processor(Arc<Recorder>);

impl SpanProcessor for Processor {
    fn on_start(&self, span: &mut Span, _cx: &Context) {
        let order = self.0.next.fetch_add(1, Ordering::SeqCst);
        lock(&self.0.started).insert(span.span_context().span_id(), order);
    }

    fn on_end(&self, span: SpanData) {
        let id = span.span_context.span_id();
        let order = lock(&self.0.started)
            .get(&id)
            .copied()
            .unwrap_or(usize::MAX);
        lock(&self.0.finished).push((order, span));
        self.0.arrived.notify_waiters();
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }
}

/// `expectTracingMessages`: for each client listed, its root spans must match `spans`.
pub(crate) async fn check(
    expected: &[Document],
    tracing_of: impl Fn(&str) -> Result<ClientTracing, String>,
    entities: &dyn EntityValues,
) -> Result<(), String> {
    for for_client in expected {
        let client = for_client
            .get_str("client")
            .map_err(|_| "expectTracingMessages entry without a client".to_owned())?;
        let tracing = tracing_of(client)?;
        let spans = expected_spans(for_client.get("spans"))?;
        let ignore_extra = for_client.get_bool("ignoreExtraSpans").unwrap_or(false);
        wait_for_spans(&tracing.recorder, count(&spans)).await;
        let observed = tracing.recorder.spans();
        let trees = Trees::new(&observed)?;
        let matcher = SpanMatcher {
            trees: &trees,
            ignore_extra,
            entities,
        };
        matcher
            .list(&trees.roots(), &spans, "spans")
            .map_err(|e| format!("expectTracingMessages for {client}: {e}"))?;
    }
    Ok(())
}

/// Waits until at least `expected` spans finished, or the late-span limit passes.
async fn wait_for_spans(recorder: &Recorder, expected: usize) {
    let wait = async {
        loop {
            let notified = recorder.arrived.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if lock(&recorder.finished).len() >= expected {
                return;
            }
            notified.await;
        }
    };
    // On timeout the match reports what is missing.
    let _ = tokio::time::timeout(LATE_SPAN_LIMIT, wait).await;
}

/// One expected span.
#[derive(Debug)]
struct ExpectedSpan {
    name: String,
    attributes: Document,
    nested: Vec<ExpectedSpan>,
}

fn expected_spans(value: Option<&Bson>) -> Result<Vec<ExpectedSpan>, String> {
    let Some(Bson::Array(items)) = value else {
        return Err("spans: expected an array".to_owned());
    };
    items
        .iter()
        .map(|item| {
            let Bson::Document(span) = item else {
                return Err(format!("spans: expected documents, found {item}"));
            };
            Ok(ExpectedSpan {
                name: span
                    .get_str("name")
                    .map_err(|_| "a span without a name".to_owned())?
                    .to_owned(),
                attributes: span
                    .get_document("attributes")
                    .map_err(|_| "a span without attributes".to_owned())?
                    .clone(),
                nested: match span.get("nested") {
                    None => Vec::new(),
                    nested => expected_spans(nested)?,
                },
            })
        })
        .collect()
}

/// How many spans `spans` describe, nested ones included.
fn count(spans: &[ExpectedSpan]) -> usize {
    spans.iter().map(|span| 1 + count(&span.nested)).sum()
}

/// One observed span as the matcher reads it.
struct ObservedSpan {
    id: SpanId,
    name: String,
    attributes: Bson,
}

/// The observed spans as trees: roots and each span's children, in start order.
struct Trees {
    roots: Vec<ObservedSpan>,
    children: HashMap<SpanId, Vec<ObservedSpan>>,
}

impl Trees {
    fn new(spans: &[SpanData]) -> Result<Self, String> {
        let mut roots = Vec::new();
        let mut children: HashMap<SpanId, Vec<ObservedSpan>> = HashMap::new();
        for span in spans {
            let observed = ObservedSpan {
                id: span.span_context.span_id(),
                name: span.name.to_string(),
                attributes: attributes(span)?,
            };
            if span.parent_span_id == SpanId::INVALID {
                roots.push(observed);
            } else {
                children
                    .entry(span.parent_span_id)
                    .or_default()
                    .push(observed);
            }
        }
        Ok(Trees { roots, children })
    }

    fn roots(&self) -> Vec<&ObservedSpan> {
        self.roots.iter().collect()
    }

    fn children(&self, id: SpanId) -> Vec<&ObservedSpan> {
        self.children
            .get(&id)
            .map(|spans| spans.iter().collect())
            .unwrap_or_default()
    }
}

struct SpanMatcher<'a> {
    trees: &'a Trees,
    ignore_extra: bool,
    entities: &'a dyn EntityValues,
}

impl SpanMatcher<'_> {
    /// Matches a list of sibling spans: all of them in order, or (with `ignoreExtraSpans`) the
    /// expected ones as a subsequence found by name.
    fn list(
        &self,
        actual: &[&ObservedSpan],
        expected: &[ExpectedSpan],
        path: &str,
    ) -> Result<(), String> {
        if !self.ignore_extra && actual.len() != expected.len() {
            return Err(format!(
                "{path}: expected {} spans, observed {}: {}",
                expected.len(),
                actual.len(),
                describe(actual)
            ));
        }
        let mut remaining = actual.iter();
        for (index, want) in expected.iter().enumerate() {
            let here = format!("{path}[{index}] ({})", want.name);
            let got = if self.ignore_extra {
                remaining.find(|span| span.name == want.name)
            } else {
                remaining.next()
            };
            let Some(got) = got else {
                return Err(format!("{here}: not observed among {}", describe(actual)));
            };
            self.span(got, want, &here)?;
        }
        Ok(())
    }

    fn span(
        &self,
        actual: &ObservedSpan,
        expected: &ExpectedSpan,
        path: &str,
    ) -> Result<(), String> {
        if actual.name != expected.name {
            return Err(format!("{path}: observed a span named {:?}", actual.name));
        }
        let want = Bson::Document(expected.attributes.clone());
        match_root(&want, Some(&actual.attributes), self.entities)
            .map_err(|m| format!("{path}: attributes {m}; observed {}", actual.attributes))?;
        let children = self.trees.children(actual.id);
        self.list(&children, &expected.nested, &format!("{path}.nested"))
    }
}

fn describe(spans: &[&ObservedSpan]) -> String {
    let names: Vec<&str> = spans.iter().map(|span| span.name.as_str()).collect();
    format!("[{}]", names.join(", "))
}

/// A span's attributes as a document. `db.mongodb.lsid` holds the session id as Extended JSON
/// (the suite matches it with `$$sessionLsid`, a document): it is parsed back.
fn attributes(span: &SpanData) -> Result<Bson, String> {
    let mut document = Document::new();
    for attribute in &span.attributes {
        let key = attribute.key.as_str();
        let value = match (&attribute.value, key) {
            (Value::String(text), "db.mongodb.lsid") => {
                Bson::Document(crate::ejson::parse_document(text.as_str())?)
            }
            (value, _) => bson_of(value)?,
        };
        document.insert(key, value);
    }
    Ok(Bson::Document(document))
}

fn bson_of(value: &Value) -> Result<Bson, String> {
    Ok(match value {
        Value::Bool(b) => Bson::Boolean(*b),
        Value::I64(n) => Bson::Int64(*n),
        Value::F64(n) => Bson::Double(*n),
        Value::String(text) => Bson::String(text.as_str().to_owned()),
        other => {
            return Err(format!(
                "an attribute value the runner does not read: {other:?}"
            ));
        }
    })
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
