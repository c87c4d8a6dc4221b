//! One connection's authentication: the conversation in progress, who has authenticated,
//! and the `saslStart` / `saslContinue` / speculative `hello` replies.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use bson::spec::BinarySubtype;
use bson::{Binary, Bson, Document, doc};
use rand::RngCore;

use super::aws::{self, AwsPending};
use super::error::AuthError;
use super::scram::{self, ScramCredential};
use super::users::{Mechanism, Users};
use super::{MAX_CONVERSATIONS_PER_CONNECTION, MAX_PAYLOAD_BYTES};

/// mongod numbers the only conversation of a connection 1.
const CONVERSATION_ID: i32 = 1;

/// Random bytes in the server's half of the nonce (mongod uses 24).
const SERVER_NONCE_BYTES: usize = 24;

/// Whether mongod refuses `command` on a connection that has not authenticated: everything
/// but what a client needs to connect and authenticate, and the few commands mongod declares
/// free of authentication (`ping`, `buildInfo`, `connectionStatus`). `endSessions` is not
/// among them: mongod refuses it too, and drivers ignore that error.
pub fn requires_authentication(command: &str) -> bool {
    !matches!(
        command,
        "hello"
            | "isMaster"
            | "ismaster"
            | "saslStart"
            | "saslContinue"
            | "authenticate"
            | "ping"
            | "buildInfo"
            | "buildinfo"
            | "connectionStatus"
    )
}

/// Where a conversation is.
#[derive(Debug, Clone)]
enum Stage {
    /// The server-first message was sent; the client's proof comes next.
    AwaitingProof {
        credential: ScramCredential,
        client_first_bare: String,
        server_first: String,
        gs2_header: String,
        nonce: String,
    },
    /// The proof held; the client owes an empty message (no `skipEmptyExchange`).
    AwaitingEmpty,
}

#[derive(Debug, Clone)]
struct Conversation {
    mechanism: Mechanism,
    user: (String, String),
    skip_empty_exchange: bool,
    stage: Stage,
}

/// One connection's authentication state (kept in the connection's extensions).
#[derive(Debug, Clone, Default)]
pub struct ConnectionAuth {
    user: Option<(String, String)>,
    conversation: Option<Conversation>,
    /// A MONGODB-AWS conversation waiting for the client's signature.
    aws: Option<AwsPending>,
    conversations_started: u32,
}

/// A step's reply: `{conversationId, done, payload}`.
pub(super) fn step_reply(done: bool, payload: &[u8]) -> Document {
    doc! {
        "conversationId": CONVERSATION_ID,
        "done": done,
        "payload": Binary { subtype: BinarySubtype::Generic, bytes: payload.to_vec() },
    }
}

/// The `payload` of a SASL command, as text, bounded by [`MAX_PAYLOAD_BYTES`].
pub(super) fn payload(command: &Document) -> Result<String, AuthError> {
    let bytes = payload_bytes(command, MAX_PAYLOAD_BYTES)?;
    String::from_utf8(bytes).map_err(|_| AuthError::malformed("payload is not UTF-8"))
}

/// The `payload` of a SASL command, at most `limit` bytes.
fn payload_bytes(command: &Document, limit: usize) -> Result<Vec<u8>, AuthError> {
    let bytes = match command.get("payload") {
        Some(Bson::Binary(binary)) => binary.bytes.clone(),
        // Some shells send the payload base64-encoded in a string.
        Some(Bson::String(text)) => BASE64
            .decode(text)
            .map_err(|_| AuthError::malformed("payload is not base64"))?,
        _ => return Err(AuthError::malformed("payload must be BinData")),
    };
    if bytes.len() > limit {
        return Err(AuthError::malformed(format!(
            "payload of {} bytes exceeds {limit}",
            bytes.len()
        )));
    }
    Ok(bytes)
}

impl ConnectionAuth {
    /// The `(db, name)` of the user this connection authenticated as.
    pub fn user(&self) -> Option<(&str, &str)> {
        self.user
            .as_ref()
            .map(|(db, name)| (db.as_str(), name.as_str()))
    }

    /// Records that the connection authenticated as `db.name` by a mechanism kept elsewhere
    /// (MONGODB-OIDC).
    pub(crate) fn authenticate_as(&mut self, db: &str, name: &str) {
        self.user = Some((db.to_owned(), name.to_owned()));
    }

    /// Whether the connection has authenticated.
    pub fn is_authenticated(&self) -> bool {
        self.user.is_some()
    }

    /// Runs `saslStart` sent to `db`; returns the reply document (an error reply when it fails).
    pub fn sasl_start<R: RngCore + ?Sized>(
        &mut self,
        users: &Users,
        db: &str,
        command: &Document,
        rng: &mut R,
    ) -> Document {
        if command.get_str("mechanism").ok() == Some(super::plain::MECHANISM) {
            return self.plain(users, db, command);
        }
        self.start(users, db, command, rng)
            .unwrap_or_else(|error| error.to_reply())
    }

    /// Counts one authentication attempt (any mechanism) and drops any conversation in
    /// progress.
    ///
    /// # Errors
    /// [`AuthError::TooManyConversations`] past [`MAX_CONVERSATIONS_PER_CONNECTION`].
    pub(super) fn count_attempt(&mut self) -> Result<(), AuthError> {
        if self.conversations_started >= MAX_CONVERSATIONS_PER_CONNECTION {
            return Err(AuthError::TooManyConversations);
        }
        self.conversations_started += 1;
        self.conversation = None;
        self.aws = None;
        Ok(())
    }

    /// Records that the connection authenticated as `db.name`.
    pub(super) fn set_user(&mut self, db: &str, name: String) {
        self.user = Some((db.to_owned(), name));
    }

    /// Runs `saslContinue`; returns the reply document (an error reply when it fails). Any
    /// failure ends the conversation.
    pub fn sasl_continue(&mut self, command: &Document) -> Document {
        self.proceed(command).unwrap_or_else(|error| {
            self.conversation = None;
            error.to_reply()
        })
    }

    /// The `speculativeAuthenticate` document of a `hello` reply, if `hello` asked for it and
    /// the first step succeeded; mongod leaves the field out otherwise, and the driver then
    /// authenticates the ordinary way.
    pub fn speculative<R: RngCore + ?Sized>(
        &mut self,
        users: &Users,
        hello: &Document,
        rng: &mut R,
    ) -> Option<Document> {
        let request = hello.get_document("speculativeAuthenticate").ok()?;
        if !request.contains_key("saslStart") {
            return None;
        }
        let db = request.get_str("db").unwrap_or("admin");
        self.start(users, db, request, rng).ok()
    }

    fn start<R: RngCore + ?Sized>(
        &mut self,
        users: &Users,
        db: &str,
        command: &Document,
        rng: &mut R,
    ) -> Result<Document, AuthError> {
        self.count_attempt()?;
        let name = command
            .get_str("mechanism")
            .map_err(|_| AuthError::malformed("saslStart needs a mechanism"))?;
        if name == aws::MECHANISM {
            return self.start_aws(users, db, command, rng);
        }
        let mechanism = Mechanism::from_name(name)
            .ok_or_else(|| AuthError::UnsupportedMechanism(name.to_owned()))?;
        let skip_empty_exchange = command
            .get_document("options")
            .ok()
            .and_then(|options| options.get_bool("skipEmptyExchange").ok())
            .unwrap_or(false);
        let client_first = scram::parse_client_first(&payload(command)?)?;
        let credential = users
            .credential(db, &client_first.user, mechanism)
            .ok_or(AuthError::Failed)?
            .clone();
        let mut random = [0u8; SERVER_NONCE_BYTES];
        rng.fill_bytes(&mut random);
        let nonce = format!("{}{}", client_first.nonce, BASE64.encode(random));
        let server_first = scram::server_first(&nonce, &credential);
        let reply = step_reply(false, server_first.as_bytes());
        self.conversation = Some(Conversation {
            mechanism,
            user: (db.to_owned(), client_first.user),
            skip_empty_exchange,
            stage: Stage::AwaitingProof {
                credential,
                client_first_bare: client_first.bare,
                server_first,
                gs2_header: client_first.gs2_header,
                nonce,
            },
        });
        Ok(reply)
    }

    fn proceed(&mut self, command: &Document) -> Result<Document, AuthError> {
        let id = command.get("conversationId").and_then(|id| match id {
            Bson::Int32(v) => Some(i64::from(*v)),
            Bson::Int64(v) => Some(*v),
            _ => None,
        });
        if id != Some(i64::from(CONVERSATION_ID)) {
            return Err(AuthError::NoConversation);
        }
        if let Some(pending) = self.aws.take() {
            let payload = payload_bytes(command, aws::MAX_AWS_PAYLOAD_BYTES)?;
            let arn = aws::verify_client_second(&pending, &payload)?;
            self.user = Some((EXTERNAL_DB.to_owned(), arn));
            return Ok(step_reply(true, b""));
        }
        let conversation = self.conversation.take().ok_or(AuthError::NoConversation)?;
        let message = payload(command)?;
        match conversation.stage {
            Stage::AwaitingProof {
                ref credential,
                ref client_first_bare,
                ref server_first,
                ref gs2_header,
                ref nonce,
            } => {
                let client_final = scram::parse_client_final(&message)?;
                if client_final.nonce != *nonce
                    || client_final.channel_binding != BASE64.encode(gs2_header)
                {
                    return Err(AuthError::Failed);
                }
                let auth_message = format!(
                    "{client_first_bare},{server_first},{}",
                    client_final.without_proof
                );
                let server_final = scram::verify_proof(
                    conversation.mechanism,
                    credential,
                    &auth_message,
                    &client_final.proof,
                )?;
                if conversation.skip_empty_exchange {
                    self.user = Some(conversation.user);
                    return Ok(step_reply(true, server_final.as_bytes()));
                }
                self.conversation = Some(Conversation {
                    stage: Stage::AwaitingEmpty,
                    ..conversation
                });
                Ok(step_reply(false, server_final.as_bytes()))
            }
            Stage::AwaitingEmpty => {
                if !message.is_empty() {
                    return Err(AuthError::malformed("expected an empty SCRAM message"));
                }
                self.user = Some(conversation.user);
                Ok(step_reply(true, b""))
            }
        }
    }
}

/// The database external mechanisms authenticate against.
const EXTERNAL_DB: &str = "$external";

impl ConnectionAuth {
    fn start_aws<R: RngCore + ?Sized>(
        &mut self,
        users: &Users,
        db: &str,
        command: &Document,
        rng: &mut R,
    ) -> Result<Document, AuthError> {
        if users.aws_keys().is_empty() {
            return Err(AuthError::UnsupportedMechanism(aws::MECHANISM.to_owned()));
        }
        if db != EXTERNAL_DB {
            return Err(AuthError::malformed(
                "MONGODB-AWS must authenticate against $external",
            ));
        }
        let payload = payload_bytes(command, aws::MAX_AWS_PAYLOAD_BYTES)?;
        let (reply, pending) = aws::server_first(&payload, users.aws_keys(), rng)?;
        self.aws = Some(pending);
        Ok(step_reply(false, &reply))
    }
}
