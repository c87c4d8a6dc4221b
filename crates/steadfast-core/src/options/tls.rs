//! TLS options and the conflict rules of uri-options.md.

use std::fmt;
use std::path::PathBuf;

use super::{OptionsError, redacted};

/// TLS settings of a client. The `Debug` output never shows the key file password.
///
/// TLS is enabled when `tls=true` (or `ssl=true`) is given, when the scheme is `mongodb+srv`
/// (unless `tls=false`), or when any other `tls*` option is present and `tls` itself is not
/// given. `tlsInsecure=true` relaxes exactly two checks: certificate validity and host name
/// verification; no other constraint is relaxed.
#[derive(Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Tls {
    /// Whether connections use TLS.
    pub enabled: bool,
    /// PEM file of certificate authorities to trust instead of the system/web roots.
    pub ca_file: Option<PathBuf>,
    /// PEM file holding the client certificate and its private key.
    pub cert_key_file: Option<PathBuf>,
    /// Password that decrypts the private key in `cert_key_file`.
    pub cert_key_password: Option<String>,
    /// Accept server certificates that do not validate.
    pub allow_invalid_certificates: bool,
    /// Accept server certificates whose names do not match the host.
    pub allow_invalid_hostnames: bool,
    /// `tlsInsecure`: both of the above.
    pub insecure: bool,
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tls")
            .field("enabled", &self.enabled)
            .field("ca_file", &self.ca_file)
            .field("cert_key_file", &self.cert_key_file)
            .field("cert_key_password", &redacted(&self.cert_key_password))
            .field(
                "allow_invalid_certificates",
                &self.allow_invalid_certificates,
            )
            .field("allow_invalid_hostnames", &self.allow_invalid_hostnames)
            .field("insecure", &self.insecure)
            .finish()
    }
}

impl Tls {
    /// Whether invalid server certificates are accepted (directly or through `insecure`).
    pub fn accepts_invalid_certificates(&self) -> bool {
        self.insecure || self.allow_invalid_certificates
    }

    /// Whether host name mismatches are accepted (directly or through `insecure`).
    pub fn accepts_invalid_hostnames(&self) -> bool {
        self.insecure || self.allow_invalid_hostnames
    }

    /// Checks the combinations set in code: `insecure` already implies the two individual
    /// switches, so setting it together with either is ambiguous.
    ///
    /// # Errors
    /// [`OptionsError::Conflict`] naming the two options.
    pub fn validate(&self) -> Result<(), OptionsError> {
        if self.insecure && self.allow_invalid_certificates {
            return Err(insecure_conflict("tlsAllowInvalidCertificates"));
        }
        if self.insecure && self.allow_invalid_hostnames {
            return Err(insecure_conflict("tlsAllowInvalidHostnames"));
        }
        Ok(())
    }
}

fn insecure_conflict(other: &'static str) -> OptionsError {
    OptionsError::Conflict {
        first: "tlsInsecure",
        second: other,
        reason: "tlsInsecure already sets the relaxed checks; give one or the other",
    }
}

/// The TLS options exactly as a connection string gave them (`None` = absent).
#[derive(Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct UriTlsOptions {
    /// `tls` / `ssl`.
    pub tls: Option<bool>,
    /// `tlsCAFile`.
    pub ca_file: Option<PathBuf>,
    /// `tlsCertificateKeyFile`.
    pub cert_key_file: Option<PathBuf>,
    /// `tlsCertificateKeyFilePassword`.
    pub cert_key_password: Option<String>,
    /// `tlsAllowInvalidCertificates`.
    pub allow_invalid_certificates: Option<bool>,
    /// `tlsAllowInvalidHostnames`.
    pub allow_invalid_hostnames: Option<bool>,
    /// `tlsInsecure`.
    pub insecure: Option<bool>,
}

impl fmt::Debug for UriTlsOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UriTlsOptions")
            .field("tls", &self.tls)
            .field("ca_file", &self.ca_file)
            .field("cert_key_file", &self.cert_key_file)
            .field("cert_key_password", &redacted(&self.cert_key_password))
            .field(
                "allow_invalid_certificates",
                &self.allow_invalid_certificates,
            )
            .field("allow_invalid_hostnames", &self.allow_invalid_hostnames)
            .field("insecure", &self.insecure)
            .finish()
    }
}

impl UriTlsOptions {
    /// Whether any `tls*` option other than `tls`/`ssl` itself was given.
    pub fn any_tls_prefixed_option(&self) -> bool {
        self.ca_file.is_some()
            || self.cert_key_file.is_some()
            || self.cert_key_password.is_some()
            || self.allow_invalid_certificates.is_some()
            || self.allow_invalid_hostnames.is_some()
            || self.insecure.is_some()
    }

    /// The uri-options.md conflicts: `tlsInsecure` may not appear together with
    /// `tlsAllowInvalidCertificates` or `tlsAllowInvalidHostnames`, whatever their values.
    ///
    /// # Errors
    /// [`OptionsError::Conflict`] naming both options.
    pub fn check_conflicts(&self) -> Result<(), OptionsError> {
        if self.insecure.is_some() && self.allow_invalid_certificates.is_some() {
            return Err(insecure_conflict("tlsAllowInvalidCertificates"));
        }
        if self.insecure.is_some() && self.allow_invalid_hostnames.is_some() {
            return Err(insecure_conflict("tlsAllowInvalidHostnames"));
        }
        Ok(())
    }

    /// The effective settings. `implied` is true for `mongodb+srv://`, which turns TLS on
    /// unless `tls=false` was given.
    ///
    /// # Errors
    /// [`OptionsError::Conflict`] when `tls=false` is combined with other `tls*` options, which
    /// would otherwise be silently ignored.
    pub fn to_tls(&self, implied: bool) -> Result<Tls, OptionsError> {
        let enabled = match self.tls {
            Some(false) if self.any_tls_prefixed_option() => {
                return Err(OptionsError::Conflict {
                    first: "tls",
                    second: "tls* options",
                    reason: "TLS is disabled, so the other TLS options would be ignored",
                });
            }
            Some(explicit) => explicit,
            None => implied || self.any_tls_prefixed_option(),
        };
        Ok(Tls {
            enabled,
            ca_file: self.ca_file.clone(),
            cert_key_file: self.cert_key_file.clone(),
            cert_key_password: self.cert_key_password.clone(),
            allow_invalid_certificates: self.allow_invalid_certificates.unwrap_or(false),
            allow_invalid_hostnames: self.allow_invalid_hostnames.unwrap_or(false),
            insecure: self.insecure.unwrap_or(false),
        })
    }
}
