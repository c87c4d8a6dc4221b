//! What a connection needs to know to open, handshake and authenticate: the connection-level
//! subset of the client options, resolved once per client (TLS files read, metadata built).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bson::Document;
use steadfast_core::ServerAddress;
use steadfast_core::options::{AuthMechanism, ClientOptions, Credential, Socks5Proxy};
use steadfast_wire::Compressor;

use super::stream::{self, BoxedStream, HostResolver, Route};
use super::tls;
use crate::auth::oidc::OidcAuthenticator;
use crate::auth::scram::{ScramCache, ScramVariant};
use crate::error::{Error, Result};
use crate::handshake::metadata::{Environment, client_metadata};

/// A Stable API version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ServerApiVersion {
    /// Version 1, the only one defined.
    #[default]
    V1,
}

impl ServerApiVersion {
    /// The version as commands spell it (`apiVersion`).
    pub fn as_str(self) -> &'static str {
        match self {
            ServerApiVersion::V1 => "1",
        }
    }
}

/// The Stable API version to declare on every command (`apiVersion`, `apiStrict`,
/// `apiDeprecationErrors`). Declaring one also makes the handshake use `hello` from the start.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerApi {
    /// The API version.
    pub version: ServerApiVersion,
    /// Reject commands outside the declared API version.
    pub strict: Option<bool>,
    /// Reject deprecated commands and options.
    pub deprecation_errors: Option<bool>,
}

impl ServerApi {
    /// Declares API version 1 with the server's defaults for strictness.
    pub fn v1() -> Self {
        ServerApi::builder().version(ServerApiVersion::V1).build()
    }

    /// A builder for version 1 unless told otherwise, with the server's defaults for
    /// strictness.
    pub fn builder() -> ServerApiBuilder {
        ServerApiBuilder::default()
    }

    /// Sets `apiStrict`.
    #[must_use]
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = Some(strict);
        self
    }

    /// Sets `apiDeprecationErrors`.
    #[must_use]
    pub fn deprecation_errors(mut self, on: bool) -> Self {
        self.deprecation_errors = Some(on);
        self
    }

    /// Appends the API fields to an encoded command.
    pub(crate) fn append_raw(&self, command: &mut bson::RawDocumentBuf) {
        use bson::raw::cstr;
        command.append(cstr!("apiVersion"), self.version.as_str());
        if let Some(strict) = self.strict {
            command.append(cstr!("apiStrict"), strict);
        }
        if let Some(errors) = self.deprecation_errors {
            command.append(cstr!("apiDeprecationErrors"), errors);
        }
    }

    /// Adds the API fields to a command document.
    pub(crate) fn append_to(&self, command: &mut Document) {
        command.insert("apiVersion", self.version.as_str());
        if let Some(strict) = self.strict {
            command.insert("apiStrict", strict);
        }
        if let Some(errors) = self.deprecation_errors {
            command.insert("apiDeprecationErrors", errors);
        }
    }
}

/// Builds a [`ServerApi`]; each setter takes the value or an `Option`.
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct ServerApiBuilder {
    version: ServerApiVersion,
    strict: Option<bool>,
    deprecation_errors: Option<bool>,
}

impl ServerApiBuilder {
    /// Sets [`ServerApi::version`].
    pub fn version(mut self, version: ServerApiVersion) -> Self {
        self.version = version;
        self
    }

    /// Sets [`ServerApi::strict`].
    pub fn strict(mut self, strict: impl Into<Option<bool>>) -> Self {
        self.strict = strict.into();
        self
    }

    /// Sets [`ServerApi::deprecation_errors`].
    pub fn deprecation_errors(mut self, on: impl Into<Option<bool>>) -> Self {
        self.deprecation_errors = on.into();
        self
    }

    /// The declaration.
    pub fn build(self) -> ServerApi {
        ServerApi {
            version: self.version,
            strict: self.strict,
            deprecation_errors: self.deprecation_errors,
        }
    }
}

/// The compressors `options` offer, each with its level.
pub(crate) fn wire_compressors(options: &ClientOptions) -> Vec<Compressor> {
    options
        .compressors
        .iter()
        .filter_map(|c| Compressor::from_name(c.as_str(), options.zlib_compression_level))
        .map(|c| match c {
            Compressor::Zstd { .. } => Compressor::Zstd {
                level: options.zstd_compression_level,
            },
            other => other,
        })
        .collect()
}

/// Which authentication mechanism a credential asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MechanismChoice {
    /// None given: negotiate with `saslSupportedMechs` (SCRAM-SHA-256 if offered, else SHA-1).
    Negotiate,
    /// A SCRAM variant chosen by the application.
    Scram(ScramVariant),
    /// PLAIN (LDAP proxy authentication).
    Plain,
    /// MONGODB-X509: the client certificate names the user.
    X509,
    /// MONGODB-AWS (its state is in [`AuthSettings::aws`]).
    Aws,
    /// MONGODB-OIDC (the token source is [`AuthSettings::oidc`]).
    Oidc,
}

/// A resolved credential. The password never appears in `Debug` output.
pub(crate) struct AuthSettings {
    /// The user name; empty for MONGODB-X509 without one (the server takes the certificate's
    /// subject), the only mechanism where it is optional.
    pub(crate) username: String,
    pub(crate) password: String,
    /// The database the SASL commands go to (authSource, default "admin").
    pub(crate) source: String,
    pub(crate) mechanism: MechanismChoice,
    /// Salted passwords computed for this credential, shared by all its connections (and by
    /// the blocking tasks that compute them).
    pub(crate) cache: Arc<ScramCache>,
    /// The MONGODB-AWS credential sources and cache, for that mechanism only.
    pub(crate) aws: Option<Arc<crate::auth::aws::AwsAuth>>,
    /// MONGODB-OIDC's token source and the client's token cache.
    pub(crate) oidc: Option<Arc<OidcAuthenticator>>,
}

impl fmt::Debug for AuthSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthSettings")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .field("source", &self.source)
            .field("mechanism", &self.mechanism)
            .finish()
    }
}

/// The connection-level configuration of one client.
#[derive(Debug, Clone)]
pub(crate) struct ConnectionConfig {
    /// The `client` metadata document sent in the handshake (already within 512 bytes).
    pub(crate) metadata: Document,
    /// Replaces `metadata` in handshakes once a wrapping library appended its information
    /// (`Client::append_metadata`). Shared by every copy of the configuration, so pools and
    /// monitors created before the append use it for their *new* connections.
    pub(crate) appended_metadata: AppendedMetadata,
    /// Compressors to offer, in the application's order of preference.
    pub(crate) compressors: Vec<Compressor>,
    /// Bound on DNS + TCP connect + TLS handshake; `None` = no limit (connectTimeoutMS=0).
    pub(crate) connect_timeout: Option<Duration>,
    /// Bound on each socket read or write; `None` = no limit.
    pub(crate) socket_timeout: Option<Duration>,
    /// TLS configuration when TLS is on.
    pub(crate) tls: Option<tls::TlsConfig>,
    /// The credential, when authentication is configured.
    pub(crate) auth: Option<Arc<AuthSettings>>,
    /// The declared Stable API version.
    pub(crate) server_api: Option<ServerApi>,
    /// Whether the deployment is behind a load balancer.
    pub(crate) load_balanced: bool,
    /// How the servers' host names are resolved: the operating system's lookup unless the
    /// application named its own name servers.
    pub(crate) host_resolver: HostResolver,
    /// The SOCKS5 proxy every connection goes through, if any.
    pub(crate) proxy: Option<Socks5Proxy>,
}

impl ConnectionConfig {
    /// Opens a stream to `address` as this configuration says (through the proxy, with TLS,
    /// within connectTimeoutMS): see [`stream::open`].
    ///
    /// # Errors
    /// As [`stream::open`].
    ///
    /// # Cancel safety
    /// As [`stream::open`].
    pub(crate) async fn open_stream(&self, address: &ServerAddress) -> Result<BoxedStream> {
        let route = Route {
            resolver: &self.host_resolver,
            proxy: self.proxy.as_ref(),
            tls: self.tls.as_ref(),
        };
        stream::open(address, &route, self.connect_timeout).await
    }
}

/// The metadata document that replaces the original one after `Client::append_metadata`.
#[derive(Clone, Debug, Default)]
pub(crate) struct AppendedMetadata(Arc<std::sync::RwLock<Option<Document>>>);

impl AppendedMetadata {
    /// The appended document, if any.
    pub(crate) fn get(&self) -> Option<Document> {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Replaces the document new handshakes send.
    pub(crate) fn set(&self, metadata: Document) {
        *self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(metadata);
    }
}

impl ConnectionConfig {
    /// The `client` document the next handshake sends.
    pub(crate) fn current_metadata(&self) -> Document {
        self.appended_metadata
            .get()
            .unwrap_or_else(|| self.metadata.clone())
    }

    /// Resolves the connection-level options of `options`: builds the metadata document, reads
    /// the TLS files, maps compressors and the credential.
    ///
    /// # Errors
    /// `InvalidArgument` for an unsupported authentication mechanism, a credential without the
    /// username or password SCRAM needs, or an over-long appName; TLS and I/O errors from
    /// reading certificate files.
    pub(crate) fn from_options(
        options: &ClientOptions,
        server_api: Option<ServerApi>,
    ) -> Result<Self> {
        Self::from_options_in(options, server_api, &Environment::current())
    }

    /// [`ConnectionConfig::from_options`] with the process environment given.
    ///
    /// # Errors
    /// As [`ConnectionConfig::from_options`].
    pub(crate) fn from_options_in(
        options: &ClientOptions,
        server_api: Option<ServerApi>,
        environment: &Environment,
    ) -> Result<Self> {
        let metadata = client_metadata(options.app_name.as_deref(), environment, &[])?;
        let compressors = wire_compressors(options);
        let tls = if options.tls.enabled {
            Some(tls::client_config(&options.tls)?)
        } else {
            None
        };
        let auth = match &options.credential {
            Some(credential) => Some(Arc::new(auth_settings(credential)?)),
            None => None,
        };
        if auth
            .as_ref()
            .is_some_and(|a| a.mechanism == MechanismChoice::X509)
        {
            crate::auth::x509::check_tls(&options.tls)?;
        }
        Ok(ConnectionConfig {
            metadata,
            appended_metadata: AppendedMetadata::default(),
            compressors,
            connect_timeout: options.connect_timeout.filter(|t| !t.is_zero()),
            socket_timeout: options.socket_timeout.filter(|t| !t.is_zero()),
            tls,
            auth,
            server_api,
            load_balanced: options.load_balanced,
            host_resolver: HostResolver::System,
            proxy: options.proxy.clone(),
        })
    }
}

fn auth_settings(credential: &Credential) -> Result<AuthSettings> {
    if credential.mechanism == Some(AuthMechanism::MongoDbAws) {
        return aws_settings(credential);
    }
    let mechanism = match credential.mechanism {
        None => MechanismChoice::Negotiate,
        Some(AuthMechanism::ScramSha1) => MechanismChoice::Scram(ScramVariant::Sha1),
        Some(AuthMechanism::ScramSha256) => MechanismChoice::Scram(ScramVariant::Sha256),
        Some(AuthMechanism::MongoDbOidc) => return oidc_settings(credential),
        Some(AuthMechanism::Plain) => MechanismChoice::Plain,
        Some(AuthMechanism::MongoDbX509) => {
            return Ok(AuthSettings {
                username: credential.username.clone().unwrap_or_default(),
                password: String::new(),
                source: credential.resolved_source(),
                mechanism: MechanismChoice::X509,
                cache: Arc::default(),
                aws: None,
                oidc: None,
            });
        }
        Some(AuthMechanism::Gssapi) => {
            return Err(Error::invalid_argument(
                "authMechanism GSSAPI is not supported: the maintained Kerberos crates \
                 (libgssapi, cross-krb5) bind the system's C GSSAPI library, which steadfast \
                 does not link, and the pure-Rust ones are pre-release",
            ));
        }
        Some(other) => {
            return Err(Error::invalid_argument(format!(
                "authMechanism {other} is not supported yet"
            )));
        }
    };
    let name = credential.mechanism.map_or("SCRAM", AuthMechanism::as_str);
    let username = credential
        .username
        .clone()
        .filter(|u| !u.is_empty())
        .ok_or_else(|| Error::invalid_argument(format!("{name} requires a username")))?;
    let password = credential
        .password
        .clone()
        .ok_or_else(|| Error::invalid_argument(format!("{name} requires a password")))?;
    Ok(AuthSettings {
        username,
        password,
        source: credential.resolved_source(),
        mechanism,
        cache: Arc::default(),
        aws: None,
        oidc: None,
    })
}

/// MONGODB-AWS: the username and password, when given, are the access key id and secret key.
fn aws_settings(credential: &Credential) -> Result<AuthSettings> {
    Ok(AuthSettings {
        username: credential.username.clone().unwrap_or_default(),
        password: String::new(),
        source: credential.resolved_source(),
        mechanism: MechanismChoice::Aws,
        cache: Arc::default(),
        aws: Some(Arc::new(crate::auth::aws::AwsAuth::from_credential(
            credential,
        )?)),
        oidc: None,
    })
}

/// MONGODB-OIDC: no password; the username, if any, goes to the token source.
fn oidc_settings(credential: &Credential) -> Result<AuthSettings> {
    Ok(AuthSettings {
        username: credential.username.clone().unwrap_or_default(),
        password: String::new(),
        source: credential.resolved_source(),
        mechanism: MechanismChoice::Oidc,
        cache: Arc::default(),
        aws: None,
        oidc: Some(Arc::new(OidcAuthenticator::from_credential(credential)?)),
    })
}
