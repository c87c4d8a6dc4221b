//! Serde forms and conversions of the client-level option types ([`ServerApi`],
//! [`ServerApiVersion`], [`Tls`], [`TlsOptions`], [`DriverInfo`]), shaped as the official
//! driver's.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::str::FromStr;

use serde::de::{Error as _, Unexpected};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::client::{Tls, TlsOptions};
use crate::conn::config::{ServerApi, ServerApiVersion};
use crate::error::{Error, Result};
use crate::handshake::metadata::DriverInfo;

impl FromStr for ServerApiVersion {
    type Err = Error;

    /// Parses a version as commands spell it (`"1"`).
    ///
    /// # Errors
    /// An `InvalidArgument` error for any other text.
    fn from_str(text: &str) -> Result<Self> {
        match text {
            "1" => Ok(ServerApiVersion::V1),
            other => Err(Error::invalid_argument(format!(
                "unknown Stable API version {other:?} (the only version is \"1\")"
            ))),
        }
    }
}

impl fmt::Display for ServerApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ServerApiVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ServerApiVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse()
            .map_err(|_| D::Error::invalid_value(Unexpected::Str(&text), &"a Stable API version"))
    }
}

/// [`ServerApi`] under the names commands give its fields.
#[derive(Serialize, Deserialize)]
struct ServerApiForm {
    #[serde(rename = "apiVersion")]
    version: ServerApiVersion,
    #[serde(rename = "apiStrict", default, skip_serializing_if = "Option::is_none")]
    strict: Option<bool>,
    #[serde(
        rename = "apiDeprecationErrors",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    deprecation_errors: Option<bool>,
}

impl Serialize for ServerApi {
    /// `{ apiVersion, apiStrict?, apiDeprecationErrors? }`.
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        ServerApiForm {
            version: self.version,
            strict: self.strict,
            deprecation_errors: self.deprecation_errors,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ServerApi {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let form = ServerApiForm::deserialize(deserializer)?;
        Ok(ServerApi::builder()
            .version(form.version)
            .strict(form.strict)
            .deprecation_errors(form.deprecation_errors)
            .build())
    }
}

/// [`TlsOptions`] under their field names.
#[derive(Deserialize)]
struct TlsOptionsForm {
    #[serde(default)]
    allow_invalid_certificates: Option<bool>,
    #[serde(default)]
    ca_file_path: Option<PathBuf>,
    #[serde(default)]
    cert_key_file_path: Option<PathBuf>,
    #[serde(default)]
    allow_invalid_hostnames: Option<bool>,
    #[serde(default)]
    tls_certificate_key_file_password: Option<Vec<u8>>,
}

impl<'de> Deserialize<'de> for TlsOptions {
    /// Reads `{ allow_invalid_certificates?, ca_file_path?, cert_key_file_path?,
    /// allow_invalid_hostnames?, tls_certificate_key_file_password? }`.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let form = TlsOptionsForm::deserialize(deserializer)?;
        Ok(TlsOptions {
            allow_invalid_certificates: form.allow_invalid_certificates,
            ca_file_path: form.ca_file_path,
            cert_key_file_path: form.cert_key_file_path,
            allow_invalid_hostnames: form.allow_invalid_hostnames,
            tls_certificate_key_file_password: form.tls_certificate_key_file_password,
        })
    }
}

/// [`Tls`] as an externally tagged enum: `{ "Enabled": { .. } }` or `"Disabled"`.
#[derive(Deserialize)]
enum TlsForm {
    Enabled(TlsOptions),
    Disabled,
}

impl<'de> Deserialize<'de> for Tls {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        Ok(match TlsForm::deserialize(deserializer)? {
            TlsForm::Enabled(options) => Tls::Enabled(options),
            TlsForm::Disabled => Tls::Disabled,
        })
    }
}

impl From<TlsOptions> for Option<Tls> {
    /// TLS on with `options`, for setting [`ClientOptions::tls`](crate::options::ClientOptions::tls).
    fn from(options: TlsOptions) -> Self {
        Some(Tls::Enabled(options))
    }
}

#[derive(Deserialize)]
struct DriverInfoForm {
    name: String,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    platform: Option<String>,
}

impl<'de> Deserialize<'de> for DriverInfo {
    /// Reads `{ name, version?, platform? }`.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let form = DriverInfoForm::deserialize(deserializer)?;
        Ok(DriverInfo::builder()
            .name(form.name)
            .version(form.version)
            .platform(form.platform)
            .build())
    }
}

impl Hash for DriverInfo {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
        self.version.hash(state);
        self.platform.hash(state);
    }
}
