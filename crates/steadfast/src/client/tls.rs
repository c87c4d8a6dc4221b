//! [`Tls`] and [`TlsOptions`]: TLS as an application sets it in [`ClientOptions`], shaped as
//! the official driver's (on with options, or off), converted to the resolved settings
//! ([`ResolvedTls`]) in one place.
//!
//! [`ClientOptions`]: super::ClientOptions

use std::fmt;
use std::path::PathBuf;

use steadfast_core::options::Tls as ResolvedTls;

/// Whether connections use TLS, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Tls {
    /// TLS on, with these options.
    Enabled(TlsOptions),
    /// TLS off.
    Disabled,
}

impl From<TlsOptions> for Tls {
    fn from(options: TlsOptions) -> Self {
        Tls::Enabled(options)
    }
}

/// TLS settings. Every `None` takes the secure default: certificates are checked against the
/// system's (and the web's) roots, host names are verified, no client certificate is sent.
/// The `Debug` output never shows the key password.
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TlsOptions {
    /// Accept server certificates that do not validate (`tlsAllowInvalidCertificates`).
    pub allow_invalid_certificates: Option<bool>,
    /// A PEM file of certificate authorities to trust instead of the defaults (`tlsCAFile`).
    pub ca_file_path: Option<PathBuf>,
    /// A PEM file with the client certificate and its key (`tlsCertificateKeyFile`).
    pub cert_key_file_path: Option<PathBuf>,
    /// Accept server certificates whose names do not match the host
    /// (`tlsAllowInvalidHostnames`).
    pub allow_invalid_hostnames: Option<bool>,
    /// The password of the key in `cert_key_file_path`
    /// (`tlsCertificateKeyFilePassword`); it must be UTF-8.
    pub tls_certificate_key_file_password: Option<Vec<u8>>,
}

impl fmt::Debug for TlsOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let password = self
            .tls_certificate_key_file_password
            .as_ref()
            .map(|_| "<redacted>");
        f.debug_struct("TlsOptions")
            .field(
                "allow_invalid_certificates",
                &self.allow_invalid_certificates,
            )
            .field("ca_file_path", &self.ca_file_path)
            .field("cert_key_file_path", &self.cert_key_file_path)
            .field("allow_invalid_hostnames", &self.allow_invalid_hostnames)
            .field("tls_certificate_key_file_password", &password)
            .finish()
    }
}

impl TlsOptions {
    /// A builder, starting from the secure defaults.
    pub fn builder() -> TlsOptionsBuilder {
        TlsOptionsBuilder::default()
    }
}

/// Builds [`TlsOptions`]; each setter takes the value or an `Option`.
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct TlsOptionsBuilder {
    options: TlsOptions,
}

impl TlsOptionsBuilder {
    /// Sets [`TlsOptions::allow_invalid_certificates`].
    pub fn allow_invalid_certificates(mut self, allow: impl Into<Option<bool>>) -> Self {
        self.options.allow_invalid_certificates = allow.into();
        self
    }

    /// Sets [`TlsOptions::ca_file_path`].
    pub fn ca_file_path(mut self, path: impl Into<Option<PathBuf>>) -> Self {
        self.options.ca_file_path = path.into();
        self
    }

    /// Sets [`TlsOptions::cert_key_file_path`].
    pub fn cert_key_file_path(mut self, path: impl Into<Option<PathBuf>>) -> Self {
        self.options.cert_key_file_path = path.into();
        self
    }

    /// Sets [`TlsOptions::allow_invalid_hostnames`].
    pub fn allow_invalid_hostnames(mut self, allow: impl Into<Option<bool>>) -> Self {
        self.options.allow_invalid_hostnames = allow.into();
        self
    }

    /// Sets [`TlsOptions::tls_certificate_key_file_password`].
    pub fn tls_certificate_key_file_password(
        mut self,
        password: impl Into<Option<Vec<u8>>>,
    ) -> Self {
        self.options.tls_certificate_key_file_password = password.into();
        self
    }

    /// The options.
    pub fn build(self) -> TlsOptions {
        self.options
    }
}

impl Tls {
    /// The resolved settings. A key password that is not UTF-8 is refused by
    /// [`Client::with_options`](crate::Client::with_options) before this is used; here it is
    /// converted lossily.
    pub(crate) fn resolve(&self) -> ResolvedTls {
        let mut resolved = ResolvedTls::default();
        if let Tls::Enabled(options) = self {
            resolved.enabled = true;
            resolved.ca_file.clone_from(&options.ca_file_path);
            resolved
                .cert_key_file
                .clone_from(&options.cert_key_file_path);
            resolved.cert_key_password = options
                .tls_certificate_key_file_password
                .as_deref()
                .map(|p| String::from_utf8_lossy(p).into_owned());
            resolved.allow_invalid_certificates =
                options.allow_invalid_certificates.unwrap_or(false);
            resolved.allow_invalid_hostnames = options.allow_invalid_hostnames.unwrap_or(false);
        }
        resolved
    }

    /// The options that stand for resolved settings (`tlsInsecure` becomes both of the
    /// switches it implies).
    pub(crate) fn from_resolved(resolved: &ResolvedTls) -> Tls {
        if !resolved.enabled {
            return Tls::Disabled;
        }
        Tls::Enabled(TlsOptions {
            allow_invalid_certificates: Some(resolved.accepts_invalid_certificates()),
            ca_file_path: resolved.ca_file.clone(),
            cert_key_file_path: resolved.cert_key_file.clone(),
            allow_invalid_hostnames: Some(resolved.accepts_invalid_hostnames()),
            tls_certificate_key_file_password: resolved
                .cert_key_password
                .as_ref()
                .map(|p| p.clone().into_bytes()),
        })
    }

    /// Whether the key password, if any, is UTF-8 (the only form the key decoder takes).
    pub(crate) fn password_is_utf8(&self) -> bool {
        match self {
            Tls::Enabled(options) => options
                .tls_certificate_key_file_password
                .as_deref()
                .is_none_or(|p| std::str::from_utf8(p).is_ok()),
            Tls::Disabled => true,
        }
    }
}
