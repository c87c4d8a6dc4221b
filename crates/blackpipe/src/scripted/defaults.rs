//! Default answers for the commands every client sends whether or not a test cares: hello
//! (and legacy hello), ping, buildInfo and endSessions.

use bson::{Bson, DateTime, Document, doc};

use crate::server::{ConnectionInfo, Reaction, Request};

/// Which commands a scripted server answers on its own (after the test's rules).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DefaultResponders {
    /// `hello`, `isMaster`, `ismaster`, with the configured hello document.
    pub hello: bool,
    /// `ping`, with `{ok: 1}`.
    pub ping: bool,
    /// `buildInfo` / `buildinfo`, with a version document.
    pub build_info: bool,
    /// `endSessions`, with `{ok: 1}`.
    pub end_sessions: bool,
}

impl Default for DefaultResponders {
    /// Every default responder on.
    fn default() -> Self {
        Self {
            hello: true,
            ping: true,
            build_info: true,
            end_sessions: true,
        }
    }
}

impl DefaultResponders {
    /// No default responder: the test sees every request.
    pub fn none() -> Self {
        Self {
            hello: false,
            ping: false,
            build_info: false,
            end_sessions: false,
        }
    }

    /// Turns the hello responder on or off.
    #[must_use]
    pub fn with_hello(mut self, on: bool) -> Self {
        self.hello = on;
        self
    }

    /// Turns the ping responder on or off.
    #[must_use]
    pub fn with_ping(mut self, on: bool) -> Self {
        self.ping = on;
        self
    }

    /// Turns the buildInfo responder on or off.
    #[must_use]
    pub fn with_build_info(mut self, on: bool) -> Self {
        self.build_info = on;
        self
    }

    /// Turns the endSessions responder on or off.
    #[must_use]
    pub fn with_end_sessions(mut self, on: bool) -> Self {
        self.end_sessions = on;
        self
    }

    /// The default responder for `request`, if one is on.
    pub(crate) fn kind_for(&self, request: &Request) -> Option<DefaultKind> {
        let kind = match request.command_name() {
            "hello" | "isMaster" | "ismaster" => DefaultKind::Hello,
            "ping" => DefaultKind::Ping,
            "buildInfo" | "buildinfo" => DefaultKind::BuildInfo,
            "endSessions" => DefaultKind::EndSessions,
            _ => return None,
        };
        let on = match kind {
            DefaultKind::Hello => self.hello,
            DefaultKind::Ping => self.ping,
            DefaultKind::BuildInfo => self.build_info,
            DefaultKind::EndSessions => self.end_sessions,
        };
        on.then_some(kind)
    }
}

/// The commands with a default responder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DefaultKind {
    Hello,
    Ping,
    BuildInfo,
    EndSessions,
}

/// The default hello document: a standalone, writable, wire versions 0 to 25, mongod's
/// default limits. `connectionId` and `localTime` are not part of it: they are filled in for
/// each reply unless a test's document sets them.
pub fn standalone_hello() -> Document {
    doc! {
        "helloOk": true,
        "isWritablePrimary": true,
        "maxBsonObjectSize": 16 * 1024 * 1024,
        "maxMessageSizeBytes": 48_000_000,
        "maxWriteBatchSize": 100_000,
        "logicalSessionTimeoutMinutes": 30,
        "minWireVersion": 0,
        "maxWireVersion": 25,
        "readOnly": false,
        "ok": 1.0,
    }
}

/// The default answer of `kind` to `request`.
pub(crate) fn respond(
    kind: DefaultKind,
    request: &Request,
    connection: &ConnectionInfo,
    hello_template: &Document,
) -> Reaction {
    match kind {
        DefaultKind::Hello => Reaction::Reply(hello_reply(request, connection, hello_template)),
        DefaultKind::Ping | DefaultKind::EndSessions => Reaction::ok(),
        DefaultKind::BuildInfo => Reaction::Reply(doc! {
            "version": blackpipe_store::SERVER_VERSION,
            "gitVersion": "blackpipe",
            "versionArray": [8, 0, 0, 0],
            "bits": 64,
            "maxBsonObjectSize": 16 * 1024 * 1024,
            "ok": 1.0,
        }),
    }
}

/// The hello reply: the template, with `isWritablePrimary` spelled `ismaster` for legacy hello
/// (as mongod answers), plus this connection's id and the current time.
fn hello_reply(request: &Request, connection: &ConnectionInfo, template: &Document) -> Document {
    let legacy = request.command_name() != "hello";
    let mut reply = Document::new();
    for (key, value) in template {
        if legacy && key == "isWritablePrimary" {
            reply.insert("ismaster", value.clone());
        } else {
            reply.insert(key.clone(), value.clone());
        }
    }
    if !reply.contains_key("connectionId") {
        let id = connection.id.get();
        let id = i32::try_from(id).map_or_else(|_| Bson::Int64(id as i64), Bson::Int32);
        reply.insert("connectionId", id);
    }
    if !reply.contains_key("localTime") {
        reply.insert("localTime", DateTime::now());
    }
    if let Some(ok) = reply.remove("ok") {
        // Keep `ok` last, where mongod puts it.
        reply.insert("ok", ok);
    }
    reply
}
