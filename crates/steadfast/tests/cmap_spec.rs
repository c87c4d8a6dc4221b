//! The CMAP specification's `cmap-format` suite, run against [`StandalonePool`] and a blackpipe
//! scripted server on 127.0.0.1.
//!
//! The files are read at run time from the suite's folder in the spec test folder that
//! `steadfast_test_support::spec_tests` locates (`$STEADFAST_SPEC_TESTS`, else
//! `../shared/spec-tests` beside the workspace); without one, the runner prints one skip line
//! and passes. A `failPoint` is carried out with scripted-server rules on
//! the hello commands (block, error, close). The runner prints one summary line, lists every
//! skip with its reason, and fails if a case failed or no file was found.
#![allow(
    clippy::disallowed_methods,
    reason = "tests drive the clock, tasks and randomness themselves"
)]

use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use blackpipe::scripted::{Matcher, Responder, ScriptedServer, standalone_hello};
use blackpipe::server::{CommandError, Outcome, Reaction};
use serde_json::{Map, Value, json};
use steadfast::Error;
use steadfast::event::{CmapEvent, Event, EventRecorder};
use steadfast::pool::standalone::{StandaloneConnection, StandalonePool, pool_error_details};
use steadfast_core::ServerAddress;
use steadfast_core::options::ClientOptions;
use steadfast_test_support::spec_tests::{self, SpecTests};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

const SUITE: &str = "connection-monitoring-and-pooling/cmap-format";

/// The one table of skipped files, with the reason for each.
const SKIPS: &[(&str, &str)] = &[];

/// Bounds a whole file, so that a hang fails the case instead of the run.
const CASE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long `waitForEvent` waits when the file gives no timeout.
const DEFAULT_EVENT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the final comparison waits for events still missing (emitted by tasks that
/// outlive the last operation).
const LATE_EVENT_TIMEOUT: Duration = Duration::from_secs(2);

fn main() -> ExitCode {
    let Some(spec) = SpecTests::from_env() else {
        println!("{}", spec_tests::skip_line(SUITE));
        return ExitCode::SUCCESS;
    };
    let dir = spec.suite_dir(SUITE);
    let files = match spec_tests::json_files(&dir) {
        Ok(files) => files,
        Err(error) => {
            eprintln!("spec-suite {SUITE}: cannot read {}: {error}", dir.display());
            return ExitCode::FAILURE;
        }
    };
    if files.is_empty() {
        eprintln!(
            "spec-suite {SUITE}: no test files found in {}",
            dir.display()
        );
        return ExitCode::FAILURE;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("spec-suite {SUITE}: cannot start a runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let (mut passed, mut failed, mut skipped) = (0, 0, Vec::new());
    for file in &files {
        let name = file
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        if let Some((_, reason)) = SKIPS.iter().find(|(skip, _)| *skip == name) {
            skipped.push((name, *reason));
            continue;
        }
        let outcome = std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read: {e}"))
            .and_then(|text| {
                serde_json::from_str::<Value>(&text).map_err(|e| format!("bad JSON: {e}"))
            })
            .and_then(|test| {
                runtime.block_on(async {
                    tokio::time::timeout(CASE_TIMEOUT, run_case(&test))
                        .await
                        .unwrap_or_else(|_| Err(format!("did not finish within {CASE_TIMEOUT:?}")))
                })
            });
        match outcome {
            Ok(()) => {
                passed += 1;
                println!("ok      {name}");
            }
            Err(reason) => {
                failed += 1;
                println!("FAILED  {name}: {reason}");
            }
        }
    }
    for (name, reason) in &skipped {
        println!("skipped {name}: {reason}");
    }
    println!(
        "spec-suite {SUITE}: {passed} passed, {failed} failed, {} skipped",
        skipped.len()
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Everything the operations of one case share.
struct Case {
    pool: StandalonePool,
    recorder: Arc<EventRecorder>,
    labeled: Mutex<HashMap<String, StandaloneConnection>>,
    /// Connections checked out without a label stay checked out until the case ends.
    unlabeled: Mutex<Vec<StandaloneConnection>>,
}

struct Thread {
    operations: mpsc::UnboundedSender<Value>,
    task: JoinHandle<Result<(), Error>>,
}

async fn run_case(test: &Value) -> Result<(), String> {
    let server = ScriptedServer::start()
        .await
        .map_err(|e| format!("scripted server: {e}"))?;
    if let Some(fail_point) = test.get("failPoint") {
        install_fail_point(&server, fail_point)?;
    }
    let empty = Map::new();
    let pool_options = test
        .get("poolOptions")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let (options, maintenance) = client_options(pool_options)?;
    let recorder = Arc::new(EventRecorder::new());
    let pool = StandalonePool::new(
        ServerAddress::tcp("127.0.0.1", server.port()),
        &options,
        vec![recorder.clone()],
        maintenance,
    )
    .map_err(|e| format!("creating the pool: {e}"))?;
    let case = Arc::new(Case {
        pool,
        recorder,
        labeled: Mutex::default(),
        unlabeled: Mutex::default(),
    });

    let mut threads: HashMap<String, Thread> = HashMap::new();
    let mut main_error: Option<Error> = None;
    for operation in test
        .get("operations")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
    {
        if let Some(thread) = operation.get("thread").and_then(Value::as_str) {
            let thread = threads
                .get(thread)
                .ok_or_else(|| format!("operation on thread {thread} before it was started"))?;
            thread
                .operations
                .send(operation.clone())
                .map_err(|_| "a thread stopped taking operations".to_string())?;
            continue;
        }
        let result = match str_field(operation, "name")? {
            "start" => {
                let target = str_field(operation, "target")?.to_string();
                threads.insert(target, start_thread(&case));
                Ok(())
            }
            "waitForThread" => {
                let target = str_field(operation, "target")?;
                let thread = threads
                    .remove(target)
                    .ok_or_else(|| format!("waitForThread on unknown thread {target}"))?;
                drop(thread.operations);
                thread
                    .task
                    .await
                    .map_err(|e| format!("thread {target} panicked: {e}"))?
            }
            _ => run_operation(&case, operation).await?,
        };
        if let Err(error) = result {
            // As an exception would, the error ends the main thread's operations.
            main_error = Some(error);
            break;
        }
    }

    match (test.get("error"), &main_error) {
        (Some(expected), Some(actual)) => {
            let details = pool_error_details(actual)
                .ok_or_else(|| format!("expected {expected}, got a non-pool error: {actual}"))?;
            let actual = json!({
                "type": details.spec_type,
                "message": details.message,
                "address": case.pool.address().to_string(),
            });
            matches(expected, &actual)
                .map_err(|e| format!("error mismatch: {e} (got {actual})"))?;
        }
        (Some(expected), None) => return Err(format!("expected error {expected}, got none")),
        (None, Some(actual)) => return Err(format!("unexpected error: {actual}")),
        (None, None) => {}
    }
    compare_events(test, &case).await
}

fn start_thread(case: &Arc<Case>) -> Thread {
    let (operations, mut receiver) = mpsc::unbounded_channel::<Value>();
    let case = Arc::clone(case);
    let task = tokio::spawn(async move {
        let mut first_error = None;
        while let Some(operation) = receiver.recv().await {
            if first_error.is_some() {
                continue;
            }
            match run_operation(&case, &operation).await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => first_error = Some(error),
                Err(problem) => {
                    first_error = Some(Error::custom(problem));
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    });
    Thread { operations, task }
}

/// Runs one pool operation. The outer error is a problem with the test itself; the inner one is
/// what the pool returned.
async fn run_operation(case: &Case, operation: &Value) -> Result<Result<(), Error>, String> {
    match str_field(operation, "name")? {
        "checkOut" => match case.pool.check_out().await {
            Ok(connection) => {
                match operation.get("label").and_then(Value::as_str) {
                    Some(label) => {
                        lock(&case.labeled).insert(label.to_string(), connection);
                    }
                    None => lock(&case.unlabeled).push(connection),
                }
                Ok(Ok(()))
            }
            Err(error) => Ok(Err(error)),
        },
        "checkIn" => {
            let label = str_field(operation, "connection")?;
            let connection = lock(&case.labeled)
                .remove(label)
                .ok_or_else(|| format!("checkIn of unknown connection {label}"))?;
            connection.check_in();
            Ok(Ok(()))
        }
        "clear" => {
            let interrupt = operation
                .get("interruptInUseConnections")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            case.pool.clear(interrupt);
            Ok(Ok(()))
        }
        "close" => {
            case.pool.close();
            Ok(Ok(()))
        }
        "ready" => {
            case.pool.ready();
            Ok(Ok(()))
        }
        "wait" => {
            // The specification asks for a plain sleep here.
            let ms = operation.get("ms").and_then(Value::as_u64).unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok(Ok(()))
        }
        "waitForEvent" => {
            let event = str_field(operation, "event")?;
            let count = operation.get("count").and_then(Value::as_u64).unwrap_or(1) as usize;
            let timeout = operation
                .get("timeout")
                .and_then(Value::as_u64)
                .map_or(DEFAULT_EVENT_TIMEOUT, Duration::from_millis);
            wait_for_events(&case.recorder, timeout, |events| {
                events.iter().filter(|e| e.name() == event).count() >= count
            })
            .await
            .map_err(|seen| format!("waitForEvent {event} x{count}: saw only {seen:?}"))?;
            Ok(Ok(()))
        }
        other => Err(format!("unknown operation {other}")),
    }
}

/// Waits until `done` holds for the CMAP events, re-checking at each new event. On timeout,
/// returns the names seen.
async fn wait_for_events(
    recorder: &EventRecorder,
    timeout: Duration,
    done: impl Fn(&[CmapEvent]) -> bool,
) -> Result<(), Vec<&'static str>> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let seen = recorder.len();
        let events = cmap_events(recorder);
        if done(&events) {
            return Ok(());
        }
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if recorder.wait_for(seen, left, |_| true).await.is_none() {
            return Err(events.iter().map(CmapEvent::name).collect());
        }
    }
}

async fn compare_events(test: &Value, case: &Case) -> Result<(), String> {
    let ignore: Vec<&str> = test
        .get("ignore")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let expected = test
        .get("events")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let kept = |events: &[CmapEvent]| -> Vec<Value> {
        events
            .iter()
            .filter(|e| !ignore.contains(&e.name()))
            .map(event_json)
            .collect()
    };
    // Tasks may still be emitting the last events (a check-in served by a waiter, a close).
    let _ = wait_for_events(&case.recorder, LATE_EVENT_TIMEOUT, |events| {
        kept(events).len() >= expected.len()
    })
    .await;
    let actual = kept(&cmap_events(&case.recorder));
    for (index, want) in expected.iter().enumerate() {
        let got = actual.get(index).ok_or_else(|| {
            format!("event {index} missing: expected {want}; actual events {actual:?}")
        })?;
        matches(want, got).map_err(|e| {
            format!("event {index}: {e}: expected {want}, got {got}; actual events {actual:?}")
        })?;
    }
    Ok(())
}

fn cmap_events(recorder: &EventRecorder) -> Vec<CmapEvent> {
    recorder
        .events()
        .into_iter()
        .filter_map(|event| match event {
            Event::Cmap(event) => Some(event),
            _ => None,
        })
        .collect()
}

/// An event in the test files' JSON shape.
fn event_json(event: &CmapEvent) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), json!(event.name()));
    let millis = |d: &Duration| json!(d.as_secs_f64() * 1000.0);
    match event {
        CmapEvent::PoolCreated { address, options } => {
            out.insert("address".into(), json!(address.to_string()));
            let mut o = Map::new();
            o.insert(
                "maxPoolSize".into(),
                json!(options.max_pool_size.unwrap_or(0)),
            );
            o.insert("minPoolSize".into(), json!(options.min_pool_size));
            o.insert("maxConnecting".into(), json!(options.max_connecting));
            if let Some(idle) = options.max_idle_time {
                o.insert("maxIdleTimeMS".into(), json!(idle.as_millis() as u64));
            }
            if let Some(wait) = options.wait_queue_timeout {
                o.insert("waitQueueTimeoutMS".into(), json!(wait.as_millis() as u64));
            }
            out.insert("options".into(), Value::Object(o));
        }
        CmapEvent::PoolReady { address } | CmapEvent::PoolClosed { address } => {
            out.insert("address".into(), json!(address.to_string()));
        }
        CmapEvent::PoolCleared {
            address,
            service_id,
            interrupt_in_use_connections,
        } => {
            out.insert("address".into(), json!(address.to_string()));
            if let Some(id) = service_id {
                out.insert("serviceId".into(), json!(id.to_hex()));
            }
            out.insert(
                "interruptInUseConnections".into(),
                json!(interrupt_in_use_connections),
            );
        }
        CmapEvent::ConnectionCreated {
            address,
            connection_id,
        }
        | CmapEvent::ConnectionCheckedIn {
            address,
            connection_id,
        } => {
            out.insert("address".into(), json!(address.to_string()));
            out.insert("connectionId".into(), json!(connection_id));
        }
        CmapEvent::ConnectionReady {
            address,
            connection_id,
            duration,
        }
        | CmapEvent::ConnectionCheckedOut {
            address,
            connection_id,
            duration,
        } => {
            out.insert("address".into(), json!(address.to_string()));
            out.insert("connectionId".into(), json!(connection_id));
            out.insert("duration".into(), millis(duration));
        }
        CmapEvent::ConnectionClosed {
            address,
            connection_id,
            reason,
        } => {
            out.insert("address".into(), json!(address.to_string()));
            out.insert("connectionId".into(), json!(connection_id));
            out.insert("reason".into(), json!(reason.as_str()));
        }
        CmapEvent::ConnectionCheckOutStarted { address } => {
            out.insert("address".into(), json!(address.to_string()));
        }
        CmapEvent::ConnectionCheckOutFailed {
            address,
            reason,
            duration,
        } => {
            out.insert("address".into(), json!(address.to_string()));
            out.insert("reason".into(), json!(reason.as_str()));
            out.insert("duration".into(), millis(duration));
        }
        _ => {}
    }
    Value::Object(out)
}

/// The README's MATCH: `expected` is a subset of `actual`; 42 and "42" mean "any value".
fn matches(expected: &Value, actual: &Value) -> Result<(), String> {
    if expected == &json!(42) || expected == &json!("42") {
        return if actual.is_null() {
            Err("a value is missing".to_string())
        } else {
            Ok(())
        };
    }
    match (expected, actual) {
        (Value::Object(want), Value::Object(got)) => {
            for (key, value) in want {
                matches(value, got.get(key).unwrap_or(&Value::Null))
                    .map_err(|e| format!("{key}: {e}"))?;
            }
            Ok(())
        }
        (Value::Array(want), Value::Array(got)) => {
            for (index, value) in want.iter().enumerate() {
                matches(value, got.get(index).unwrap_or(&Value::Null))
                    .map_err(|e| format!("[{index}]: {e}"))?;
            }
            Ok(())
        }
        (Value::Number(want), Value::Number(got)) if want.as_f64() == got.as_f64() => Ok(()),
        (want, got) if want == got => Ok(()),
        (want, got) => Err(format!("expected {want}, got {got}")),
    }
}

/// Client options (and the maintenance interval) from a file's `poolOptions`.
fn client_options(pool: &Map<String, Value>) -> Result<(ClientOptions, Option<Duration>), String> {
    let mut options = ClientOptions::default();
    let mut maintenance = Some(Duration::from_secs(1));
    let millis = |value: &Value| value.as_u64().map(Duration::from_millis);
    for (key, value) in pool {
        let number = || {
            value
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| format!("poolOptions.{key} is not a small number: {value}"))
        };
        match key.as_str() {
            "maxPoolSize" => options.max_pool_size = number()?,
            "minPoolSize" => options.min_pool_size = number()?,
            "maxConnecting" => options.max_connecting = number()?,
            "maxIdleTimeMS" => options.max_idle_time = millis(value),
            "waitQueueTimeoutMS" => options.wait_queue_timeout = millis(value),
            "appName" => options.app_name = value.as_str().map(str::to_string),
            "backgroundThreadIntervalMS" => {
                // Negative: never run on a schedule (runs asked for by the pool still happen).
                maintenance = millis(value);
            }
            other => return Err(format!("unsupported pool option {other}")),
        }
    }
    Ok((options, maintenance))
}

/// Carries out a `failCommand` fail point on the hello commands as a scripted-server rule.
fn install_fail_point(server: &ScriptedServer, fail_point: &Value) -> Result<(), String> {
    if fail_point.get("configureFailPoint").and_then(Value::as_str) != Some("failCommand") {
        return Err(format!("unsupported fail point {fail_point}"));
    }
    let data = fail_point.get("data").cloned().unwrap_or_default();
    let commands: Vec<&str> = data
        .get("failCommands")
        .and_then(Value::as_array)
        .map(|c| c.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if commands
        .iter()
        .any(|c| !matches!(*c, "hello" | "isMaster" | "ismaster"))
    {
        return Err(format!(
            "fail point on commands other than hello: {commands:?}"
        ));
    }
    let block = (data.get("blockConnection").and_then(Value::as_bool) == Some(true))
        .then(|| data.get("blockTimeMS").and_then(Value::as_u64).unwrap_or(0))
        .map(Duration::from_millis);
    let close = data.get("closeConnection").and_then(Value::as_bool) == Some(true);
    let code = data
        .get("errorCode")
        .and_then(Value::as_i64)
        .and_then(|c| i32::try_from(c).ok());
    let responder = Responder::from_fn(move |request, _| {
        let reaction = if close {
            Reaction::hang_up()
        } else if let Some(code) = code {
            Reaction::Error(CommandError::new(
                code,
                code_name(code),
                "failCommand fail point",
            ))
        } else {
            let mut reply = standalone_hello();
            if request.command_name() != "hello"
                && let Some(writable) = reply.remove("isWritablePrimary")
            {
                reply.insert("ismaster", writable);
            }
            Reaction::Reply(reply)
        };
        Outcome::React(match block {
            Some(delay) => reaction.after(delay),
            None => reaction,
        })
    });
    let mut matcher = Matcher::hello();
    if let Some(app_name) = data.get("appName").and_then(Value::as_str) {
        matcher = matcher.app_name(app_name);
    }
    let rule = server.rule(matcher, responder);
    match fail_point.get("mode") {
        Some(Value::String(mode)) if mode == "alwaysOn" => {
            rule.always();
        }
        Some(mode) if mode.get("times").is_some() => {
            let times = mode.get("times").and_then(Value::as_u64).unwrap_or(0);
            rule.times(times);
        }
        other => return Err(format!("unsupported fail point mode {other:?}")),
    }
    Ok(())
}

fn code_name(code: i32) -> &'static str {
    match code {
        91 => "ShutdownInProgress",
        11600 => "InterruptedAtShutdown",
        _ => "FailPointError",
    }
}

fn str_field<'a>(value: &'a Value, key: &str) -> Result<&'a str, String> {
    value
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("operation without {key}: {value}"))
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
