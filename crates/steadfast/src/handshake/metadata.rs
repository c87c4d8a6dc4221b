//! The handshake's `client` metadata document (handshake specification), with the FaaS and
//! container detection and the 512-byte truncation rules.
//!
//! Building is pure: the environment arrives as an [`Environment`] value, which
//! [`Environment::current`] reads from the process.

use bson::{Document, doc};

use crate::error::{Error, Result};

/// The whole `client` document may not exceed this many bytes of BSON.
pub(crate) const MAX_METADATA_SIZE: usize = 512;
/// `client.application.name` may not exceed this many bytes.
pub(crate) const MAX_APP_NAME_SIZE: usize = 128;

/// The driver name reported to servers.
pub(crate) const DRIVER_NAME: &str = "steadfast";

/// What the metadata reports about the machine and process.
#[derive(Clone, Debug, Default)]
pub(crate) struct Environment {
    /// `uname -s` style: "Linux", "Darwin", "Windows"...
    pub(crate) os_type: String,
    /// A more detailed OS name.
    pub(crate) os_name: Option<String>,
    /// `uname -m` style: "x86_64", "aarch64"...
    pub(crate) architecture: Option<String>,
    /// The environment variables that FaaS and container detection look at (name, value).
    pub(crate) variables: Vec<(String, String)>,
    /// Whether `/.dockerenv` exists.
    pub(crate) docker: bool,
}

/// Environment variables consulted by detection; nothing else is read from the process.
const DETECTION_VARIABLES: [&str; 15] = [
    "AWS_EXECUTION_ENV",
    "AWS_LAMBDA_RUNTIME_API",
    "AWS_REGION",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
    "FUNCTIONS_WORKER_RUNTIME",
    "K_SERVICE",
    "FUNCTION_NAME",
    "FUNCTION_MEMORY_MB",
    "FUNCTION_TIMEOUT_SEC",
    "FUNCTION_REGION",
    "VERCEL",
    "VERCEL_REGION",
    "KUBERNETES_SERVICE_HOST",
    "KUBERNETES_SERVICE_PORT",
    "HOSTNAME",
];

impl Environment {
    /// Reads the running process's environment.
    pub(crate) fn current() -> Self {
        let os = std::env::consts::OS;
        let os_type = match os {
            "linux" | "android" => "Linux",
            "macos" | "ios" => "Darwin",
            "windows" => "Windows",
            "freebsd" | "openbsd" | "netbsd" | "dragonfly" => "BSD",
            "" => "unknown",
            _ => "Unix",
        };
        Environment {
            os_type: os_type.to_string(),
            os_name: Some(os.to_string()),
            architecture: Some(std::env::consts::ARCH.to_string()),
            variables: DETECTION_VARIABLES
                .iter()
                .filter_map(|name| std::env::var(name).ok().map(|v| (name.to_string(), v)))
                .collect(),
            docker: std::path::Path::new("/.dockerenv").exists(),
        }
    }

    fn var(&self, name: &str) -> Option<&str> {
        self.variables
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }

    fn var_i32(&self, name: &str) -> Option<i32> {
        self.var(name).and_then(|v| v.parse().ok())
    }
}

/// What a library wrapping steadfast adds to the handshake metadata (handshake specification,
/// "Supporting Wrapping Libraries"): each field is appended to the driver's own, after a `|`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DriverInfo {
    /// The wrapping library's name.
    pub name: String,
    /// Its version.
    pub version: Option<String>,
    /// Its platform details.
    pub platform: Option<String>,
}

/// Builds a [`DriverInfo`]; the name is required, the rest take the value or an `Option`.
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct DriverInfoBuilder {
    info: DriverInfo,
}

impl DriverInfoBuilder {
    /// Sets [`DriverInfo::name`].
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.info.name = name.into();
        self
    }

    /// Sets [`DriverInfo::version`].
    pub fn version(mut self, version: impl Into<Option<String>>) -> Self {
        self.info.version = version.into();
        self
    }

    /// Sets [`DriverInfo::platform`].
    pub fn platform(mut self, platform: impl Into<Option<String>>) -> Self {
        self.info.platform = platform.into();
        self
    }

    /// The information (checked for `|` when it is used).
    pub fn build(self) -> DriverInfo {
        self.info
    }
}

impl DriverInfo {
    /// A builder, starting from an empty name.
    pub fn builder() -> DriverInfoBuilder {
        DriverInfoBuilder::default()
    }

    /// Information naming the wrapping library.
    pub fn new(name: impl Into<String>) -> Self {
        DriverInfo {
            name: name.into(),
            version: None,
            platform: None,
        }
    }

    /// Sets the version.
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = Some(version.into());
        self
    }

    /// Sets the platform.
    pub fn platform(mut self, platform: impl Into<String>) -> Self {
        self.platform = Some(platform.into());
        self
    }

    /// The same information with empty strings treated as unset, as the specification compares.
    pub(crate) fn normalized(&self) -> DriverInfo {
        let keep = |v: &Option<String>| v.clone().filter(|s| !s.is_empty());
        DriverInfo {
            name: self.name.clone(),
            version: keep(&self.version),
            platform: keep(&self.platform),
        }
    }

    /// Rejects the metadata delimiter inside any field.
    ///
    /// # Errors
    /// `InvalidArgument` naming the field that contains `|`.
    pub(crate) fn validate(&self) -> Result<()> {
        let fields = [
            ("name", Some(&self.name)),
            ("version", self.version.as_ref()),
            ("platform", self.platform.as_ref()),
        ];
        for (field, value) in fields {
            if value.is_some_and(|v| v.contains('|')) {
                return Err(Error::invalid_argument(format!(
                    "driver info {field} {value:?} contains the delimiter '|'"
                )));
            }
        }
        Ok(())
    }
}

/// Appends the non-empty values of `extra` to `base`, each after a `|`.
fn appended<'a>(base: String, extra: impl Iterator<Item = Option<&'a str>>) -> String {
    extra
        .flatten()
        .filter(|v| !v.is_empty())
        .fold(base, |acc, v| format!("{acc}|{v}"))
}

/// The `platform` string: the language and runtime, most important first (truncation cuts the end).
fn platform() -> String {
    format!(
        "Rust (edition 2024, rustc >= {}), tokio",
        env!("CARGO_PKG_RUST_VERSION")
    )
}

/// Builds the `client` document for `app_name` in `env`, with the wrapping libraries' `wrappers`
/// appended in order, truncated to 512 bytes.
///
/// # Errors
/// `InvalidArgument` when the application name exceeds 128 bytes.
pub(crate) fn client_metadata(
    app_name: Option<&str>,
    env: &Environment,
    wrappers: &[DriverInfo],
) -> Result<Document> {
    let mut client = Document::new();
    if let Some(name) = app_name {
        if name.len() > MAX_APP_NAME_SIZE {
            return Err(Error::invalid_argument(format!(
                "appName is {} bytes long; at most {MAX_APP_NAME_SIZE} are allowed",
                name.len()
            )));
        }
        client.insert("application", doc! { "name": name });
    }
    let name = appended(
        DRIVER_NAME.to_string(),
        wrappers.iter().map(|w| Some(w.name.as_str())),
    );
    let version = appended(
        env!("CARGO_PKG_VERSION").to_string(),
        wrappers.iter().map(|w| w.version.as_deref()),
    );
    client.insert("driver", doc! { "name": name, "version": version });
    let mut os = doc! { "type": env.os_type.as_str() };
    if let Some(name) = &env.os_name {
        os.insert("name", name.as_str());
    }
    if let Some(arch) = &env.architecture {
        os.insert("architecture", arch.as_str());
    }
    client.insert("os", os);
    client.insert(
        "platform",
        appended(platform(), wrappers.iter().map(|w| w.platform.as_deref())),
    );
    if let Some(env_doc) = env_document(env) {
        client.insert("env", env_doc);
    }
    truncate(&mut client);
    Ok(client)
}

/// The FaaS name the environment variables designate, if exactly one (or vercel + aws) does.
fn faas_name(env: &Environment) -> Option<&'static str> {
    let aws = env
        .var("AWS_EXECUTION_ENV")
        .is_some_and(|v| v.starts_with("AWS_Lambda_"))
        || env.var("AWS_LAMBDA_RUNTIME_API").is_some();
    let azure = env.var("FUNCTIONS_WORKER_RUNTIME").is_some();
    let gcp = env.var("K_SERVICE").is_some() || env.var("FUNCTION_NAME").is_some();
    let vercel = env.var("VERCEL").is_some();
    match (aws, azure, gcp, vercel) {
        (_, false, false, true) => Some("vercel"),
        (true, false, false, false) => Some("aws.lambda"),
        (false, true, false, false) => Some("azure.func"),
        (false, false, true, false) => Some("gcp.func"),
        _ => None,
    }
}

fn env_document(env: &Environment) -> Option<Document> {
    let mut out = Document::new();
    if let Some(name) = faas_name(env) {
        out.insert("name", name);
        let (region, memory, timeout) = match name {
            "aws.lambda" => (
                Some("AWS_REGION"),
                Some("AWS_LAMBDA_FUNCTION_MEMORY_SIZE"),
                None,
            ),
            "gcp.func" => (
                Some("FUNCTION_REGION"),
                Some("FUNCTION_MEMORY_MB"),
                Some("FUNCTION_TIMEOUT_SEC"),
            ),
            "vercel" => (Some("VERCEL_REGION"), None, None),
            _ => (None, None, None),
        };
        if let Some(seconds) = timeout.and_then(|v| env.var_i32(v)) {
            out.insert("timeout_sec", seconds);
        }
        if let Some(megabytes) = memory.and_then(|v| env.var_i32(v)) {
            out.insert("memory_mb", megabytes);
        }
        if let Some(region) = region.and_then(|v| env.var(v)) {
            out.insert("region", region);
        }
    }
    let mut container = Document::new();
    if env.docker {
        container.insert("runtime", "docker");
    }
    if env.var("KUBERNETES_SERVICE_HOST").is_some() {
        container.insert("orchestrator", "kubernetes");
    }
    if !container.is_empty() {
        out.insert("container", container);
    }
    (!out.is_empty()).then_some(out)
}

fn encoded_len(doc: &Document) -> usize {
    // A document that cannot be encoded is treated as too large, so truncation proceeds.
    bson::RawDocumentBuf::try_from(doc).map_or(usize::MAX, |raw| raw.as_bytes().len())
}

/// The handshake specification's order: env fields but name, os fields but type, env, then
/// cut the platform string.
fn truncate(client: &mut Document) {
    if encoded_len(client) <= MAX_METADATA_SIZE {
        return;
    }
    if let Ok(env) = client.get_document_mut("env") {
        keep_only(env, "name");
    }
    if encoded_len(client) <= MAX_METADATA_SIZE {
        return;
    }
    if let Ok(os) = client.get_document_mut("os") {
        keep_only(os, "type");
    }
    if encoded_len(client) <= MAX_METADATA_SIZE {
        return;
    }
    client.remove("env");
    let size = encoded_len(client);
    if size <= MAX_METADATA_SIZE {
        return;
    }
    let excess = size - MAX_METADATA_SIZE;
    if let Ok(platform) = client.get_str("platform") {
        let mut keep = platform.len().saturating_sub(excess);
        while !platform.is_char_boundary(keep) {
            keep -= 1;
        }
        let cut = platform[..keep].to_string();
        client.insert("platform", cut);
    }
}

fn keep_only(doc: &mut Document, key: &str) {
    let others: Vec<String> = doc.keys().filter(|k| *k != key).cloned().collect();
    for other in others {
        doc.remove(other);
    }
}

#[cfg(test)]
mod tests;
