//! Which requests a waiter, a rule or an assertion is about.

use std::fmt;
use std::sync::Arc;

use bson::{Bson, Document};

use crate::server::{ConnectionId, ConnectionInfo, Request, RequestKind};

/// A predicate over requests: every condition added must hold. Built fluently:
/// `Matcher::command("insert").db("app").field_eq("ordered", true)`.
///
/// Field paths may be dotted (`"writeConcern.w"`, `"documents.0._id"`); numbers compare by
/// value whatever their BSON type, so `field_eq("ping", 1)` matches `{ping: 1.0}`.
#[derive(Clone, Default)]
pub struct Matcher {
    conditions: Vec<Condition>,
}

type Predicate = Arc<dyn Fn(&Request, &ConnectionInfo) -> bool + Send + Sync>;

#[derive(Clone)]
enum Condition {
    Command(String),
    Hello,
    Database(String),
    FieldEq(String, Bson),
    FieldPresent(String),
    FieldAbsent(String),
    Connection(ConnectionId),
    Kind(RequestKind),
    AppName(String),
    InSequence(String),
    Custom(String, Predicate),
}

impl Matcher {
    /// Matches every request.
    pub fn any() -> Self {
        Self::default()
    }

    /// Matches the command named `name` (case-sensitive, as the server compares).
    pub fn command(name: impl Into<String>) -> Self {
        Self::any().and(Condition::Command(name.into()))
    }

    /// Matches `hello`, `isMaster` and `ismaster`, over OP_MSG or legacy OP_QUERY.
    pub fn hello() -> Self {
        Self::any().and(Condition::Hello)
    }

    /// Also requires the database (`$db`, or the OP_QUERY namespace's database).
    #[must_use]
    pub fn db(self, database: impl Into<String>) -> Self {
        self.and(Condition::Database(database.into()))
    }

    /// Also requires the field at `path` to equal `value`.
    #[must_use]
    pub fn field_eq(self, path: impl Into<String>, value: impl Into<Bson>) -> Self {
        self.and(Condition::FieldEq(path.into(), value.into()))
    }

    /// Also requires the field at `path` to be present.
    #[must_use]
    pub fn has_field(self, path: impl Into<String>) -> Self {
        self.and(Condition::FieldPresent(path.into()))
    }

    /// Also requires the field at `path` to be absent.
    #[must_use]
    pub fn lacks_field(self, path: impl Into<String>) -> Self {
        self.and(Condition::FieldAbsent(path.into()))
    }

    /// Also requires the request to come from connection `id`.
    #[must_use]
    pub fn connection(self, id: ConnectionId) -> Self {
        self.and(Condition::Connection(id))
    }

    /// Also requires the request to be an OP_MSG.
    #[must_use]
    pub fn op_msg(self) -> Self {
        self.and(Condition::Kind(RequestKind::Msg))
    }

    /// Also requires the request to be a legacy OP_QUERY.
    #[must_use]
    pub fn op_query(self) -> Self {
        self.and(Condition::Kind(RequestKind::Query))
    }

    /// Also requires the connection's handshake to have declared this application name.
    #[must_use]
    pub fn app_name(self, name: impl Into<String>) -> Self {
        self.and(Condition::AppName(name.into()))
    }

    /// Also requires `identifier` to have arrived as an OP_MSG document sequence.
    #[must_use]
    pub fn in_sequence(self, identifier: impl Into<String>) -> Self {
        self.and(Condition::InSequence(identifier.into()))
    }

    /// Also requires an arbitrary predicate; `label` names it in error messages.
    #[must_use]
    pub fn custom<F>(self, label: impl Into<String>, predicate: F) -> Self
    where
        F: Fn(&Request, &ConnectionInfo) -> bool + Send + Sync + 'static,
    {
        self.and(Condition::Custom(label.into(), Arc::new(predicate)))
    }

    /// Whether `request`, received on `connection`, satisfies every condition.
    pub fn matches(&self, request: &Request, connection: &ConnectionInfo) -> bool {
        self.conditions
            .iter()
            .all(|condition| condition.holds(request, connection))
    }

    fn and(mut self, condition: Condition) -> Self {
        self.conditions.push(condition);
        self
    }
}

impl From<&str> for Matcher {
    /// A command-name matcher, so `server.next_request("ping")` reads naturally.
    fn from(name: &str) -> Self {
        Self::command(name)
    }
}

impl Condition {
    fn holds(&self, request: &Request, connection: &ConnectionInfo) -> bool {
        match self {
            Self::Command(name) => request.command_name() == name,
            Self::Hello => request.is_hello(),
            Self::Database(database) => request.database() == database,
            Self::FieldEq(path, expected) => {
                lookup(request.command(), path).is_some_and(|actual| values_equal(actual, expected))
            }
            Self::FieldPresent(path) => lookup(request.command(), path).is_some(),
            Self::FieldAbsent(path) => lookup(request.command(), path).is_none(),
            Self::Connection(id) => connection.id == *id,
            Self::Kind(kind) => request.kind() == *kind,
            Self::AppName(name) => connection.app_name.as_deref() == Some(name.as_str()),
            Self::InSequence(identifier) => request.came_in_sequence(identifier),
            Self::Custom(_, predicate) => predicate(request, connection),
        }
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Command(name) => write!(f, "command {name}"),
            Self::Hello => f.write_str("hello/isMaster"),
            Self::Database(database) => write!(f, "$db == {database:?}"),
            Self::FieldEq(path, value) => write!(f, "{path} == {value}"),
            Self::FieldPresent(path) => write!(f, "has {path}"),
            Self::FieldAbsent(path) => write!(f, "lacks {path}"),
            Self::Connection(id) => write!(f, "connection {id}"),
            Self::Kind(RequestKind::Msg) => f.write_str("OP_MSG"),
            Self::Kind(RequestKind::Query) => f.write_str("OP_QUERY"),
            Self::AppName(name) => write!(f, "appName == {name:?}"),
            Self::InSequence(identifier) => write!(f, "{identifier} as document sequence"),
            Self::Custom(label, _) => f.write_str(label),
        }
    }
}

impl fmt::Display for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.conditions.is_empty() {
            return f.write_str("any request");
        }
        for (index, condition) in self.conditions.iter().enumerate() {
            if index > 0 {
                f.write_str(" && ")?;
            }
            write!(f, "{condition}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Matcher({self})")
    }
}

/// The value at a dotted path; numeric segments index arrays.
pub(crate) fn lookup<'a>(document: &'a Document, path: &str) -> Option<&'a Bson> {
    let mut segments = path.split('.');
    let mut current = document.get(segments.next()?)?;
    for segment in segments {
        current = match current {
            Bson::Document(inner) => inner.get(segment)?,
            Bson::Array(items) => items.get(segment.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(current)
}

/// BSON equality where numbers compare by value across int32, int64 and double, recursively.
pub(crate) fn values_equal(left: &Bson, right: &Bson) -> bool {
    match (left, right) {
        (Bson::Document(a), Bson::Document(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b.iter())
                    .all(|((ka, va), (kb, vb))| ka == kb && values_equal(va, vb))
        }
        (Bson::Array(a), Bson::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| values_equal(x, y))
        }
        _ => match (as_integer(left), as_integer(right)) {
            (Some(a), Some(b)) => a == b,
            _ => match (as_number(left), as_number(right)) {
                (Some(a), Some(b)) => a == b,
                _ => left == right,
            },
        },
    }
}

fn as_integer(value: &Bson) -> Option<i64> {
    match value {
        Bson::Int32(n) => Some(i64::from(*n)),
        Bson::Int64(n) => Some(*n),
        _ => None,
    }
}

#[allow(clippy::cast_precision_loss)] // Only used to compare an integer with a double.
fn as_number(value: &Bson) -> Option<f64> {
    match value {
        Bson::Int32(n) => Some(f64::from(*n)),
        Bson::Int64(n) => Some(*n as f64),
        Bson::Double(n) => Some(*n),
        _ => None,
    }
}
