//! Users: how a deployment is told about them ([`User`]) and how it keeps them ([`Users`]):
//! a salt, an iteration count, StoredKey and ServerKey per mechanism, never the password.

use std::collections::HashMap;
use std::fmt;

use bson::{Bson, Document, doc};
use rand::RngCore;

use super::aws::AwsKey;
use super::error::AuthError;
use super::scram::ScramCredential;

/// The database of users who authenticate outside MongoDB (X.509 subjects, LDAP for PLAIN).
pub const EXTERNAL_DB: &str = "$external";

/// A SASL mechanism blackpipe's users can authenticate with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Mechanism {
    /// SCRAM-SHA-1 (RFC 5802), over MongoDB's MD5 digest of the password.
    ScramSha1,
    /// SCRAM-SHA-256 (RFC 7677), over the SASLprepped password.
    ScramSha256,
}

impl Mechanism {
    /// Both mechanisms, in the order mongod lists them.
    pub const ALL: [Mechanism; 2] = [Mechanism::ScramSha1, Mechanism::ScramSha256];

    /// The name in `saslStart` and `saslSupportedMechs`.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::ScramSha1 => "SCRAM-SHA-1",
            Mechanism::ScramSha256 => "SCRAM-SHA-256",
        }
    }

    /// The mechanism called `name`, if blackpipe offers it.
    pub fn from_name(name: &str) -> Option<Mechanism> {
        Mechanism::ALL.into_iter().find(|m| m.name() == name)
    }

    /// mongod's default iteration counts (`scramIterationCount`, `scramSHA256IterationCount`).
    pub(crate) fn iterations(self) -> u32 {
        match self {
            Mechanism::ScramSha1 => 10_000,
            Mechanism::ScramSha256 => 15_000,
        }
    }

    /// mongod's salt lengths: the digest's output length minus four bytes (RFC 5802 `Hi()`
    /// appends a four-byte block index).
    pub(crate) fn salt_len(self) -> usize {
        match self {
            Mechanism::ScramSha1 => 16,
            Mechanism::ScramSha256 => 28,
        }
    }
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A user to create when a deployment starts. `Debug` does not show the password.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct User {
    /// The user name.
    pub name: String,
    /// The database the user is defined in (`authSource`); `admin` by default.
    pub db: String,
    /// The password, turned into credentials when the deployment starts.
    pub password: String,
    /// The mechanisms the user has credentials for; both SCRAM mechanisms by default.
    pub mechanisms: Vec<Mechanism>,
}

impl User {
    /// `name` in `admin`, with SCRAM-SHA-1 and SCRAM-SHA-256 credentials.
    pub fn new(name: impl Into<String>, password: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            db: "admin".to_owned(),
            password: password.into(),
            mechanisms: Mechanism::ALL.to_vec(),
        }
    }

    /// A user of `$external` with no password, as `createUser` on `$external` makes: the
    /// identity of a MONGODB-X509 client, `name` being its certificate's subject in RFC 2253
    /// form (`CN=client,O=example`).
    pub fn external(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            db: EXTERNAL_DB.to_owned(),
            password: String::new(),
            mechanisms: Vec::new(),
        }
    }

    /// Defines the user in `db` instead of `admin`.
    #[must_use]
    pub fn with_db(mut self, db: impl Into<String>) -> Self {
        self.db = db.into();
        self
    }

    /// Gives the user credentials for these mechanisms only.
    #[must_use]
    pub fn with_mechanisms(mut self, mechanisms: Vec<Mechanism>) -> Self {
        self.mechanisms = mechanisms;
        self
    }
}

impl fmt::Debug for User {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("User")
            .field("name", &self.name)
            .field("db", &self.db)
            .field("password", &"<redacted>")
            .field("mechanisms", &self.mechanisms)
            .finish()
    }
}

/// A stored user: credentials per mechanism.
#[derive(Debug, Clone)]
struct StoredUser {
    credentials: Vec<(Mechanism, ScramCredential)>,
}

/// The users of a deployment, keyed by `(db, name)`.
#[derive(Debug, Clone, Default)]
pub struct Users {
    users: HashMap<(String, String), StoredUser>,
    aws_keys: Vec<AwsKey>,
}

impl Users {
    /// Derives and stores credentials for `users`, salting each with bytes from `rng`.
    /// A later user with the same `db` and name replaces an earlier one.
    ///
    /// # Errors
    ///
    /// [`AuthError::InvalidUser`] for an empty name or database, no mechanism, or a password
    /// that SASLprep rejects (SCRAM-SHA-256).
    pub fn new<R: RngCore + ?Sized>(users: &[User], rng: &mut R) -> Result<Users, AuthError> {
        let mut stored = Users::default();
        for user in users {
            let invalid = |reason: &str| AuthError::InvalidUser {
                user: format!("{}.{}", user.db, user.name),
                reason: reason.to_owned(),
            };
            if user.name.is_empty() || user.db.is_empty() {
                return Err(invalid("the name and the database must not be empty"));
            }
            // Only `$external` users may have no credential: something outside authenticates
            // them (a certificate).
            if user.mechanisms.is_empty() && user.db != EXTERNAL_DB {
                return Err(invalid("at least one mechanism is needed"));
            }
            let mut credentials = Vec::with_capacity(user.mechanisms.len());
            for &mechanism in &user.mechanisms {
                let mut salt = vec![0; mechanism.salt_len()];
                rng.fill_bytes(&mut salt);
                let credential = ScramCredential::derive(
                    mechanism,
                    &user.name,
                    &user.password,
                    salt,
                    mechanism.iterations(),
                )
                .map_err(|reason| invalid(&reason))?;
                credentials.push((mechanism, credential));
            }
            stored.users.insert(
                (user.db.clone(), user.name.clone()),
                StoredUser { credentials },
            );
        }
        Ok(stored)
    }

    /// How many users there are.
    pub fn len(&self) -> usize {
        self.users.len()
    }

    /// Whether there is no user.
    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }

    /// Whether `db.name` exists.
    pub fn contains(&self, db: &str, name: &str) -> bool {
        self.users.contains_key(&(db.to_owned(), name.to_owned()))
    }

    /// `usersInfo` run on `db` with `query` (`1`, a name, `{user, db}`, a list of those, or
    /// `{forAllDBs: true}`): each user's description, in (database, name) order. blackpipe
    /// keeps no roles: every authenticated user may run everything, so each is shown with the
    /// `root` role.
    ///
    /// # Errors
    /// A `(code, message)`: BadValue for a malformed query.
    pub fn info(&self, db: &str, query: &Bson) -> Result<Vec<Document>, (i32, String)> {
        let mut wanted: Vec<(String, String)> = Vec::new();
        let everyone = |db: Option<&str>| -> Vec<(String, String)> {
            self.users
                .keys()
                .filter(|(own_db, _)| db.is_none_or(|db| db == own_db))
                .cloned()
                .collect()
        };
        match query {
            Bson::Int32(1) | Bson::Int64(1) | Bson::Double(1.0) => wanted = everyone(Some(db)),
            Bson::Document(spec) if spec.get_bool("forAllDBs").unwrap_or(false) => {
                wanted = everyone(None);
            }
            Bson::Array(items) => {
                for item in items {
                    wanted.push(user_name(db, item)?);
                }
            }
            other => wanted.push(user_name(db, other)?),
        }
        wanted.sort();
        wanted.dedup();
        Ok(wanted
            .into_iter()
            .filter_map(|key| {
                let user = self.users.get(&key)?;
                let (user_db, name) = key;
                let mechanisms: Vec<&str> =
                    user.credentials.iter().map(|(m, _)| m.name()).collect();
                Some(doc! {
                    "_id": format!("{user_db}.{name}"),
                    "user": name,
                    "db": &user_db,
                    "roles": [{ "role": "root", "db": "admin" }],
                    "mechanisms": mechanisms,
                })
            })
            .collect())
    }

    /// The credential of `db.name` for `mechanism`, if the user exists and has one.
    pub(crate) fn credential(
        &self,
        db: &str,
        name: &str,
        mechanism: Mechanism,
    ) -> Option<&ScramCredential> {
        self.users
            .get(&(db.to_owned(), name.to_owned()))?
            .credentials
            .iter()
            .find(|(m, _)| *m == mechanism)
            .map(|(_, credential)| credential)
    }

    /// The same users, plus test AWS keys MONGODB-AWS accepts.
    #[must_use]
    pub fn with_aws_keys(mut self, keys: Vec<AwsKey>) -> Self {
        self.aws_keys = keys;
        self
    }

    /// The AWS keys MONGODB-AWS accepts.
    pub(crate) fn aws_keys(&self) -> &[AwsKey] {
        &self.aws_keys
    }

    /// The answer to `hello`'s `saslSupportedMechs: "<db>.<user>"`: the user's mechanisms,
    /// or `None` when the user does not exist (mongod then leaves the field out).
    pub fn supported_mechanisms(&self, db_and_name: &str) -> Option<Vec<&'static str>> {
        let (db, name) = db_and_name.split_once('.')?;
        let user = self.users.get(&(db.to_owned(), name.to_owned()))?;
        Some(user.credentials.iter().map(|(m, _)| m.name()).collect())
    }
}

/// One user of a `usersInfo` query: a name (in `db`) or `{user, db}`.
fn user_name(db: &str, item: &Bson) -> Result<(String, String), (i32, String)> {
    match item {
        Bson::String(name) => Ok((db.to_owned(), name.clone())),
        Bson::Document(spec) => match (spec.get_str("user"), spec.get_str("db")) {
            (Ok(user), Ok(user_db)) => Ok((user_db.to_owned(), user.to_owned())),
            _ => Err((
                blackpipe_store::code::BAD_VALUE,
                "User name must contain both 'user' and 'db' fields".to_owned(),
            )),
        },
        _ => Err((
            blackpipe_store::code::BAD_VALUE,
            "User and role names must be either strings or objects".to_owned(),
        )),
    }
}
