//! The monitoring connection: opened without authentication, it runs the handshake and then the
//! hello commands of the polling and streaming protocols (server-monitoring.md).

use std::time::{Duration, Instant};

use bson::{Document, RawDocumentBuf, doc};
use steadfast_core::description::TopologyVersion;
use steadfast_core::sdam::HeartbeatFailure;
use steadfast_core::{IoLimit, ServerAddress};
use steadfast_wire::{MsgFlags, OpMsg};

use crate::conn::Connection;
use crate::conn::config::ConnectionConfig;
use crate::conn::description::StreamDescription;
use crate::error::{CommandError, ConnectionFailure, Error, ErrorFacts, Result, reply_is_ok};
use crate::handshake::handshake_command;
use crate::runtime;

/// One hello reply and how long it took.
#[derive(Debug)]
pub(super) struct HelloReply {
    /// The reply document (`ok: 1`).
    pub(super) document: Document,
    /// From sending the command to having the reply parsed.
    pub(super) duration: Duration,
}

/// A connection used only by a monitor (or its RTT task): never authenticated, never pooled.
#[derive(Debug)]
pub(super) struct MonitorConnection {
    connection: Connection,
    /// Whether the server said `helloOk: true` (or a Stable API version is declared), so that
    /// `hello` replaces legacy hello.
    hello_ok: bool,
}

/// Deadline `now + limit`, or none when there is no limit.
fn deadline_after(limit: Option<Duration>) -> Option<Instant> {
    limit.map(|limit| runtime::now() + limit)
}

impl MonitorConnection {
    /// Opens a stream and runs the handshake; the handshake reply satisfies the check that
    /// opened the connection. `config` must carry no credential: monitors never authenticate.
    ///
    /// # Errors
    /// Network, timeout and TLS errors of the connection; a command error when the server
    /// answers the handshake with `ok: 0`; a protocol error for a malformed reply.
    ///
    /// # Cancel safety
    /// Dropping the future closes the half-open connection.
    pub(super) async fn open(
        id: u64,
        address: &ServerAddress,
        config: &ConnectionConfig,
    ) -> Result<(MonitorConnection, HelloReply)> {
        debug_assert!(
            config.auth.is_none(),
            "monitoring connections never authenticate"
        );
        let stream = config.open_stream(address).await?;
        // The monitor sets an explicit deadline on every exchange (the streaming protocol needs
        // connectTimeoutMS + heartbeatFrequencyMS), so the connection has no socket timeout.
        let mut connection = Connection::new(id, address.clone(), stream, None);
        let mut command = handshake_command(config, None);
        command.insert("$db", "admin");
        let reply = exchange(
            &mut connection,
            OpMsg::new(encode(&command)?),
            deadline_after(config.connect_timeout),
        )
        .await?;
        let description =
            StreamDescription::from_handshake_reply(address, &reply.document, &config.compressors)
                .map_err(|e| e.with_address(address))?;
        let hello_ok = config.server_api.is_some() || description.hello_ok;
        connection.set_description(description);
        Ok((
            MonitorConnection {
                connection,
                hello_ok,
            },
            reply,
        ))
    }

    /// Whether the connection failed or an exchange on it was abandoned midway.
    pub(super) fn is_broken(&self) -> bool {
        self.connection.is_broken()
    }

    /// Whether the server streams replies (the last one carried moreToCome).
    pub(super) fn is_streaming(&self) -> bool {
        self.connection.is_streaming()
    }

    /// A regular hello (polling protocol, RTT measurement).
    ///
    /// # Errors
    /// As [`MonitorConnection::open`].
    ///
    /// # Cancel safety
    /// Not cancel safe: a dropped future leaves the connection broken (drop it).
    pub(super) async fn hello(
        &mut self,
        config: &ConnectionConfig,
        timeout: Option<Duration>,
    ) -> Result<HelloReply> {
        let command = self.hello_command(config);
        self.send(OpMsg::new(encode(&command)?), deadline_after(timeout))
            .await
    }

    /// An awaitable hello with exhaustAllowed (streaming protocol): the server answers when its
    /// topologyVersion moves past `version` or after `max_await`, and then keeps streaming.
    ///
    /// # Errors
    /// As [`MonitorConnection::open`].
    ///
    /// # Cancel safety
    /// Not cancel safe: a dropped future leaves the connection broken (drop it).
    pub(super) async fn awaitable_hello(
        &mut self,
        config: &ConnectionConfig,
        version: &TopologyVersion,
        max_await: Duration,
        timeout: Option<Duration>,
    ) -> Result<HelloReply> {
        let mut command = self.hello_command(config);
        command.insert(
            "topologyVersion",
            doc! { "processId": version.process_id, "counter": version.counter },
        );
        command.insert(
            "maxAwaitTimeMS",
            i64::try_from(max_await.as_millis()).unwrap_or(i64::MAX),
        );
        let message = OpMsg::new(encode(&command)?).with_flags(MsgFlags::EXHAUST_ALLOWED);
        self.send(message, deadline_after(timeout)).await
    }

    /// Reads the next reply the server streams on its own.
    ///
    /// # Errors
    /// As [`MonitorConnection::open`].
    ///
    /// # Cancel safety
    /// Not cancel safe: a dropped future leaves the connection broken (drop it).
    pub(super) async fn next_streamed(&mut self, timeout: Option<Duration>) -> Result<HelloReply> {
        let started = runtime::now();
        let reply = self
            .connection
            .next_streamed_reply(IoLimit::SocketTimeout(deadline_after(timeout)))
            .await?;
        let reply = parse_reply(reply, started)?;
        self.note_hello_ok(&reply.document);
        Ok(reply)
    }

    fn hello_command(&self, config: &ConnectionConfig) -> Document {
        let mut command = if self.hello_ok {
            doc! { "hello": 1 }
        } else {
            doc! { "isMaster": 1, "helloOk": true }
        };
        if let Some(api) = &config.server_api {
            api.append_to(&mut command);
        }
        command.insert("$db", "admin");
        command
    }

    async fn send(&mut self, message: OpMsg, deadline: Option<Instant>) -> Result<HelloReply> {
        let reply = exchange(&mut self.connection, message, deadline).await?;
        self.note_hello_ok(&reply.document);
        Ok(reply)
    }

    /// The server decides again with every reply whether `hello` may be used.
    fn note_hello_ok(&mut self, reply: &Document) {
        if !self.hello_ok {
            self.hello_ok = reply.get_bool("helloOk").unwrap_or(false);
        }
    }
}

fn encode(command: &Document) -> Result<RawDocumentBuf> {
    RawDocumentBuf::try_from(command)
        .map_err(|e| Error::invalid_argument("a hello command cannot be encoded").with_source(e))
}

async fn exchange(
    connection: &mut Connection,
    message: OpMsg,
    deadline: Option<Instant>,
) -> Result<HelloReply> {
    let started = runtime::now();
    let reply = connection
        .send_message(message, IoLimit::SocketTimeout(deadline))
        .await?;
    parse_reply(reply, started)
}

/// Reads a hello reply; `ok: 0` becomes a command error.
fn parse_reply(reply: OpMsg, started: Instant) -> Result<HelloReply> {
    let document = Document::try_from(reply.body)
        .map_err(|e| Error::protocol("the hello reply is not valid BSON").with_source(e))?;
    let duration = runtime::now().saturating_duration_since(started);
    if !reply_is_ok(&document) {
        return Err(CommandError::from_reply(&document).into());
    }
    Ok(HelloReply { document, duration })
}

/// How a failed check is reported to core: timeouts, other I/O failures, or `ok: 0`.
pub(super) fn heartbeat_failure(error: &Error) -> HeartbeatFailure {
    match error.facts() {
        ErrorFacts::Connection(ConnectionFailure::Timeout) => {
            HeartbeatFailure::NetworkTimeout(error.to_string())
        }
        ErrorFacts::Command(reply) => HeartbeatFailure::Command(reply),
        // Resets, refused connections, TLS failures and malformed replies all leave the
        // connection unusable: the monitor treats them as network errors.
        _ => HeartbeatFailure::Network(error.to_string()),
    }
}
