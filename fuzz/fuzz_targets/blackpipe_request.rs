//! Fuzzes blackpipe's request path end to end: bytes go to a live standalone deployment over
//! a fresh TCP connection, and afterwards a `ping` on another connection must still answer
//! `ok: 1`. libfuzzer-sys's panic hook aborts on a panic in any thread, so a panicking
//! connection task is a crash; the liveness check makes a server that stopped answering or
//! wedged without panicking one too (`abort()`).
//!
//! Input layout: byte 0 picks the mode, byte 1 a parameter, the rest is the payload.
//!
//! - mode 0, raw frames: the payload is written as is, in up to four pieces (byte 1 picks the
//!   split), so framing, partial reads and every opcode are reachable.
//! - mode 1, OP_MSG body: the payload becomes the body section of a correctly framed OP_MSG
//!   (byte 1 sets flag bits), so BSON validation and command parsing are reachable even when
//!   the payload is not a document.
//! - mode 2, command: the payload is parsed as a BSON document whose fields become the
//!   arguments of a real command name (byte 1 picks it from the real command names), framed as a valid
//!   OP_MSG, so the fuzzer spends its time in command handling rather than in framing.
//!
//! Inputs naming a control command that legitimately stops or scripts the server (`shutdown`,
//! `{blackpipe: ...}`, `configureFailPoint`, `replSet*`) are skipped: after them a failing ping
//! would not be a bug. Every [`RESTART_EVERY`] inputs the deployment is replaced so that the
//! store cannot grow without bound over a long run.
//!
//! Run with `cargo +nightly fuzz run blackpipe_request seeds/blackpipe_request`.

#![no_main]

use std::net::SocketAddr;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{Bson, Document, RawDocumentBuf, doc};
use libfuzzer_sys::fuzz_target;
use steadfast_wire::{Body, DEFAULT_MAX_MESSAGE_SIZE, FrameDecoder, Message, OpMsg};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::runtime::Runtime;

/// Commands a standalone answers outside the store (handshake, admin, sessions, transactions);
/// with the store's own [`blackpipe::store::COMMANDS`] they are the names mode 2 wraps the
/// payload in.
const DEPLOYMENT_COMMANDS: &[&str] = &[
    "hello",
    "isMaster",
    "ping",
    "buildInfo",
    "commitTransaction",
    "abortTransaction",
    "bulkWrite",
    "collMod",
    "collStats",
    "serverStatus",
    "killAllSessions",
];

/// The `index`-th real command name, wrapping around the store's and the deployment's lists.
fn command_name(index: usize) -> &'static str {
    let store = blackpipe::store::COMMANDS;
    let index = index % (store.len() + DEPLOYMENT_COMMANDS.len());
    store
        .get(index)
        .copied()
        .unwrap_or_else(|| DEPLOYMENT_COMMANDS[index - store.len()])
}

/// Byte strings that name commands which stop, partition or script the server on purpose.
const SKIPPED: &[&[u8]] = &[b"shutdown", b"blackpipe", b"configureFailPoint", b"replSet"];

/// How many inputs one deployment serves before it is replaced with an empty one.
const RESTART_EVERY: u64 = 2_000;

/// How long the harness waits for the server to finish with an input's connection. A server
/// may rightly hold a connection open (an awaitable hello), so running out is not a failure.
const DRAIN_FOR: Duration = Duration::from_millis(300);

/// How long the liveness ping may take before the server counts as wedged.
const PING_WITHIN: Duration = Duration::from_secs(10);

/// The process-wide server under test.
struct Harness {
    runtime: Runtime,
    state: Mutex<State>,
}

/// The current deployment and how many inputs it has served.
struct State {
    deployment: Deployment,
    served: u64,
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime starts");
        let deployment = runtime.block_on(start_deployment());
        Harness {
            runtime,
            state: Mutex::new(State {
                deployment,
                served: 0,
            }),
        }
    })
}

async fn start_deployment() -> Deployment {
    Deployment::start(DeploymentConfig::standalone())
        .await
        .expect("a standalone deployment starts on 127.0.0.1")
}

fn address(deployment: &Deployment) -> SocketAddr {
    let host = deployment.host(0).expect("a standalone has node 0");
    host.parse().expect("blackpipe hosts are 127.0.0.1:port")
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 || SKIPPED.iter().any(|name| contains(data, name)) {
        return;
    }
    let harness = harness();
    let mut state = harness
        .state
        .lock()
        .unwrap_or_else(|poison| poison.into_inner());
    harness.runtime.block_on(async {
        if state.served >= RESTART_EVERY {
            state.deployment.stop().await;
            state.deployment = start_deployment().await;
            state.served = 0;
        }
        state.served += 1;
        let address = address(&state.deployment);
        let chunks = input_chunks(data[0], data[1], &data[2..]);
        send_and_drain(address, &chunks).await;
        if let Err(failure) = ping(address).await {
            eprintln!("blackpipe stopped answering after this input: {failure}");
            std::process::abort();
        }
    });
});

/// The byte chunks one input writes, each flushed on its own.
fn input_chunks(mode: u8, parameter: u8, payload: &[u8]) -> Vec<Vec<u8>> {
    match mode % 3 {
        0 => split_in_pieces(payload, parameter),
        1 => vec![op_msg_frame(u32::from(parameter) & 0b11, payload)],
        _ => {
            let name = command_name(usize::from(parameter));
            match command_body(name, payload) {
                Some(body) => vec![op_msg_frame(0, &body)],
                None => vec![op_msg_frame(0, payload)],
            }
        }
    }
}

/// Up to four pieces cut at points derived from `parameter`.
fn split_in_pieces(payload: &[u8], parameter: u8) -> Vec<Vec<u8>> {
    let mut cuts: Vec<usize> = (0..3)
        .map(|shift| {
            let fraction = usize::from((parameter >> (shift * 2)) & 0b11);
            payload.len() * fraction / 4
        })
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut pieces = Vec::new();
    let mut start = 0;
    for cut in cuts.into_iter().chain([payload.len()]) {
        if cut > start {
            pieces.push(payload[start..cut].to_vec());
            start = cut;
        }
    }
    pieces
}

/// `payload` parsed as a document, renamed into `name`'s command with `$db` set.
fn command_body(name: &str, payload: &[u8]) -> Option<Vec<u8>> {
    let arguments = Document::from_reader(payload).ok()?;
    let mut fields = arguments.into_iter();
    let target = fields
        .next()
        .map_or(Bson::String("fuzz".into()), |(_, value)| value);
    let mut command = doc! { name: target };
    let mut has_db = false;
    for (key, value) in fields {
        has_db |= key == "$db";
        command.insert(key, value);
    }
    if !has_db {
        command.insert("$db", "fuzz");
    }
    let body = RawDocumentBuf::try_from(&command).ok()?;
    Some(body.into_bytes())
}

/// An OP_MSG frame whose header and single body section are well formed around `body`.
fn op_msg_frame(flags: u32, body: &[u8]) -> Vec<u8> {
    let length = 16 + 4 + 1 + body.len();
    let mut frame = Vec::with_capacity(length);
    frame.extend_from_slice(&i32::try_from(length).unwrap_or(i32::MAX).to_le_bytes());
    frame.extend_from_slice(&7_i32.to_le_bytes());
    frame.extend_from_slice(&0_i32.to_le_bytes());
    frame.extend_from_slice(&2013_i32.to_le_bytes());
    frame.extend_from_slice(&flags.to_le_bytes());
    frame.push(0);
    frame.extend_from_slice(body);
    frame
}

/// Writes the chunks on a fresh connection, closes the write half, and reads whatever the
/// server sends until it hangs up or [`DRAIN_FOR`] passes.
async fn send_and_drain(address: SocketAddr, chunks: &[Vec<u8>]) {
    let Ok(mut stream) = TcpStream::connect(address).await else {
        return;
    };
    for chunk in chunks {
        if stream.write_all(chunk).await.is_err() || stream.flush().await.is_err() {
            return;
        }
    }
    let _ = stream.shutdown().await;
    let mut sink = vec![0_u8; 64 * 1024];
    let drain = async {
        while let Ok(count) = stream.read(&mut sink).await {
            if count == 0 {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_FOR, drain).await;
}

/// Pings over a fresh connection; `Err` says why the server did not answer `ok: 1`.
async fn ping(address: SocketAddr) -> Result<(), String> {
    match tokio::time::timeout(PING_WITHIN, ping_once(address)).await {
        Ok(result) => result,
        Err(_) => Err(format!("no ping reply within {PING_WITHIN:?}")),
    }
}

async fn ping_once(address: SocketAddr) -> Result<(), String> {
    let mut stream = TcpStream::connect(address)
        .await
        .map_err(|error| format!("connect: {error}"))?;
    let body = RawDocumentBuf::try_from(&doc! { "ping": 1, "$db": "admin" })
        .map_err(|error| error.to_string())?;
    let frame = Message::new(1, 0, Body::Msg(OpMsg::new(body)))
        .to_bytes(None, DEFAULT_MAX_MESSAGE_SIZE)
        .map_err(|error| error.to_string())?;
    stream
        .write_all(&frame)
        .await
        .map_err(|error| format!("write: {error}"))?;
    let mut decoder = FrameDecoder::new(DEFAULT_MAX_MESSAGE_SIZE);
    let mut chunk = vec![0_u8; 16 * 1024];
    loop {
        if let Some(reply) = decoder.next_message().map_err(|error| error.to_string())? {
            return check_ok(&reply);
        }
        match stream.read(&mut chunk).await {
            Ok(0) => return Err("the server closed the ping connection".into()),
            Ok(count) => decoder.extend(&chunk[..count]),
            Err(error) => return Err(format!("read: {error}")),
        }
    }
}

fn check_ok(reply: &Message) -> Result<(), String> {
    let Body::Msg(msg) = &reply.body else {
        return Err(format!("ping answered with {:?}", reply.body));
    };
    let document = Document::try_from(msg.body.as_ref()).map_err(|error| error.to_string())?;
    match document.get("ok") {
        Some(Bson::Double(ok)) if *ok == 1.0 => Ok(()),
        Some(Bson::Int32(1)) | Some(Bson::Int64(1)) => Ok(()),
        _ => Err(format!("ping answered {document}")),
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}
