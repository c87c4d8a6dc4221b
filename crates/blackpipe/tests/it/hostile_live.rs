//! Hostile frames against a live deployment: random bytes and mutations of valid OP_MSG
//! commands (bit flips, truncation, edited lengths, random bodies for real command names), each
//! on a fresh connection. Whatever comes back must be well-formed frames, and a `ping` on
//! another connection must still answer `ok: 1` after every case.

use std::net::SocketAddr;
use std::time::Duration;

use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{Bson, Document, doc};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use steadfast_wire::{DEFAULT_MAX_MESSAGE_SIZE, FrameDecoder, Message, OpMsg};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{RawClient, raw};

/// Enough cases to reach every mutation on every command, cheap enough for CI (each is a
/// couple of loopback round trips).
const CASES: u32 = 300;

/// A guard against a connection the server rightly keeps open; reaching it is not a failure,
/// it only skips the reply check for that case.
const DRAIN_GUARD: Duration = Duration::from_secs(2);

/// Commands answered outside the store (handshake, deployment, transactions); with the store's
/// own [`blackpipe::store::COMMANDS`] they are the real names random bodies are aimed at.
const DEPLOYMENT_COMMANDS: &[&str] = &[
    "hello",
    "isMaster",
    "buildInfo",
    "commitTransaction",
    "abortTransaction",
];

/// Argument names the commands read, so random bodies hit their parsers. `maxAwaitTimeMS`
/// is left out: an awaitable hello legitimately holds its connection.
const FIELDS: &[&str] = &[
    "documents",
    "updates",
    "deletes",
    "filter",
    "query",
    "q",
    "u",
    "update",
    "limit",
    "multi",
    "upsert",
    "sort",
    "projection",
    "pipeline",
    "cursor",
    "batchSize",
    "key",
    "indexes",
    "to",
    "lsid",
    "txnNumber",
    "autocommit",
    "startTransaction",
    "ordered",
    "writeConcern",
    "readConcern",
    "collection",
    "cursors",
    "$db",
];

/// Valid commands whose frames the mutations start from.
fn valid_commands() -> Vec<Document> {
    vec![
        doc! { "ping": 1, "$db": "admin" },
        doc! { "insert": "orders", "documents": [{ "_id": 1, "qty": 2 }], "$db": "hostile" },
        doc! { "find": "orders", "filter": { "qty": { "$gt": 1 } }, "batchSize": 1, "$db": "hostile" },
        doc! { "update": "orders", "updates": [{ "q": { "_id": 1 }, "u": { "$inc": { "qty": 1 } }, "upsert": true }], "$db": "hostile" },
        doc! { "aggregate": "orders", "pipeline": [{ "$group": { "_id": "$qty", "n": { "$sum": 1 } } }], "cursor": {}, "$db": "hostile" },
        doc! { "delete": "orders", "deletes": [{ "q": {}, "limit": 0 }], "$db": "hostile" },
        doc! { "hello": 1, "helloOk": true, "$db": "admin" },
        doc! { "listDatabases": 1, "nameOnly": true, "$db": "admin" },
    ]
}

fn frame(command: &Document) -> Vec<u8> {
    Message::new(1, 0, OpMsg::new(raw(command)))
        .to_bytes(None, DEFAULT_MAX_MESSAGE_SIZE)
        .expect("test commands encode")
}

/// What a case does to a valid frame.
#[derive(Debug, Clone)]
enum Mutation {
    /// Flip bit `bit` of the byte at `at` (modulo the length).
    FlipBit { at: usize, bit: u8 },
    /// Keep only the first `keep` bytes (modulo the length).
    Truncate { keep: usize },
    /// Rewrite the header's message length.
    SetLength(i32),
    /// Rewrite the body document's own length prefix (at offset 21).
    SetBodyLength(i32),
    /// Overwrite from `at` with random bytes.
    Overwrite { at: usize, bytes: Vec<u8> },
}

impl Mutation {
    fn apply(&self, frame: &mut Vec<u8>) {
        let len = frame.len();
        match self {
            Mutation::FlipBit { at, bit } => frame[at % len] ^= 1 << (bit % 8),
            Mutation::Truncate { keep } => frame.truncate(keep % len),
            Mutation::SetLength(length) => overwrite(frame, 0, &length.to_le_bytes()),
            Mutation::SetBodyLength(length) => overwrite(frame, 21, &length.to_le_bytes()),
            Mutation::Overwrite { at, bytes } => overwrite(frame, at % len, bytes),
        }
    }
}

/// Writes `bytes` from `at`, as far as the frame goes (an earlier truncation may have cut it).
fn overwrite(frame: &mut [u8], at: usize, bytes: &[u8]) {
    for (slot, byte) in frame.iter_mut().skip(at).zip(bytes) {
        *slot = *byte;
    }
}

/// Lengths around the interesting edges: below the header, off by one, negative, huge.
fn edge_length() -> impl Strategy<Value = i32> {
    prop_oneof![
        Just(0),
        Just(15),
        Just(16),
        Just(-1),
        Just(i32::MIN),
        Just(i32::MAX),
        Just(48_000_001),
        any::<i32>(),
        0_i32..512,
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, bit)| Mutation::FlipBit { at, bit }),
        any::<usize>().prop_map(|keep| Mutation::Truncate { keep }),
        edge_length().prop_map(Mutation::SetLength),
        edge_length().prop_map(Mutation::SetBodyLength),
        (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(at, bytes)| Mutation::Overwrite { at, bytes }),
    ]
}

/// Random BSON values, nested a few levels, with the types command parsers must reject.
fn bson_value() -> impl Strategy<Value = Bson> {
    let leaf = prop_oneof![
        any::<i32>().prop_map(Bson::Int32),
        any::<i64>().prop_map(Bson::Int64),
        any::<f64>().prop_map(Bson::Double),
        any::<bool>().prop_map(Bson::Boolean),
        "[a-z$.]{0,8}".prop_map(Bson::String),
        Just(Bson::Null),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Bson::Array),
            proptest::collection::vec((field_name(), inner), 0..4)
                .prop_map(|fields| Bson::Document(fields.into_iter().collect())),
        ]
    })
}

fn field_name() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(FIELDS).prop_map(str::to_owned),
        "[a-z$.]{1,6}",
    ]
}

/// Every real command name: the store's and the deployment's.
fn command_names() -> Vec<&'static str> {
    blackpipe::store::COMMANDS
        .iter()
        .chain(DEPLOYMENT_COMMANDS)
        .copied()
        .collect()
}

/// A real command name with random arguments.
fn random_command() -> impl Strategy<Value = Document> {
    (
        proptest::sample::select(command_names()),
        bson_value(),
        proptest::collection::vec((field_name(), bson_value()), 0..5),
    )
        .prop_map(|(name, target, arguments)| {
            let mut command = doc! { name: target };
            for (key, value) in arguments {
                command.insert(key, value);
            }
            if !command.contains_key("$db") {
                command.insert("$db", "hostile");
            }
            command
        })
}

/// The bytes of one case.
fn hostile_bytes() -> impl Strategy<Value = Vec<u8>> {
    let valid = proptest::sample::select(valid_commands());
    prop_oneof![
        3 => (valid, proptest::collection::vec(mutation(), 1..4)).prop_map(|(command, mutations)| {
            let mut bytes = frame(&command);
            for mutation in &mutations {
                if !bytes.is_empty() {
                    mutation.apply(&mut bytes);
                }
            }
            bytes
        }),
        2 => random_command().prop_map(|command| frame(&command)),
        1 => proptest::collection::vec(any::<u8>(), 0..96),
    ]
}

/// Sends `bytes` on a fresh connection, closes the write half and collects the reply bytes.
/// `None` when the server still held the connection at [`DRAIN_GUARD`].
async fn send_and_collect(address: SocketAddr, bytes: &[u8]) -> Option<Vec<u8>> {
    let mut stream = TcpStream::connect(address).await.expect("connect");
    // The server may hang up before reading everything: a failed write is an answer too.
    if stream.write_all(bytes).await.is_ok() {
        let _ = stream.shutdown().await;
    }
    let mut received = Vec::new();
    let drained = tokio::time::timeout(DRAIN_GUARD, async {
        let mut chunk = [0_u8; 16 * 1024];
        while let Ok(count) = stream.read(&mut chunk).await {
            if count == 0 {
                break;
            }
            received.extend_from_slice(&chunk[..count]);
        }
    })
    .await;
    drained.ok().map(|()| received)
}

/// Every byte the server sent must belong to a frame that decodes.
fn check_frames(received: &[u8]) -> Result<(), TestCaseError> {
    let mut decoder = FrameDecoder::new(DEFAULT_MAX_MESSAGE_SIZE);
    decoder.extend(received);
    loop {
        match decoder.next_message() {
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(error) => return Err(TestCaseError::fail(format!("bad reply frame: {error}"))),
        }
    }
    prop_assert_eq!(decoder.buffered_len(), 0, "the server sent a partial frame");
    Ok(())
}

#[test]
fn hostile_frames_never_stop_a_live_deployment() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let deployment = runtime
        .block_on(Deployment::start(DeploymentConfig::standalone()))
        .expect("a standalone starts");
    let address: SocketAddr = deployment
        .host(0)
        .expect("node 0")
        .parse()
        .expect("host:port");
    let config = ProptestConfig {
        cases: CASES,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&hostile_bytes(), |bytes| {
        runtime.block_on(async {
            if let Some(received) = send_and_collect(address, &bytes).await {
                check_frames(&received)?;
            }
            let mut probe = RawClient::connect(address).await;
            let reply = probe.round_trip(doc! { "ping": 1, "$db": "admin" }).await;
            prop_assert_eq!(reply.get("ok"), Some(&Bson::Double(1.0)), "{}", reply);
            Ok(())
        })
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
    runtime.block_on(deployment.stop());
}
