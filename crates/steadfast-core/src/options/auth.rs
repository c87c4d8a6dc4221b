//! Credentials and the per-mechanism rules of the authentication specification (auth.md).

use std::collections::BTreeMap;
use std::fmt;

use super::oidc::Callback;
use super::{OptionsError, redacted};

/// The database that external mechanisms (X.509, Kerberos, AWS, OIDC) authenticate against.
pub const EXTERNAL_SOURCE: &str = "$external";

/// The source SCRAM uses when neither authSource nor a database is given.
pub const ADMIN_SOURCE: &str = "admin";

/// An authentication mechanism.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AuthMechanism {
    /// SCRAM-SHA-1.
    ScramSha1,
    /// SCRAM-SHA-256.
    ScramSha256,
    /// PLAIN (LDAP proxy authentication).
    Plain,
    /// MONGODB-X509: the client certificate's subject is the user.
    MongoDbX509,
    /// GSSAPI (Kerberos).
    Gssapi,
    /// MONGODB-AWS: AWS IAM credentials (given, or from the environment or AWS endpoints).
    MongoDbAws,
    /// MONGODB-OIDC: tokens from an identity provider.
    MongoDbOidc,
    /// MONGODB-CR, removed in MongoDB 4.0. Named so that a connection string or a
    /// deserialized credential asking for it is refused with a clear error (by
    /// [`Credential::validate`]) rather than taken for an unknown name; never used.
    MongoDbCr,
}

impl AuthMechanism {
    const ALL: [AuthMechanism; 8] = [
        AuthMechanism::ScramSha1,
        AuthMechanism::ScramSha256,
        AuthMechanism::Plain,
        AuthMechanism::MongoDbX509,
        AuthMechanism::Gssapi,
        AuthMechanism::MongoDbAws,
        AuthMechanism::MongoDbOidc,
        AuthMechanism::MongoDbCr,
    ];

    /// The mechanism's name as used in connection strings and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMechanism::ScramSha1 => "SCRAM-SHA-1",
            AuthMechanism::ScramSha256 => "SCRAM-SHA-256",
            AuthMechanism::Plain => "PLAIN",
            AuthMechanism::MongoDbX509 => "MONGODB-X509",
            AuthMechanism::Gssapi => "GSSAPI",
            AuthMechanism::MongoDbAws => "MONGODB-AWS",
            AuthMechanism::MongoDbOidc => "MONGODB-OIDC",
            AuthMechanism::MongoDbCr => "MONGODB-CR",
        }
    }

    /// Parses a mechanism name (case-insensitively); `None` for an unknown name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(name))
    }

    /// The source used when the user gives no authSource. `database` is the connection
    /// string's database, if any.
    pub fn default_source(self, database: Option<&str>) -> String {
        match self {
            AuthMechanism::ScramSha1 | AuthMechanism::ScramSha256 | AuthMechanism::MongoDbCr => {
                database.unwrap_or(ADMIN_SOURCE).to_string()
            }
            AuthMechanism::Plain => database.unwrap_or(EXTERNAL_SOURCE).to_string(),
            AuthMechanism::MongoDbX509
            | AuthMechanism::Gssapi
            | AuthMechanism::MongoDbAws
            | AuthMechanism::MongoDbOidc => EXTERNAL_SOURCE.to_string(),
        }
    }
}

impl AuthMechanism {
    /// Checks that `credential` has what this mechanism needs (whatever mechanism the
    /// credential itself names): the rules of [`Credential::validate`].
    ///
    /// # Errors
    /// [`OptionsError::InvalidCredential`] as [`Credential::validate`] reports it; always for
    /// [`AuthMechanism::MongoDbCr`], which no supported server offers.
    pub fn validate_credential(&self, credential: &Credential) -> Result<(), OptionsError> {
        let mut credential = credential.clone();
        credential.mechanism = Some(*self);
        credential.validate()
    }
}

impl std::str::FromStr for AuthMechanism {
    type Err = OptionsError;

    /// Parses a mechanism name as a connection string's `authMechanism` spells it (ASCII case
    /// ignored).
    ///
    /// # Errors
    /// [`OptionsError::InvalidValue`] for a name no mechanism has.
    fn from_str(name: &str) -> Result<Self, OptionsError> {
        AuthMechanism::parse(name).ok_or_else(|| OptionsError::InvalidValue {
            option: "authMechanism",
            value: name.to_string(),
            reason: "not a known authentication mechanism",
        })
    }
}

impl serde::Serialize for AuthMechanism {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for AuthMechanism {
    /// Reads a mechanism name (`"SCRAM-SHA-256"`, ...).
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for AuthMechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Credentials for one user. The `Debug` output never shows the password.
#[derive(Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Credential {
    /// The user name (optional for X.509, AWS and OIDC).
    pub username: Option<String>,
    /// The password.
    pub password: Option<String>,
    /// The database to authenticate against; `None` means the mechanism's default.
    pub source: Option<String>,
    /// The mechanism; `None` means negotiate SCRAM-SHA-256 or SCRAM-SHA-1 with the server.
    pub mechanism: Option<AuthMechanism>,
    /// Mechanism properties, keys upper-cased (names are case-insensitive). MONGODB-OIDC's
    /// `TOKEN_RESOURCE` may contain `:`; one that contains `,` must be set here rather than in
    /// the connection string, whose `authMechanismProperties` uses `,` between properties.
    pub mechanism_properties: BTreeMap<String, String>,
    /// MONGODB-OIDC: the application's function that obtains access tokens (instead of a
    /// built-in `ENVIRONMENT`).
    pub oidc_callback: Callback,
}

/// The fields a [`Credential`] is deserialized from (the callback is code, not data).
#[derive(serde::Deserialize)]
struct CredentialForm {
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    mechanism: Option<AuthMechanism>,
    #[serde(default)]
    mechanism_properties: Option<BTreeMap<String, String>>,
}

impl<'de> serde::Deserialize<'de> for Credential {
    /// Reads `{ username?, password?, source?, mechanism?, mechanism_properties? }` (mechanism
    /// property names are upper-cased). Not validated: see [`Credential::validate`].
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let form = <CredentialForm as serde::Deserialize>::deserialize(deserializer)?;
        Ok(Credential::builder()
            .username(form.username)
            .password(form.password)
            .source(form.source)
            .mechanism(form.mechanism)
            .mechanism_properties(form.mechanism_properties.unwrap_or_default())
            .build())
    }
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credential")
            .field("username", &self.username)
            .field("password", &redacted(&self.password))
            .field("source", &self.source)
            .field("mechanism", &self.mechanism)
            .field("mechanism_properties", &self.mechanism_properties)
            .field("oidc_callback", &self.oidc_callback)
            .finish()
    }
}

const GSSAPI_PROPERTIES: &[&str] = &[
    "SERVICE_NAME",
    "CANONICALIZE_HOST_NAME",
    "SERVICE_REALM",
    "SERVICE_HOST",
];
const CANONICALIZE_VALUES: &[&str] = &["true", "false", "none", "forward", "forwardAndReverse"];
/// MONGODB-AWS: the session token of temporary credentials given as username and password.
const AWS_PROPERTIES: &[&str] = &["AWS_SESSION_TOKEN"];
const OIDC_PROPERTIES: &[&str] = &["ENVIRONMENT", "TOKEN_RESOURCE"];
const OIDC_ENVIRONMENTS: &[&str] = &["test", "azure", "gcp", "k8s"];
/// OIDC environments whose token request names a resource (auth.md, TOKEN_RESOURCE).
const OIDC_RESOURCE_ENVIRONMENTS: &[&str] = &["azure", "gcp"];
/// The one OIDC environment that uses a username (Azure's managed identity client id).
const OIDC_USERNAME_ENVIRONMENT: &str = "azure";

/// Builds a [`Credential`]; each setter takes the value or an `Option`.
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct CredentialBuilder {
    credential: Credential,
}

impl CredentialBuilder {
    /// Sets [`Credential::username`].
    pub fn username(mut self, username: impl Into<Option<String>>) -> Self {
        self.credential.username = username.into();
        self
    }

    /// Sets [`Credential::password`].
    pub fn password(mut self, password: impl Into<Option<String>>) -> Self {
        self.credential.password = password.into();
        self
    }

    /// Sets [`Credential::source`].
    pub fn source(mut self, source: impl Into<Option<String>>) -> Self {
        self.credential.source = source.into();
        self
    }

    /// Sets [`Credential::mechanism`].
    pub fn mechanism(mut self, mechanism: impl Into<Option<AuthMechanism>>) -> Self {
        self.credential.mechanism = mechanism.into();
        self
    }

    /// Sets [`Credential::mechanism_properties`]; keys are upper-cased, as in a connection
    /// string.
    pub fn mechanism_properties(mut self, properties: BTreeMap<String, String>) -> Self {
        self.credential.mechanism_properties = properties
            .into_iter()
            .map(|(key, value)| (key.to_ascii_uppercase(), value))
            .collect();
        self
    }

    /// Sets [`Credential::oidc_callback`].
    pub fn oidc_callback(mut self, callback: impl Into<Callback>) -> Self {
        self.credential.oidc_callback = callback.into();
        self
    }

    /// The credential (checked when the client is created).
    pub fn build(self) -> Credential {
        self.credential
    }
}

impl Credential {
    /// A builder, starting from no user, no password and a negotiated mechanism.
    pub fn builder() -> CredentialBuilder {
        CredentialBuilder::default()
    }

    /// The source to authenticate against: the explicit one, else the mechanism's default
    /// (SCRAM's default, `admin`, when the mechanism is negotiated).
    pub fn resolved_source(&self) -> String {
        match (&self.source, self.mechanism) {
            (Some(source), _) => source.clone(),
            (None, Some(mechanism)) => mechanism.default_source(None),
            (None, None) => ADMIN_SOURCE.to_string(),
        }
    }

    /// A mechanism property, looked up case-insensitively.
    pub fn property(&self, name: &str) -> Option<&str> {
        self.mechanism_properties
            .get(&name.to_ascii_uppercase())
            .map(String::as_str)
    }

    /// Checks the rules the authentication specification sets for the credential's mechanism.
    ///
    /// # Errors
    /// [`OptionsError::InvalidCredential`] naming the mechanism and the missing or forbidden
    /// part: a missing or empty username or password where required, a password or mechanism
    /// property where forbidden, a source other than `$external` for external mechanisms, an
    /// unknown property or an invalid property value.
    pub fn validate(&self) -> Result<(), OptionsError> {
        let name = self
            .mechanism
            .map_or("the default mechanism", AuthMechanism::as_str);
        let fail = |reason: String| OptionsError::InvalidCredential {
            mechanism: name,
            reason,
        };
        let username_given = self.username.as_deref().is_some_and(|u| !u.is_empty());
        if self.oidc_callback.is_set() && self.mechanism != Some(AuthMechanism::MongoDbOidc) {
            return Err(fail("an OIDC callback applies to MONGODB-OIDC only".into()));
        }
        match self.mechanism {
            None => {
                // The password may be supplied later in code, so only the username is required here.
                if !username_given {
                    return Err(fail("a non-empty username is required".into()));
                }
                self.forbid_properties(&fail)?;
            }
            Some(AuthMechanism::ScramSha1 | AuthMechanism::ScramSha256 | AuthMechanism::Plain) => {
                if !username_given {
                    return Err(fail("a non-empty username is required".into()));
                }
                if self.password.is_none() {
                    return Err(fail("a password is required".into()));
                }
                self.forbid_properties(&fail)?;
            }
            Some(AuthMechanism::MongoDbX509) => {
                if self.password.is_some() {
                    return Err(fail("a password must not be given".into()));
                }
                self.require_external_source(&fail)?;
                self.forbid_properties(&fail)?;
            }
            Some(AuthMechanism::Gssapi) => {
                if !username_given {
                    return Err(fail("a non-empty username is required".into()));
                }
                self.require_external_source(&fail)?;
                self.allow_properties(GSSAPI_PROPERTIES, &fail)?;
                if let Some(value) = self.property("CANONICALIZE_HOST_NAME")
                    && !CANONICALIZE_VALUES.contains(&value)
                {
                    return Err(fail(format!(
                        "CANONICALIZE_HOST_NAME must be one of {CANONICALIZE_VALUES:?}, got {value:?}"
                    )));
                }
            }
            Some(AuthMechanism::MongoDbAws) => {
                // The username and password, when given, are the access key id and the secret
                // key (as the official driver takes them); one without the other is no credential.
                let password_given = self.password.is_some();
                if username_given != password_given || (self.username.is_some() && !username_given)
                {
                    return Err(fail(
                        "the access key id (username) and secret key (password) go together".into(),
                    ));
                }
                self.require_external_source(&fail)?;
                self.allow_properties(AWS_PROPERTIES, &fail)?;
                if self.property("AWS_SESSION_TOKEN").is_some() && !username_given {
                    return Err(fail(
                        "AWS_SESSION_TOKEN needs the access key id and secret key it belongs to"
                            .into(),
                    ));
                }
            }
            Some(AuthMechanism::MongoDbCr) => {
                return Err(fail(
                    "authMechanism MONGODB-CR was removed in MongoDB 4.0 and is not supported; use \
                     SCRAM-SHA-256 or SCRAM-SHA-1"
                        .into(),
                ));
            }
            Some(AuthMechanism::MongoDbOidc) => {
                if self.password.is_some() {
                    return Err(fail("a password must not be given".into()));
                }
                self.require_external_source(&fail)?;
                self.allow_properties(OIDC_PROPERTIES, &fail)?;
                self.validate_oidc_environment(&fail)?;
            }
        }
        Ok(())
    }

    fn require_external_source(
        &self,
        fail: &impl Fn(String) -> OptionsError,
    ) -> Result<(), OptionsError> {
        match self.source.as_deref() {
            Some(source) if source != EXTERNAL_SOURCE => Err(fail(format!(
                "the source must be \"{EXTERNAL_SOURCE}\", got {source:?}"
            ))),
            _ => Ok(()),
        }
    }

    fn forbid_properties(
        &self,
        fail: &impl Fn(String) -> OptionsError,
    ) -> Result<(), OptionsError> {
        match self.mechanism_properties.keys().next() {
            Some(key) => Err(fail(format!("mechanism property {key} does not apply"))),
            None => Ok(()),
        }
    }

    fn allow_properties(
        &self,
        allowed: &[&str],
        fail: &impl Fn(String) -> OptionsError,
    ) -> Result<(), OptionsError> {
        match self
            .mechanism_properties
            .keys()
            .find(|k| !allowed.contains(&k.as_str()))
        {
            Some(key) => Err(fail(format!("unknown mechanism property {key}"))),
            None => Ok(()),
        }
    }

    fn validate_oidc_environment(
        &self,
        fail: &impl Fn(String) -> OptionsError,
    ) -> Result<(), OptionsError> {
        let environment = self.property("ENVIRONMENT");
        if environment.is_some() && self.oidc_callback.is_set() {
            return Err(fail(
                "ENVIRONMENT and an OIDC callback must not both be given".into(),
            ));
        }
        if let Some(env) = environment
            && !OIDC_ENVIRONMENTS.contains(&env)
        {
            return Err(fail(format!(
                "ENVIRONMENT must be one of {OIDC_ENVIRONMENTS:?}, got {env:?}"
            )));
        }
        if let Some(env) = environment
            && env != OIDC_USERNAME_ENVIRONMENT
            && self.username.is_some()
        {
            return Err(fail(format!(
                "ENVIRONMENT {env} takes no username (only {OIDC_USERNAME_ENVIRONMENT} does)"
            )));
        }
        let needs_resource = environment.is_some_and(|e| OIDC_RESOURCE_ENVIRONMENTS.contains(&e));
        match (needs_resource, self.property("TOKEN_RESOURCE").is_some()) {
            (true, false) => Err(fail(format!(
                "TOKEN_RESOURCE is required with ENVIRONMENT {}",
                environment.unwrap_or_default()
            ))),
            (false, true) => Err(fail(
                "TOKEN_RESOURCE is only allowed with ENVIRONMENT azure or gcp".into(),
            )),
            _ => Ok(()),
        }
    }
}
