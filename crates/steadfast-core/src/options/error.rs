//! Why a connection string or a set of client options was rejected.

use crate::address::AddressError;

/// A connection string or client option set that cannot be used.
///
/// Every variant names the part of the input at fault (the option, the host, the database, the
/// SRV target) so that the message alone tells the user what to fix. Problems the specifications
/// say to tolerate (unknown options, unusable values) are not errors: they become warnings on the
/// [`ConnectionString`](super::ConnectionString).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OptionsError {
    /// The string does not start with `mongodb://` or `mongodb+srv://`. Holds the scheme found
    /// (empty when there is none); the rest of the string is not echoed as it may hold secrets.
    #[error(
        "connection string must start with \"mongodb://\" or \"mongodb+srv://\", got scheme {0:?}"
    )]
    InvalidScheme(String),
    /// No host follows the scheme.
    #[error("connection string names no host")]
    MissingHost,
    /// A host contains an unescaped slash: Unix socket paths must be percent-encoded.
    #[error("unsupported host {0:?}: UNIX domain socket paths must be URL encoded (%2F for '/')")]
    UnescapedSocketPath(String),
    /// A host contains a decoded slash but does not name a `.sock` file.
    #[error(
        "unsupported host {0:?}: a host with a '/' must be a UNIX domain socket ending in \".sock\""
    )]
    UnsupportedHost(String),
    /// A host identifier is malformed (empty, bad port, bad IPv6 literal).
    #[error("invalid host {host:?}: {reason}")]
    InvalidHost {
        /// The host identifier as written.
        host: String,
        /// What is wrong with it.
        reason: AddressError,
    },
    /// The user information is not properly percent-encoded.
    #[error("invalid user information: {0}; the username and password must be URL encoded")]
    InvalidUserInfo(&'static str),
    /// The auth database contains a character MongoDB forbids in database names.
    #[error("invalid database name {name:?}: it must not contain {forbidden:?}")]
    InvalidDatabase {
        /// The decoded database name.
        name: String,
        /// The first forbidden character found.
        forbidden: char,
    },
    /// An option that must be given at most once was repeated.
    #[error("option {0} is given more than once; it may be given only once")]
    RepeatedOption(String),
    /// An option in the query string has no `=`.
    #[error("option {0:?} has no value: options are written key=value")]
    OptionWithoutValue(String),
    /// An option value that must be valid for security or correctness reasons is not.
    #[error("invalid value {value:?} for option {option}: {reason}")]
    InvalidValue {
        /// The option, spelled as in the specification.
        option: &'static str,
        /// The offending value.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Two options that must not be combined were both given.
    #[error("options {first} and {second} cannot be combined: {reason}")]
    Conflict {
        /// The first option, spelled as in the specification.
        first: &'static str,
        /// The second option.
        second: &'static str,
        /// Why the combination is refused.
        reason: &'static str,
    },
    /// An option is out of its allowed range (mostly for options set in code).
    #[error("invalid option {option}: {reason}")]
    InvalidOption {
        /// The option, spelled as in the specification.
        option: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The credential does not satisfy the rules of its mechanism.
    #[error("invalid credential for {mechanism}: {reason}")]
    InvalidCredential {
        /// The mechanism name, or "the default mechanism".
        mechanism: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A `mongodb+srv://` host name is malformed.
    #[error("invalid SRV host name {host:?}: {reason}")]
    InvalidSrvHost {
        /// The host name as written.
        host: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The DNS answer contained no SRV record.
    #[error("no SRV records found for {0:?}")]
    NoSrvRecords(String),
    /// An SRV target is not inside the domain of the SRV host name.
    #[error("SRV target {target:?} is not in the domain {domain:?} of the SRV host name")]
    SrvTargetOutsideDomain {
        /// The returned target.
        target: String,
        /// The domain it had to end with.
        domain: String,
    },
    /// More than one TXT record was returned for the SRV host name.
    #[error("{0} TXT records found for the SRV host name; at most one is allowed")]
    MultipleTxtRecords(usize),
    /// A TXT record set an option other than authSource, replicaSet and loadBalanced.
    #[error(
        "option {0:?} is not allowed in a TXT record (only authSource, replicaSet, loadBalanced)"
    )]
    TxtOptionNotAllowed(String),
    /// SRV resolution was asked of a `mongodb://` connection string.
    #[error("only a mongodb+srv:// connection string can be resolved through SRV records")]
    NotSrv,
    /// The options were built from a `mongodb+srv://` string whose DNS records are not yet applied.
    #[error(
        "mongodb+srv:// connection string for {0:?} needs its SRV and TXT records resolved first"
    )]
    SrvNotResolved(String),
}

impl OptionsError {
    pub(crate) fn invalid_option(option: &'static str, reason: impl Into<String>) -> Self {
        OptionsError::InvalidOption {
            option,
            reason: reason.into(),
        }
    }
}
