//! The token that names one logical operation across all its attempts.

use std::fmt;

use bson::Bson;
use bson::oid::ObjectId;

/// Names one logical increment across every attempt and re-run, so the server can tell a
/// repeat from a new request.
///
/// Create it once per logical operation, before the first attempt, and keep it wherever the
/// request itself is kept (a queue message, a job row) so that a re-run after a crash uses
/// the same token. It can be a generated [`ObjectId`](Token::new_object_id) or
/// [UUID](Token::new_uuid), or a string the application already has that is unique to the
/// operation (a message id, an idempotency key received from its own caller). Only these
/// kinds of values are accepted, because a token is matched by equality inside query
/// operators, where a document or a regular expression would mean something else.
#[derive(Clone, Debug, PartialEq)]
pub struct Token(Bson);

impl Token {
    /// A fresh ObjectId token (unique across processes without coordination).
    pub fn new_object_id() -> Self {
        Token(Bson::ObjectId(ObjectId::new()))
    }

    /// A fresh random (version 4) UUID token.
    pub fn new_uuid() -> Self {
        Token(Bson::Binary(bson::Uuid::new().into()))
    }

    /// The token as stored in the counter document.
    pub fn as_bson(&self) -> &Bson {
        &self.0
    }

    /// The token's BSON value.
    pub fn into_bson(self) -> Bson {
        self.0
    }
}

impl From<ObjectId> for Token {
    fn from(id: ObjectId) -> Self {
        Token(Bson::ObjectId(id))
    }
}

impl From<bson::Uuid> for Token {
    fn from(uuid: bson::Uuid) -> Self {
        Token(Bson::Binary(uuid.into()))
    }
}

impl From<String> for Token {
    fn from(key: String) -> Self {
        Token(Bson::String(key))
    }
}

impl From<&str> for Token {
    fn from(key: &str) -> Self {
        Token(Bson::String(key.to_owned()))
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
