//! A decoded request as handlers see it: the command document with OP_MSG document sequences
//! merged in, plus the raw message for assertions about the wire itself.

use bson::{Bson, Document};
use steadfast_wire::{Body, CompressorId, Message, MsgFlags};

use super::reaction::CommandError;
use blackpipe_store::code;

/// Which opcode carried a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RequestKind {
    /// OP_MSG, the opcode of every modern command.
    Msg,
    /// Legacy OP_QUERY on `<db>.$cmd` (the legacy hello of older drivers).
    Query,
}

/// One command received from a client.
#[derive(Debug)]
pub struct Request {
    kind: RequestKind,
    command_name: String,
    database: String,
    command: Document,
    sequence_identifiers: Vec<String>,
    message: Message,
}

/// Why a decoded message cannot be handed to a handler.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// Clients never send OP_REPLY; the connection is out of step.
    #[error("clients may not send OP_REPLY")]
    UnexpectedReply,
    /// A document passed the wire checks but cannot be represented as a `bson::Document`.
    #[error("invalid BSON: {0}")]
    InvalidBson(String),
    /// An OP_MSG body without `$db`.
    #[error("OP_MSG requests require a $db argument")]
    MissingDatabase,
    /// An OP_QUERY outside `<db>.$cmd`: legacy queries are not supported.
    #[error("OP_QUERY is only supported for commands, not on namespace {0:?}")]
    NotACommand(String),
    /// A command document with no fields, hence no command name.
    #[error("the command document is empty")]
    EmptyCommand,
    /// A document sequence whose identifier is also a field of the body.
    #[error("field {0:?} is both in the command body and a document sequence")]
    DuplicateField(String),
    /// Refused on the raw encoding, before decoding: a write batch past `maxWriteBatchSize`
    /// or a document nested too deep.
    #[error(transparent)]
    Refused(#[from] blackpipe_store::RawRequestError),
}

impl RequestError {
    /// The error to answer with, or `None` when the connection must be closed instead.
    pub fn to_command_error(&self) -> Option<CommandError> {
        let message = self.to_string();
        match self {
            Self::UnexpectedReply | Self::InvalidBson(_) => None,
            // 40571 is the code mongod uses for a missing $db.
            Self::MissingDatabase => Some(CommandError::new(
                code::MISSING_DATABASE,
                "Location40571",
                message,
            )),
            // 352 is UnsupportedOpQueryCommand.
            Self::NotACommand(_) => Some(CommandError::new(
                code::UNSUPPORTED_OP_QUERY_COMMAND,
                "UnsupportedOpQueryCommand",
                message,
            )),
            Self::EmptyCommand => Some(CommandError::new(
                code::COMMAND_NOT_FOUND,
                "CommandNotFound",
                message,
            )),
            Self::DuplicateField(_) => {
                Some(CommandError::new(code::BAD_VALUE, "BadValue", message))
            }
            Self::Refused(refusal) => Some(CommandError::new(
                refusal.code(),
                refusal.code_name(),
                message,
            )),
        }
    }
}

impl Request {
    /// Interprets a decoded message as a command.
    ///
    /// # Errors
    /// A [`RequestError`] when the message is not a command a server would run.
    pub fn from_message(message: Message) -> Result<Self, RequestError> {
        let (kind, database, command, sequence_identifiers) = match &message.body {
            Body::Reply(_) => return Err(RequestError::UnexpectedReply),
            Body::Msg(msg) => {
                let sequences = msg
                    .sequences
                    .iter()
                    .map(|sequence| (sequence.identifier.as_str(), sequence.documents.as_slice()));
                blackpipe_store::check_raw_request(&msg.body, sequences)?;
                let mut command = to_document(&msg.body)?;
                let mut identifiers = Vec::with_capacity(msg.sequences.len());
                for sequence in &msg.sequences {
                    if command.contains_key(&sequence.identifier) {
                        return Err(RequestError::DuplicateField(sequence.identifier.clone()));
                    }
                    let documents = sequence
                        .documents
                        .iter()
                        .map(|raw| to_document(raw).map(Bson::Document))
                        .collect::<Result<Vec<_>, _>>()?;
                    command.insert(sequence.identifier.clone(), documents);
                    identifiers.push(sequence.identifier.clone());
                }
                let database = command
                    .get_str("$db")
                    .map_err(|_| RequestError::MissingDatabase)?
                    .to_owned();
                (RequestKind::Msg, database, command, identifiers)
            }
            Body::Query(query) => {
                let Some(database) = query.full_collection_name.strip_suffix(".$cmd") else {
                    return Err(RequestError::NotACommand(
                        query.full_collection_name.clone(),
                    ));
                };
                blackpipe_store::check_raw_request(&query.query, [])?;
                let mut command = to_document(&query.query)?;
                // Legacy drivers wrap the command as {$query: {...}, $readPreference: ...}.
                if command.keys().next().map(String::as_str) == Some("$query") {
                    if let Ok(inner) = command.get_document("$query") {
                        command = inner.clone();
                    }
                }
                (RequestKind::Query, database.to_owned(), command, Vec::new())
            }
        };
        let command_name = command
            .keys()
            .next()
            .cloned()
            .ok_or(RequestError::EmptyCommand)?;
        Ok(Self {
            kind,
            command_name,
            database,
            command,
            sequence_identifiers,
            message,
        })
    }

    /// Which opcode carried the request.
    pub fn kind(&self) -> RequestKind {
        self.kind
    }

    /// The command name: the first key of the command document.
    pub fn command_name(&self) -> &str {
        &self.command_name
    }

    /// Whether this is `hello`, `isMaster` or `ismaster`.
    pub fn is_hello(&self) -> bool {
        is_hello_command(&self.command_name)
    }

    /// The database: `$db` for OP_MSG, the namespace's database for OP_QUERY.
    pub fn database(&self) -> &str {
        &self.database
    }

    /// The command document, with each OP_MSG document sequence merged in as an array field.
    pub fn command(&self) -> &Document {
        &self.command
    }

    /// A field of the command document.
    pub fn get(&self, key: &str) -> Option<&Bson> {
        self.command.get(key)
    }

    /// The identifiers of the OP_MSG document sequences, in wire order.
    pub fn sequence_identifiers(&self) -> &[String] {
        &self.sequence_identifiers
    }

    /// Whether `field` arrived as an OP_MSG document sequence rather than in the body.
    pub fn came_in_sequence(&self, field: &str) -> bool {
        self.sequence_identifiers.iter().any(|id| id == field)
    }

    /// The message as decoded from the wire.
    pub fn message(&self) -> &Message {
        &self.message
    }

    /// The client's `requestID`.
    pub fn request_id(&self) -> i32 {
        self.message.request_id
    }

    /// The compressor the client used, if the request came as OP_COMPRESSED.
    pub fn compressed_with(&self) -> Option<CompressorId> {
        self.message.compressed_with
    }

    /// Whether the client set `moreToCome`: it expects no reply.
    pub fn more_to_come(&self) -> bool {
        self.msg_flags().contains(MsgFlags::MORE_TO_COME)
    }

    /// Whether the client set `exhaustAllowed`: it accepts a stream of replies.
    pub fn exhaust_allowed(&self) -> bool {
        self.msg_flags().contains(MsgFlags::EXHAUST_ALLOWED)
    }

    /// Whether the client appended a CRC-32C checksum.
    pub fn checksum_present(&self) -> bool {
        self.msg_flags().contains(MsgFlags::CHECKSUM_PRESENT)
    }

    fn msg_flags(&self) -> MsgFlags {
        match &self.message.body {
            Body::Msg(msg) => msg.flags,
            _ => MsgFlags::empty(),
        }
    }
}

/// Whether `name` is one of the hello-family commands (`isMaster`'s lowercase alias included).
pub fn is_hello_command(name: &str) -> bool {
    matches!(name, "hello" | "isMaster" | "ismaster")
}

fn to_document(raw: &bson::RawDocument) -> Result<Document, RequestError> {
    Document::try_from(raw).map_err(|error| RequestError::InvalidBson(error.to_string()))
}
