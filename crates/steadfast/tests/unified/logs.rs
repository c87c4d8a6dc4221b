//! Log capture for `observeLogMessages` / `expectLogMessages`.
//!
//! One global `tracing` layer (installed by [`install`]) turns every event of steadfast's four
//! logging components into a `{level, component, data}` message and files it under the
//! event's `topologyId`, which names the client that logged it. A client entity that observes
//! log messages registers its topology id and per-component levels ([`observe`]); the check
//! ([`check`]) reads the messages filed under that id that pass those levels. Capture runs only
//! while a case has such a client (so other suites pay nothing: the layer reports every
//! callsite as disabled), and [`reset`] forgets everything at the end of each case.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use bson::oid::ObjectId;
use bson::{Bson, Document};
use tokio::sync::Notify;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt as _};

use crate::matcher::{EntityValues, match_root};

/// The logging specification's components, by steadfast's target for each.
const COMPONENTS: [(&str, &str); 4] = [
    (steadfast::logging::COMMAND, "command"),
    (steadfast::logging::CONNECTION, "connection"),
    (steadfast::logging::SERVER_SELECTION, "serverSelection"),
    (steadfast::logging::TOPOLOGY, "topology"),
];

/// The document length of every client entity, as the command logging suite's README asks
/// ("a large value e.g. 10,000").
pub(crate) const MAX_DOCUMENT_LENGTH: usize = 10_000;

/// How long the check waits for expected messages still in flight (logged by background
/// tasks after the operation returned). The wait ends as soon as they are there.
const LATE_MESSAGE_LIMIT: Duration = Duration::from_secs(5);

/// One captured log message.
#[derive(Clone, Debug)]
pub(crate) struct LogMessage {
    /// The logging specification's level name (`debug`, `info`...).
    level: &'static str,
    /// The logging specification's component name.
    component: &'static str,
    /// The event's fields, `message` included.
    data: Document,
}

/// What the capture keeps between [`observe`] and [`reset`].
#[derive(Default)]
struct Captured {
    /// Messages by the topology id that logged them.
    messages: HashMap<String, Vec<LogMessage>>,
    /// Per observing client (by topology id): the minimum severity per component.
    levels: HashMap<String, HashMap<String, u8>>,
}

static CAPTURING: AtomicBool = AtomicBool::new(false);
static CAPTURED: Mutex<Option<Captured>> = Mutex::new(None);

fn arrived() -> &'static Notify {
    static ARRIVED: std::sync::OnceLock<Notify> = std::sync::OnceLock::new();
    ARRIVED.get_or_init(Notify::new)
}

fn with_captured<T>(f: impl FnOnce(&mut Captured) -> T) -> T {
    let mut guard = CAPTURED.lock().unwrap_or_else(PoisonError::into_inner);
    f(guard.get_or_insert_with(Captured::default))
}

/// Installs the capture layer as the process's global subscriber (once, from `main`).
pub(crate) fn install() {
    let subscriber = tracing_subscriber::registry().with(CaptureLayer);
    if tracing::subscriber::set_global_default(subscriber).is_err() {
        eprintln!("a global tracing subscriber was already set: log messages are not captured");
    }
}

/// Starts capturing before a client that observes log messages is built, so that the
/// messages its construction logs are kept too.
pub(crate) fn start_capture() {
    CAPTURING.store(true, Ordering::SeqCst);
    // Callsites registered while capture was off cached "never": ask them again.
    tracing::callsite::rebuild_interest_cache();
}

/// Registers `topology_id`'s client as observing log messages with `levels`
/// (`observeLogMessages`: component name to minimum level name).
pub(crate) fn observe(topology_id: ObjectId, levels: &Document) -> Result<(), String> {
    let mut parsed = HashMap::new();
    for (component, level) in levels {
        if !COMPONENTS.iter().any(|(_, name)| name == component) {
            return Err(format!(
                "observeLogMessages: unknown component {component:?}"
            ));
        }
        let name = level.as_str().unwrap_or_default();
        if name.eq_ignore_ascii_case("off") {
            continue;
        }
        let level = severity(name)
            .ok_or_else(|| format!("observeLogMessages.{component}: unknown level {level}"))?;
        parsed.insert(component.clone(), level);
    }
    with_captured(|captured| captured.levels.insert(topology_id.to_hex(), parsed));
    Ok(())
}

/// Stops capturing and forgets every message and registration (at the end of each case).
pub(crate) fn reset() {
    CAPTURING.store(false, Ordering::SeqCst);
    tracing::callsite::rebuild_interest_cache();
    *CAPTURED.lock().unwrap_or_else(PoisonError::into_inner) = None;
}

/// The messages `topology_id`'s client observes: those filed under its id whose component
/// it observes at their level or a more severe one.
fn observed(topology_id: &str) -> Vec<LogMessage> {
    with_captured(|captured| {
        let Some(levels) = captured.levels.get(topology_id) else {
            return Vec::new();
        };
        let passes = |message: &LogMessage| {
            levels
                .get(message.component)
                .is_some_and(|minimum| severity(message.level).is_some_and(|s| s <= *minimum))
        };
        captured
            .messages
            .get(topology_id)
            .map(|all| all.iter().filter(|m| passes(m)).cloned().collect())
            .unwrap_or_default()
    })
}

/// The logging specification's severity code of a level name (lower is more severe).
fn severity(level: &str) -> Option<u8> {
    Some(match level.to_ascii_lowercase().as_str() {
        "emergency" => 0,
        "alert" => 1,
        "critical" => 2,
        "error" => 3,
        "warn" => 4,
        "notice" => 5,
        "info" => 6,
        "debug" => 7,
        "trace" => 8,
        _ => return None,
    })
}

/// The logging specification's name for a `tracing` level (no tracing level maps to the
/// specification's emergency, alert, critical or notice).
fn level_name(level: Level) -> &'static str {
    match level {
        Level::ERROR => "error",
        Level::WARN => "warn",
        Level::INFO => "info",
        Level::DEBUG => "debug",
        Level::TRACE => "trace",
    }
}

/// `expectLogMessages`: for each client listed, its observed messages (minus those matching
/// `ignoreMessages`) must match `messages` in order, with no extra ones unless
/// `ignoreExtraMessages`.
pub(crate) async fn check(
    expected: &[Document],
    topology_id_of: impl Fn(&str) -> Result<ObjectId, String>,
    entities: &dyn EntityValues,
) -> Result<(), String> {
    for for_client in expected {
        let client = for_client
            .get_str("client")
            .map_err(|_| "expectLogMessages entry without a client".to_owned())?;
        let id = topology_id_of(client)?.to_hex();
        let messages = documents(for_client, "messages")?;
        let ignore = documents(for_client, "ignoreMessages")?;
        let extra_allowed = for_client.get_bool("ignoreExtraMessages").unwrap_or(false);
        let relevant = || -> Vec<LogMessage> {
            observed(&id)
                .into_iter()
                .filter(|m| !ignore.iter().any(|i| matches(i, m, entities).is_ok()))
                .collect()
        };
        wait_for(|| relevant().len() >= messages.len()).await;
        let actual = relevant();
        check_messages(&messages, &actual, extra_allowed, entities)
            .map_err(|e| format!("expectLogMessages for {client}: {e}"))?;
    }
    Ok(())
}

fn check_messages(
    expected: &[Document],
    actual: &[LogMessage],
    extra_allowed: bool,
    entities: &dyn EntityValues,
) -> Result<(), String> {
    let count_ok = if extra_allowed {
        actual.len() >= expected.len()
    } else {
        actual.len() == expected.len()
    };
    if !count_ok {
        return Err(format!(
            "expected {} messages{}, observed {}: {}",
            expected.len(),
            if extra_allowed { " or more" } else { "" },
            actual.len(),
            describe(actual)
        ));
    }
    for (index, (want, got)) in expected.iter().zip(actual).enumerate() {
        matches(want, got, entities)
            .map_err(|e| format!("message {index}: {e}; observed {}", describe(actual)))?;
    }
    Ok(())
}

/// Whether `actual` matches one `expectedLogMessage`.
fn matches(
    expected: &Document,
    actual: &LogMessage,
    entities: &dyn EntityValues,
) -> Result<(), String> {
    let level = expected
        .get_str("level")
        .map_err(|_| "no level".to_owned())?;
    if severity(level) != severity(actual.level) {
        return Err(format!("level {} instead of {level}", actual.level));
    }
    let component = expected
        .get_str("component")
        .map_err(|_| "no component".to_owned())?;
    if component != actual.component {
        return Err(format!(
            "component {} instead of {component}",
            actual.component
        ));
    }
    if let Ok(redacted) = expected.get_bool("failureIsRedacted") {
        check_redaction(actual, redacted)?;
    }
    let data = expected
        .get_document("data")
        .map_err(|_| "no data".to_owned())?;
    let actual_data = Bson::Document(actual.data.clone());
    match_root(&Bson::Document(data.clone()), Some(&actual_data), entities)
        .map_err(|m| format!("data {m}"))
}

/// `failureIsRedacted`: the failure must be present and carry steadfast's redaction marker
/// (when `redacted`) or not carry it.
fn check_redaction(actual: &LogMessage, redacted: bool) -> Result<(), String> {
    let Ok(failure) = actual.data.get_str("failure") else {
        return Err("the message has no failure".to_owned());
    };
    let is_redacted = failure.starts_with(steadfast::logging::REDACTED_FAILURE_PREFIX);
    if is_redacted == redacted {
        return Ok(());
    }
    Err(format!(
        "the failure {failure:?} is {}redacted",
        if is_redacted { "" } else { "not " }
    ))
}

/// Waits until `done` holds (checked again whenever a message arrives) or the late-message
/// limit passes.
async fn wait_for(done: impl Fn() -> bool) {
    let wait = async {
        loop {
            let notified = arrived().notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if done() {
                return;
            }
            notified.await;
        }
    };
    // On timeout the caller's check reports what is missing.
    let _ = tokio::time::timeout(LATE_MESSAGE_LIMIT, wait).await;
}

fn describe(messages: &[LogMessage]) -> String {
    let shown: Vec<String> = messages
        .iter()
        .map(|m| format!("{} {} {}", m.level, m.component, m.data))
        .collect();
    format!("[{}]", shown.join(", "))
}

fn documents(parent: &Document, key: &str) -> Result<Vec<Document>, String> {
    match parent.get(key) {
        None => Ok(Vec::new()),
        Some(Bson::Array(items)) => items
            .iter()
            .map(|item| match item {
                Bson::Document(d) => Ok(d.clone()),
                other => Err(format!("{key}: expected documents, found {other}")),
            })
            .collect(),
        Some(other) => Err(format!("{key}: expected an array, found {other}")),
    }
}

/// The global layer: keeps steadfast's log messages while capture is on.
struct CaptureLayer;

fn component_of(metadata: &Metadata<'_>) -> Option<&'static str> {
    COMPONENTS
        .iter()
        .find(|(target, _)| *target == metadata.target())
        .map(|(_, name)| *name)
}

impl<S: Subscriber> Layer<S> for CaptureLayer {
    fn register_callsite(
        &self,
        metadata: &'static Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        // Events, and the hints of `tracing::enabled!` (neither event nor span) with which
        // the driver asks whether to build a message at all.
        if !metadata.is_span() && component_of(metadata).is_some() {
            tracing::subscriber::Interest::sometimes()
        } else {
            tracing::subscriber::Interest::never()
        }
    }

    fn enabled(&self, metadata: &Metadata<'_>, _ctx: Context<'_, S>) -> bool {
        CAPTURING.load(Ordering::SeqCst) && !metadata.is_span() && component_of(metadata).is_some()
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let Some(component) = component_of(event.metadata()) else {
            return;
        };
        let mut fields = Fields::default();
        event.record(&mut fields);
        let Some(topology_id) = fields.topology_id.take() else {
            return;
        };
        let message = LogMessage {
            level: level_name(*event.metadata().level()),
            component,
            data: fields.data,
        };
        with_captured(|captured| {
            captured
                .messages
                .entry(topology_id)
                .or_default()
                .push(message);
        });
        arrived().notify_waiters();
    }
}

/// An event's fields as a document; `topologyId` is set aside for routing.
#[derive(Default)]
struct Fields {
    data: Document,
    topology_id: Option<String>,
}

impl Fields {
    fn put(&mut self, field: &Field, value: Bson) {
        if field.name() == "topologyId" {
            if let Bson::String(id) = &value {
                self.topology_id = Some(id.clone());
            }
        }
        self.data.insert(field.name(), value);
    }
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, Bson::String(format!("{value:?}")));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Bson::String(value.to_owned()));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Bson::Int64(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        let value = i64::try_from(value).map_or(Bson::Double(value as f64), Bson::Int64);
        self.put(field, value);
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, Bson::Double(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Bson::Boolean(value));
    }
}
