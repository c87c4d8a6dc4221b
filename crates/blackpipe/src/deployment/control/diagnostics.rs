//! The diagnostic commands that shells, tools and test harnesses send: `serverStatus`,
//! `hostInfo`, `getCmdLineOpts` and `getLog`, answered from what blackpipe knows of the node
//! (its process, counters, connections, store and role). A section mongod has that blackpipe
//! keeps no figures for is left out rather than filled with made-up numbers (FIDELITY.md).

use bson::{Bson, DateTime, Document, doc};

use crate::deployment::errors::error_reply;
use crate::deployment::hello::SERVER_VERSION;
use crate::deployment::model::DeploymentKind;
use crate::deployment::node::context::NodeContext;
use crate::deployment::node::context::request;
use crate::deployment::state::lock;
use blackpipe_store::code;
use blackpipe_store::type_name;

/// The fields of a member's hello that `serverStatus`'s `repl` section repeats.
const REPL_FIELDS: &[&str] = &[
    "topologyVersion",
    "hosts",
    "passives",
    "arbiters",
    "setName",
    "setVersion",
    "isWritablePrimary",
    "secondary",
    "arbiterOnly",
    "primary",
    "me",
    "electionId",
    "lastWrite",
];

/// `serverStatus`: the sections are those mongod always includes that blackpipe can fill;
/// `{<section>: 0}` leaves one out, as in mongod.
pub(crate) fn server_status(node: &NodeContext, command: &Document) -> Document {
    let router = node.is_router();
    let uptime = node.process.started.elapsed();
    let mut reply = doc! {
        "host": node.host().unwrap_or_default(),
        "version": SERVER_VERSION,
        "process": if router { "mongos" } else { "mongod" },
        "pid": i64::from(std::process::id()),
        "uptime": uptime.as_secs_f64().floor(),
        "uptimeMillis": i64::try_from(uptime.as_millis()).unwrap_or(i64::MAX),
        "uptimeEstimate": i64::try_from(uptime.as_secs()).unwrap_or(i64::MAX),
        "localTime": DateTime::now(),
    };
    let sections = [
        ("connections", Some(connections(node))),
        ("opcounters", Some(node.process.opcounters.to_document())),
        ("mem", Some(memory())),
        ("network", Some(network(node))),
        ("repl", repl(node)),
        ("transactions", (!router).then(|| transactions(node))),
        ("storageEngine", (!router).then(storage_engine)),
    ];
    for (name, section) in sections {
        let excluded = command.get(name).is_some_and(is_false);
        if let (Some(section), false) = (section, excluded) {
            reply.insert(name, section);
        }
    }
    reply
}

fn is_false(value: &Bson) -> bool {
    match value {
        Bson::Boolean(b) => !b,
        Bson::Int32(n) => *n == 0,
        Bson::Int64(n) => *n == 0,
        Bson::Double(n) => *n == 0.0,
        _ => false,
    }
}

fn connections(node: &NodeContext) -> Document {
    let state = lock(&node.inner.state);
    let server = state
        .slots
        .get(node.index)
        .and_then(|slot| slot.server.as_ref());
    let current = server.map_or(0, crate::server::Server::open_connections);
    let created = server.map_or(0, crate::server::Server::accepted_connections);
    let max = node.inner.listener.max_connections;
    doc! {
        "current": i64::try_from(current).unwrap_or(i64::MAX),
        "available": i64::try_from(max.saturating_sub(current)).unwrap_or(i64::MAX),
        "totalCreated": i64::try_from(created).unwrap_or(i64::MAX),
    }
}

fn network(node: &NodeContext) -> Document {
    let requests = lock(&node.inner.state)
        .slots
        .get(node.index)
        .map_or(0, |slot| slot.counters.commands());
    doc! { "numRequests": i64::try_from(requests).unwrap_or(i64::MAX) }
}

/// The process's memory from `/proc/self/statm` (every member of a deployment shares the one
/// blackpipe process), in MiB as mongod reports it; `supported: false` where it cannot be read.
fn memory() -> Document {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|text| {
            let mut fields = text.split_whitespace().map(str::parse::<u64>);
            Some((fields.next()?.ok()?, fields.next()?.ok()?))
        });
    match pages {
        Some((size, resident)) => {
            const PAGE: u64 = 4096;
            let mib = |pages: u64| i64::try_from(pages * PAGE / (1024 * 1024)).unwrap_or(i64::MAX);
            doc! { "bits": 64, "resident": mib(resident), "virtual": mib(size), "supported": true }
        }
        None => doc! { "bits": 64, "supported": false },
    }
}

fn repl(node: &NodeContext) -> Option<Document> {
    let (hello, view) = node.hello_reply(false, true, 0)?;
    if view.kind != DeploymentKind::ReplicaSet {
        return None;
    }
    let mut repl: Document = REPL_FIELDS
        .iter()
        .filter_map(|field| {
            hello
                .get(*field)
                .map(|value| ((*field).to_owned(), value.clone()))
        })
        .collect();
    // blackpipe members never restart from a rollback of their own data files.
    repl.insert("rbid", 1);
    Some(repl)
}

fn transactions(node: &NodeContext) -> Document {
    let store = node.store();
    let counts = store.transaction_counts();
    let open = i64::try_from(store.open_transaction_count()).unwrap_or(i64::MAX);
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    doc! {
        "currentOpen": open,
        // Statements run to completion under the store's locks: an open transaction is
        // always between statements, so inactive.
        "currentActive": 0_i64,
        "currentInactive": open,
        "totalStarted": count(counts.started),
        "totalCommitted": count(counts.committed),
        "totalAborted": count(counts.aborted),
    }
}

fn storage_engine() -> Document {
    doc! {
        "name": "inMemory",
        "supportsCommittedReads": true,
        "oldestRequiredTimestampForCrashRecovery": bson::Timestamp { time: 0, increment: 0 },
        "supportsPendingDrops": true,
        "dropPendingIdents": 0_i64,
        "supportsSnapshotReadConcern": true,
        "readOnly": false,
        "persistent": false,
        "backupCursorOpen": false,
    }
}

/// `hostInfo`: the machine blackpipe runs on, as far as the process can read it.
pub(crate) fn host_info() -> Document {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let memory_mib = meminfo_total_kib().map(|kib| i64::try_from(kib / 1024).unwrap_or(i64::MAX));
    let mut system = doc! {
        "currentTime": DateTime::now(),
        "hostname": host_name(),
        "cpuAddrSize": 64,
        "numCores": i64::try_from(cores).unwrap_or(i64::MAX),
        "cpuArch": std::env::consts::ARCH,
        "numaEnabled": false,
    };
    if let Some(mib) = memory_mib {
        system.insert("memSizeMB", mib);
        system.insert("memLimitMB", mib);
    }
    doc! {
        "system": system,
        "os": { "type": os_type(), "name": std::env::consts::OS },
        "extra": {},
    }
}

fn os_type() -> &'static str {
    match std::env::consts::OS {
        "linux" => "Linux",
        "macos" => "Darwin",
        "windows" => "Windows",
        other => other,
    }
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_owned())
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

fn meminfo_total_kib() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|line| line.starts_with("MemTotal:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `getCmdLineOpts`: the command line a mongod with this node's settings would have had
/// (blackpipe's own is not a mongod's), and the same as parsed options.
pub(crate) fn cmd_line_opts(node: &NodeContext) -> Document {
    let port = node
        .host()
        .and_then(|host| {
            host.rsplit_once(':')
                .and_then(|(_, port)| port.parse::<i32>().ok())
        })
        .unwrap_or(27017);
    let bind_ip = node.inner.listener.bind.to_string();
    let (set_name, router) = {
        let state = lock(&node.inner.state);
        let set = (state.topology.kind() == DeploymentKind::ReplicaSet)
            .then(|| state.topology.set_name().to_owned());
        (set, state.topology.kind() == DeploymentKind::Sharded)
    };
    let mut argv = vec![
        if router { "mongos" } else { "mongod" }.to_owned(),
        "--port".to_owned(),
        port.to_string(),
        "--bind_ip".to_owned(),
        bind_ip.clone(),
        "--setParameter".to_owned(),
        "enableTestCommands=1".to_owned(),
    ];
    let mut parsed = doc! {
        "net": { "bindIp": bind_ip, "port": port },
        "setParameter": { "enableTestCommands": "1" },
    };
    if let Some(set_name) = set_name {
        argv.extend(["--replSet".to_owned(), set_name.clone()]);
        parsed.insert("replication", doc! { "replSet": set_name });
    }
    if node.inner.auth_required {
        argv.push("--auth".to_owned());
        parsed.insert("security", doc! { "authorization": "enabled" });
    }
    doc! { "argv": argv, "parsed": parsed }
}

/// The in-memory logs `getLog` knows: blackpipe writes its diagnostics through `tracing`, not
/// into these, so they are always empty.
const LOG_NAMES: [&str; 2] = ["global", "startupWarnings"];

/// `getLog`: `"*"` lists the logs; a log's name returns its (empty) lines. `Err` is the error
/// reply: TypeMismatch when the argument is not a string, OperationFailed for an unknown log.
pub(crate) fn get_log(command: &Document) -> Result<Document, Document> {
    match command.get("getLog") {
        Some(Bson::String(name)) if name == "*" => Ok(doc! { "names": LOG_NAMES.to_vec() }),
        Some(Bson::String(name)) if LOG_NAMES.contains(&name.as_str()) => {
            Ok(doc! { "totalLinesWritten": 0, "log": Vec::<String>::new() })
        }
        Some(Bson::String(name)) => Err(error_reply(
            code::OPERATION_FAILED,
            format!("No log named '{name}'"),
        )),
        other => Err(error_reply(
            code::TYPE_MISMATCH,
            format!(
                "Argument to getLog must be of type String; found {}",
                other.map_or_else(|| "missing".to_owned(), |value| type_name(value).to_owned())
            ),
        )),
    }
}

/// Fields of a `currentOp` command that are options, not conditions on the operations.
const CURRENT_OP_OPTIONS: &[&str] = &[
    "currentOp",
    "$all",
    "$ownOps",
    "$truncateOps",
    "comment",
    "lsid",
    "txnNumber",
    "autocommit",
    "$db",
    "$clusterTime",
    "$readPreference",
    "apiVersion",
    "apiStrict",
    "apiDeprecationErrors",
    "maxTimeMS",
    "readConcern",
];

/// `currentOp`: the node's running operations (itself included) that match the command's
/// other fields as a query, as `{inprog: [...]}`. blackpipe keeps no idle connections'
/// entries, so `$all` changes nothing. `Err` is the error reply of a malformed condition.
pub(crate) fn current_op(node: &NodeContext, command: &Document) -> Result<Document, Document> {
    let filter: Document = command
        .iter()
        .filter(|(key, _)| !CURRENT_OP_OPTIONS.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    let mut matching = Vec::new();
    for op in node
        .process
        .in_progress
        .describe(&node.host().unwrap_or_default(), request::namespace_of)
    {
        if blackpipe_store::filter_matches(&filter, &op)? {
            matching.push(op);
        }
    }
    Ok(doc! { "inprog": matching })
}

/// `killOp`: asks the operation `op` to stop (it answers Interrupted); like mongod, the reply
/// does not say whether such an operation was running. `Err` is the error reply of a missing
/// or malformed `op`.
pub(crate) fn kill_op(node: &NodeContext, command: &Document) -> Result<Document, Document> {
    let opid = match command.get("op") {
        Some(Bson::Int32(n)) => u64::try_from(*n).ok(),
        Some(Bson::Int64(n)) => u64::try_from(*n).ok(),
        Some(Bson::Double(n)) if n.fract() == 0.0 && *n >= 0.0 => Some(*n as u64),
        Some(_) => {
            return Err(error_reply(
                code::TYPE_MISMATCH,
                "Did not provide \"op\" field of a numeric type",
            ));
        }
        None => return Err(error_reply(code::BAD_VALUE, "Did not provide \"op\" field")),
    };
    if let Some(opid) = opid {
        node.process.in_progress.kill(opid);
    }
    Ok(doc! { "info": "attempting to kill op" })
}

/// `profile`: blackpipe has no profiler, so its level is always 0 (off): `-1` and `0` answer
/// `{was: 0, slowms: 100, sampleRate: 1}` (mongod's defaults) and levels 1 and 2 are refused
/// with IllegalOperation rather than accepted and never recorded.
pub(crate) fn profile(command: &Document) -> Result<Document, Document> {
    let level = match command.get("profile") {
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        Some(Bson::Double(n)) if n.fract() == 0.0 => *n as i64,
        _ => {
            return Err(error_reply(
                code::TYPE_MISMATCH,
                "BSON field 'profile' is the wrong type, expected a number",
            ));
        }
    };
    match level {
        -1 | 0 => Ok(doc! { "was": 0, "slowms": 100, "sampleRate": 1.0 }),
        1 | 2 => Err(error_reply(
            code::ILLEGAL_OPERATION,
            "blackpipe has no profiler: profiling levels 1 and 2 are not supported",
        )),
        other => Err(error_reply(
            code::BAD_VALUE,
            format!("Invalid profiling level: {other}"),
        )),
    }
}

/// An `aggregate` whose first stage is `$currentOp`, rewritten for the store: the node's
/// running operations become a `$documents` stage the rest of the pipeline reads, as mongod
/// feeds them to it. `None` for any other command; `Err` is the error reply of a misplaced or
/// malformed `$currentOp` (mongod's codes).
pub(crate) fn current_op_stage(
    node: &NodeContext,
    database: &str,
    command: &Document,
) -> Option<Result<Document, Document>> {
    if !command.contains_key("aggregate") {
        return None;
    }
    let stages = command.get_array("pipeline").ok()?;
    let position = stages.iter().position(|stage| {
        stage
            .as_document()
            .is_some_and(|stage| stage.contains_key("$currentOp"))
    })?;
    let collectionless = matches!(
        command.get("aggregate"),
        Some(Bson::Int32(1) | Bson::Int64(1))
    ) || matches!(command.get("aggregate"), Some(Bson::Double(n)) if *n == 1.0);
    if position != 0 {
        return Some(Err(error_reply(
            40602,
            "$currentOp is only valid as the first stage in a pipeline",
        )));
    }
    if database != "admin" || !collectionless {
        return Some(Err(error_reply(
            code::INVALID_NAMESPACE,
            "$currentOp must be run against the 'admin' database with {aggregate: 1}",
        )));
    }
    let options = stages[0]
        .as_document()
        .and_then(|stage| stage.get("$currentOp"));
    if !matches!(options, Some(Bson::Document(_))) {
        return Some(Err(error_reply(
            code::FAILED_TO_PARSE,
            "$currentOp options must be specified in an object",
        )));
    }
    let operations: Vec<Bson> = node
        .process
        .in_progress
        .describe(&node.host().unwrap_or_default(), request::namespace_of)
        .into_iter()
        // Literal: an operation's command has `$`-prefixed fields (`$db`), which `$documents`
        // (an expression) would read as operators.
        .map(|operation| Bson::Document(doc! { "$literal": operation }))
        .collect();
    let mut pipeline = vec![Bson::Document(doc! { "$documents": operations })];
    pipeline.extend(stages[1..].iter().cloned());
    let mut rewritten = command.clone();
    rewritten.insert("pipeline", pipeline);
    Some(Ok(rewritten))
}
